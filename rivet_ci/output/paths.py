"""The one path rule (docs/security.md, "One path rule"): how every path a pull request could
shape is resolved before rivet-ci reads or writes it.

A pull request controls the files in the workspace, symbolic links included, so a path the
workflow names (``output``, ``cache-dir``, ``facts``, ``template-dir``, ``waivers``, the comment
file, a ``url_file``, a ``query_file``, a state database) could lead anywhere through a link it
committed — at the last component or at any directory on the way. The rule:

* the path is made absolute (relative to the workspace) and normalised *lexically*: ``..`` is
  removed by the text, never by asking the file system, so ``a/link/../x`` is ``a/x`` and the
  I/O uses that normalised path;
* it must lie inside the workspace or, for :class:`PathRule`, the runner's temp directory
  (``RUNNER_TEMP``); anything else is refused;
* no component below that root may be a symbolic link (``lstat`` of each existing one; the
  root and what lies above it are the workflow's, not the pull request's).

A refusal is a :class:`PathRefusedError` (a ``UsageError``: exit 2) naming the input, the path and
the link. Every reader and writer of such paths goes through :func:`first_symlink` (the sink,
the trusted-file reader, the template loader, the plan cache, ``query_file``), and the action
confines each input with :meth:`PathRule.confine` before it is used.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from rivet_ci.errors import UsageError


class PathRefusedError(UsageError):
    """A path the one path rule refuses: outside the allowed roots, or through a symlink."""


def normalized(path: Path, base: Path) -> Path:
    """`path` made absolute against `base` and normalised lexically (nothing followed)."""
    return Path(os.path.normpath(base / path))


def inside(path: Path, root: Path) -> bool:
    """Whether the normalised `path` is `root` or below it (lexically)."""
    return path == root or root in path.parents


def first_symlink(path: Path, root: Path, *, include_last: bool = True) -> Path | None:
    """The first component of `path` below `root` that is a symbolic link (`path` itself too,
    unless `include_last` is false), by `lstat`; None when there is none or `path` is not
    below `root`. Both are taken as given (normalise them first). A component that cannot be
    looked at for another reason than not existing counts as a link: fail closed."""
    try:
        relative = path.relative_to(root)
    except ValueError:
        return None
    parts = relative.parts if include_last else relative.parts[:-1]
    current = root
    for part in parts:
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return None  # nothing below a missing component exists either
        except NotADirectoryError:
            return None
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:
                return None
            return current
        if stat.S_ISLNK(mode):
            return current
    return None


def refuse_symlinks(path: Path, root: Path | None, *, action: str, what: str = "",
                    include_last: bool = True) -> None:
    """`PathRefusedError` when a component of `path` below `root` is a symbolic link."""
    if root is None:
        return
    link = first_symlink(path, root, include_last=include_last)
    if link is not None:
        label = f"{what} " if what else ""
        shown = "it" if link == path else str(link)
        raise PathRefusedError(f"refusing to {action} {label}{path}: {shown} is a symbolic link "
                          "(committed by the pull request?); rivet-ci never follows one")


@dataclass(frozen=True)
class PathRule:
    """The roots paths must stay in: the workspace first, then the runner's temp directory."""

    workspace: Path
    others: tuple[Path, ...] = ()

    @classmethod
    def of(cls, workspace: Path, environ: Mapping[str, str]) -> PathRule:
        root = Path(os.path.normpath(workspace.absolute()))
        temp = environ.get("RUNNER_TEMP", "").strip()
        others = (Path(os.path.normpath(Path(temp).absolute())),) if temp else ()
        return cls(root, others)

    def root_of(self, path: Path) -> Path | None:
        """The deepest allowed root holding the normalised `path`."""
        roots = [r for r in (self.workspace, *self.others) if inside(path, r)]
        return max(roots, key=lambda r: len(r.parts)) if roots else None

    def confine(self, path: Path, what: str, *, action: str = "read",
                links: Literal["all", "parents", "none"] = "all") -> Path:
        """`path` (relative to the workspace, or absolute) normalised and checked by the rule.

        `links`: which components may not be symbolic links — all of them; only the parents
        (a file written by replacing it: a link there is replaced, never followed); or none
        here, for a trusted file read from the base revision by its path, whose reader checks
        every component when it reads the disk (`sink.read_nofollow`).
        """
        target = normalized(path, self.workspace)
        root = self.root_of(target)
        if root is None:
            where = f"the workspace ({self.workspace})" + "".join(
                f" or the runner's temp directory ({r})" for r in self.others)
            raise PathRefusedError(f"refusing to {action} {what} {path}: it is outside {where}")
        if links != "none":
            refuse_symlinks(target, root, action=action, what=what,
                            include_last=links == "all")
        return target
