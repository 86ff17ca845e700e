"""The rule tables of `docs/scoring-rules.md`, rendered from the definitions the code runs
(`SCORE_TABLE`; the warnings, validate entries and suggestions of `diagnostics`)."""

from __future__ import annotations

from collections.abc import Callable

from rivet_ci.core.common.text import reason_anchor
from rivet_ci.core.plan import diagnostics as d
from rivet_ci.core.plan.scoring import SCORE_TABLE


def _delta(value: int) -> str:
    return f"+{value}" if value > 0 else ("0" if value == 0 else f"−{-value}")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def score_table() -> str:
    lines = ["| # | rule | condition | delta | reason kind | message |",
             "|---|---|---|---|---|---|"]
    for row in SCORE_TABLE:
        kind = f"`{row.kind}`" if row.kind else "—"
        message = _cell(row.message) if row.message else "—"
        lines.append(f"| {row.step} | {row.rule} | {row.condition} | {_delta(row.delta)} | "
                     f"{kind} | {message} |")
    return "\n".join(lines)


def reason_kinds() -> tuple[str, ...]:
    """Every reason kind the scoring rules give, in rule order."""
    return tuple(dict.fromkeys(row.kind for row in SCORE_TABLE if row.kind))


def reason_kind_table() -> str:
    """One row, and one anchor, per reason kind: what gives it and what it does to the score
    (a negative delta is worse: the export runs later)."""
    lines = ["| reason kind | given when | score |", "|---|---|---|"]
    for kind in reason_kinds():
        rows = [row for row in SCORE_TABLE if row.kind == kind]
        when = "; ".join(f"{row.rule}: {row.condition}" for row in rows)
        deltas = ", ".join(dict.fromkeys(_delta(row.delta) for row in rows))
        anchor = reason_anchor(kind)
        lines.append(f'| <a id="{anchor}"></a>`{kind}` | {_cell(when)} | {deltas} |')
    return "\n".join(lines)


def warning_table() -> str:
    lines = ["| # | warning | when | text |", "|---|---|---|---|"]
    for i, rule in enumerate(d.WARNING_RULES, start=1):
        lines.append(f"| {i} | {rule.name} | {rule.condition} | {_cell(rule.message)} |")
    return "\n".join(lines)


def validate_table() -> str:
    lines = ["| entry | when (resolved plan) |", "|---|---|"]
    for (rule, text), condition in d.VALIDATE_RULES:
        lines.append(f"| `[{rule}]` {_cell(text)} | {condition} |")
    return "\n".join(lines)


def suggestion_table() -> str:
    lines = ["| verdict | case | part |", "|---|---|---|"]
    for verdict, case, text in d.SUGGESTION_RULES:
        lines.append(f"| {verdict} | {case} | {_cell(text)} |")
    return "\n".join(lines)


# name of the generated block in docs/scoring-rules.md → its renderer
TABLES: dict[str, Callable[[], str]] = {
    "score-table": score_table,
    "reason-kinds": reason_kind_table,
    "warning-table": warning_table,
    "validate-table": validate_table,
    "suggestion-table": suggestion_table,
}
