"""The rule tables of `docs/scoring-rules.md`, rendered from the definitions the code runs.

`tests/test_docs_rules.py` fails when the docs differ from what these functions render, and
rewrites them with `RIVET_CI_UPDATE_DOCS=1`. A table here is never typed by hand.
"""

from __future__ import annotations

from collections.abc import Callable

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


def warning_table() -> str:
    lines = ["| # | warning | when | text |", "|---|---|---|---|"]
    for i, (name, condition, text) in enumerate(d.WARNING_RULES, start=1):
        lines.append(f"| {i} | {name} | {condition} | {_cell(text)} |")
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


# name of the generated block in the docs → its renderer
GENERATED: dict[str, Callable[[], str]] = {
    "score-table": score_table,
    "warning-table": warning_table,
    "validate-table": validate_table,
    "suggestion-table": suggestion_table,
}
