"""The tables of `docs/action.md`, rendered from `action.yml` and what the code defines: the
inputs and outputs, the `fail-on` tokens and examples, the exit codes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from rivet_ci import exit_codes
from rivet_ci.core.gate import policy

REPO = Path(__file__).resolve().parents[3]


def action_metadata() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    return data


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _default(value: object) -> str:
    lines = [line for line in str(value if value is not None else "").splitlines() if line]
    return "<br>".join(f"`{_cell(line)}`" for line in lines) if lines else "empty"


def inputs_table() -> str:
    rows = ["| input | default | meaning |", "|---|---|---|"]
    inputs: Mapping[str, Mapping[str, Any]] = action_metadata()["inputs"]
    for name, spec in inputs.items():
        rows.append(f"| `{name}` | {_default(spec.get('default'))} | "
                    f"{_cell(spec['description'])} |")
    return "\n".join(rows)


def outputs_table() -> str:
    rows = ["| output | value |", "|---|---|"]
    outputs: Mapping[str, Mapping[str, Any]] = action_metadata()["outputs"]
    for name, spec in outputs.items():
        rows.append(f"| `{name}` | {_cell(spec['description'])} |")
    return "\n".join(rows)


def exit_codes_table() -> str:
    rows = ["| code | meaning |", "|---|---|"]
    rows += [f"| {code} | {_cell(text)} |" for code, text in exit_codes.MEANINGS.items()]
    return "\n".join(rows)


def fail_on_tokens_table() -> str:
    rows = ["| token | fails when the pull request… |", "|---|---|"]
    rows += [f"| {', '.join(f'`{t}`' for t in tokens)}{note} | {_cell(text)} |"
             for tokens, note, text in policy.TOKEN_DOCS]
    return "\n".join(rows)


# `fail-on:` as written → a note on the effective policy (shown after it).
POLICY_EXAMPLES: tuple[tuple[str | None, str], ...] = (
    (None, ""),
    ("score-drop:10", ""),
    ("new-isolation, wave-later", ""),
    ("none", " — nothing blocks; the comment is still posted and says what was checked"),
)


def fail_on_examples_table() -> str:
    rows = ["| `fail-on:` | effective policy (shown in the comment's footer, the Blocking heading "
            "and the `policy` output) |", "|---|---|"]
    for written, note in POLICY_EXAMPLES:
        tokens = [] if written is None else written.split(",")
        effective = policy.parse_policy(tokens).describe()
        shown = "*(not set)*" if written is None else f"`{written}`"
        rows.append(f"| {shown} | `{effective}`{note} |")
    return "\n".join(rows)


# name of the generated block in docs/action.md → its renderer
TABLES: dict[str, Callable[[], str]] = {
    "inputs": inputs_table,
    "outputs": outputs_table,
    "exit-codes": exit_codes_table,
    "fail-on-tokens": fail_on_tokens_table,
    "fail-on-examples": fail_on_examples_table,
}
