#!/usr/bin/env bash
# docker-standin-base.sh — build a local stand-in for `python:3.12-slim` in a running Docker engine.
#
# ORIGIN: copied from the shared tool `shared/tools/docker-standin-base.sh` (see
# docs/development.md) so that CI does not depend on paths outside the repository. Changes from
# the original: it never starts a dockerd itself (`.ci/docker-start.sh` starts this run's own
# and exports DOCKER_HOST, which every docker call here honours), and it keeps the built image as
# a `docker save` archive in a cache directory, so a new engine loads it in seconds instead of
# running debootstrap again.
#
# Container registries are unreachable from these machines, so `FROM python:3.12-slim` cannot be
# pulled. This script builds an equivalent base image from Debian packages (debootstrap bookworm
# minbase) plus a CPython 3.12 copied from pyenv to /usr/local, with pip, and imports it under the
# exact name `python:3.12-slim`, so the project's Dockerfile builds unchanged with
#   docker build --network host -t rivet-ci-action:dev .
# (`--network host`: this VM has no bridge network; apt and pip in the build then reach the
# registries the way the host does.)
#
# Usage: DOCKER_HOST=unix://... bash .ci/docker-standin-base.sh   (idempotent; REBUILD_BASE=1)
# State and the cached archive live in $STANDIN_DIR (default /var/tmp/rivet-ci-standin).
set -uo pipefail
T=${STANDIN_DIR:-/var/tmp/rivet-ci-standin}
DOCKER=/usr/bin/docker
BASE_IMAGE=python:3.12-slim
PYENV_PY=${PYENV_PY:-$(ls -d "$(pyenv root 2>/dev/null || echo /root/.pyenv)"/versions/3.12.* 2>/dev/null | sort -V | tail -1)}
mkdir -p "$T"
if ! command -v debootstrap >/dev/null; then
  apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >/dev/null
fi
$DOCKER info >/dev/null 2>&1 || { echo "no Docker engine answers at ${DOCKER_HOST:-the default socket}; start one with .ci/docker-start.sh" >&2; exit 1; }
# The archive is valid for this script and this interpreter only.
key=$(cat "$0" <(echo "$PYENV_PY") | sha256sum | cut -c1-16)
ARCHIVE="$T/python-3.12-slim-standin-$key.tar"

