#!/usr/bin/env bash
# Stop the dockerd that `.ci/docker-start.sh DIR` started, by the pid it recorded; never another.
set -uo pipefail
dir=${1:?usage: docker-stop.sh DIR}
pid=$(cat "$dir/dockerd.started-pid" 2>/dev/null) || exit 0
kill -0 "$pid" 2>/dev/null || exit 0
# Containers first (each run removes its own, this catches an interrupted one).
DOCKER_HOST="unix://$dir/docker.sock" /usr/bin/docker ps -q 2>/dev/null \
  | xargs -r env DOCKER_HOST="unix://$dir/docker.sock" /usr/bin/docker rm -f >/dev/null 2>&1
kill "$pid"
for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || exit 0; sleep 0.5; done
kill -9 "$pid" 2>/dev/null || true
