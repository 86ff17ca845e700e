"""`${NAME}` placeholders and `--param` (spec rivet-config.md §4): rivet's grammar, precedence
over the environment, and unset names as environment-dependent notes (errors only with
`--check-environment`), whatever the YAML style."""

from __future__ import annotations

from rivet_ci.core.config.loader import load_config_text, substitute, substitute_query
from rivet_ci.core.facts.loader import load_facts_text

EXPORT = "format: parquet, destination: {type: local}"


def exists(_: str) -> bool:
    return True


def test_unset_placeholder_in_flow_style_source_still_plans() -> None:
    text = ("source: {type: postgres, url: ${PG_URL}}\n"
            f"exports:\n  - {{{EXPORT}, name: a, table: t}}\n"
            f"  - {{{EXPORT}, name: b, table: ${{SCHEMA}}.t}}\n")
    loaded = load_config_text("f.yaml", text, {})
    assert [e.name for e in loaded.exports] == ["a", "b"]
    assert loaded.exports[1].table == "${SCHEMA}.t"  # kept as written, never half-substituted
    assert [(p.line, p.rule, p.severity) for p in loaded.problems] == [
        (1, "R3", "note"), (4, "R3", "note")]
    assert "${PG_URL} is not set" in loaded.problems[0].message
    assert loaded.unresolved_source_variables == ("PG_URL",)
    assert loaded.source is not None and loaded.source.url == "${PG_URL}"
    assert not [p for p in loaded.problems if p.severity == "error"]


def test_with_check_environment_an_unset_placeholder_is_an_error() -> None:
    text = (f"source: {{type: postgres, url: ${{PG_URL}}}}\n"
            f"exports:\n  - {{{EXPORT}, name: a, table: t}}\n")
    loaded = load_config_text("f.yaml", text, {}, path_exists=exists)
    assert [(p.line, p.rule, p.severity) for p in loaded.problems] == [(1, "R3", "error")]


def test_unset_connection_fields_are_recorded_not_errors() -> None:
    text = ("source:\n  type: mysql\n  host: db\n  user: u\n  database: d\n  port: ${PORT}\n"
            "  password: ${PW}\nexports:\n  - name: a\n    table: t\n    format: csv\n"
            "    destination: {type: local}\n")
    loaded = load_config_text("g.yaml", text, {})
    assert not [p for p in loaded.problems if p.severity == "error"]
    assert [(p.rule, p.field) for p in loaded.problems] == [
        ("R3", None), ("R3", None), ("R3-value", "source.port")]
    assert loaded.unresolved_source_variables == ("PORT", "PW")
    assert loaded.source is not None
    assert (loaded.source.port, loaded.source.password) == (None, "${PW}")
    assert [e.name for e in loaded.exports] == ["a"]


def test_an_unset_value_where_a_number_is_needed_is_not_planned() -> None:
    text = (f"source: {{type: postgres, url_env: U}}\nexports:\n"
            f"  - {{{EXPORT}, name: a, table: t, mode: chunked, chunk_size: ${{N}}}}\n"
            f"  - {{{EXPORT}, name: b, table: t}}\n")
    loaded = load_config_text("h.yaml", text, {})
    assert [e.name for e in loaded.exports] == ["b"]
    assert [(p.rule, p.field, p.severity) for p in loaded.problems] == [
        ("R3", None, "note"), ("R3-value", "exports[0].chunk_size", "note")]


def test_an_unset_source_type_is_still_an_error() -> None:
    loaded = load_config_text("h.yaml", "source: {type: ${KIND}, url: x}\n"
                                        f"exports: [{{name: a, table: t, {EXPORT}}}]\n", {})
    assert [(p.rule, p.field) for p in loaded.problems] == [
        ("R3", None), ("R3-value", "source.type")]
    assert loaded.source is None
    assert [e.name for e in loaded.exports] == ["a"]


def test_set_placeholders_in_flow_style_are_substituted() -> None:
    loaded = load_config_text("i.yaml", "source: {type: postgres, url: ${U}}\n"
                                        f"exports: [{{name: a, table: '${{S}}.t', parallel: ${{P}},"
                                        f" {EXPORT}}}]\n",
                              {"U": "postgresql://h/db", "S": "shop", "P": "3"})
    assert loaded.problems == ()
    assert loaded.source is not None and loaded.source.url == "postgresql://h/db"
    assert (loaded.exports[0].table, loaded.exports[0].parallel) == ("shop.t", 3)


def test_params_win_over_the_environment() -> None:
    text = (f"source: {{type: postgres, url_env: U}}\n"
            f"exports: [{{name: a, table: ${{T}}, {EXPORT}}}]\n")
    loaded = load_config_text("p.yaml", text, {"T": "from_env"}, params={"T": "from_param"})
    assert loaded.exports[0].table == "from_param"
    assert loaded.placeholders == frozenset({"T"})


def test_rivet_grammar_names_up_to_the_brace_and_never_rescans() -> None:
    env = {"A": "x", "A:-d": "odd", "B": "${A}"}
    assert substitute("${A}-${A:-d}-${}-$${A}-\\${A}-$A", None, env).text == "x-odd--$x-\\x-$A"
    assert substitute("${B}", None, env).text == "${A}"  # inserted text is not rescanned
    assert substitute("a ${A} ${unterminated", None, env).text == "a x ${unterminated"
    result = substitute("# comment ${GONE}\nk: 1\n", None, {})
    assert (result.unset, [m[:2] for m in result.misses]) == (("GONE",), [("GONE", 1)])


def test_a_nul_byte_from_a_param_is_refused() -> None:
    result = substitute("k: ${A}\n", {"A": "a\0b"}, {})
    assert [m[2] for m in result.misses] == ["R4"]


def test_query_is_substituted_again_when_params_are_given() -> None:
    text = (f"source: {{type: postgres, url_env: U}}\nexports:\n"
            f"  - {{{EXPORT}, name: a, query: 'SELECT * FROM ${{T}}'}}\n")
    loaded = load_config_text("q.yaml", text, {"X": "orders"}, params={"T": "${X}"})
    assert loaded.exports[0].query == "SELECT * FROM orders"
    plain = load_config_text("q.yaml", text, {"X": "orders", "T": "${X}"})
    assert plain.exports[0].query == "SELECT * FROM ${X}"
    assert substitute_query("SELECT ${X}, ${Y}", {"X": "1"}, {}) == ("SELECT 1, ${Y}", ("Y",))


def test_unknown_top_level_facts_key_says_so() -> None:
    facts, problems = load_facts_text("facts.yaml", "format: rivet-ci-facts/1\nexport: {}\n")
    assert facts is None
    assert [p.render() for p in problems] == [
        "facts.yaml:2: export: unknown key (did you mean `exports`?)"]
