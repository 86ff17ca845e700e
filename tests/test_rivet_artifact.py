"""rivet's own plan artifact: written by `plan --format rivet-json`, read by `show`.

The reference artifact is rivet-plan.md §12's worked example (`tests/golden/rivet/
spec_worked_example.json`, two exports of one config as rivet 0.24.5 prints them).
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from rivet_ci.cli import run
from rivet_ci.commands.context import Context
from rivet_ci.core.formats.document import PlanReadError, read_plan
from rivet_ci.core.formats.rivet_artifact import integrity, plan_fingerprint
from rivet_ci.core.plan.resolve import generate_chunks
from rivet_ci.core.plan.signals import Signals
from rivet_ci.core.plan.strategy import strategy_rationale

REPO = Path(__file__).resolve().parent.parent
SPEC = Path(__file__).parent / "golden" / "rivet" / "spec_worked_example.json"
CLOCK = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def cli(cwd: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), Context(stdout=out, stderr=err, environ={}, cwd=cwd,
                                   now=lambda: CLOCK))
    return code, out.getvalue(), err.getvalue()


def example(fmt: str) -> str:
    code, out, err = cli(REPO, "plan", "examples/pipelines", "--facts", "examples/facts.yaml",
                         "--format", fmt)
    assert code == 0, err
    return out


def spec() -> list[dict[str, Any]]:
    data = json.loads(SPEC.read_text(encoding="utf-8"))
    assert isinstance(data, list)
    return data


def assert_same_keys(mine: Any, theirs: Any, where: str = "") -> None:
    """Same keys in the same order in every object both sides have (a null on one side and an
    object on the other — an unset `tls:` — is a value difference, not a shape one)."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        assert list(mine) == list(theirs), where
        for key in mine:
            assert_same_keys(mine[key], theirs[key], f"{where}.{key}")
    elif isinstance(mine, list) and isinstance(theirs, list) and mine and theirs:
        assert_same_keys(mine[0], theirs[0], f"{where}[0]")


# --- writing ------------------------------------------------------------------------------------

def test_rivet_json_has_rivets_shape_key_for_key() -> None:
    ours = {a["export_name"]: a for a in json.loads(example("rivet-json"))}
    reference = {a["export_name"]: a for a in spec()}
    # The same kinds of export as the reference: incremental `orders`, chunked `events`.
    for name in ("orders", "events"):
        mine, theirs = ours[name], reference[name]
        assert_same_keys(mine, theirs, name)
        assert mine["strategy"] == theirs["strategy"]
        assert list(mine["resolved_plan"]["strategy"]) == list(theirs["resolved_plan"]["strategy"])


def test_rivets_airflow_recipe_reads_the_campaign() -> None:
    plan = json.loads(example("rivet-json"))
    ordered = plan[0]["prioritization"]["campaign"]["ordered_exports"]
    assert [o["export_name"] for o in ordered][:2] == ["orders", "customers"]
    assert all({"priority_score", "recommended_wave", "reasons"} <= set(o) for o in ordered)
    # Every artifact of a config carries the same campaign, as rivet writes it.
    campaigns = [a["prioritization"]["campaign"] for a in plan
                 if a["config_path"] == plan[0]["config_path"]]
    assert all(c == campaigns[0] for c in campaigns)


def test_integrity_and_fingerprint_follow_rivets_algorithms() -> None:
    for artifact in spec():
        assert integrity(artifact["resolved_plan"]) == artifact["integrity"]
    (events,) = [a for a in spec() if a["export_name"] == "events"]
    assert plan_fingerprint("SELECT * FROM public.events", "id", "range_1000000") == \
        events["plan_fingerprint"]
    assert generate_chunks(1, 12_500_000, 1_000_000) == events["computed"]["chunk_ranges"]
    for artifact in json.loads(example("rivet-json")):
        assert integrity(artifact["resolved_plan"]) == artifact["integrity"]
        assert artifact["computed"]["chunk_count"] == len(artifact["computed"]["chunk_ranges"])
        assert bool(artifact["plan_fingerprint"]) == (artifact["strategy"] == "chunked")


def test_generate_chunks_vectors() -> None:
    assert generate_chunks(1, 30, 10) == [[1, 10], [11, 20], [21, 30]]
    assert generate_chunks(100, 100, 5) == [[100, 100]]
    assert generate_chunks(10, 5, 3) == []
    assert generate_chunks(-5, 5, 4) == [[-5, -2], [-1, 2], [3, 5]]


