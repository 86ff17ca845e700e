"""The git adapter against real repositories built in temporary directories."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from rivet_ci.adapters.git import ChangedFile, GitError, GitRepo, compile_globs, glob_to_regex

GLOBS = ("rivet/**/*.yaml", "**/*.rivet.yaml")
SHA = re.compile(r"^[0-9a-f]{40}$")


pytestmark = pytest.mark.usefixtures("isolated_git")  # conftest.py: no global git config


def git(cwd: Path, *args: str) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return result.stdout.strip()


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Rivet Tester")
    git(path, "config", "user.email", "tester@example.com")
    git(path, "config", "commit.gpgsign", "false")
    return path


def write(repo: Path, files: dict[str, str | None]) -> None:
    """Write (or, for None, delete) files, relative to the repo root."""
    for name, content in files.items():
        target = repo / name
        if content is None:
            target.unlink()
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")


def commit(repo: Path, message: str, files: dict[str, str | None] | None = None) -> str:
    write(repo, files or {})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def config(name: str, rows: int = 1) -> str:
    # Long enough that a rename with a small edit is still detected as a rename.
    exports = "".join(f"  - name: {name}_{i}\n    mode: full\n" for i in range(8))
    return f"source:\n  url_env: DB_{name.upper()}\n  rows: {rows}\nexports:\n{exports}"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo")


# ---------------------------------------------------------------------------------------------
# Globs


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        # `**/` matches zero or more directories.
        ("**/*.rivet.yaml", "a.rivet.yaml", True),
        ("**/*.rivet.yaml", "x/y/z/a.rivet.yaml", True),
        ("**/*.rivet.yaml", "a.rivet.yml", False),
        ("rivet/**/*.yaml", "rivet/orders.yaml", True),
        ("rivet/**/*.yaml", "rivet/team/eu/orders.yaml", True),
        ("rivet/**/*.yaml", "app/rivet/orders.yaml", False),
        ("rivet/**/*.yaml", "rivetx/orders.yaml", False),
        ("a/**/b/*.yaml", "a/b/c.yaml", True),
        ("a/**/b/*.yaml", "a/x/y/b/c.yaml", True),
        ("a/**/**/b", "a/b", True),
        # A trailing `/**` is everything below, not the directory itself.
        ("rivet/**", "rivet/a/b.yaml", True),
        ("rivet/**", "rivet", False),
        ("**", "any/thing/at.all", True),
        # The whole path must match: no implicit "any directory" prefix.
        ("*.yaml", "a.yaml", True),
        ("*.yaml", "dir/a.yaml", False),
        # `*`, `?` and classes stay inside one segment.
        ("rivet/*.yaml", "rivet/sub/a.yaml", False),
        ("a?b", "a/b", False),
        ("a?b", "axb", True),
        ("a[!x]b", "a/b", False),
        ("a[!x]b", "ayb", True),
        ("a[/]b", "a/b", False),
        ("c[0-9].yaml", "c7.yaml", True),
        ("c[0-9].yaml", "cx.yaml", False),
        ("c[]x].yaml", "c].yaml", True),
        ("c[&~|].yaml", "c~.yaml", True),
        # `**` inside a segment is an ordinary `*`.
        ("a**b.yaml", "axxb.yaml", True),
        ("a**b.yaml", "a/b.yaml", False),
        # Regex metacharacters are literal; an unclosed `[` is literal.
        ("conf (1)+.yaml", "conf (1)+.yaml", True),
        ("a.yaml", "axyaml", False),
        ("[oops.yaml", "[oops.yaml", True),
        # A leading slash anchors at the root, which is where paths start anyway.
        ("/rivet/*.yaml", "rivet/a.yaml", True),
        # Spaces and non-ASCII characters are ordinary.
        ("rivet/**/*.yaml", "rivet/ünïcode dir/naïve file.yaml", True),
    ],
)
def test_glob_semantics(pattern: str, path: str, expected: bool) -> None:
    assert (compile_globs([pattern]).fullmatch(path) is not None) is expected


def test_glob_alternatives_and_empty_list() -> None:
    regex = compile_globs(GLOBS)
    assert regex.fullmatch("rivet/a.yaml")
    assert regex.fullmatch("svc/x.rivet.yaml")
    assert not regex.fullmatch("svc/x.yaml")
    assert not compile_globs([]).fullmatch("rivet/a.yaml")


def test_invalid_glob_names_the_pattern() -> None:
    with pytest.raises(ValueError, match=r"'c\[z-a\]'"):
        compile_globs(["c[z-a]"])
    with pytest.raises(ValueError, match="empty glob"):
        glob_to_regex(" / ")


# ---------------------------------------------------------------------------------------------
# Revisions


def test_resolve_is_shallow_has_commit(repo: Path) -> None:
    sha = commit(repo, "first", {"rivet/a.yaml": config("a")})
    g = GitRepo(repo)
    assert g.resolve("HEAD") == sha
    assert g.resolve("main") == sha
    assert SHA.match(g.resolve(sha[:7]))
    assert g.is_shallow() is False
    assert g.has_commit(sha)
    assert not g.has_commit("0" * 40)
    with pytest.raises(GitError) as info:
        g.resolve("no-such-branch")
    assert "'no-such-branch' is not a commit" in str(info.value)
    assert "command: git rev-parse --verify no-such-branch^{commit}" in str(info.value)
    with pytest.raises(GitError, match="invalid revision"):
        g.resolve("--output=/tmp/x")


def test_merge_base_none_for_unrelated_histories(repo: Path) -> None:
    first = commit(repo, "first", {"a.txt": "a"})
    git(repo, "checkout", "-q", "--orphan", "other")
    other = commit(repo, "orphan", {"b.txt": "b"})
    g = GitRepo(repo)
    assert g.merge_base(first, other) is None
    assert g.merge_base(first, first) == first
    with pytest.raises(GitError, match="no common ancestor"):
        g.changed_files(first, other, GLOBS)
    with pytest.raises(GitError, match="unrelated histories"):
        g.ensure_merge_base(first, other)


# ---------------------------------------------------------------------------------------------
# Changed files


def test_changed_files_statuses_and_globs(repo: Path) -> None:
    base = commit(
        repo,
        "base",
        {
            "rivet/orders.yaml": config("orders"),
            "rivet/users.yaml": config("users"),
            "rivet/old name.yaml": config("renamed"),
            "rivet/moving_out.yaml": config("moving"),
            "services/billing.rivet.yaml": config("billing"),
            "docs/readme.md": "docs\n",
        },
    )
    git(repo, "checkout", "-q", "-b", "pr")
    git(repo, "mv", "rivet/old name.yaml", "rivet/new name.yaml")
    (repo / "archive").mkdir()
    # Moved out of the config globs: kept, because its old path matches.
    git(repo, "mv", "rivet/moving_out.yaml", "archive/moving_out.yaml")
    head = commit(
        repo,
        "pr",
        {
            "rivet/orders.yaml": config("orders", rows=2),
            "rivet/users.yaml": None,
            "rivet/new name.yaml": config("renamed", rows=3),  # renamed and edited
            "rivet/eu/ünïcode café.yaml": config("cafe"),
            "services/billing.rivet.yaml": config("billing", rows=9),
            "docs/readme.md": "changed docs\n",  # outside the globs
            "notes.yaml": "not a config\n",  # outside the globs
            "rivet/readme.md": "also outside\n",  # in the directory, wrong extension
        },
    )
    changes = GitRepo(repo).changed_files(base, head, GLOBS)
    assert changes == [
        ChangedFile("renamed", "archive/moving_out.yaml", "rivet/moving_out.yaml"),
        ChangedFile("added", "rivet/eu/ünïcode café.yaml"),
        ChangedFile("renamed", "rivet/new name.yaml", "rivet/old name.yaml"),
        ChangedFile("modified", "rivet/orders.yaml"),
        ChangedFile("removed", "rivet/users.yaml"),
        ChangedFile("modified", "services/billing.rivet.yaml"),
    ]
    # The same revisions by name, and nothing when the globs match nothing.
    assert GitRepo(repo).changed_files("main", "pr", GLOBS) == changes
    assert GitRepo(repo).changed_files(base, head, ["nothing/**"]) == []


def test_changed_files_uses_the_merge_base(repo: Path) -> None:
    """Changes that land on the base branch after the PR forked are not the PR's."""
    commit(repo, "base", {"rivet/orders.yaml": config("orders"), "rivet/users.yaml": config("u")})
    git(repo, "checkout", "-q", "-b", "pr")
    head = commit(repo, "pr edits users", {"rivet/users.yaml": config("u", rows=5)})
    git(repo, "checkout", "-q", "main")
    moved_on = commit(
        repo,
        "main moves on",
        {"rivet/orders.yaml": config("orders", rows=7), "rivet/late.yaml": config("late")},
    )
    g = GitRepo(repo)
    assert g.changed_files(moved_on, head, GLOBS) == [ChangedFile("modified", "rivet/users.yaml")]
    # A two-dot diff would have blamed the PR for main's changes; make sure the repo shows that.
    two_dot = git(repo, "diff", "--name-only", moved_on, head)
    assert "rivet/late.yaml" in two_dot


