"""The rule tables in `docs/scoring-rules.md` are rendered from the rule definitions
(`tests/support/generated/scoring_docs.py`; `tests/test_generated_files.py` checks them); here,
that no reason message of the code is missing from the docs.
"""

from __future__ import annotations

from pathlib import Path

DOC = Path(__file__).parent.parent / "docs" / "scoring-rules.md"


def test_every_message_of_the_code_is_in_the_docs() -> None:
    """A reason message added to the code without its table row would be caught here."""
    from rivet_ci.core.plan import scoring

    text = DOC.read_text(encoding="utf-8")
    rules = [v for v in vars(scoring).values() if isinstance(v, scoring.ScoreRule)]
    assert set(rules) == set(scoring.SCORE_TABLE)
    for rule in rules:
        if rule.message:
            assert rule.message in text, rule.message
