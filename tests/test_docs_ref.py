"""The comment's links to rivet-ci's docs point at a ref that exists: the ref the workflow runs
the action from, else the running version's tag once released, else the default branch."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.action import REPO, Workspace, add_order_items, run_action
from support.fake_github import FakeGitHub

from rivet_ci import __version__
from rivet_ci.review import comment
from rivet_ci.review.comment import RELEASED_VERSIONS, docs_ref, rules_url

ROOT = Path(__file__).resolve().parent.parent
SHA = "0123456789abcdef0123456789abcdef01234567"


def test_an_unreleased_version_links_the_default_branch_and_a_released_one_its_tag(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert docs_ref(version="9.9.9") == "main"
    monkeypatch.setattr(comment, "RELEASED_VERSIONS", frozenset({"9.9.9"}))
    assert docs_ref(version="9.9.9") == "v9.9.9"
    assert rules_url("v9.9.9") == ("https://github.com/rivet-ci/rivet-ci/blob/v9.9.9/docs/"
                                   "scoring-rules.md")


def test_the_ref_the_workflow_pinned_wins_when_it_is_rivet_cis_own_and_well_formed() -> None:
    assert docs_ref("rivet-ci/rivet-ci", SHA) == SHA
    assert docs_ref("Rivet-CI/rivet-ci", "v0") == "v0"
    assert docs_ref("rivet-ci/rivet-ci", "v0.1.2") == "v0.1.2"
    fallback = docs_ref()
    for repository, ref in (("someone/fork", SHA), ("rivet-ci/rivet-ci", "feature/x"),
                            ("rivet-ci/rivet-ci", "v0)](https://evil.example"),
                            ("rivet-ci/rivet-ci", ""), (None, SHA), ("", None)):
        assert docs_ref(repository, ref) == fallback, (repository, ref)


def test_every_released_version_has_its_changelog_entry() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    for version in RELEASED_VERSIONS:
        assert f"## [{version}]" in changelog, version
    # Until this version is released, the links name the default branch, which always exists.
    if __version__ not in RELEASED_VERSIONS:
        assert docs_ref() == "main"


def test_the_actions_comment_links_the_rules_at_the_ref_the_runner_names(
        gh: FakeGitHub, ws: Workspace) -> None:
    head = add_order_items(ws)
    gh.add_pull(REPO, 7, head_sha=head)
    result, _ = run_action(gh, ws, head, env={"GITHUB_ACTION_REPOSITORY": "rivet-ci/rivet-ci",
                                              "GITHUB_ACTION_REF": SHA})
    assert result.code == 0, result.stderr
    (posted,) = gh.comments(REPO, 7)
    links = re.findall(r"https://github\.com/rivet-ci/rivet-ci/blob/([^/]+)/docs/[a-z-]+\.md",
                       posted["body"])
    assert links and set(links) == {SHA}  # every docs link (legend, reason kinds) at the ref
    # `uses: ./` (no action repository): the fallback
    result, _ = run_action(gh, ws, head, minutes=1)
    (posted,) = gh.comments(REPO, 7)
    assert set(re.findall(r"rivet-ci/rivet-ci/blob/([^/]+)/docs/", posted["body"])) == {
        docs_ref()}
