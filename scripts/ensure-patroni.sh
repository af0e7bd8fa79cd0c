#!/usr/bin/env bash
# Patroni, etcd and haproxy from Debian's packages, for the high-availability
# tests (tests/ha/): each test starts its own etcd, Patroni-managed
# PostgreSQL clusters and haproxy under a temporary directory; nothing here
# starts a service. Safe to repeat: nothing is installed when all are there.
set -euo pipefail
if [ -x /usr/bin/patroni ] && [ -x /usr/bin/etcd ] && [ -x /usr/sbin/haproxy ]; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
echo "ensure-patroni: installing patroni, etcd-server and haproxy"
$sudo apt-get update -qq
# Where the packages start their own services (haproxy's on its default
# configuration), the tests do not use them: they run theirs on free ports.
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
  patroni etcd-server haproxy >/dev/null
for binary in /usr/bin/patroni /usr/bin/etcd /usr/sbin/haproxy; do
  if [ ! -x "$binary" ]; then
    echo "ensure-patroni: $binary is still missing" >&2
    exit 1
  fi
done
