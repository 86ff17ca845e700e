"""`rivet-ci show`: rivet's own plan JSON (and ours) through the CLI."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

from support.rivet_plans import OLD_OBJECT, RIVET_EVENTS, RIVET_OBJECT

from rivet_ci.cli import run
from rivet_ci.commands.context import Context

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def show(tmp_path: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["show", *argv], Context(stdout=out, stderr=err, environ={}, cwd=tmp_path,
                                        now=lambda: NOW))
    return code, out.getvalue(), err.getvalue()


def test_a_rivet_artifact_prints_as_priority_blocks(tmp_path: Path) -> None:
    (tmp_path / "rivet.json").write_text(json.dumps([RIVET_OBJECT, RIVET_EVENTS]))
    code, out, err = show(tmp_path, "rivet.json")
    assert code == 0, err
    assert "Export     : orders" in out
    assert "Priority   : score 58 — Medium (wave 2)" in out
    assert "  Wave 4     : events" in out


def test_an_old_rivet_artifact_converts_to_our_document(tmp_path: Path) -> None:
    (tmp_path / "old.json").write_text(json.dumps(OLD_OBJECT))
    code, out, err = show(tmp_path, "old.json", "--format", "json")
    assert code == 0, err
    document = json.loads(out)
    assert document["format"] == "rivet-ci-plan/1"
    (export,) = document["configs"][0]["exports"]
    rec = export["prioritization"]["export_recommendation"]
    assert (rec["export_name"], rec["priority_score"], rec["isolate_on_source"]) == (
        "customers", 67, False)


def test_our_own_document_round_trips(tmp_path: Path) -> None:
    (tmp_path / "old.json").write_text(json.dumps(OLD_OBJECT))
    _, converted, _ = show(tmp_path, "old.json", "--format", "json")
    (tmp_path / "ours.json").write_text(converted)
    code, again, err = show(tmp_path, "ours.json", "--format", "json")
    assert code == 0, err
    assert json.loads(again)["configs"] == json.loads(converted)["configs"]


def test_not_a_plan_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"hello": 1}')
    (tmp_path / "bad.json").write_text("{")
    assert show(tmp_path, "x.json")[0] == 2
    code, _, err = show(tmp_path, "bad.json")
    assert code == 2 and "bad.json:1: invalid JSON" in err
    code, _, err = show(tmp_path, "missing.json")
    assert code == 2 and "cannot read missing.json" in err
