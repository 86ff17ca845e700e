"""The optional on-disk plan cache of `rivet-ci diff` and the action (`--cache-dir`, `cache-dir`).

Two files per config plan (the plan, and its summary for runs that write no plan document),
named by its key (`core.plan_reuse.plan_key`: a sha256 over rivet-ci's
version and planning code, the config's path, its git blob id, the values of the placeholders it
uses and the facts). Nothing a pull request writes decides a file name: names are hex digests,
below `DIR/rivet-ci-plans-v<N>/`, opened without following symbolic links. An entry is data, not
code (JSON validated into the plan models; never pickle): an entry that cannot be read, is too
large, names another key or does not validate is a miss and is rewritten. A plan that would not
come back identical from JSON is not stored. Failing to write is never an error (the cache is an
optimisation): the run goes on and says so on stderr.

See docs/action.md ("Caching plans") for the `actions/cache` step that keeps the directory
between workflow runs.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from rivet_ci import __version__
from rivet_ci.adapters.git import GitRepo
from rivet_ci.core.plan.planner import ConfigPlan
from rivet_ci.core.plan.reuse import PLAN_KEY_FORMAT, summary_plan
from rivet_ci.output.paths import PathRefusedError, PathRule, inside, normalized, refuse_symlinks

MAX_ENTRY_BYTES = 64 * 1024 * 1024
_KEY = re.compile(r"[0-9a-f]{64}")
_CORE = Path(__file__).resolve().parent.parent / "core"


@functools.cache
def planning_fingerprint() -> str:
    """rivet-ci's version and a digest of its planning code (every module of `rivet_ci.core`):
    a cache written by any other code — a release or a local edit — is never read."""
    digest = hashlib.sha256(__version__.encode())
    for module in sorted(_CORE.rglob("*.py")):
        digest.update(module.relative_to(_CORE).as_posix().encode() + b"\0")
        digest.update(module.read_bytes())
    return digest.hexdigest()


class CacheEntry(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    format: int
    key: str
    export_lines: dict[str, int]
    plan: ConfigPlan


@dataclass(frozen=True)
class CachedPlan:
    plan: ConfigPlan
    export_lines: dict[str, int]


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    written: int = 0
    invalid: int = 0  # entries present but unreadable: treated as misses and rewritten
    not_stored: int = 0  # plans that would not come back identical from JSON
    write_error: str | None = None
    unused: str | None = None  # why this run did not use the cache at all

    def summary(self) -> str:
        if self.unused is not None:
            return f"not used ({self.unused})"
        parts = [f"{self.hits} hit(s)", f"{self.misses} miss(es)", f"{self.written} written"]
        if self.invalid:
            parts.append(f"{self.invalid} invalid entr(y/ies) ignored")
        if self.not_stored:
            parts.append(f"{self.not_stored} not cacheable")
        text = ", ".join(parts)
        if self.write_error:
            text += f"; could not write: {self.write_error}"
        return text


@dataclass
class PlanCache:
    """Plans by key below `directory` (created on the first write)."""

    directory: Path
    stats: CacheStats = field(default_factory=CacheStats)
    # Called on every folder and file the cache creates (the workspace owner takes them over
    # when rivet-ci runs as root in a Docker action: rivet_ci.ownership).
    adopt: Callable[[Path], None] | None = None

    @property
    def root(self) -> Path:
        return self.directory / f"rivet-ci-plans-v{PLAN_KEY_FORMAT}"

    def _path(self, key: str, summary: bool = False) -> Path:
        if not _KEY.fullmatch(key):
            raise ValueError(f"not a plan key: {key!r}")
        return self.root / key[:2] / f"{key}{'.summary' if summary else ''}.json"

    def get(self, key: str, *, summary: bool = False) -> CachedPlan | None:
        """The plan stored under `key` (with `summary`, its `core.plan_reuse.summary_plan`,
        stored beside it: a tenth of the reading)."""
        path = self._path(key, summary)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            self.stats.misses += 1
            return None
        try:
            with os.fdopen(fd, "rb") as handle:
                data = handle.read(MAX_ENTRY_BYTES + 1)
            if len(data) > MAX_ENTRY_BYTES:
                raise ValueError("entry too large")
            entry = CacheEntry.model_validate_json(data)
            if entry.format != PLAN_KEY_FORMAT or entry.key != key:
                raise ValueError("entry for another key")
        except (OSError, ValueError, ValidationError, RecursionError):
            self.stats.invalid += 1
            self.stats.misses += 1
            return None
        self.stats.hits += 1
        return CachedPlan(plan=entry.plan, export_lines=entry.export_lines)

    def put(self, key: str, plan: ConfigPlan, export_lines: dict[str, int]) -> None:
        """Store a full plan and its summary; nothing when the plan would not come back from
        JSON exactly as it is."""
        if self.stats.write_error is not None:
            return  # one failure is enough: the cache is an optimisation
        texts = []
        for summary, stored in ((False, plan), (True, summary_plan(plan))):
            text = CacheEntry(format=PLAN_KEY_FORMAT, key=key, export_lines=export_lines,
                              plan=stored).model_dump_json().encode("utf-8")
            # The full plan must come back exactly; its summary keeps a subset of the same
            # values (and None / empty for the rest), so it then does too.
            if not summary:
                try:
                    if CacheEntry.model_validate_json(text).plan != stored:
                        raise ValueError("not the same plan")
                except (ValidationError, ValueError):
                    self.stats.not_stored += 1
                    return
            texts.append((self._path(key, summary), text))
        try:
            for path, text in texts:
                _write_below(self.directory, path, text, self.adopt)
        except OSError as exc:
            self.stats.write_error = f"{self.root}: {exc.strerror or exc}"
            return
        self.stats.written += 1


def open_cache(directory: Path | None, repo: GitRepo,
               adopt: Callable[[Path], None] | None = None, *,
               rule: PathRule | None = None) -> tuple[PlanCache | None, str | None]:
    """The plan cache in `directory`, or None and why not.

    Not used: a folder reached through a symbolic link at any component below the workspace
    (`rule`, the one path rule; without one — the CLI — below the repository), one outside
    the workspace and the runner's temp (with `rule`), or a folder git tracks files in or
    cannot say it tracks none in (a commit — a pull request — could fill it with entries).
    """
    if directory is None:
        return None, None
    try:
        if rule is not None:
            directory = rule.confine(directory, "cache-dir")
        else:
            directory = normalized(directory, Path.cwd())
            root = Path(os.path.normpath(repo.root.absolute()))
            refuse_symlinks(directory, root if inside(directory, root) else directory.parent,
                            action="use", what="cache-dir")
    except PathRefusedError as exc:
        return None, f"{exc}; not used as the plan cache"
    if repo.tracks_any(directory):
        return None, (f"git tracks files in {directory} (or cannot tell that it tracks none): "
                      "a commit could fill it, so it is not used as the plan cache")
    return PlanCache(directory, adopt=adopt), None


def _write_below(top: Path, path: Path, data: bytes,
                 adopt: Callable[[Path], None] | None) -> None:
    """Write `path` atomically, creating its folders below `top`; no folder on the way (below
    `top`, which the workflow names) and not the file itself may be a symbolic link."""
    if not top.is_dir():
        top.mkdir(parents=True, exist_ok=True)
        if adopt is not None:
            adopt(top)
    current = top
    for part in path.parent.relative_to(top).parts:
        current = current / part
        created = False
        with contextlib.suppress(FileExistsError):
            current.mkdir()
            created = True
        if current.is_symlink() or not current.is_dir():
            raise OSError(20, "a symbolic link or a file where the cache expects a folder")
        if created and adopt is not None:
            adopt(current)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(temporary, flags, 0o644)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if adopt is not None:
            adopt(temporary)
        os.replace(temporary, path)  # replaces a link at `path` itself, never follows it
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
