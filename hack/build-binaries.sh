#!/usr/bin/env bash
# Build the pinned control-plane binaries from the Go module proxy and cache them outside the repo.
#
# kube-apiserver, kube-controller-manager, kube-scheduler and kubectl come from k8s.io/kubernetes
# (every k8s.io/* staging module replaced with its published v0.<minor>.<patch>); etcd from
# go.etcd.io/etcd/server/v3 through a tiny main calling etcdmain.Main; kwok (simulated nodes) and
# helm with `go install`. A binary is rebuilt only when its pin changes: each pin has its own
# cache directory and a finished build leaves a stamp file there.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# versions.env holds plain KEY=VALUE pins; nothing for shellcheck to follow.
# shellcheck source=/dev/null
source "$here/versions.env"

cache=${PYKUEUE_CACHE:-$HOME/.cache/pykueue}
bindir="$cache/bin"
mkdir -p "$bindir"

die() { printf 'build-binaries: %s\n' "$*" >&2; exit 1; }

# Go is only needed when something must be built: with a warm cache this script just relinks.
go_ready=
need_go() {
  [ -n "$go_ready" ] && return 0
  command -v go >/dev/null 2>&1 || die "Go is not installed. Install Go ${GO_MIN} or newer (https://go.dev/dl) and re-run."
  local gov
  gov=$(GOTOOLCHAIN=local go env GOVERSION | sed 's/^go//')
  if [ "$(printf '%s\n%s\n' "$GO_MIN" "$gov" | sort -V | head -1)" != "$GO_MIN" ]; then
    die "Go $gov is too old; Kubernetes $K8S_VERSION needs Go ${GO_MIN} or newer (https://go.dev/dl)."
  fi
  export GOTOOLCHAIN=local
  # Go 1.27+ switches encoding/json to v2 by default, which breaks the apiserver's OpenAPI output.
  if [ "$(printf '%s\n%s\n' "1.27" "$gov" | sort -V | head -1)" = "1.27" ]; then
    export GOEXPERIMENT=nojsonv2
  fi
  export GOFLAGS="-trimpath"
  go_ready=1
}
proxy=${GOPROXY:-https://proxy.golang.org}
proxy=${proxy%%,*}

check_proxy() {
  need_go
  # Without curl the probe below would blame the network for a missing tool.
  command -v curl >/dev/null 2>&1 || die "curl is not installed but is needed to fetch Kubernetes $K8S_VERSION's go.mod; install curl and re-run."
  local why
  if ! why=$(curl -fsS --max-time 20 "$proxy/k8s.io/kubernetes/@v/$K8S_VERSION.info" 2>&1 >/dev/null); then
    die "cannot reach the Go module proxy at $proxy (${why:-no answer}); it is needed once to build Kubernetes $K8S_VERSION. Check the network or set GOPROXY to a reachable proxy."
  fi
}

stamp_ok() { [ -f "$1/.stamp" ] && [ "$(cat "$1/.stamp")" = "$2" ]; }

# Two builds at once (two checkouts, two CI runs, or `.ci/run`'s background build and the test
# targets waiting for it) would race on the same cache directories. So a build that is not
# finished takes the cache's lock before it starts, and the loop at the end releases it after each
# target: a caller that needs only finished targets never waits, and one that needs an unfinished
# target waits only for the build under way.
locked=
lock_cache() {
  [ -z "$locked" ] || return 0
  command -v flock >/dev/null 2>&1 || return 0
  exec 9>"$bindir/.build.lock"
  if ! flock -n 9; then
    echo "build-binaries: waiting for another build in $bindir to finish (then $t)..." >&2
    flock 9
  fi
  locked=1
}
unlock_cache() {
  [ -n "$locked" ] || return 0
  exec 9>&-
  locked=
}

# Whether the build in directory $1 is finished at pin $2. If it is not, the cache is locked on
# return, and the stamp was looked at again under the lock (another build may have just made it).
finished() {
  stamp_ok "$1" "$2" && return 0
  lock_cache
  stamp_ok "$1" "$2"
}

# kubernetes: the control plane and kubectl (the local cluster). kubernetes-node: kubelet, kubeadm
# and kube-proxy, which only the offline kind node image needs (hack/build-kind-node.sh).
build_kubernetes() {
  build_kubernetes_cmds "$bindir/kubernetes-$K8S_VERSION" kube-apiserver kube-controller-manager kube-scheduler kubectl
}

build_kubernetes_node() {
  build_kubernetes_cmds "$bindir/kubernetes-node-$K8S_VERSION" kubelet kubeadm kube-proxy
}

build_kubernetes_cmds() { # out command...
  local out=$1; shift
  finished "$out" "$K8S_VERSION" && return 0
  check_proxy
  echo "building Kubernetes $K8S_VERSION (first build takes several minutes)..." >&2
  local work; work=$(mktemp -d)
  local minor=${K8S_VERSION#v1.}
  local staging_version="v0.$minor"
  (
    cd "$work"
    go mod init pykueue.local/k8sbuild >/dev/null 2>&1
    curl -fsS "$proxy/k8s.io/kubernetes/@v/$K8S_VERSION.mod" -o kubernetes.mod
    {
      echo "require k8s.io/kubernetes $K8S_VERSION"
      grep -oE '^\s+k8s\.io/[a-z0-9-]+ => \./staging' kubernetes.mod | awk -v v="$staging_version" '{print "replace " $1 " => " $1 " " v}'
    } >>go.mod
    {
      printf '//go:build tools\n\npackage tools\n\nimport (\n'
      for c in "$@"; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c"; done
      printf ')\n'
    } >tools.go
    go mod tidy -e >/dev/null 2>&1 || true
    go get k8s.io/kubernetes@"$K8S_VERSION" >/dev/null
    mkdir -p "$out"
    for c in "$@"; do
      go build -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION" -o "$out/$c" "k8s.io/kubernetes/cmd/$c"
    done
  )
  rm -rf "$work"
  echo "$K8S_VERSION" >"$out/.stamp"
}

build_etcd() {
  local out="$bindir/etcd-$ETCD_VERSION"
  finished "$out" "$ETCD_VERSION" && return 0
  check_proxy
  echo "building etcd $ETCD_VERSION..." >&2
  local work; work=$(mktemp -d)
  (
    cd "$work"
    go mod init pykueue.local/etcdbuild >/dev/null 2>&1
    cat >main.go <<'GO'
// Command etcd is the stock etcd server CLI.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null
    go mod tidy >/dev/null
    mkdir -p "$out"
    go build -ldflags "-s -w" -o "$out/etcd" .
  )
  rm -rf "$work"
  echo "$ETCD_VERSION" >"$out/.stamp"
}

go_install() { # name module version
  local out="$bindir/$1-$3"
  finished "$out" "$3" && return 0
  check_proxy
  echo "building $1 $3..." >&2
  mkdir -p "$out"
  GOBIN="$out" go install -ldflags "-s -w" "$2@$3"
  echo "$3" >"$out/.stamp"
}

# Kueue's published CRDs, the oracle of the schema parity test (tests/unit/api/test_kueue_crd_parity.py).
# They ship inside the sigs.k8s.io/kueue Go module, so one `go mod download` (about a second, no
# build) fetches them; only the CRD files are kept, under a directory per pin with a stamp.
fetch_kueue_crds() { fetch_kueue_module_crds "$KUEUE_VERSION"; }
fetch_kueue_module_crds() { # version
  local KUEUE_VERSION=$1
  local out="$cache/kueue-$KUEUE_VERSION/crds"
  finished "$out" "$KUEUE_VERSION" && return 0
  command -v go >/dev/null 2>&1 || die "Go is not installed but is needed to fetch Kueue $KUEUE_VERSION's CRDs; install Go (https://go.dev/dl) and re-run \`make kueue-crds\`."
  echo "fetching Kueue $KUEUE_VERSION's CRDs..." >&2
  local gopath; gopath=$(mktemp -d)
  local dir
  if ! dir=$(GOTOOLCHAIN=local GOPATH="$gopath" GOFLAGS=-modcacherw go mod download -json "sigs.k8s.io/kueue@$KUEUE_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p'); then
    rm -rf "$gopath"
    die "cannot download sigs.k8s.io/kueue@$KUEUE_VERSION from the Go module proxy; check the network or GOPROXY and re-run \`make kueue-crds\`."
  fi
  local src="$dir/config/components/crd/bases"
  if [ -z "$dir" ] || ! ls "$src"/*.yaml >/dev/null 2>&1; then
    rm -rf "$gopath"
    die "sigs.k8s.io/kueue@$KUEUE_VERSION has no CRDs under config/components/crd/bases; check KUEUE_VERSION in hack/versions.env."
  fi
  rm -rf "$out"
  mkdir -p "$out"
  cp "$src"/*.yaml "$out/"
  rm -rf "$gopath"
  echo "$KUEUE_VERSION" >"$out/.stamp"
}

build_target() { # target
  case "$1" in
    kubernetes) build_kubernetes ;;
    kubernetes-node) build_kubernetes_node ;;
    kind) go_install kind sigs.k8s.io/kind "$KIND_VERSION" ;;
    etcd) build_etcd ;;
    kwok) go_install kwok sigs.k8s.io/kwok/cmd/kwok "$KWOK_VERSION" ;;
    helm) go_install helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION" ;;
    kueue-crds) fetch_kueue_crds ;;
    # Kueue's kubectl plugin, not part of the cluster: `make kueuectl` builds both pins.
    kueuectl) go_install kubectl-kueue sigs.k8s.io/kueue/cmd/kueuectl "$KUEUECTL_VERSION"
              go_install kubectl-kueue sigs.k8s.io/kueue/cmd/kueuectl "$KUEUECTL_V1BETA1_VERSION" ;;
    # Kueue's manager, run out of cluster as the baseline's `kueue@<version>` variant: `make kueue`
    # builds both pins; KUEUE_BUILD_VERSIONS="vX.Y.Z ..." builds those instead (bench/kueue_process.py).
    kueue) for v in ${KUEUE_BUILD_VERSIONS:-$KUEUE_BENCH_VERSION $KUEUE_BENCH_V1BETA2_VERSION}; do
             go_install kueue sigs.k8s.io/kueue/cmd/kueue "$v"
             fetch_kueue_module_crds "$v"
           done ;;
    *) die "unknown target $1" ;;
  esac
}

targets=${*:-kubernetes etcd kwok helm kueue-crds}
for t in $targets; do
  build_target "$t"
  unlock_cache
done

# A stable directory of symlinks so callers need not know the pins. Only a finished pin is
# linked: a build under way elsewhere has created its directory but not yet its binaries, and
# linking its unmatched glob once left a link named `*` here.
cur="$bindir/current"
mkdir -p "$cur"
rm -f "$cur/*"
link_finished() { # directory pin
  stamp_ok "$bindir/$1" "$2" || return 0
  local f
  for f in "$bindir/$1"/*; do
    [ -f "$f" ] && ln -sf "$f" "$cur/"
  done
  return 0
}
link_finished "kubernetes-$K8S_VERSION" "$K8S_VERSION"
link_finished "etcd-$ETCD_VERSION" "$ETCD_VERSION"
link_finished "kwok-$KWOK_VERSION" "$KWOK_VERSION"
link_finished "helm-$HELM_VERSION" "$HELM_VERSION"
echo "$cur"
