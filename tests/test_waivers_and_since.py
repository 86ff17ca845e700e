"""Waivers (accept one finding without switching the gate off) and "since your last push"
(what changed between two pushes of a PR). Real git repositories; the action against the local
fake GitHub. Issue 12, *Why*: "Nothing any comparable tool offers ... tells a reviewer what
changed since the last push ... or lets a team accept a known finding".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from support.fake_github import FakeGitHub
from support.pr import NOW, Repo, Result, git, run_cli

from rivet_ci.core.comment.since import make_digest, read_digest, since_last_push
from rivet_ci.core.gate.diff import Finding, PlanDiff
from rivet_ci.core.gate.waivers import (
    Waiver,
    apply_waivers,
    file_waivers,
    inline_waivers,
    score_bucket,
)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
REPO = "acme/warehouse"
PR = 9
TOKEN = "ghs_ActionsJobToken0123456789abcdefABCD"
BOT = "github-actions[bot]"


def example_configs() -> tuple[str, str, str]:
    """replica_a.yaml with `orders` and `events` only, `order_items`' text, replica_b.yaml.

    Without `customers` the base's `replica_a` has two members, one heavy: no warning, so
    (rivet 0.32.2) nobody runs alone; adding the heavy `order_items` makes `events` and
    `order_items` both run alone — the new isolations these tests waive."""
    a = (EXAMPLES / "pipelines" / "replica_a.yaml").read_text(encoding="utf-8")
    start, end = a.index("  - name: order_items"), a.index("  - name: customers")
    b = (EXAMPLES / "pipelines" / "replica_b.yaml").read_text(encoding="utf-8")
    return a[:start], a[start:end], b


def with_comment(text: str, name: str, comment: str) -> str:
    line = f"  - name: {name}\n"
    assert line in text
    return text.replace(line, f"  - name: {name}  {comment}\n")


def make_repo(tmp_path: Path, replica_a: str, extra: dict[str, str] | None = None) -> Repo:
    _, _, replica_b = example_configs()
    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {
        "rivet/replica_a.yaml": replica_a, "rivet/replica_b.yaml": replica_b,
        "facts.yaml": (EXAMPLES / "facts.yaml").read_text(encoding="utf-8"), **(extra or {})})
    repo.checkout("feature", new=True)
    return repo


def diff(repo: Repo, *args: str) -> Result:
    return run_cli(["diff", "--base", "main", "--repo", str(repo.path), "--facts",
                    str(repo.path / "facts.yaml"), "--fail-on", "new-isolation", *args],
                   cwd=repo.path)


ALLOW_EVENTS = ("# rivet-ci: allow new-isolation group=replica_a score=20-29 -- events is "
                "paused until Q3 (data-platform)")


# -- waivers --------------------------------------------------------------------------------------


def test_a_waiver_on_the_base_branch_accepts_exactly_its_finding(tmp_path: Path) -> None:
    replica_a, order_items, _ = example_configs()
    repo = make_repo(tmp_path, with_comment(replica_a, "events", ALLOW_EVENTS))
    repo.commit("add order_items",
                {"rivet/replica_a.yaml": with_comment(replica_a, "events", ALLOW_EVENTS)
                 + order_items})
    result = diff(repo)
    body = result.stdout
    assert result.code == 1  # order_items still blocks: the waiver names events only
    blocking = body[body.index("**Blocking**"):body.index("**Waivers**")]
    assert "`order_items`" in blocking and "`events`" not in blocking
    assert ("✔️ waived: `events` `new-isolation group=replica_a score=20-29` — “events is "
            "paused until Q3 \\(data-platform\\)”") in body.replace("(data", "\\(data").replace(
                "platform)", "platform\\)") or "✔️ waived: `events`" in body
    assert "events is paused until Q3" in body
    assert "1 finding waived" in body


def test_a_waiver_added_by_the_pr_is_reported_and_applies_only_when_allowed(
        tmp_path: Path) -> None:
    replica_a, order_items, _ = example_configs()
    repo = make_repo(tmp_path, replica_a)
    allow = "# rivet-ci: allow new-isolation group=replica_a score=20-29 -- fine"
    repo.commit("add order_items, waive both", {"rivet/replica_a.yaml": with_comment(
        replica_a, "events", allow) + with_comment(order_items, "order_items", allow)})
    blocked = diff(repo)
    assert blocked.code == 1
    assert blocked.stdout.count("📝 added by this PR (not applied, `waiver-in-pr: block`)") == 2
    allowed = diff(repo, "--waiver-in-pr", "allow")
    assert allowed.code == 0, allowed.stdout
    assert allowed.stdout.count("📝 added by this PR (applied, `waiver-in-pr: allow`)") == 2


def test_a_waiver_whose_finding_changed_no_longer_applies_and_says_so(tmp_path: Path) -> None:
    replica_a, order_items, _ = example_configs()
    stale = "# rivet-ci: allow new-isolation group=replica_a score=30-39 -- old estimate"
    repo = make_repo(tmp_path, with_comment(replica_a, "events", stale))
    repo.commit("add order_items", {"rivet/replica_a.yaml": with_comment(
        replica_a, "events", stale) + order_items})
    body = diff(repo).stdout
    assert "⚠️ no longer applies: `events` `new-isolation group=replica_a score=30-39`" in body
    assert "the finding is now `group=replica_a score=20-29`" in body
    blocking = body[body.index("**Blocking**"):body.index("**Waivers**")]
    assert "`events`" in blocking


def test_the_waivers_file_is_read_from_the_base_branch(tmp_path: Path) -> None:
    replica_a, order_items, _ = example_configs()
    waivers = {"waivers": [{"export": "order_items", "kind": "new-isolation",
                            "group": "replica_a", "score": "20-29", "reason": "backfill"}]}
    repo = make_repo(tmp_path, with_comment(replica_a, "events", ALLOW_EVENTS),
                     {".rivet-ci/waivers.yaml": json.dumps(waivers)})
    # The PR also tries to widen the file: the base version is what counts.
    widened = {"waivers": [*waivers["waivers"], {"export": "x", "kind": "wave-later",
                                                 "reason": "sneaky"}]}
    repo.commit("add order_items", {
        "rivet/replica_a.yaml": with_comment(replica_a, "events", ALLOW_EVENTS) + order_items,
        ".rivet-ci/waivers.yaml": json.dumps(widened)})
    result = diff(repo)
    assert result.code == 0, result.stdout  # both isolations accepted
    assert "✔️ waived: `order_items`" in result.stdout
    assert "this pull request changes the waivers file; the base branch" in result.stdout
    assert "sneaky" not in result.stdout


def test_waiver_parsing_reports_what_it_cannot_use() -> None:
    text = ("exports:\n  # rivet-ci: allow score-drop score=70-79 -- known\n"
            "  - name: orders\n  - name: events  # rivet-ci: allow bogus -- x\n"
            "# rivet-ci: allow wave-later -- nowhere\n")
    waivers, problems = inline_waivers("a.yaml", text, {"orders": 3, "events": 4})
    assert [(w.export_name, w.kind, w.score) for w in waivers] == [
        ("orders", "score-drop", "70-79")]
    assert len(problems) == 2
    assert any("bogus" in p.message for p in problems)
    assert any("must be on an export" in p.message for p in problems)
    _, file_problems = file_waivers("w.yaml", {"waivers": [{"kind": "new-isolation"}]})
    assert "reason" in file_problems[0].message
    assert score_bucket(25) == "20-29" and score_bucket(100) == "90-100"


def test_only_new_findings_of_waivable_kinds_are_waived() -> None:
    finding = Finding(kind="new-isolation", status="new", message="m", file="a.yaml",
                      export_name="events", source_group="g", score=25)
    old = finding.model_copy(update={"status": "pre-existing"})
    waiver = Waiver(kind="new-isolation", export_name="events", file="a.yaml", group="g",
                    score="20-29", reason="r", origin="inline", where="a.yaml:3")
    waived, notes = apply_waivers([old, finding], [waiver], allow_pr_waivers=False)
    assert [w.finding for w in waived] == [finding]
    assert notes[0].kind == "waived" and notes[0].applied


# -- since your last push: the digest -------------------------------------------------------------


def empty_diff(findings: tuple[Finding, ...] = ()) -> PlanDiff:
    return PlanDiff(exports=(), warnings=(), order_moves=(), findings=findings,
                    head_problems=())


def test_the_digest_round_trips_and_stays_within_its_bound() -> None:
    many = tuple(Finding(kind="score-drop", status="new", message=f"e{i}: x",
                         export_name=f"export_{i:05d}", file="a.yaml", score=10)
                 for i in range(5_000))
    line = make_digest("a" * 40, empty_diff(many))
    assert len(line) <= 6_000
    digest = read_digest(f"<!-- rivet-ci:comment id=default -->\n{line}\nbody")
    assert digest is not None and digest.partial_findings
    assert 0 < len(digest.findings) < 5_000
    # A cut digest never claims findings it did not record as "new since".
    since = since_last_push(digest, "b" * 40, empty_diff(many))
    assert since is not None and since.new_count == 0


@pytest.mark.parametrize("body", [
    "", "no digest here", "<!-- rivet-ci:digest v=1 data=!!!! -->",
    "<!-- rivet-ci:digest v=1 data=eJzLSM3JyQcABiwCFQ== -->",  # valid zlib, not our JSON
    "<!-- rivet-ci:digest v=2 data=abc -->",
])
def test_a_missing_or_foreign_digest_gives_nothing(body: str) -> None:
    assert since_last_push(read_digest(body), "b" * 40, empty_diff()) is None


# -- since your last push: the action across pushes -------------------------------------------


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.add_token(TOKEN, login=BOT, can_read_user=False)
        yield fake
        assert fake.crashes == []


def run_action(gh: FakeGitHub, repo: Repo, base: str, head: str, minutes: int,
               **inputs: str) -> Result:
    run_dir = repo.path.parent / f"run-{minutes}"
    run_dir.mkdir()
    event: dict[str, Any] = {"number": PR, "pull_request": {
        "number": PR, "head": {"sha": head}, "base": {"sha": base}}}
    (run_dir / "event.json").write_text(json.dumps(event), encoding="utf-8")
    environ = {
        "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(run_dir / "event.json"), "GITHUB_REPOSITORY": REPO,
        "GITHUB_WORKSPACE": str(repo.path), "GITHUB_API_URL": gh.url,
        "GITHUB_SERVER_URL": "https://github.com", "GITHUB_SHA": head,
        "GITHUB_OUTPUT": str(run_dir / "out"), "INPUT_GITHUB-TOKEN": TOKEN,
        "INPUT_FACTS": "facts.yaml", "INPUT_COMMENT": "update", "INPUT_COMMENT-WHEN": "always",
        "INPUT_ID": "default",
        "INPUT_FAIL-ON": "new-isolation", "INPUT_OUTPUT": "plan.json",
        "INPUT_CONFIGS": "rivet/**/*.yaml",
        **{f"INPUT_{k.upper()}": v for k, v in inputs.items()}}
    return run_cli(["action"], cwd=repo.path, environ=environ,
                   now=NOW + timedelta(minutes=minutes))


def test_since_your_last_push_across_pushes_and_a_force_push(gh: FakeGitHub,
                                                             tmp_path: Path) -> None:
    replica_a, order_items, _ = example_configs()
    repo = make_repo(tmp_path, replica_a)
    base = git(repo.path, "rev-parse", "main")
    first = repo.commit("add order_items", {"rivet/replica_a.yaml": replica_a + order_items})
    gh.add_pull(REPO, PR, head_sha=first)
    assert run_action(gh, repo, base, first, 1).code == 1
    (comment,) = gh.comments(REPO, PR)
    assert "Since your last push" not in comment["body"]  # nothing to compare with yet

    # Second push: order_items removed again (both isolations resolved), a wave-later added.
    second = repo.commit("drop order_items", {"rivet/replica_a.yaml": replica_a.replace(
        "cursor_column: updated_at\n    source_group: replica_a",
        "cursor_column: created_at\n    source_group: replica_a")})
    gh.set_head(REPO, PR, second)
    assert run_action(gh, repo, base, second, 2).code == 0
    (comment,) = gh.comments(REPO, PR)
    body = comment["body"].replace("\u00a0", " ")
    assert f"**Since your last push** (`{first[:7]}`): 2 new findings, 3 resolved" in body
    assert "- ✅ resolved: new-isolation\\: order\\_items" in body
    assert "- ❌ new: score-drop\\: orders" in body
    assert "- `orders`: score 76 → 22, wave 1 → 4" in body
    assert "- `events`: score 25, 🔓 no longer runs alone on `replica_a`" in body
    assert body.index("Since your last push") < body.index("| export |")

    # A re-run of the same head shows the same comparison (and edits nothing).
    patches = len(gh.requests_for("PATCH"))
    assert run_action(gh, repo, base, second, 3).code == 0
    assert len(gh.requests_for("PATCH")) == patches

    # A force-push replacing the head: the comparison is with the comment, not git history.
    git(repo.path, "reset", "-q", "--hard", "main")
    forced = repo.commit("rewritten", {"rivet/replica_a.yaml": replica_a + order_items})
    gh.set_head(REPO, PR, forced)
    assert run_action(gh, repo, base, forced, 4).code == 1
    (comment,) = gh.comments(REPO, PR)
    assert f"**Since your last push** (`{second[:7]}`): 3 new findings, 2 resolved" in (
        comment["body"])
    # Each export now running alone says so on its group, in the row's words.
    assert "- `events`: score 25, 🔒 runs alone on `replica_a`" in comment["body"]
    assert "- `order_items`: score 25, wave 4, 🔒 runs alone on `replica_a`" in comment["body"]


def test_a_foreign_comment_gives_no_since_section(gh: FakeGitHub, tmp_path: Path) -> None:
    replica_a, order_items, _ = example_configs()
    repo = make_repo(tmp_path, replica_a)
    base = git(repo.path, "rev-parse", "main")
    earlier = repo.commit("add order_items", {"rivet/replica_a.yaml": replica_a + order_items})
    # Someone else's comment quoting our marker and digest (rendered for an earlier head).
    quoted = diff(repo).stdout
    assert "rivet-ci:digest" in quoted
    gh.add_pull(REPO, PR, head_sha=earlier)
    gh.add_comment(REPO, PR, body=quoted, login="mallory")
    head = repo.commit("drop it again", {"rivet/replica_a.yaml": replica_a})
    gh.set_head(REPO, PR, head)
    assert run_action(gh, repo, base, head, 1).code == 0
    ours = [c["body"] for c in gh.comments(REPO, PR) if c["login"] == BOT]
    assert len(ours) == 1 and "Since your last push" not in ours[0]
