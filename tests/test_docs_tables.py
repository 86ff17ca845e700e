"""Tables of the docs that restate the code are rendered from it (`tests/support/docs_tables.py`).

Each sits between `<!-- generated: NAME -->` and `<!-- end: NAME -->`; this test renders it again
and fails when the doc differs. Regenerate with
`RIVET_CI_UPDATE_DOCS=1 .venv/bin/pytest tests/test_docs_tables.py` and review the diff.
"""

from __future__ import annotations

import os
import re
import typing

import pytest
from support.docs_tables import GENERATED, REPO

from rivet_ci.core import policy
from rivet_ci.core.diff import FindingKind
from rivet_ci.core.waivers import WAIVABLE_KINDS

UPDATE = os.environ.get("RIVET_CI_UPDATE_DOCS") == "1"


def _block(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- generated: {re.escape(name)} -->\n)(.*?)(\n<!-- end: "
                      rf"{re.escape(name)} -->)", re.DOTALL)


@pytest.mark.parametrize(("doc", "name"), sorted(GENERATED))
def test_docs_table_matches_the_code(doc: str, name: str) -> None:
    path = REPO / doc
    text = path.read_text(encoding="utf-8")
    pattern = _block(name)
    match = pattern.search(text)
    assert match, f"{doc} has no block `<!-- generated: {name} -->`"
    rendered = GENERATED[doc, name]()
    if UPDATE and match.group(2) != rendered:
        text = pattern.sub(lambda m: m.group(1) + rendered + m.group(3), text)
        path.write_text(text, encoding="utf-8")
        match = pattern.search(text)
        assert match
    assert match.group(2) == rendered, (
        f"the `{name}` table of {doc} differs from the code; run RIVET_CI_UPDATE_DOCS=1 "
        f".venv/bin/pytest tests/test_docs_tables.py and review the diff")


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
