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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from rivet_ci.adapters.git import GitRepo
from rivet_ci.core.diff import Finding
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

    def read_file(self, path: Path, kind: TrustedKind) -> bytes | None:
        """The trusted content of one file, or None when there is none."""
        rel = self.relative(path)
        if rel is None:  # outside the workspace: a path the workflow chose
            target = path if path.is_absolute() else self.workspace / path
            return read_nofollow(target, None) if target.is_file() else None
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

    def read_dir(self, path: Path, kind: TrustedKind) -> dict[str, bytes] | None:
        """Regular files under a directory at the base revision, by name relative to it.

        None when the directory is tracked on neither side (the workflow's own, on disk).
        Symbolic links are left out.
        """
        rel = self.relative(path)
        if rel is None:
            return None
        entries, tracked = self._compare(kind, rel)
        if not tracked:
            return None
        return {name[len(rel) + 1:]: data for name, (mode, data) in entries.items()
                if mode != SYMLINK_MODE and name.startswith(rel + "/")}
