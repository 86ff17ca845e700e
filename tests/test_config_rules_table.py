"""The config rules' table (`rivet_ci/core/config/rules.py`): each rule one definition, and the
shortcuts the checker takes for speed skip only what no rule would refuse.

That each rule fires where rivet refuses (and only there) is the differential corpus's job
(`tests/test_config_differential.py`) and the corpus's (`tests/test_configs_corpus.py`).
"""

from __future__ import annotations

from typing import Any

import pytest

from rivet_ci.core.common.problems import field_path
from rivet_ci.core.config import rules
from rivet_ci.core.config.models import ExportConfig


def test_every_rule_is_defined_once_and_the_checker_runs_each_typed_rule() -> None:
    ids = [r.id for r in rules.RULES]
    assert len(ids) == len(set(ids)) == 134
    staged = [r for stage in rules.STAGES for groups in stage.groups for group in groups
              for r in group.rules]
    assert [i for i in ids if i.startswith("V-")] == [r.id for r in staged]
    assert all(r.check is not None for r in staged)
    assert all(r.check is None for r in (*rules.TEXT_RULES, *rules.WARNING_RULES))
    assert {r.id: r.code for r in rules.RULES} == rules.RIVET_CODES


def test_a_rule_of_a_fixed_field_points_at_that_field() -> None:
    for stage_rule in (r for r in rules.RULES if r.id.startswith("V-") and "<" not in r.field):
        base: tuple[str | int, ...] = (("exports", 0) if stage_rule.field.startswith("exports[i]")
                                       else ("source",) if stage_rule.field.startswith("source")
                                       else ("load",) if stage_rule.field.startswith("load")
                                       else ())
        shown = field_path((*base, *stage_rule.loc)).replace("exports[0]", "exports[i]")
        assert shown == stage_rule.field, stage_rule.id


def _export(**fields: Any) -> ExportConfig:
    return ExportConfig.model_validate({"name": "e", "format": "parquet",
                                        "destination": {"type": "local", "path": "/out"},
                                        **fields})


def _fired_without_the_group_guard(rule_ids: set[str], export: ExportConfig) -> list[str]:
    """The rules of `rule_ids`' group that fire when its guard is not asked (first-wins)."""
    group = next(g for g in rules.EXPORT_RULES if {r.id for r in g.rules} == rule_ids)
    scope = rules.Scope(None, [(0, export)])
    fired = []
    for one in group.rules:
        assert one.check is not None
        if one.check(export, scope):
            fired.append(one.id)
            if group.first:
                break
    return fired


E38 = {"V-E38a", "V-E38b", "V-E38c", "V-E38d", "V-E38e"}


@pytest.mark.parametrize("table", [
    "orders", "public.orders", "_x", "A9_.b_", " orders ", "", " ", "a.b.c", "a..b", ".a", "a.",
    "1a", "a-b", "é", "a.é", "public.1x", "a b", "a.b-c", "ﬁ", "a\t", "\u00a0a",
])
def test_the_plain_table_shortcut_skips_only_tables_no_rule_refuses(table: str) -> None:
    export = _export(table=table)
    plain = rules._PLAIN_TABLE.match(table.strip()) is not None
    fired = _fired_without_the_group_guard(E38, export)
    assert (fired == []) == plain, (table, fired)
    # and the checker agrees (its guard skips the group exactly for the plain ones)
    found = {f.rule for f in rules.export_findings(export, 0, None, top_level_load=False,
                                                   path_exists=None)} & E38
    assert found == set(fired)


@pytest.mark.parametrize("reads", [
    {"table": "t"}, {"query": "select 1"}, {"query_file": "q.sql"}, {"tables": ("a", "b")}, {},
    {"table": "t", "tables": ("a",)}, {"query": "q", "table": "t"},
    {"query": "q", "query_file": "f", "table": "t", "tables": ("a",)},
])
def test_the_reading_shortcut_skips_only_exports_that_read_one_thing(reads: dict[str, Any]) -> None:
    export = _export(**reads)
    fired = _fired_without_the_group_guard({"V-E9", "V-E10a", "V-E10b"}, export)
    assert (fired == []) == (len(reads) == 1), (reads, fired)


def test_a_duplicate_name_is_found_after_the_names_are_counted() -> None:
    a, b = _export(name="x", table="t"), _export(name="x", table="u")
    scope = rules.Scope(None, [(0, a), (1, _export(name="y", table="v")), (2, b)],
                        count=3, exports_listed=True)
    found = [(f.loc, f.rule, dict(f.values)) for f in rules.config_findings(scope)]
    assert found == [(("exports", 2, "name"), "V-L2", {"name": "x", "first": 0})]
