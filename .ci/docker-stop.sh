#!/usr/bin/env bash
# Stop the dockerd that `.ci/docker-start.sh DIR` started, by the pid it recorded; never another.
set -uo pipefail
dir=${1:?usage: docker-stop.sh DIR}
pid=$(cat "$dir/dockerd.started-pid" 2>/dev/null) || exit 0
# Only while that pid is still our dockerd (its command line names DIR): a pid is reused.
if ! tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "--data-root $dir/data"; then
  pid=""
fi
# Containers first (each run removes its own, this catches an interrupted one).
[ -n "$pid" ] && DOCKER_HOST="unix://$dir/docker.sock" /usr/bin/docker ps -q 2>/dev/null \
  | xargs -r env DOCKER_HOST="unix://$dir/docker.sock" /usr/bin/docker rm -f >/dev/null 2>&1
if [ -n "$pid" ]; then
  kill "$pid" 2>/dev/null
  for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null
fi
# Mounts the engine left under DIR (its default network namespace, overlay layers): only ours.
awk -v d="$dir/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r | xargs -r -n1 umount -l
exit 0
