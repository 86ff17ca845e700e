"""`diff` follows the change: shared plans, blobs read once, the plan cache — and the result is
exactly what planning both sides in full gives (randomized changes: edits, exports moved between
files and source groups, files added, removed and renamed, placeholders, facts)."""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from rivet_ci import cli
from rivet_ci.adapters.git import GitRepo, blob_id
from rivet_ci.adapters.plan_cache import CacheEntry, PlanCache
from rivet_ci.commands.context import Context
from rivet_ci.core.comment.since import make_digest, read_digest, since_last_push
from rivet_ci.core.config.loader import load_config_text
from rivet_ci.core.facts.loader import load_facts_text
from rivet_ci.core.gate.diff import diff_plans
from rivet_ci.core.plan.planner import FactsOrigin, Plan, plan_config
from rivet_ci.core.plan.reuse import (
    placeholder_values,
    plan_key,
    review_scope,
    shared_plans,
    summary_plan,
)
from rivet_ci.review import pull_request
from rivet_ci.review.pull_request import PullRequestPlan, plan_pull_request, shown_path

GLOBS = ("rivet/**/*.yaml",)
CLOCK = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
GROUPS = ("replica_a", "replica_b", "replica_c", None)


pytestmark = pytest.mark.usefixtures("isolated_git")  # conftest.py: no global git config


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


def random_export(rng: random.Random, name: str) -> dict[str, Any]:
    kind = rng.randrange(5)
    body: dict[str, Any]
    if kind == 0:
        body = {"mode": "full"}
    elif kind == 1:
        body = {"mode": "incremental", "cursor_column": "updated_at"}
    elif kind == 2:
        body = {"mode": "chunked", "chunk_column": "id", "chunk_size": rng.choice((10_000,
                                                                                   500_000))}
    elif kind == 3:
        body = {"mode": "time_window", "time_column": "created_at", "days_window": 7}
    else:  # an invalid export: a config error that must stay pre-existing or be resolved
        body = {"mode": "chunked"}
    group = rng.choice(GROUPS)
    return {"name": name, "table": f"public.{name}", **body,
            **({"source_group": group} if group else {}),
            "format": "parquet", "destination": {"type": "local"}}


def config_text(exports: list[dict[str, Any]], url_env: str) -> str:
    return yaml.safe_dump({"source": {"type": "postgres", "url_env": url_env},
                           "exports": exports}, sort_keys=False)


Files = dict[str, list[dict[str, Any]]]


def write_files(repo: Path, files: Files, urls: dict[str, str]) -> None:
    for path in repo.glob("rivet/*.yaml"):
        path.unlink()
    for name, exports in files.items():
        (repo / name).write_text(config_text(exports, urls[name]), encoding="utf-8")


def mutate(rng: random.Random, files: Files, urls: dict[str, str], counter: list[int]) -> None:
    """One random change of the kind a pull request makes."""
    def fresh() -> str:
        counter[0] += 1
        return f"e{counter[0]:04d}"

    names = sorted(files)
    action = rng.randrange(8)
    if action == 0 and names:  # edit an export in place (mode, chunk size, group)
        exports = files[rng.choice(names)]
        if exports:
            i = rng.randrange(len(exports))
            exports[i] = random_export(rng, exports[i]["name"])
    elif action == 1 and len(names) >= 2:  # move an export to another file
        source, target = rng.sample(names, 2)
        if files[source]:
            files[target].append(files[source].pop(rng.randrange(len(files[source]))))
    elif action == 2 and names:  # move an export to another source group
        exports = files[rng.choice(names)]
        if exports:
            export = exports[rng.randrange(len(exports))]
            group = rng.choice(GROUPS)
            export.pop("source_group", None)
            if group:
                export["source_group"] = group
    elif action == 3:  # add a file
        name = f"rivet/new_{fresh()}.yaml"
        files[name] = [random_export(rng, fresh()) for _ in range(rng.randrange(1, 5))]
        urls[name] = "URL_A"
    elif action == 4 and len(names) > 1:  # remove a file
        del files[rng.choice(names)]
    elif action == 5 and names:  # rename a file (keeping its content: git sees a rename)
        old = rng.choice(names)
        new = f"rivet/renamed_{fresh()}.yaml"
        files[new], urls[new] = files.pop(old), urls[old]
    elif action == 6 and names:  # add and remove exports
        exports = files[rng.choice(names)]
        exports.append(random_export(rng, fresh()))
        if len(exports) > 1:
            exports.pop(0)
    elif names:  # the placeholder the source uses
        urls[rng.choice(names)] = rng.choice(("URL_A", "URL_B", "${NESTED}"))


