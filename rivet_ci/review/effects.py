"""The order of a review's effects, the same on every forge (and for the plan of record).

"Lose nothing" is an order: the plan document first (it must survive anything that fails
later), then the step outputs, then the comment file and the job summary, then the
annotations, and only then the forge is called to post — so an outage or a read-only token
never loses the plan or the comment. `publish_review` and `publish_record` are that order;
what each effect does on a given forge (a `GITHUB_OUTPUT` file, a REST call) is the
`Effects` the entry point passes in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from rivet_ci.core.common.problems import Problem
from rivet_ci.core.formats.document import Layout
from rivet_ci.core.gate.diff import Finding, PlanDiff
from rivet_ci.core.gate.policy import GatePolicy, GateResult, evaluate_gate
from rivet_ci.core.plan.planner import ConfigPlan
from rivet_ci.output.redaction import Redactor
from rivet_ci.review import FactsSource, Report, Sides, review_pull_request
from rivet_ci.review.comment import CommentOptions
from rivet_ci.review.record import RecordPlan

OutputValue = str | int | bool


@dataclass(frozen=True)
class Posted:
    """What posting the comment did: its link, and whether the PR now shows this run's
    comment."""

    url: str | None
    shown: bool


class Effects(Protocol):
    """The effects of a run, each written through the output boundary by the entry point."""

    def write_plan(self, chunks: Iterator[bytes], configs: tuple[ConfigPlan, ...]) -> None:
        """The plan document (and rivet's own artifact of `configs`, when asked for)."""

    def write_outputs(self, values: Mapping[str, OutputValue]) -> None:
        """Step outputs (written again when a later value changes)."""

    def write_comment(self, body: str) -> None:
        """The comment file (the rendered comment, kept when it cannot be posted)."""

    def write_summary(self, text: str) -> None:
        """The job summary."""

    def annotate(self, gate: GateResult, findings: Sequence[Finding]) -> list[Problem]:
        """Annotations on the YAML lines; returns the facts file's errors (a setup error)."""

    def post(self, report: Report, body: str, short: str) -> Posted | None:
        """Post the comment on the forge; None when nothing was posted or it failed."""


@dataclass(frozen=True)
class OutputPaths:
    """How the run's files are named in its outputs (as the workflow gave them)."""

    plan: str
    rivet_artifact: str  # "" when no rivet artifact is written
    comment_file: str


def review_outputs(report: Report, paths: OutputPaths) -> dict[str, OutputValue]:
    """The step outputs of a pull-request review, before the comment is posted."""
    pr, gate = report.pr, report.gate
    return {
        "plan-path": paths.plan,
        "rivet-artifact-path": paths.rivet_artifact,
        "comment-url": "",
        "comment-file": paths.comment_file,
        "changed-exports": len(pr.diff.changed_exports),
        "new-isolations": pr.diff.new_isolations,
        "new-warnings": pr.diff.new_warnings,
        "gate": gate_word(gate),
        "comment-posted": False,
        **pr.planned_counts(),
        "policy": gate.policy,
    }


def annotated(gate: GateResult, findings: Sequence[Finding], redact: Redactor,
              ) -> tuple[GateResult, tuple[Finding, ...]]:
    """What the annotations say, redacted before their writer escapes it (`%25`, `%0A`, ...:
    spellings the output boundary's scan of the printed line would not know)."""
    scrubbed: tuple[GateResult, tuple[Finding, ...]] = redact.scrub((gate, tuple(findings)))
    return scrubbed


def gate_word(gate: GateResult) -> str:
    return "passed" if gate.passed else "failed"


@dataclass(frozen=True)
class Published:
    """A review whose effects are done: the report, the posting, the facts file's errors."""

    report: Report
    posted: Posted | None
    errors: list[Problem]


def publish_review(
    sides: Sides, facts: FactsSource, policy: GatePolicy, effects: Effects, *,
    paths: OutputPaths, layout: Layout, comment: CommentOptions, redact: Redactor,
    clock: Callable[[], datetime], timestamp: Callable[[], str],
    extra_findings: Callable[[], Sequence[Finding]] = tuple,
) -> Published:
    """Review the pull request and carry out its effects in the one order (module docstring)."""

    def write_document(report: Report) -> None:
        effects.write_plan(report.document_chunks(layout, coverage=True),
                           report.pr.document_head.configs)
        effects.write_outputs(review_outputs(report, paths))

    report = review_pull_request(
        sides, facts, policy, clock=clock, timestamp=timestamp, redact=redact,
        extra_findings=extra_findings, comment=comment, on_document=write_document)
    bodies = report.bodies
    assert bodies is not None
    body, short = redact(bodies.comment), redact(bodies.short)
    effects.write_comment(body)
    effects.write_summary(bodies.summary)
    errors = effects.annotate(*annotated(report.gate, report.pr.diff.findings, redact))
    posted = effects.post(report, body, short)
    if posted is not None:
        effects.write_outputs({"comment-url": posted.url or "", "comment-posted": posted.shown})
    return Published(report=report, posted=posted, errors=errors)


def record_gate(record: RecordPlan, policy: GatePolicy) -> GateResult:
    """The plan of record's gate: the always-on rules on the plan's own errors."""
    return evaluate_gate(PlanDiff(exports=(), warnings=(), order_moves=(),
                                  findings=record.findings, head_problems=()), policy)


def record_outputs(record: RecordPlan, gate: GateResult, paths: OutputPaths,
                   ) -> dict[str, OutputValue]:
    """The step outputs of a plan of record (no comment, no base)."""
    return {
        "plan-path": paths.plan, "rivet-artifact-path": paths.rivet_artifact,
        "comment-url": "", "comment-file": "", "comment-posted": False,
        "changed-exports": 0, "new-isolations": 0, "new-warnings": 0,
        "gate": gate_word(gate), "policy": gate.policy,
        "head-configs": record.summary["configs"],
        "head-exports": record.summary["exports"],
        "base-configs": 0, "base-exports": 0,
    }


def publish_record(record: RecordPlan, gate: GateResult, effects: Effects, *,
                   paths: OutputPaths, layout: Layout, generated_at: str,
                   summary: str, redact: Redactor) -> list[Problem]:
    """The plan of record's effects, in the same order: plan document, outputs, job summary,
    annotations (no comment). Returns the facts file's errors."""
    effects.write_plan(record.document_chunks(generated_at=generated_at, layout=layout),
                       record.plan.configs)
    effects.write_outputs(record_outputs(record, gate, paths))
    effects.write_summary(summary)
    return effects.annotate(*annotated(gate, record.findings, redact))
