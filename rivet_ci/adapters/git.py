"""Git, driven as a subprocess: the revisions, changed files and file contents a PR gate needs.

Responsibilities:

* resolve revisions and make sure the base commit is present, fetching it into a shallow clone
  (``actions/checkout`` fetches one commit by default);
* list the config files a pull request changed, with the same three-dot semantics GitHub shows
  for a pull request (see :meth:`GitRepo.changed_files`);
* read a file at a revision and list the config files of a whole revision;
* match repo-relative POSIX paths against globs with ``**`` (:func:`compile_globs`).

Every failure is a :class:`GitError` that carries the command line and git's stderr, with any
credentials in URLs masked, and, where we know it, what to do next. A fetch — the one command
that talks to another host — ends by the run's deadline when the repository is given one
(`fetch_deadline`: the seconds left), its whole process group killed (git's remote helpers
included): a :class:`GitTimeoutError`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import signal
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rivet_ci.core.common.patterns import COMMIT_SHA, mask_url_userinfo
from rivet_ci.errors import UsageError
from rivet_ci.output.paths import first_symlink

ChangeStatus = Literal["added", "modified", "removed", "renamed"]

# How far `ensure_commit` deepens a shallow clone before giving up and fetching everything.
DEFAULT_FETCH_DEPTH = 50

_FETCH_ADVICE = (
    "set `fetch-depth: 0` on actions/checkout, or pass --base to a commit that exists locally"
)

# Variables that point git at another repository: set when we run inside a git hook or another
# tool's subprocess, they would silently redirect every command away from `root`.
_REPO_LOCATION_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
)



def _run_within(command: list[str], *, cwd: Path, env: Mapping[str, str], stdin: bytes,
                timeout: float | None, **owner: Any) -> subprocess.CompletedProcess[bytes]:
    """`subprocess.run`, except that at `timeout` the command's whole process group is killed
    (a fetch's remote helper, holding the pipes, would keep `run` waiting for them)."""
    if timeout is None:
        return subprocess.run(command, cwd=cwd, env=env, input=stdin, capture_output=True,
                              check=False, **owner)
    with subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          start_new_session=True, **owner) as process:
        try:
            out, err = process.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def _redact(text: str) -> str:
    """Mask ``user:token@`` in URLs: remotes and git's own messages may carry a token."""
    return mask_url_userinfo(text)


class GitError(UsageError):
    """A git command failed, or the repository lacks what the gate needs.

    A setup problem, not a bug: a ``UsageError``, so the CLI prints it and exits with 2.

    ``command`` is the git invocation as shown to users (without the ``-c`` options we add to
    every call) and ``stderr`` git's own explanation; both have credentials masked.
    """

    def __init__(self, message: str, *, command: Sequence[str] = (), stderr: str = "") -> None:
        self.command = tuple(_redact(arg) for arg in command)
        self.stderr = _redact(stderr.strip())
        parts = [message]
        if self.command:
            parts.append(f"command: {' '.join(self.command)}")
        if self.stderr:
            parts.append(f"git said: {self.stderr}")
        super().__init__("\n".join(parts))


class GitTimeoutError(GitError):
    """A fetch did not finish by the run's deadline."""


@dataclass(frozen=True)
class ChangedFile:
    """One file a pull request changed.

    ``path`` is the path at head, or at base for a removed file; ``old_path`` is set only for a
    rename and is the path at base.
    """

    status: ChangeStatus
    path: str
    old_path: str | None = None


# ---------------------------------------------------------------------------------------------
# Globs


