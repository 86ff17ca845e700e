""""Since your last push": a size-bounded digest of one head's results, and the comparison
of the previous head's digest with this run (pure).

The comment carries the digest in a hidden line right below its marker::

    <!-- rivet-ci:digest v=1 data=<base64url(zlib(json))> -->

It holds the head sha, a fingerprint (+ short label) of every finding the PR introduced, and
per changed export a 32-bit key with score, class, wave and isolation — at most
`DIGEST_LIMIT` characters (largest changes first; marked partial when cut, and then only
what it holds is compared). On the next run the
previous comment's digest is compared with this run's results: new and resolved findings and
exports whose result moved since that push. A missing, foreign or damaged digest gives nothing.
Nothing in the digest depends on git history, so a force-push changes nothing.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
import zlib
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from rivet_ci.core.common.json_input import load_json
from rivet_ci.core.common.limits import MAX_DIGEST_BYTES
from rivet_ci.core.common.patterns import COMMIT_SHA_PREFIX
from rivet_ci.core.gate.diff import ExportChange, Finding, PlanDiff
from rivet_ci.core.plan.planner import ConfigPlan
from rivet_ci.core.plan.recommendation import ExportRecommendation

DIGEST_LIMIT = 6_000  # characters of the hidden line, so the digest never crowds the comment
_LINE = re.compile(r"<!--\s*rivet-ci:digest\s+v=1\s+data=(?P<data>[A-Za-z0-9_=-]{1,12000})\s*-->")
_DIGITS = re.compile(r"\d+")
_CLASSES = ("low", "medium", "high")
MAX_LISTED = 10


def _key(path: str, name: str) -> str:
    return hashlib.blake2b(f"{path}\0{name}".encode(), digest_size=4).hexdigest()


def finding_key(f: Finding) -> str:
    # Line numbers and list positions move with unrelated edits; they are not the finding.
    text = _DIGITS.sub("#", f.message) if f.kind == "config-error" else ""
    raw = "\0".join((f.kind, f.file or "", f.export_name or "", f.source_group or "", text))
    return hashlib.blake2b(raw.encode(), digest_size=5).hexdigest()


def finding_label(f: Finding) -> str:
    subject = f.export_name or (f"group {f.source_group}" if f.source_group else f.message)
    return f"{f.kind}: {subject}"[:80]


def _result(rec: ExportRecommendation | None) -> list[int] | None:
    if rec is None:
        return None
    return [rec.priority_score, _CLASSES.index(rec.priority_class), rec.recommended_wave,
            int(rec.isolate_on_source)]


def _ordered(changes: Sequence[ExportChange]) -> list[ExportChange]:
    return sorted(changes, key=lambda c: -(abs(c.score_delta) if c.score_delta is not None
                                           else 100))


def _same(text: str) -> str:
    return text


def make_digest(head_sha: str, diff: PlanDiff, limit: int = DIGEST_LIMIT,
                clean: Callable[[str], str] = _same, since: SinceLastPush | None = None) -> str:
    """The hidden digest line for this head (`""` when even the findings do not fit).

    `clean` masks secrets in the labels: once compressed, no redactor could find them."""
    new = [f for f in diff.findings if f.status == "new"]
    changed = _ordered(diff.changed_exports)
    # Start from what can fit (a compressed export entry takes ~10 characters, a finding with
    # its label ~30), then cut both lists by the share that fits until the line does: only
    # that many entries are ever written (3,000 findings: 100 keys and labels, not 3,000).
    keep_f, keep_e = min(len(new), limit // 60), min(len(changed), limit // 20)
    findings = [[finding_key(f), clean(finding_label(f))] for f in new[:keep_f]]
    exports = [[_key(c.config_path, c.export_name), _result(c.head)] for c in changed[:keep_e]]
    for _ in range(12):
        payload = {"h": head_sha, "f": findings[:keep_f], "e": exports[:keep_e],
                   "pf": keep_f < len(new), "pe": keep_e < len(changed),
                   # shown again as it is when this head is planned again (a re-run)
                   "s": since.model_dump(mode="json") if since is not None else None}
        raw = zlib.compress(json.dumps(payload, separators=(",", ":")).encode(), 6)
        line = f"<!-- rivet-ci:digest v=1 data={base64.urlsafe_b64encode(raw).decode()} -->"
        if len(line) <= limit:
            return line
        share = limit / len(line) * 0.9
        keep_f, keep_e = int(keep_f * share), int(keep_e * share)
    return ""


class MovedExport(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    export_name: str
    score_before: int | None
    score_after: int | None
    wave_before: int | None = None
    wave_after: int | None = None
    isolated_before: bool = False
    isolated_after: bool = False
    # The group it now runs alone on, or no longer does (`_isolation_group`); None when that
    # did not change, or in a digest written before rivet-ci named it ("its source group").
    source_group: str | None = None

    @property
    def isolation_change(self) -> Literal["isolation", "cleared"] | None:
        """`isolation`: it runs alone on its group since that push; `cleared`: no longer."""
        if self.isolated_after == self.isolated_before:
            return None
        return "isolation" if self.isolated_after else "cleared"


class SinceLastPush(BaseModel):
    """What changed between the previous push's comment and this run."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    previous_sha: str
    new_findings: tuple[str, ...]
    resolved_findings: tuple[str, ...]
    moved: tuple[MovedExport, ...]
    new_count: int
    resolved_count: int
    moved_count: int
    partial: bool

    @property
    def omitted(self) -> int:
        """Items counted but not listed (each list stops at MAX_LISTED)."""
        return (self.new_count + self.resolved_count + self.moved_count
                - len(self.new_findings) - len(self.resolved_findings) - len(self.moved))

    @property
    def empty(self) -> bool:
        return not (self.new_findings or self.resolved_findings or self.moved)


