"""The rule tables in `docs/scoring-rules.md` are rendered from the rule definitions.

Each table sits between `<!-- generated: NAME -->` and `<!-- end: NAME -->`; this test renders it
again from the code (`rivet_ci/core/formats/rule_docs.py`) and fails when the docs differ.
Regenerate with
`RIVET_CI_UPDATE_DOCS=1 .venv/bin/pytest tests/test_docs_rules.py` and review the diff.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from rivet_ci.core.formats.rule_docs import GENERATED

DOC = Path(__file__).parent.parent / "docs" / "scoring-rules.md"
UPDATE = os.environ.get("RIVET_CI_UPDATE_DOCS") == "1"


def _block(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated: {re.escape(name)} -->\n)(.*?)(\n<!-- end: "
                      rf"{re.escape(name)} -->)", re.DOTALL)


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_docs_table_matches_the_rules(name: str) -> None:
    text = DOC.read_text(encoding="utf-8")
    pattern = _block(name)
    match = pattern.search(text)
    assert match, f"docs/scoring-rules.md has no block `<!-- generated: {name} -->`"
    rendered = GENERATED[name]()
    if UPDATE and match.group(2) != rendered:
        text = pattern.sub(lambda m: m.group(1) + rendered + m.group(3), text)
        DOC.write_text(text, encoding="utf-8")
        match = pattern.search(text)
        assert match
    assert match.group(2) == rendered, (
        f"the `{name}` table of docs/scoring-rules.md differs from the rules; run "
        f"RIVET_CI_UPDATE_DOCS=1 .venv/bin/pytest tests/test_docs_rules.py and review the diff")


def test_every_message_of_the_code_is_in_the_docs() -> None:
    """A reason message added to the code without its table row would be caught here."""
    from rivet_ci.core.plan import scoring

    text = DOC.read_text(encoding="utf-8")
    rules = [v for v in vars(scoring).values() if isinstance(v, scoring.ScoreRule)]
    assert set(rules) == set(scoring.SCORE_TABLE)
    for rule in rules:
        if rule.message:
            assert rule.message in text, rule.message
