"""The one review pipeline (`rivet_ci.review.review_pull_request`), called directly.

`rivet-ci action` and `rivet-ci diff` are tested end to end elsewhere; here the pipeline's own
contract: the order in which it calls the I/O it is given, what it returns, and that the
comment and the plan document say the same thing as the gate.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from support.pr import Repo, chunked, config, export, heavy_facts, small_facts

from rivet_ci.adapters.git import GitRepo
from rivet_ci.adapters.github.runner import GITHUB_COMMENT_LIMIT
from rivet_ci.core.comment.marker import parse_marker
from rivet_ci.core.facts.models import FactsFile
from rivet_ci.core.gate.diff import Finding
from rivet_ci.core.gate.policy import parse_policy
from rivet_ci.core.plan.planner import FactsOrigin
from rivet_ci.output.redaction import Redactor
from rivet_ci.review import FactsSource, Report, Sides, review_pull_request
from rivet_ci.review.comment import CommentOptions

GLOBS = ("rivet/**/*.yaml",)
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
FACTS = FactsFile.model_validate({
    "format": "rivet-ci-facts/1",
    "exports": {"events": heavy_facts(), "orders": small_facts(900_000)},
})


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {"rivet/orders.yaml": config(export("orders"))})
    repo.checkout("feature", new=True)
    repo.commit("pr", {"rivet/events.yaml": config(chunked("events"))})
    return repo


def review(repo: Repo, calls: list[str], *, comment: bool = True, fail_on: tuple[str, ...] = (),
           extra: tuple[Finding, ...] = ()) -> Report:
    def on_document(report: Report) -> None:
        assert report.bodies is None  # the document comes first: nothing is rendered yet
        calls.append("document")

    def previous_body() -> str | None:
        calls.append("previous")
        return None

    def extra_findings() -> tuple[Finding, ...]:
        calls.append("extra")
        return extra

    return review_pull_request(
        Sides(GitRepo(repo.path), "main", "HEAD", GLOBS),
        FactsSource(FACTS, FactsOrigin(kind="file", path="facts.yaml", captured_at=NOW)),
        parse_policy(list(fail_on)), clock=lambda: NOW, timestamp=lambda: "2026-03-01T12:00:00Z",
        redact=Redactor(), extra_findings=extra_findings, on_document=on_document,
        comment=CommentOptions(gate_id="warehouse", comment_limit=GITHUB_COMMENT_LIMIT,
                               previous_body=previous_body)
        if comment else None)


def test_the_document_is_handed_over_before_the_previous_comment_is_read(repo: Repo) -> None:
    calls: list[str] = []
    report = review(repo, calls)
    assert calls == ["extra", "document", "previous"]
    assert report.bodies is not None
    marker = parse_marker(report.bodies.comment)
    assert marker is not None
    assert (marker.gate_id, marker.head_sha) == ("warehouse", report.pr.head_sha)
    assert "captured 0 h ago" in report.bodies.comment  # the facts line, from the clock
    assert len(report.bodies.short) <= 16_000


def test_without_comment_options_nothing_is_rendered(repo: Repo) -> None:
    calls: list[str] = []
    report = review(repo, calls, comment=False)
    assert calls == ["extra", "document"] and report.bodies is None


def test_the_document_carries_the_gate_and_the_extra_findings(repo: Repo) -> None:
    extra = Finding(kind="facts-changed-in-pr", status="new", file="facts.yaml",
                    message="this pull request changes the facts file")
    passed = review(repo, [], fail_on=("facts-changed-in-pr",))
    blocked = review(repo, [], fail_on=("facts-changed-in-pr",), extra=(extra,))
    assert passed.gate.passed and not blocked.gate.passed  # the extra finding is gated
    assert extra in blocked.gate.blocking
    document = json.loads(blocked.document_text())
    assert document["pull_request"]["head_sha"] == blocked.pr.head_sha
    assert document["diff"]["gate"]["passed"] is False
    assert document["generated_at"] == "2026-03-01T12:00:00Z"
    # The review covers the added file (the other one, unchanged, has no export in a source
    # group the change touches): it alone is planned and in the document, which says so.
    assert blocked.pr.planned_counts() == {"base-configs": 0, "base-exports": 0,
                                           "head-configs": 1, "head-exports": 1}
    assert blocked.checked == {"base-configs": 0, "base-exports": 0, "head-configs": 1,
                               "head-exports": 1, "base-files": 1, "head-files": 2}
    assert len(document["configs"]) == 1 and len(document["base"]["configs"]) == 0
    assert document["summary"]["configs"] == 1
    assert document["pull_request"]["review"] == {"base_files": 1, "head_files": 2,
                                                  "narrowed": True}