# ---------------------------------------------------------------------------------------------
# Contents and listings


def test_show_and_read_files(repo: Path) -> None:
    first = commit(
        repo,
        "first",
        {"rivet/with space.yaml": "source: {}\n# café\n", "rivet/sub/b.yaml": config("b")},
    )
    second = commit(repo, "second", {"rivet/with space.yaml": None, "x.rivet.yaml": config("x")})
    g = GitRepo(repo)
    assert g.show(first, "rivet/with space.yaml") == "source: {}\n# café\n"
    assert g.show(second, "rivet/with space.yaml") is None
    assert g.show(first, "x.rivet.yaml") is None
    assert g.show(second, "rivet/sub") is None  # a directory is not a file
    assert g.show("HEAD", "x.rivet.yaml") == config("x")
    with pytest.raises(GitError, match="is not a commit"):
        g.show("no-such-rev", "x.rivet.yaml")

    assert [p for p, _ in g.read_files(first, GLOBS)] == ["rivet/sub/b.yaml",
                                                          "rivet/with space.yaml"]
    assert [p for p, _ in g.read_files(second, GLOBS)] == ["rivet/sub/b.yaml", "x.rivet.yaml"]
    assert [p for p, _ in g.read_files(second, ["**"])] == ["rivet/sub/b.yaml", "x.rivet.yaml"]


