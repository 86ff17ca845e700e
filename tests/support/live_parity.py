"""Live plan parity: the real `rivet plan` (rivet-cli 0.32.2) and `rivet-ci plan --live` on the
same config and the same database, compared field by field (no tests here).

`rivet_plan` runs the real binary (sandboxed by `support.real_rivet`: cleared environment, its
own working directory; network only because it must reach the loopback server this run started,
the URL given through `url_env`) and reads its one artifact per export (`out.<export>.json`).
`ours_plan` runs `rivet-ci plan --live --format rivet-json` in-process on the same file with the
same environment. `compare` lists every difference in what a reviewer reads: per export the
strategy, score, classes, wave, `isolate_on_source`, reasons (kind and message), the computed
inputs (row estimate, chunk count), verdict and warnings; per config the campaign.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from rivet_ci.cli import run
from rivet_ci.commands.context import Context
from support.real_rivet import run_rivet

URL_ENV = "PARITY_SOURCE_URL"
# What is compared per export: a name and how to read it from an artifact.
EXPORT_FIELDS: dict[str, Callable[[Mapping[str, Any]], object]] = {
    "strategy": lambda a: a.get("strategy"),
    "row_estimate": lambda a: a["computed"].get("row_estimate"),
    "chunk_count": lambda a: a["computed"].get("chunk_count") or 0,
    "verdict": lambda a: a["diagnostics"].get("verdict"),
    "warnings": lambda a: list(a["diagnostics"].get("warnings") or []),
    "priority_score": lambda a: _rec(a)["priority_score"],
    "priority_class": lambda a: _rec(a)["priority_class"],
    "cost_class": lambda a: _rec(a)["cost_class"],
    "risk_class": lambda a: _rec(a)["risk_class"],
    "recommended_wave": lambda a: _rec(a)["recommended_wave"],
    "isolate_on_source": lambda a: bool(_rec(a).get("isolate_on_source")),
    "source_group": lambda a: _rec(a).get("source_group"),
    "reasons": lambda a: [(r["kind"], r["message"]) for r in _rec(a)["reasons"]],
}


def _rec(artifact: Mapping[str, Any]) -> Mapping[str, Any]:
    rec: Mapping[str, Any] = artifact["prioritization"]["export_recommendation"]
    return rec


def _campaign(artifact: Mapping[str, Any]) -> dict[str, object] | None:
    campaign = artifact["prioritization"].get("campaign")
    if not campaign:
        return None
    return {
        "ordered_exports": [e["export_name"] if isinstance(e, Mapping) else e
                            for e in campaign["ordered_exports"]],
        "waves": [(w["wave"], list(w["exports"])) for w in campaign["waves"]],
        "source_group_warnings": list(campaign["source_group_warnings"]),
    }


@dataclass(frozen=True)
class Plan:
    """One tool's plan of one config: artifacts by export name, or the error it stopped at
    (rivet: `[CODE] message`), and what it printed on stderr."""

    artifacts: dict[str, dict[str, Any]]
    error: str | None = None
    code: str | None = None
    message: str | None = None
    log: str = ""

    @property
    def campaign(self) -> dict[str, object] | None:
        for artifact in self.artifacts.values():
            return _campaign(artifact)
        return None


@dataclass(frozen=True)
class Difference:
    export: str          # "" for the campaign
    field: str
    rivet: object
    ours: object

    def __str__(self) -> str:
        where = self.export or "<campaign>"
        return f"{where}.{self.field}: rivet={self.rivet!r} ours={self.ours!r}"


def rivet_url(sqlalchemy_url: str) -> str:
    """The URL rivet wants for a test server's SQLAlchemy URL (no driver suffix)."""
    scheme, rest = sqlalchemy_url.split("://", 1)
    base = scheme.split("+", 1)[0]
    return f"{'postgresql' if base.startswith('postgres') else base}://{rest}"


def rivet_plan(config: Path, url: str) -> Plan:
    """`rivet plan -c CONFIG --format json -o out.json` in the config's directory (where its
    `.rivet_state.db` lives); the artifacts it wrote, or the error it stopped at."""
    workdir = config.parent
    for old in [*workdir.glob("rivet-out.*.json"), *workdir.glob("rivet-out.json")]:
        old.unlink()
    done = run_rivet(["--json-errors", "--no-notify", "plan", "-c", str(config), "--format",
                      "json", "-o", str(workdir / "rivet-out.json")],
                     workdir=workdir, env={URL_ENV: rivet_url(url)}, network=True)
    artifacts = {}
    # One artifact per export (`rivet-out.<export>.json`); a config of one export: `rivet-out.json`.
    for path in sorted([*workdir.glob("rivet-out.*.json"), *workdir.glob("rivet-out.json")]):
        artifact = json.loads(path.read_text())
        artifacts[artifact["export_name"]] = artifact
    if done.returncode != 0 or not artifacts:
        error = done.error
        message = str(error.get("error")) if error else done.stderr.strip()[-2000:]
        return Plan({}, f"[{done.code}] {message}", done.code, message, done.stderr)
    return Plan(artifacts, log=done.stderr)


