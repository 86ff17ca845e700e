#!/usr/bin/env bash
# Start a throwaway MariaDB on loopback (no system service) and print its SQLAlchemy URL.
# Env: MY_PORT (default: a free loopback port), MY_ROOT (default: a new temporary directory; an
# existing non-empty one is refused, so a server another run started is never touched).
set -euo pipefail
MY_PORT="${MY_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
MY_ROOT="${MY_ROOT:-$(mktemp -d -t rivet-ci-mariadb.XXXXXX)}"
here="$(cd "$(dirname "$0")" && pwd)"
if [ ! -x /usr/sbin/mariadbd ]; then
  [ "$(id -u)" = 0 ] || { echo "MariaDB is not installed; run: sudo apt-get install -y mariadb-server" >&2; exit 3; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q mariadb-server >/dev/null
fi
# Never reuse or stop a server this run did not start: an existing, non-empty directory is refused.
if [ -d "$MY_ROOT" ] && [ -n "$(ls -A "$MY_ROOT")" ]; then
  echo "$MY_ROOT=$MY_ROOT exists and is not empty; choose a fresh directory" >&2; exit 3
fi
mkdir -p "$MY_ROOT"; chmod 755 "$MY_ROOT"   # the server user must traverse it
if [ "$(id -u)" = 0 ]; then
  id mysql >/dev/null 2>&1 || useradd --system --home-dir "$MY_ROOT" mysql
  chown mysql: "$MY_ROOT"; RUNAS=mysql
else RUNAS="$(id -un)"; fi
mariadb-install-db --no-defaults --user="$RUNAS" --datadir="$MY_ROOT/data" \
  --auth-root-authentication-method=normal --skip-test-db >"$MY_ROOT/install-db.log" 2>&1
/usr/sbin/mariadbd --no-defaults --user="$RUNAS" --datadir="$MY_ROOT/data" \
  --socket="$MY_ROOT/mysqld.sock" --pid-file="$MY_ROOT/mysqld.pid" \
  --port="$MY_PORT" --bind-address=127.0.0.1 --skip-name-resolve --log-error="$MY_ROOT/error.log" \
  --innodb-buffer-pool-size=128M --innodb-flush-log-at-trx-commit=2 --performance-schema=OFF \
  </dev/null >/dev/null 2>&1 &
for _ in $(seq 1 120); do
  mariadb-admin --no-defaults --socket="$MY_ROOT/mysqld.sock" -uroot ping >/dev/null 2>&1 && break; sleep 0.25
done
mariadb-admin --no-defaults --socket="$MY_ROOT/mysqld.sock" -uroot ping >/dev/null
mariadb --no-defaults --socket="$MY_ROOT/mysqld.sock" -uroot <<SQL
CREATE DATABASE IF NOT EXISTS rivet_ci_test;
CREATE USER IF NOT EXISTS 'test'@'127.0.0.1' IDENTIFIED BY 'test';
GRANT ALL PRIVILEGES ON *.* TO 'test'@'127.0.0.1';
SQL
echo "mysql+pymysql://test:test@127.0.0.1:$MY_PORT/rivet_ci_test"
