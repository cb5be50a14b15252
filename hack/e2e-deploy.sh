#!/usr/bin/env bash
# The cluster-agnostic half of the kind e2e path: install the chart into whatever cluster
# $KUBECONFIG points at, wait until the webhook answers, run tests/e2e against it, collect logs.
# hack/kind-e2e.sh calls these steps after it has made a kind cluster and loaded the image; they
# need no Docker, so they also run against the local cluster (tests/e2e/test_chart.py does).
#
# usage: hack/e2e-deploy.sh test-crds|install-kwok|install|wait-rollout|wait-webhook|test|logs|digest|uninstall [pytest args...]
#
# digest prints, after a failed run, the few lines that usually explain it (the release's pods and
# their restarts, Warning Events, the apiserver's failed webhook calls with their causes, warnings
# and errors the webhook and controller logged): CI keeps only the console, not the artifacts.
#
# install-kwok deploys kwok into kube-system (hack/localcluster/incluster_kwok.py renders it from
# the local cluster's own Stages), keeps the cluster's DaemonSets off its simulated nodes and
# creates the default simulated node pools, so the tests' Jobs run on simulated nodes as they do
# on the local cluster.
#
# Environment (defaults in brackets):
#   KUBECONFIG         cluster to use (required)
#   RELEASE            Helm release name [pykueue]
#   NAMESPACE          release namespace [pykueue-system]
#   IMAGE              image reference for both programs [pykueue:e2e]
#   HELM_VALUES        extra values files for helm install (comma-separated), optional
#   HELM_SET           extra comma-separated --set pairs for helm install, optional
#   WAIT_TIMEOUT       seconds to wait for rollouts and the webhook [180]
#   ARTIFACTS          where logs are collected [_out/e2e-artifacts]
#   HELM, KUBECTL      binaries [the pinned ones under ~/.cache/pykueue/bin/current, else PATH]
#   PYTHON             interpreter for the tests [.venv/bin/python]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cache_bin=${PYKUEUE_CACHE:-$HOME/.cache/pykueue}/bin/current

RELEASE=${RELEASE:-pykueue}
NAMESPACE=${NAMESPACE:-pykueue-system}
IMAGE=${IMAGE:-pykueue:e2e}
WAIT_TIMEOUT=${WAIT_TIMEOUT:-180}
ARTIFACTS=${ARTIFACTS:-$root/_out/e2e-artifacts}
PYTHON=${PYTHON:-$root/.venv/bin/python}

die() { printf 'e2e-deploy: %s\n' "$*" >&2; exit 1; }
log() { printf 'e2e-deploy: %s\n' "$*" >&2; }

pick_binary() { # name -> path of the pinned binary, else the one on PATH
  if [ -x "$cache_bin/$1" ]; then
    printf '%s\n' "$cache_bin/$1"
  elif command -v "$1" >/dev/null 2>&1; then
    command -v "$1"
  else
    die "$1 not found: run \`make binaries\` (builds the pinned one) or install $1"
  fi
}

HELM=${HELM:-$(pick_binary helm)}
KUBECTL=${KUBECTL:-$(pick_binary kubectl)}
[ -n "${KUBECONFIG:-}" ] || die "KUBECONFIG is not set: point it at the cluster to install into"
export KUBECONFIG

k() { "$KUBECTL" "$@"; }

# Helm's object names, as the chart's _helpers.tpl computes them.
fullname() {
  case "$RELEASE" in
    *pykueue*) printf '%s\n' "$RELEASE" ;;
    *) printf '%s-pykueue\n' "$RELEASE" ;;
  esac
}

# CRDs the e2e tests use that pykueue does not own (ProvisioningRequest): the local cluster
# applies manifests/test/ at start-up, a fresh cluster needs them applied here.
cmd_test_crds() {
  local files=("$root"/manifests/test/*.yaml)
  [ -e "${files[0]}" ] || { log "no manifests/test/*.yaml to apply"; return 0; }
  local args=()
  for f in "${files[@]}"; do args+=(-f "$f"); done
  k apply --server-side --force-conflicts "${args[@]}"
  k wait --for=condition=Established --timeout="${WAIT_TIMEOUT}s" "${args[@]}"
}

cmd_install_kwok() {
  local step
  log "installing kwok into kube-system"
  (cd "$root" && "$PYTHON" -m hack.localcluster.install_kwok manifests) \
    | k apply --server-side --force-conflicts --field-manager=pykueue-e2e -f -
  k -n kube-system rollout status deployment/kwok-controller --timeout "${WAIT_TIMEOUT}s"
  for step in patch-daemonsets default-nodes; do
    (cd "$root" && "$PYTHON" -m hack.localcluster.install_kwok "$step" --kubeconfig "$KUBECONFIG")
  done
}

cmd_install() {
  local repo=${IMAGE%:*} tag=${IMAGE##*:}
  # No tag at all (a colon, if any, belongs to a registry port): use latest.
  case "$tag" in */* | "$IMAGE") repo=$IMAGE tag=latest ;; esac
  local args=(upgrade --install "$RELEASE" "$root/charts/pykueue" --namespace "$NAMESPACE" --create-namespace
    --set "image.repository=$repo" --set "image.tag=$tag" --set image.pullPolicy=IfNotPresent)
  [ -z "${HELM_VALUES:-}" ] || args+=(--values "$HELM_VALUES")
  [ -z "${HELM_SET:-}" ] || args+=(--set "$HELM_SET")
  log "helm ${args[*]}"
  "$HELM" "${args[@]}"
}

