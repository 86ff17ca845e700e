"""`parse_yaml` builds exactly what `yaml.safe_load` builds, with lines recorded on the way."""

from __future__ import annotations

import math
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from rivet_ci.core.common.yaml_lines import YamlSyntaxError, parse_yaml

TRICKY = {
    "scalars": "a: 1\nb: 1.5\nc: true\nd: null\ne: '007'\nf: 2026-11-29\n"
               "g: 2026-11-29 12:00:00\nh: 0x1F\ni: .inf\nj: ~\nk: 'yes'\nl: yes\n",
    "anchors and merge keys": "base: &b {x: 1, y: [1, 2]}\nchild:\n  <<: *b\n  y: 3\n"
                              "again: *b\n",
    "explicit tags": "s: !!set {a, b}\no: !!omap [{a: 1}, {b: 2}]\nbin: !!binary aGVsbG8=\n"
                     "str: !!str 123\nint: !!int '42'\n",
    "non-string keys": "1: one\ntrue: yes\nnull: nothing\n2.5: x\n",
    "nested": "exports:\n  - name: a\n    columns: {id: {indexed: true, min: '1'}}\n"
              "  - [1, [2, [3, {deep: [4]}]]]\n",
    "duplicate keys": "a: 1\na: 2\nb: {c: 1, c: 3}\n",
    "empty collections": "a: []\nb: {}\nc: ''\n",
    "block scalars": "q: |\n  SELECT *\n  FROM t\nr: >\n  folded\n  text\n",
}


def normalize(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, dict):
        return {normalize(k): normalize(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value


@pytest.mark.parametrize("text", TRICKY.values(), ids=TRICKY.keys())
def test_tricky_documents_match_safe_load(text: str) -> None:
    assert normalize(parse_yaml(text).data) == normalize(yaml.safe_load(text))


def test_aliases_share_one_object_and_recursion_is_supported() -> None:
    data = parse_yaml("a: &x [1, 2]\nb: *x\n").data
    assert data["a"] is data["b"]
    loop = parse_yaml("&r [1, *r]\n").data
    assert loop[1] is loop


def test_nested_alias_bomb_is_linear() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(20))
    data = parse_yaml(bomb).data
    assert data["u"][0] is data["t"]  # shared, not copied 3**20 times


def test_lines_and_duplicates_are_recorded() -> None:
    parsed = parse_yaml(TRICKY["nested"])
    assert parsed.lines[("exports", 0, "columns")] == 3
    assert parsed.lines[("exports", 1)] == 4
    dup = parse_yaml(TRICKY["duplicate keys"])
    assert dup.duplicates == [(("a",), 2), (("b", "c"), 3)]
    assert dup.data == {"a": 2, "b": {"c": 3}}


def test_unhashable_keys_and_unknown_tags_are_yaml_problems() -> None:
    with pytest.raises(YamlSyntaxError, match="unhashable"):
        parse_yaml("? [a, b]\n: 1\n")
    with pytest.raises(YamlSyntaxError):
        parse_yaml("a: !!python/object:os.system ls\n")


scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12),
                    st.floats(allow_nan=False), st.text(max_size=20))
documents = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=25)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(documents, st.booleans())
def test_random_documents_match_safe_load(document: Any, flow: bool) -> None:
    text = yaml.safe_dump(document, default_flow_style=flow, allow_unicode=True)
    assert parse_yaml(text).data == yaml.safe_load(text)
