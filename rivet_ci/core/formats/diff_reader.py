"""A pull request's review read back from its plan document (pure): the inverse of
`diff_document.py`, for rendering its comment again (`rivet-ci post`, `rivet-ci show --format
markdown`).

The document is data from wherever it came from — for `rivet-ci post`, a fork's read-only run
wrote it — so it is validated first, as strictly as its JSON Schema (`plan_format.read_document`,
the one definition `schemas/plan.schema.json` is made from), and then for what the schema cannot
say: full commit shas, a UTC `generated_at`, a `captured_at` that is a time, and each changed
export having the sides its status needs. Every problem is a `DocumentError` naming the file and
the field path. What is read back is exactly what the review was built from, as far as the
comment shows it: the diff (every changed export, warning, finding, rename), the gate, both
sides' plans cut to what the review covered (`reuse.scope_of` with the document's
`diff.unchanged_files`), the waiver problems and what the facts were.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from rivet_ci.core.common.fast_model import construct
from rivet_ci.core.common.json_input import JsonInputError, load_json
from rivet_ci.core.common.patterns import COMMIT_SHA, UTC_TIMESTAMP
from rivet_ci.core.common.problems import Problem
from rivet_ci.core.formats.document import read_configs
from rivet_ci.core.formats.plan_format import (
    ChangedExportJSON,
    DocumentError,
    PlanDocumentJSON,
    ProblemJSON,
    read_document,
)
from rivet_ci.core.gate.diff import ExportChange, Finding, PlanDiff
from rivet_ci.core.gate.policy import GateResult
from rivet_ci.core.plan.planner import ConfigPlan, FactsOrigin, Plan
from rivet_ci.core.plan.reuse import review_counts, scope_of

MAX_LISTED_ERRORS = 5

# The sides a changed export must have, by its status.
_SIDES = {"added": ("head",), "removed": ("base",), "changed": ("base", "head"),
          "unchanged": ("base", "head"), "not-planned": ("base",)}


@dataclass(frozen=True)
class PullRequestRecord:
    """A pull request's review as its plan document records it."""

    base_sha: str
    head_sha: str
    generated_at: str  # when the review ran (the comment's marker carries it)
    diff: PlanDiff
    gate: GateResult
    base: Plan  # both sides cut to the review (what the comment counts and draws)
    head: Plan
    changed_configs: bool  # the pull request changes a config file
    waiver_problems: tuple[Problem, ...]
    matched: tuple[int, int] | None  # config files matching the globs on each side
    narrowed: bool

    def checked(self) -> dict[str, int]:
        """What the verdict was based on (`review_counts`)."""
        return review_counts(self.base, self.head, self.matched, self.narrowed)

    @property
    def quiet(self) -> bool:
        """Nothing to review (as `PullRequestPlan.quiet`)."""
        return not self.changed_configs and self.diff.nothing_new


