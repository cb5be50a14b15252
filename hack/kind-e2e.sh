#!/usr/bin/env bash
# End-to-end on kind (needs Docker and kind): create a cluster with two workers for pykueue itself,
# build the image and load it into the nodes, deploy kwok and its simulated nodes (where the
# tests' pods run), install the chart, wait until the webhook answers, run tests/e2e against the
# cluster, collect logs, and delete the cluster whatever happened.
#
# usage: hack/kind-e2e.sh [pytest args...]
#
# Environment (defaults in brackets):
#   KIND_CLUSTER_NAME  [pykueue-e2e]
#   KIND_NODE_IMAGE    kindest/node image to use [kind's default for its version]
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
IMAGE=${IMAGE:-pykueue:e2e}
ARTIFACTS=${ARTIFACTS:-$root/_out/e2e-artifacts}
E2E_DEPLOY=${E2E_DEPLOY:-$here/e2e-deploy.sh}
# pykueue's pods go to the tainted workers of kind-config.yaml, never to a simulated node.
HELM_VALUES=$here/kind-values.yaml${HELM_VALUES:+,$HELM_VALUES}
export IMAGE ARTIFACTS HELM_VALUES

die() { printf 'kind-e2e: %s\n' "$*" >&2; exit 1; }
log() { printf 'kind-e2e: %s\n' "$*" >&2; }

command -v docker >/dev/null 2>&1 || die "docker is not installed; the kind path needs Docker (the local cluster path does not: see README)"
docker info >/dev/null 2>&1 || die "the Docker daemon is not reachable (is it running, and may this user use it?)"
command -v kind >/dev/null 2>&1 || die "kind is not installed: go install sigs.k8s.io/kind@latest (or see https://kind.sigs.k8s.io)"

KUBECONFIG=$(mktemp "${TMPDIR:-/tmp}/pykueue-kind-kubeconfig.XXXXXX")
export KUBECONFIG

cleanup() {
  local status=$?
  "$E2E_DEPLOY" logs || true
  kind export logs "$ARTIFACTS/kind" --name "$KIND_CLUSTER_NAME" >/dev/null 2>&1 || true
  if [ "${KIND_KEEP_CLUSTER:-0}" = 1 ]; then
    log "keeping cluster $KIND_CLUSTER_NAME (kubeconfig: $KUBECONFIG)"
  else
    kind delete cluster --name "$KIND_CLUSTER_NAME" || true
    rm -f "$KUBECONFIG"
  fi
  exit "$status"
}

create_cluster() {
  local args=(create cluster --name "$KIND_CLUSTER_NAME" --config "$here/kind-config.yaml" --kubeconfig "$KUBECONFIG" --wait 5m)
  [ -z "${KIND_NODE_IMAGE:-}" ] || args+=(--image "$KIND_NODE_IMAGE")
  log "kind ${args[*]}"
  kind "${args[@]}"
}

build_and_load_image() {
  log "building $IMAGE"
  docker build -t "$IMAGE" "$root"
  log "loading $IMAGE into $KIND_CLUSTER_NAME"
  kind load docker-image "$IMAGE" --name "$KIND_CLUSTER_NAME"
}

trap cleanup EXIT
trap 'exit 130' INT TERM
create_cluster
build_and_load_image
"$E2E_DEPLOY" test-crds
"$E2E_DEPLOY" install-kwok
"$E2E_DEPLOY" install
"$E2E_DEPLOY" wait-rollout
"$E2E_DEPLOY" wait-webhook
"$E2E_DEPLOY" test "$@"