class Digest(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    head_sha: str
    findings: dict[str, str]  # key → label
    exports: dict[str, list[int] | None]
    partial_findings: bool  # the digest was cut: keys missing from it are unknown
    partial_exports: bool
    since: SinceLastPush | None = None  # what this head's comment showed

    @property
    def partial(self) -> bool:
        return self.partial_findings or self.partial_exports


def read_digest(body: str) -> Digest | None:
    """The digest of a previous comment body, or None when absent or damaged."""
    match = _LINE.search(body)
    if match is None:
        return None
    try:
        inflate = zlib.decompressobj()
        raw = inflate.decompress(base64.urlsafe_b64decode(match["data"]), MAX_DIGEST_BYTES)
        if inflate.unconsumed_tail:
            return None  # inflates beyond any digest rivet-ci writes: not ours
        data: Any = load_json(raw)
        head = data["h"]
        if not (isinstance(head, str) and COMMIT_SHA_PREFIX.fullmatch(head)):
            return None
        return Digest(head_sha=head, findings={str(k): str(v) for k, v in data["f"]},
                      exports={str(k): v for k, v in data["e"]},
                      partial_findings=bool(data["pf"]), partial_exports=bool(data["pe"]),
                      since=SinceLastPush.model_validate(data["s"]) if data.get("s") else None)
    except (binascii.Error, zlib.error, ValueError, KeyError, TypeError, ValidationError,
            RecursionError):
        return None


def _isolation_group(base: ExportRecommendation | None, head: ExportRecommendation | None,
                     before: bool, after: bool) -> str | None:
    """The group an export now runs alone on (at head), or no longer does: the one the base
    ran it alone on, as the row's why says, else its group at head (None: no change)."""
    if before == after:
        return None
    on = head if after or (head is not None and not (base and base.isolate_on_source)) else base
    return on.source_group if on is not None else None


def since_last_push(previous: Digest | None, head_sha: str, diff: PlanDiff,
                    unchanged: Sequence[ConfigPlan] = ()) -> SinceLastPush | None:
    """Compare the previous head's digest with this run; None when there is nothing to say.

    `unchanged`: the head plans of the files the change cannot affect (`diff.unchanged_files`,
    whose exports the diff does not list one by one): an export of theirs the previous digest
    recorded may have moved back. The same head planned again (a re-run) shows what its first
    comment showed."""
    if previous is None:
        return None
    if head_sha.lower().startswith(previous.head_sha):
        return previous.since
    current = {finding_key(f): f for f in diff.findings if f.status == "new"}
    # A cut digest cannot tell "new since" from "not recorded": then only resolved ones count.
    new = [] if previous.partial_findings else [
        finding_label(f) for k, f in current.items() if k not in previous.findings]
    resolved = [label for k, label in previous.findings.items() if k not in current]
    results = [(change.config_path, change.export_name, change.base, change.head)
               for change in diff.exports]
    if previous.exports:  # an export not in the digest is unchanged on both sides here
        for config in unchanged:
            for export in {e.export_name: e for e in config.exports}.values():
                rec = export.recommendation
                results.append((config.path, export.export_name, rec, rec))
        results.sort(key=lambda r: (r[0], r[1]))  # the order of `diff.exports`
    moved: list[MovedExport] = []
    for path, name, base, head in results:
        key = _key(path, name)
        if key in previous.exports:
            before = previous.exports[key]
        elif previous.partial_exports:
            continue  # not in a cut digest: unknown, not "unchanged"
        else:  # unchanged against the base at the previous push
            before = _result(base)
        after = _result(head)
        if before != after:
            isolated_before, isolated_after = bool(before and before[3]), bool(after and after[3])
            moved.append(MovedExport(
                export_name=name, score_before=before[0] if before else None,
                score_after=after[0] if after else None,
                wave_before=before[2] if before else None,
                wave_after=after[2] if after else None,
                isolated_before=isolated_before, isolated_after=isolated_after,
                source_group=_isolation_group(base, head, isolated_before, isolated_after)))
    moved.sort(key=lambda m: -abs((m.score_after or 0) - (m.score_before or 0)))
    return SinceLastPush(previous_sha=previous.head_sha, new_findings=tuple(new[:MAX_LISTED]),
                         resolved_findings=tuple(resolved[:MAX_LISTED]),
                         moved=tuple(moved[:MAX_LISTED]), new_count=len(new),
                         resolved_count=len(resolved), moved_count=len(moved),
                         partial=previous.partial)
