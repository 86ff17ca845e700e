"""The trust boundary of a pull-request run: which bytes may decide anything (docs/security.md).

Trusted: the base revision, the workflow's inputs and environment, and files the workflow itself
produced (not tracked by git on either side). Untrusted: every byte of the pull request's head.

The files that steer grading — the facts file, `url_file` sources, rivet's `.rivet_state.db`,
a `template-dir` — are read through :class:`TrustedFiles`:

* tracked on the base revision → its content *at the base revision*, whatever the checkout holds;
* changed by the pull request (head differs from the fork point) → additionally a finding
  (``facts-changed-in-pr``, ``url-file-changed-in-pr``, ``state-changed-in-pr``,
  ``template-changed-in-pr``), and the change is not used to grade the pull request;
* added by the pull request (tracked at head only) → nothing is read, plus the finding;
* tracked on neither side → produced by the workflow (an artifact it downloaded, a step before
  this one): read from disk, refusing symbolic links anywhere below the workspace.

A symbolic link tracked at the base revision is never followed either.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from rivet_ci.adapters.git import GitRepo, compile_globs, decode_text
from rivet_ci.adapters.state_history import STATE_FILE
from rivet_ci.core.config.loader import load_config_text
from rivet_ci.core.gate.diff import Finding
from rivet_ci.output.paths import PathRule
from rivet_ci.output.sink import UntrustedPathError, read_nofollow

TrustedKind = Literal["facts", "url-file", "state", "template"]
FINDING_KINDS: Mapping[TrustedKind, str] = {
    "facts": "facts-changed-in-pr",
    "url-file": "url-file-changed-in-pr",
    "state": "state-changed-in-pr",
    "template": "template-changed-in-pr",
}
_WHAT: Mapping[TrustedKind, str] = {
    "facts": "facts file", "url-file": "source URL file", "state": "rivet state database",
    "template": "comment template",
}
SYMLINK_MODE = "120000"


@dataclass
class TrustedFiles:
    """Reads the files that steer grading from the trusted side (see the module docstring)."""

    repo: GitRepo
    workspace: Path
    trusted: str  # the base revision (a commit sha)
    fork_point: str
    head: str
    rule: PathRule | None = None  # the one path rule (default: the workspace alone)
    findings: list[Finding] = field(default_factory=list)
    _reported: set[tuple[str, str]] = field(default_factory=set)

    def relative(self, path: Path) -> str | None:
        """`path` relative to the workspace (POSIX), lexically; None when outside it."""
        absolute = Path(os.path.normpath(self.workspace / path))
        try:
            rel = absolute.relative_to(os.path.normpath(self.workspace))
        except ValueError:
            return None
        return rel.as_posix() if rel.parts else None

    def _note(self, kind: TrustedKind, rel: str, message: str) -> None:
        if (kind, rel) in self._reported:
            return
        self._reported.add((kind, rel))
        self.findings.append(Finding.model_validate({
            "kind": FINDING_KINDS[kind], "status": "new", "file": rel, "message": message}))

    def _compare(self, kind: TrustedKind, rel: str) -> tuple[dict[str, tuple[str, bytes]], bool]:
        """(base entries, tracked anywhere) for a file or directory; notes a PR change."""
        base = self.repo.tree_entries(self.trusted, rel)
        head = self.repo.tree_entries(self.head, rel)
        before = self.repo.tree_entries(self.fork_point, rel)
        if head != before:
            what = _WHAT[kind]
            used = (f"the base revision's version ({self.trusted[:12]}) is used" if base else
                    "it is not used")
            self._note(kind, rel, f"this pull request changes the {what} {rel}; a pull request "
                                  f"cannot grade itself with its own {what}, so {used}")
        return base, bool(base or head or before)

    @property
    def paths(self) -> PathRule:
        return self.rule if self.rule is not None else PathRule.of(self.workspace, {})

    def read_file(self, path: Path, kind: TrustedKind) -> bytes | None:
        """The trusted content of one file, or None when there is none."""
        # Inside the workspace or the runner's temp, or refused (the one path rule); every
        # component on disk is checked when the disk is read.
        target = self.paths.confine(path, _WHAT[kind], links="none")
        rel = self.relative(target)
        if rel is None:  # in the runner's temp directory: the workflow's own file
            root = self.paths.root_of(target)
            if not os.path.lexists(target):
                return None
            return read_nofollow(target, root)
        entries, tracked = self._compare(kind, rel)
        if not tracked:
            target = self.workspace / rel
            if not os.path.lexists(target):
                return None
            return read_nofollow(target, self.workspace)
        entry = entries.get(rel)
        if entry is None:
            return None
        mode, data = entry
        if mode == SYMLINK_MODE:
            raise UntrustedPathError(f"{rel} is a symbolic link at the base revision; a trusted "
                                     f"{_WHAT[kind]} must be a regular file")
        return data

    def check(self, path: Path, kind: TrustedKind) -> None:
        """Note a pull request's change to the file (the finding), without reading it."""
        rel = self.relative(path)
        if rel is not None:
            self._compare(kind, rel)

    def read_dir(self, path: Path, kind: TrustedKind) -> dict[str, bytes] | None:
        """Regular files under a directory at the base revision, by name relative to it.

        None when the directory is tracked on neither side (the workflow's own, on disk).
        Symbolic links are left out.
        """
        rel = self.relative(self.paths.confine(path, _WHAT[kind], links="none"))
        if rel is None:
            return None
        entries, tracked = self._compare(kind, rel)
        if not tracked:
            return None
        return {name[len(rel) + 1:]: data for name, (mode, data) in entries.items()
                if mode != SYMLINK_MODE and name.startswith(rel + "/")}


