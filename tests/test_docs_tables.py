"""The docs restate the code only where a test checks them. The tables rendered from the code
are generated (`tests/support/generated/`, checked by `tests/test_generated_files.py`); here,
what those tables stand on, and the names the docs' own prose tables restate (the facts
models' keys, the README's commands, options and exit codes).
"""

from __future__ import annotations

import re
import typing

import pytest
from support.generated import REPO

from rivet_ci.core.gate import policy
from rivet_ci.core.gate.diff import FindingKind
from rivet_ci.core.gate.waivers import WAIVABLE_KINDS


def test_the_token_table_documents_every_fail_on_token() -> None:
    documented = [t for tokens, _, _ in policy.TOKEN_DOCS for t in tokens]
    assert len(documented) == len(set(documented))
    assert set(documented) == {*policy.SIMPLE_RULES, "score-drop:N", "none"}
    for token in documented:  # each one is accepted as written (N as a number)
        policy.parse_policy([token.replace(":N", ":10")])


def test_every_finding_kind_has_a_fail_on_token() -> None:
    tokens = {t.removesuffix(":N") for tokens, _, _ in policy.TOKEN_DOCS for t in tokens}
    assert set(typing.get_args(FindingKind)) <= tokens


def test_the_waivable_kinds_sentence_lists_the_waivable_kinds() -> None:
    text = " ".join((REPO / "docs" / "action.md").read_text(encoding="utf-8").split())
    match = re.search(r"Waivable kinds: (.*?) \(never", text)
    assert match
    assert re.findall(r"`([^`]+)`", match.group(1)) == list(WAIVABLE_KINDS)


# -- tables whose prose is the docs' own, but whose names restate the code --------------------


def _table_after(text: str, heading: str) -> list[list[str]]:
    """The rows (cells) of the first table after `heading`, header and rule excluded."""
    start = text.index(heading)
    lines = text[start:].splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[first + 2:]:
        if not line.startswith("|"):
            break
        cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
        rows.append([cell.strip() for cell in cells])
    return rows


@pytest.mark.parametrize(("heading", "model"), [
    ("### Export entry (`ExportFacts`)", "ExportFacts"),
    ("### Column facts (`ColumnFacts`)", "ColumnFacts"),
    ("### Table facts (`TableFacts`", "TableFacts"),
    ("### Run (`history[]`)", "RunRecord"),
    ("### `catalog[]` (a source, `CatalogSource`)", "CatalogSource"),
    ("### Relation (`CatalogRelation`)", "CatalogRelation"),
    ("### Column (`CatalogColumn`)", "CatalogColumn"),
])
def test_the_facts_tables_list_every_key_of_the_model_in_order(heading: str, model: str) -> None:
    from rivet_ci.core.facts import catalog_models, history
    from rivet_ci.core.facts import models as facts

    cls = (getattr(facts, model, None) or getattr(catalog_models, model, None)
           or getattr(history, model))
    text = (REPO / "docs" / "facts.md").read_text(encoding="utf-8")
    documented = [key for row in _table_after(text, heading)
                  for key in re.findall(r"`([a-z_]+)`", row[0])]
    assert documented == list(cls.model_fields), f"docs/facts.md {heading}"


def test_the_readme_commands_are_the_cli_commands_with_their_options() -> None:
    import argparse

    from rivet_ci.cli import COMMANDS, build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    text = (REPO / "README.md").read_text(encoding="utf-8")
    rows = _table_after(text, "## Commands")
    names = [re.match(r"`rivet-ci ([a-z]+)", row[0]) for row in rows]
    assert [m.group(1) for m in names if m] == list(COMMANDS)
    for row in rows:
        usage = row[0].replace("\\|", "|").strip("`")
        command = sub.choices[usage.split()[1]]
        options = {o: a for a in command._actions for o in a.option_strings}
        for option in re.findall(r"--[a-z][a-z-]*", usage):
            assert option in options, f"README: `{option}` is not an option of {usage.split()[1]}"
        shown = re.search(r"--format ([a-z|-]+)", usage)
        if shown:
            assert shown.group(1).split("|") == list(options["--format"].choices or ())


def test_the_readme_exit_codes_are_the_exit_codes() -> None:
    from rivet_ci.exit_codes import MEANINGS

    text = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    match = re.search(r"Exit codes: (.*?)\.", text)
    assert match
    assert [int(code) for code in re.findall(r"`(\d+)`", match.group(1))] == list(MEANINGS)
