"""The real rivet binary (rivet-cli 0.32.2, a test dependency) as the suite's oracle (no tests).

Every run is sandboxed: a cleared environment (only `PATH`, `HOME` and the variables a caller
names), its own temporary directory as working directory and `HOME`, and — unless a caller needs
a database on loopback — no network at all (`unshare -n`: a fresh network namespace whose only
interface is a down `lo`), so a config can never make rivet reach a host it names.

rivet's verdict on a config is classified by its stable error code, never by its exit status
(`../shared/notes/real-rivet.md`): loading and validation come before the source is needed, so a
config rivet accepts fails later with `RIVET_PLAN_SOURCE_UNREADABLE` in the sandbox.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest
import rivet_cli

RIVET_VERSION = "0.32.2"
# Codes that mean "the config loaded; what failed came after it".
ACCEPTED_CODES = frozenset({"RIVET_PLAN_SOURCE_UNREADABLE", "RIVET_PLAN_NOTHING_TO_PLAN"})
# Codes that mean "the config is fine, the environment lacks something" (an unset `${VAR}`, a
# missing credentials file).
ENVIRONMENT_CODES = frozenset({"RIVET_CONFIG_SECRET_UNSET"})
RUN_TIMEOUT_S = 60.0

Verdict = Literal["accept", "refuse", "environment"]


@functools.cache
def rivet_binary() -> str:
    """The `rivet` binary of this environment; fails (not skips) when it is missing."""
    path: str = rivet_cli.path()
    version = subprocess.run([path, "--version"], capture_output=True, text=True, check=True,
                             timeout=RUN_TIMEOUT_S).stdout
    assert version.split()[:2] == ["rivet", RIVET_VERSION], version
    return path


@functools.cache
def network_sandbox() -> tuple[str, ...]:
    """The command prefix that runs a process with no network, checked before it is trusted.

    Under CI the sandbox must work (the suite fails loudly otherwise); elsewhere a machine that
    cannot make a network namespace skips the tests that need one, with the reason."""
    unshare = shutil.which("unshare")
    reason = ""
    if unshare is None:
        reason = "unshare (util-linux) is not installed"
    else:
        probe = subprocess.run(
            [unshare, "-n", "sh", "-c", "cat /proc/net/dev"], capture_output=True, text=True,
            timeout=RUN_TIMEOUT_S, check=False)
        interfaces = [line.split(":")[0].strip() for line in probe.stdout.splitlines()[2:]]
        if probe.returncode != 0:
            reason = f"unshare -n failed: {probe.stderr.strip()}"
        elif interfaces != ["lo"]:
            reason = f"unshare -n left interfaces {interfaces}"
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the rivet sandbox is unavailable under CI: {reason}")
        pytest.skip(f"the rivet sandbox is unavailable: {reason}")
    assert unshare is not None
    return (unshare, "-n")


@dataclass(frozen=True)
class RivetRun:
    returncode: int
    stdout: str
    stderr: str
    workdir: Path

    @property
    def error(self) -> dict[str, object] | None:
        """The `--json-errors` object on stderr, or None when rivet printed none."""
        for raw in reversed(self.stderr.splitlines()):
            line = raw.strip()
            if line.startswith("{") and '"exit_class"' in line:
                value = json.loads(line)
                assert isinstance(value, dict)
                return value
        return None

    @property
    def code(self) -> str | None:
        error = self.error
        code = None if error is None else error.get("code")
        return code if isinstance(code, str) else None


def run_rivet(args: Sequence[str], *, workdir: Path | None = None,
              env: Mapping[str, str] | None = None, network: bool = False,
              timeout: float = RUN_TIMEOUT_S) -> RivetRun:
    """Run `rivet ARGS` sandboxed. `network=True` keeps the machine's network (for a database on
    loopback that the caller started); the environment is cleared either way."""
    binary = rivet_binary()
    prefix: tuple[str, ...] = () if network else network_sandbox()
    owned = workdir is None
    cwd = Path(tempfile.mkdtemp(prefix="rivet-oracle-")) if workdir is None else workdir
    try:
        clean = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), **(env or {})}
        done = subprocess.run([*prefix, binary, *args], cwd=cwd, env=clean,
                              capture_output=True, text=True, timeout=timeout, check=False)
        return RivetRun(done.returncode, done.stdout, done.stderr, cwd)
    finally:
        if owned:
            shutil.rmtree(cwd, ignore_errors=True)


@dataclass(frozen=True)
class ConfigVerdict:
    verdict: Verdict
    code: str | None
    message: str


def config_verdict(config: Path, *, env: Mapping[str, str] | None = None) -> ConfigVerdict:
    """rivet's verdict on one config file, offline: accepted, refused (with its code and
    message), or refused for the environment (an unset variable, a missing credentials file)."""
    run = run_rivet(["--json-errors", "--no-notify", "plan", "-c", str(config.resolve())],
                    env=env)
    error = run.error
    if error is None:
        if run.returncode == 0:
            return ConfigVerdict("accept", None, "")
        # An error with no code (a missing `query_file` prints only the OS error): a refusal.
        return ConfigVerdict("refuse", None, run.stderr.strip())
    message = str(error.get("error", ""))
    code = run.code
    if code in ACCEPTED_CODES:
        return ConfigVerdict("accept", code, message)
    if code in ENVIRONMENT_CODES:
        return ConfigVerdict("environment", code, message)
    return ConfigVerdict("refuse", code, message)


@functools.cache
def config_schema() -> dict[str, object]:
    """`rivet schema config`: the JSON Schema of rivet's config."""
    run = run_rivet(["schema", "config"])
    assert run.returncode == 0, run.stderr
    value = json.loads(run.stdout)
    assert isinstance(value, dict)
    return value


@functools.cache
def error_codes() -> str:
    """`rivet schema errors`: the Markdown table of every stable `RIVET_*` code."""
    run = run_rivet(["schema", "errors"])
    assert run.returncode == 0, run.stderr
    return run.stdout