def check_outside_review(trusted: TrustedFiles, globs: Sequence[str], environ: Mapping[str, str],
                         *, url_files: bool, state: bool) -> None:
    """Note the pull request's changes to the `url_file` or `.rivet_state.db` of any config,
    also one outside the review.

    Live preflight and run history read those files only for the configs in the review (the
    files the change can affect), but a pull request changing another config's source URL
    file or state database is still reported, as it was when every config was probed — by
    comparing the files, never by connecting. Cheap: only the paths the pull request changes
    are looked at, and a base config is loaded only when its text names `url_file` and may
    name one of them.
    """
    if not url_files and not state:
        return
    repo = trusted.repo
    changed: set[str] = set()
    for change in repo.changed_files(trusted.fork_point, trusted.head, ("**/*",)):
        changed.add(change.path)
        if change.old_path:
            changed.add(change.old_path)
    is_config = compile_globs(globs)
    others = {p for p in changed if is_config.fullmatch(p) is None}
    if not others:
        return
    base = repo.tree_blobs(trusted.fork_point, globs)
    if state:
        folders = {PurePosixPath(p).parent for p in others if PurePosixPath(p).name == STATE_FILE}
        if folders:
            configs = {PurePosixPath(p).parent for rev in (trusted.fork_point, trusted.head)
                       for p, _ in (base if rev == trusted.fork_point
                                    else repo.tree_blobs(rev, globs))}
            for folder in sorted(folders & configs):
                trusted.check(Path(folder) / STATE_FILE, "state")
    if url_files:
        names = {PurePosixPath(p).name for p in others}
        texts = repo.read_blobs(oid for _, oid in base)
        for path, oid in base:
            text = decode_text(texts[oid])
            if text is None or "url_file" not in text:
                continue
            if "${" not in text and "\\" not in text and not any(n in text for n in names):
                continue  # (its url_file cannot name a changed file)
            source = load_config_text(path, text, environ).source
            if (source is not None and source.url_file is not None
                    and trusted.relative(Path(source.url_file)) in others):
                trusted.check(Path(source.url_file), "url-file")


def trusted_state_root(trusted: TrustedFiles, paths: Sequence[str], into: Path) -> Path:
    """A directory mirroring the configs' folders with their trusted `.rivet_state.db` files.

    rivet keeps its state beside each config; a pull request may commit one, so the state
    database is taken from the base revision (or the workflow's own untracked file) and copied
    here, where the history reader opens it read-only.
    """
    for folder in sorted({Path(p).parent for p in paths}):
        data = trusted.read_file(folder / STATE_FILE, "state")
        if data is not None:
            target = into / folder / STATE_FILE
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    return into