def full_plan(repo: GitRepo, rev: str, environ: dict[str, str], facts: Any,
              origin: FactsOrigin) -> Plan:
    """Every config of `rev` loaded and planned on its own: no sharing, no cache."""
    configs = []
    for path, text in repo.read_files(rev, GLOBS):
        assert text is not None
        configs.append(plan_config(load_config_text(path, text, environ), facts))
    return Plan(configs=tuple(configs), facts=origin)


def facts_for(rng: random.Random, names: list[str]) -> Any:
    exports = {name: {"row_estimate": rng.choice((1_000, 10**6, 10**8)), "avg_row_bytes": 200}
               for name in names if rng.random() < 0.7}
    facts, problems = load_facts_text("facts.json", json.dumps({
        "format": "rivet-ci-facts/1", "captured_at": "2026-11-29T06:00:00Z",
        "exports": exports}))
    assert facts is not None and not problems
    return facts


def assert_same(got: PullRequestPlan, base: Plan, head: Plan, renames: dict[str, str]) -> None:
    """A run writing a plan document: the review (the diff, the gate, the comment) is the full
    plans cut down to what the change can affect; the document holds the whole plans of the
    files in the review."""
    scope = review_scope(base, head, renames)
    for got_side, full, cut in ((got.document_base, base, scope.base),
                                (got.document_head, head, scope.head)):
        paths = {c.path for c in cut.configs}
        assert got_side.configs == tuple(c for c in full.configs if c.path in paths)
    assert (got.base, got.head) == (scope.base, scope.head)
    assert got.diff == diff_plans(scope.base, scope.head, renames=renames)


