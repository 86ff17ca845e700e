"""The plan document's one definition: `rivet-ci schema`, the shipped `schemas/plan.schema.json`,
every golden and written plan checked against it, and reading a bad plan back."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support.plan_schema import (
    SCHEMA_FILE,
    assert_matches_schema,
    published_validator,
    validator,
)

from rivet_ci.cli import run
from rivet_ci.commands.context import Context
from rivet_ci.core.formats import document as document_module
from rivet_ci.core.formats import plan_format
from rivet_ci.core.formats.document import (
    PLAN_FORMAT,
    dump_json,
    plan_document,
    plan_document_chunks,
)
from rivet_ci.core.plan.planner import FactsOrigin, plan_configs

ROOT = Path(__file__).resolve().parent.parent
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def cli(argv: list[str], cwd: Path = ROOT) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(argv, Context(stdout=out, stderr=err, environ={}, cwd=cwd, now=lambda: NOW))
    return code, out.getvalue(), err.getvalue()


# -- the schema ----------------------------------------------------------------------------------


def test_the_shipped_schema_is_what_rivet_ci_schema_prints() -> None:
    code, out, err = cli(["schema"])
    assert code == 0, err
    assert out == SCHEMA_FILE.read_text(encoding="utf-8"), (
        "schemas/plan.schema.json is stale: `.venv/bin/python scripts/regenerate.py`")


def test_the_schema_is_a_valid_draft_2020_12_schema_open_to_growth_with_a_versioned_id() -> None:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["properties"]["format"] == {"const": PLAN_FORMAT, "title": "Format",
                                              "type": "string"}
    # The id names the format's version, not a branch (docs/plan-json.md, "Versions").
    assert schema["$id"].endswith(PLAN_FORMAT) and "/main/" not in schema["$id"]
    # As shipped, no object refuses a key a later release of rivet-ci-plan/1 may add (only
    # `{}`, the `computed` of a plan read back, stays exactly empty) ...
    assert [name for name, d in schema["$defs"].items()
            if d.get("additionalProperties") is False] == ["EmptyJSON"]
    # ... while the closed schema the tests hold our own documents to refuses every key it
    # does not define (the diff's models aside).
    closed_schema = plan_format.closed_schema()
    closed = [name for name, d in closed_schema["$defs"].items() if d.get("type") == "object"
              and d.get("additionalProperties") is False]
    assert {"ExportJSON", "ResolvedPlanJSON", "ComputedJSON", "ConfigJSON",
            "PlanDocumentJSON", "CoverageJSON"} <= {*closed, "PlanDocumentJSON"}
    assert closed_schema.get("additionalProperties") is False


def test_a_document_with_a_key_this_version_does_not_know_validates_and_reads(
        tmp_path: Path) -> None:
    """Additive changes keep `rivet-ci-plan/1`: a consumer validating with this release's
    schema accepts a later release's document, and `rivet-ci show` reads it."""
    golden = json.loads((ROOT / "tests/golden/plan/example.json").read_text(encoding="utf-8"))
    grown = json.loads(json.dumps(golden))
    grown["added_later"] = {"anything": [1, 2]}
    grown["configs"][0]["exports"][0]["new_field"] = "x"
    grown["configs"][0]["exports"][0]["computed"]["new_signal"] = 3
    grown["summary"]["new_count"] = 0
    assert not list(published_validator().iter_errors(grown))
    assert list(validator().iter_errors(grown))  # the closed schema still tells
    path = tmp_path / "grown.json"
    path.write_text(json.dumps(grown), encoding="utf-8")
    code, out, err = cli(["show", str(path), "--format", "json"])
    assert code == 0, err
    again = tmp_path / "plain.json"
    again.write_text(json.dumps(golden), encoding="utf-8")
    plain = cli(["show", str(again), "--format", "json"])[1]
    assert out.replace(path.name, again.name) == plain
    # A wrong type is still refused, next to an unknown key.
    grown["summary"]["errors"] = "0"
    path.write_text(json.dumps(grown), encoding="utf-8")
    code, _, err = cli(["show", str(path)])
    assert code == 2 and "summary.errors" in err


