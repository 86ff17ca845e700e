"""The action entrypoint end to end: `rivet-ci action` with GitHub's environment and a
`pull_request` event payload, on a real git repository, against the local fake GitHub.

Nothing is mocked: settings come from `INPUT_*`/`GITHUB_*` variables (hyphens kept, as GitHub
passes them to a Docker action), git runs for real, and comments go over HTTP to
`support.fake_github.FakeGitHub`.
"""

from __future__ import annotations

import json
import re

import pytest
from support.action import (
    BOT,
    PR,
    READ_ONLY,
    REPO,
    TOKEN,
    Workspace,
    add_order_items,
    example_configs,
    on_base,
    run_action,
)
from support.fake_github import FakeGitHub
from support.generated.action_docs import action_metadata
from support.plan_schema import assert_matches_schema
from support.pr import (
    BIG_FILES,
    BIG_PER_FILE,
    big_config,
    config,
    export,
    parse_outputs,
)

from rivet_ci.adapters.github.runner import GITHUB_COMMENT_LIMIT
from rivet_ci.core.comment.marker import parse_marker
from rivet_ci.core.common.limits import STEP_SUMMARY_LIMIT
from rivet_ci.core.gate.diff import Finding
from rivet_ci.github_action.annotations import annotation


def workflow_annotations(stdout: str, level: str = "error") -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith(f"::{level} file=")]


# -- the sticky comment across pushes -------------------------------------------------------------


def test_first_run_creates_the_comment_then_pushes_edit_it_and_reruns_change_nothing(
        gh: FakeGitHub, ws: Workspace) -> None:
    head1 = add_order_items(ws)
    gh.add_pull(REPO, PR, head_sha=head1)

    first, outputs_file = run_action(gh, ws, head1, fail_on="config-error, new-isolation")

    assert first.code == 1, first.stderr  # two new isolations under fail-on new-isolation
    (comment,) = gh.comments(REPO, PR)
    marker = parse_marker(comment["body"])
    assert marker is not None and marker.head_sha == head1 and marker.gate_id == "default"
    assert comment["login"] == BOT
    assert re.search(r"\[`order_items`\]\(https://github\.com/acme/warehouse/blob/"
                     rf"{head1}/rivet/replica_a\.yaml#L33\): 🔒 runs alone on `replica_a`",
                     comment["body"])
    assert (ws.path / "rivet-ci-comment-default.md").read_text(encoding="utf-8") == (
        comment["body"])
    outputs = parse_outputs(outputs_file.read_text(encoding="utf-8"))
    assert outputs == {
        "plan-path": "plan.json", "rivet-artifact-path": "",
        "comment-url": f"https://github.com/{REPO}/pull/{PR}#issuecomment-{comment['id']}",
        "comment-file": "rivet-ci-comment-default.md",
        "changed-exports": "1", "new-isolations": "1", "new-warnings": "1",
        "gate": "failed", "comment-posted": "true",
        # What was planned (the file the PR changes; the other one, in no group it touches,
        # is outside the review), and the effective policy.
        "base-configs": "1", "base-exports": "3", "head-configs": "1", "head-exports": "4",
        "policy": "config-error, no-configs, new-isolation",
    }
    assert set(outputs) == set(action_metadata()["outputs"])  # every output action.yml declares
    # Annotations on the YAML lines of the new blocking findings.
    assert workflow_annotations(first.stdout) == [
        "::error file=rivet/replica_a.yaml,line=33,title=rivet-ci new-isolation::"
        "order_items: isolate_on_source on 'replica_a'",
    ]
    assert "gate failed (fail-on: config-error, no-configs, new-isolation)" in first.stdout
    summary = (ws.runner_temp / "summary.md").read_text(encoding="utf-8")
    assert "<details><summary>Reasons per export (1)</summary>" in summary
    assert "): 🔒 runs alone on `replica_a`" in summary

    plan = json.loads((ws.path / "plan.json").read_text(encoding="utf-8"))
    assert plan["format"] == "rivet-ci-plan/1"
    assert_matches_schema(plan)  # the shipped JSON Schema
    assert plan["generated_at"] == "2026-11-29T12:00:00Z"
    assert plan["pull_request"]["base_sha"] == ws.base_sha
    assert plan["pull_request"]["head_sha"] == head1
    assert plan["pull_request"]["changed_files"] == [
        {"status": "modified", "path": "rivet/replica_a.yaml", "old_path": None}]
    # The plans of the files in the review (replica_b.yaml, in another group, is not), and
    # what that covers.
    assert {c["path"] for c in plan["base"]["configs"]} == {"rivet/replica_a.yaml"}
    assert {c["path"] for c in plan["configs"]} == {"rivet/replica_a.yaml"}
    assert plan["pull_request"]["review"] == {"base_files": 2, "head_files": 2,
                                              "narrowed": True}
    assert plan["diff"]["gate"] == {
        "passed": False, "policy": "config-error, no-configs, new-isolation",
        "blocking": plan["diff"]["gate"]["blocking"], "waived": [], "waivers": []}
    assert [f["export_name"] for f in plan["diff"]["gate"]["blocking"]] == ["order_items"]

    # A push: order_items moves to its own replica, so nothing new needs isolation any more.
    replica_a, order_items, _ = example_configs()
    head2 = ws.repo.commit("own replica", {"rivet/replica_a.yaml": replica_a + order_items.replace(
        "source_group: replica_a", "source_group: replica_c")})
    gh.set_head(REPO, PR, head2)
    second, outputs_file = run_action(gh, ws, head2, minutes=5,
                                      fail_on="config-error, new-isolation")

    assert second.code == 0, second.stderr
    (edited,) = gh.comments(REPO, PR)
    assert edited["id"] == comment["id"]  # edited in place, not a second comment
    marker = parse_marker(edited["body"])
    assert marker is not None and marker.head_sha == head2
    assert marker.timestamp == "2026-11-29T12:05:00Z"
    assert "✅ gate passed" in edited["body"]
    assert "): 🔒 runs alone on" not in edited["body"]  # no longer blocking
    assert len(gh.requests_for("PATCH")) == 1 and len(gh.requests_for("POST")) == 1
    assert workflow_annotations(second.stdout) == []
    outputs = parse_outputs(outputs_file.read_text(encoding="utf-8"))
    assert outputs["gate"] == "passed" and outputs["comment-posted"] == "true"
    assert outputs["comment-url"].endswith(f"#issuecomment-{comment['id']}")

    # The same run again, minutes later: only the marker's time would differ, so no PATCH.
    third, outputs_file = run_action(gh, ws, head2, minutes=30,
                                     fail_on="config-error, new-isolation")

    assert third.code == 0, third.stderr
    assert len(gh.requests_for("PATCH")) == 1 and len(gh.requests_for("POST")) == 1
    assert gh.comments(REPO, PR)[0]["body"] == edited["body"]
    outputs = parse_outputs(outputs_file.read_text(encoding="utf-8"))
    assert outputs["comment-posted"] == "true"