def test_strategy_rationale_reproduces_rivets_examples() -> None:
    from rivet_ci.core.config.models import ExportConfig

    def rationale(mode: str, rows: int, width: int, **extra: Any) -> str:
        export = ExportConfig.model_validate({
            "name": "x", "table": "t", "mode": mode, "format": "parquet",
            "destination": {"type": "local", "path": "out"}, **extra})
        signals = Signals(strategy="snapshot", preflight_estimate=rows, avg_row_bytes=width)
        return strategy_rationale(export, signals)

    assert rationale("time_window", 5_000_000, 100, time_column="ts", days_window=3) == (
        "Mode time_window: ~5.0M. Parallelism: single worker — only chunked mode benefits from "
        "parallelism; parallel=1 fits the 2048 MB budget at ~36 MB peak. Risk — resumable: no — "
        "a failed run restarts from the beginning; memory: bounded to ~36 MB peak.")
    assert rationale("full", 40_000, 64) == (
        "Mode full: ~40K rows, below the ~100K chunked threshold, so a single-pass copy is "
        "cheapest. Parallelism: single worker — only chunked mode benefits from parallelism; "
        "parallel=1 fits the 2048 MB budget at ~35 MB peak. Risk — resumable: no — a failed run "
        "restarts from the beginning; memory: bounded to ~35 MB peak.")


# --- reading ------------------------------------------------------------------------------------

def test_round_trip_rivet_json_then_show_gives_the_same_plan(tmp_path: Path) -> None:
    (tmp_path / "rivet.json").write_text(example("rivet-json"), encoding="utf-8")
    code, shown, err = cli(tmp_path, "show", "rivet.json", "--format", "json")
    assert code == 0, err
    ours = json.loads(example("json"))
    back = json.loads(shown)
    assert [c["path"] for c in back["configs"]] == [c["path"] for c in ours["configs"]]
    for mine, again in zip(ours["configs"], back["configs"], strict=True):
        assert mine["campaign"] == again["campaign"]
        for a, b in zip(mine["exports"], again["exports"], strict=True):
            assert a["export_name"] == b["export_name"]
            assert a["strategy"] == b["strategy"]
            assert (a["prioritization"]["export_recommendation"]
                    == b["prioritization"]["export_recommendation"])
            assert a["diagnostics"]["verdict"] == b["diagnostics"]["verdict"]
            assert a["diagnostics"]["warnings"] == b["diagnostics"]["warnings"]
            assert a["computed"]["row_estimate"] == b["computed"]["row_estimate"]
            assert a["computed"]["chunk_count"] == b["computed"]["chunk_count"]


def test_round_trip_pretty_blocks_are_identical(tmp_path: Path) -> None:
    (tmp_path / "rivet.json").write_text(example("rivet-json"), encoding="utf-8")
    code, shown, err = cli(tmp_path, "show", "rivet.json")
    assert code == 0, err

    def priority_lines(text: str) -> list[str]:
        return [line for line in text.splitlines()
                if not line.startswith(("Export     :", "Planned ", "rivet-ci:", "  Facts  "))]

    assert priority_lines(shown) == priority_lines(example("pretty"))


def test_show_reads_rivets_worked_example() -> None:
    plan = read_plan(spec(), path="plan.json")
    (config,) = plan.configs
    assert config.path == "/etc/rivet/replica_a.yaml"
    assert [e.export_name for e in config.exports] == ["orders", "events"]
    assert config.campaign is not None
    assert config.campaign.ordered_exports == ("orders", "events")
    events = config.exports[1]
    assert events.strategy == "chunked" and events.signals is not None
    assert (events.signals.chunk_count, events.signals.row_estimate) == (13, 12461000)
    assert events.recommendation.isolate_on_source


@pytest.mark.parametrize(("token", "strategy"), [
    ("full", "snapshot"), ("incremental", "incremental"), ("chunked", "chunked"),
    ("keyset", "chunked"), ("timewindow", "time_window"),
])
def test_every_rivet_strategy_token(token: str, strategy: str) -> None:
    artifact = {**spec()[0], "strategy": token}
    (export,) = read_plan(artifact, path="p.json").exports
    assert export.strategy == strategy


def test_strategy_from_the_resolved_plan_when_the_token_is_missing() -> None:
    artifact = {k: v for k, v in spec()[1].items() if k != "strategy"}
    (export,) = read_plan(artifact, path="p.json").exports
    assert export.strategy == "chunked"


def test_unknown_strategy_token_is_an_error() -> None:
    with pytest.raises(PlanReadError, match="unknown strategy 'hyperspace'"):
        read_plan({**spec()[0], "strategy": "hyperspace"}, path="p.json")


def test_a_0_7_5_artifact_without_the_later_fields(tmp_path: Path) -> None:
    old = json.loads(json.dumps(spec()[1]))
    for key in ("integrity", "config_path"):
        old.pop(key)
    old["diagnostics"].pop("strategy_rationale")
    for key in ("source_table", "is_split_unit", "verify"):
        old["resolved_plan"].pop(key)
    old["prioritization"].pop("campaign")
    (tmp_path / "old.json").write_text(json.dumps(old, indent=2))
    code, out, err = cli(tmp_path, "show", "old.json")
    assert code == 0, err
    assert "Priority   : score 16 — Low (wave 4)" in out


def test_pre_0_10_concatenated_objects(tmp_path: Path) -> None:
    first, second = spec()
    text = json.dumps(first, indent=2) + "\n" + json.dumps(second, indent=2) + "\n"
    (tmp_path / "multi.json").write_text(text)
    code, out, err = cli(tmp_path, "show", "multi.json", "--format", "json")
    assert code == 0, err
    (config,) = json.loads(out)["configs"]
    assert [e["export_name"] for e in config["exports"]] == ["orders", "events"]