def ours_plan(config: Path, url: str) -> Plan:
    """`rivet-ci plan --live CONFIG --format rivet-json`, in-process, same URL variable."""
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(stdout=out, stderr=err, environ={URL_ENV: url}, cwd=config.parent,
                  now=lambda: datetime.now(UTC))
    code = run(["plan", config.name, "--live", "--format", "rivet-json"], ctx)
    if code not in (0, 2) or not out.getvalue().strip():
        return Plan({}, f"exit {code}: {err.getvalue()[-2000:]}", log=err.getvalue())
    value = json.loads(out.getvalue())
    items = value if isinstance(value, list) else [value]
    return Plan({a["export_name"]: a for a in items}, log=err.getvalue())


def _words(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class Compared:
    """Both plans of one config after rivet's refusals were taken out, one at a time (rivet
    stops a config at the first export it refuses), and those refusals."""

    rivet: Plan
    ours: Plan
    refused: dict[str, str]  # export → rivet's code and message
    refusal_mismatches: list[str]
    # Exports whose source rivet could not read (`RIVET_PLAN_SOURCE_UNREADABLE`: 0.32.2 refuses
    # the whole plan) — rivet-ci plans them low-confidence instead (a documented deviation).
    unreadable: dict[str, str]


def plan_both(directory: Path, document_of: Callable[[list[dict[str, Any]]], dict[str, Any]],
              exports: list[dict[str, Any]], url: str, *,
              rivet_via: str | None = None) -> Compared:
    """Plan `exports` with both tools, re-planning without each export rivet refuses. A refusal
    must be ours too, with rivet's message (our stderr names it, file and line first).
    `rivet_via`: the URL rivet connects to instead (the MariaDB proxy)."""
    refused: dict[str, str] = {}
    unreadable: dict[str, str] = {}
    mismatches: list[str] = []
    config = directory / "rivet.yaml"
    while True:
        config.write_text(yaml.safe_dump(document_of(exports), sort_keys=False))
        rivet, ours = rivet_plan(config, rivet_via or url), ours_plan(config, url)
        found = re.match(r"(?:export|plan) '([^']+)': ", rivet.message or "")
        if rivet.error is None or found is None:
            return Compared(rivet, ours, refused, mismatches, unreadable)
        name = found.group(1)
        if rivet.code == "RIVET_PLAN_SOURCE_UNREADABLE":
            unreadable[name] = rivet.error
            mine = ours.artifacts.get(name)
            verdict = mine["diagnostics"]["verdict"] if mine else None
            if verdict != "unknown (preflight failed)":
                mismatches.append(f"{name}: rivet could not read the source ({rivet.error!r}); "
                                  f"ours planned it with verdict {verdict!r}")
        else:
            refused[name] = rivet.error
            if _words(rivet.message or "") not in _words(ours.log):
                mismatches.append(f"{name}: rivet refused with {rivet.error!r}; ours: "
                                  f"{ours.log.strip()[:600]!r}")
        exports = [e for e in exports if e["name"] != name]


def compare(rivet: Plan, ours: Plan, *, campaign: bool = True) -> list[Difference]:
    """Every difference between the two plans of one config (exports both planned)."""
    diffs: list[Difference] = []
    if rivet.error or ours.error:
        return [Difference("", "error", rivet.error, ours.error)]
    for name in sorted(set(rivet.artifacts) | set(ours.artifacts)):
        mine, theirs = ours.artifacts.get(name), rivet.artifacts.get(name)
        if mine is None or theirs is None:
            diffs.append(Difference(name, "planned", theirs is not None, mine is not None))
            continue
        for field, read in EXPORT_FIELDS.items():
            a, b = read(theirs), read(mine)
            if a != b:
                diffs.append(Difference(name, field, a, b))
    if campaign and rivet.campaign != ours.campaign:
        for key in ("ordered_exports", "waves", "source_group_warnings"):
            a = (rivet.campaign or {}).get(key)
            b = (ours.campaign or {}).get(key)
            if a != b:
                diffs.append(Difference("", key, a, b))
    return diffs


def agreement(rivet: Plan, ours: Plan) -> tuple[int, int]:
    """(exports that agree on every field, exports compared)."""
    names = set(rivet.artifacts) & set(ours.artifacts)
    differing = {d.export for d in compare(rivet, ours, campaign=False)}
    return len(names - differing), len(names)
