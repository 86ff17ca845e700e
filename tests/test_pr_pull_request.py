"""Planning both sides of a pull request from real git repositories (`plan_pull_request`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.pr import (
    Repo,
    chunked,
    config,
    export,
    heavy_facts,
    incremental,
    small_facts,
)

from rivet_ci.adapters.git import ChangedFile, GitRepo
from rivet_ci.core.facts.models import FactsFile
from rivet_ci.core.gate.diff import REPO_SCOPE, ExportChange
from rivet_ci.core.plan.planner import FactsOrigin
from rivet_ci.review.pull_request import PullRequestPlan, plan_pull_request

GLOBS = ("rivet/**/*.yaml",)
FACTS = FactsFile.model_validate({
    "format": "rivet-ci-facts/1",
    "exports": {"events": heavy_facts(), "order_items": heavy_facts(12_000_000),
                "customers": small_facts(), "orders": small_facts(900_000),
                "sessions": small_facts(90_000)},
})


def plan(repo: Repo, base: str = "main", head: str = "HEAD") -> PullRequestPlan:
    return plan_pull_request(GitRepo(repo.path), base=base, head=head, globs=GLOBS, facts=FACTS,
                             origin=FactsOrigin(kind="file", path="facts.yaml"), environ={})


def by_name(pr: PullRequestPlan) -> dict[str, ExportChange]:
    return {c.export_name: c for c in pr.diff.exports}


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {
        "rivet/orders.yaml": config(export("orders", source_group="replica_a"),
                                    export("customers", source_group="replica_a")),
        "rivet/legacy.yaml": config(export("audit_log"), url_env="LEGACY_URL"),
        "rivet/web.yaml": config(export("sessions"), url_env="WEB_URL"),
        "README.md": "not a config\n",
    })
    repo.checkout("feature", new=True)
    return repo


def test_added_removed_and_modified_configs_give_export_statuses(repo: Repo) -> None:
    repo.commit("pr", {
        "rivet/events.yaml": config(chunked("events")),  # added file
        "rivet/legacy.yaml": None,  # removed file
        # modified: customers becomes chunked, orders untouched
        "rivet/orders.yaml": config(export("orders", source_group="replica_a"),
                                    chunked("customers")),
        "README.md": "edited, but not a config\n",
    })
    pr = plan(repo)
    assert set(pr.changed) == {ChangedFile("added", "rivet/events.yaml"),
                               ChangedFile("removed", "rivet/legacy.yaml"),
                               ChangedFile("modified", "rivet/orders.yaml")}
    changes = by_name(pr)
    assert changes["events"].status == "added"
    assert changes["events"].base is None and changes["events"].head is not None
    assert changes["audit_log"].status == "removed"
    assert changes["audit_log"].config_path == "rivet/legacy.yaml"
    assert changes["customers"].status == "changed"
    assert changes["customers"].score_delta is not None and changes["customers"].score_delta < 0
    assert "chunking_heavy" in changes["customers"].reasons_added
    assert changes["orders"].status == "unchanged"
    # A file the PR did not touch, with no export in a source group it touches: outside the
    # review, not in the plan document either (which says how many files matched).
    assert "sessions" not in changes
    assert "rivet/web.yaml" not in {c.path for c in pr.head.configs}
    assert "rivet/web.yaml" not in {c.path for c in pr.document_head.configs}
    assert pr.review_json == {"base_files": 3, "head_files": 3, "narrowed": True}
    assert "rivet/orders.yaml" not in pr.diff.unchanged_files
    assert {c.export_name for c in pr.diff.changed_exports} == {"events", "audit_log",
                                                                "customers"}


def test_a_renamed_config_keeps_its_exports_matched(repo: Repo) -> None:
    repo.move("rivet/orders.yaml", "rivet/domains/orders.yaml")
    repo.commit("move orders")
    pr = plan(repo)
    assert pr.changed == (ChangedFile("renamed", "rivet/domains/orders.yaml",
                                      "rivet/orders.yaml"),)
    changes = by_name(pr)
    for name in ("orders", "customers"):
        assert changes[name].status == "unchanged"
        assert changes[name].config_path == "rivet/domains/orders.yaml"
        assert changes[name].renamed_from == "rivet/orders.yaml"
    assert pr.diff.changed_exports == ()
    assert [w.status for w in pr.diff.warnings] == []
    assert [f for f in pr.diff.findings if f.status in ("new", "resolved")] == []


def test_a_renamed_and_edited_config_reports_changed_not_added_and_removed(repo: Repo) -> None:
    repo.move("rivet/orders.yaml", "rivet/domains/orders.yaml")
    repo.commit("move and edit", {"rivet/domains/orders.yaml": config(
        export("orders", source_group="replica_a"),
        incremental("customers"))})
    pr = plan(repo)
    assert [c.status for c in pr.changed] == ["renamed"]
    changes = by_name(pr)
    assert changes["customers"].status == "changed"
    assert changes["customers"].renamed_from == "rivet/orders.yaml"
    assert changes["orders"].status == "unchanged"
    assert not any(c.status in ("added", "removed") for c in pr.diff.exports)


def test_a_base_branch_that_moved_after_the_fork_point_is_not_the_prs(repo: Repo) -> None:
    pr_head = repo.commit("pr: add events", {"rivet/events.yaml": config(chunked("events"))})
    repo.checkout("main")
    # Lands on main after the PR branched off: neither its file nor its edit are the PR's.
    moved = repo.commit("main moves on", {
        "rivet/late.yaml": config(chunked("order_items"), url_env="LATE_URL"),
        "rivet/web.yaml": config(chunked("sessions", group=None), url_env="WEB_URL"),
    })
    pr = plan(repo, base=moved, head=pr_head)
    assert pr.base_sha != moved  # compared from the fork point
    assert pr.changed == (ChangedFile("added", "rivet/events.yaml"),)
    changes = by_name(pr)
    assert [c.export_name for c in pr.diff.changed_exports] == ["events"]
    assert "order_items" not in changes
    assert "sessions" not in changes
    assert "rivet/web.yaml" not in {c.path for c in pr.head.configs}


def test_a_repo_wide_source_group_collision_across_two_new_files(repo: Repo) -> None:
    repo.commit("two heavy exports on one replica, in two files", {
        "rivet/events.yaml": config(chunked("events", group="shared_replica")),
        "rivet/items.yaml": config(chunked("order_items", group="shared_replica"),
                                   url_env="ITEMS_URL"),
    })
    pr = plan(repo)
    new = [w for w in pr.diff.warnings if w.status == "new"]
    assert [w.scope for w in new] == [REPO_SCOPE]
    assert "Source group 'shared_replica': 2 heavy-cost exports" in new[0].message
    assert "across 2 config files" in new[0].message
    finding = next(f for f in pr.diff.findings if f.kind == "new-warning")
    assert finding.status == "new" and finding.file is None


def test_an_unchanged_repo_wide_collision_is_pre_existing(repo: Repo) -> None:
    repo.checkout("main")
    repo.commit("collision on main", {
        "rivet/events.yaml": config(chunked("events", group="shared_replica")),
        "rivet/items.yaml": config(chunked("order_items", group="shared_replica"),
                                   url_env="ITEMS_URL"),
    })
    repo.checkout("feature2", new=True)
    repo.commit("unrelated", {"rivet/web.yaml": config(export("sessions", parallel=2),
                                                       url_env="WEB_URL")})
    pr = plan(repo)
    # The change touches no file of shared_replica: the collision is outside the review.
    assert [w for w in pr.diff.warnings if w.scope == REPO_SCOPE] == []
    repo.commit("a light export joins the group", {"rivet/web.yaml": config(
        export("sessions", parallel=2, source_group="shared_replica"), url_env="WEB_URL")})
    pr = plan(repo)
    repo_wide = [w for w in pr.diff.warnings if w.scope == REPO_SCOPE]
    assert [w.status for w in repo_wide] == ["pre-existing"]
    assert repo_wide[0].members_head == repo_wide[0].members_base  # the same heavy exports