def test_show_rejects_invalid_utf8(repo: Path) -> None:
    (repo / "rivet").mkdir()
    (repo / "rivet" / "latin1.yaml").write_bytes("name: caf\xe9\n".encode("latin-1"))
    sha = commit(repo, "latin-1")
    with pytest.raises(GitError, match="not valid UTF-8"):
        GitRepo(repo).show(sha, "rivet/latin1.yaml")


# ---------------------------------------------------------------------------------------------
# Shallow clones and fetching


@pytest.fixture
def pr_origin(tmp_path: Path) -> dict[str, str]:
    """An origin with a base branch, a PR branch and a GitHub-style merge commit on top."""
    origin = init_repo(tmp_path / "origin")
    commit(origin, "one", {"rivet/orders.yaml": config("orders")})
    commit(origin, "two", {"rivet/users.yaml": config("users")})
    git(origin, "checkout", "-q", "-b", "pr")
    pr_head = commit(origin, "pr", {"rivet/orders.yaml": config("orders", rows=3)})
    git(origin, "checkout", "-q", "main")
    base = commit(origin, "main moves on", {"rivet/late.yaml": config("late")})
    git(origin, "checkout", "-q", "-b", "pull/1/merge")
    git(origin, "merge", "-q", "--no-ff", "pr", "-m", "Merge pr into main")
    merge = git(origin, "rev-parse", "HEAD")
    git(origin, "checkout", "-q", "main")
    return {"url": origin.as_uri(), "base": base, "pr_head": pr_head, "merge": merge}


def shallow_clone(url: str, dest: Path, branch: str) -> Path:
    subprocess.run(
        ["git", "clone", "-q", "--depth=1", "--branch", branch, url, str(dest)],
        check=True,
        capture_output=True,
    )
    return dest


def test_shallow_clone_fetches_the_missing_base(tmp_path: Path, pr_origin: dict[str, str]) -> None:
    clone = shallow_clone(pr_origin["url"], tmp_path / "clone", "pull/1/merge")
    g = GitRepo(clone)
    assert g.is_shallow()
    assert g.resolve("HEAD") == pr_origin["merge"]
    assert not g.has_commit(pr_origin["base"])

    assert g.ensure_commit(pr_origin["base"]) == pr_origin["base"]
    assert g.has_commit(pr_origin["base"])
    assert g.ensure_commit(pr_origin["base"]) == pr_origin["base"]  # now a no-op
    # The merge commit is still cut off from its parents: no fork point yet.
    assert g.merge_base(pr_origin["base"], "HEAD") is None

    assert g.ensure_merge_base(pr_origin["base"], "HEAD") == pr_origin["base"]
    assert g.changed_files(pr_origin["base"], "HEAD", GLOBS) == [
        ChangedFile("modified", "rivet/orders.yaml")
    ]
    assert g.changed_files(pr_origin["base"], pr_origin["pr_head"], GLOBS) == [
        ChangedFile("modified", "rivet/orders.yaml")
    ]


def test_ensure_commit_fetches_a_branch_name(tmp_path: Path, pr_origin: dict[str, str]) -> None:
    clone = shallow_clone(pr_origin["url"], tmp_path / "clone", "pull/1/merge")
    assert GitRepo(clone).ensure_commit("pr") == pr_origin["pr_head"]


