# The rivet-ci GitHub Action image (action.yml: `runs: using: docker, image: Dockerfile`; the
# release workflow publishes the same image to ghcr.io, see docs/action.md).
#
# Two stages: the builder installs the pinned, hash-checked dependencies and rivet-ci's own wheel
# into a virtual environment; the final image copies that environment and adds git. No compiler,
# build backend or pip cache reaches the final image.

# ---------------------------------------------------------------------------------------------
FROM python:3.12-slim AS builder

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /src
# Dependencies first (their layer is cached until a lock file changes). Every one is pinned
# with its hashes (requirements/README.md): pip refuses anything else.
COPY requirements/image.lock requirements/build.lock ./requirements/
RUN python -m venv /opt/rivet-ci \
 && /opt/rivet-ci/bin/pip install --require-hashes --no-deps -r requirements/image.lock \
 && python -m venv /opt/build \
 && /opt/build/bin/pip install --require-hashes --no-deps -r requirements/build.lock

# Only what the wheel is built from (.dockerignore keeps the rest of the context out):
# pyproject.toml names README.md as the readme, and `templates/` and `schemas/` are
# force-included as package data.
COPY pyproject.toml README.md ./
COPY rivet_ci ./rivet_ci
COPY templates ./templates
COPY schemas ./schemas

# The wheel is built with the pinned backend (no build isolation: nothing unpinned is fetched)
# and installed without dependencies; `pip check` proves the lock satisfies them all.
RUN /opt/build/bin/pip wheel --no-build-isolation --no-deps --wheel-dir /wheels . \
 && /opt/rivet-ci/bin/pip install --no-index --no-deps /wheels/rivet_ci-*.whl \
 && /opt/rivet-ci/bin/pip check

# ---------------------------------------------------------------------------------------------
FROM python:3.12-slim

# git: rivet-ci runs it as a subprocess to find the changed configs and read base versions.
# ca-certificates: for fetching the base commit over HTTPS in a shallow clone.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/*

# Same base image and path as the builder, so the venv's interpreter symlink stays valid.
COPY --from=builder /opt/rivet-ci /opt/rivet-ci

ENV PATH=/opt/rivet-ci/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1

# No USER: GitHub runs a Docker action as the image's default user and documents that it must
# be root (a workflow cannot pass --user, and the workspace belongs to the runner's uid: 1001 on
# GitHub-hosted runners, anything on a self-hosted one). rivet-ci, running as root, hands every
# file it creates or changes in the workspace to the workspace's owner and runs git as that
# owner, so nothing root-owned is left behind for the next checkout (rivet_ci/output/ownership.py);
# git also gets `-c safe.directory=<workspace>` on every call.
ENTRYPOINT ["rivet-ci", "action"]
