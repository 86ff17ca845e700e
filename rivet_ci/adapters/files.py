"""Reading config and facts files from disk: the only file I/O planning needs.

Unreadable files become problems (never exceptions), so one broken file never hides the rest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from rivet_ci.core.config_loader import LoadedConfig, load_config_text
from rivet_ci.core.facts import FactsFile
from rivet_ci.core.facts_loader import is_facts_document, load_facts_text
from rivet_ci.core.problems import Problem

CONFIG_SUFFIXES = (".yaml", ".yml")


def display_path(path: Path, root: Path) -> str:
    """Repo-relative POSIX path when under `root` (the key facts files use), else as given."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def expand_config_paths(paths: Iterable[Path]) -> list[Path]:
    """Files as given; directories expanded to their YAML files (sorted, recursively)."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out.extend(sorted(p for p in path.rglob("*") if p.suffix in CONFIG_SUFFIXES
                              and p.is_file()))
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


def load_config_file(path: Path, *, root: Path, environ: Mapping[str, str]) -> LoadedConfig:
    shown = display_path(path, root)
    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return LoadedConfig(path=shown, source=None, exports=(), export_lines={},
                            problems=(Problem(file=shown, message=f"cannot read: {reason}"),))
    return load_config_text(shown, text, environ)


def load_facts_file(path: Path, *, root: Path) -> tuple[FactsFile | None, list[Problem]]:
    shown = display_path(path, root)
    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return None, [Problem(file=shown, message=f"cannot read facts file: {reason}")]
    return load_facts_text(shown, text)