def test_failing_fetch_says_what_to_do(tmp_path: Path, pr_origin: dict[str, str]) -> None:
    clone = shallow_clone(pr_origin["url"], tmp_path / "clone", "pull/1/merge")
    git(clone, "remote", "remove", "origin")
    g = GitRepo(clone)
    with pytest.raises(GitError) as info:
        g.ensure_commit(pr_origin["base"])
    message = str(info.value)
    assert f"commit {pr_origin['base']} is not in the local clone" in message
    assert "(the clone is shallow)" in message
    assert "set `fetch-depth: 0` on actions/checkout" in message
    assert "pass --base to a commit that exists locally" in message
    assert "command: git fetch --no-tags" in message
    assert "git said: fatal: 'origin' does not appear to be a git repository" in message
    assert info.value.command[:2] == ("git", "fetch")


def test_fetch_errors_mask_credentials(repo: Path) -> None:
    commit(repo, "first", {"a.txt": "a"})
    remote = "https://x-access-token:s3cr3t-token@127.0.0.1:9/owner/repo.git"
    with pytest.raises(GitError) as info:
        GitRepo(repo).ensure_commit("1" * 40, remote=remote)
    assert "s3cr3t-token" not in str(info.value)
    assert "https://***@127.0.0.1:9/owner/repo.git" in str(info.value)
    # Not a shallow clone: no --depth that would make it one.
    assert "--depth" not in " ".join(info.value.command)


def test_git_error_masks_url_credentials() -> None:
    error = GitError(
        "failed",
        command=["git", "fetch", "https://user:tok@github.com/o/r"],
        stderr="fatal: unable to access 'https://user:tok@github.com/o/r/'\n",
    )
    assert "tok" not in str(error)
    assert str(error) == (
        "failed\ncommand: git fetch https://***@github.com/o/r\n"
        "git said: fatal: unable to access 'https://***@github.com/o/r/'"
    )


# ---------------------------------------------------------------------------------------------
# The environment the action runs in


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_workspace_owned_by_another_user(repo: Path) -> None:
    """In a Docker action the workspace belongs to the runner's uid, not the container's."""
    sha = commit(repo, "first", {"rivet/a.yaml": config("a")})
    for path in [repo, *repo.rglob("*")]:
        os.lchown(path, 4242, 4242)
    plain = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=False
    )
    assert plain.returncode != 0 and "dubious ownership" in plain.stderr
    g = GitRepo(repo)
    assert g.resolve("HEAD") == sha
    assert [p for p, _ in g.read_files(sha, GLOBS)] == ["rivet/a.yaml"]


def test_ignores_git_dir_from_the_environment(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sha = commit(repo, "first", {"a.txt": "a"})
    other = init_repo(tmp_path / "other")
    commit(other, "other", {"b.txt": "b"})
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    assert GitRepo(repo).resolve("HEAD") == sha


def test_missing_git_binary_or_directory(tmp_path: Path, repo: Path) -> None:
    with pytest.raises(GitError, match="git executable 'no-such-git' not found"):
        GitRepo(repo, git="no-such-git").is_shallow()
    with pytest.raises(GitError, match="does not exist"):
        GitRepo(tmp_path / "missing").is_shallow()


# -- read_files: every matching config of a revision in two git processes ------------------------


def test_read_files_returns_matching_texts_sorted_and_flags_non_utf8(repo: Path) -> None:
    same = config("same")
    sha = commit(repo, "configs", {
        "rivet/b.yaml": config("b"), "rivet/a.yaml": same, "rivet/copy.yaml": same,
        "rivet/notes.txt": "not a config", "rivet/sp ace é.yaml": config("u"),
    })
    (repo / "rivet" / "latin1.yaml").write_bytes("name: caf\xe9\n".encode("latin-1"))
    sha = commit(repo, "latin-1 file")
    files = GitRepo(repo).read_files(sha, ["rivet/**/*.yaml"])
    assert [p for p, _ in files] == sorted(
        ["rivet/a.yaml", "rivet/b.yaml", "rivet/copy.yaml", "rivet/latin1.yaml",
         "rivet/sp ace é.yaml"])
    texts = dict(files)
    assert texts["rivet/a.yaml"] == same == texts["rivet/copy.yaml"]  # one blob, read once
    assert texts["rivet/b.yaml"] == config("b")
    assert texts["rivet/latin1.yaml"] is None
    assert GitRepo(repo).read_files(sha, ["nothing/*.yaml"]) == []


def test_read_files_agrees_with_show_at_an_older_revision(repo: Path) -> None:
    old = commit(repo, "one", {"rivet/a.yaml": config("a", rows=1)})
    commit(repo, "two", {"rivet/a.yaml": config("a", rows=2), "rivet/new.yaml": config("n")})
    git_repo = GitRepo(repo)
    assert git_repo.read_files(old, ["rivet/*.yaml"]) == [
        ("rivet/a.yaml", git_repo.show(old, "rivet/a.yaml"))]