WORKED_CONFIG = """\
source:
  type: postgres
  url_env: PG_REPLICA_URL
  environment: replica
  tls:
    mode: verify-full
exports:
  - name: orders
    table: public.orders
    mode: incremental
    cursor_column: updated_at
    format: parquet
    destination: {type: s3, bucket: acme-lake, prefix: "raw/{export}/{date}/", region: eu-west-1}
    source_group: replica_a
  - name: events
    table: public.events
    mode: chunked
    chunk_column: id
    chunk_size: 1000000
    parallel: 4
    chunk_checkpoint: true
    format: parquet
    compression_profile: balanced
    destination: {type: s3, bucket: acme-lake, prefix: "raw/{export}/{date}/", region: eu-west-1}
    source_group: replica_a
"""
WORKED_FACTS: dict[str, Any] = {
    "format": "rivet-ci-facts/1",
    "captured_at": "2026-08-22T09:14:03Z",
    "exports": {
        "orders": {
            "row_estimate": 24000000, "avg_row_bytes": 212, "max_connections": 200,
            "columns": {"updated_at": {"indexed": True, "min": "2019-03-02 08:11:40.125+00",
                                       "max": "2026-08-22 09:13:58.901+00"}},
            "history": [{"status": "failed", "duration_ms": 95000, "retries": 3},
                        {"status": "success", "duration_ms": 80000, "retries": 0},
                        {"status": "success", "duration_ms": 78000, "retries": 0}],
        },
        "events": {
            "row_estimate": 12400000, "avg_row_bytes": 180, "max_connections": 200,
            "table": {"rows": 12400000, "integer_primary_key": "id"},
            "columns": {"id": {"indexed": True, "integer": True, "min": "1",
                               "max": "12500000"}},
            "history": [
                {"status": "success", "duration_ms": 1290000, "retries": 1,
                 "total_rows": 12461000, "run_at": "2026-08-21T02:10:44.512338417+00:00"},
                {"status": "success", "duration_ms": 1248000, "retries": 0},
                {"status": "success", "duration_ms": 1262000, "retries": 1},
                {"status": "success", "duration_ms": 1255000, "retries": 0},
                {"status": "success", "duration_ms": 1301000, "retries": 0}],
        },
    },
}


def test_rivets_worked_example_is_reproduced(tmp_path: Path) -> None:
    """rivet-plan.md §12: the same config and observations give rivet's artifact, field for
    field — except what rivet-ci cannot or deliberately does not reproduce (docs/plan-json.md):
    plan_id, the timestamps, config_path and the stored cursor."""
    (tmp_path / "replica_a.yaml").write_text(WORKED_CONFIG, encoding="utf-8")
    (tmp_path / "facts.json").write_text(json.dumps(WORKED_FACTS), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    clock = datetime(2026, 8, 22, 9, 14, 3, tzinfo=UTC)
    code = run(["plan", "replica_a.yaml", "--facts", "facts.json", "--format", "rivet-json"],
               Context(stdout=out, stderr=err, environ={}, cwd=tmp_path, now=lambda: clock))
    assert code == 0, err.getvalue()
    ours = json.loads(out.getvalue())
    reference = spec()
    for artifact in (*ours, *reference):
        for key in ("plan_id", "created_at", "expires_at", "config_path"):
            artifact.pop(key)
        artifact["computed"].pop("cursor_snapshot")
    assert ours == reference


def test_mongo_page_size_is_a_keyset_artifact(tmp_path: Path) -> None:
    (tmp_path / "mongo.yaml").write_text(
        "source: {type: mongo, url_env: MONGO_URL, mongo: {page_size: 5000, resume: true}}\n"
        "exports:\n"
        "  - {name: users, table: users, format: parquet, destination: {type: local, path: out}}\n",
        encoding="utf-8")
    (tmp_path / "facts.json").write_text(json.dumps({
        "format": "rivet-ci-facts/1", "exports": {"users": {"row_estimate": 20000}}}))
    code, out, err = cli(tmp_path, "plan", "mongo.yaml", "--facts", "facts.json",
                         "--format", "rivet-json")
    assert code == 0, err
    artifact = json.loads(out)  # one export: one object, as rivet prints it
    assert artifact["strategy"] == "keyset" and artifact["plan_fingerprint"] == ""
    assert artifact["resolved_plan"]["strategy"] == {"Keyset": {
        "key_column": "_id", "chunk_size": 5000, "checkpoint": True, "incremental": True,
        "parallel": 1}}
    mongo = artifact["resolved_plan"]["source"]["mongo"]
    assert list(mongo) == ["json", "read_concern", "no_cursor_timeout", "page_size", "resume"]
    assert (mongo["json"], mongo["page_size"]) == ("relaxed", 5000)
    assert "campaign" not in artifact["prioritization"]
