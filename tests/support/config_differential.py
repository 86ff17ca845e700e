"""rivet's verdict on a config and ours, side by side (no tests).

rivet's: `config_verdict` (the real binary, sandboxed). Ours: `rivet-ci check --format json
--check-environment`, run in-process with the same environment and an empty working directory
as rivet's. Both are accept / refuse / environment; a refusal also names a field: rivet's
is read off its message (`exports[0].cdc: ...`, `load: ...` from the YAML layer; `export
'orders': ...` from validation, which names the export), ours is the `key` of our errors.
They agree on a refusal when one of our errors is at rivet's field or below it (or above it:
rivet names `load` for a problem deep in the block). We report every problem of a file, rivet
the first, so any of our errors may be the one rivet names.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from rivet_ci.cli import run
from rivet_ci.commands.context import Context
from rivet_ci.core.config.rules import ENVIRONMENT_RULES
from support.config_corpus import Case
from support.real_rivet import ConfigVerdict, config_verdict

RIVET_WORKERS = 2


@dataclass(frozen=True)
class Ours:
    verdict: str
    fields: tuple[str, ...]  # the keys of our errors (environment errors left out)
    rules: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    case: Case
    rivet: ConfigVerdict
    rivet_field: str | None
    ours: Ours

    @property
    def agrees(self) -> bool:
        if self.rivet.verdict != self.ours.verdict:
            return False
        if self.rivet.verdict != "refuse" or self.rivet_field is None:
            return True
        return any(related(self.rivet_field, ours) for ours in self.ours.fields)

    def describe(self) -> str:
        return (f"{self.case.id}: rivet {self.rivet.verdict} {self.rivet.code} "
                f"[{self.rivet_field}] {self.rivet.message[:160]!r} | ours {self.ours.verdict} "
                f"{list(zip(self.ours.rules, self.ours.fields, strict=True))[:4]}")


def related(rivet_field: str, ours: str) -> bool:
    def under(a: str, b: str) -> bool:
        return a == b or a.startswith(b + ".") or a.startswith(b + "[") or b == ""
    return under(ours, rivet_field) or under(rivet_field, ours)


_CONFIG_PREFIX = re.compile(r"config file '[^']*': ", re.S)
_YAML_PATH = re.compile(
    r"([A-Za-z_]\w*(?:\[\d+\])?(?:\.[A-Za-z_]\w*(?:\[\d+\])?)*): .* at line \d+ column \d+",
    re.S)
_EXPORT = re.compile(r"export '([^']*)'")
_UNKNOWN_ROOT = re.compile(r"unknown field `([^`]*)`")


def rivet_field(verdict: ConfigVerdict, text: bytes) -> str | None:
    """The field rivet's refusal names, when it names one."""
    if verdict.verdict != "refuse":
        return None
    body = _CONFIG_PREFIX.sub("", verdict.message, count=1)
    match = _YAML_PATH.match(body)
    if match:
        return match.group(1)
    if body.startswith("`load:`"):
        return "load"
    export = _EXPORT.match(body) or (_EXPORT.search(body) if "plan '" not in body else None)
    if export:
        names = _export_names(text)
        if export.group(1) in names:
            return f"exports[{names.index(export.group(1))}]"
        return None
    unknown = _UNKNOWN_ROOT.match(body)
    if unknown:
        return unknown.group(1)
    return None


def _export_names(text: bytes) -> list[str]:
    try:
        data: Any = yaml.safe_load(text.decode("utf-8-sig"))
    except (yaml.YAMLError, UnicodeDecodeError):
        return []
    exports = data.get("exports") if isinstance(data, dict) else None
    if not isinstance(exports, list):
        return []
    return [str(e.get("name")) if isinstance(e, dict) else "" for e in exports]


def ours(path: Path, env: dict[str, str], cwd: Path) -> Ours:
    out, err = io.StringIO(), io.StringIO()
    code = run(["check", "--format", "json", "--check-environment", str(path)],
               Context(stdout=out, stderr=err, environ=env, cwd=cwd))
    if code not in (0, 2) or not out.getvalue():  # a traceback (exit 3): never a verdict
        return Ours("crash", (err.getvalue()[-300:],), ("exit",))
    document = json.loads(out.getvalue())
    errors = [p for p in document["problems"] if p["severity"] == "error"]
    static = [p for p in errors if p["rule"] not in ENVIRONMENT_RULES]
    verdict = "refuse" if static else ("environment" if errors else "accept")
    return Ours(verdict, tuple(p["key"] or "" for p in static),
                tuple(p["rule"] for p in static))


def compare(cases: Sequence[Case]) -> list[Outcome]:
    """Each case's rivet verdict (two at a time) and ours."""
    root = Path(tempfile.mkdtemp(prefix="rivet-ci-differential-"))
    try:
        paths: list[Path] = []
        for i, case in enumerate(cases):
            if case.path is not None:
                paths.append(case.path)
                continue
            folder = root / f"case{i}"
            folder.mkdir()
            (folder / "rivet.yaml").write_bytes(case.text)
            paths.append(folder / "rivet.yaml")
        with ThreadPoolExecutor(RIVET_WORKERS) as pool:
            theirs = list(pool.map(lambda pc: config_verdict(pc[0], env=pc[1].env),
                                   zip(paths, cases, strict=True)))
        empty = root / "cwd"
        empty.mkdir()
        return [Outcome(case, verdict, rivet_field(verdict, case.text),
                        ours(path, case.env, empty))
                for case, path, verdict in zip(cases, paths, theirs, strict=True)]
    finally:
        shutil.rmtree(root, ignore_errors=True)
