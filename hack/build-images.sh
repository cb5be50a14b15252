#!/usr/bin/env bash
# Build every container image the kind path needs without pulling from a registry.
#
#   hack/build-images.sh debian     Debian minimal root file system (debootstrap), `docker import`ed
#   hack/build-images.sh python     Debian's Python 3.11 on that base: the Dockerfile's PYTHON_IMAGE
#   hack/build-images.sh pykueue    the project's Dockerfile with PYTHON_IMAGE set to the above
#   hack/build-images.sh busybox    a static busybox (Debian's busybox-static) in a scratch image
#   hack/build-images.sh kwok       the pinned kwok binary (make binaries) on the Debian base, tagged
#                                   as kwok's release image, which hack/e2e-deploy.sh install-kwok runs
#   hack/build-images.sh all        all of the above, in order
#
# Each prints the image reference it produced (or found) on stdout, progress on stderr.
#
# Base images are cached by a content hash of their recipe (suite, mirror, packages, the build
# steps below): the tag carries the hash, and the image is also saved as a tarball under
# $PYKUEUE_CACHE/images, so a later run (even after Docker's own store was wiped) finds it in
# seconds. The packages themselves come from the mirror at build time, so a cached base keeps the
# package versions of the day it was built: bump BASE_REVISION to take the mirror's current ones.
#
# pip inside `docker build` reaches PyPI through the same TLS path as the host: when PIP_CERT (or
# /etc/pip.conf's cert) names a CA bundle, it is handed to the build as a BuildKit secret, which is
# mounted only for that RUN step and never stored in a layer.
#
# Environment (defaults in brackets):
#   PYKUEUE_CACHE   cache root [~/.cache/pykueue]
#   DEBIAN_SUITE    [bookworm]      DEBIAN_MIRROR [http://deb.debian.org/debian]
#   IMAGE           tag for the pykueue image [pykueue:e2e]
#   BUSYBOX_IMAGE   tag for the busybox image [pykueue-local/busybox:static]
#   PIP_CA_BUNDLE   CA bundle for pip inside the build [PIP_CERT, else /etc/pip.conf's cert, else none]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
cache=${PYKUEUE_CACHE:-$HOME/.cache/pykueue}
imgcache="$cache/images"
DEBIAN_SUITE=${DEBIAN_SUITE:-bookworm}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
IMAGE=${IMAGE:-pykueue:e2e}
BUSYBOX_IMAGE=${BUSYBOX_IMAGE:-pykueue-local/busybox:static}
# Bump to rebuild every base image with the mirror's current packages.
BASE_REVISION=1

die() { printf 'build-images: %s\n' "$*" >&2; exit 1; }
log() { printf 'build-images: %s\n' "$*" >&2; }

docker info >/dev/null 2>&1 || die "no Docker daemon answers; run hack/ensure-docker.sh start first"
mkdir -p "$imgcache"

hash_of() { printf '%s' "$*" | sha256sum | cut -c1-12; }
have_image() { docker image inspect "$1" >/dev/null 2>&1; }

# A cached image: present in Docker, else loaded from its tarball, else built by "$@" and saved.
cached_image() { # ref tarball build-command...
  local ref=$1 tarball=$2; shift 2
  if have_image "$ref"; then return 0; fi
  if [ -s "$tarball" ]; then
    log "loading $ref from $tarball"
    docker load -i "$tarball" >/dev/null
    have_image "$ref" && return 0
  fi
  "$@"
  docker save "$ref" | gzip -1 >"$tarball.tmp"
  mv "$tarball.tmp" "$tarball"
}

# --- Debian base ------------------------------------------------------------------------------
# minbase: dpkg, apt and the essential set, nothing else. ca-certificates so apt/pip could use
# HTTPS mirrors; the apt lists and caches are dropped to keep the image small.
DEBIAN_INCLUDE="ca-certificates"
debian_recipe() { echo "rev=$BASE_REVISION suite=$DEBIAN_SUITE mirror=$DEBIAN_MIRROR variant=minbase include=$DEBIAN_INCLUDE"; }
debian_ref() { echo "pykueue-local/debian:$DEBIAN_SUITE-$(hash_of "$(debian_recipe)")"; }

