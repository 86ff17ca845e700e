#!/usr/bin/env bash
# Stop the throwaway MariaDB started by mariadb-start.sh and remove its directory.
set -uo pipefail
MY_ROOT="${MY_ROOT:?set MY_ROOT to the directory mariadb-start.sh used}"
if [ -S "$MY_ROOT/mysqld.sock" ]; then
  mariadb-admin --no-defaults --socket="$MY_ROOT/mysqld.sock" -uroot shutdown >/dev/null 2>&1
fi
if [ -f "$MY_ROOT/mysqld.pid" ]; then
  pid="$(cat "$MY_ROOT/mysqld.pid")"
  for _ in $(seq 1 80); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
fi
rm -rf "$MY_ROOT"