def _translate_segment(segment: str) -> str:
    """Regex for one path segment: ``*``, ``?`` and ``[...]`` never match ``/``."""
    out: list[str] = []
    i, n = 0, len(segment)
    while i < n:
        char = segment[i]
        i += 1
        if char == "*":
            while i < n and segment[i] == "*":
                i += 1
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            j = i
            if j < n and segment[j] in "!^":
                j += 1
            if j < n and segment[j] == "]":  # a `]` first in the class is literal
                j += 1
            close = segment.find("]", j)
            if close < 0:  # no closing bracket: a literal `[`, as in fnmatch
                out.append(re.escape(char))
                continue
            body = segment[i:close]
            i = close + 1
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            # Escape everything but the range dash: this keeps `[`, `&`, `~`, `|` and `\` literal
            # and avoids Python's "possible set operation" FutureWarning.
            escaped = "".join(c if c == "-" else re.escape(c) for c in body)
            out.append(f"[^/{escaped}]" if negate else f"(?!/)[{escaped}]")
        else:
            out.append(re.escape(char))
    return "".join(out)


def glob_to_regex(pattern: str) -> str:
    """Translate a glob over repo-relative POSIX paths into an anchored regex (no flags).

    The whole path must match (like ``PurePath.full_match`` in Python 3.13): ``*.yaml`` matches
    ``a.yaml`` but not ``dir/a.yaml``; write ``**/*.yaml`` for any depth.

    * ``*`` any run of characters within one segment, ``?`` one character, ``[abc]``,
      ``[a-z]`` and ``[!abc]`` character classes; none of them match ``/``;
    * ``**`` as a whole segment: ``**/`` matches zero or more directories, a trailing ``/**``
      everything below; ``**`` inside a segment (``a**b``) is an ordinary ``*``;
    * a leading ``/`` is accepted and ignored (paths are relative to the repository root).
    """
    segments = [s for s in pattern.strip().lstrip("/").split("/") if s]
    if not segments:
        raise ValueError(f"empty glob pattern: {pattern!r}")
    out: list[str] = []
    last = len(segments) - 1
    for index, segment in enumerate(segments):
        if segment == "**":
            out.append(".+" if index == last else "(?:[^/]+/)*")
        else:
            out.append(_translate_segment(segment) + ("" if index == last else "/"))
    return "".join(out)


def compile_globs(globs: Iterable[str]) -> re.Pattern[str]:
    """One regex matching a path when any of ``globs`` matches it (see :func:`glob_to_regex`).

    An empty list matches nothing. Raises ``ValueError`` naming the bad pattern.
    """
    alternatives: list[str] = []
    for pattern in globs:
        regex = glob_to_regex(pattern)
        try:
            re.compile(regex)
        except re.error as exc:
            # exc.msg, not str(exc): a position in the translated regex means nothing to users.
            raise ValueError(f"invalid glob pattern {pattern!r}: {exc.msg}") from None
        alternatives.append(f"(?:{regex})")
    if not alternatives:
        return re.compile(r"(?!)")
    return re.compile("|".join(alternatives))


def _matches(regex: re.Pattern[str], path: str) -> bool:
    return regex.fullmatch(path) is not None


# ---------------------------------------------------------------------------------------------
# The repository


def _decode_path(raw: bytes) -> str:
    # Git paths are bytes. surrogateescape round-trips a non-UTF-8 name back to git unchanged
    # when we later pass it on a command line (`rev:path`).
    return raw.decode("utf-8", "surrogateescape")


