"""The plan of record: every config file matching the globs at one commit, planned whole.

A pull request's review plans only what its change can affect, so its `plan.json` covers a
different subset each time. On a push (and a schedule or a manual run) the action plans the
whole repository at the commit instead — every matching config file, every export, as
`rivet-ci plan` plans them — so a pipeline archives one complete plan per commit. There is no
base to compare with: the findings are the plan's own errors (a config that does not load, an
export rivet refuses to plan) and `no-configs`, which the always-on rules gate.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from rivet_ci import __version__
from rivet_ci.adapters.git import GitRepo, decode_text
from rivet_ci.core.common.problems import Problem
from rivet_ci.core.common.text import plural
from rivet_ci.core.config.loader import LoadedConfig, load_config_text
from rivet_ci.core.facts.models import FactsFile
from rivet_ci.core.formats.document import Layout, plan_document_chunks, plan_summary
from rivet_ci.core.formats.plan_format import CoverageJSON, SummaryJSON
from rivet_ci.core.gate.diff import Finding
from rivet_ci.core.gate.policy import GateResult
from rivet_ci.core.plan.planner import FactsOrigin, Plan, plan_config
from rivet_ci.output.render import md_text
from rivet_ci.review.pull_request import _side, _Unit, no_configs_finding

# Live facts for every loaded config (the action's collector), or run history folded in.
Enrich = Callable[[FactsFile | None, Sequence[LoadedConfig]], FactsFile]


@dataclass(frozen=True)
class RecordPlan:
    """The plan of every config at `commit`, and what the gate reads from it."""

    commit: str
    plan: Plan
    matched: int  # config files matching the globs (facts documents not counted)
    skipped_facts: tuple[str, ...]
    findings: tuple[Finding, ...]

    @functools.cached_property
    def summary(self) -> SummaryJSON:
        """The plan's counts (configs, exports, errors, low confidence, isolate_on_source), as
        the plan document's `summary` has them."""
        return plan_summary(self.plan)

    def coverage(self, layout: Layout) -> CoverageJSON:
        return {"scope": "repository", "commit": self.commit, "config_files": self.matched,
                "resolved_plans": layout.resolved_plans}

    def document_chunks(self, *, generated_at: str, layout: Layout) -> Iterator[bytes]:
        """The `rivet-ci-plan/1` document, with `coverage` saying it is the whole repository."""
        return plan_document_chunks(self.plan, generated_at=generated_at, version=__version__,
                                    extra={"coverage": self.coverage(layout)}, layout=layout)


def plan_record(
    repo: GitRepo, commit: str, globs: Sequence[str], *, facts: FactsFile | None,
    origin: FactsOrigin, environ: Mapping[str, str], facts_problems: Sequence[Problem] = (),
    enrich: Enrich | None = None, live: bool = False,
) -> RecordPlan:
    """Plan every config file matching `globs` at `commit` (each blob read once).

    `environ` fills `${...}` placeholders; `enrich` (live facts, or run history) receives every
    loaded config before anything is planned, and its facts replace `facts` (`live`: the
    origin becomes `live`)."""
    files = repo.tree_blobs(commit, globs)
    texts = {oid: decode_text(data)
             for oid, data in repo.read_blobs(oid for _, oid in files).items()}
    skipped: list[str] = []
    side = _side(files, texts, commit[:12], {}, skipped)
    del texts
    loaded = [load_config_text(e.path, e.text, environ) if isinstance(e, _Unit) else e
              for e in side.entries]
    if enrich is not None:
        facts = enrich(facts, loaded)
        if live:
            origin = FactsOrigin(kind="live", captured_at=facts.captured_at)
    plan = Plan(configs=tuple(plan_config(c, facts) for c in loaded), facts=origin,
                problems=tuple(facts_problems))
    del loaded
    findings = [Finding(kind=p.finding, status="new", message=p.render(), file=p.file,
                        line=p.line)
                for c in plan.configs for p in c.problems if p.severity == "error"]
    if not side.entries:
        findings.insert(0, no_configs_finding(repo, commit, globs))
    return RecordPlan(commit=commit, plan=plan, matched=len(side.entries),
                      skipped_facts=tuple(skipped), findings=tuple(findings))


MAX_SUMMARY_FINDINGS = 50


def record_summary(record: RecordPlan, gate: GateResult, plan_shown: str) -> str:
    """The job summary of a plan of record (Markdown; every value escaped); `plan_shown`: the
    plan document's path as the workflow named it."""
    counts = record.summary
    verdict = "✅ gate passed" if gate.passed else (
        f"❌ gate failed ({plural(len(gate.blocking), 'blocking finding')})")
    lines = [
        f"### rivet-ci: plan of record — {verdict}", "",
        f"Commit `{record.commit[:12]}`: {plural(counts['configs'], 'config file')} "
        f"({plural(counts['exports'], 'export')}; {counts['isolate_on_source']} "
        f"`isolate_on_source`, {counts['low_confidence']} low "
        f"confidence), every file matching `configs`. The plan is "
        f"{md_text(plan_shown)} (fail-on: {md_text(gate.policy)}).", ""]
    for finding in gate.blocking[:MAX_SUMMARY_FINDINGS]:
        lines.append(f"- ❌ {md_text(finding.kind)}: {md_text(finding.message)}")
    if len(gate.blocking) > MAX_SUMMARY_FINDINGS:
        lines.append(f"- … and {len(gate.blocking) - MAX_SUMMARY_FINDINGS} more in the plan")
    return "\n".join(lines) + "\n"
