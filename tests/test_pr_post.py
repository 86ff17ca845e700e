"""`rivet-ci post`, the fork-safe workflow_run half, against the local fake GitHub.

The command gets its environment only from the Context (these tests never set os.environ), reads
the run's plan.json as data, renders the comment itself with the trusted template, and finds the
pull request from the triggering run. A comment file a run wrote is never posted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.fake_github import FakeGitHub
from support.generated.goldens import example_repo
from support.pr import Result, run_cli

from rivet_ci.core.comment.marker import parse_marker

REPO = "acme/warehouse"
PR = 7
TOKEN = "ghs_WorkflowRunToken0123456789abcdefABCD"
READ_ONLY = "ghs_ReadOnlyToken0123456789abcdefABCDEF"
BOT = "github-actions[bot]"
HEAD = "a" * 40
STAMP = "2026-11-29T12:00:00Z"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.add_token(TOKEN, login=BOT, can_read_user=False)
        fake.add_token(READ_ONLY, login=BOT, can_read_user=False, can_write=False)
        fake.add_pull(REPO, PR, head_sha=HEAD, head_ref="add-orders",
                      head_repo="contributor/warehouse")
        fake.add_pull(REPO, 8, head_sha="b" * 40, head_ref="other")
        yield fake
        assert fake.crashes == []


@pytest.fixture(scope="module")
def review_plan(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A pull request's plan.json (`rivet-ci diff --output` on the bundled example with
    `order_items` added), as data: each test writes it with the head it needs."""
    repo = example_repo(tmp_path_factory.mktemp("post") / "repo")
    from support.generated.goldens import realistic_pr

    realistic_pr(repo)
    out = repo.path / "plan.json"
    result = run_cli(["diff", "--base", "main", "--repo", str(repo.path), "--facts",
                      "facts.yaml", "--output", str(out), "--fail-on", "config-error"],
                     cwd=repo.path)
    assert result.code in (0, 1), result.stderr
    document: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return document


def plan_file(tmp_path: Path, document: dict[str, Any], *, head: str = HEAD,
              name: str = "plan.json") -> Path:
    """`document` with `head` as its pull request's head, written to `tmp_path/name`."""
    data = json.loads(json.dumps(document))
    data["pull_request"]["head_sha"] = head
    data["generated_at"] = STAMP
    path = tmp_path / "rivet-ci-plan" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def workflow_run_event(tmp_path: Path, *, run_id: int = 99,
                       pulls: list[tuple[int, str]] | None = None, head_sha: str = HEAD,
                       head_repo: str = "contributor/warehouse",
                       head_branch: str = "add-orders") -> Path:
    """A `workflow_run` (completed) payload; `pull_requests` is empty for fork PRs."""
    payload: dict[str, Any] = {
        "action": "completed",
        "workflow_run": {
            "id": run_id, "name": "rivet-ci plan (fork-safe example)", "event": "pull_request",
            "status": "completed", "conclusion": "failure",
            "head_branch": head_branch, "head_sha": head_sha,
            "head_repository": {"full_name": head_repo,
                                "owner": {"login": head_repo.partition("/")[0]}},
            "repository": {"full_name": REPO, "owner": {"login": "acme"}},
            "pull_requests": [
                {"number": n, "head": {"sha": head_sha},
                 "base": {"ref": "main", "repo": {"url": f"https://api.github.com/repos/{base}"}}}
                for n, base in pulls or []],
        },
        "repository": {"full_name": REPO},
    }
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def post(gh: FakeGitHub, tmp_path: Path, *args: str, token: str | None = TOKEN,
         event: Path | None = None, repo: str | None = REPO) -> Result:
    environ = {"GITHUB_API_URL": gh.url, "GITHUB_EVENT_NAME": "workflow_run"}
    if token is not None:
        environ["GITHUB_TOKEN"] = token
    if repo is not None:
        environ["GITHUB_REPOSITORY"] = repo
    if event is not None:
        environ["GITHUB_EVENT_PATH"] = str(event)
    return run_cli(["post", *args], cwd=tmp_path, environ=environ)


