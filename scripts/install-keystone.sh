#!/usr/bin/env bash
# Install OpenStack Keystone (from PyPI) into a virtualenv of its own, for the
# tests and the benchmark that run a real Keystone. Its dependencies (oslo.*,
# SQLAlchemy, ...) are pinned by scripts/keystone-constraints.txt and never mix
# with the project's .venv. Reused while the constraints are unchanged.
#   KEYSTONE_VENV  where to put it (default: var/keystone-venv)
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${KEYSTONE_VENV:-var/keystone-venv}"
constraints=scripts/keystone-constraints.txt
marker="$venv/.installed"
wanted="$(sha256sum "$constraints" | cut -d' ' -f1)"

if [ -f "$marker" ] && [ "$(cat "$marker")" = "$wanted" ]; then
  exit 0
fi
echo "install-keystone: installing keystone and gunicorn into $venv"
mkdir -p "$(dirname "$venv")"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
"$venv/bin/python" -m pip install -q -c "$constraints" keystone gunicorn
echo "$wanted" > "$marker"
