"""Reading config and facts files from disk: the only file I/O planning needs.

Unreadable files become problems (never exceptions), so one broken file never hides the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from rivet_ci.core.common.json_input import JsonInputError, load_json
from rivet_ci.core.common.problems import Problem
from rivet_ci.core.config.loader import LoadedConfig, load_config_text, looks_like_config
from rivet_ci.core.facts.loader import is_facts_document, load_facts_text
from rivet_ci.core.facts.models import FactsFile
from rivet_ci.core.facts.rivet_artifacts import facts_from_artifacts

CONFIG_SUFFIXES = (".yaml", ".yml")


def display_path(path: Path, root: Path) -> str:
    """Repo-relative POSIX path when under `root` (the key facts files use), else as given."""
    return _relative_or_given(path, resolved_path(path), root.resolve())


def resolved_path(path: Path) -> Path | None:
    """`path.resolve()`, or None when `path` runs into a loop of symbolic links (Python 3.11
    raises RuntimeError there, 3.13 OSError): such a path names no file — reading it reports
    "too many levels of symbolic links" as that file's problem — and matches none."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return None


def _relative_or_given(path: Path, resolved: Path | None, resolved_root: Path) -> str:
    try:
        if resolved is not None:
            return resolved.relative_to(resolved_root).as_posix()
    except ValueError:
        pass
    return path.as_posix()