@pytest.mark.slow
def test_a_pr_changing_thousands_of_exports_posts_a_comment_within_the_limit(
        gh: FakeGitHub, ws: Workspace) -> None:
    ws.repo.checkout("main")
    base = ws.repo.commit("big base", {f"rivet/big_{i:02d}.yaml": big_config(i, "full")
                                       for i in range(BIG_FILES)})
    ws.base_sha = base
    ws.repo.checkout("big", new=True)
    head = ws.repo.commit("mass change", {f"rivet/big_{i:02d}.yaml": big_config(i, "incremental")
                                          for i in range(BIG_FILES)})
    gh.add_pull(REPO, PR, head_sha=head)

    result, outputs_file = run_action(gh, ws, head, fail_on="score-drop:15")

    assert result.code == 1, result.stderr
    outputs = parse_outputs(outputs_file.read_text(encoding="utf-8"))
    assert outputs["changed-exports"] == str(BIG_FILES * BIG_PER_FILE)
    assert outputs["comment-posted"] == "true"
    (comment,) = gh.comments(REPO, PR)  # accepted by GitHub (the fake enforces the limit)
    assert len(comment["body"]) <= GITHUB_COMMENT_LIMIT
    assert re.search(r"_Showing \d+ of 3,000 changed exports .*; all 3,000 are in the "
                     r"\[job summary\]\(https://github\.com/acme/warehouse/actions/runs/4242\)",
                     comment["body"])
    summary = (ws.runner_temp / "summary.md").read_text(encoding="utf-8")
    assert len(summary) <= STEP_SUMMARY_LIMIT
    # The summary has room for far more of the rows than the comment.
    assert summary.count("\n| ") > comment["body"].count("\n| ")
    assert len(workflow_annotations(result.stdout)) == 10


# -- a read-only token (a pull request from a fork) -----------------------------------------------


