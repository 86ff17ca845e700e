"""`${NAME}` placeholders: unset ones never stop planning from facts, whatever the YAML style."""

from __future__ import annotations

from rivet_ci.core.config_loader import load_config_text
from rivet_ci.core.facts_loader import load_facts_text


def test_unset_placeholder_in_flow_style_source_still_plans() -> None:
    text = ("source: {type: postgres, url: ${PG_URL}}\n"
            "exports:\n  - {name: a, table: t}\n  - {name: b, table: ${SCHEMA}.t}\n")
    loaded = load_config_text("f.yaml", text, {})
    assert [e.name for e in loaded.exports] == ["a"]
    assert [p.render() for p in loaded.problems] == [
        "f.yaml:4: exports[1].table: environment variable SCHEMA is not set"]
    assert loaded.unresolved_source_variables == ("PG_URL",)
    assert loaded.source is not None and loaded.source.url == "${PG_URL}"


def test_unset_connection_fields_are_recorded_not_errors() -> None:
    text = ("source:\n  type: mysql\n  host: db\n  port: ${PORT}\n  password: ${PW}\n"
            "exports:\n  - name: a\n    table: t\n")
    loaded = load_config_text("g.yaml", text, {})
    assert loaded.problems == ()
    assert loaded.unresolved_source_variables == ("PORT", "PW")
    assert loaded.source is not None
    assert (loaded.source.port, loaded.source.password) == (None, "${PW}")


def test_an_unset_source_type_is_still_an_error() -> None:
    loaded = load_config_text("h.yaml", "source: {type: ${KIND}, url: x}\n"
                                        "exports: [{name: a, table: t}]\n", {})
    assert [p.render() for p in loaded.problems] == [
        "h.yaml:1: source.type: environment variable KIND is not set"]
    assert [e.name for e in loaded.exports] == ["a"]


def test_set_placeholders_in_flow_style_are_substituted() -> None:
    loaded = load_config_text("i.yaml", "source: {type: postgres, url: ${U}}\n"
                                        "exports: [{name: a, table: '${S}.t', parallel: ${P}}]\n",
                              {"U": "postgresql://h/db", "S": "shop", "P": "3"})
    assert loaded.problems == ()
    assert loaded.source is not None and loaded.source.url == "postgresql://h/db"
    assert (loaded.exports[0].table, loaded.exports[0].parallel) == ("shop.t", 3)


def test_unknown_top_level_facts_key_says_so() -> None:
    facts, problems = load_facts_text("facts.yaml", "format: rivet-ci-facts/1\nexport: {}\n")
    assert facts is None
    assert [p.render() for p in problems] == [
        "facts.yaml:2: export: unknown key (did you mean `exports`?)"]
