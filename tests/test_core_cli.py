"""`rivet-ci plan` through `rivet_ci.cli.run`: in-memory streams, real files, a fixed clock."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path
from typing import Any

import pytest

from rivet_ci.cli import run
from rivet_ci.commands.context import Context
from rivet_ci.exit_codes import OK, USAGE_ERROR

REPO = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)

GOOD = """\
source: {type: postgres, url_env: SHOP_URL}
exports:
  - name: orders
    table: public.orders
    mode: incremental
    cursor_column: updated_at
    source_group: shop
    format: parquet
    destination: {type: local}
  - name: customers
    table: public.customers
    source_group: shop
    format: parquet
    destination: {type: local}
"""
# exports[1] has an unknown mode; exports[0] and exports[2] are fine.
BAD = """\
source: {type: postgres, url_env: SHOP_URL}
exports:
  - name: refunds
    table: billing.refunds
    format: parquet
    destination: {type: local}
  - name: broken
    table: public.broken
    mode: streaming
    format: parquet
    destination: {type: local}
  - name: invoices
    table: billing.invoices
    format: parquet
    destination: {type: local}
"""
FACTS = """\
format: rivet-ci-facts/1
exports:
  orders:
    row_estimate: 2000000
    columns: {updated_at: {indexed: true, min: "2020-01-01", max: "2026-11-29"}}
  customers: {row_estimate: 40000, verdict: EFFICIENT}
  refunds: {row_estimate: 1130, verdict: DEGRADED}
