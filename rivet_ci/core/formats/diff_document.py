"""The pull-request part of `plan.json`: the base plan, the diff and the gate (pure).

`plan.json` in a PR run is the head plan document (spec §10) with three more keys —
`pull_request`, `base` and `diff` — so tools reading a plain plan document still work.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from rivet_ci.core.common.problems import Problem
from rivet_ci.core.formats.document import (
    INDENTED,
    Layout,
    config_json,
    plan_document,
    plan_document_chunks,
    problem_json,
    streamed_configs,
    streamed_object,
)
from rivet_ci.core.formats.plan_format import (
    ChangedFileJSON,
    CoverageJSON,
    DiffJSON,
    PlanDocumentJSON,
    PullRequestJSON,
    ReviewJSON,
)
from rivet_ci.core.gate.diff import PlanDiff
from rivet_ci.core.gate.policy import GateResult
from rivet_ci.core.plan.planner import Plan


def diff_json(diff: PlanDiff, gate: GateResult) -> DiffJSON:
    """The `diff` key. The gate's and the diff's own models are put in as they are: they are
    the one definition of their JSON, written by `dump_json` through `model_dump`."""
    return {
        "gate": {"passed": gate.passed, "policy": gate.policy,
                 "blocking": list(gate.blocking),
                 # Accepted findings and what happened to every waiver (docs/action.md).
                 "waived": list(gate.waived),
                 "waivers": list(gate.notes)},
        "exports": [
            {"export_name": c.export_name, "config": c.config_path, "line": c.line,
             "status": c.status, "renamed_from": c.renamed_from,
             "score_base": c.base.priority_score if c.base else None,
             "score_head": c.head.priority_score if c.head else None,
             "score_delta": c.score_delta, "isolation": c.isolation,
             "low_confidence": c.low_confidence,
             "reasons_added": list(c.reasons_added), "reasons_removed": list(c.reasons_removed),
             "base": c.base, "head": c.head, "config_changes": list(c.config_changes),
             "broken_at": c.broken_at, "cost_unknown_base": c.cost_unknown_base,
             "cost_unknown_head": c.cost_unknown_head, "cost_unknown_why": c.cost_unknown_why,
             "catalog_relation": c.catalog_relation}
            for c in diff.changed_exports
        ],
        "warnings": list(diff.warnings),
        "order_moves": list(diff.order_moves),
        "findings": list(diff.findings),
        "group_renames": list(diff.group_renames),
        "unchanged_files": list(diff.unchanged_files),
    }


def _pull_request(base_sha: str, head_sha: str, changed_files: Sequence[ChangedFileJSON],
                  review: ReviewJSON, waiver_problems: Sequence[Problem]) -> PullRequestJSON:
    return {"base_sha": base_sha, "head_sha": head_sha, "changed_files": list(changed_files),
            "review": review, "waiver_problems": [problem_json(p) for p in waiver_problems]}


def pull_request_document(
    base: Plan, head: Plan, diff: PlanDiff, gate: GateResult, *, base_sha: str, head_sha: str,
    changed_files: Sequence[ChangedFileJSON], generated_at: str, version: str,
    review: ReviewJSON, waiver_problems: Sequence[Problem] = (),
) -> PlanDocumentJSON:
    document = plan_document(head, generated_at=generated_at, version=version)
    document["pull_request"] = _pull_request(base_sha, head_sha, changed_files, review,
                                             waiver_problems)
    document["base"] = {"configs": [config_json(c, day=generated_at[:10]) for c in base.configs],
                        "problems": [problem_json(p) for p in base.all_problems]}
    document["diff"] = diff_json(diff, gate)
    return document


def pull_request_document_chunks(
    base: Plan, head: Plan, diff: PlanDiff, gate: GateResult, *, base_sha: str, head_sha: str,
    changed_files: Sequence[ChangedFileJSON], generated_at: str, version: str,
    review: ReviewJSON, layout: Layout = INDENTED, coverage: CoverageJSON | None = None,
    waiver_problems: Sequence[Problem] = (),
) -> Iterator[bytes]:
    """The text of `pull_request_document` in line-ending chunks, both plans' exports built,
    serialised and dropped one at a time (the same bytes; with a compact `layout`, the same
    document without whitespace and without `resolved_plan`); `coverage` (the action's) is
    written last."""
    pull_request = _pull_request(base_sha, head_sha, changed_files, review, waiver_problems)
    base_part = streamed_object({
        "configs": streamed_configs(base.configs, day=generated_at[:10], layout=layout),
        "problems": [problem_json(p) for p in base.all_problems]})
    extra = {"pull_request": pull_request, "base": base_part, "diff": diff_json(diff, gate)}
    if coverage is not None:
        extra["coverage"] = coverage
    return plan_document_chunks(head, generated_at=generated_at, version=version, extra=extra,
                                layout=layout)
