#!/usr/bin/env bash
# End-to-end on kind (needs Docker and kind): create a cluster with two workers for pykueue itself,
# build the image and load it into the nodes, deploy kwok and its simulated nodes (where the
# tests' pods run), install the chart, wait until the webhook answers, run tests/e2e against the
# cluster, collect logs, and delete the cluster whatever happened.
#
# usage: hack/kind-e2e.sh [pytest args...]
#
# Two ways to get the images (see README, "kind"):
#   - with a registry (the default): kind's own node image, `docker build` of the Dockerfile with
#     its default python:3.11-slim base, kwok's release image pulled by the nodes;
#   - offline (KIND_OFFLINE=1, what `make kind-e2e` and CI use): KIND_NODE_IMAGE built by
#     hack/build-kind-node.sh, and every image (pykueue on a Debian Python base, kwok, a static
#     busybox) built by hack/build-images.sh and loaded into the nodes; nothing is pulled. The
#     offline run also runs tests/kind (Jobs whose pods run real containers on a kind worker).
#
# Environment (defaults in brackets):
#   KIND_CLUSTER_NAME  [pykueue-e2e]; an existing cluster of that name is refused, never reused
#   KIND_NODE_IMAGE    kindest/node image to use [kind's default; offline: hack/build-kind-node.sh]
#   KIND_OFFLINE       1 to build every image here and pull nothing [1 when KIND_NODE_IMAGE is a
#                      pykueue-local/ image, else 0]
#   KIND_ENSURE_DOCKER 1 to install/start Docker when missing (hack/ensure-docker.sh), and stop
#                      the daemon at the end if this run started it [0: report and stop]
#   KIND               the kind binary [kind on PATH, else the pinned one hack/build-kind-node.sh builds]
#   KIND_KEEP_CLUSTER  set to 1 to keep the cluster for debugging
#   IMAGE              tag of the image built and loaded [pykueue:e2e]
#   ARTIFACTS          where logs end up [_out/e2e-artifacts]
#   E2E_DEPLOY         the deploy-steps script [hack/e2e-deploy.sh]
#   HELM_VALUES        more values files, comma-separated, after hack/kind-values.yaml
# plus everything hack/e2e-deploy.sh reads (RELEASE, NAMESPACE, HELM_VALUES, WAIT_TIMEOUT, ...).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")

KIND_CLUSTER_NAME=${KIND_CLUSTER_NAME:-pykueue-e2e}
cache_bin=${PYKUEUE_CACHE:-$HOME/.cache/pykueue}/bin/current
IMAGE=${IMAGE:-pykueue:e2e}
ARTIFACTS=${ARTIFACTS:-$root/_out/e2e-artifacts}
E2E_DEPLOY=${E2E_DEPLOY:-$here/e2e-deploy.sh}
# pykueue's pods go to the tainted workers of kind-config.yaml, never to a simulated node.
HELM_VALUES=$here/kind-values.yaml${HELM_VALUES:+,$HELM_VALUES}
export IMAGE ARTIFACTS HELM_VALUES

die() { printf 'kind-e2e: %s\n' "$*" >&2; exit 1; }
log() { printf 'kind-e2e: [%ss] %s\n' "$SECONDS" "$*" >&2; }

started_docker=0
if [ "${KIND_ENSURE_DOCKER:-0}" = 1 ]; then
  out=$("$here/ensure-docker.sh" start) || exit 1
  [ "$out" != started ] || started_docker=1
fi
command -v docker >/dev/null 2>&1 || die "docker is not installed; the kind path needs Docker (the local cluster path does not: see README)"
docker info >/dev/null 2>&1 || die "the Docker daemon is not reachable (is it running, and may this user use it?)"

