#!/usr/bin/env bash
# Make sure a Docker daemon answers, for the image builds and the kind path.
#
#   hack/ensure-docker.sh start   install Docker Engine (Debian's docker.io) if no docker CLI or
#                                 dockerd is present, and start dockerd if no daemon answers.
#                                 Prints "started" when this call started the daemon, else nothing.
#   hack/ensure-docker.sh stop    stop the daemon, but only if `start` started it (its pid file).
#
# A daemon someone else runs (systemd, Docker Desktop, another session) is used as it is and never
# stopped. Every failure is one line on stderr naming what is missing, never a stack trace.
#
# Environment: PYKUEUE_CACHE [~/.cache/pykueue] holds the pid file and the daemon's log
# (docker/dockerd.log); DOCKERD_WAIT seconds to wait for a started daemon [60].
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${PYKUEUE_CACHE:-$HOME/.cache/pykueue}
state="$cache/docker"
pidfile="$state/dockerd.pid"
logfile="$state/dockerd.log"
DOCKERD_WAIT=${DOCKERD_WAIT:-60}

die() { printf 'ensure-docker: %s\n' "$*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo -n "$@"; else return 1; fi
}

answers() { docker info >/dev/null 2>&1; }

install_docker() {
  command -v apt-get >/dev/null 2>&1 \
    || die "Docker is not installed and this is not a Debian-like system; install Docker Engine and re-run."
  printf 'ensure-docker: installing docker.io from Debian packages\n' >&2
  { as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io; } \
    >"${TMPDIR:-/tmp}/ensure-docker-apt.log" 2>&1 \
    || die "could not install docker.io with apt-get (as root or with sudo); see ${TMPDIR:-/tmp}/ensure-docker-apt.log"
}

start_daemon() {
  command -v dockerd >/dev/null 2>&1 || die "dockerd is not installed; install Docker Engine and re-run."
  [ "$(id -u)" -eq 0 ] || command -v sudo >/dev/null 2>&1 \
    || die "the Docker daemon is not running and starting it needs root (or sudo)."
  mkdir -p "$state"
  # setsid: the daemon outlives this script and is not in the caller's process group, so a ^C
  # in the caller does not kill it half-way; `stop` ends it by its pid.
  local args=(--pidfile "$pidfile.daemon")
  # Where the capability bounding set lacks some capability (CapBnd below all-ones up to
  # cap_last_cap), --privileged containers -- every kind node -- cannot start with plain runc:
  # run them through hack/runc-bounded, which drops what the host cannot grant.
  local last bnd
  last=$(cat /proc/sys/kernel/cap_last_cap 2>/dev/null || echo 0)
  bnd=$(sed -n 's/^CapBnd:[[:space:]]*//p' /proc/self/status)
  if [ "$last" -gt 0 ] && [ $((16#$bnd)) -ne $(((1 << (last + 1)) - 1)) ]; then
    args+=(--add-runtime "runc-bounded=$here/runc-bounded" --default-runtime runc-bounded)
  fi
  # The daemon outlives this script: it must not keep the caller's other descriptors open (a
  # `flock` held around a CI stage would otherwise stay held for as long as dockerd runs).
  as_root setsid dockerd "${args[@]}" >"$logfile" 2>&1 </dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
  echo $! >"$pidfile"
  local waited=0
  until answers; do
    if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      rm -f "$pidfile"
      die "dockerd exited at start-up: $(tail -n 1 "$logfile" 2>/dev/null || echo 'no log')"
    fi
    [ "$waited" -lt "$DOCKERD_WAIT" ] || die "dockerd did not answer within ${DOCKERD_WAIT}s; see $logfile"
    sleep 1
    waited=$((waited + 1))
  done
  echo started
}

cmd_start() {
  if ! command -v docker >/dev/null 2>&1 || { ! answers && ! command -v dockerd >/dev/null 2>&1; }; then
    install_docker
  fi
  command -v docker >/dev/null 2>&1 || die "the docker CLI is still missing after installing docker.io."
  answers && return 0
  if docker info 2>&1 | grep -qi 'permission denied'; then
    die "the Docker daemon runs but this user may not use it (add it to the docker group, or run as root)."
  fi
  start_daemon
}

cmd_stop() {
  [ -f "$pidfile" ] || return 0
  # $pidfile marks that `start` started the daemon; dockerd itself wrote its pid next to it.
  local pid; pid=$(cat "$pidfile.daemon" 2>/dev/null || true)
  # dockerd stops its containerd on TERM.
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    as_root kill -TERM "$pid" 2>/dev/null || true
    local waited=0
    while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt 30 ]; do sleep 1; waited=$((waited + 1)); done
  fi
  rm -f "$pidfile"
}

case "${1:-start}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  *) die "usage: hack/ensure-docker.sh start|stop" ;;
esac
