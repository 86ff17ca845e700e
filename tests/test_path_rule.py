"""The one path rule (issue 23, item 1; docs/security.md "One path rule"), attacked per input.

Every path input of the action a pull request could shape is tried with a symbolic link the
pull request commits at every depth (the file itself, its folder, the folder above), with
`..` and absolute paths leading out of the workspace, against a real git repository and the
local fake GitHub; the readers below the action (`query_file`, trusted files, the plan cache,
git's "tracked" answer) are attacked directly.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.action import PR, REPO, Workspace, run_action
from support.fake_github import FakeGitHub
from support.pr import git

from rivet_ci.adapters.git import GitRepo
from rivet_ci.adapters.plan_cache import open_cache
from rivet_ci.adapters.preflight.collect import _QueryFileError, _read_query_file
from rivet_ci.output.paths import PathRefusedError, PathRule, first_symlink
from rivet_ci.review.trust import TrustedFiles

DEPTHS = (0, 1, 2)  # the link at the file itself, at its folder, at the folder above
FACTS = "format: rivet-ci-facts/1\ncaptured_at: '2026-01-01T00:00:00Z'\nexports: {}\n"


def _outside(tmp_path: Path) -> Path:
    """A folder outside the workspace and the runner's temp, shaped like what the PR wants
    rivet-ci to use there (so following a link would find something)."""
    outside = tmp_path / "outside"
    (outside / "b").mkdir(parents=True)
    for name in ("plan.json", "facts.yaml", "b/plan.json", "b/facts.yaml"):
        (outside / name).write_text(FACTS)
    (outside / "b" / "templates").mkdir()
    (outside / "templates").mkdir()
    return outside


def _commit_link(ws: Workspace, relative: str, depth: int, outside: Path) -> str:
    """Commit a symbolic link at `depth` components above the end of `relative` (0: the last
    component itself) pointing to the same place under `outside`."""
    parts = Path(relative).parts
    link = Path(*parts[:len(parts) - depth])
    target = outside.joinpath(*link.parts[1:]) if len(link.parts) > 1 else outside
    (ws.path / link).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, ws.path / link)
    return ws.repo.commit(f"link at {link}", {})


def _input(name: str) -> str:
    return f"INPUT_{name.upper()}"


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
            if p.is_file()}


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("name,path", [
    ("output", "a/b/plan.json"),
    ("rivet-compatible-artifact", "a/b/plan.json"),
])
def test_an_output_is_never_written_through_a_link_at_any_depth(
        gh: FakeGitHub, ws: Workspace, tmp_path: Path, *, name: str, path: str,
        depth: int) -> None:
    outside = _outside(tmp_path)
    before = _snapshot(outside)
    head = _commit_link(ws, path, depth, outside)
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, env={_input(name): path})
    assert _snapshot(outside) == before  # nothing written there, whatever the outcome
    if depth == 0:  # the link itself is replaced by a regular file, never written through
        assert result.code == 0, result.stderr
        assert not (ws.path / path).is_symlink()
    else:
        assert result.code == 2, result.stderr
        assert "is a symbolic link" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("depth", (1, 2))
@pytest.mark.parametrize("name,path", [("facts", "a/b/facts.yaml"),
                                       ("template-dir", "a/b/templates")])
def test_a_trusted_input_is_never_read_through_a_link_the_pr_commits(
        gh: FakeGitHub, ws: Workspace, tmp_path: Path, *, name: str, path: str,
        depth: int) -> None:
    outside = _outside(tmp_path)
    head = _commit_link(ws, path, depth, outside)
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, env={_input(name): path})
    assert result.code == 2, result.stderr
    assert "symbolic link" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("name,path", [
    ("output", "../outside/plan.json"), ("output", "a/../../outside/plan.json"),
    ("rivet-compatible-artifact", "{outside}/plan.json"), ("facts", "{outside}/facts.yaml"),
    ("facts", "../../outside/facts.yaml"), ("template-dir", "{outside}/templates"),
    ("waivers", "../outside/waivers.yaml"), ("waivers", "{outside}/waivers.yaml"),
])
def test_an_input_outside_the_workspace_and_runner_temp_is_refused(
        gh: FakeGitHub, ws: Workspace, tmp_path: Path, name: str, path: str) -> None:
    outside = _outside(tmp_path)
    before = _snapshot(outside)
    head = ws.repo.commit("nothing", {})
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, env={_input(name): path.format(outside=outside)})
    assert result.code == 2, result.stderr
    assert "refusing to" in result.stderr and name in result.stderr
    assert "outside the workspace" in result.stderr or "in the repository" in result.stderr
    assert _snapshot(outside) == before


def test_an_input_in_the_runner_temp_is_allowed(gh: FakeGitHub, ws: Workspace) -> None:
    facts = ws.runner_temp / "facts" / "facts.yaml"
    facts.parent.mkdir()
    facts.write_text(FACTS)
    head = ws.repo.commit("nothing", {})
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, facts=str(facts), output=str(ws.runner_temp / "p.json"))
    assert result.code == 0, result.stderr
    assert json.loads((ws.runner_temp / "p.json").read_text())["facts"]["origin"] == "file"


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_cache_folder_behind_a_link_the_pr_commits_is_not_used(
        gh: FakeGitHub, ws: Workspace, tmp_path: Path, depth: int) -> None:
    """The attack of issue 23: the PR commits `.cache -> /somewhere` it seeded with plans."""
    outside = tmp_path / "outside"
    (outside / "b" / "rivet").mkdir(parents=True)
    (outside / "b" / "rivet" / "seed").write_text("a plan the PR made itself")
    before = _snapshot(outside)
    head = _commit_link(ws, "a/b/rivet", depth, outside)
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, cache_dir="a/b/rivet")
    assert result.code == 0, result.stderr
    assert "not used as the plan cache" in result.stdout
    assert "plan cache" in result.stdout and "not used" in result.stdout
    assert _snapshot(outside) == before


def test_git_tracked_checks_fail_closed(tmp_path: Path) -> None:
    repo_dir = tmp_path / "r"
    repo_dir.mkdir()
    git(repo_dir, "init", "-q")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.symlink(outside, repo_dir / "link")
    git(repo_dir, "add", "link")
    git(repo_dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "link")
    repo = GitRepo(repo_dir)
    # git answers "nothing tracked" beyond a link it tracks (status 0): not believed
    assert repo.tracks_any(repo_dir / "link" / "cache")
    assert repo.tracks_any(repo_dir / "link")
    assert not repo.tracks_any(repo_dir / "fresh")  # git answers: nothing tracked
    assert not repo.tracks_any(tmp_path / "not-in-the-repo")
    (repo_dir / ".git" / "index").write_bytes(b"garbage")  # git cannot answer at all
    assert repo.tracks_any(repo_dir / "fresh")
    cache, why = open_cache(repo_dir / "fresh", repo)
    assert cache is None and why is not None and "cannot tell" in why


@pytest.mark.parametrize("depth", DEPTHS)
def test_query_file_is_never_read_through_a_link(tmp_path: Path, depth: int) -> None:
    repo = tmp_path / "repo"
    secret = tmp_path / "secret"
    (secret / "q" / "x").mkdir(parents=True)
    (secret / "q" / "x" / "query.sql").write_text("select secret")
    config_dir = repo / "rivet"
    config_dir.mkdir(parents=True)
    parts = ["q", "x", "query.sql"]
    link = config_dir.joinpath(*parts[:len(parts) - depth])
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(secret.joinpath(*parts[:len(parts) - depth]), link)
    with pytest.raises(_QueryFileError, match="symbolic link"):
        _read_query_file(config_dir / "c.yaml", "q/x/query.sql", repo)


@pytest.mark.parametrize("name", ["../../secret.sql", "/etc/hostname", "a/../../../x.sql",
                                  "q/../../../secret.sql"])
def test_query_file_cannot_leave_the_repository(tmp_path: Path, name: str) -> None:
    repo = tmp_path / "repo"
    (repo / "rivet").mkdir(parents=True)
    (tmp_path / "secret.sql").write_text("select 1")
    with pytest.raises(_QueryFileError, match="points outside"):
        _read_query_file(repo / "rivet" / "c.yaml", name, repo)


def test_query_file_inside_the_repository_is_read(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "rivet" / "sql").mkdir(parents=True)
    (repo / "rivet" / "sql" / "q.sql").write_text("select 1")
    assert _read_query_file(repo / "rivet" / "c.yaml", "sql/../sql/q.sql", repo) == "select 1"


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_workflow_file_is_never_read_through_a_link(tmp_path: Path, depth: int) -> None:
    """TrustedFiles' disk branch (a file git tracks on neither side), inside the workspace and
    in the runner's temp: a link at any depth is refused; outside both, refused too."""
    ws_dir, temp = tmp_path / "ws", tmp_path / "temp"
    for root in (ws_dir, temp):
        root.mkdir()
    git(ws_dir, "init", "-q")
    git(ws_dir, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
        "--allow-empty", "-m", "root")
    sha = git(ws_dir, "rev-parse", "HEAD")
    secret = tmp_path / "secret"
    (secret / "x").mkdir(parents=True)
    (secret / "x" / "f.yaml").write_text("secret")
    rule = PathRule.of(ws_dir, {"RUNNER_TEMP": str(temp)})
    trusted = TrustedFiles(GitRepo(ws_dir), ws_dir, trusted=sha, fork_point=sha, head=sha,
                           rule=rule)
    parts = ["d", "x", "f.yaml"]
    for root in (ws_dir, temp):
        link = root.joinpath(*parts[:len(parts) - depth])
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(secret.joinpath(*parts[1:len(parts) - depth]) if depth < 2 else secret,
                   link)
        with pytest.raises(PathRefusedError, match="symbolic link"):
            trusted.read_file(root / "d" / "x" / "f.yaml", "facts")
    with pytest.raises(PathRefusedError, match="outside the workspace"):
        trusted.read_file(secret / "x" / "f.yaml", "facts")


def test_first_symlink_checks_every_component(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    os.symlink(tmp_path / "a", tmp_path / "a" / "b" / "c")
    assert first_symlink(tmp_path / "a" / "b" / "c" / "d", tmp_path) == tmp_path / "a/b/c"
    assert first_symlink(tmp_path / "a" / "b" / "c", tmp_path, include_last=False) is None
    assert first_symlink(tmp_path / "a" / "b" / "missing" / "x", tmp_path) is None
    assert first_symlink(Path("/elsewhere"), tmp_path) is None
