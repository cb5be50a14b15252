#!/usr/bin/env bash
# Build kind and an offline kind node image for the pinned Kubernetes, pulling no image.
#
#   hack/build-kind-node.sh          print the node image reference (building what is missing)
#   hack/build-kind-node.sh kind     print the path of the pinned kind binary (building it once)
#
# What goes in (see hack/kind-node/Dockerfile):
#   - kind from the Go module proxy (sigs.k8s.io/kind, KIND_VERSION in versions.env), and kind's
#     node-side files (entrypoint, systemd units, containerd config) from that module's source;
#   - kubelet, kubeadm, kube-proxy (`hack/build-binaries.sh kubernetes-node`) and kubectl,
#     kube-apiserver, kube-controller-manager, kube-scheduler, etcd (the local cluster's pins);
#   - images built here, tagged with the names kubeadm asks for (`kubeadm config images list`):
#     the control plane, kube-proxy (with Debian's iptables) and etcd on the Debian base of
#     hack/build-images.sh (the Go binaries are dynamically linked against glibc), and pause
#     compiled statically from the C source in the Kubernetes module into a scratch image.
#     CoreDNS is not built: hack/kind-config.yaml skips kubeadm's CoreDNS addon. etcd is the
#     local cluster's pin (ETCD_VERSION), under the tag kubeadm asks for, which may name another
#     3.6 patch release (`etcd --version` in the pod tells the truth).
#
# The node image's tag carries a hash of everything above (pins, the Debian base, the files
# under hack/kind-node/), so an unchanged recipe is found in Docker's store in a second.
#
# Environment: PYKUEUE_CACHE [~/.cache/pykueue].
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=/dev/null
source "$here/versions.env"
cache=${PYKUEUE_CACHE:-$HOME/.cache/pykueue}
bindir="$cache/bin"

die() { printf 'build-kind-node: %s\n' "$*" >&2; exit 1; }
log() { printf 'build-kind-node: %s\n' "$*" >&2; }

have_image() { docker image inspect "$1" >/dev/null 2>&1; }

kind_binary() {
  "$here/build-binaries.sh" kind >/dev/null || die "building kind $KIND_VERSION failed"
  echo "$bindir/kind-$KIND_VERSION/kind"
}

