#!/usr/bin/env bash
# Patroni and etcd from Debian's packages, for the high-availability tests
# (tests/ha/): each test starts its own etcd and Patroni-managed PostgreSQL
# clusters under a temporary directory; nothing here starts a service.
# Safe to repeat: nothing is installed when both are there.
set -euo pipefail
if [ -x /usr/bin/patroni ] && [ -x /usr/bin/etcd ]; then
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
echo "ensure-patroni: installing patroni and etcd-server"
$sudo apt-get update -qq
# Where the packages start their own services, the tests do not use them:
# they run theirs on free ports.
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
  patroni etcd-server >/dev/null
if [ ! -x /usr/bin/patroni ] || [ ! -x /usr/bin/etcd ]; then
  echo "ensure-patroni: /usr/bin/patroni or /usr/bin/etcd is still missing" >&2
  exit 1
fi