def test_posts_to_the_given_pull_request_and_a_repost_changes_nothing(
        gh: FakeGitHub, tmp_path: Path, review_plan: dict[str, Any]) -> None:
    plan_file(tmp_path, review_plan)
    # Relative to the Context's working directory, as in a workflow step.
    result = post(gh, tmp_path, "--plan", "rivet-ci-plan/plan.json", "--pr", "7")
    assert result.code == 0, result.stderr
    (comment,) = gh.comments(REPO, PR)
    marker = parse_marker(comment["body"])
    assert marker is not None and (marker.gate_id, marker.head_sha, marker.timestamp) == (
        "default", HEAD, STAMP)
    assert "**❌ gate failed (1 blocking finding)" in comment["body"]  # the document's gate
    assert "🔒 runs alone on `replica_a`" in comment["body"]
    assert comment["login"] == BOT
    assert "pull request #7: comment created" in result.stdout
    assert f"#issuecomment-{comment['id']}" in result.stdout

    again = post(gh, tmp_path, "--plan", "rivet-ci-plan/plan.json", "--pr", "7")
    assert again.code == 0 and "already up to date" in again.stdout
    assert gh.requests_for("PATCH") == [] and len(gh.requests_for("POST")) == 1


def test_a_later_run_updates_the_same_comment(gh: FakeGitHub, tmp_path: Path,
                                              review_plan: dict[str, Any]) -> None:
    post(gh, tmp_path, "--plan", str(plan_file(tmp_path, review_plan)), "--pr", "7")
    newer = "c" * 40
    gh.set_head(REPO, PR, newer)
    result = post(gh, tmp_path, "--plan", str(plan_file(tmp_path, review_plan, head=newer)),
                  "--pr", "7")
    assert result.code == 0, result.stderr
    (comment,) = gh.comments(REPO, PR)
    marker = parse_marker(comment["body"])
    assert marker is not None and marker.head_sha == newer


def test_the_pull_request_comes_from_the_workflow_run_payload(
        gh: FakeGitHub, tmp_path: Path, review_plan: dict[str, Any]) -> None:
    # Same-repository PRs are listed in workflow_run.pull_requests.
    # Listed first: a pull request of another repository from the same branch.
    event = workflow_run_event(tmp_path, pulls=[(3, "upstream/warehouse"), (8, REPO)],
                               head_sha="b" * 40, head_repo=REPO, head_branch="other")
    path = plan_file(tmp_path, review_plan, head="b" * 40)
    result = post(gh, tmp_path, "--plan", str(path), "--run-id", "99", event=event)
    assert result.code == 0, result.stderr
    (comment,) = gh.comments(REPO, 8)
    assert gh.comments(REPO, PR) == []
    # The run's own page: where its job summary is (as the action links it).
    assert "(https://github.com/acme/warehouse/actions/runs/99)" in comment["body"]


def test_a_fork_pull_request_is_found_by_its_head_branch(
        gh: FakeGitHub, tmp_path: Path, review_plan: dict[str, Any]) -> None:
    event = workflow_run_event(tmp_path, pulls=[])  # empty for forks
    result = post(gh, tmp_path, "--plan", str(plan_file(tmp_path, review_plan)), "--run-id",
                  "99", event=event)
    assert result.code == 0, result.stderr
    assert len(gh.comments(REPO, PR)) == 1
    lookups = [r for r in gh.requests if r.path == f"/repos/{REPO}/pulls"]
    assert lookups and lookups[0].query["head"] == "contributor:add-orders"


def test_no_open_pull_request_is_not_an_error(gh: FakeGitHub, tmp_path: Path,
                                              review_plan: dict[str, Any]) -> None:
    event = workflow_run_event(tmp_path, pulls=[], head_sha="d" * 40)
    gh.add_pull(REPO, PR, head_sha=HEAD, head_ref="add-orders",
                head_repo="contributor/warehouse", state="closed")
    result = post(gh, tmp_path, "--plan", str(plan_file(tmp_path, review_plan, head="d" * 40)),
                  event=event)
    assert result.code == 0, result.stderr
    assert "nothing posted" in result.stdout
    assert gh.requests_for("POST") == []


def test_a_listed_pull_request_closed_meanwhile_gets_no_comment(
        gh: FakeGitHub, tmp_path: Path, review_plan: dict[str, Any]) -> None:
    # workflow_run.pull_requests is what GitHub knew when the run started; the PR is looked up.
    gh.add_pull(REPO, 8, head_sha="b" * 40, head_ref="add-orders", state="closed")
    gh.add_pull(REPO, PR, head_sha=HEAD, head_ref="add-orders",
                head_repo="contributor/warehouse", state="closed")
    event = workflow_run_event(tmp_path, pulls=[(8, REPO)], head_sha="b" * 40)
    path = plan_file(tmp_path, review_plan, head="b" * 40)
    result = post(gh, tmp_path, "--plan", str(path), "--run-id", "99", event=event)
    assert result.code == 0, result.stderr
    assert "nothing posted" in result.stdout
    assert gh.requests_for("POST") == [] and gh.comments(REPO, 8) == []