class PathResolver:
    """`Path.resolve` and `display_path` for the many files of one run, with the same results
    at a fraction of the cost.

    `Path.resolve` lstats every component of a path and stats the result; `display_path`
    resolved both the file and the root for each of the 200 config files of 10,000 exports
    (~7 ms in-process; this class: ~1 ms). Here the root is resolved once, and each directory
    once: a file whose last component is not a symbolic link (one lstat tells) resolves to its
    resolved directory joined with its name, which is what `realpath` computes for it. Anything
    else (a symlink, a `..`, a symlink loop) is resolved in full. Made per run, so no answer
    outlives the files it describes.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._resolved_root = root.resolve()
        # directory -> (its resolved path, its display prefix: "" for the root itself,
        # "a/b/" below it, None outside it)
        self._directories: dict[Path, tuple[Path, str | None]] = {}

    def _directory_of(self, path: Path) -> tuple[Path, str | None] | None:
        """The resolved directory of `path` and its display prefix, when `path` resolves to
        that directory joined with its name: its last component is neither a symlink nor `..`
        (else None, as for a directory in a symlink loop, whose error `path.resolve()` raises
        naming `path`)."""
        if path.name in ("", "..") or path.is_symlink():
            return None
        directory = path.parent
        known = self._directories.get(directory)
        if known is None:
            try:
                resolved = directory.resolve()
            except (RuntimeError, OSError):  # a loop of symbolic links (see `resolved_path`)
                return None
            try:
                relative = resolved.relative_to(self._resolved_root).as_posix()
            except ValueError:
                prefix = None
            else:
                prefix = "" if relative == "." else relative + "/"
            known = self._directories[directory] = (resolved, prefix)
        return known

    def resolve(self, path: Path) -> Path | None:
        """`resolved_path(path)`."""
        directory = self._directory_of(path)
        if directory is None:
            return resolved_path(path)
        return directory[0] / path.name

    def display(self, path: Path) -> str:
        """`display_path(path, root)`."""
        directory = self._directory_of(path)
        if directory is None:
            return _relative_or_given(path, resolved_path(path), self._resolved_root)
        resolved, prefix = directory
        if prefix is None:  # outside the root: the file itself could still be the root
            return _relative_or_given(path, resolved / path.name, self._resolved_root)
        return prefix + path.name


# Directories a walk never enters: hidden ones (.git, .venv, .github, ...), virtual
# environments (any directory holding a pyvenv.cfg) and these well-known dependency folders.
SKIPPED_DIRECTORIES = frozenset({"node_modules", "site-packages", "__pycache__", "venv", "env"})


@dataclass
class WalkSkips:
    """What a directory walk left out, so the command can say so, and what it learned about
    the files it kept."""

    directories: list[str] = field(default_factory=list)
    not_rivet: list[str] = field(default_factory=list)  # YAML without `source:` / `exports:`
    # Each file kept -> whether it is a facts document (which the command leaves out, saying
    # so). The walk reads every file to tell a rivet config from other YAML and decides this
    # from the same text, sparing the command a second read of each file (of the 200 files of
    # 10,000 exports: ~3 ms).
    facts_document: dict[Path, bool] = field(default_factory=dict)


def _skipped_directory(path: Path) -> bool:
    return (path.name.startswith(".") or path.name in SKIPPED_DIRECTORIES
            or (path / "pyvenv.cfg").is_file())


def _walk(root: Path, skips: WalkSkips) -> list[Path]:
    out: list[Path] = []
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return out
    for entry in entries:
        if entry.is_dir() and not entry.is_symlink():
            if _skipped_directory(entry):
                skips.directories.append(entry.as_posix())
            else:
                out.extend(_walk(entry, skips))
        elif entry.suffix in CONFIG_SUFFIXES and entry.is_file() and not (
                entry.name.startswith(".")):
            rivet, facts = _classify(entry)
            if rivet:
                out.append(entry)
                skips.facts_document[entry] = facts
            else:
                skips.not_rivet.append(entry.as_posix())
    return out


def _classify(path: Path) -> tuple[bool, bool]:
    """Whether a walked file looks like a rivet config, and whether it is a facts document
    (`is_facts_file`'s answer), from one read."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        # Not UTF-8, so no facts document (as `is_facts_file` says); whether it looks like a
        # config is judged with replacement characters. (A second read, for such files only.)
        try:
            return looks_like_config(path.read_text(encoding="utf-8", errors="replace")), False
        except OSError:
            return True, False
    except OSError:
        return True, False  # the loader reports why it cannot be read
    return looks_like_config(text), is_facts_document(text)


def expand_config_paths(paths: Iterable[Path], skips: WalkSkips | None = None) -> list[Path]:
    """Files as given; directories walked for their rivet YAML files (sorted, recursively),
    skipping hidden and virtual-env directories and YAML that is not a rivet config (no
    top-level `source:` or `exports:`); `skips` collects what was left out."""
    skips = skips if skips is not None else WalkSkips()
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out.extend(_walk(path, skips))
        else:
            out.append(path)
    return out


def is_facts_file(path: Path) -> bool:
    """Whether `path` holds a facts document (never planned as a config); False if unreadable
    (the config loader then reports why)."""
    try:
        return is_facts_document(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return False


def read_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def load_config_file(path: Path, *, root: Path | PathResolver, environ: Mapping[str, str],
                     params: Mapping[str, str] | None = None,
                     path_exists: Callable[[str], bool] | None = None) -> LoadedConfig:
    """The config at `path`, named relative to `root` (given as a run's `PathResolver` when
    loading many files)."""
    shown = root.display(path) if isinstance(root, PathResolver) else display_path(path, root)
    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        rule = "R1" if isinstance(exc, FileNotFoundError) else "R2"
        return LoadedConfig(path=shown, source=None, exports=(), export_lines={},
                            problems=(Problem(file=shown, message=f"cannot read: {reason}",
                                              rule=rule),))
    base = path.parent

    def query_file_exists(name: str) -> bool:
        return (base / name).is_file()

    return load_config_text(shown, text, environ, params=params, path_exists=path_exists,
                            query_file_exists=query_file_exists)


MAX_ARTIFACT_FILES = 10_000


def load_facts_file(path: Path, *, root: Path) -> tuple[FactsFile | None, list[Problem]]:
    """A facts file, or a directory of rivet plan artifacts (`*.json`, see
    `rivet_ci.core.facts.rivet_artifacts`)."""
    shown = display_path(path, root)
    if path.is_dir():
        return load_artifact_dir(path, root=root)
    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return None, [Problem(file=shown, message=f"cannot read facts file: {reason}")]
    return load_facts_text(shown, text)


def load_artifact_dir(path: Path, *, root: Path) -> tuple[FactsFile | None, list[Problem]]:
    """Facts from every `*.json` rivet plan artifact directly in `path` (name order)."""
    shown = display_path(path, root)
    files = sorted(p for p in path.glob("*.json") if p.is_file() and not p.is_symlink())
    if not files:
        return None, [Problem(file=shown, message="no rivet plan artifacts (*.json) in this "
                                                  "directory")]
    if len(files) > MAX_ARTIFACT_FILES:
        return None, [Problem(file=shown, message=f"more than {MAX_ARTIFACT_FILES} files")]
    documents: list[tuple[str, object]] = []
    problems: list[Problem] = []
    for file in files:
        name = display_path(file, root)
        try:
            documents.append((name, load_json(file.read_bytes())))
        except JsonInputError as exc:
            problems.append(Problem(file=name, line=exc.line,
                                    message=f"cannot read rivet plan artifact: {exc.message}"))
        except OSError as exc:
            problems.append(Problem(file=name, message=f"cannot read rivet plan artifact: "
                                                       f"{exc.strerror or type(exc).__name__}"))
    facts, more = facts_from_artifacts(documents)
    return (facts if facts.exports else None), [*problems, *more]