class GitRepo:
    """A working copy at ``root`` (the top of the work tree), queried with the ``git`` binary."""

    def __init__(self, root: Path, *, git: str = "git",
                 run_as: tuple[int, int] | None = None,
                 fetch_deadline: Callable[[], float] | None = None) -> None:
        self.root = Path(root).absolute()
        self._git = git
        # The seconds left for fetching (the run's deadline for its forge's hosts); None: none.
        self._fetch_deadline = fetch_deadline
        # (uid, gid) to run git as: the workspace's owner when rivet-ci runs as root in a Docker
        # action, so a fetch leaves no root-owned objects in .git (see rivet_ci.output.ownership).
        self._run_as = run_as
        # In a Docker action the workspace belongs to the runner's uid, not to the container's
        # user, and git refuses such a repository ("dubious ownership") unless it is listed in
        # safe.directory, which git honours on the command line but not in the repo's config.
        safe_dirs = dict.fromkeys([str(self.root), str(self.root.resolve())])
        self._config_args: tuple[str, ...] = (
            *(arg for d in safe_dirs for arg in ("-c", f"safe.directory={d}")),
            # Raw UTF-8 paths instead of "\303\251"-style quoting (we also read -z output).
            "-c",
            "core.quotepath=off",
        )
        env = {k: v for k, v in os.environ.items() if k not in _REPO_LOCATION_VARS}
        # Never block on a credential prompt in CI; and English messages, since we show them.
        env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C")
        self._env: Mapping[str, str] = env

    def __repr__(self) -> str:
        return f"GitRepo({str(self.root)!r})"

    # -- plumbing -------------------------------------------------------------------------------

    def _run(
        self, *args: str, check: bool = True, stdin: bytes | None = None,
        timeout: float | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        command = [self._git, *self._config_args, *args]
        shown = ["git", *args]
        # As the workspace's owner when there is one to act as (a container running as root).
        owner: dict[str, Any] = ({} if self._run_as is None else {
            "user": self._run_as[0], "group": self._run_as[1], "extra_groups": []})
        try:
            result = _run_within(command, cwd=self.root, env=self._env,
                                 stdin=stdin if stdin is not None else b"", timeout=timeout,
                                 **owner)
        except FileNotFoundError as exc:
            # Either the git binary or the working directory is missing; say which.
            what = (
                f"repository directory {self.root} does not exist"
                if not self.root.is_dir()
                else f"git executable {self._git!r} not found; install git"
            )
            raise GitError(what, command=shown) from exc
        except subprocess.TimeoutExpired:
            raise GitTimeoutError(
                f"git did not finish within the run's deadline ({timeout:.0f} s were left when "
                "it started)", command=shown) from None
        if check and result.returncode != 0:
            raise GitError(
                f"git exited with status {result.returncode}",
                command=shown,
                stderr=result.stderr.decode("utf-8", "replace"),
            )
        return result

    def _fetch(self, *args: str) -> None:
        """`git fetch args`, within the run's deadline (when the repository has one)."""
        left = None if self._fetch_deadline is None else self._fetch_deadline()
        if left is not None and left <= 0:
            raise GitTimeoutError("the run's deadline passed before git could fetch",
                             command=["git", "fetch", *args])
        self._run("fetch", *args, timeout=left)

    def _text(self, *args: str) -> str:
        return self._run(*args).stdout.decode("utf-8", "replace").strip()

    @staticmethod
    def _check_rev(rev: str) -> None:
        # A revision starting with "-" would be parsed as an option by git.
        if not rev or rev.startswith("-"):
            raise GitError(f"invalid revision {rev!r}")

    # -- revisions ------------------------------------------------------------------------------

    def resolve(self, rev: str) -> str:
        """The full commit sha ``rev`` names; ``GitError`` when it names no local commit."""
        self._check_rev(rev)
        result = self._run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
        if result.returncode != 0:
            raise GitError(
                f"{rev!r} is not a commit in {self.root}",
                command=["git", "rev-parse", "--verify", f"{rev}^{{commit}}"],
                stderr=result.stderr.decode("utf-8", "replace"),
            )
        return result.stdout.decode("ascii").strip()

    def is_shallow(self) -> bool:
        """Whether this is a shallow clone (history cut off, as after ``--depth=1``)."""
        return self._text("rev-parse", "--is-shallow-repository") == "true"

    def has_commit(self, sha: str) -> bool:
        """Whether ``sha`` (or any revision) names a commit present in the local object store."""
        self._check_rev(sha)
        return self._run("cat-file", "-e", f"{sha}^{{commit}}", check=False).returncode == 0

    def ensure_commit(
        self, rev: str, *, remote: str = "origin", depth: int = DEFAULT_FETCH_DEPTH
    ) -> str:
        """Make sure ``rev`` is present locally, fetching it from ``remote`` if needed.

        Returns its full sha. A PR's base commit is usually missing from the one-commit clone
        ``actions/checkout`` makes, so we fetch exactly that commit (``depth`` commits deep in a
        shallow clone, so merge-base has some history to work with); when the server refuses
        to serve a commit by id, we deepen the clone and finally unshallow it.
        """
        self._check_rev(rev)
        if self.has_commit(rev):
            return self.resolve(rev)

        shallow = self.is_shallow()
        # Only a shallow clone gets --depth: on a full clone it would make the repo shallow.
        depth_args = [f"--depth={depth}"] if shallow else []
        attempts: list[list[str]] = [["--no-tags", *depth_args, remote, rev]]
        if shallow:
            attempts.append(["--no-tags", f"--deepen={depth}", remote])
            attempts.append(["--no-tags", "--unshallow", remote])

        last_error: GitError | None = None
        for attempt in attempts:
            try:
                self._fetch(*attempt)
            except GitTimeoutError:
                raise
            except GitError as exc:
                last_error = exc
                continue
            if self.has_commit(rev):
                return self.resolve(rev)
            # `rev` may be a branch name that only exists on the remote: use what we fetched.
            if attempt[-1] == rev and self.has_commit("FETCH_HEAD"):
                return self.resolve("FETCH_HEAD")

        raise GitError(
            f"commit {rev} is not in the local clone and could not be fetched from "
            f"{_redact(remote)!r}{' (the clone is shallow)' if shallow else ''}; {_FETCH_ADVICE}",
            command=last_error.command if last_error else (),
            stderr=last_error.stderr if last_error else "",
        )

    def ensure_merge_base(
        self, base: str, head: str, *, remote: str = "origin", depth: int = DEFAULT_FETCH_DEPTH
    ) -> str:
        """Fetch what :meth:`changed_files` needs and return the merge base of base and head.

        Fetching the base commit alone is not enough in a shallow clone: the checked-out head
        (for a PR, GitHub's merge commit) stays cut off from its parents, so the two histories
        never meet. We deepen both sides, then unshallow, until the fork point is local.
        """
        base_sha = self.ensure_commit(base, remote=remote, depth=depth)
        head_sha = self.ensure_commit(head, remote=remote, depth=depth)
        found = self.merge_base(base_sha, head_sha)
        if found is not None:
            return found
        if not self.is_shallow():
            raise GitError(f"{base} and {head} have no common ancestor (unrelated histories)")
        last_error: GitError | None = None
        for attempt in (
            ["--no-tags", f"--deepen={depth}", remote, base_sha, head_sha],
            ["--no-tags", "--unshallow", remote, base_sha, head_sha],
            ["--no-tags", "--unshallow", remote],
        ):
            if not self.is_shallow():
                break
            try:
                self._fetch(*attempt)
            except GitTimeoutError:
                raise
            except GitError as exc:
                last_error = exc
                continue
            found = self.merge_base(base_sha, head_sha)
            if found is not None:
                return found
        raise GitError(
            f"{base} and {head} have no common ancestor in the local history, even after "
            f"fetching from {_redact(remote)!r}; {_FETCH_ADVICE}",
            command=last_error.command if last_error else (),
            stderr=last_error.stderr if last_error else "",
        )

    def merge_base(self, a: str, b: str) -> str | None:
        """The best common ancestor of ``a`` and ``b``, or None when the local history has none.

        None also happens in a shallow clone whose history stops before the fork point.
        """
        self._check_rev(a)
        self._check_rev(b)
        result = self._run("merge-base", a, b, check=False)
        if result.returncode == 1 and not result.stderr.strip():
            return None
        if result.returncode != 0:
            raise GitError(
                f"cannot compute the merge base of {a} and {b}",
                command=["git", "merge-base", a, b],
                stderr=result.stderr.decode("utf-8", "replace"),
            )
        return result.stdout.decode("ascii").strip()

    # -- files ------------------------------------------------------------------------------------

    def changed_files(self, base: str, head: str, globs: Sequence[str]) -> list[ChangedFile]:
        """The files matching ``globs`` that ``head`` changed since it forked from ``base``.

        Three-dot semantics, as GitHub's "Files changed" tab: the diff runs from the merge base
        of ``base`` and ``head`` to ``head``, so commits that landed on the base branch after the
        PR branched off are not reported as the PR's. Renames are detected (``-M``); a rename
        is kept when either its old or its new path matches. Sorted by path.

        Raises ``GitError`` when there is no merge base, typically a clone too shallow to reach
        the fork point.
        """
        regex = compile_globs(globs)
        fork_point = self.merge_base(base, head)
        if fork_point is None:
            shallow = " (the clone is shallow)" if self.is_shallow() else ""
            raise GitError(
                f"{base} and {head} have no common ancestor in the local history{shallow}; "
                f"{_FETCH_ADVICE}"
            )
        raw = self._run(
            "diff",
            "--name-status",
            "-z",
            "-M",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            fork_point,
            self.resolve(head),
            "--",
        ).stdout
        return sorted(
            (c for c in _parse_name_status(raw) if _change_matches(regex, c)),
            key=lambda c: (c.path, c.old_path or ""),
        )

    def show(self, rev: str, path: str) -> str | None:
        """The content of ``path`` (repo-relative, POSIX) at ``rev``, decoded as UTF-8.

        None when no file exists at that path in that revision (a directory is not a file).
        ``GitError`` when ``rev`` is not a commit or the file is not valid UTF-8.
        """
        sha = self.resolve(rev)
        spec = f"{sha}:{path.lstrip('/')}"
        kind = self._run("cat-file", "-t", spec, check=False)
        if kind.returncode != 0 or kind.stdout.strip() != b"blob":
            return None
        # cat-file, not `git show`: no textconv filters, pager or diff options can get involved.
        data = self._run("cat-file", "blob", spec).stdout
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise GitError(f"{path} at {rev} is not valid UTF-8 ({exc.reason})") from None

    def tree_entries(self, rev: str, path: str) -> dict[str, tuple[str, bytes]]:
        """Files at or under ``path`` at ``rev``: repo-relative path -> (mode, content).

        ``path`` names a file or a directory; nothing there gives ``{}``. Symbolic links
        (mode 120000) are listed with their target as content, so callers can refuse them.
        """
        sha = self.resolve(rev)
        spec = path.strip("/")
        raw = self._run("ls-tree", "-r", "-z", "--full-tree", sha, "--", spec).stdout
        wanted: list[tuple[str, str, str]] = []
        for entry in raw.split(b"\0"):
            meta, _, raw_path = entry.partition(b"\t")
            parts = meta.split()
            name = _decode_path(raw_path)
            if len(parts) == 3 and parts[1] == b"blob" and (
                    name == spec or name.startswith(spec + "/")):
                wanted.append((name, parts[0].decode("ascii"), parts[2].decode("ascii")))
        if not wanted:
            return {}
        out = self._run("cat-file", "--batch",
                        stdin="\n".join(oid for _, _, oid in wanted).encode() + b"\n").stdout
        entries: dict[str, tuple[str, bytes]] = {}
        pos = 0
        for name, mode, _ in wanted:
            header_end = out.index(b"\n", pos)
            size = int(out[pos:header_end].split()[2])
            entries[name] = (mode, out[header_end + 1 : header_end + 1 + size])
            pos = header_end + 1 + size + 1
        return entries

    def tree_blobs(self, rev: str, globs: Sequence[str]) -> list[tuple[str, str]]:
        """(path, blob id) of every file at ``rev`` whose path matches ``globs``, sorted by path.

        One ``ls-tree``: the blob ids tell which files two revisions share (and key the plan
        cache, rivet_ci.adapters.plan_cache) before any content is read.
        """
        regex = compile_globs(globs)
        raw = self._run("ls-tree", "-r", "-z", "--full-tree", self.resolve(rev)).stdout
        wanted: list[tuple[str, str]] = []
        for entry in raw.split(b"\0"):
            if not entry:
                continue
            meta, _, raw_path = entry.partition(b"\t")
            parts = meta.split()
            path = _decode_path(raw_path)
            if len(parts) == 3 and parts[1] == b"blob" and _matches(regex, path):
                wanted.append((path, parts[2].decode("ascii")))
        return sorted(wanted)

    def read_blobs(self, oids: Iterable[str]) -> dict[str, bytes]:
        """The content of each blob id, in ONE ``cat-file --batch`` however many there are
        (each id read once, however many paths or revisions share it)."""
        unique = list(dict.fromkeys(oids))
        if not unique:
            return {}
        for oid in unique:  # ids come from ls-tree; anything else would be a bug
            if not COMMIT_SHA.fullmatch(oid):  # the same shape as any object id
                raise GitError(f"not a blob id: {oid!r}")
        out = self._run("cat-file", "--batch", stdin="\n".join(unique).encode() + b"\n").stdout
        contents: dict[str, bytes] = {}
        pos = 0
        for oid in unique:
            header_end = out.index(b"\n", pos)
            size = int(out[pos:header_end].split()[2])
            contents[oid] = out[header_end + 1 : header_end + 1 + size]
            pos = header_end + 1 + size + 1  # the body is followed by a newline
        return contents

    def read_files(self, rev: str, globs: Sequence[str]) -> list[tuple[str, str | None]]:
        """(path, text) of every file at ``rev`` matching ``globs``, sorted by path.

        Two git processes however many files match (``ls-tree`` and one ``cat-file --batch``),
        instead of one per file. The text is None for a file that is not valid UTF-8.
        """
        listed = self.tree_blobs(rev, globs)
        contents = self.read_blobs(oid for _, oid in listed)
        return [(path, decode_text(contents[oid])) for path, oid in listed]

    def worktree_blobs(self, globs: Sequence[str]) -> list[tuple[str, str, bytes]]:
        """(path, blob id, content) of every tracked or untracked, not ignored file on disk
        matching ``globs``; the id is the one ``git hash-object`` gives (:func:`blob_id`)."""
        regex = compile_globs(globs)
        raw = self._run("ls-files", "-z", "--cached", "--others", "--exclude-standard",
                        "--full-name").stdout
        out: list[tuple[str, str, bytes]] = []
        for path in sorted({_decode_path(p) for p in raw.split(b"\0") if p}):
            if not _matches(regex, path):
                continue
            target = self.root / path
            if not target.is_file():  # deleted in the working tree, or a submodule
                continue
            data = target.read_bytes()
            out.append((path, blob_id(data), data))
        return out

    # -- the working tree ---------------------------------------------------------------------

    def tracks_any(self, path: Path) -> bool:
        """Whether git tracks any file at or below `path` (False for a path lexically outside
        the repository): a folder a commit can fill is not one to trust as a cache. Fails
        closed: when git cannot answer (a path beyond a symbolic link, a broken index), True."""
        absolute = Path(os.path.normpath(Path(path).absolute()))
        root = Path(os.path.normpath(self.root.absolute()))
        if absolute != root and root not in absolute.parents:
            return False
        if first_symlink(absolute, root) is not None:
            return True  # git answers "nothing" beyond a link, with status 0: fail closed
        result = self._run("ls-files", "-z", "--", str(absolute), check=False)
        return result.returncode != 0 or bool(result.stdout.strip(b"\0"))

    def check_repository(self) -> None:
        """``GitError`` saying so when ``root`` is not inside a git work tree."""
        if not self.root.is_dir():
            raise GitError(f"not a git repository: {self.root} does not exist")
        result = self._run("rev-parse", "--is-inside-work-tree", check=False)
        if result.returncode != 0 or result.stdout.strip() != b"true":
            raise GitError(
                f"not a git repository: {self.root} (run rivet-ci diff inside a clone, or pass "
                "--repo DIR)",
                stderr=result.stderr.decode("utf-8", "replace"))

    def worktree_changes(self, globs: Sequence[str]) -> list[str]:
        """Paths matching ``globs`` with uncommitted changes (staged, unstaged or untracked)."""
        regex = compile_globs(globs)
        raw = self._run("status", "--porcelain=v1", "-z", "--untracked-files=all",
                        "--no-renames").stdout
        paths = []
        for entry in raw.split(b"\0"):
            if len(entry) > 3:
                path = _decode_path(entry[3:])
                if _matches(regex, path):
                    paths.append(path)
        return sorted(set(paths))

    def read_worktree_files(self, globs: Sequence[str]) -> list[tuple[str, str | None]]:
        """(path, text) of every tracked or untracked, not ignored file on disk matching
        ``globs``, as :meth:`read_files` does for a commit."""
        return [(path, decode_text(data)) for path, _, data in self.worktree_blobs(globs)]

    def changed_files_worktree(self, base: str, globs: Sequence[str]) -> list[ChangedFile]:
        """Like :meth:`changed_files`, from ``base`` to the working tree (untracked = added)."""
        regex = compile_globs(globs)
        raw = self._run("diff", "--name-status", "-z", "-M", "--no-color", "--no-ext-diff",
                        "--no-textconv", self.resolve(base), "--").stdout
        changes = [c for c in _parse_name_status(raw) if _change_matches(regex, c)]
        untracked = self._run("ls-files", "-z", "--others", "--exclude-standard",
                              "--full-name").stdout
        changes += [ChangedFile("added", path) for path in
                    (_decode_path(p) for p in untracked.split(b"\0") if p)
                    if _matches(regex, path)]
        return sorted(changes, key=lambda c: (c.path, c.old_path or ""))


def blob_id(data: bytes) -> str:
    """Git's object id of a blob with this content (SHA-1 repositories: ``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def decode_text(data: bytes) -> str | None:
    """A file's bytes as UTF-8 text, or None when they are not valid UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _change_matches(regex: re.Pattern[str], change: ChangedFile) -> bool:
    return _matches(regex, change.path) or (
        change.old_path is not None and _matches(regex, change.old_path)
    )


def _parse_name_status(raw: bytes) -> list[ChangedFile]:
    """Parse ``git diff --name-status -z``: ``STATUS\\0path\\0`` or ``R100\\0old\\0new\\0``."""
    fields = raw.split(b"\0")
    if fields and fields[-1] == b"":
        fields.pop()
    changes: list[ChangedFile] = []
    i = 0
    while i < len(fields):
        status = fields[i].decode("ascii")
        letter = status[:1]
        if letter in ("R", "C"):
            old, new = _decode_path(fields[i + 1]), _decode_path(fields[i + 2])
            i += 3
            # A copy (only with diff.renames=copies in the user's config) leaves the source in
            # place: for the gate the destination is simply a new file.
            changes.append(
                ChangedFile("renamed", new, old) if letter == "R" else ChangedFile("added", new)
            )
            continue
        path = _decode_path(fields[i + 1])
        i += 2
        if letter == "A":
            changes.append(ChangedFile("added", path))
        elif letter == "D":
            changes.append(ChangedFile("removed", path))
        else:
            # M, T (type change, e.g. file <-> symlink), U (unmerged), X: the path exists on both
            # sides with different content, which is what "modified" means to the gate.
            changes.append(ChangedFile("modified", path))
    return changes
