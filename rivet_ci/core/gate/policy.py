"""The gate policy (`fail-on`): which findings the PR introduces fail the check (pure).

Only `new` findings count: a pull request is never blocked for what was already on its base.
Tokens: `config-error`, `no-configs`, `new-isolation`, `new-warning`, `score-drop:N` (a drop of
at least N points), `wave-later`, `low-confidence`, `unplanned-cost`, `none` (never fail).

`fail-on` ADDS to the always-on rules `config-error` and `no-configs`: `fail-on: score-drop:10`
still fails on a new config error and on a gate that matched no config file. Only `none` (alone)
turns them off, for a report-only gate. A user who writes one extra rule never weakens the gate.
A plan rivet refuses (`plan-refused`) blocks with `config-error` (so by default), unless the token
`no-plan-refused` opts out.

Waivers (core/waivers.py) accept specific new findings: a waived finding never blocks. Whether
a waiver the pull request adds itself applies is `waiver-in-pr: block|allow` (default block).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from rivet_ci.core.common.patterns import did_you_mean
from rivet_ci.core.gate.diff import Finding, PlanDiff
from rivet_ci.core.gate.waivers import WaivedFinding, Waiver, WaiverNote, apply_waivers

SIMPLE_RULES = ("config-error", "no-configs", "plan-refused", "no-plan-refused", "new-isolation",
                "new-warning", "wave-later", "low-confidence", "unplanned-cost",
                "facts-changed-in-pr",
                "url-file-changed-in-pr", "state-changed-in-pr", "template-changed-in-pr")
# Always on unless `fail-on: none`: a broken config, or a gate that checked nothing.
ALWAYS_ON = ("config-error", "no-configs")
DEFAULT_FAIL_ON = ALWAYS_ON
_SCORE_DROP = re.compile(r"^score-drop:(\d{1,3})$")

# Every `fail-on` token as docs/action.md documents it (the table there is rendered from this by
# tests/support/generated/action_docs.py): (tokens, note after them, fails when the pull request…).
TOKEN_DOCS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("config-error",), " (always on)",
     "introduces a configuration error (a file that does not parse, an unknown key, a missing "
     "required field, ...). An error that was already on the base does not block, even if its "
     "line moved."),
    (("no-configs",), " (always on)",
     "leaves **no file** matching `configs` at head: the gate would have checked nothing. This "
     "is about the gate's setup, not the change, so it blocks whenever the head has no matching "
     "file, even if the base had none either. The message lists your globs and the YAML files "
     "nearest the repository root that look like rivet configs (top-level `source:` and "
     "`exports:`)."),
    (("plan-refused",), " (with `config-error`, so always on)",
     "introduces an export rivet refuses to plan (sparse range plan, 50,000,000-window ceiling, "
     "a bound that is not a whole integer, an unparseable date for `chunk_by_days`, "
     "`chunk_by_key` without `table:` or with `chunk_column`, no safe chunking shape, ...; see "
     "[scoring-rules.md](scoring-rules.md#strategy-resolution-and-plan-refusals)). rivet aborts "
     "the whole `rivet plan` on such an export; rivet-ci reports it with rivet's text as a "
     "finding of kind `plan-refused` and plans the others."),
    (("no-plan-refused",), "", "opts out: a refused plan is reported but never blocks."),
    (("new-isolation",), "", "makes an export `isolate_on_source` that was not."),
    (("new-warning",), "",
     "introduces a campaign (source-group) warning, per file or across files."),
    (("score-drop:N",), "",
     "lowers an export's priority score by **N points or more** (`score-drop:10` fails a drop "
     "of exactly 10, passes a drop of 9). N is 0-999; with several, the lowest applies."),
    (("wave-later",), "", "moves an export to a later recommended wave."),
    (("low-confidence",), "",
     "adds or changes an export so that it is planned on low-confidence metadata."),
    (("unplanned-cost",), "",
     "adds or changes an export so that it is planned **without any facts** — none of its own "
     "in the facts file and none from its source's catalog (its table is not in it), or a "
     "failed preflight: its cost is unknown, so the gate cannot tell whether it is heavy or "
     "collides with its source group. The comment says why (`cost unknown — no facts: table "
     "public.clickstream is not in the catalog captured 2026-11-28`). See "
     "[facts.md](facts.md#the-source-catalog)."),
    (("facts-changed-in-pr", "url-file-changed-in-pr", "state-changed-in-pr",
      "template-changed-in-pr"), "",
     "changes the facts file, a source's `url_file`, a `.rivet_state.db` or the `template-dir`. "
     "The change is never used (the base revision's file is), so these only report it; list "
     "them to block such PRs. See [security.md](security.md)."),
    (("none",), "", "never fails (report only). Cannot be combined with other tokens."),
)


class PolicyError(ValueError):
    """A `fail-on` token that is not understood."""


class GatePolicy(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    rules: frozenset[str] = frozenset(DEFAULT_FAIL_ON)
    score_drop: int | None = None  # fail when a score drops by at least this many points
    waiver_in_pr: Literal["block", "allow"] = "block"

    def describe(self) -> str:
        """The effective policy: the always-on rules first, then the added ones."""
        parts = [r for r in ALWAYS_ON if r in self.rules]
        parts += sorted(self.rules - set(ALWAYS_ON))
        if self.score_drop is not None:
            parts.append(f"score-drop:{self.score_drop}")
        return ", ".join(parts) if parts else "none"


class GateResult(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    passed: bool
    blocking: tuple[Finding, ...]
    policy: str
    waived: tuple[WaivedFinding, ...] = ()
    notes: tuple[WaiverNote, ...] = ()


def parse_policy(tokens: Iterable[str]) -> GatePolicy:
    """Parse `fail-on` tokens; every unknown token is reported at once."""
    rules: set[str] = set()
    score_drop: int | None = None
    unknown: list[str] = []
    # `--fail-on a,b` and `--fail-on a --fail-on b` alike, as the action input takes them
    given = [t.strip() for token in tokens for t in token.split(",") if t.strip()]
    if not given:
        return GatePolicy()
    if "none" not in given:
        rules.update(ALWAYS_ON)
    for token in given:
        if token == "none":
            continue
        if token in SIMPLE_RULES:
            rules.add(token)
        elif match := _SCORE_DROP.match(token):
            value = int(match.group(1))
            score_drop = value if score_drop is None else min(score_drop, value)
        else:
            unknown.append(token)
    if unknown:
        raise PolicyError(
            f"unknown fail-on value(s): {', '.join(_with_suggestion(t) for t in unknown)}; "
            f"use any of {', '.join(SIMPLE_RULES)}, score-drop:N, none")
    if "none" in given and set(given) != {"none"}:
        raise PolicyError("fail-on: `none` cannot be combined with other values")
    return GatePolicy(rules=frozenset(rules), score_drop=score_drop)


def _with_suggestion(token: str) -> str:
    """`new-isolaton (did you mean new-isolation?)`: the nearest token, when one is near."""
    head, _, number = token.lower().partition(":")
    if did_you_mean(head, ["score-drop"]) is not None and ":" in token:
        example = f"score-drop:{number}" if number.isdigit() and len(number) <= 3 else (
            "score-drop:N (N = 0-999)")
        return f"{token} (did you mean {example}?)"
    near = did_you_mean(token, [*SIMPLE_RULES, "none"])
    return f"{token} (did you mean {near}?)" if near else token


def is_blocking(finding: Finding, policy: GatePolicy) -> bool:
    if finding.status != "new":
        return False
    if finding.kind == "plan-refused":
        return ("no-plan-refused" not in policy.rules
                and bool({"config-error", "plan-refused"} & policy.rules))
    if finding.kind == "score-drop":
        return (policy.score_drop is not None and finding.score_delta is not None
                and -finding.score_delta >= policy.score_drop)
    return finding.kind in policy.rules


def evaluate_gate(diff: PlanDiff, policy: GatePolicy,
                  waivers: Sequence[Waiver] = ()) -> GateResult:
    waived, notes = apply_waivers(diff.findings, waivers,
                                  allow_pr_waivers=policy.waiver_in_pr == "allow")
    accepted = {id(w.finding) for w in waived}
    blocking = tuple(f for f in diff.findings
                     if id(f) not in accepted and is_blocking(f, policy))
    return GateResult(passed=not blocking, blocking=blocking, policy=policy.describe(),
                      waived=tuple(waived), notes=tuple(notes))
