"""The review follows the change: only the files the change touches and the source groups they
touch are planned (with or without a plan document), and the result is exactly the full plans
cut down to that scope (`core.plan_reuse.review_scope`) — whatever way a config spells a group.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.pr import Repo, config, export, incremental

from rivet_ci.adapters.git import GitRepo
from rivet_ci.core.config.loader import load_config_text
from rivet_ci.core.gate.diff import REPO_SCOPE, diff_plans
from rivet_ci.core.plan import reuse as plan_reuse
from rivet_ci.core.plan.planner import FactsOrigin, Plan, plan_config
from rivet_ci.core.plan.reuse import may_hold_group, review_scope
from rivet_ci.review import pull_request
from rivet_ci.review.pull_request import PullRequestPlan, plan_pull_request

pytestmark = pytest.mark.usefixtures("isolated_git")  # conftest.py: no global git config

GLOBS = ("rivet/**/*.yaml",)
HEADER = ("source:\n  type: postgres\n  url_env: REPLICA_URL\n  environment: replica\n"
          "exports:\n")


def one_export(group_yaml: str, name: str = "orders") -> str:
    """A config whose one export's `source_group` is written as `group_yaml` (raw YAML)."""
    return (f"{HEADER}  - name: {name}\n    table: public.{name}\n    mode: full\n"
            f"    format: parquet\n    destination:\n      type: local\n"
            f"    source_group: {group_yaml}\n")


# (the group's name, how a config spells it, the environment): every spelling rivet reads as
# that name. A spelling `may_hold_group` did not see would leave an export out of the review.
SPELLINGS: list[tuple[str, str, dict[str, str]]] = [
    ("replica_hot", "replica_hot", {}),
    ("replica_hot", "'replica_hot'", {}),
    ("replica_hot", '"replica_hot"', {}),
    ("replica_hot", '"replica\\x5fhot"', {}),  # escapes in a double-quoted scalar
    ("replica_hot", '"replica\\u005Fhot"', {}),
    ("replica_hot", '"replica\\U0000005fhot"', {}),
    ("replica_hot", '"repli\\\n      ca_hot"', {}),  # an escaped line break joins the lines
    ("replica_hot", "${HOT}", {"HOT": "replica_hot"}),  # substituted before parsing
    ("replica_hot", "replica_${SUFFIX}", {"SUFFIX": "hot"}),
    ("replica_hot", "\"${HOT}\"", {"HOT": "replica_hot"}),
    ("replica_hot", ">-\n      replica_hot", {}),
    ("replica hot", "replica\n      hot", {}),  # a plain scalar folded over two lines
    ("replica hot", "'replica\n      hot'", {}),
    ("replica hot", ">-\n      replica\n      hot", {}),
    ("replica hot", '"replica\\x20hot"', {}),
    ("it's", "'it''s'", {}),  # a quote doubled in a single-quoted scalar
    ("ü_replica", '"\\u00fc_replica"', {}),
]


@pytest.mark.parametrize(("name", "spelled", "environ"), SPELLINGS)
def test_every_spelling_of_a_group_is_seen(name: str, spelled: str,
                                           environ: dict[str, str]) -> None:
    text = one_export(spelled)
    loaded = load_config_text("rivet/x.yaml", text, environ)
    assert not [p for p in loaded.problems if p.severity == "error"], loaded.problems
    (planned,) = plan_config(loaded, None).exports
    assert planned.recommendation.source_group == name  # the spelling really is the name
    assert may_hold_group(text, {name})
    assert may_hold_group(text, {"replica_cold", name})


def test_a_text_without_the_name_is_ruled_out() -> None:
    text = one_export("replica_cold")
    assert not may_hold_group(text, {"replica_hot", "replica_b"})
    assert not may_hold_group(text, set())
    assert may_hold_group(text, {"replica_cold"})
    assert may_hold_group(text, {"cold"})  # a part of another name: loaded, then judged
    assert may_hold_group(text + "# replica_hot is next door\n", {"replica_hot"})
    assert may_hold_group(text, {""})


