"""The trusted facts workflow: facts published as an artifact of the default branch, read by the
pull-request job through GitHub's REST API (the local fake), never from anything the pull
request supplies; stale facts shown as stale (docs/facts.md, "The trusted facts workflow")."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.action import REPO, TOKEN, Workspace, add_order_items, on_base, run_action
from support.fake_github import FakeGitHub
from support.pr import git
from support.zips import repeated_member_zip

from rivet_ci.adapters.github.artifacts import FactsArtifactError, fetch_trusted_facts
from rivet_ci.adapters.github.client import GitHubClient, GitHubNotFound, github_wire

EXAMPLE_FACTS = Path(__file__).resolve().parents[1] / "examples" / "facts.yaml"
WORKFLOW = ".github/workflows/example-facts-capture.yml"


def _facts(rows: int, captured_at: str = "2026-11-29T06:00:00Z") -> str:
    """The bundled example facts with `order_items` at `rows`: a marker of which file won."""
    data: dict[str, Any] = yaml.safe_load(EXAMPLE_FACTS.read_text(encoding="utf-8"))
    data["captured_at"] = captured_at
    data["exports"]["order_items"]["row_estimate"] = rows
    return json.dumps(data)


def _trusted(gh: FakeGitHub, ws: Workspace, text: str, *,
             created_at: str = "2026-11-29T06:05:00Z", event: str = "schedule") -> int:
    """An artifact of a run of the default branch (its commit: the base, on main)."""
    run = gh.add_workflow_run(REPO, event=event, head_branch="main", head_sha=ws.base_sha,
                              path=WORKFLOW)
    return gh.add_artifact(REPO, name="rivet-ci-facts", run_id=run,
                           files={"facts.json": text}, created_at=created_at)


def _plan_rows(ws: Workspace) -> int:
    plan = json.loads((ws.path / "plan.json").read_text(encoding="utf-8"))
    (export,) = [e for c in plan["configs"] for e in c["exports"]
                 if e["export_name"] == "order_items"]
    rows: int = export["computed"]["preflight_estimate"]
    return rows


def test_only_the_default_branch_artifact_is_used_never_one_a_pull_request_made(
        gh: FakeGitHub, ws: Workspace) -> None:
    head = add_order_items(ws)
    gh.add_pull(REPO, 7, head_sha=head)
    _trusted(gh, ws, _facts(12_000_000))
    # Newer artifacts of the same name that a pull request could have made, each refused:
    pr_run = gh.add_workflow_run(REPO, event="pull_request", head_branch="feature",
                                 head_sha=head, path=WORKFLOW)
    gh.add_artifact(REPO, name="rivet-ci-facts", run_id=pr_run,
                    files={"facts.json": _facts(1)}, created_at="2026-11-29T09:00:00Z")
    fork_run = gh.add_workflow_run(REPO, event="push", head_branch="main", head_sha=head,
                                   head_repo="contributor/warehouse", path=WORKFLOW)
    gh.add_artifact(REPO, name="rivet-ci-facts", run_id=fork_run,
                    files={"facts.json": _facts(2)}, created_at="2026-11-29T10:00:00Z")
    failed = gh.add_workflow_run(REPO, event="schedule", head_branch="main", head_sha="b" * 40,
                                 path=WORKFLOW, conclusion="failure")
    gh.add_artifact(REPO, name="rivet-ci-facts", run_id=failed,
                    files={"facts.json": _facts(3)}, created_at="2026-11-29T11:00:00Z")
    other = gh.add_workflow_run(REPO, event="workflow_dispatch", head_branch="main",
                                head_sha="c" * 40, path=".github/workflows/other.yml")
    gh.add_artifact(REPO, name="rivet-ci-facts", run_id=other,
                    files={"facts.json": _facts(4)}, created_at="2026-11-29T11:30:00Z")
    # ... and a facts file the pull request commits, which the artifact input ignores.
    head = ws.repo.commit("PR facts", {"facts.yaml": _facts(5)})
    gh.set_head(REPO, 7, head)

    result, _ = run_action(gh, ws, head, facts="", facts_artifact="rivet-ci-facts",
                           facts_workflow=WORKFLOW)

    assert result.code == 0, result.stdout + result.stderr
    assert _plan_rows(ws) == 12_000_000  # the trusted artifact's, no other
    for reason in ("'pull_request'", "contributor/warehouse", "concluded 'failure'",
                   "other.yml"):
        assert reason in result.stdout, reason
    # The archive came from the storage URL GitHub redirected to, without the token.
    (blob,) = gh.blob_requests()
    assert "authorization" not in blob.headers
    (comment,) = gh.comments(REPO, 7)
    assert "artifact rivet-ci-facts" in comment["body"]
    assert "stale" not in comment["body"]


def test_stale_facts_are_shown_as_stale(gh: FakeGitHub, ws: Workspace) -> None:
    head = add_order_items(ws)
    gh.add_pull(REPO, 7, head_sha=head)
    _trusted(gh, ws, _facts(12_000_000, captured_at="2026-11-19T06:00:00Z"))

    result, _ = run_action(gh, ws, head, facts="", facts_artifact="rivet-ci-facts",
                           facts_max_age="7d")

    assert result.code == 0, result.stdout + result.stderr
    (comment,) = gh.comments(REPO, 7)
    assert "captured 10 days ago — ⚠️ stale (older than 7 days)" in comment["body"]
    assert "::warning title=rivet-ci facts::" in result.stdout
    # Within the age: not stale.
    again, _ = run_action(gh, ws, head, facts="", facts_artifact="rivet-ci-facts",
                          facts_max_age="14d")
    assert again.code == 0
    (comment,) = gh.comments(REPO, 7)
    assert "stale" not in comment["body"]


def test_no_trusted_artifact_is_a_setup_error(gh: FakeGitHub, ws: Workspace) -> None:
    head = add_order_items(ws)
    gh.add_pull(REPO, 7, head_sha=head)
    pr_run = gh.add_workflow_run(REPO, event="pull_request_target", head_branch="main",
                                 head_sha=head)
    gh.add_artifact(REPO, name="rivet-ci-facts", run_id=pr_run,
                    files={"facts.json": _facts(1)})

    result, _ = run_action(gh, ws, head, facts="", facts_artifact="rivet-ci-facts")

    assert result.code == 2
    assert "no trusted facts artifact named 'rivet-ci-facts' on main" in result.stderr
    assert "pull_request_target" in result.stderr
    assert not (ws.path / "plan.json").exists()


def test_the_client_pages_through_artifacts_and_refuses_expired_ones(
        gh: FakeGitHub, ws: Workspace) -> None:
    gh.add_repository(REPO, ws.path)
    client = GitHubClient(github_wire(api_url=gh.url,
                                      token="ghs_ActionsJobToken0123456789abcdefABCD"))
    for i in range(120):  # two pages of 100
        run = gh.add_workflow_run(REPO, event="pull_request", head_branch=f"b{i}",
                                  head_sha="d" * 40)
        gh.add_artifact(REPO, name="other", run_id=run, files={"x": "y"})
    good = _trusted(gh, ws, _facts(7), created_at="2026-11-20T00:00:00Z")
    gh.add_artifact(REPO, name="rivet-ci-facts", expired=True, files={"f.json": _facts(8)},
                    run_id=gh.add_workflow_run(REPO, event="schedule", head_branch="main",
                                               head_sha="e" * 40),
                    created_at="2026-11-28T00:00:00Z")
    assert len(client.list_artifacts(REPO, name="other")) == 120
    found = fetch_trusted_facts(client, repo=REPO, name="rivet-ci-facts", default_branch="main")
    assert found.artifact_id == good and "expired" in found.skipped[0]
    assert '"row_estimate": 7' in found.text.replace("7,", "7 ,").replace(" ,", ",")
    gh.add_artifact(REPO, name="two", run_id=gh.add_workflow_run(
        REPO, event="schedule", head_branch="main", head_sha=ws.base_sha),
        files={"a.json": _facts(1), "b.json": _facts(2)})
    try:
        fetch_trusted_facts(client, repo=REPO, name="two", default_branch="main")
    except FactsArtifactError as exc:
        assert "2 facts documents" in str(exc)
    else:
        raise AssertionError("two facts documents must be refused")


def _rivet_artifact(name: str, rows: int) -> str:
    """An artifact in rivet 0.32.2's one-file-per-export shape (the keys the binary writes)."""
    return json.dumps({
        "rivet_version": "0.32.2", "plan_id": "p", "created_at": "2026-11-29T05:00:00.123456789Z",
        "expires_at": "2026-11-30T05:00:00Z", "export_name": name, "strategy": "chunked",
        "plan_fingerprint": "f", "integrity": "i",
        "resolved_plan": {"strategy": {"Chunked": {"column": "id", "chunk_size": 500000}}},
        "computed": {"chunk_ranges": [[1, 500000], [500001, rows]], "chunk_count": 2,
                     "cursor_snapshot": None, "row_estimate": rows},
        "diagnostics": {"verdict": "ACCEPTABLE", "warnings": [], "recommended_profile": "safe"},
        "prioritization": {}, "config_path": "rivet/replica_a.yaml"})