def test_a_malformed_workflow_run_event_is_a_usage_error(
        gh: FakeGitHub, tmp_path: Path, review_plan: dict[str, Any]) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"workflow_run": {"id": 99, "pull_requests": "x"}}),
                     encoding="utf-8")
    result = post(gh, tmp_path, "--plan", str(plan_file(tmp_path, review_plan)), "--run-id",
                  "99", event=event)
    assert result.code == 2
    assert "workflow_run event is malformed" in result.stderr and "--pr" in result.stderr


def test_recreate_moves_the_comment_to_the_bottom(gh: FakeGitHub, tmp_path: Path,
                                                  review_plan: dict[str, Any]) -> None:
    path = plan_file(tmp_path, review_plan)
    post(gh, tmp_path, "--plan", str(path), "--pr", "7")
    first = gh.comments(REPO, PR)[0]["id"]
    gh.add_comment(REPO, PR, "LGTM", login="reviewer")
    result = post(gh, tmp_path, "--plan", str(path), "--pr", "7", "--comment", "recreate")
    assert result.code == 0, result.stderr
    comments = gh.comments(REPO, PR)
    assert [c["login"] for c in comments] == ["reviewer", BOT]
    assert comments[1]["id"] != first


def test_the_gate_id_and_the_comment_inputs_shape_the_comment(
        gh: FakeGitHub, tmp_path: Path, review_plan: dict[str, Any]) -> None:
    path = plan_file(tmp_path, review_plan)
    result = post(gh, tmp_path, "--plan", str(path), "--pr", "7", "--id", "warehouse",
                  "--facts-max-age", "1h", "--docs-ref", "c" * 40)
    assert result.code == 0, result.stderr
    (comment,) = gh.comments(REPO, PR)
    marker = parse_marker(comment["body"])
    assert marker is not None and marker.gate_id == "warehouse"
    assert "⚠️ stale (older than 1 h)" in comment["body"]  # the facts' age when it was planned
    assert f"/blob/{'c' * 40}/docs/scoring-rules.md" in comment["body"]


def test_a_template_dir_of_the_trusted_workflow_renders_the_comment(
        gh: FakeGitHub, tmp_path: Path, review_plan: dict[str, Any]) -> None:
    templates = tmp_path / "templates"  # the trusted workflow's own (its default branch)
    templates.mkdir()
    (templates / "comment.md.j2").write_text(
        '{% extends "base/comment.md.j2" %}{% block footer %}\n\n_Ask in #data._{% endblock %}',
        encoding="utf-8")
    result = post(gh, tmp_path, "--plan", str(plan_file(tmp_path, review_plan)), "--pr", "7",
                  "--template-dir", "templates")
    assert result.code == 0, result.stderr
    (comment,) = gh.comments(REPO, PR)
    assert comment["body"].endswith("\n\n_Ask in #data._\n")  # its footer
    assert "🔒 runs alone on `replica_a`" in comment["body"]  # every other block inherited


# -- refusals: exit 2, nothing posted ------------------------------------------------------------


def refused(gh: FakeGitHub, result: Result, *needles: str) -> None:
    assert result.code == 2, (result.stdout, result.stderr)
    assert result.stderr.startswith("rivet-ci: error: ")
    for needle in needles:
        assert needle in result.stderr
    assert [r.method for r in gh.requests if r.method != "GET"] == []
    assert TOKEN not in result.stderr


def test_a_comment_file_is_never_posted(gh: FakeGitHub, tmp_path: Path) -> None:
    forged = tmp_path / "comment.md"
    forged.write_text("<!-- rivet-ci:comment id=default head=" + HEAD + " at=" + STAMP
                      + " -->\n**✅ gate passed** @org ![x](https://evil.example/x.png)\n",
                      encoding="utf-8")
    refused(gh, post(gh, tmp_path, "--comment-file", str(forged), "--pr", "7"),
            "--comment-file is gone", "--plan")
    assert gh.requests == []


@pytest.mark.parametrize(("edit", "needles"), [
    (lambda d: d["diff"]["exports"][0].update(status="moved"),
     ("not a valid rivet-ci-plan/1 document", "diff.exports[0].status")),
    (lambda d: d["pull_request"].update(head_sha="a" * 39 + "g"),
     ("not a valid plan document of a pull request", "pull_request.head_sha: not a full "
                                                     "commit sha")),
    (lambda d: d.update(generated_at="yesterday"),
     ("generated_at: not a UTC time",)),
    (lambda d: d["facts"].update(captured_at="2026-13-40"),
     ("facts.captured_at: not a time",)),
    (lambda d: d["diff"]["exports"][0].update(base=None, head=None),
     ("diff.exports[0]: a ",)),
    (lambda d: d.pop("diff"), ("has no pull-request keys", "`diff` is missing")),
    (lambda d: d["diff"]["gate"].pop("passed"), ("diff.gate.passed: Field required",)),
    (lambda d: d["diff"]["exports"][0].update(export_name=["not", "text"]),
     ("diff.exports[0].export_name",)),
])
def test_a_plan_that_is_not_valid_is_refused_naming_the_field(
        gh: FakeGitHub, tmp_path: Path, review_plan: dict[str, Any],
        edit: Any, needles: tuple[str, ...]) -> None:
    data = json.loads(json.dumps(review_plan))
    edit(data)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    refused(gh, post(gh, tmp_path, "--plan", str(path), "--pr", "7"), str(path), *needles)
    assert gh.requests == []


