#!/usr/bin/env bash
# Create the project's virtualenv and install pykueue with its test tools.
set -euo pipefail
python=${1:-python3}
venv=${2:-.venv}
die() { printf 'ensure-python: %s\n' "$*" >&2; exit 1; }
command -v "$python" >/dev/null 2>&1 || die "$python not found. Install Python 3.11 or newer."
"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
  || die "$("$python" -V 2>&1) is too old; pykueue needs Python 3.11 or newer."
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv" || die "could not create a virtualenv (on Debian: apt-get install python3-venv)."
fi
"$venv/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
"$venv/bin/python" -m pip install -q -e '.[test]' \
  || die "pip could not install pykueue's dependencies; check access to PyPI."
