"""Waivers: a team accepts one specific finding without switching the gate off (pure).

A waiver is bound to the finding's fingerprint — kind, export, source group and score bucket
(10 points wide) — so it stops applying as soon as the finding changes, and says so. Two places
hold waivers, neither of them a config key (rivet configs are strict: an unknown key is an
error):

* a YAML comment on the export's line (or on comment lines right above it)::

      - name: events  # rivet-ci: allow new-isolation group=replica_a score=20-29 -- paused till Q3

* a waivers file read from the BASE branch (default `.rivet-ci/waivers.yaml`)::

      waivers:
        - {export: events, kind: new-isolation, group: replica_a, score: 20-29,
           reason: paused till Q3, file: rivet/replica_a.yaml}

A waiver the pull request adds itself is reported; under `waiver-in-pr: block` (the default) it
does not apply, so a PR cannot wave its own findings through.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from rivet_ci.core.common.problems import Problem
from rivet_ci.core.gate.diff import Finding

WAIVABLE_KINDS = ("new-isolation", "new-warning", "score-drop", "wave-later", "low-confidence",
                  "unplanned-cost")
DEFAULT_WAIVERS_FILE = ".rivet-ci/waivers.yaml"
_INLINE = re.compile(r"#\s*rivet-ci:\s*allow\s+(?P<body>.*)$")
_FIELD = re.compile(r"(?P<key>group|score)=(?P<value>\S+)")
_BUCKET = re.compile(r"^(\d{1,3})-(\d{1,3})$")

WaiverOrigin = Literal["inline", "file"]


def score_bucket(score: int) -> str:
    low = min(score // 10 * 10, 90)
    return f"{low}-{100 if low == 90 else low + 9}"


class Waiver(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    kind: str
    export_name: str | None  # None: a source-group warning
    file: str | None  # the config file it is bound to (None in the waivers file: any)
    group: str | None
    score: str | None  # a bucket like "20-29"
    reason: str
    origin: WaiverOrigin
    where: str  # file:line of the waiver itself
    added_in_pr: bool = False

    @property
    def fingerprint(self) -> tuple[str, str | None, str | None, str | None, str | None]:
        return (self.kind, self.file, self.export_name, self.group, self.score)

    def describe(self) -> str:
        parts = [self.kind]
        if self.group:
            parts.append(f"group={self.group}")
        if self.score:
            parts.append(f"score={self.score}")
        return " ".join(parts)


def finding_fingerprint(f: Finding) -> dict[str, str | None]:
    return {"kind": f.kind, "export": f.export_name, "group": f.source_group,
            "score": score_bucket(f.score) if f.score is not None and f.export_name else None}


def waiver_comment(f: Finding) -> str:
    """The YAML comment that would accept `f` (shown to the reviewer as a hint)."""
    fp = finding_fingerprint(f)
    fields = "".join(f" {k}={fp[k]}" for k in ("group", "score") if fp[k])
    return f"# rivet-ci: allow {f.kind}{fields} -- <reason>"


_PLAIN_SCALAR = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]*")


def _yaml_scalar(value: str) -> str:
    """`value` as a YAML scalar that reads back as the same string (JSON-quoted unless plain)."""
    if _PLAIN_SCALAR.fullmatch(value) and value.lower() not in _YAML_WORDS:
        return value
    return json.dumps(value, ensure_ascii=False)


_YAML_WORDS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"})


def waiver_file_entry(f: Finding) -> str:
    """The waivers-file entry (YAML, `waivers:` list) that would accept `f`: for a finding with
    no line on the base branch to comment on (a new export, a source-group warning)."""
    fp = finding_fingerprint(f)
    lines = ["waivers:", f"  - kind: {f.kind}"]
    if f.export_name:
        lines.append(f"    export: {_yaml_scalar(f.export_name)}")
    for key in ("group", "score"):
        if fp[key]:
            lines.append(f"    {key}: {_yaml_scalar(str(fp[key]))}")
    if f.file:
        lines.append(f"    file: {_yaml_scalar(f.file)}")
    lines.append("    reason: <why this is acceptable>")
    return "\n".join(lines)


class WaivedFinding(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    finding: Finding
    waiver: Waiver


NoteKind = Literal["waived", "stale", "added-in-pr", "unused"]


class WaiverNote(BaseModel):
    """One line of the comment's waiver section."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    kind: NoteKind
    waiver: Waiver
    applied: bool
    now: str | None = None  # for `stale`: the finding's fingerprint today


# -- reading --------------------------------------------------------------------------------------


def inline_waivers(path: str, text: str, export_lines: Mapping[str, int]) -> tuple[
        list[Waiver], list[Problem]]:
    """Waivers written as `# rivet-ci: allow ...` on an export's line or right above it."""
    lines = text.splitlines()
    by_line = {line: name for name, line in export_lines.items()}
    waivers, problems = [], []
    for number, raw in enumerate(lines, start=1):
        match = _INLINE.search(raw)
        if match is None:
            continue
        target = number
        if raw.lstrip().startswith("#"):  # a comment line: it belongs to the next export line
            while target <= len(lines) and lines[target - 1].lstrip().startswith("#"):
                target += 1
        name = by_line.get(target)
        if name is None:
            problems.append(Problem(file=path, line=number, severity="warning", message=(
                "`# rivet-ci: allow` must be on an export's `- name:` line or the comment "
                "lines right above it; ignored")))
            continue
        waiver, problem = _parse_inline(match.group("body"), path, number, name)
        if waiver is not None:
            waivers.append(waiver)
        if problem is not None:
            problems.append(problem)
    return waivers, problems