def spelled_repo(tmp_path: Path) -> tuple[Repo, dict[str, str]]:
    """`rivet/a.yaml` moves an export into `replica_hot`; unchanged files hold members of it
    spelled every way, and files with no member at all."""
    repo = Repo.init(tmp_path / "repo")
    files: dict[str, str | None] = {
        "rivet/a.yaml": config(incremental("a_orders", group="replica_cold")),
        "rivet/unrelated.yaml": config(incremental("u_orders", group="replica_warm"),
                                       export("u_users"), url_env="U_URL"),
        "rivet/no_group.yaml": config(export("n_users"), url_env="N_URL"),
    }
    environ = {"HOT": "replica_hot", "SUFFIX": "hot"}
    for i, (name, spelled, _) in enumerate(SPELLINGS):
        if name == "replica_hot":
            files[f"rivet/spelled_{i:02d}.yaml"] = one_export(spelled, name=f"s{i:02d}")
    repo.commit("base", files)
    repo.checkout("pr", new=True)
    repo.commit("move a_orders to replica_hot", {
        "rivet/a.yaml": config(incremental("a_orders", group="replica_hot"))})
    return repo, environ


def run(repo: Repo, environ: dict[str, str], *, full: bool) -> PullRequestPlan:
    return plan_pull_request(GitRepo(repo.path), base="main", head="pr", globs=GLOBS,
                             facts=None, origin=FactsOrigin(kind="none"), environ=environ,
                             full_plans=full)


def test_only_the_files_a_change_can_affect_are_planned(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, environ = spelled_repo(tmp_path)
    loads: list[str] = []
    original = load_config_text

    def counting(path: str, text: str, env: Any) -> Any:
        loads.append(path)
        return original(path, text, env)

    monkeypatch.setattr(pull_request, "load_config_text", counting)
    members = sorted(f"s{i:02d}" for i, (name, _, _) in enumerate(SPELLINGS)
                     if name == "replica_hot")
    in_review = {"rivet/a.yaml", *(f"rivet/spelled_{m[1:]}.yaml" for m in members)}
    full = run(repo, environ, full=True)
    # With a plan document too: neither file without a member of replica_hot was loaded;
    # every spelled member was, once (a.yaml once per side).
    assert sorted(loads) == sorted([*in_review, "rivet/a.yaml"])
    loads.clear()
    lean = run(repo, environ, full=False)
    assert sorted(loads) == sorted([*in_review, "rivet/a.yaml"])
    assert lean.diff == full.diff
    assert lean.checked() == full.checked()
    (repo_wide,) = [w for w in lean.diff.warnings if w.scope == REPO_SCOPE]
    assert repo_wide.group == "replica_hot" and repo_wide.changed  # a_orders joins it
    assert sorted(repo_wide.members_head) == sorted([*members, "a_orders"])
    assert sorted(repo_wide.members_base) == members
    # What it covers: a.yaml and the spelled files; the two others only counted.
    assert full.checked() == {
        "base-configs": 1 + len(members), "base-exports": 1 + len(members),
        "head-configs": 1 + len(members), "head-exports": 1 + len(members),
        "base-files": 3 + len(members), "head-files": 3 + len(members)}
    # The document holds the full plans of the files in the review, and says what it covers.
    assert {c.path for c in full.document_head.configs} == in_review
    assert {c.path for c in full.document_base.configs} == in_review
    assert full.planned_counts() == {k: v for k, v in full.checked().items()
                                     if not k.endswith("-files")}
    assert full.review_json == {"base_files": 3 + len(members), "head_files": 3 + len(members),
                                "narrowed": True}


def test_the_document_holds_whole_files_and_probes_only_them(
        tmp_path: Path) -> None:
    """A file sharing an affected group keeps its whole plan in the document (its other
    exports too); the collector and the history reader are given only the review's files."""
    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {
        "rivet/a.yaml": config(incremental("a_orders", group="cold")),
        "rivet/mixed.yaml": config(incremental("m_hot", group="hot"), export("m_plain"),
                                   url_env="M_URL"),
        "rivet/far.yaml": config(incremental("f_orders", group="far"), url_env="F_URL"),
    })
    repo.checkout("pr", new=True)
    repo.commit("move a_orders to hot", {
        "rivet/a.yaml": config(incremental("a_orders", group="hot"))})
    seen: list[list[str]] = []

    def history(facts: Any, configs: Any) -> Any:
        seen.append(sorted(f"{c.path}:{e.name}" for c in configs for e in c.exports))
        return facts

    got = plan_pull_request(GitRepo(repo.path), base="main", head="pr", globs=GLOBS,
                            facts=None, origin=FactsOrigin(kind="none"), environ={},
                            add_history=history)
    assert seen == [sorted(2 * ["rivet/a.yaml:a_orders", "rivet/mixed.yaml:m_hot",
                                "rivet/mixed.yaml:m_plain"])]  # far.yaml: not read
    assert [c.path for c in got.head.configs] == ["rivet/a.yaml", "rivet/mixed.yaml"]
    assert [e.export_name for e in got.head.configs[1].exports] == ["m_hot"]
    assert [e.export_name for e in got.document_head.configs[1].exports] == ["m_hot", "m_plain"]
    assert got.review_json == {"base_files": 3, "head_files": 3, "narrowed": True}