def test_every_golden_plan_document_matches_the_schema() -> None:
    checked = 0
    for path in sorted((ROOT / "tests" / "golden").rglob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and data.get("format") == PLAN_FORMAT:
            assert_matches_schema(data, str(path))
            checked += 1
    assert checked >= 1


def test_the_schema_refuses_what_the_format_does_not_allow() -> None:
    golden = json.loads((ROOT / "tests/golden/plan/example.json").read_text(encoding="utf-8"))
    export = golden["configs"][0]["exports"][0]
    for key, value in (("computed", {"row_estimate": "12"}), ("mode", "cdc")):
        broken = json.loads(json.dumps(golden))
        broken["configs"][0]["exports"][0][key] = value
        assert list(validator().iter_errors(broken)), key
        assert list(published_validator().iter_errors(broken)), key
    assert export["resolved_plan"]["source"]["password"] is None


# -- plans the commands write ----------------------------------------------------------------------


REFUSED = """source: {type: postgres, url_env: DB_URL, environment: replica}
exports:
  - {name: refused, table: public.t, mode: chunked, chunk_by_key: id, format: csv,
     destination: {type: stdout}}
  - {name: local, query: "SELECT * FROM t", mode: chunked, chunk_column: id, format: csv,
     destination: {type: local, path: "out/{export}/{date}"}}
  - {name: kept, table: public.t, mode: full, format: parquet, compression_profile: compact,
     columns: {amount: "decimal(12, 2)", at: timestamptz, id: int64},
     meta_columns: {row_hash: [id]}, quality: {row_count_min: 1, null_ratio_max: {id: 0.5}},
     parquet: {row_group_strategy: auto}, tuning: {profile: safe, batch_size: 100},
     destination: {type: s3, bucket: b, prefix: "{table}/"}}
"""


def test_plan_documents_of_the_example_and_the_config_corpus_match_the_schema(
        tmp_path: Path) -> None:
    (tmp_path / "refused.yaml").write_text(REFUSED, encoding="utf-8")
    runs = [
        ["examples/pipelines", "--facts", "examples/facts.yaml"],
        ["examples/pipelines"],  # no facts: every export low confidence, a preflight error
        # Every accepted and refused corpus config: problems of every kind, a refused plan, and
        # the optional sections of rivet's resolved_plan.
        ["tests/configs/accept", "tests/configs/reject", "tests/bad_configs",
         str(tmp_path / "refused.yaml")],
    ]
    for argv in runs:
        output = tmp_path / "plan.json"
        code, out, err = cli(["plan", *argv, "--format", "json", "--output", str(output)])
        assert code in (0, 2), err
        document = json.loads(out)
        assert output.read_text(encoding="utf-8") == out
        assert_matches_schema(document, " ".join(argv))
        assert document["summary"]["exports"] > 0
    assert any(p["finding"] == "plan-refused" for p in document["problems"])


def test_show_converts_rivet_artifacts_to_documents_that_match_the_schema(
        tmp_path: Path) -> None:
    for name in ("tests/golden/plan/example.rivet.json", "tests/golden/plan/example.json",
                 "tests/golden/rivet/spec_worked_example.json"):
        code, out, err = cli(["show", name, "--format", "json"])
        assert code == 0, err
        assert_matches_schema(json.loads(out), name)


# -- the streamed text --------------------------------------------------------------------------


def example_plan() -> Any:
    from rivet_ci.adapters.files import load_config_file, load_facts_file

    configs = [load_config_file(p, root=ROOT, environ={})
               for p in sorted((ROOT / "examples" / "pipelines").glob("*.yaml"))]
    facts, problems = load_facts_file(ROOT / "examples" / "facts.yaml", root=ROOT)
    return plan_configs(configs, facts, FactsOrigin(kind="file", path="examples/facts.yaml"),
                        problems)


@pytest.mark.parametrize("batch", [1, 2, 8])
def test_the_streamed_document_is_the_same_bytes_in_line_ending_chunks(
        monkeypatch: pytest.MonkeyPatch, batch: int) -> None:
    plan = example_plan()
    whole = dump_json(plan_document(plan, generated_at="2026-11-29T12:00:00Z", version="t"))
    monkeypatch.setattr(document_module, "CHUNK_BYTES", 512)
    # Exports are serialised `batch` at a time (full batches and a shorter last one), and the
    # text is cut between batches: fewer, longer chunks as batches grow.
    monkeypatch.setattr(document_module, "_BATCH", batch)
    chunks = list(plan_document_chunks(plan, generated_at="2026-11-29T12:00:00Z", version="t"))
    assert len(chunks) > 10 // batch
    assert all(c.endswith(b"\n") for c in chunks)  # the redactor sees whole lines
    assert b"".join(chunks).decode("utf-8") == whole
    extra = {"pull_request": {"base_sha": "a", "head_sha": "b", "changed_files": []}}
    with_extra = b"".join(plan_document_chunks(plan, generated_at="2026-11-29T12:00:00Z",
                                               version="t", extra=extra))
    assert json.loads(with_extra) == {**json.loads(whole), **extra}


def test_the_streamed_memo_writes_shared_blocks_only_where_it_knows_their_place() -> None:
    """`streamed_memo` gives the blocks exports share as text indented for their place in
    `config_chunks`' output; a config built as data (`config_json`) refuses it."""
    from rivet_ci.core.formats.document import config_chunks, config_json, streamed_memo

    plan = example_plan()
    for config in plan.configs:
        placed = b"".join(config_chunks(config, day="2026-11-29", memo=streamed_memo()))
        assert json.loads(placed) == json.loads(dump_json(config_json(config, day="2026-11-29")))
    with pytest.raises(ValueError, match="streamed document's memo"):
        config_json(plan.configs[0], day="2026-11-29", memo=streamed_memo())


# -- reading a plan back -------------------------------------------------------------------------


def test_a_malformed_plan_is_refused_naming_the_file_and_the_field(tmp_path: Path) -> None:
    golden = json.loads((ROOT / "tests/golden/plan/example.json").read_text(encoding="utf-8"))
    golden["configs"][1]["exports"][2]["computed"]["row_estimate"] = "12"
    golden["configs"][0]["exports"][0]["resolved_plan"]["strategy"] = {"Sideways": {}}
    del golden["summary"]["errors"]
    (tmp_path / "plan.json").write_text(json.dumps(golden), encoding="utf-8")
    code, out, err = cli(["show", "plan.json"], cwd=tmp_path)
    assert code == 2 and out == ""
    assert "Traceback" not in err
    assert err.startswith("rivet-ci: error: plan.json: not a valid rivet-ci-plan/1 document:")
    assert "summary.errors: Field required" in err
    assert "configs[1].exports[2].computed.row_estimate: Input should be a valid integer" in err
    assert "configs[0].exports[0].resolved_plan.strategy: expected \"Snapshot\" or an object" \
        in err


@pytest.mark.parametrize("text", [
    '{"format": "rivet-ci-plan/2", "configs": []}',
    '{"format": "rivet-ci-plan/1"}',
    '{"format": "rivet-ci-facts/1", "exports": {}}',
    "[1, 2, 3]",
    '"plan"',
])
def test_a_foreign_json_is_refused_without_a_traceback(tmp_path: Path, text: str) -> None:
    (tmp_path / "plan.json").write_text(text, encoding="utf-8")
    code, out, err = cli(["show", "plan.json"], cwd=tmp_path)
    assert code == 2 and out == ""
    assert err.startswith("rivet-ci: error: plan.json: ") and "Traceback" not in err


@pytest.mark.parametrize("argv", [
    ["examples/pipelines", "--facts", "examples/facts.yaml"],
    ["examples/pipelines", "--facts", "examples/facts.yaml", "--export", "events",
     "--export", "no_such_export"],
    ["examples/pipelines"],
    ["tests/configs/accept", "tests/configs/reject", "tests/bad_configs"],
])
def test_plan_json_streamed_config_by_config_is_the_document_planned_whole(
        tmp_path: Path, argv: list[str]) -> None:
    """`plan --format json` plans, serialises and drops one config at a time (memory bounded
    by a config); `--format pretty --output` writes the document of the whole plan held in
    memory. Same bytes, same exit code, same problems on stderr."""
    whole = tmp_path / "whole.json"
    streamed = tmp_path / "streamed.json"
    code_whole, _, err_whole = cli(["plan", *argv, "--output", str(whole)])
    code, out, err = cli(["plan", *argv, "--format", "json", "--output", str(streamed)])
    assert code == code_whole, err
    assert out == whole.read_text(encoding="utf-8") == streamed.read_text(encoding="utf-8")
    prefixes = ("rivet-ci: error:", "rivet-ci: warning:")
    problems = [line for line in err.splitlines() if line.startswith(prefixes)]
    assert problems == [line for line in err_whole.splitlines() if line.startswith(prefixes)]


def test_the_pull_request_document_streamed_is_the_same_bytes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from rivet_ci.core.formats.diff_document import (
        pull_request_document,
        pull_request_document_chunks,
    )
    from rivet_ci.core.gate.diff import diff_plans
    from rivet_ci.core.gate.policy import GatePolicy, evaluate_gate

    head = example_plan()
    base = head.model_copy(update={"configs": head.configs[:1]})  # the second file is new
    diff = diff_plans(base, head)
    gate = evaluate_gate(diff, GatePolicy())
    assert diff.changed_exports
    kwargs: dict[str, Any] = {
        "base_sha": "a" * 40, "head_sha": "b" * 40, "generated_at": "2026-11-29T12:00:00Z",
        "version": "t", "changed_files": [{"status": "added", "path": "p.yaml", "old_path": None}],
        "review": {"base_files": 1, "head_files": 2, "narrowed": False}}
    whole = dump_json(pull_request_document(base, head, diff, gate, **kwargs))
    monkeypatch.setattr(document_module, "CHUNK_BYTES", 512)
    monkeypatch.setattr(document_module, "_BATCH", 1)  # a cut possible after every export
    chunks = list(pull_request_document_chunks(base, head, diff, gate, **kwargs))
    assert all(c.endswith(b"\n") for c in chunks) and len(chunks) > 10
    assert b"".join(chunks).decode("utf-8") == whole
    assert_matches_schema(json.loads(whole), "pull request document")