def _parse_inline(body: str, path: str, line: int, name: str) -> tuple[Waiver | None,
                                                                       Problem | None]:
    spec, sep, reason = body.partition("--")
    words = spec.split()
    kind = words[0] if words else ""
    fields = {m["key"]: m["value"] for m in _FIELD.finditer(spec)}
    if kind not in WAIVABLE_KINDS:
        return None, Problem(file=path, line=line, severity="warning", message=(
            f"waiver kind {kind!r} is not one of {', '.join(WAIVABLE_KINDS)}; ignored"))
    if not sep or not reason.strip():
        return None, Problem(file=path, line=line, severity="warning", message=(
            "a waiver needs a reason after ` -- `; ignored"))
    if "score" in fields and not _BUCKET.match(fields["score"]):
        return None, Problem(file=path, line=line, severity="warning", message=(
            f"waiver score={fields['score']} must be a bucket like 20-29; ignored"))
    return Waiver(kind=kind, export_name=name, file=path, group=fields.get("group"),
                  score=fields.get("score"), reason=reason.strip(), origin="inline",
                  where=f"{path}:{line}"), None


def file_waivers(path: str, data: Any) -> tuple[list[Waiver], list[Problem]]:
    """Waivers from the parsed waivers file (`waivers:` list of mappings)."""
    entries = data.get("waivers") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return [], [Problem(file=path, message="expected a mapping with a `waivers:` list")]
    waivers, problems = [], []
    for index, entry in enumerate(entries):
        where = f"waivers[{index}]"
        if not isinstance(entry, dict):
            problems.append(Problem(file=path, field=where, message="expected a mapping"))
            continue
        unknown = sorted(set(entry) - {"export", "file", "kind", "group", "score", "reason"})
        kind, reason = entry.get("kind"), entry.get("reason")
        score = entry.get("score")
        if unknown:
            problems.append(Problem(file=path, field=where,
                                    message=f"unknown key(s): {', '.join(map(str, unknown))}"))
        elif kind not in WAIVABLE_KINDS:
            problems.append(Problem(file=path, field=f"{where}.kind", message=(
                f"must be one of {', '.join(WAIVABLE_KINDS)}")))
        elif not isinstance(reason, str) or not reason.strip():
            problems.append(Problem(file=path, field=f"{where}.reason",
                                    message="a waiver needs a reason"))
        elif score is not None and not _BUCKET.match(str(score)):
            problems.append(Problem(file=path, field=f"{where}.score",
                                    message="must be a bucket like 20-29"))
        else:
            text = {k: None if entry.get(k) is None else str(entry[k])
                    for k in ("export", "file", "group", "score")}
            waivers.append(Waiver(
                kind=str(kind), export_name=text["export"], file=text["file"],
                group=text["group"], score=text["score"], reason=reason.strip(), origin="file",
                where=f"{path} ({where})"))
    return waivers, problems


def mark_added_in_pr(head: Iterable[Waiver], base: Iterable[Waiver]) -> list[Waiver]:
    """Head's inline waivers, flagged when the base branch did not have them."""
    before = {(w.fingerprint, w.reason) for w in base}
    return [w.model_copy(update={"added_in_pr": (w.fingerprint, w.reason) not in before})
            for w in head]


# -- applying -------------------------------------------------------------------------------------


def _targets(w: Waiver, f: Finding) -> bool:
    """The waiver names this finding (kind, export, file), whatever its group and score."""
    if w.kind != f.kind or w.export_name != f.export_name:
        return False
    return w.file is None or w.file == f.file


def _matches(w: Waiver, f: Finding) -> bool:
    fp = finding_fingerprint(f)
    return _targets(w, f) and w.group == fp["group"] and w.score == fp["score"]


def _describe_now(f: Finding) -> str:
    fp = finding_fingerprint(f)
    parts = [f"group={fp['group']}" if fp["group"] else "no group"]
    if fp["score"]:
        parts.append(f"score={fp['score']}")
    return " ".join(parts)


def apply_waivers(
    findings: Sequence[Finding], waivers: Sequence[Waiver], *, allow_pr_waivers: bool,
) -> tuple[list[WaivedFinding], list[WaiverNote]]:
    """Which new findings are waived, and a note for every waiver (applied, stale, PR-added,
    unused). A waiver added by the PR applies only with `allow_pr_waivers`."""
    waived: list[WaivedFinding] = []
    notes: list[WaiverNote] = []
    new = [f for f in findings if f.status == "new" and f.kind in WAIVABLE_KINDS]
    taken: set[int] = set()
    for w in waivers:
        usable = allow_pr_waivers or not w.added_in_pr
        hit = next((f for f in new if id(f) not in taken and _matches(w, f)), None)
        if hit is not None:
            if usable:
                taken.add(id(hit))
                waived.append(WaivedFinding(finding=hit, waiver=w))
            notes.append(WaiverNote(kind="added-in-pr" if w.added_in_pr else "waived",
                                    waiver=w, applied=usable))
            continue
        near = next((f for f in new if _targets(w, f)), None)
        if near is not None:
            notes.append(WaiverNote(kind="stale", waiver=w, applied=False,
                                    now=_describe_now(near)))
        elif w.added_in_pr:
            notes.append(WaiverNote(kind="added-in-pr", waiver=w, applied=False))
        else:
            notes.append(WaiverNote(kind="unused", waiver=w, applied=False))
    return waived, notes