def read_pull_request(text: str | bytes, *, path: str) -> PullRequestRecord:
    """The review a `rivet-ci-plan/1` document of a pull request records; `DocumentError`
    naming `path` and each field that is wrong."""
    try:  # the bounded reader first: not JSON, too deep, too large get its clear message
        load_json(text)
    except JsonInputError as exc:
        where = f"{path}:{exc.line}" if exc.line else path
        raise DocumentError(f"{where}: {exc.message}") from None
    document = read_document(text, path=path)
    pull, base_part, diff_part = (document.get("pull_request"), document.get("base"),
                                  document.get("diff"))
    if pull is None or base_part is None or diff_part is None:
        missing = next(k for k, v in (("pull_request", pull), ("base", base_part),
                                      ("diff", diff_part)) if v is None)
        raise DocumentError(
            f"{path} has no pull-request keys (`{missing}` is missing): only the plan.json of "
            "`rivet-ci action` on a pull request, or of `rivet-ci diff --output`, holds a "
            "review")
    errors = _errors(document)
    if errors:
        shown = [f"  {e}" for e in errors[:MAX_LISTED_ERRORS]]
        if len(errors) > MAX_LISTED_ERRORS:
            shown.append(f"  ... and {len(errors) - MAX_LISTED_ERRORS} more")
        raise DocumentError(f"{path}: not a valid plan document of a pull request:\n"
                            + "\n".join(shown))
    facts = document["facts"]
    origin = FactsOrigin(kind=facts["origin"], path=facts["path"],
                         captured_at=_time(facts["captured_at"]))
    head_all = _plan(read_configs(document["configs"]), document["problems"], origin)
    base_all = _plan(read_configs(base_part["configs"]), base_part["problems"], origin)
    unchanged = tuple(diff_part.get("unchanged_files", ()))
    scope = scope_of(base_all, head_all, frozenset(unchanged))
    findings = tuple(diff_part["findings"])
    # One object per finding: the gate's are the diff's (the comment lists each finding once,
    # by identity).
    same = {f: f for f in findings}

    def ours(finding: Finding) -> Finding:
        return same.get(finding, finding)

    raw_gate = diff_part["gate"]
    gate = GateResult(
        passed=raw_gate["passed"], policy=raw_gate["policy"],
        blocking=tuple(ours(f) for f in raw_gate["blocking"]),
        waived=tuple(w.model_copy(update={"finding": ours(w.finding)})
                     for w in raw_gate["waived"]),
        notes=tuple(raw_gate["waivers"]))
    diff = PlanDiff(
        exports=tuple(_change(e) for e in diff_part["exports"]),
        warnings=tuple(diff_part["warnings"]), order_moves=tuple(diff_part["order_moves"]),
        findings=findings, head_problems=scope.head.all_problems, unchanged_files=unchanged,
        group_renames=tuple(diff_part.get("group_renames", ())))
    review = pull.get("review")
    return PullRequestRecord(
        base_sha=pull["base_sha"], head_sha=pull["head_sha"],
        generated_at=document["generated_at"], diff=diff, gate=gate, base=scope.base,
        head=scope.head, changed_configs=bool(pull["changed_files"]),
        waiver_problems=tuple(_problem(p) for p in pull.get("waiver_problems", ())),
        matched=(review["base_files"], review["head_files"]) if review is not None else None,
        narrowed=review["narrowed"] if review is not None else False)


def _errors(document: PlanDocumentJSON) -> list[str]:
    """What the schema cannot say, as `field: what is wrong`."""
    errors = []
    pull = document.get("pull_request")
    assert pull is not None
    for key in ("base_sha", "head_sha"):
        if not COMMIT_SHA.fullmatch(pull[key]):
            errors.append(f"pull_request.{key}: not a full commit sha ({pull[key][:80]!r})")
    if not UTC_TIMESTAMP.fullmatch(document["generated_at"]):
        errors.append(f"generated_at: not a UTC time like 2026-11-29T12:00:00Z "
                      f"({document['generated_at'][:80]!r})")
    captured = document["facts"]["captured_at"]
    if captured is not None and _time(captured) is None:
        errors.append(f"facts.captured_at: not a time ({captured[:80]!r})")
    diff = document.get("diff")
    assert diff is not None
    for index, change in enumerate(diff["exports"]):
        sides = {"base": change["base"], "head": change["head"]}
        missing = [side for side in _SIDES[change["status"]] if sides[side] is None]
        if missing:
            errors.append(f"diff.exports[{index}]: a `{change['status']}` export without "
                          f"`{missing[0]}`")
    return errors


def _time(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo is not None else None


def _plan(configs: tuple[ConfigPlan, ...], problems: Sequence[ProblemJSON],
          origin: FactsOrigin) -> Plan:
    paths = {c.path for c in configs}
    return Plan(configs=configs, facts=origin,
                problems=tuple(_problem(p) for p in problems if p["file"] not in paths))


def _problem(raw: ProblemJSON) -> Problem:
    return Problem.model_validate(raw)


def _change(e: ChangedExportJSON) -> ExportChange:
    # Every value was validated with the document (the models' own types).
    return construct(ExportChange, {
        "export_name": e["export_name"], "config_path": e["config"], "line": e["line"],
        "status": e["status"], "renamed_from": e["renamed_from"], "base": e["base"],
        "head": e["head"], "reasons_added": tuple(e["reasons_added"]),
        "reasons_removed": tuple(e["reasons_removed"]),
        "config_changes": tuple(e.get("config_changes", ())),
        "broken_at": e.get("broken_at"),
        "cost_unknown_base": e.get("cost_unknown_base", False),
        "cost_unknown_head": e.get("cost_unknown_head", False),
        "cost_unknown_why": e.get("cost_unknown_why"),
        "catalog_relation": e.get("catalog_relation")})
