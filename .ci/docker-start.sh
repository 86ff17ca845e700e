#!/usr/bin/env bash
# Start a Docker engine of this run's own: `bash .ci/docker-start.sh DIR` prints its DOCKER_HOST.
#
# Its socket, data-root, exec-root (and so its containerd) and pid file all live in DIR, so it
# never shares state with, answers for, or is confused with a dockerd someone else started; stop
# it with `.ci/docker-stop.sh DIR`, which kills only the pid recorded here.
# `--iptables=false --bridge=none`: this VM has no bridge networking; containers use
# `--network host` (see docs/development.md).
set -euo pipefail
dir=${1:?usage: docker-start.sh DIR}
mkdir -p "$dir"
sock="$dir/docker.sock"
dockerd --host "unix://$sock" --data-root "$dir/data" --exec-root "$dir/exec" \
  --pidfile "$dir/dockerd.pid" --iptables=false --ip-masq=false --bridge=none \
  >"$dir/dockerd.log" 2>&1 &
echo $! >"$dir/dockerd.started-pid"
for _ in $(seq 1 120); do
  DOCKER_HOST="unix://$sock" /usr/bin/docker info >/dev/null 2>&1 && break
  kill -0 "$(cat "$dir/dockerd.started-pid")" 2>/dev/null || break
  sleep 0.5
done
if ! DOCKER_HOST="unix://$sock" /usr/bin/docker info >/dev/null 2>&1; then
  echo "dockerd did not start; its log:" >&2
  tail -20 "$dir/dockerd.log" >&2
  exit 1
fi
echo "unix://$sock"