build_standin() {
  local R=$T/rootfs mirror
  mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
  [ -n "$mirror" ] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list)
  rm -rf "$R"
  debootstrap --variant=minbase \
    --include=ca-certificates,netbase,tzdata,libssl3,libffi8,zlib1g,libbz2-1.0,liblzma5,libsqlite3-0,libreadline8,libncursesw6,libuuid1,libgdbm6,libexpat1 \
    bookworm "$R" "$mirror" >"$T/debootstrap.log" 2>&1 || { echo "debootstrap failed: $T/debootstrap.log"; return 1; }
  # The official Debian images' apt/dpkg tweaks (clean caches after every install; slim: no docs).
  cat >"$R/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
  echo 'Acquire::GzipIndexes "true";' >"$R/etc/apt/apt.conf.d/docker-gzip-indexes"
  echo 'Acquire::Languages "none";' >"$R/etc/apt/apt.conf.d/docker-no-languages"
  echo 'Apt::AutoRemove::SuggestsImportant "false";' >"$R/etc/apt/apt.conf.d/docker-autoremove-suggests"
  printf '%s\n' 'path-exclude /usr/share/doc/*' 'path-include /usr/share/doc/*/copyright' \
    'path-exclude /usr/share/info/*' 'path-exclude /usr/share/linda/*' \
    'path-exclude /usr/share/lintian/overrides/*' 'path-exclude /usr/share/locale/*' \
    'path-exclude /usr/share/man/*' >"$R/etc/dpkg/dpkg.cfg.d/docker"
  # STAND-IN ONLY: this host's apt sources + its apt.conf (snapshot mirror: no Valid-Until check),
  # and the host's extra CA certificates (the egress proxy re-signs TLS). The official image has
  # neither; without them apt/pip in the build could not reach the registries from here.
  rm -f "$R/etc/apt/sources.list"
  cp /etc/apt/sources.list.d/debian.sources "$R/etc/apt/sources.list.d/"
  cp /etc/apt/apt.conf.d/99artifact-registry "$R/etc/apt/apt.conf.d/" 2>/dev/null || true
  cp /usr/local/share/ca-certificates/*.crt "$R/usr/local/share/ca-certificates/" 2>/dev/null || true
  chroot "$R" update-ca-certificates >/dev/null 2>&1
  # CPython 3.12 at /usr/local as in the official image (Debian bookworm only has 3.11).
  tar -C "$PYENV_PY" --exclude=__pycache__ --exclude='lib/python3.12/site-packages/*' \
      --exclude='lib/python3.12/test' --exclude='lib/python3.12/idlelib/idle_test' \
      --exclude='*.a' -cf - bin include lib share | tar -C "$R/usr/local" -xf -
  rm -f "$R"/usr/local/bin/pip*
  grep -l "^#!$PYENV_PY/bin/python" "$R"/usr/local/bin/* 2>/dev/null \
    | xargs -r sed -i "1s|^#!$PYENV_PY/bin/python3.12|#!/usr/local/bin/python3.12|"
  strip --strip-unneeded "$R/usr/local/lib/libpython3.12.so.1.0" "$R"/usr/local/lib/python3.12/lib-dynload/*.so "$R/usr/local/bin/python3.12" 2>/dev/null
  chroot "$R" ldconfig
  # The host's pip configuration, as far as it applies inside a container: its CA setting. (Its
  # find-links / extra file:// indexes are local directories of this host, absent in a build.)
  cert=$(pip config get global.cert 2>/dev/null || echo /etc/ssl/certs/ca-certificates.crt)
  printf '[global]\ncert = %s\n' "$cert" >"$R/etc/pip.conf"
  cp /etc/resolv.conf "$R/etc/resolv.conf"
  chroot "$R" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 HOME=/root \
    /usr/local/bin/python3.12 -m ensurepip --default-pip >/dev/null 2>&1
  chroot "$R" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 HOME=/root \
    PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1 \
    /usr/local/bin/python3.12 -m pip install -q --upgrade pip || { echo "pip upgrade in the stand-in failed"; return 1; }
  rm -rf "$R"/var/lib/apt/lists/* "$R"/var/cache/apt/*.bin "$R"/var/cache/apt/archives/*.deb \
         "$R"/root/.cache "$R"/usr/share/doc/* "$R"/usr/share/man/*
  : >"$R/etc/resolv.conf"
  tar --numeric-owner -C "$R" -c . | $DOCKER import \
    --change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' --change 'ENV PYTHON_VERSION=3.12.1' --change 'CMD ["python3"]' \
    --message 'LOCAL STAND-IN for python:3.12-slim (debootstrap bookworm + pyenv CPython 3.12.1)' \
    - "$BASE_IMAGE" >/dev/null
}


if [ -z "${REBUILD_BASE:-}" ] && ! $DOCKER image inspect "$BASE_IMAGE" >/dev/null 2>&1 && [ -s "$ARCHIVE" ]; then
  $DOCKER load -i "$ARCHIVE" >/dev/null || rm -f "$ARCHIVE"
fi
if [ -n "${REBUILD_BASE:-}" ] || ! $DOCKER image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
  [ -n "$PYENV_PY" ] || { echo "no CPython 3.12 found under pyenv; set PYENV_PY" >&2; exit 1; }
  s=$(date +%s); build_standin || exit 1; echo "stand-in $BASE_IMAGE built in $(( $(date +%s) - s )) s"
  rm -f "$T"/python-3.12-slim-standin-*.tar
  $DOCKER save -o "$ARCHIVE.partial" "$BASE_IMAGE" && mv "$ARCHIVE.partial" "$ARCHIVE"
  rm -rf "$T/rootfs"
fi
$DOCKER run --rm --network host "$BASE_IMAGE" sh -c 'python --version; pip --version | cut -d" " -f1-2'