def test_a_read_only_token_keeps_the_comment_file_and_the_gate_decides(
        gh: FakeGitHub, ws: Workspace) -> None:
    head = add_order_items(ws)
    gh.add_pull(REPO, PR, head_sha=head, head_repo="contributor/warehouse")

    result, outputs_file = run_action(gh, ws, head, token=READ_ONLY, fork=True)

    assert result.code == 0, result.stderr  # fail-on config-error: nothing blocks
    assert gh.comments(REPO, PR) == []
    assert [r.method for r in gh.requests if r.method != "GET"] == ["POST"]  # refused: 403
    outputs = parse_outputs(outputs_file.read_text(encoding="utf-8"))
    assert outputs["comment-posted"] == "false"
    assert outputs["comment-url"] == ""
    assert outputs["gate"] == "passed"
    body = (ws.path / outputs["comment-file"]).read_text(encoding="utf-8")
    marker = parse_marker(body)
    assert marker is not None and marker.head_sha == head
    assert "🔒 runs alone on `replica_a`" in body
    assert "::notice title=rivet-ci comment::the token may not comment" in result.stdout
    assert "rivet-ci post" in result.stdout
    assert (ws.path / "plan.json").is_file()


def test_a_read_only_token_with_a_failing_gate_exits_1(gh: FakeGitHub, ws: Workspace) -> None:
    head = add_order_items(ws)
    gh.add_pull(REPO, PR, head_sha=head, head_repo="contributor/warehouse")
    result, outputs_file = run_action(gh, ws, head, token=READ_ONLY, fork=True,
                                      fail_on="new-warning")
    assert result.code == 1
    outputs = parse_outputs(outputs_file.read_text(encoding="utf-8"))
    assert outputs["gate"] == "failed" and outputs["comment-posted"] == "false"


# -- a GitHub outage ------------------------------------------------------------------------------


@pytest.mark.parametrize(("fail_on", "code"), [("config-error", 0), ("new-isolation", 1)])
def test_a_github_outage_keeps_the_plan_and_the_gate_decides(
        gh: FakeGitHub, ws: Workspace, fail_on: str, code: int) -> None:
    head = add_order_items(ws)
    gh.add_pull(REPO, PR, head_sha=head)
    # Every call fails with 503; Retry-After: 0 keeps the client's retries instant.
    gh.inject(503, times=1000, headers={"retry-after": "0"}, message="Service Unavailable")

    result, outputs_file = run_action(gh, ws, head, fail_on=fail_on)

    assert result.code == code, result.stderr
    assert len(gh.requests) >= 5  # the client did retry
    plan = json.loads((ws.path / "plan.json").read_text(encoding="utf-8"))
    assert plan["pull_request"]["head_sha"] == head
    assert plan["diff"]["gate"]["passed"] is (code == 0)
    assert (ws.path / "rivet-ci-comment-default.md").is_file()
    warning = next(line for line in result.stdout.splitlines()
                   if line.startswith("::warning title=rivet-ci comment::"))
    assert "could not post the comment" in warning and "503" in warning
    assert "rivet-ci-comment-default.md" in warning
    assert TOKEN not in result.stdout + result.stderr
    outputs = parse_outputs(outputs_file.read_text(encoding="utf-8"))
    assert outputs["comment-posted"] == "false" and outputs["comment-url"] == ""
    assert outputs["gate"] == ("passed" if code == 0 else "failed")


# -- annotations ----------------------------------------------------------------------------------


def test_at_most_ten_annotations_and_repo_wide_findings_without_a_file(
        gh: FakeGitHub, ws: Workspace) -> None:
    broken = [export(f"broken_{n:02d}", mode="incremental") for n in range(12)]  # no cursor
    heavy = {"mode": "chunked", "chunk_column": "id", "chunk_size": 500_000,
             "source_group": "shared"}
    head = ws.repo.commit("many problems", {
        "rivet/broken.yaml": config(*broken, url_env="BROKEN_URL"),
        # events (replica_a.yaml) and this one share no file: a repo-wide collision.
        "rivet/more.yaml": config(export("order_items", **heavy), url_env="MORE_URL"),
        "rivet/replica_a.yaml": example_configs()[0].replace(
            "chunk_size: 1000000\n    chunk_checkpoint: true\n    parallel: 4\n"
            "    source_group: replica_a",
            "chunk_size: 1000000\n    chunk_checkpoint: true\n    parallel: 4\n"
            "    source_group: shared"),
    })
    gh.add_pull(REPO, PR, head_sha=head)

    result, _ = run_action(gh, ws, head, fail_on="new-warning\nconfig-error")

    assert result.code == 1, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("::error ")]
    assert len(lines) == 10  # 13 blocking findings, at most 10 annotations
    for line in lines:
        assert re.fullmatch(r"::error file=rivet/broken\.yaml,line=\d+,title=rivet-ci "
                            r"config-error::rivet/broken\.yaml:\d+: exports\[\d+\]"
                            r"\.cursor_column: export 'broken_\d+': incremental mode needs "
                            r"cursor_column \[V-E20a RIVET_CONFIG_MODE_SETTING_INVALID\]",
                            line)
    plan = json.loads((ws.path / "plan.json").read_text(encoding="utf-8"))
    blocking = plan["diff"]["gate"]["blocking"]
    assert len(blocking) == 13
    repo_wide = [f for f in blocking if f["kind"] == "new-warning"]
    assert repo_wide and all(f["file"] is None for f in repo_wide)
    # Had it been among the first ten, it would carry no file= (and still be well-formed).
    assert annotation(Finding.model_validate(repo_wide[0])).startswith(
        "::error title=rivet-ci new-warning::Source group 'shared'")


