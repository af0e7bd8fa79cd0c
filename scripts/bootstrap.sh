#!/usr/bin/env bash
# Prepare a fresh Debian machine for this project: system packages the
# Python dependencies compile against, then the virtualenv in .venv.
# Safe to repeat; every step is skipped when it is already done.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
pkg-config --exists libvirt 2>/dev/null || need_apt+=(libvirt-dev)
command -v psql >/dev/null 2>&1 || need_apt+=(postgresql-client)
python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
  echo "bootstrap: installing system packages: ${need_apt[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
# requirements.lock pins every package: installs are reproducible, and an
# upgrade of what the fast paths rely on is a deliberate change.
# setuptools warns on every editable build ("Editable installation", about folders
# named like packages): advice for other layouts, and ~200 lines; errors still show.
PYTHONWARNINGS=ignore .venv/bin/python -m pip install -q -c requirements.lock -e '.[agent,dev]'