@pytest.mark.parametrize("seed", range(16))
def test_incremental_equals_full_plan_on_random_changes(
        tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    repo_dir = tmp_path / "repo"
    (repo_dir / "rivet").mkdir(parents=True)
    git(repo_dir, "init", "-q", "-b", "main")
    counter = [0]
    files: Files = {}
    urls: dict[str, str] = {}
    for i in range(rng.randrange(4, 9)):
        name = f"rivet/domain_{i}.yaml"
        files[name] = [random_export(rng, f"x{i}_{n}") for n in range(rng.randrange(2, 7))]
        urls[name] = rng.choice(("URL_A", "URL_B"))
    write_files(repo_dir, files, urls)
    git(repo_dir, "add", "-A")
    git(repo_dir, "commit", "-q", "-m", "base")
    git(repo_dir, "checkout", "-q", "-b", "pr")
    for _ in range(rng.randrange(1, 6)):
        mutate(rng, files, urls, counter)
    write_files(repo_dir, files, urls)
    git(repo_dir, "add", "-A")
    git(repo_dir, "commit", "-q", "--allow-empty", "-m", "change")

    repo = GitRepo(repo_dir)
    environ = {"URL_A": "postgresql://a/db", "URL_B": "postgresql://b/db",
               "NESTED": "postgresql://nested/db"}
    all_names = [f"x{i}_{n}" for i in range(9) for n in range(7)]
    all_names += [f"e{n:04d}" for n in range(counter[0] + 1)]
    facts = facts_for(rng, all_names) if seed % 3 else None
    origin = FactsOrigin(kind="file" if facts else "none")
    base_sha, head_sha = repo.resolve("main"), repo.resolve("pr")
    base = full_plan(repo, base_sha, environ, facts, origin)
    head = full_plan(repo, head_sha, environ, facts, origin)

    cache = PlanCache(tmp_path / "cache")
    loads: list[str] = []

    def run(c: PlanCache | None, full: bool = True) -> PullRequestPlan:
        loads.clear()
        return plan_pull_request(repo, base="main", head="pr", globs=GLOBS, facts=facts,
                                 origin=origin, environ=environ, cache=c, full_plans=full)

    original = load_config_text

    def counting(path: str, text: str, env: Any) -> Any:
        loads.append(path)
        return original(path, text, env)

    monkeypatch.setattr(pull_request, "load_config_text", counting)
    runs = [run(None), run(cache)]
    cold = list(loads)
    distinct = {(p, o) for rev in (base_sha, head_sha) for p, o in repo.tree_blobs(rev, GLOBS)}
    renames = {shown_path(c.old_path): shown_path(c.path) for c in runs[0].changed
               if c.status == "renamed" and c.old_path}
    scope = review_scope(base, head, renames)
    # Each (path, blob) loaded at most once for both sides; every file in the review loaded.
    assert len(cold) <= len(distinct)
    assert {c.path for side in (scope.base, scope.head) for c in side.configs} <= set(cold)
    runs.append(run(cache))
    assert loads == []  # warm: nothing loaded, every plan from the cache
    for got in runs:
        assert_same(got, base, head, renames)
    # The cold run stored every (path, blob) it loaded; the warm run found them all.
    assert cache.stats.written == len(cold)
    assert cache.stats.hits == len(cold)
    # Without a plan document, files the change cannot affect are summaries, or not planned at
    # all when they cannot be in the review: the diff (and so the comment and the gate) is
    # still exactly the full plans' cut down to the review.
    shared = shared_plans(runs[0].document_base.configs, runs[0].document_head.configs, renames)
    for got in (run(None, full=False), run(cache, full=False)):
        assert got.diff == diff_plans(scope.base, scope.head, renames=renames)
        assert got.checked() == runs[0].checked()
        for side, full in ((got.base, scope.base), (got.head, scope.head)):
            assert side.configs == tuple(summary_plan(c) if c.path in shared else c
                                         for c in full.configs)
    # Files the change left alone share one plan; the change touches only the others.
    unchanged = {p for p, o in repo.tree_blobs(base_sha, GLOBS)} & {
        p for p, o in repo.tree_blobs(head_sha, GLOBS)}
    same_blob = {p for p in unchanged
                 if dict(repo.tree_blobs(base_sha, GLOBS))[p]
                 == dict(repo.tree_blobs(head_sha, GLOBS))[p]} - set(renames) - set(
                     renames.values())
    assert shared == same_blob & {c.path for c in scope.head.configs}


def test_diff_of_shared_plans_equals_diff_of_copies() -> None:
    """The diff's shortcut for a plan both sides share gives what comparing copies gives."""
    text = config_text([random_export(random.Random(n), f"e{n}") for n in range(30)], "URL_A")
    plan = plan_config(load_config_text("rivet/a.yaml", text, {}), None)
    other = plan_config(load_config_text("rivet/b.yaml", text.replace("e1", "f1"), {}), None)
    origin = FactsOrigin(kind="none")
    shared = diff_plans(Plan(configs=(plan, other), facts=origin),
                        Plan(configs=(plan,), facts=origin))
    copied = diff_plans(Plan(configs=(plan.model_copy(deep=True), other), facts=origin),
                        Plan(configs=(plan.model_copy(deep=True),), facts=origin))
    assert shared == copied
    assert any(c.status == "removed" for c in shared.exports)


def test_since_last_push_sees_an_export_of_a_file_now_unchanged() -> None:
    """A file the previous push changed and this push restored: the diff does not list its
    exports one by one, yet "since your last push" still shows the export that moved back."""
    exports = [random_export(random.Random(n), f"e{n}") for n in range(6)]
    text = config_text(exports, "URL_A")
    edited = config_text([{**exports[0], "mode": "full", "source_group": "replica_z"},
                          *exports[1:]], "URL_A")
    origin = FactsOrigin(kind="none")
    plan = plan_config(load_config_text("rivet/a.yaml", text, {}), None)
    other = plan_config(load_config_text("rivet/b.yaml", text.replace("e", "f"), {}), None)
    pushed = plan_config(load_config_text("rivet/a.yaml", edited, {}), None)
    base = Plan(configs=(plan, other), facts=origin)
    first = diff_plans(base, Plan(configs=(pushed, other), facts=origin))
    moved_names = {c.export_name for c in first.changed_exports}
    assert moved_names  # the edit moved something
    digest = read_digest(make_digest("a" * 40, first))
    now = diff_plans(base, Plan(configs=(plan, other), facts=origin))
    assert now.unchanged_files == ("rivet/a.yaml", "rivet/b.yaml") and now.exports == ()
    since = since_last_push(digest, "b" * 40, now, [plan, other])
    assert since is not None
    assert {m.export_name for m in since.moved} == moved_names
    # Without the unchanged files' plans nothing would be seen to move back.
    blind = since_last_push(digest, "b" * 40, now)
    assert blind is not None and blind.moved_count == 0


def test_each_blob_is_read_once(tmp_path: Path) -> None:
    repo_dir = tmp_path / "repo"
    (repo_dir / "rivet").mkdir(parents=True)
    git(repo_dir, "init", "-q", "-b", "main")
    same = config_text([random_export(random.Random(1), "a")], "URL_A")
    for name in ("one", "two", "three"):
        (repo_dir / "rivet" / f"{name}.yaml").write_text(same, encoding="utf-8")
    git(repo_dir, "add", "-A")
    git(repo_dir, "commit", "-q", "-m", "base")
    repo = GitRepo(repo_dir)
    listed = repo.tree_blobs("HEAD", GLOBS)
    assert [p for p, _ in listed] == ["rivet/one.yaml", "rivet/three.yaml", "rivet/two.yaml"]
    assert {o for _, o in listed} == {blob_id(same.encode())}
    requested: list[list[str]] = []
    original = GitRepo.read_blobs

    def spy(self: GitRepo, oids: Any) -> dict[str, bytes]:
        wanted = list(oids)
        requested.append(wanted)
        return original(self, wanted)

    pytest.MonkeyPatch().setattr(GitRepo, "read_blobs", spy)
    try:
        plan_pull_request(repo, base="HEAD", head="HEAD", globs=GLOBS, facts=None,
                          origin=FactsOrigin(kind="none"), environ={})
    finally:
        pytest.MonkeyPatch().undo()
    assert len(requested) == 1
    assert len(set(requested[0])) == 1  # three paths on two sides, one blob, read once


def test_plan_key_covers_what_the_plan_depends_on() -> None:
    text = "source:\n  type: postgres\n  url: ${A}\nexports: []\n"
    key = {"fingerprint": "f", "path": "rivet/a.yaml", "blob": "0" * 40, "text": text,
           "environ": {"A": "x", "UNRELATED": "1"}, "facts_digest": "none"}
    first = plan_key(**key)  # type: ignore[arg-type]
    assert first == plan_key(**{**key, "environ": {"A": "x", "UNRELATED": "2"}})  # type: ignore[arg-type]
    for field, value in (("fingerprint", "g"), ("path", "rivet/b.yaml"), ("blob", "1" * 40),
                         ("environ", {"A": "y"}), ("facts_digest", "abc")):
        assert plan_key(**{**key, field: value}) != first, field  # type: ignore[arg-type]
    # A value that brings in another placeholder (query: is substituted twice) counts too.
    assert placeholder_values("${A}", {"A": "${B}", "B": "1"}) == {"A": "${B}", "B": "1"}


def test_cache_entries_are_data_under_hex_names(tmp_path: Path) -> None:
    text = config_text([random_export(random.Random(3), "a")], "URL_A")
    plan = plan_config(load_config_text("../../escape.yaml", text, {}), None)
    cache = PlanCache(tmp_path / "cache")
    key = "ab" + "0" * 62
    cache.put(key, plan, {"a": 3})
    stored = sorted((tmp_path / "cache").rglob("*.json"))
    assert [p.relative_to(tmp_path / "cache").as_posix() for p in stored] == [
        f"rivet-ci-plans-v1/ab/{key}.json", f"rivet-ci-plans-v1/ab/{key}.summary.json"]
    hit = cache.get(key)
    assert hit is not None and hit.plan == plan and hit.export_lines == {"a": 3}
    summary = cache.get(key, summary=True)
    assert summary is not None and summary.plan == summary_plan(plan)
    with pytest.raises(ValueError):
        cache.get("../../etc/passwd")
    # An entry naming another key, a corrupt one, or a link are misses (and not followed).
    other = "cd" + "0" * 62
    (tmp_path / "cache" / "rivet-ci-plans-v1" / "cd").mkdir()
    entry = CacheEntry.model_validate_json(stored[0].read_bytes())
    (tmp_path / "cache" / "rivet-ci-plans-v1" / "cd" / f"{other}.json").write_text(
        entry.model_dump_json())
    assert cache.get(other) is None
    stored[0].write_text("{not json")
    assert cache.get(key) is None
    secret = tmp_path / "secret.json"
    secret.write_text(entry.model_dump_json())
    stored[0].unlink()
    stored[0].symlink_to(secret)
    assert cache.get(key) is None
    assert cache.stats.invalid == 2 and cache.stats.misses == 3  # the link: not opened
    # A folder of the cache replaced by a link: the write is refused, never followed.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ef = "ef" + "0" * 62
    (tmp_path / "cache" / "rivet-ci-plans-v1" / "ef").symlink_to(elsewhere)
    cache.put(ef, plan, {})
    assert list(elsewhere.iterdir()) == []
    assert cache.stats.write_error is not None


def diff_cli(repo: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(["diff", "--base", "main", "--head", "pr", *args],
                   Context(stdout=out, stderr=err, environ={}, cwd=repo, now=lambda: CLOCK))
    return code, out.getvalue(), err.getvalue()


def two_commits(repo: Path) -> None:
    (repo / "rivet").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    rng = random.Random(7)
    for i in range(4):
        (repo / "rivet" / f"d{i}.yaml").write_text(
            config_text([random_export(rng, f"d{i}_{n}") for n in range(6)], "URL_A"))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "pr")
    (repo / "rivet" / "d1.yaml").write_text(
        config_text([random_export(rng, f"d1_{n}") for n in range(7)], "URL_A"))
    git(repo, "commit", "-q", "-am", "change")


def without_marker(comment: str) -> str:
    return "\n".join(line for line in comment.splitlines() if "rivet-ci:" not in line)


def test_diff_cache_dir_reuses_plans_and_prints_the_same_comment(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    two_commits(repo)
    code, plain, _ = diff_cli(repo)
    cold = diff_cli(repo, "--cache-dir", str(tmp_path / "cache"))
    warm = diff_cli(repo, "--cache-dir", str(tmp_path / "cache"))
    assert {code, cold[0], warm[0]} <= {0, 1} and code == cold[0] == warm[0]
    assert without_marker(plain) == without_marker(cold[1]) == without_marker(warm[1])
    assert "plan cache" not in diff_cli(repo)[2]
    assert "0 hit(s), 5 miss(es), 5 written" in cold[2]  # 4 files at base, 1 changed at head
    assert "5 hit(s), 0 miss(es), 0 written" in warm[2]
    # The JSON document (full plans) is the same from the cache as without it.
    first = json.loads(diff_cli(repo, "--format", "json")[1])
    cached = json.loads(diff_cli(repo, "--format", "json", "--cache-dir",
                                 str(tmp_path / "cache"))[1])
    assert cached == first


def test_a_cache_folder_git_tracks_is_not_used(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    two_commits(repo)
    planted = repo / ".rivet-ci-cache" / "rivet-ci-plans-v1" / "ab" / ("ab" + "0" * 62 + ".json")
    planted.parent.mkdir(parents=True)
    planted.write_text("{}")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a pull request bringing its own cache")
    code, _, err = diff_cli(repo, "--cache-dir", ".rivet-ci-cache")
    assert code in (0, 1)
    assert "git tracks files in" in err and "not used as the plan cache" in err
    assert "plan cache" not in err.replace("not used as the plan cache", "")
    assert sorted(p.name for p in (repo / ".rivet-ci-cache").rglob("*.json")) == [planted.name]