kind_module_dir() {
  local dir
  dir=$(GOTOOLCHAIN=local GOFLAGS=-modcacherw go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" 2>/dev/null \
    | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -n "$dir" ] && [ -d "$dir/images/base/files" ] || die "cannot download sigs.k8s.io/kind@$KIND_VERSION's source from the Go module proxy"
  echo "$dir"
}

k8s_module_dir() {
  local dir
  dir=$(GOTOOLCHAIN=local GOFLAGS=-modcacherw go mod download -json "k8s.io/kubernetes@$K8S_VERSION" 2>/dev/null \
    | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -n "$dir" ] && [ -f "$dir/build/pause/linux/pause.c" ] || die "cannot download k8s.io/kubernetes@$K8S_VERSION's source (for pause.c)"
  echo "$dir"
}

cmd_node() {
  command -v go >/dev/null 2>&1 || die "Go is not installed; it is needed to build kind and the node binaries"
  docker info >/dev/null 2>&1 || die "no Docker daemon answers; run hack/ensure-docker.sh start first"
  "$here/build-binaries.sh" kubernetes kubernetes-node etcd kind >/dev/null || die "building the pinned binaries failed"
  local k8s="$bindir/kubernetes-$K8S_VERSION" node="$bindir/kubernetes-node-$K8S_VERSION" etcd="$bindir/etcd-$ETCD_VERSION"
  local base; base=$("$here/build-images.sh" debian) || die "building the Debian base image failed"

  local recipe
  recipe=$(
    echo "k8s=$K8S_VERSION etcd=$ETCD_VERSION kind=$KIND_VERSION base=$base"
    find "$here/kind-node" -type f | LC_ALL=C sort | xargs cat
    cat "$0"
  )
  local hash; hash=$(printf '%s' "$recipe" | sha256sum | cut -c1-12)
  local ref="pykueue-local/kind-node:$K8S_VERSION-$hash"
  if have_image "$ref"; then echo "$ref"; return 0; fi

  local work; work=$(mktemp -d "${TMPDIR:-/tmp}/pykueue-kind-node.XXXXXX")
  # shellcheck disable=SC2064 # expand now: the path is fixed
  trap "rm -rf '$work'" EXIT
  mkdir -p "$work/ctx/bin" "$work/ctx/images" "$work/ctx/kind-files"
  cp "$node/kubelet" "$node/kubeadm" "$k8s/kubectl" "$work/ctx/bin/"

  # The image names and tags kubeadm will use for this version.
  local images; images=$("$node/kubeadm" config images list --kubernetes-version "$K8S_VERSION" 2>/dev/null) \
    || die "kubeadm config images list failed"
  image_for() { grep -E "/$1:" <<<"$images" | head -n 1; }

  log "building the component images for $K8S_VERSION"
  local comp
  for comp in kube-apiserver kube-controller-manager kube-scheduler etcd kube-proxy; do
    local tag; tag=$(image_for "$comp")
    [ -n "$tag" ] || die "kubeadm lists no $comp image"
    local src=$k8s/$comp
    [ "$comp" = etcd ] && src=$etcd/etcd
    [ "$comp" = kube-proxy ] && src=$node/kube-proxy
    mkdir -p "$work/$comp"
    cp "$src" "$work/$comp/$comp"
    {
      echo "ARG BASE"
      echo "FROM \${BASE}"
      # kube-proxy programs iptables/nftables and conntrack.
      [ "$comp" = kube-proxy ] && echo "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends iptables nftables conntrack && rm -rf /var/lib/apt/lists/*"
      echo "COPY $comp /usr/local/bin/$comp"
      echo "ENTRYPOINT [\"/usr/local/bin/$comp\"]"
    } >"$work/$comp/Dockerfile"
    docker build -q --build-arg BASE="$base" -t "$tag" "$work/$comp" >/dev/null || die "building $tag failed"
    docker save "$tag" -o "$work/ctx/images/$comp.tar"
  done

  local pause_tag; pause_tag=$(image_for pause)
  [ -n "$pause_tag" ] || die "kubeadm lists no pause image"
  mkdir -p "$work/pause"
  command -v gcc >/dev/null 2>&1 || die "gcc is not installed (apt-get install gcc libc6-dev); it compiles pause"
  gcc -Os -static -Wall -DVERSION="${pause_tag##*:}-pykueue" -o "$work/pause/pause" "$(k8s_module_dir)/build/pause/linux/pause.c" \
    || die "compiling pause.c failed (a static glibc, libc6-dev, is needed)"
  printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$work/pause/Dockerfile"
  docker build -q -t "$pause_tag" "$work/pause" >/dev/null || die "building $pause_tag failed"
  docker save "$pause_tag" -o "$work/ctx/images/pause.tar"

  local kind_src; kind_src=$(kind_module_dir)
  cp -r "$kind_src/images/base/files/." "$work/ctx/kind-files/"
  chmod -R u+w "$work/ctx/kind-files"
  rm -rf "$work/ctx/kind-files/LICENSES"
  cp "$here/kind-node/Dockerfile" "$here/kind-node/pykueue-cni" "$here/kind-node/pykueue-preload-images" \
    "$here/kind-node/default-cni.yaml" "$work/ctx/"
  cp -r "$here/kind-node/units" "$work/ctx/units"

  log "building $ref"
  docker build -q --build-arg BASE="$base" --build-arg K8S_VERSION="$K8S_VERSION" \
    --build-arg PAUSE_IMAGE="$pause_tag" -t "$ref" "$work/ctx" >/dev/null || die "building the node image failed"
  # Earlier recipes' node images (about 1 GB each) go, unless a cluster still runs on one.
  docker images --format '{{.Repository}}:{{.Tag}}' pykueue-local/kind-node | grep -vxF "$ref" \
    | xargs -r docker image rm >/dev/null 2>&1 || true
  echo "$ref"
}

case "${1:-node}" in
  node) cmd_node ;;
  kind) kind_binary ;;
  *) die "usage: hack/build-kind-node.sh [node|kind]" ;;
esac