def test_a_directory_of_rivet_artifacts_is_read_from_the_base_revision(
        gh: FakeGitHub, ws: Workspace) -> None:
    from support.action import on_base

    on_base(ws, {"artifacts/out.order_items.json": _rivet_artifact("order_items", 900_000)})
    head = add_order_items(ws)
    # The pull request rewrites the artifact: reported, never used.
    head = ws.repo.commit("PR artifacts", {
        "artifacts/out.order_items.json": _rivet_artifact("order_items", 5)})
    gh.add_pull(REPO, 7, head_sha=head)

    result, _ = run_action(gh, ws, head, facts="artifacts", fail_on="config-error")

    assert result.code == 0, result.stdout + result.stderr
    assert _plan_rows(ws) == 900_000  # the base revision's artifact, not the PR's
    plan = json.loads((ws.path / "plan.json").read_text(encoding="utf-8"))
    changed = [f for f in plan["diff"]["findings"] if f["kind"] == "facts-changed-in-pr"]
    assert [(f["file"], f["status"]) for f in changed] == [("artifacts", "new")]


def test_a_storage_host_that_never_answers_ends_the_run_at_the_runs_deadline(
        gh: FakeGitHub, ws: Workspace) -> None:
    """The archive download is redirected to a storage host; the run's deadline
    (`github-timeout`) covers it as it covers GitHub: a host that accepts the connection and
    never answers ends the run with a clear error (without the deadline, only the socket's
    inactivity timeout would end it; a host dripping bytes, never)."""
    head = add_order_items(ws)
    gh.add_pull(REPO, 7, head_sha=head)
    _trusted(gh, ws, _facts(12_000_000))
    gh.silence_storage()

    result, _ = run_action(gh, ws, head, facts="", facts_artifact="rivet-ci-facts",
                           github_timeout="3")

    assert result.code == 2, result.stdout + result.stderr
    assert "facts-artifact: GitHub GET /repos/acme/warehouse/actions/artifacts/" in result.stderr
    assert "cannot download the artifact from localhost" in result.stderr
    assert "(the run's deadline)" in result.stderr
    assert "github-timeout (3 s)" in result.stderr
    assert gh.storage_connections == 1, result.stderr  # reached, held, and cut off once
    assert not (ws.path / "plan.json").exists()


