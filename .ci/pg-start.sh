#!/usr/bin/env bash
# Start a throwaway PostgreSQL on loopback (no system service) and print its SQLAlchemy URL.
# Env: PGPORT (default: a free loopback port), PG_ROOT (default: a new temporary directory; an
# existing non-empty one is refused, so a server another run started is never touched).
set -euo pipefail
PGPORT="${PGPORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
PG_ROOT="${PG_ROOT:-$(mktemp -d -t rivet-ci-pg.XXXXXX)}"
here="$(cd "$(dirname "$0")" && pwd)"
if ! ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || { echo "PostgreSQL is not installed; run: sudo apt-get install -y postgresql" >&2; exit 3; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null
fi
PGBIN="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
# Never reuse or stop a server this run did not start: an existing, non-empty directory is refused.
if [ -d "$PG_ROOT" ] && [ -n "$(ls -A "$PG_ROOT")" ]; then
  echo "$PG_ROOT=$PG_ROOT exists and is not empty; choose a fresh directory" >&2; exit 3
fi
mkdir -p "$PG_ROOT"; chmod 755 "$PG_ROOT"   # the server user must traverse it
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --home-dir "$PG_ROOT" postgres
  chown postgres: "$PG_ROOT"; AS=(runuser -u postgres --)
else AS=(); fi
"${AS[@]}" "$PGBIN/initdb" -D "$PG_ROOT/data" -U postgres --auth=trust --encoding=UTF8 --no-locale --no-sync >"$PG_ROOT/initdb.log"
"${AS[@]}" "$PGBIN/pg_ctl" -D "$PG_ROOT/data" -l "$PG_ROOT/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -p $PGPORT -k $PG_ROOT -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all" start >/dev/null
"$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PGPORT" -t 30
echo "postgresql+psycopg://postgres@127.0.0.1:$PGPORT/postgres"
