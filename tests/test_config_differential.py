"""Config verdicts, ours against the real rivet's (rivet-cli 0.32.2), on a seeded corpus.

`tests/support/config_corpus.py` builds the corpus: our own configs (`tests/configs`,
`tests/bad_configs`, `examples/`), the config-only plan refusals of `tests/cases/refusals.yml`,
and a generated one — every key of `rivet schema config`, mutations of every scalar key,
an unknown and a repeated key in every struct, YAML structure (anchors, tags, BOM, documents,
empty values) and rule violations. Each family is one test: rivet runs on every case of it
(two at a time, sandboxed, offline), `rivet-ci check --format json --check-environment` on the
same bytes with the same environment, and accept / refuse / environment must agree, a refusal
naming the same field (`tests/support/config_differential.py` says how fields are compared).
No case may end in a traceback. Any difference fails with the list of cases.

    .venv/bin/python -m pytest -q tests/test_config_differential.py
"""

from __future__ import annotations

import functools
import re

import pytest
from support.config_corpus import (
    Case,
    key_cases,
    mutation_cases,
    project_cases,
    refusal_cases,
    rule_cases,
    struct_cases,
    structure_cases,
)
from support.config_differential import Ours, Outcome, compare, related
from support.real_rivet import config_schema, error_codes
from support.rivet_schema import Rivet

from rivet_ci.core.config.rules import RIVET_CODES, RULES, rivet_code

FAMILIES = ("project", "refusals", "key", "mutate", "struct", "yaml", "rule")


@functools.cache
def _rivet() -> Rivet:
    return Rivet(config_schema())


def family(name: str) -> list[Case]:
    rivet = _rivet()
    return list({
        "project": project_cases, "refusals": refusal_cases,
        "key": lambda: key_cases(rivet), "mutate": lambda: mutation_cases(rivet),
        "struct": lambda: struct_cases(rivet), "yaml": structure_cases, "rule": rule_cases,
    }[name]())


def _report(outcomes: list[Outcome]) -> str:
    bad = [o for o in outcomes if not o.agrees]
    return f"{len(outcomes) - len(bad)}/{len(outcomes)} agree:\n" + "\n".join(
        o.describe() for o in bad[:40])


@pytest.mark.parametrize("name", FAMILIES)
def test_config_verdicts_agree_with_the_real_rivet(name: str) -> None:
    cases = family(name)
    assert len(cases) >= 10
    outcomes = compare(cases)
    assert not [o for o in outcomes if o.ours.verdict == "crash"], _report(outcomes)
    assert all(o.agrees for o in outcomes), _report(outcomes)
    # The code we give the finding rivet names is rivet's own code for the same config.
    wrong = [o.describe() + f" | codes {[rivet_code(r) for r in o.ours.rules]}"
             for o in outcomes if o.rivet.verdict == "refuse" and not any(
                 rivet_code(rule) == o.rivet.code
                 for rule, field in zip(o.ours.rules, o.ours.fields, strict=True)
                 if o.rivet_field is None or related(o.rivet_field, field))]
    assert wrong == []
    # The corpus is not one-sided: each family holds refusals, and all but the YAML and struct
    # families accepted configs too (so the comparison would see a wrong refusal).
    verdicts = {o.rivet.verdict for o in outcomes}
    assert "refuse" in verdicts
    if name not in ("yaml", "struct"):
        assert "accept" in verdicts


def test_the_corpus_is_seeded_and_covers_every_rivet_key() -> None:
    rivet = _rivet()
    first = [(c.id, c.text) for c in mutation_cases(rivet)]
    assert first == [(c.id, c.text) for c in mutation_cases(rivet)]
    keyed = {c.id.split(":", 1)[1].split("#")[0] for c in key_cases(rivet)}
    assert keyed == set(rivet.paths)
    total = sum(len(family(name)) for name in FAMILIES)
    assert total > 1000


def test_a_disagreement_is_seen() -> None:
    """The comparison is not vacuous: a case rivet refuses that we were made to accept (an
    unknown key hidden from us by giving our side another file) is reported."""
    good, bad = family("yaml")[0], next(c for c in family("rule") if c.id == "rule:chunk_dense")
    outcomes = compare([good, bad])
    assert [o.agrees for o in outcomes] == [True, True]
    swapped = compare([Case(bad.id, bad.text, bad.env)])[0]
    assert swapped.rivet.verdict == "refuse"
    lying = Outcome(swapped.case, swapped.rivet, swapped.rivet_field, Ours("accept", (), ()))
    assert not lying.agrees
    elsewhere = Outcome(swapped.case, swapped.rivet, swapped.rivet_field,
                        Ours("refuse", ("source.type",), ("T-enum",)))
    assert swapped.rivet_field == "exports[0]" and not elsewhere.agrees


def test_every_rule_has_a_code_rivet_documents() -> None:
    """Each rule's code is one of `rivet schema errors` (the binary's own reference)."""
    documented = set(re.findall(r"`(RIVET_[A-Z_]+)`", error_codes()))
    assert len(documented) > 200
    assert set(RIVET_CODES) == {rule.id for rule in RULES}
    assert {code for code in RIVET_CODES.values() if code is not None} - documented == set()