case "${KIND_NODE_IMAGE:-}" in pykueue-local/*) KIND_OFFLINE=${KIND_OFFLINE:-1} ;; esac
KIND_OFFLINE=${KIND_OFFLINE:-0}
if [ -z "${KIND:-}" ]; then
  if command -v kind >/dev/null 2>&1; then
    KIND=kind
  elif [ "$KIND_OFFLINE" = 1 ]; then
    KIND=$("$here/build-kind-node.sh" kind) || die "could not build the pinned kind"
  else
    die "kind is not installed: go install sigs.k8s.io/kind@latest (or see https://kind.sigs.k8s.io)"
  fi
fi
if [ "$KIND_OFFLINE" = 1 ] && [ -z "${KIND_NODE_IMAGE:-}" ]; then
  KIND_NODE_IMAGE=$("$here/build-kind-node.sh") || die "could not build the offline kind node image"
fi
if "$KIND" get clusters 2>/dev/null | grep -qx -- "$KIND_CLUSTER_NAME"; then
  die "a kind cluster named $KIND_CLUSTER_NAME exists already; delete it ($KIND delete cluster --name $KIND_CLUSTER_NAME) or set KIND_CLUSTER_NAME"
fi

KUBECONFIG=$(mktemp "${TMPDIR:-/tmp}/pykueue-kind-kubeconfig.XXXXXX")
export KUBECONFIG
created=0

cleanup() {
  local status=$?
  if [ "$created" = 1 ]; then
    "$E2E_DEPLOY" logs || true
    [ "$status" = 0 ] || "$E2E_DEPLOY" digest || true
    "$KIND" export logs "$ARTIFACTS/kind" --name "$KIND_CLUSTER_NAME" >/dev/null 2>&1 || true
    if [ "${KIND_KEEP_CLUSTER:-0}" = 1 ]; then
      log "keeping cluster $KIND_CLUSTER_NAME (kubeconfig: $KUBECONFIG)"
    else
      "$KIND" delete cluster --name "$KIND_CLUSTER_NAME" || true
      rm -f "$KUBECONFIG"
    fi
  else
    rm -f "$KUBECONFIG"
  fi
  if [ "$started_docker" = 1 ] && [ "${KIND_KEEP_CLUSTER:-0}" != 1 ]; then
    "$here/ensure-docker.sh" stop || true
  fi
  exit "$status"
}

create_cluster() {
  local args=(create cluster --name "$KIND_CLUSTER_NAME" --config "$here/kind-config.yaml" --kubeconfig "$KUBECONFIG" --wait 5m)
  [ -z "${KIND_NODE_IMAGE:-}" ] || args+=(--image "$KIND_NODE_IMAGE")
  log "kind ${args[*]}"
  created=1
  "$KIND" "${args[@]}"
}

# The offline node image's pod network (hack/kind-node/pykueue-cni) is a bridge per node: every
# node needs a route to every other node's podCIDR via that node's address on kind's network.
route_pod_networks() {
  local kubectl=${KUBECTL:-$cache_bin/kubectl}
  [ -x "$kubectl" ] || kubectl=kubectl
  local nodes
  nodes=$("$kubectl" get nodes -o jsonpath='{range .items[*]}{.metadata.name} {.spec.podCIDR} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}')
  local name cidr ip other
  while read -r name cidr ip; do
    [ -n "$cidr" ] && [ -n "$ip" ] || die "node $name has no podCIDR or address yet"
    for other in $("$KIND" get nodes --name "$KIND_CLUSTER_NAME"); do
      [ "$other" = "$name" ] || docker exec "$other" ip route replace "$cidr" via "$ip"
    done
  done <<<"$nodes"
  log "routed the pod networks of $(wc -l <<<"$nodes") nodes"
}

load() {
  log "loading $1 into $KIND_CLUSTER_NAME"
  "$KIND" load docker-image "$1" --name "$KIND_CLUSTER_NAME"
}

build_and_load_image() {
  log "building $IMAGE"
  if [ "$KIND_OFFLINE" = 1 ]; then
    IMAGE=$IMAGE "$here/build-images.sh" pykueue >/dev/null
    load "$(BUSYBOX_IMAGE="$BUSYBOX_IMAGE" "$here/build-images.sh" busybox)"
    load "$("$here/build-images.sh" kwok)"
  else
    docker build -t "$IMAGE" "$root"
  fi
  load "$IMAGE"
}

BUSYBOX_IMAGE=${BUSYBOX_IMAGE:-pykueue-local/busybox:static}
export BUSYBOX_IMAGE
trap cleanup EXIT
trap 'exit 130' INT TERM
create_cluster
[ "$KIND_OFFLINE" != 1 ] || route_pod_networks
build_and_load_image
"$E2E_DEPLOY" test-crds
"$E2E_DEPLOY" install-kwok
"$E2E_DEPLOY" install
"$E2E_DEPLOY" wait-rollout
"$E2E_DEPLOY" wait-webhook
if [ "$KIND_OFFLINE" = 1 ]; then
  # Real containers on a kind worker: only here are the busybox image and real kubelets there.
  log "running tests/kind against $KUBECONFIG"
  (cd "$root" && PYKUEUE_KUBECONFIG=$KUBECONFIG "${PYTHON:-$root/.venv/bin/python}" -m pytest tests/kind -q -p no:cacheprovider)
fi
"$E2E_DEPLOY" test "$@"
