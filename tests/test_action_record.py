"""The plan of record and the action's compact `plan.json`.

On a push (a schedule, a manual run) the action plans every config matching `configs` at the
commit — not the subset a review covers — and writes the complete plan, no comment; the outputs,
job summary and annotations are still written. `plan.json` is compact by default (no whitespace,
`resolved_plan` null), and says what it covers (`coverage`). Run for real: git, settings from
`INPUT_*`/`GITHUB_*`, the fake GitHub (which must see no request at all).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from support.action import REPO, Workspace, add_order_items, run_action
from support.fake_github import FakeGitHub
from support.plan_schema import assert_matches_schema
from support.pr import NOW, config, export, parse_outputs

from rivet_ci.adapters.files import load_config_file, load_facts_file
from rivet_ci.cli import run
from rivet_ci.commands.context import Context
from rivet_ci.core.formats.document import COMPACT, plan_document_chunks
from rivet_ci.core.plan.planner import FactsOrigin, plan_configs


def _plan_of(ws: Workspace) -> dict[str, object]:
    data: dict[str, object] = json.loads((ws.path / "plan.json").read_bytes())
    return data


def test_a_push_plans_every_config_of_the_repository_and_posts_nothing(
        gh: FakeGitHub, ws: Workspace) -> None:
    # A third file the change does not touch, in a source group of its own: a pull request's
    # review leaves it out; the plan of record holds it.
    ws.repo.commit("other", {"rivet/other.rivet.yaml": config(
        export("lonely", source_group="elsewhere"))})
    head = add_order_items(ws)

    result, outputs_file = run_action(gh, ws, head, event_name="push",
                                      fail_on="config-error, new-isolation")

    assert result.code == 0, result.stderr  # nothing is "new" without a base: no isolation gate
    assert gh.requests == []  # no comment, no read: a push has no pull request
    plan = _plan_of(ws)
    assert_matches_schema(plan)
    assert plan["coverage"] == {"scope": "repository", "commit": head, "config_files": 3,
                                "resolved_plans": False}
    assert "pull_request" not in plan and "diff" not in plan
    configs = plan["configs"]
    assert isinstance(configs, list)
    assert sorted(c["path"] for c in configs) == ["rivet/other.rivet.yaml",
                                                  "rivet/replica_a.yaml", "rivet/replica_b.yaml"]
    exports = [e for c in configs for e in c["exports"]]
    assert {e["export_name"] for e in exports} >= {"order_items", "lonely"}
    assert all(e["resolved_plan"] is None for e in exports)
    # The same plan `rivet-ci plan` gives for the files at that commit (the recommendations).
    out = io.StringIO()
    code = run(["plan", "rivet", "--facts", "facts.yaml", "--format", "json"],
               Context(stdout=out, stderr=io.StringIO(), environ={}, cwd=ws.path,
                       now=lambda: NOW))
    assert code == 0
    expected = {(e["config"], e["export_name"]): e["prioritization"]["export_recommendation"]
                for c in json.loads(out.getvalue())["configs"] for e in c["exports"]}
    assert {(e["config"], e["export_name"]): e["prioritization"]["export_recommendation"]
            for e in exports} == expected
    # Compact: one line, no indentation.
    text = (ws.path / "plan.json").read_bytes()
    assert text.count(b"\n") == 1 and text.endswith(b"}\n") and b'": ' not in text
    outputs = parse_outputs(outputs_file.read_text(encoding="utf-8"))
    assert outputs["gate"] == "passed" and outputs["comment-posted"] == "false"
    assert outputs["comment-file"] == "" and outputs["comment-url"] == ""
    assert (outputs["head-configs"], outputs["head-exports"]) == ("3", str(len(exports)))
    assert outputs["plan-path"] == "plan.json"
    assert not (ws.path / "rivet-ci-comment-default.md").exists()
    summary = (ws.runner_temp / "summary.md").read_text(encoding="utf-8")
    assert "plan of record" in summary and "3 config files" in summary
    assert f"plan of record at {head[:12]}: 3 config files" in result.stdout


def test_a_broken_config_on_the_default_branch_fails_the_plan_of_record_on_its_line(
        gh: FakeGitHub, ws: Workspace) -> None:
    head = ws.repo.commit("typo", {"rivet/broken.yaml": config(
        export("events", chunk_sise=5))})

    result, outputs_file = run_action(gh, ws, head, event_name="workflow_dispatch")

    assert result.code == 1, result.stderr
    errors = [line for line in result.stdout.splitlines() if line.startswith("::error ")]
    assert errors and all("file=rivet/broken.yaml" in line for line in errors)
    assert "chunk_sise" in errors[0] and ",line=" in errors[0]
    outputs = parse_outputs(outputs_file.read_text(encoding="utf-8"))
    assert outputs["gate"] == "failed" and outputs["policy"] == "config-error, no-configs"
    plan = _plan_of(ws)
    assert_matches_schema(plan)
    assert any("chunk_sise" in p["message"] for p in plan["problems"])  # type: ignore[attr-defined]
    # and `fail-on: none` reports only
    again, _ = run_action(gh, ws, head, event_name="schedule", fail_on="none")
    assert again.code == 0, again.stderr
    assert gh.requests == []


def test_the_indented_layout_is_what_rivet_ci_plan_writes_with_every_field(
        gh: FakeGitHub, ws: Workspace) -> None:
    head = add_order_items(ws)
    result, _ = run_action(gh, ws, head, event_name="push", plan_json="indented",
                           rivet_compatible_artifact="rivet-plan.json")
    assert result.code == 0, result.stderr
    text = (ws.path / "plan.json").read_text(encoding="utf-8")
    plan = json.loads(text)
    assert_matches_schema(plan)
    assert text.startswith('{\n  "format": "rivet-ci-plan/1",\n')
    assert plan["coverage"]["resolved_plans"] is True
    assert all(e["resolved_plan"] is not None for c in plan["configs"] for e in c["exports"])
    artifacts = json.loads((ws.path / "rivet-plan.json").read_text(encoding="utf-8"))
    assert {a["export_name"] for a in artifacts} == {
        e["export_name"] for c in plan["configs"] for e in c["exports"]}


def test_a_pull_requests_plan_is_compact_by_default_and_says_what_it_covers(
        gh: FakeGitHub, ws: Workspace) -> None:
    head = add_order_items(ws)
    gh.add_pull(REPO, 7, head_sha=head)
    result, _ = run_action(gh, ws, head)
    assert result.code == 0, result.stderr
    compact = (ws.path / "plan.json").read_bytes()
    assert compact.count(b"\n") == 1
    plan = json.loads(compact)
    assert_matches_schema(plan)
    assert plan["coverage"] == {"scope": "review", "commit": head, "config_files": 2,
                                "resolved_plans": False}
    assert all(e["resolved_plan"] is None for c in (*plan["configs"], *plan["base"]["configs"])
               for e in c["exports"])
    result, _ = run_action(gh, ws, head, plan_json="indented", minutes=1)
    assert result.code == 0, result.stderr
    indented = json.loads((ws.path / "plan.json").read_bytes())
    # The same document but for the layout and `resolved_plan` (and the time it was written).
    for document in (indented, plan):
        document.pop("generated_at")
        document["coverage"].pop("resolved_plans")
        for c in (*document["configs"], *document["base"]["configs"]):
            for e in c["exports"]:
                e.pop("resolved_plan")
    assert indented == plan


def test_the_compact_layout_is_the_indented_document_without_whitespace_and_resolved_plans(
        ) -> None:
    root = Path(__file__).resolve().parent.parent
    facts, _ = load_facts_file(root / "examples" / "facts.yaml", root=root)
    configs = [load_config_file(p, root=root, environ={})
               for p in sorted((root / "examples" / "pipelines").glob("*.yaml"))]
    plan = plan_configs(configs, facts, FactsOrigin(kind="file", path="facts.yaml"), [])
    indented = json.loads(b"".join(plan_document_chunks(plan, generated_at="2026-11-29T12:00:00Z",
                                                        version="t")))
    chunks = list(plan_document_chunks(plan, generated_at="2026-11-29T12:00:00Z", version="t",
                                       layout=COMPACT))
    text = b"".join(chunks)
    assert text.endswith(b"\n") and text.count(b"\n") == 1
    for c in indented["configs"]:
        for e in c["exports"]:
            e["resolved_plan"] = None
    assert text == json.dumps(indented, ensure_ascii=False,
                              separators=(",", ":")).encode("utf-8") + b"\n"
