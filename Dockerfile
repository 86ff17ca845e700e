# The rivet-ci GitHub Action image (action.yml: `runs: using: docker, image: Dockerfile`).
#
# Two stages: the builder turns the project into a wheel and installs it, with its runtime
# dependencies only, into a virtual environment; the final image copies that environment and adds
# git. No compiler, build backend or pip cache reaches the final image.

# ---------------------------------------------------------------------------------------------
FROM python:3.12-slim AS builder

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /src
# Only what the wheel is built from (.dockerignore keeps the rest of the context out):
# pyproject.toml names README.md as the readme, and `templates/` is force-included as
# package data.
COPY pyproject.toml README.md ./
COPY rivet_ci ./rivet_ci
COPY templates ./templates

# `pip wheel .` builds rivet-ci's wheel and collects a wheel for every runtime dependency;
# the install below then uses nothing but those files (--no-index), so the image contains
# exactly the wheel and its runtime dependencies, never the test extras.
RUN pip wheel --wheel-dir /wheels . \
 && python -m venv /opt/rivet-ci \
 && /opt/rivet-ci/bin/pip install --no-index --find-links /wheels rivet-ci

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

# A non-root user. uid 1001 is deliberate: it is the uid of the `runner` user on GitHub-hosted
# runners, which owns the workspace GitHub mounts at /github/workspace (and the GITHUB_OUTPUT /
# step-summary files under /github/file_commands), so the action can write the plan and its
# outputs there without running as root.
#
# GitHub's documentation recommends that Docker actions run as root because a self-hosted
# runner's workspace may belong to another uid; run the container as root there (the image
# works as root too). Either way git sees a workspace owned by a different user, and modern git
# refuses such a repository ("detected dubious ownership"); rivet-ci passes
# `-c safe.directory=<workspace>` on every git call, so neither uid needs a global git config.
RUN useradd --uid 1001 --user-group --create-home --shell /usr/sbin/nologin rivet
USER 1001
WORKDIR /home/rivet

ENTRYPOINT ["rivet-ci", "action"]