build_debian() {
  command -v debootstrap >/dev/null 2>&1 || die "debootstrap is not installed (apt-get install debootstrap)"
  [ "$(id -u)" -eq 0 ] || die "debootstrap needs root"
  local ref; ref=$(debian_ref)
  local work; work=$(mktemp -d "${TMPDIR:-/tmp}/pykueue-debootstrap.XXXXXX")
  log "debootstrap $DEBIAN_SUITE from $DEBIAN_MIRROR (a few minutes)"
  if ! debootstrap --variant=minbase --include="$DEBIAN_INCLUDE" "$DEBIAN_SUITE" "$work/rootfs" "$DEBIAN_MIRROR" \
    >"$work/debootstrap.log" 2>&1; then
    cp "$work/debootstrap.log" "$imgcache/debootstrap-failed.log" 2>/dev/null || true
    rm -rf "$work"
    die "debootstrap failed; see $imgcache/debootstrap-failed.log"
  fi
  # The security suite too, so `apt-get install` in derived images gets current fixes.
  cat >"$work/rootfs/etc/apt/sources.list" <<EOF
deb $DEBIAN_MIRROR $DEBIAN_SUITE main
deb $DEBIAN_MIRROR $DEBIAN_SUITE-updates main
deb ${DEBIAN_MIRROR%/debian}/debian-security $DEBIAN_SUITE-security main
EOF
  rm -rf "$work/rootfs/var/lib/apt/lists/"* "$work/rootfs/var/cache/apt/"*.bin "$work/rootfs/var/cache/apt/archives/"*.deb
  tar --numeric-owner -C "$work/rootfs" -c . | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' - "$ref" >/dev/null
  rm -rf "$work"
}

cmd_debian() {
  local ref; ref=$(debian_ref)
  cached_image "$ref" "$imgcache/debian-$(hash_of "$(debian_recipe)").tar.gz" build_debian
  echo "$ref"
}

# --- Python base ------------------------------------------------------------------------------
# Debian's Python 3.11 laid out the way the Dockerfile expects of python:3.11-slim: `python` on
# PATH, and a pip of its own installed under /usr/local (from Debian's pip wheel, so pip keeps a
# RECORD and the Dockerfile's runtime stage can uninstall it). Debian's "externally managed"
# marker is removed: the image is a base for installing into, as the official one is.
python_dockerfile() {
  cat <<'EOF'
ARG BASE
FROM ${BASE}
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 python3-venv python3-pip-whl python3-setuptools-whl \
    && rm -f /usr/lib/python3.11/EXTERNALLY-MANAGED \
    && ln -s /usr/bin/python3 /usr/local/bin/python \
    && whl=$(ls /usr/share/python-wheels/pip-*.whl) \
    && python3 "$whl/pip" install -q --no-index --no-cache-dir "$whl" \
    && python -m pip --version \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /root/.cache
ENV LANG=C.UTF-8
CMD ["python3"]
EOF
}
python_recipe() { echo "base=$(debian_ref) $(python_dockerfile)"; }
python_ref() { echo "pykueue-local/python:3.11-$DEBIAN_SUITE-$(hash_of "$(python_recipe)")"; }

build_python() {
  local base; base=$(cmd_debian)
  log "building $(python_ref) on $base"
  python_dockerfile | docker build -q --build-arg BASE="$base" -t "$(python_ref)" - >/dev/null \
    || die "building the Python base image failed"
}

cmd_python() {
  cmd_debian >/dev/null
  local ref; ref=$(python_ref)
  cached_image "$ref" "$imgcache/python-$(hash_of "$(python_recipe)").tar.gz" build_python
  echo "$ref"
}

# --- pykueue ----------------------------------------------------------------------------------
pip_ca_bundle() {
  if [ -n "${PIP_CA_BUNDLE:-}" ]; then echo "$PIP_CA_BUNDLE"; return; fi
  if [ -n "${PIP_CERT:-}" ]; then echo "$PIP_CERT"; return; fi
  if [ -r /etc/pip.conf ]; then sed -n 's/^[[:space:]]*cert[[:space:]]*=[[:space:]]*//p' /etc/pip.conf | head -n 1; fi
}