def test_an_artifact_inflating_past_the_archive_bound_is_a_setup_error(
        gh: FakeGitHub, ws: Workspace) -> None:
    """300 members of 1 MiB each beside the facts file: a third of a megabyte to download,
    300 MiB inflated, each member far within the old per-member bound (256 MB)."""
    head = add_order_items(ws)
    gh.add_pull(REPO, 7, head_sha=head)
    run = gh.add_workflow_run(REPO, event="schedule", head_branch="main",
                              head_sha=ws.base_sha, path=WORKFLOW)
    gh.add_artifact(REPO, name="rivet-ci-facts", run_id=run, archive=repeated_member_zip(
        b"\0" * 1024 * 1024, 300, extra={"facts.json": _facts(12_000_000).encode()}))

    result, _ = run_action(gh, ws, head, facts="", facts_artifact="rivet-ci-facts")

    assert result.code == 2, result.stdout + result.stderr
    assert ("facts-artifact: artifact 1000002 inflates to more than 268,435,456 bytes, the "
            "bound on a facts archive") in result.stderr
    assert not (ws.path / "plan.json").exists()


# --- a trusted run is a commit on the default branch ------------------------------------------


def _off_main(ws: Workspace, branch: str, parent: str) -> str:
    """A commit on a branch of its own from `parent`, never merged into main: it changes the
    capture workflow, as a tag's own copy of it may."""
    git(ws.path, "checkout", "-q", "-b", branch, parent)
    sha = ws.repo.commit(f"work on {branch}", {WORKFLOW: f"# {branch}'s own copy\n"})
    git(ws.path, "checkout", "-q", "feature")
    return sha


def _untrusted_run(gh: FakeGitHub, sha: str, *, event: str = "push") -> tuple[int, int]:
    """A run GitHub reports on `main` (as it reports the run of a tag named `main`), and its
    newer artifact holding facts of 1 row."""
    run = gh.add_workflow_run(REPO, event=event, head_branch="main", head_sha=sha,
                              path=WORKFLOW)
    artifact = gh.add_artifact(REPO, name="rivet-ci-facts", run_id=run,
                               files={"facts.json": _facts(1)}, created_at="2026-11-29T09:00:00Z")
    return run, artifact


