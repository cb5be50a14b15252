# Developer entry points. Everything runs inside .venv, created on first use.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: help env test test-unit test-e2e test-image images kind-node-image kind-e2e lint fmt generate verify-generated binaries kueue-crds kueuectl kueue kind-binaries helm cluster-up cluster-down multikueue-up multikueue-down demo-multikueue demo bench clean

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@hack/ensure-python.sh $(PYTHON) $(VENV)
	@touch $(STAMP)

env: $(STAMP) ## create .venv with pykueue and its test tools

binaries: ## build (or reuse cached) Kubernetes, etcd, kwok and helm binaries
	@hack/build-binaries.sh

test: lint test-unit test-e2e ## everything CI runs: lint, unit tests, e2e tests on a local cluster

kueue-crds: ## fetch (or reuse cached) Kueue's published CRDs, the schema parity test's oracle
	@hack/build-binaries.sh kueue-crds >/dev/null

kueuectl: ## build (or reuse cached) Kueue's kubectl plugin, for the kueuectl compatibility e2e test
	@hack/build-binaries.sh kueuectl >/dev/null

kueue: ## build (or reuse cached) Kueue's manager at both bench pins (hack/versions.env) and fetch their CRDs, for the baseline's kueue@ variant
	@hack/build-binaries.sh kueue >/dev/null

kind-binaries: ## build (or reuse cached) kind and the kind node's kubelet, kubeadm and kube-proxy (what `make kind-node-image` needs besides Docker)
	@hack/build-binaries.sh kind kubernetes-node >/dev/null

helm: ## build (or reuse cached) the pinned helm, which the chart's unit tests render with
	@hack/build-binaries.sh helm >/dev/null

test-unit: $(STAMP) kueue-crds helm ## unit tests (no cluster)
	$(PY) -m pytest tests/unit -q

test-e2e: $(STAMP) binaries ## e2e tests; brings up a local cluster unless PYKUEUE_KUBECONFIG is set (the tests that run Kueue itself build it on first use, and run last)
	$(PY) -m pytest tests/e2e -q -x --durations=25

images: ## build the base images (Debian, Python) and the pykueue image without a registry (needs Docker; starts it)
	@hack/ensure-docker.sh start >/dev/null
	@hack/build-images.sh all

test-image: $(STAMP) binaries ## run the built image for real: non-root, read-only root fs, against a local cluster
	@hack/ensure-docker.sh start >/dev/null
	$(PY) -m pytest tests/image -q -x

kind-node-image: binaries ## build kind and the offline kind node image (pins in hack/versions.env; needs Docker)
	@hack/ensure-docker.sh start >/dev/null
	@hack/build-kind-node.sh

kind-e2e: $(STAMP) binaries ## the e2e suite on kind, every image built here (starts Docker if needed; see README)
	KIND_ENSURE_DOCKER=1 KIND_OFFLINE=1 PYKUEUE_E2E_KUEUE_VERSION=$${PYKUEUE_E2E_KUEUE_VERSION:-v1beta2} \
		PYTHON=$(abspath $(PY)) hack/kind-e2e.sh

lint: $(STAMP) ## ruff + mypy + shellcheck + hadolint + stale generated files
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/shellcheck hack/*.sh .ci/run
	$(VENV)/bin/hadolint Dockerfile

fmt: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

generate: $(STAMP) ## regenerate CRDs and install manifests from the Python API
	$(PY) -m pykueue.api.generate
	$(PY) -m hack.render_install

cluster-up: $(STAMP) binaries ## start the local cluster with pykueue running
	$(PY) -m hack.localcluster up
	$(PY) -m hack.run_pykueue start

cluster-down: $(STAMP) ## stop the local cluster (only the processes it started)
	$(PY) -m hack.run_pykueue stop
	$(PY) -m hack.localcluster down

multikueue-up: $(STAMP) binaries ## start a MultiKueue manager and two workers (clusters mk-*), pykueue on each
	$(PY) -m hack.multikueue up

multikueue-down: $(STAMP) ## stop the MultiKueue clusters (only the processes they started)
	$(PY) -m hack.multikueue down

demo-multikueue: multikueue-up ## show a Job submitted to the manager running on a worker
	$(PY) -m hack.demo_multikueue

demo: cluster-up ## bring up the local cluster and show jobs queue and get admitted
	$(PY) -m hack.demo

bench: $(STAMP) ## run the benchmarks at a small scale
	$(PY) -m bench.run_all --scale 0.05

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