# BuildKit (for the secret): through buildx when the CLI has it, else the CLI's built-in BuildKit
# client (Docker CLI < 23, e.g. Debian's docker.io) -- a newer CLI without buildx has none.
buildkit_docker() {
  if docker buildx version >/dev/null 2>&1; then
    echo docker
  elif DOCKER_BUILDKIT=1 docker build --help 2>/dev/null | grep -q -- '--secret'; then
    echo docker
  elif [ -x /usr/bin/docker ] && DOCKER_BUILDKIT=1 /usr/bin/docker build --help 2>/dev/null | grep -q -- '--secret'; then
    echo /usr/bin/docker
  else
    die "no BuildKit-capable docker CLI (buildx plugin, or Docker CLI 20.10-22.x); the Dockerfile's pip step needs it"
  fi
}

cmd_pykueue() {
  local python; python=$(cmd_python)
  local cli; cli=$(buildkit_docker)
  local args=(build -q -t "$IMAGE" --build-arg "PYTHON_IMAGE=$python" -f "$root/Dockerfile")
  local ca; ca=$(pip_ca_bundle)
  if [ -n "$ca" ]; then
    [ -r "$ca" ] || die "pip's CA bundle $ca is not readable"
    args+=(--secret "id=pip-ca,src=$ca")
  fi
  log "building $IMAGE (PYTHON_IMAGE=$python)"
  DOCKER_BUILDKIT=1 "$cli" "${args[@]}" "$root" >/dev/null || die "building $IMAGE failed (see the build output above)"
  echo "$IMAGE"
}

# --- busybox ----------------------------------------------------------------------------------
# The image the kind tests' Jobs run for real: Debian's statically linked busybox, alone in a
# scratch image with its applet links, running as an unprivileged numeric user.
busybox_dockerfile() {
  cat <<'EOF'
ARG BASE
FROM ${BASE} AS fetch
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends busybox-static \
    && mkdir -p /out/bin /out/tmp \
    && cp /bin/busybox /out/bin/busybox \
    && for a in $(/out/bin/busybox --list); do [ "$a" = busybox ] || ln -s busybox "/out/bin/$a"; done \
    && chmod 1777 /out/tmp
FROM scratch
COPY --from=fetch /out/ /
ENV PATH=/bin
USER 65532:65532
CMD ["sh"]
EOF
}

cmd_busybox() {
  local base; base=$(cmd_debian)
  if ! have_image "$BUSYBOX_IMAGE"; then
    log "building $BUSYBOX_IMAGE"
    busybox_dockerfile | docker build -q --build-arg BASE="$base" -t "$BUSYBOX_IMAGE" - >/dev/null \
      || die "building the busybox image failed"
  fi
  echo "$BUSYBOX_IMAGE"
}

# --- kwok -------------------------------------------------------------------------------------
cmd_kwok() {
  local base; base=$(cmd_debian)
  # shellcheck source=/dev/null
  source "$here/versions.env"
  local bin="$cache/bin/kwok-$KWOK_VERSION/kwok"
  [ -x "$bin" ] || "$here/build-binaries.sh" kwok >/dev/null || die "building kwok $KWOK_VERSION failed"
  local ref
  ref=$(sed -n 's/^KWOK_IMAGE_REPOSITORY = "\(.*\)"$/\1/p' "$here/localcluster/incluster_kwok.py"):$KWOK_VERSION
  [ "${ref%%:*}" != "" ] || die "cannot read kwok's image name from hack/localcluster/incluster_kwok.py"
  if ! have_image "$ref"; then
    log "building $ref from $bin"
    local work; work=$(mktemp -d)
    cp "$bin" "$work/kwok"
    # shellcheck disable=SC2016 # ${BASE} is for docker build, not for this shell
    printf 'ARG BASE\nFROM ${BASE}\nCOPY kwok /usr/local/bin/kwok\nUSER 65532:65532\nENTRYPOINT ["/usr/local/bin/kwok"]\n' >"$work/Dockerfile"
    docker build -q --build-arg BASE="$base" -t "$ref" "$work" >/dev/null || { rm -rf "$work"; die "building $ref failed"; }
    rm -rf "$work"
  fi
  echo "$ref"
}

case "${1:-}" in
  debian) cmd_debian ;;
  python) cmd_python ;;
  pykueue) cmd_pykueue ;;
  busybox) cmd_busybox ;;
  kwok) cmd_kwok ;;
  all) cmd_pykueue; cmd_busybox; cmd_kwok ;;
  *) die "usage: hack/build-images.sh debian|python|pykueue|busybox|kwok|all" ;;
esac
