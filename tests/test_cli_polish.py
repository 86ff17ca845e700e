"""CLI rough edges (issue 12, *Why*: "CLI rough edges"): `--export` keeps the campaign context,
`show` prints what `plan` prints, each error once (stderr) with the plan on stdout, directory
walks skip hidden / virtual-env directories and non-rivet YAML (and say so), and every
subcommand's help documents each option's default and ends with two examples."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from rivet_ci.cli import COMMANDS, build_parser, run
from rivet_ci.commands.context import Context

REPO = Path(__file__).resolve().parent.parent
CLOCK = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def cli(cwd: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), Context(stdout=out, stderr=err, environ={}, cwd=cwd,
                                   now=lambda: CLOCK))
    return code, out.getvalue(), err.getvalue()


def test_export_is_planned_with_its_whole_campaign() -> None:
    code, out, _ = cli(REPO, "plan", "examples/pipelines", "--facts", "examples/facts.yaml",
                       "--export", "events")
    assert code == 0
    assert out.count("Export     :") == 1
    # events shares replica_a with order_items: isolation only the campaign can decide.
    assert "ISOLATE ON SOURCE" in out
    assert "[shared_source_heavy_conflict]" in out
    assert out.endswith("Planned 1 export in 1 config file; no errors.\n")


def test_show_prints_what_plan_prints(tmp_path: Path) -> None:
    plan_json = tmp_path / "plan.json"
    _, planned, _ = cli(REPO, "plan", "examples/pipelines", "--facts", "examples/facts.yaml",
                        "--output", str(plan_json))
    code, shown, _ = cli(REPO, "show", str(plan_json))
    assert code == 0
    assert "  Preflight  : ACCEPTABLE  · rows ~48,000,000  · chunks 48" in shown
    assert shown == planned


def test_each_error_once_on_stderr_and_the_plan_on_stdout(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(
        "source: {type: postgres, url_env: X_URL}\nexports:\n"
        "  - {name: a, table: t, mode: incremental, format: parquet, "
        "destination: {type: local}}\n", encoding="utf-8")
    code, out, err = cli(tmp_path, "plan", "bad.yaml")
    assert code == 2
    message = "incremental mode needs cursor_column"
    assert (out + err).count(message) == 1
    assert message in err
    assert "1 error (on stderr)" in out


def test_directory_walks_skip_hidden_venv_and_non_rivet_yaml(tmp_path: Path) -> None:
    shutil.copytree(REPO / "examples" / "pipelines", tmp_path / "pipelines")
    venv = tmp_path / "env-3.11" / "lib"
    venv.mkdir(parents=True)
    (tmp_path / "env-3.11" / "pyvenv.cfg").write_text("home = /usr\n", encoding="utf-8")
    shutil.copy(REPO / "examples" / "pipelines" / "replica_a.yaml", venv / "vendored.yaml")
    (tmp_path / ".github" / "workflows").mkdir(parents=True)
    (tmp_path / ".github" / "workflows" / "ci.yaml").write_text("on: push\n", encoding="utf-8")
    (tmp_path / "compose.yaml").write_text("services: {}\n", encoding="utf-8")
    code, out, err = cli(tmp_path, "plan", ".", "--facts",
                         str(REPO / "examples" / "facts.yaml"))
    assert code == 0, err
    assert "vendored" not in out and "compose" not in out
    assert out.endswith("Planned 8 exports in 2 config files; no errors.\n")
    assert ("skipped 2 hidden or virtual-env directories and 1 YAML file without a "
            "top-level `source:` or `exports:`") in err


@pytest.mark.parametrize("command", list(COMMANDS))
def test_help_documents_every_default_and_ends_with_two_examples(command: str) -> None:
    parser = build_parser([command, "--help"])
    text = io.StringIO()
    with contextlib.redirect_stdout(text), pytest.raises(SystemExit):
        parser.parse_args([command, "--help"])
    help_text = text.getvalue()
    tail = help_text.rstrip("\n").split("\n")
    assert tail[-3] == "examples:" and all(line.startswith("  ") for line in tail[-2:]), tail
    # Every option says its default (required ones and --help excepted).
    blocks = re.split(r"\n(?=  -)", help_text.split("examples:")[0])
    for block in blocks:
        name = block.strip().split()[0] if block.startswith("  -") else ""
        if not name or name in ("-h,", "--base", "--plan"):
            continue
        assert "default" in block, f"{command} {name} does not say its default:\n{block}"