"""


class Result:
    def __init__(self, code: int, stdout: str, stderr: str) -> None:
        self.code, self.stdout, self.stderr = code, stdout, stderr

    def json(self) -> Any:
        return json.loads(self.stdout)


def plan(cwd: Path, *args: str, environ: dict[str, str] | None = None) -> Result:
    out, err = StringIO(), StringIO()
    ctx = Context(stdout=out, stderr=err, environ=environ or {}, cwd=cwd, now=lambda: NOW)
    code = run(["plan", *args], ctx)
    return Result(code, out.getvalue(), err.getvalue())


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "good.yaml").write_text(GOOD)
    (tmp_path / "facts.yaml").write_text(FACTS)
    return tmp_path


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("rivet-ci: error: ")]


def test_example_plans_cleanly() -> None:
    result = plan(REPO, "examples/pipelines", "--facts", "examples/facts.yaml")
    assert result.code == OK
    assert error_lines(result.stderr) == []
    assert result.stdout.endswith("Planned 8 exports in 2 config files; no errors.\n")
    assert "Export     : orders  (examples/pipelines/replica_a.yaml:8)" in result.stdout
    assert "Campaign   : examples/pipelines/replica_b.yaml" in result.stdout


def test_bad_config_exits_2_but_still_prints_and_writes_the_plan(repo: Path) -> None:
    (repo / "pipelines" / "bad.yaml").write_text(BAD)
    result = plan(repo, "pipelines", "--facts", "facts.yaml", "--output", "out/plan.json")
    assert result.code == USAGE_ERROR
    assert error_lines(result.stderr) == [
        "rivet-ci: error: pipelines/bad.yaml:9: exports[1].mode: unknown value `streaming`, "
        "expected one of `full`, `incremental`, `chunked`, `time_window`, `cdc`"]
    # Pretty output: the valid exports of both files, then the problem.
    for name in ("refunds", "invoices", "orders", "customers"):
        assert f"Export     : {name}  " in result.stdout
    assert "broken" not in result.stdout
    # Each error once: on stderr (above), counted on stdout.
    assert "exports[1].mode" not in result.stdout
    assert result.stdout.endswith("Planned 4 exports in 2 config files; 1 error (on stderr).\n")
    # The document is written all the same.
    document = json.loads((repo / "out" / "plan.json").read_text())
    bad_config = next(c for c in document["configs"] if c["path"] == "pipelines/bad.yaml")
    assert [e["export_name"] for e in bad_config["exports"]] == ["refunds", "invoices"]
    # invoices (no facts) scores 52, refunds (1,130 rows, DEGRADED) 51.
    assert bad_config["campaign"]["ordered_exports"] == ["invoices", "refunds"]
    assert [(p["file"], p["line"], p["field"]) for p in document["problems"]] == [
        ("pipelines/bad.yaml", 9, "exports[1].mode")]
    assert document["summary"] == {"configs": 2, "exports": 4, "errors": 1,
                                   "low_confidence": 1, "isolate_on_source": 0}


def test_format_json_prints_the_document(repo: Path) -> None:
    result = plan(repo, "pipelines/good.yaml", "--facts", "facts.yaml", "--format", "json")
    assert result.code == OK
    document = result.json()
    assert document["format"] == "rivet-ci-plan/1"
    assert document["generated_at"] == "2026-11-29T12:00:00Z"
    assert document["facts"] == {"origin": "file", "path": "facts.yaml", "captured_at": None}
    (config,) = document["configs"]
    orders, customers = config["exports"]
    assert orders["prioritization"]["export_recommendation"]["priority_score"] == 76
    assert customers["prioritization"]["export_recommendation"]["priority_score"] == 75
    # rivet's readers look for the campaign inside the first export.
    assert orders["prioritization"]["campaign"] == config["campaign"]
    assert "campaign" not in customers["prioritization"]
    assert config["campaign"]["waves"] == [{"wave": 1, "exports": ["orders", "customers"]}]


def test_output_file_holds_the_same_document_as_stdout(repo: Path) -> None:
    result = plan(repo, "pipelines", "--facts", "facts.yaml", "--format", "json",
                  "--output", "plan.json")
    assert result.code == OK
    assert (repo / "plan.json").read_text(encoding="utf-8") == result.stdout
    pretty = plan(repo, "pipelines", "--facts", "facts.yaml", "--output", "plan2.json")
    assert (repo / "plan2.json").read_text(encoding="utf-8") == result.stdout
    assert pretty.stdout.startswith("Export     : orders")


def test_export_option_prints_only_the_named_exports(repo: Path) -> None:
    result = plan(repo, "pipelines", "--facts", "facts.yaml", "--export", "customers",
                  "--format", "json")
    assert result.code == OK
    (config,) = result.json()["configs"]
    assert [e["export_name"] for e in config["exports"]] == ["customers"]
    # ...planned with its whole campaign, which the document keeps as context.
    assert config["campaign"]["ordered_exports"] == ["orders", "customers"]


def test_export_option_repeats_and_reports_unknown_names(repo: Path) -> None:
    result = plan(repo, "pipelines", "--facts", "facts.yaml", "--export", "orders",
                  "--export", "customers", "--export", "nope")
    assert result.code == USAGE_ERROR
    assert error_lines(result.stderr) == [
        "rivet-ci: error: <command line>: --export: no valid export named 'nope' in the given "
        "configs"]
    assert "Export     : orders" in result.stdout and "Export     : customers" in result.stdout


def test_unreadable_and_missing_config_files(repo: Path) -> None:
    (repo / "pipelines" / "latin1.yaml").write_bytes(b"source: {type: postgres}\n# caf\xe9\n")
    result = plan(repo, "pipelines", "missing.yaml", "--facts", "facts.yaml")
    assert result.code == USAGE_ERROR
    errors = error_lines(result.stderr)
    assert errors[0].startswith("rivet-ci: error: pipelines/latin1.yaml: cannot read: ")
    assert errors[1] == "rivet-ci: error: missing.yaml: cannot read: No such file or directory"
    assert "Export     : orders" in result.stdout  # the readable file is still planned


def test_missing_facts_file_plans_everything_with_low_confidence(repo: Path) -> None:
    result = plan(repo, "pipelines", "--facts", "nowhere.yaml", "--format", "json")
    assert result.code == USAGE_ERROR
    assert error_lines(result.stderr) == [
        "rivet-ci: error: nowhere.yaml: cannot read facts file: No such file or directory"]
    document = result.json()
    assert document["summary"]["exports"] == 2
    assert document["summary"]["low_confidence"] == 2


def test_bad_facts_file_is_reported_with_its_line(repo: Path) -> None:
    (repo / "facts.yaml").write_text(FACTS.replace("row_estimate: 40000", "row_estimate: many"))
    result = plan(repo, "pipelines", "--facts", "facts.yaml", "--format", "json")
    assert result.code == USAGE_ERROR
    (line,) = error_lines(result.stderr)
    assert line.startswith("rivet-ci: error: facts.yaml:6: exports.customers.row_estimate: ")
    exports = result.json()["configs"][0]["exports"]
    assert [e["diagnostics"]["verdict"] for e in exports] == [
        "EFFICIENT", "unknown (preflight failed)"]


def test_no_config_found_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = plan(tmp_path, "empty")
    assert result.code == USAGE_ERROR
    assert result.stdout == ""
    assert "no config files found" in result.stderr


def test_unknown_option_is_a_usage_error(repo: Path) -> None:
    result = plan(repo, "pipelines", "--colour")
    assert result.code == USAGE_ERROR


def test_without_facts_every_export_is_low_confidence(repo: Path) -> None:
    result = plan(repo, "pipelines", "--format", "json")
    assert result.code == OK
    document = result.json()
    assert document["facts"]["origin"] == "none"
    exports = document["configs"][0]["exports"]
    assert all(e["diagnostics"]["verdict"] == "unknown (preflight failed)" for e in exports)
    assert all("preflight_error" not in e["diagnostics"] for e in exports)


class _Terminal(StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("fmt", ["json", "pretty"])
def test_the_timing_note_counts_the_config_files_planned(repo: Path, fmt: str) -> None:
    (repo / "pipelines" / "bad.yaml").write_text(BAD)
    out, err = StringIO(), _Terminal()
    ctx = Context(stdout=out, stderr=err, environ={}, cwd=repo, now=lambda: NOW)
    run(["plan", "pipelines", "--facts", "facts.yaml", "--format", fmt], ctx)
    assert "rivet-ci: planned 4 exports from 2 files in " in err.getvalue()
