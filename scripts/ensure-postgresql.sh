#!/usr/bin/env bash
# Make sure the local PostgreSQL server the tests use is up (CI machines may
# have it installed but stopped). Uses PLACEMENT_TEST_PG_URL when set.
set -euo pipefail
url="${PLACEMENT_TEST_PG_URL:-postgresql://postgres@127.0.0.1:5432/test}"
if psql "$url" -qAtc 'select 1' >/dev/null 2>&1; then exit 0; fi
if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
  for version in $(ls /etc/postgresql); do
    pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  done
fi
for _ in $(seq 1 30); do
  psql "$url" -qAtc 'select 1' >/dev/null 2>&1 && exit 0
  sleep 1
done
echo "PostgreSQL at $url is not reachable; the PostgreSQL half of the tests cannot run." >&2
exit 1