def test_settings_problems_are_usage_errors(gh: FakeGitHub, ws: Workspace) -> None:
    head = add_order_items(ws)
    result, _ = run_action(gh, ws, head, id="bad id")
    assert result.code == 2
    assert "id:" in result.stderr and "rivet-ci: error:" in result.stderr
    result, _ = run_action(gh, ws, head, fail_on="config-error, new-isolations")
    assert result.code == 2
    assert "unknown fail-on value(s): new-isolations" in result.stderr
    assert gh.requests == [] and not (ws.path / "plan.json").exists()


TEAM_TEMPLATE = ('{% extends "base/comment.md.j2" %}{% block footer %}\n\n_Ask #data-platform._'
                 "{% endblock %}")


def test_the_template_dir_input_replaces_the_comment_template(
        gh: FakeGitHub, ws: Workspace) -> None:
    on_base(ws, {".github/rivet-ci/comment.md.j2": TEAM_TEMPLATE})
    head = add_order_items(ws)
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, template_dir=".github/rivet-ci")
    assert result.code == 0, result.stderr
    (comment,) = gh.comments(REPO, PR)
    assert comment["body"].rstrip().endswith("_Ask #data-platform._")


def test_rivet_compatible_artifact_is_rivets_shape_of_the_head_plan(
        gh: FakeGitHub, ws: Workspace) -> None:
    head = add_order_items(ws)
    gh.add_pull(REPO, PR, head_sha=head)

    result, outputs_file = run_action(gh, ws, head, rivet_compatible_artifact="out/rivet.json")

    assert result.code == 0, result.stderr
    outputs = parse_outputs(outputs_file.read_text(encoding="utf-8"))
    assert outputs["rivet-artifact-path"] == "out/rivet.json"
    artifacts = json.loads((ws.path / "out" / "rivet.json").read_text(encoding="utf-8"))
    plan = json.loads((ws.path / "plan.json").read_text(encoding="utf-8"))
    head_names = {e["export_name"] for c in plan["configs"] for e in c["exports"]}
    assert {a["export_name"] for a in artifacts} == head_names
    # rivet's Airflow recipe: plan[0]["prioritization"]["campaign"]["ordered_exports"]
    ordered = artifacts[0]["prioritization"]["campaign"]["ordered_exports"]
    assert {o["export_name"] for o in ordered} <= head_names
    assert all(a["rivet_version"] == "0.24.5" and a["integrity"].startswith("xxh3:")
               for a in artifacts)


def test_no_rivet_artifact_unless_asked(gh: FakeGitHub, ws: Workspace) -> None:
    head = add_order_items(ws)
    gh.add_pull(REPO, PR, head_sha=head)
    result, outputs_file = run_action(gh, ws, head)
    assert result.code == 0, result.stderr
    assert parse_outputs(outputs_file.read_text(encoding="utf-8"))["rivet-artifact-path"] == ""


def test_cache_dir_reuses_plans_between_runs_with_the_same_plan(
        gh: FakeGitHub, ws: Workspace) -> None:
    head = add_order_items(ws)
    gh.add_pull(REPO, PR, head_sha=head)

    first, _ = run_action(gh, ws, head, cache_dir=".rivet-ci-cache")
    plan_first = (ws.path / "plan.json").read_text(encoding="utf-8")
    comment_first = (ws.path / "rivet-ci-comment-default.md").read_text(encoding="utf-8")
    second, _ = run_action(gh, ws, head, cache_dir=".rivet-ci-cache")

    assert first.code == second.code == 0, second.stderr
    # The changed file, base and head (the other file is in no group it touches: not
    # loaded). The second run reads both from the cache.
    assert "plan cache .rivet-ci-cache: 0 hit(s), 2 miss(es), 2 written" in first.stdout
    assert "plan cache .rivet-ci-cache: 2 hit(s), 0 miss(es), 0 written" in second.stdout
    assert (ws.path / "plan.json").read_text(encoding="utf-8") == plan_first
    assert (ws.path / "rivet-ci-comment-default.md").read_text(encoding="utf-8") == comment_first
    assert len(list((ws.path / ".rivet-ci-cache").rglob("*.json"))) == 4  # plan + summary
