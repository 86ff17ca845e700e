"""`comment-when`: quiet when nothing changed (issue 22, item 6), and the comment re-rendered
from an action's plan.json (`show --format markdown`, item 9). A pull request that changes no
config file and no finding gets no new comment under the default `comment-when: changed`; an
existing comment is edited to say nothing changed; the step summary, `plan.json`, the comment
file and the outputs are written as always. Run end to end against the fake GitHub.
"""

from __future__ import annotations

from pathlib import Path

from support.action import PR, REPO, Workspace, add_order_items, example_configs, run_action
from support.fake_github import FakeGitHub
from support.pr import parse_outputs, run_cli

from rivet_ci.core.comment.view import QUIET_HEADLINE

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def app_only(ws: Workspace, text: str = "print('hello')\n") -> str:
    return ws.repo.commit("app change", {"app/main.py": text})


def test_a_pr_touching_no_config_gets_no_comment(gh: FakeGitHub, ws: Workspace) -> None:
    head = app_only(ws)
    gh.add_pull(REPO, PR, head_sha=head)
    result, outputs_file = run_action(gh, ws, head)
    assert result.code == 0, result.stderr
    assert gh.comments(REPO, PR) == []
    assert gh.requests_for("POST") == [] and gh.requests_for("PATCH") == []
    assert "no config file or finding changed: no comment created" in result.stdout
    outputs = parse_outputs(outputs_file.read_text(encoding="utf-8"))
    assert outputs["comment-posted"] == "false" and outputs["gate"] == "passed"
    assert outputs["changed-exports"] == "0"
    assert (ws.path / "plan.json").is_file()
    comment_file = (ws.path / "rivet-ci-comment-default.md").read_text(encoding="utf-8")
    summary = (ws.runner_temp / "summary.md").read_text(encoding="utf-8")
    assert QUIET_HEADLINE in comment_file and QUIET_HEADLINE in summary


def test_always_posts_even_when_nothing_changed(gh: FakeGitHub, ws: Workspace) -> None:
    head = app_only(ws)
    gh.add_pull(REPO, PR, head_sha=head)
    result, outputs_file = run_action(gh, ws, head, comment_when="always")
    assert result.code == 0, result.stderr
    (comment,) = gh.comments(REPO, PR)
    assert QUIET_HEADLINE in comment["body"]
    assert parse_outputs(outputs_file.read_text(encoding="utf-8"))["comment-posted"] == "true"


def test_an_existing_comment_is_updated_to_say_nothing_changed(gh: FakeGitHub,
                                                              ws: Workspace) -> None:
    head1 = add_order_items(ws)
    gh.add_pull(REPO, PR, head_sha=head1)
    first, _ = run_action(gh, ws, head1, comment="recreate")
    assert first.code == 0, first.stderr
    (comment,) = gh.comments(REPO, PR)
    assert "1 new isolation" in comment["body"]
    # The next push takes the config change back and edits only the application.
    replica_a, _, _ = example_configs()
    ws.repo.commit("revert", {"rivet/replica_a.yaml": replica_a})
    head2 = app_only(ws)
    gh.set_head(REPO, PR, head2)
    second, outputs_file = run_action(gh, ws, head2, minutes=5, comment="recreate")
    assert second.code == 0, second.stderr
    (edited,) = gh.comments(REPO, PR)
    assert edited["id"] == comment["id"]  # edited in place, even with `comment: recreate`
    assert QUIET_HEADLINE in edited["body"] and "1 new isolation" not in edited["body"]
    assert parse_outputs(outputs_file.read_text(encoding="utf-8"))["comment-posted"] == "true"


def test_a_pr_that_only_moves_a_finding_is_not_quiet(gh: FakeGitHub, ws: Workspace) -> None:
    """A config change that moves no score is still a change: the comment is posted."""
    replica_a, _, _ = example_configs()
    head = ws.repo.commit("comment only", {"rivet/replica_a.yaml": "# owned by data\n" + replica_a})
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head)
    assert result.code == 0, result.stderr
    (comment,) = gh.comments(REPO, PR)
    assert QUIET_HEADLINE not in comment["body"]


# -- `rivet-ci show plan.json --format markdown` ----------------------------------------------


def test_show_re_renders_the_comment_from_the_actions_plan_json(gh: FakeGitHub,
                                                                ws: Workspace) -> None:
    head = add_order_items(ws)
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, fail_on="config-error, new-isolation")
    assert result.code == 1, result.stderr
    (comment,) = gh.comments(REPO, PR)
    shown = run_cli(["show", "plan.json", "--format", "markdown"], cwd=ws.path,
                    environ={"GITHUB_REPOSITORY": REPO, "GITHUB_SERVER_URL": "https://github.com"})
    assert shown.code == 0, shown.stderr

    def parts(body: str) -> list[str]:
        # what a reviewer reads: headline, blocking lines, table rows, warnings, the picture
        return [line for line in body.splitlines()
                if line.startswith(("**❌", "**✅", "- ❌", "| ", "- ⚠️", "    w"))]

    assert parts(shown.stdout) == parts(comment["body"])
    assert len(parts(shown.stdout)) >= 6
    assert shown.stdout.startswith("<!-- rivet-ci:comment id=default head=" + head)


def test_show_markdown_needs_a_pull_request_document(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    result = run_cli(["plan", str(EXAMPLES / "pipelines"), "--facts",
                      str(EXAMPLES / "facts.yaml"), "--format", "json", "--output", str(plan)],
                     cwd=tmp_path)
    assert result.code == 0, result.stderr
    shown = run_cli(["show", str(plan), "--format", "markdown"], cwd=tmp_path)
    assert shown.code == 2
    assert "has no pull-request keys" in shown.stderr and shown.stdout == ""