def test_a_pre_check_that_missed_a_spelling_would_change_the_warning(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test above can fail: a pre-check blind to escapes and placeholders leaves members
    out of the repo-wide warning."""
    repo, environ = spelled_repo(tmp_path)
    full = run(repo, environ, full=True)

    def literal_only(text: str, groups: Any) -> bool:
        return any(name in text for name in groups)

    monkeypatch.setattr(pull_request, "may_hold_group", literal_only)
    blind = run(repo, environ, full=False)
    assert blind.diff != full.diff
    (before,) = [w for w in full.diff.warnings if w.scope == REPO_SCOPE]
    (after,) = [w for w in blind.diff.warnings if w.scope == REPO_SCOPE]
    assert len(after.members_head) < len(before.members_head)


def test_the_scope_keeps_every_member_of_an_affected_group() -> None:
    """Pure: a file the change cannot affect keeps its exports in the touched groups (its
    campaign and problems too); its other exports and the files with none are left out."""
    def planned(path: str, *exports: dict[str, Any]) -> Any:
        return plan_config(load_config_text(path, config(*exports), {}), None)

    origin = FactsOrigin(kind="none")
    mixed = planned("rivet/mixed.yaml", incremental("m1", group="hot"),
                    incremental("m2", group="cold"), export("m3"))
    other = planned("rivet/other.yaml", incremental("o1", group="cold"))
    before = planned("rivet/a.yaml", incremental("a1", group="cold"))
    after = planned("rivet/a.yaml", incremental("a1", group="hot"))
    base = Plan(configs=(before, mixed, other), facts=origin)
    head = Plan(configs=(after, mixed, other), facts=origin)
    scope = review_scope(base, head, {})
    assert scope.groups == {"hot", "cold"} and scope.narrowed  # m3 is left out
    assert [c.path for c in scope.head.configs] == ["rivet/a.yaml", "rivet/mixed.yaml",
                                                    "rivet/other.yaml"]
    assert [e.export_name for e in scope.head.configs[1].exports] == ["m1", "m2"]
    assert scope.head.configs[1].campaign == mixed.campaign
    assert scope.base.configs[1] is scope.head.configs[1]  # still one shared plan
    # An equal plan (an edit that changes nothing planned) touches no group.
    head2 = Plan(configs=(before.model_copy(deep=True), mixed, other), facts=origin)
    same = review_scope(base, head2, {})
    assert same.groups == frozenset() and same.head.configs == () and same.narrowed
    full = diff_plans(base, head)
    cut = diff_plans(scope.base, scope.head)
    assert cut.changed_exports == full.changed_exports
    assert [w for w in cut.warnings if w.group in scope.groups] == [
        w for w in full.warnings if w.group in scope.groups]


def test_the_pre_check_is_the_one_the_pipeline_uses() -> None:
    assert vars(pull_request)["may_hold_group"] is plan_reuse.may_hold_group
