"""A command imports only what it uses: start-up is paid on every CI job.

Each case runs the real CLI in a fresh interpreter and lists the heavy packages it loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
HEAVY = ("sqlalchemy", "psycopg", "pymysql", "jinja2", "pydantic")
# Modules a plan needs none of: pull-request reviews (the diff, waivers, the gate) and the reader
# of plan documents (`plan_format`: the format's 45 TypedDicts, ~10 ms to create, and the 9 of
# rivet's resolved strategy and tuning it takes from `strategy_json`).
NOT_FOR_PLAN = ("rivet_ci.core.gate.diff", "rivet_ci.core.gate.waivers",
                "rivet_ci.core.gate.policy", "rivet_ci.core.formats.plan_format",
                "rivet_ci.core.plan.strategy_json")

PROBE = """
import contextlib, io, json, sys
from rivet_ci.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(%r))
unneeded = sorted(set(sys.modules) & set(%r))
print(json.dumps({"code": code, "heavy": heavy, "unneeded": unneeded}))
""" % (HEAVY, NOT_FOR_PLAN)  # noqa: UP031 - the probe is a program text


def probe(*argv: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=REPO, check=True,
                          capture_output=True, text=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def loaded(*argv: str) -> tuple[int, list[str]]:
    result = probe(*argv)
    return int(result["code"] or 0), list(result["heavy"])


def test_version_imports_no_command() -> None:
    assert loaded("--version") == (0, [])


@pytest.mark.parametrize("fmt", ["pretty", "json"])
def test_plan_from_a_facts_file_loads_no_database_or_template_library(
        tmp_path: Path, fmt: str) -> None:
    result = probe("plan", "examples/pipelines", "--facts", "examples/facts.yaml",
                   "--format", fmt, "--output", str(tmp_path / "plan.json"))
    assert (result["code"], result["heavy"]) == (0, ["pydantic"])  # the config models only
    assert result["unneeded"] == []  # nor the diff, waiver or gate models, nor the reader
    assert (tmp_path / "plan.json").is_file()


def test_help_still_lists_every_command() -> None:
    done = subprocess.run([sys.executable, "-m", "rivet_ci", "--help"], cwd=REPO, check=True,
                          capture_output=True, text=True)
    for command in ("plan", "facts", "diff", "show", "action", "post"):
        assert f"    {command} " in done.stdout or f"    {command}\n" in done.stdout, command


def test_a_mistyped_command_is_a_usage_error_listing_the_choices() -> None:
    done = subprocess.run([sys.executable, "-m", "rivet_ci", "plna"], cwd=REPO,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert "invalid choice: 'plna'" in done.stderr and "'plan'" in done.stderr


def test_a_run_without_secrets_does_not_load_the_html_escapes(tmp_path: Path) -> None:
    """The redactor spells each secret in every form an output may carry, HTML-escaped among
    them; with no secret to mask, `html` (its entity tables: ~8 M instructions of start-up) is
    not imported."""
    import os

    from rivet_ci.output.redaction import ADD_MASK_INPUT, is_secret_name

    env = {k: v for k, v in os.environ.items() if not is_secret_name(k) and k != ADD_MASK_INPUT}
    program = ("import contextlib, io, sys\nfrom rivet_ci.cli import main\n"
               "with contextlib.redirect_stdout(io.StringIO()):\n"
               "    code = main(sys.argv[1:])\n"
               "print(code, 'html' in sys.modules)\n")
    argv = ["plan", "examples/pipelines", "--facts", "examples/facts.yaml", "--format", "json",
            "--output", str(tmp_path / "plan.json")]
    done = subprocess.run([sys.executable, "-c", program, *argv], cwd=REPO, env=env, check=True,
                          capture_output=True, text=True)
    assert done.stdout.split() == ["0", "False"]
    env["RIVET_TEST_PASSWORD"] = "a-secret-to-mask"
    done = subprocess.run([sys.executable, "-c", program, *argv], cwd=REPO, env=env, check=True,
                          capture_output=True, text=True)
    assert done.stdout.split() == ["0", "True"]
