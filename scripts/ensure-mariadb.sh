#!/usr/bin/env bash
# Make sure the local MariaDB server the migration tests use (upstream
# Placement's usual database) is up: installed from Debian's packages when
# missing, started when stopped.
set -euo pipefail
probe() { mysql --protocol=tcp -h 127.0.0.1 -P 3306 -uroot -e 'select 1' >/dev/null 2>&1; }
probe && exit 0
if ! command -v mysqld >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
  if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
  echo "ensure-mariadb: installing mariadb-server"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends mariadb-server mariadb-client >/dev/null
fi
if [ -x /etc/init.d/mariadb ]; then /etc/init.d/mariadb start >/dev/null 2>&1 || true; fi
for _ in $(seq 1 30); do
  probe && break
  sleep 1
done
# The tests connect as root over TCP with no password, as on the CI machine.
if ! probe; then
  mysql -uroot -e "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY '';
    GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;" 2>/dev/null || true
fi
probe && exit 0
echo "MariaDB at 127.0.0.1:3306 is not reachable; the upstream migration tests cannot run." >&2
exit 1