def test_a_file_that_is_not_a_plan_is_refused(gh: FakeGitHub, tmp_path: Path) -> None:
    refused(gh, post(gh, tmp_path, "--plan", "nope.json", "--pr", "7"),
            "cannot read the plan nope.json")
    for name, data in (("binary.json", b"\xff\xfe\x00rivet"), ("text.json", b"## a comment"),
                       ("deep.json", b"[" * 100_000)):
        (tmp_path / name).write_bytes(data)
        refused(gh, post(gh, tmp_path, "--plan", name, "--pr", "7"), name)
    refused(gh, post(gh, tmp_path, "--pr", "7"), "pass --plan")


def test_a_plan_for_another_commit_than_the_run_built_is_refused(
        gh: FakeGitHub, tmp_path: Path, review_plan: dict[str, Any]) -> None:
    event = workflow_run_event(tmp_path, pulls=[])
    forged = plan_file(tmp_path, review_plan, head="e" * 40)  # a fork may upload anything
    refused(gh, post(gh, tmp_path, "--plan", str(forged), "--run-id", "99", event=event),
            "plan of commit eeeeeeeeeeee", "aaaaaaaaaaaa")


def test_a_run_id_that_is_not_the_triggering_run_is_refused(
        gh: FakeGitHub, tmp_path: Path, review_plan: dict[str, Any]) -> None:
    event = workflow_run_event(tmp_path, run_id=99)
    refused(gh, post(gh, tmp_path, "--plan", str(plan_file(tmp_path, review_plan)), "--run-id",
                     "100", event=event), "--run-id 100 is not the run")


def test_without_pr_or_workflow_run_event_it_says_what_to_pass(
        gh: FakeGitHub, tmp_path: Path, review_plan: dict[str, Any]) -> None:
    refused(gh, post(gh, tmp_path, "--plan", str(plan_file(tmp_path, review_plan))),
            "pass --pr N")


@pytest.mark.parametrize(
    ("setup", "needle"),
    [(({"token": None}, ()), "GITHUB_TOKEN is not set"),
     (({"repo": None}, ()), "--repo OWNER/NAME"),
     (({"repo": "not a repo"}, ()), "owner/name"),
     (({}, ("--facts-max-age", "7 days")), "--facts-max-age '7 days'"),
     (({}, ("--docs-ref", "main")), "--docs-ref 'main'"),
     (({}, ("--id", "no spaces")), "gate id 'no spaces'")],
)
def test_missing_setup_is_a_usage_error(gh: FakeGitHub, tmp_path: Path,
                                        review_plan: dict[str, Any],
                                        setup: tuple[dict[str, Any], tuple[str, ...]],
                                        needle: str) -> None:
    kwargs, args = setup
    path = plan_file(tmp_path, review_plan)
    refused(gh, post(gh, tmp_path, "--plan", str(path), "--pr", "7", *args, **kwargs), needle)


def test_repo_flag_overrides_the_environment(gh: FakeGitHub, tmp_path: Path,
                                             review_plan: dict[str, Any]) -> None:
    path = plan_file(tmp_path, review_plan)
    result = post(gh, tmp_path, "--plan", str(path), "--pr", "7", "--repo", REPO,
                  repo="someone/else")
    assert result.code == 0, result.stderr
    assert len(gh.comments(REPO, PR)) == 1


def test_a_read_only_token_is_a_setup_error(gh: FakeGitHub, tmp_path: Path,
                                            review_plan: dict[str, Any]) -> None:
    result = post(gh, tmp_path, "--plan", str(plan_file(tmp_path, review_plan)), "--pr", "7",
                  token=READ_ONLY)
    assert result.code == 2
    assert "may not comment" in result.stderr and "pull-requests: write" in result.stderr
    assert gh.comments(REPO, PR) == []


def test_pr_and_run_id_are_exclusive(gh: FakeGitHub, tmp_path: Path) -> None:
    result = post(gh, tmp_path, "--plan", "x", "--pr", "7", "--run-id", "1")
    assert result.code == 2  # argparse prints the usage itself
    assert gh.requests == []
