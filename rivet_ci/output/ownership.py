"""Files the action leaves in the workspace belong to the workspace's owner, not to root.

GitHub runs a Docker action as the image's default user (root: GitHub documents that a Docker
action must not set `USER`) with the runner's workspace mounted at /github/workspace; that
workspace belongs to the runner's user (uid 1001 on GitHub-hosted runners, any uid on a
self-hosted one). A root-owned `plan.json` or object in `.git` breaks the next job's checkout on
a persistent runner. So, when rivet-ci runs as root and the workspace belongs to someone else:

* every file and directory the action creates or changes is handed to the workspace's
  uid/gid (:meth:`WorkspaceOwner.adopt`, :meth:`WorkspaceOwner.make_parents`);
* git runs as that uid/gid (`GitRepo(run_as=owner.ids)`), so a fetch writes its
  objects, refs and `shallow` file with the right owner from the start.

Running as any other user, or on a workspace root owns, there is nothing to do.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class WorkspaceOwner:
    uid: int
    gid: int

    @classmethod
    def of(cls, workspace: Path) -> WorkspaceOwner | None:
        """The owner to hand files to, or None when no hand-over is needed or possible."""
        if not hasattr(os, "geteuid") or os.geteuid() != 0:
            return None
        try:
            st = workspace.stat()
        except OSError:
            return None
        if st.st_uid == 0 and st.st_gid == 0:
            return None
        return cls(st.st_uid, st.st_gid)

    def adopt(self, path: Path) -> None:
        """Hand `path` (a file or directory we wrote) to the owner, if it is not theirs."""
        st = path.lstat()
        if (st.st_uid, st.st_gid) != (self.uid, self.gid):
            os.lchown(path, self.uid, self.gid)

    def make_parents(self, path: Path) -> None:
        """`mkdir -p` the parent of `path`; every directory created is handed over."""
        missing: list[Path] = []
        parent = path.parent
        while not parent.exists():
            missing.append(parent)
            parent = parent.parent
        for directory in reversed(missing):
            directory.mkdir(exist_ok=True)
            self.adopt(directory)

    @property
    def ids(self) -> tuple[int, int]:
        """(uid, gid), for running git as the owner (`GitRepo(run_as=...)`)."""
        return self.uid, self.gid


def make_parents(path: Path, owner: WorkspaceOwner | None) -> None:
    if owner is None:
        path.parent.mkdir(parents=True, exist_ok=True)
    else:
        owner.make_parents(path)


def adopt(path: Path, owner: WorkspaceOwner | None) -> None:
    if owner is not None and path.exists():
        owner.adopt(path)