@pytest.mark.parametrize("event", ["push", "workflow_dispatch"])
def test_a_tag_named_like_the_default_branch_cannot_supply_facts(
        gh: FakeGitHub, ws: Workspace, event: str) -> None:
    """Whoever may push a tag (not to main) tags a commit of their own `main`: GitHub reports
    the pushed tag's run, and a manual run dispatched on the tag, with `head_branch: main`, and
    it runs the tag's own copy of the capture workflow. Its commit is not on main: refused,
    with a warning naming the run; the default branch's own (older) artifact is used."""
    head = add_order_items(ws)
    gh.add_pull(REPO, 7, head_sha=head)
    _trusted(gh, ws, _facts(12_000_000))
    tagged = _off_main(ws, "tag-work", ws.base_sha)
    git(ws.path, "tag", "main", tagged)
    run, artifact = _untrusted_run(gh, tagged, event=event)

    result, _ = run_action(gh, ws, head, facts="", facts_artifact="rivet-ci-facts",
                           facts_workflow=WORKFLOW)

    assert result.code == 0, result.stdout + result.stderr
    assert _plan_rows(ws) == 12_000_000  # the default branch's artifact, not the tag's
    assert (f"::warning title=rivet-ci facts::not used: artifact {artifact} of run {run}: its "
            f"commit {tagged[:12]} is not on the default branch main (compared with main at "
            f"{ws.base_sha[:12]}: behind)") in result.stdout
    # The branch was read as a branch, and the run's commit compared with its head by sha:
    # never by the name `main`, which git (and so, perhaps, GitHub) resolves to the tag.
    paths = [r.path for r in gh.requests]
    assert "/repos/acme/warehouse/branches/main" in paths
    assert f"/repos/acme/warehouse/compare/{tagged}...{ws.base_sha}" in paths


@pytest.mark.parametrize("moves", [0, 2])
def test_a_run_of_a_commit_of_the_default_branch_is_trusted(
        gh: FakeGitHub, ws: Workspace, moves: int) -> None:
    """The capture ran at main's head (`identical`), or main has moved on since (`ahead`)."""
    head = add_order_items(ws)
    gh.add_pull(REPO, 7, head_sha=head)
    _trusted(gh, ws, _facts(12_000_000))
    for n in range(moves):
        on_base(ws, {f"notes-{n}.md": "main moves on\n"})

    result, _ = run_action(gh, ws, head, facts="", facts_artifact="rivet-ci-facts")

    assert result.code == 0, result.stdout + result.stderr
    assert _plan_rows(ws) == 12_000_000
    assert "not used" not in result.stdout


@pytest.mark.parametrize("status", ["behind", "diverged"])
def test_a_run_whose_commit_is_not_on_the_default_branch_is_refused(
        gh: FakeGitHub, ws: Workspace, status: str) -> None:
    """`behind`: a commit on top of main that main does not have (a tag on unmerged work);
    `diverged`: a commit off an older main (a push to main that was force-pushed away)."""
    head = add_order_items(ws)
    gh.add_pull(REPO, 7, head_sha=head)
    parent = ws.base_sha
    if status == "diverged":
        on_base(ws, {"notes.md": "main moves on\n"})
    commit = _off_main(ws, "elsewhere", parent)
    run, artifact = _untrusted_run(gh, commit)

    result, _ = run_action(gh, ws, head, facts="", facts_artifact="rivet-ci-facts")

    assert result.code == 2, result.stdout + result.stderr
    assert "no trusted facts artifact named 'rivet-ci-facts' on main" in result.stderr
    assert (f"artifact {artifact} of run {run}: its commit {commit[:12]} is not on the default "
            f"branch main (compared with main at {ws.base_sha[:12]}: {status})") in result.stderr
    assert not (ws.path / "plan.json").exists()


def test_the_fake_compares_commits_as_github_documents(gh: FakeGitHub, ws: Workspace) -> None:
    """The fake's branches and compare endpoints are git's answers (what the tests above
    rely on): the four statuses, a branch read as a branch, 404 for an unknown commit."""
    gh.add_repository(REPO, ws.path)
    client = GitHubClient(github_wire(api_url=gh.url, token=TOKEN))
    base = ws.base_sha
    head = add_order_items(ws)
    assert client.compare_status(REPO, base, base) == "identical"
    assert client.compare_status(REPO, base, head) == "ahead"
    assert client.compare_status(REPO, head, base) == "behind"
    on_base(ws, {"notes.md": "main moves on\n"})
    assert client.compare_status(REPO, head, ws.base_sha) == "diverged"
    git(ws.path, "tag", "main", head)
    assert client.branch_head(REPO, "main") == ws.base_sha  # the branch, not the tag
    with pytest.raises(GitHubNotFound):
        client.compare_status(REPO, "0" * 40, base)
    with pytest.raises(GitHubNotFound, match="Branch not found"):
        client.branch_head(REPO, "no-such-branch")
    # The numbers, and the commits oldest first, as `git log base..head` lists them.
    request = urllib.request.Request(f"{gh.url}/repos/{REPO}/compare/{base}...{head}",
                                     headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request) as answer:
        compared = json.loads(answer.read())
    assert (compared["status"], compared["ahead_by"], compared["behind_by"]) == ("ahead", 1, 0)
    assert [c["sha"] for c in compared["commits"]] == [head]
    assert compared["merge_base_commit"]["sha"] == base
    assert [f["filename"] for f in compared["files"]] == ["rivet/replica_a.yaml"]