cmd_wait_rollout() {
  local name
  name=$(fullname)
  for deployment in "$name-webhook" "$name-controller"; do
    log "waiting for deployment/$deployment"
    k -n "$NAMESPACE" rollout status "deployment/$deployment" --timeout "${WAIT_TIMEOUT}s"
  done
}

# A server-side dry-run create of a ResourceFlavor passes through both webhook configurations: it
# succeeds only once the apiserver reaches the webhook over TLS and trusts its certificate, and it
# comes back with the resource-in-use finalizer only the mutating webhook adds (so a missing
# webhook configuration cannot pass for an answering webhook).
probe_flavor() {
  cat <<YAML
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata:
  name: e2e-deploy-webhook-probe
YAML
}

cmd_wait_webhook() {
  local deadline=$((SECONDS + WAIT_TIMEOUT)) out=""
  log "waiting up to ${WAIT_TIMEOUT}s for the webhook to answer"
  while [ "$SECONDS" -lt "$deadline" ]; do
    if out=$(probe_flavor | k create --dry-run=server -o 'jsonpath={.metadata.finalizers}' -f - 2>&1) \
      && [[ "$out" == *kueue.x-k8s.io/resource-in-use* ]]; then
      log "webhook answered (finalizers: $out)"
      return 0
    fi
    sleep 2
  done
  [ -n "$out" ] || out="the object came back without the webhook's finalizer (are the webhook configurations installed?)"
  die "the webhook did not answer within ${WAIT_TIMEOUT}s; last answer: $out"
}

cmd_test() {
  log "running tests/e2e against $KUBECONFIG"
  (cd "$root" && PYKUEUE_KUBECONFIG=$KUBECONFIG "$PYTHON" -m pytest tests/e2e -q "$@")
}

cmd_logs() {
  mkdir -p "$ARTIFACTS"
  log "collecting logs into $ARTIFACTS"
  k -n "$NAMESPACE" get all,lease,secret,configmap -o wide >"$ARTIFACTS/objects.txt" 2>&1 || true
  k -n "$NAMESPACE" describe pods >"$ARTIFACTS/pods-describe.txt" 2>&1 || true
  k get events -A --sort-by=.lastTimestamp >"$ARTIFACTS/events.txt" 2>&1 || true
  local pod
  for pod in $(k -n "$NAMESPACE" get pods -o name 2>/dev/null); do
    k -n "$NAMESPACE" logs "$pod" --all-containers --prefix >"$ARTIFACTS/${pod#pod/}.log" 2>&1 || true
    k -n "$NAMESPACE" logs "$pod" --all-containers --prefix --previous >"$ARTIFACTS/${pod#pod/}.previous.log" 2>/dev/null || true
  done
  # The in-cluster kwok (install-kwok), when there is one, and the nodes it plays.
  k get nodes -o wide --show-labels >"$ARTIFACTS/nodes.txt" 2>&1 || true
  k -n kube-system logs deployment/kwok-controller --all-containers >"$ARTIFACTS/kwok-controller.log" 2>/dev/null || true
}

cmd_digest() {
  local apiserver pod
  {
    printf '\n----- digest of the failed run (full logs: %s) -----\n' "$ARTIFACTS"
    printf -- '--- %s pods (restarts, nodes)\n' "$NAMESPACE"
    k -n "$NAMESPACE" get pods -o wide 2>&1 || true
    printf -- '--- the last Warning Events\n'
    k get events -A --field-selector type=Warning --sort-by=.lastTimestamp 2>&1 | tail -n 20 || true
    printf -- "--- the apiserver's failed webhook calls (the last 15)\n"
    for apiserver in $(k -n kube-system get pods -l component=kube-apiserver -o name 2>/dev/null); do
      k -n kube-system logs "$apiserver" 2>/dev/null | grep -E '^[WE].*webhook' | tail -n 15 | cut -c1-400 || true
    done
    printf -- '--- warnings and errors the release logged (the last 10 per pod)\n'
    for pod in $(k -n "$NAMESPACE" get pods -o name 2>/dev/null); do
      k -n "$NAMESPACE" logs "$pod" --all-containers --prefix 2>/dev/null \
        | grep -E '"level":"(warning|error|critical)"|WORKER TIMEOUT|Booting worker|Worker exiting|Traceback' \
        | tail -n 10 | cut -c1-400 || true
    done
    printf -- '----- end of digest -----\n'
  } >&2
}

cmd_uninstall() {
  "$HELM" uninstall "$RELEASE" --namespace "$NAMESPACE" --wait --timeout "${WAIT_TIMEOUT}s"
}

step=${1:-}
[ -n "$step" ] || die "usage: $0 test-crds|install-kwok|install|wait-rollout|wait-webhook|test|logs|digest|uninstall [pytest args...]"
shift
case "$step" in
  test-crds) cmd_test_crds ;;
  install-kwok) cmd_install_kwok ;;
  install) cmd_install ;;
  wait-rollout) cmd_wait_rollout ;;
  wait-webhook) cmd_wait_webhook ;;
  test) cmd_test "$@" ;;
  logs) cmd_logs ;;
  digest) cmd_digest ;;
  uninstall) cmd_uninstall ;;
  *) die "unknown step $step" ;;
esac
