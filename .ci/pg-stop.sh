#!/usr/bin/env bash
# Stop the throwaway PostgreSQL started by pg-start.sh and remove its directory.
set -uo pipefail
PG_ROOT="${PG_ROOT:?set PG_ROOT to the directory pg-start.sh used}"
PGBIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
if [ "$(id -u)" = 0 ]; then AS=(runuser -u postgres --); else AS=(); fi
if [ -n "$PGBIN" ] && [ -f "$PG_ROOT/data/postmaster.pid" ]; then
  "${AS[@]}" "$PGBIN/pg_ctl" -D "$PG_ROOT/data" -m fast -w stop >/dev/null 2>&1
fi
rm -rf "$PG_ROOT"
