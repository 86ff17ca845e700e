"""Composed YAML nodes → typed values for the config models, the way rivet types them.

The schema is read off the pydantic models in `rivet_ci.core.config.models` (one definition): each
field's annotation says which rivet type it is (string, bool, u16/u32/u64, f64, enum, struct,
list, map, any value) and whether it is required, optional (null/empty = unset) or defaulted
(must be valid when present). Every scalar is then read per spec rivet-config.md §1.2.

All problems of a file are collected (typing never stops at the first), each with its path,
line and rule id (`T-*`, `P0-*`, `P1*`). Placeholders that were unset when the text was
substituted are recognised here: in a string they are kept as written (`${NAME}`); where a
typed value is needed they make the field unknown, which is reported separately from a type
error (it depends on the environment, not on the file).
"""

from __future__ import annotations

import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from rivet_ci.core.common.fast_model import construct
from rivet_ci.core.common.patterns import did_you_mean
from rivet_ci.core.config.models import (
    ANY_VALUE_STRUCTS,
    NULL_REFUSED,
    TUNING_KEYS,
    Config,
    ExportConfig,
    SourceConfig,
)
from rivet_ci.core.config.rivet_yaml import (
    BOOLS,
    HUGE_INTEGER_DIGITS,
    INTEGER_START,
    MAP,
    MAX_DEPTH,
    NULLS,
    PLAIN,
    QUOTED,
    huge_integer,
    read_float,
    read_uint,
    render_key,
    resolve_any,
)

Loc = tuple[str | int, ...]
Presence = Literal["required", "optional", "default"]
UNSET_PREFIX = "rivet-ci-unset-"
UNSET_MARK = re.compile(r"rivet-ci-unset-(\d+)-")


@dataclass(frozen=True)
class Kind:
    """What rivet type a field has: `name` is str/bool/uint/int/float/enum/struct/list/map/
    any/row_hash/either; `max` (and `min`, for an int) bounds an integer; `values` lists an
    enum's variants; `model` a struct; `item` is a list's or map's value kind. An `either` is
    one of the words `values` or a value of the kind `item` (a list of names, a struct), as
    rivet's `auto`/`none`-or-a-list keys."""

    name: str
    max: int = 0
    min: int = 0
    bits: int = 0
    values: tuple[str, ...] = ()
    model: type[BaseModel] | None = None
    item: Kind | None = None


@dataclass(frozen=True)
class FieldSpec:
    key: str
    kind: Kind
    presence: Presence
    # For the typing's fast path: the kind's name, whether null/empty leaves the key unset,
    # and an enum's variants as a set.
    name: str = field(init=False, repr=False, compare=False)
    unset_by_null: bool = field(init=False, repr=False, compare=False)
    variants: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", self.kind.name)
        object.__setattr__(self, "unset_by_null", self.presence == "optional")
        object.__setattr__(self, "variants", frozenset(self.kind.values))


@dataclass
class Issue:
    """One typing problem: where, which rule, what; `unset` names the placeholders it hinges on."""

    loc: Loc
    line: int
    rule: str
    message: str
    unset: tuple[str, ...] = ()


@dataclass
class Walk:
    """State of one file's walk: problems, unset placeholder names, alias-expansion budget."""

    unset_names: tuple[str, ...]
    budget: int
    issues: list[Issue] = field(default_factory=list)
    visits: int = 0
    misplaced: dict[Loc, list[tuple[str, int]]] = field(default_factory=dict)
    restored: set[str] = field(default_factory=set)
    # Each `exports` item (its model, or None when it failed) and line; the typed source.
    exports: list[tuple[Any, int]] = field(default_factory=list)
    parts: dict[str, Any] = field(default_factory=dict)
    # The sections built so far, by model and typed keys and values (see `Typer._build`).
    built: dict[tuple[Any, ...], Any] = field(default_factory=dict)


class RepetitionLimitError(Exception):
    """Alias expansion went beyond the budget (a "billion laughs" document)."""


class TooDeepError(Exception):
    """Nesting deeper than rivet's 128 levels."""


_FAIL = object()
_UNSET = object()  # `Typer.struct`: a key typed but left unset (null, or failed)


def _kind_of(annotation: Any) -> tuple[Kind, bool]:
    """(kind, optional) of an annotation such as `U64 | None`."""
    optional = False
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(args) < len(typing.get_args(annotation))
        if len(args) == 2 and bool in args:  # `bool | tuple[str, ...]`: meta_columns.row_hash
            return Kind("row_hash"), optional
        if len(args) == 2 and typing.get_origin(args[0]) is Literal:  # a word or a value
            other, _ = _kind_of(args[1])
            return Kind("either", values=tuple(typing.get_args(args[0])), item=other), optional
        annotation = args[0]
        origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        _base, *meta = typing.get_args(annotation)
        # `U64` as written holds a `Field(le=...)`; rebuilt from a field whose whole annotation
        # it is, it holds pydantic's constraints (`Le(le=...)`) themselves.
        constraints = [c for m in meta for c in (m.metadata if isinstance(m, FieldInfo) else (m,))]
        limit: int = next(c.le for c in constraints if hasattr(c, "le"))
        low: int = next(c.ge for c in constraints if hasattr(c, "ge"))
        if low < 0:  # a signed integer (i64)
            return Kind("int", max=limit, min=low, bits=limit.bit_length() + 1), optional
        return Kind("uint", max=limit, bits=limit.bit_length()), optional
    if origin is Literal:
        return Kind("enum", values=tuple(typing.get_args(annotation))), optional
    if origin is tuple:
        item, _ = _kind_of(typing.get_args(annotation)[0])
        return Kind("list", item=item), optional
    if origin is dict:
        item, _ = _kind_of(typing.get_args(annotation)[1])
        return Kind("map", item=item), optional
    if annotation is str:
        return Kind("str"), optional
    if annotation is bool:
        return Kind("bool"), optional
    if annotation is float:
        return Kind("float"), optional
    if annotation is Any:
        return Kind("any"), True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return Kind("struct", model=annotation), optional
    raise TypeError(f"unsupported config annotation {annotation!r}")  # pragma: no cover


def _specs(model: type[BaseModel]) -> dict[str, FieldSpec]:
    # Each field's annotation as pydantic evaluated it when the model was defined (constraints
    # put back): `typing.get_type_hints` would compile and evaluate every annotation's text
    # again, ~8M instructions in each run that loads a config (a test checks both agree).
    out: dict[str, FieldSpec] = {}
    strict = model in ANY_VALUE_STRUCTS
    for attr, info in model.model_fields.items():
        key = info.alias or attr
        kind, optional = _kind_of(info.rebuild_annotation())
        if strict and kind.name == "str":
            kind = Kind("name")
        if info.is_required():
            presence: Presence = "required"
        elif (model, key) in NULL_REFUSED:
            presence = "default"
        elif optional or info.default is None:
            presence = "optional"
        else:
            presence = "default"
        out[key] = FieldSpec(key, kind, presence)
    return out


# Per struct: its keys' specs and its required keys (looked up once per mapping typed).
_STRUCTS: dict[type[BaseModel], tuple[dict[str, FieldSpec], tuple[str, ...]]] = {}


def _struct(model: type[BaseModel]) -> tuple[dict[str, FieldSpec], tuple[str, ...]]:
    cached = _STRUCTS.get(model)
    if cached is None:
        fields = _specs(model)
        required = tuple(key for key, spec in fields.items() if spec.presence == "required")
        cached = _STRUCTS[model] = (fields, required)
    return cached


def specs(model: type[BaseModel]) -> dict[str, FieldSpec]:
    """The keys of one struct, in declaration order, with their rivet types."""
    return _struct(model)[0]


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


def _describe(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    value = node.value
    if node.tag == PLAIN and value in NULLS:
        return "an empty value" if value == "" else f"null (`{value}`)"
    shown = value if len(value) <= 60 else f"{value[:57]}..."
    if node.tag == QUOTED:
        quoted = getattr(node, "style", None) in ("'", '"')
        return f"the quoted string {shown!r}" if quoted else "a block of text"
    return f"`{shown}`"


class Typer:
    """Types one composed config against the models, collecting every problem."""

    def __init__(self, walk: Walk) -> None:
        self.walk = walk

    # -- problems -------------------------------------------------------------------------------

    def _issue(self, loc: Loc, line: int, rule: str, message: str,
               node: yaml.Node | None = None) -> object:
        unset: tuple[str, ...] = ()
        if (node is not None and self.walk.unset_names and isinstance(node, yaml.ScalarNode)
                and UNSET_PREFIX in node.value):
            unset = tuple(self.walk.unset_names[int(m)] for m in UNSET_MARK.findall(node.value))
            names = ", ".join(f"${{{n}}}" for n in unset)
            rule, message = "R3-value", (f"its value comes from {names}, which is not set, so it "
                                         f"cannot be checked or planned")
        self.walk.issues.append(Issue(loc, line, rule, message, unset))
        return _FAIL

    def _count(self, depth: int) -> None:
        self.walk.visits += 1
        if self.walk.visits > self.walk.budget:
            raise RepetitionLimitError
        if depth > MAX_DEPTH:
            raise TooDeepError

    # -- values ---------------------------------------------------------------------------------

    def value(self, node: yaml.Node, kind: Kind, loc: Loc, line: int, depth: int) -> Any:
        """`node` read as `kind`, or `_FAIL` after recording why."""
        self._count(depth)
        name = kind.name
        if isinstance(node, yaml.ScalarNode):
            if name == "str":
                text: str = node.value
                if node.tag == PLAIN and huge_integer(node) is not None:
                    return self._issue(loc, line, "P0-huge-int", f"the integer `{text}` does "
                                       "not fit in 64 bits; rivet refuses it anywhere, quote it")
                if self.walk.unset_names and UNSET_PREFIX in text:
                    return self._restore(text)
                return text
            if name == "enum":
                if node.value in kind.values:
                    return node.value
                return self._issue(loc, line, "T-enum", f"unknown value {_describe(node)}, "
                                   f"expected {_one_of(kind.values)}", node)
            if name == "uint":
                number = read_uint(node)
                if number is None:
                    return self._issue(loc, line, "T-type",
                                       f"expected an unsigned integer (u{kind.bits}), got "
                                       f"{_describe(node)}", node)
                if number > kind.max:
                    return self._issue(loc, line, "T-range", f"{_describe(node)} is out of "
                                       f"range: expected an integer from 0 to {kind.max} "
                                       f"(u{kind.bits})")
                return number
            if name == "either" and node.value in kind.values and node.tag in (PLAIN, QUOTED):
                return node.value
            if name == "int":  # (in `load.partition.range` only: read as any YAML value)
                kind_int, number_i = resolve_any(node)
                if kind_int != "int" or number_i is None or \
                        getattr(node, "written_tag", None) == "tag:yaml.org,2002:str":
                    return self._issue(loc, line, "T-type",
                                       f"expected an integer (i{kind.bits}), got "
                                       f"{_describe(node)}", node)
                if not kind.min <= number_i <= kind.max:
                    return self._issue(loc, line, "T-range", f"{_describe(node)} is out of "
                                       f"range: expected an integer from {kind.min} to "
                                       f"{kind.max} (i{kind.bits})")
                return number_i
            if name == "bool":
                flag = BOOLS.get(node.value) if node.tag == PLAIN else None
                if flag is None:
                    return self._issue(loc, line, "T-type", "expected a boolean (true or false), "
                                       f"got {_describe(node)}", node)
                return flag
            if name == "name":  # a string as "any YAML value" reads it (`load:` blocks)
                if resolve_any(node)[0] != "str":
                    return self._issue(loc, line, "T-type", "expected a string, got "
                                       f"{_describe(node)} (rivet reads this block as plain "
                                       "YAML values first: quote it)", node)
                if self.walk.unset_names and UNSET_PREFIX in node.value:
                    return self._restore(node.value)
                return node.value
            if name == "float":
                if huge_integer(node) is not None:
                    return self._issue(loc, line, "P0-huge-int", f"the integer `{node.value}` "
                                       "does not fit in 64 bits; rivet refuses it anywhere")
                number_f = read_float(node)
                if number_f is None:
                    return self._issue(loc, line, "T-type", "expected a number, got "
                                       f"{_describe(node)}", node)
                return number_f
            if name == "any":
                return self._any(node, loc, line, depth)
            if name == "row_hash":
                flag = BOOLS.get(node.value) if node.tag == PLAIN else None
                if flag is None:
                    return self._issue(loc, line, "T-row-hash", "row_hash must be true, false "
                                       f"or a list of column names, got {_describe(node)}", node)
                return flag
            if name == "either":
                return self._issue(loc, line, "T-type", f"expected {_either(kind)}, got "
                                   f"{_describe(node)}", node)
            if node.tag == PLAIN and node.value == "":  # empty value: empty struct/list/map
                if name == "struct":
                    data = self.struct(None, kind, loc, line, depth)
                    return data if data is _FAIL else self._build(kind, data)
                return () if name == "list" else {}
            what = {"struct": "a mapping", "map": "a mapping", "list": "a list"}[name]
            return self._issue(loc, line, "T-type", f"expected {what}, got {_describe(node)}",
                               node)
        if name == "struct" and isinstance(node, yaml.MappingNode):
            data = self.struct(node, kind, loc, line, depth)
            return data if data is _FAIL else self._build(kind, data)
        if name == "list" and isinstance(node, yaml.SequenceNode):
            return self._list(node, kind, loc, depth)
        if name == "map" and isinstance(node, yaml.MappingNode):
            return self._map(node, kind, loc, depth)
        if name == "any":
            return self._any(node, loc, line, depth)
        if name == "row_hash" and isinstance(node, yaml.SequenceNode):
            return self._row_hash(node, loc, depth)
        if name == "either":
            item = kind.item
            assert item is not None
            if item.name == "list" and isinstance(node, yaml.SequenceNode):
                return self._names(node, loc, depth, f"expected {_either(kind)}")
            if item.name == "struct" and isinstance(node, yaml.MappingNode):
                return self.value(node, item, loc, line, depth)
            return self._issue(loc, line, "T-type", f"expected {_either(kind)}, got "
                               f"{_describe(node)}")
        expected = {"str": "a string", "name": "a string", "bool": "a boolean",
                    "uint": "an integer", "int": "an integer",
                    "float": "a number", "enum": _one_of(kind.values), "struct": "a mapping",
                    "list": "a list", "map": "a mapping",
                    "row_hash": "true, false or a list of column names"}[name]
        if name == "str" and isinstance(node, yaml.MappingNode) and self._brace_cause(node):
            return self._issue(loc, line, "T-type", "expected a string, got a mapping — a value "
                               "containing { } (such as {partition} or {date}) must be quoted, "
                               "e.g. prefix: \"exports/{partition}/\"")
        return self._issue(loc, line, "T-type", f"expected {expected}, got {_describe(node)}")

    def _section(self, node: yaml.MappingNode, kind: Kind, loc: Loc, line: int,
                 depth: int) -> Any:
        """`value` of a struct written as a mapping without a tag: typed and built; `_FAIL` if
        any of its keys failed."""
        walk = self.walk  # counted as `_count` does
        walk.visits += 1
        if walk.visits > walk.budget:
            raise RepetitionLimitError
        if depth > MAX_DEPTH:
            raise TooDeepError
        data = self.struct(node, kind, loc, line, depth)
        return data if data is _FAIL else self._build(kind, data)

    def _brace_cause(self, node: yaml.MappingNode) -> bool:
        return bool(node.flow_style)

    def _restore(self, text: str) -> str:
        names = self.walk.unset_names
        self.walk.restored.update(names[int(m)] for m in UNSET_MARK.findall(text))
        return UNSET_MARK.sub(lambda m: "${" + names[int(m.group(1))] + "}", text)

    def _list(self, node: yaml.SequenceNode, kind: Kind, loc: Loc, depth: int) -> Any:
        item_kind = kind.item
        assert item_kind is not None
        out = []
        failed = False
        exports = self.walk.exports if loc == ("exports",) else None
        sections = item_kind.name == "struct"
        for i, item in enumerate(node.value):
            line = item.start_mark.line + 1  # (`_line`, inlined: once per export)
            if sections and item.tag is MAP:  # (a mapping: see `struct`)
                value = self._section(item, item_kind, (*loc, i), line, depth + 1)
            else:
                value = self.value(item, item_kind, (*loc, i), line, depth + 1)
            if exports is not None:
                exports.append((value if value is not _FAIL else None, line))
            if value is _FAIL:
                failed = True
            else:
                out.append(value)
        return _FAIL if failed else tuple(out)

    def _map(self, node: yaml.MappingNode, kind: Kind, loc: Loc, depth: int) -> Any:
        item_kind = kind.item
        assert item_kind is not None
        out: dict[str, Any] = {}
        failed = False
        for key_node, value_node, _ in self._pairs(node, loc):
            key_text = self.value(key_node, Kind("str"), (*loc, "<key>"), _line(key_node),
                                  depth + 1)
            if key_text is _FAIL:
                failed = True
                continue
            value = self.value(value_node, item_kind, (*loc, key_text), _line(key_node),
                               depth + 1)
            if value is _FAIL:
                failed = True
            else:
                out[key_text] = value
        return _FAIL if failed else out

    def _row_hash(self, node: yaml.SequenceNode, loc: Loc, depth: int) -> Any:
        out = []
        for i, item in enumerate(node.value):
            self._count(depth + 1)
            if not isinstance(item, yaml.ScalarNode) or resolve_any(item)[0] != "str":
                return self._issue((*loc, i), _line(item), "T-row-hash",
                                   "row_hash must be true, false or a list of column names; "
                                   f"this item is {_describe(item)}, not a name (quote it)")
            out.append(item.value)
        return tuple(out)

    def _names(self, node: yaml.SequenceNode, loc: Loc, depth: int, expected: str) -> Any:
        """A list of names where a word may stand instead (`pk: [id]`): rivet reads it as any
        YAML value first, so an item must be a string as written (`1`, `true`, `~` are not)."""
        out = []
        for i, item in enumerate(node.value):
            self._count(depth + 1)
            if not isinstance(item, yaml.ScalarNode) or resolve_any(item)[0] != "str":
                return self._issue((*loc, i), _line(item), "T-type", f"{expected}; this item "
                                   f"is {_describe(item)}, not a name (quote it)")
            out.append(item.value)
        return tuple(out)

    def _any(self, node: yaml.Node, loc: Loc, line: int, depth: int) -> Any:
        """rivet's opaque "any YAML value" (`load:`): plain data, duplicates still refused."""
        self._count(depth)
        if isinstance(node, yaml.ScalarNode):
            if huge_integer(node) is not None:
                return self._issue(loc, line, "P0-huge-int", f"the integer `{node.value}` does "
                                   "not fit in 64 bits; rivet refuses it anywhere, quote it")
            kind, value = resolve_any(node)
            if kind == "str" and self.walk.unset_names and UNSET_PREFIX in value:
                return self._restore(value)
            return value
        if isinstance(node, yaml.SequenceNode):
            items = [self._any(item, (*loc, i), _line(item), depth + 1)
                     for i, item in enumerate(node.value)]
            return _FAIL if any(i is _FAIL for i in items) else items
        out: dict[Any, Any] = {}
        failed = False
        assert isinstance(node, yaml.MappingNode)
        for key_node, value_node, key in self._pairs(node, loc):
            value = self._any(value_node, (*loc, render_key(*key)), _line(key_node), depth + 1)
            if value is _FAIL:
                failed = True
            else:
                out[key[1] if key[0] != "null" else None] = value
        return _FAIL if failed else out

    def _pairs(self, node: yaml.MappingNode,
               loc: Loc) -> list[tuple[yaml.Node, yaml.Node, tuple[str, Any]]]:
        """The key/value pairs of a mapping; a repeated key (compared by its resolved value,
        as rivet does: `1` and `0x1` are the same key, `1` and `"1"` are not) is reported."""
        seen: dict[tuple[str, Any], yaml.Node] = {}
        out: list[tuple[yaml.Node, yaml.Node, tuple[str, Any]]] = []
        for key_node, value_node in node.value:
            if key_node.__class__ is not yaml.ScalarNode:
                self._issue(loc, _line(key_node), "T-key", "a mapping or list cannot be a key")
                continue
            text = key_node.value
            first_char = text[:1]
            if key_node.tag is QUOTED or ((first_char.isalpha() or first_char == "_")
                                          and text not in NULLS and text not in BOOLS):
                key: tuple[str, Any] = ("str", text)  # what nearly every key is
            else:
                key = resolve_any(key_node)
                if key[0] == "float" and key[1] != key[1]:  # NaN: every NaN key is a new key
                    key = ("nan", id(key_node))
            first = seen.get(key)
            if first is not None:
                shown = render_key(*key) if key[0] != "nan" else ".nan"
                self._issue((*loc, shown), _line(key_node), "P0-duplicate-key",
                            f"duplicate key `{shown}` (first at line {_line(first)}); YAML "
                            "would keep only one value, rivet refuses the file")
                continue
            seen[key] = key_node
            out.append((key_node, value_node, key))
        return out

    def struct(self, node: yaml.MappingNode | None, kind: Kind, loc: Loc, line: int,
               depth: int, *, pairs: list[tuple[yaml.Node, Any]] | None = None) -> Any:
        """A struct's keys typed into a dict ready for its model; `_FAIL` if any key failed.

        Nearly always each key of the mapping is a known field, written once: its pairs are
        typed as they come, on the lookout for anything else (a separate pass over the keys to
        rule that out first, building a set of them, cost ~8M instructions at 1,000 exports).
        An unknown key, a mapping as a key or a repeated key (each key typed is put in `out`,
        `_UNSET` if it is left unset) is met before its value is typed; then what was typed of
        the mapping is undone and it is typed the general way (`_again`), as if the keys had
        been checked first. (Values are told apart by their tags, not their classes: `Any`.)

        Per key: (1) the field it names, (2) the common scalars typed right here (nearly every
        value; a call per key would cost more than the typing), (3) anything else typed by
        `_field_value`. Then `_finish`: the required keys, and the result."""
        model = kind.model
        assert model is not None
        struct_spec = _STRUCTS.get(model)
        fields, required = struct_spec if struct_spec is not None else _struct(model)
        checked = pairs is not None  # given by `_again`: distinct scalar keys
        if pairs is None:
            pairs = node.value if node is not None else []
        # walk.issues, walk.exports and walk.visits as they were before the first key typed by
        # a call (what `_again` undoes; keys typed before it only counted in `visits`)
        undo: tuple[int, int, int] | None = None
        out: dict[str, Any] = {}
        failed = False
        unset = False  # some key in `out` is `_UNSET`
        misplaced: list[tuple[str, int]] = []
        walk = self.walk
        watch_unset = bool(walk.unset_names)
        visits = 0  # scalars typed on the fast path, added to walk.visits before any other call
        for key_node, value_node in pairs:
            # (1) The field the key names.
            key = key_node.value
            try:
                spec = fields.get(key)
            except TypeError:  # a mapping or list as a key (never when `checked`)
                spec = None
            if spec is None or key in out:  # unknown, or written before (never when `checked`)
                if not checked:
                    return self._again(node, kind, loc, depth, undo)
                walk.visits += visits
                visits = 0
                self._not_a_field(model, key, key_node, loc, known=tuple(fields),
                                  misplaced=misplaced)
                failed = True
                continue
            # (2) The common scalars. Only a scalar has the tag PLAIN or QUOTED: `resolve`
            # gives them (a tag written in the text is another string), so the tag alone tells
            # (~1.5M instructions at 1,000 exports less than looking at the node's class first).
            tag = value_node.tag
            if tag is PLAIN:
                text = value_node.value
                if text in NULLS and spec.unset_by_null:
                    out[key] = _UNSET  # as if the key were not written
                    unset = True
                    continue
                kind_name = spec.name
                if kind_name == "str":
                    if (len(text) < HUGE_INTEGER_DIGITS or text[0] not in INTEGER_START) \
                            and not (watch_unset and UNSET_PREFIX in text):
                        visits += 1
                        out[key] = text
                        continue
                elif kind_name == "enum":
                    if text in spec.variants:
                        visits += 1
                        out[key] = text
                        continue
                elif kind_name == "bool":
                    flag = BOOLS.get(text)
                    if flag is not None:
                        visits += 1
                        out[key] = flag
                        continue
                elif kind_name == "uint" and text.isdigit() and text.isascii() and (
                        text[0] != "0" or text == "0") and len(text) < 19:
                    number = int(text)
                    if number <= spec.kind.max:
                        visits += 1
                        out[key] = number
                        continue
            elif tag is QUOTED:
                text = value_node.value
                kind_name = spec.name
                if kind_name == "str":
                    if not (watch_unset and UNSET_PREFIX in text):
                        visits += 1
                        out[key] = text
                        continue
                elif kind_name == "enum" and text in spec.variants:
                    visits += 1
                    out[key] = text
                    continue
            # (3) Anything else.
            if undo is None and not checked:
                undo = (len(walk.issues), len(walk.exports), walk.visits)
            walk.visits += visits
            visits = 0
            value = self._field_value(model, spec, key_node, value_node, (*loc, key),
                                      depth=depth)
            if value is _FAIL or value is _UNSET:
                out[key] = _UNSET
                unset = True
                failed = failed or value is _FAIL
                continue
            out[key] = value
            if loc == () and key == "source":
                walk.parts["source"] = value
        walk.visits += visits
        return self._finish(node, loc, line, out, required=required, misplaced=misplaced,
                            failed=failed, unset=unset)

    def _not_a_field(self, model: type[BaseModel], key: Any, key_node: yaml.Node, loc: Loc, *,
                     known: tuple[str, ...], misplaced: list[tuple[str, int]]) -> None:
        """A key the struct has no field for: a tuning knob written beside `tuning:` (a
        pre-scan reports it), or an unknown key."""
        key_line = _line(key_node)
        if model in (SourceConfig, ExportConfig) and key in TUNING_KEYS:
            misplaced.append((key, key_line))
        else:
            self._unknown(key, known, (*loc, key), key_line)

    def _field_value(self, model: type[BaseModel], spec: FieldSpec, key_node: yaml.Node,
                     value_node: Any, at: Loc, *, depth: int) -> Any:
        """A value the fast path does not type, typed by `value`: `_FAIL` after recording
        why, or `_UNSET` for a connection field whose placeholder is unset (it matters only
        when connecting: the source is kept without it; live preflight reports it)."""
        walk = self.walk
        key_line = key_node.start_mark.line + 1  # (`_line`, inlined)
        before = len(walk.issues)
        if value_node.tag is MAP and spec.name == "struct":  # a section (`destination:`), as
            # `value` types it (MAP, as PLAIN, is only given by `resolve`: to a mapping)
            value = self._section(value_node, spec.kind, at, key_line, depth + 1)
        else:
            value = self.value(value_node, spec.kind, at, key_line, depth + 1)
        if value is _FAIL and model is SourceConfig and spec.presence != "required" \
                and len(walk.issues) == before + 1 and walk.issues[-1].rule == "R3-value":
            return _UNSET
        return value

    def _finish(self, node: yaml.MappingNode | None, loc: Loc, line: int, out: dict[str, Any], *,
                required: tuple[str, ...], misplaced: list[tuple[str, int]], failed: bool,
                unset: bool) -> Any:
        """The typed struct once every key is typed: the misplaced knobs kept for the
        pre-scans, each required key that is missing reported; `_FAIL` if anything failed."""
        if misplaced:
            self.walk.misplaced[loc] = misplaced
        for key in required:
            if key not in out:
                self._issue((*loc, key), line if node is None else _line(node), "T-missing",
                            f"missing required key `{key}`" + _MISSING_HINTS.get(key, ""))
                failed = True
        if failed:
            return _FAIL
        if unset:
            return {key: value for key, value in out.items() if value is not _UNSET}
        return out

    def _again(self, node: yaml.MappingNode | None, kind: Kind, loc: Loc, depth: int,
               undo: tuple[int, int, int] | None) -> Any:
        """`struct` of a mapping the general way, after undoing what was typed of it: its
        repeated keys and mappings as keys reported and left out, then each key typed once."""
        assert node is not None
        walk = self.walk
        if undo is not None:
            issues, exports, walk.visits = undo
            del walk.issues[issues:]
            del walk.exports[exports:]
        pairs = [(k, v) for k, v, _ in self._pairs(node, loc)]
        typed = self.struct(node, kind, loc, 0, depth, pairs=pairs)
        return _FAIL if len(pairs) != len(node.value) else typed

    def _unknown(self, key: str, known: tuple[str, ...], loc: Loc,
                 line: int) -> None:
        suggestion = did_you_mean(key, known)
        hint = f" (did you mean `{suggestion}`?)" if suggestion else ""
        self._issue(loc, line, "T-unknown-key", f"unknown key `{key}`{hint}")

    def _build(self, kind: Kind, data: Any) -> Any:
        model = kind.model
        assert model is not None
        if model in _ONE_OF_MANY:
            return build_model(model, data)
        # The exports of a file mostly write the same sections (`destination: {type: local}`):
        # the models are frozen, so one instance serves every section typed alike (same keys,
        # same values, same order; each key has one type, so equal values are equal data).
        try:
            key = (model, *data.items())
            found = self.walk.built.get(key)
        except TypeError:  # a list or map value: not shared
            return build_model(model, data)
        if found is None:
            found = self.walk.built[key] = build_model(model, data)
        return found


# Sections that are never alike (each export has its own name; one config and source per file).
_ONE_OF_MANY: frozenset[type[BaseModel]] = frozenset({Config, ExportConfig, SourceConfig})

_MISSING_HINTS = {
    "source": " — every config needs a `source:` block (type + url/url_env)",
    "exports": " — every config needs an `exports:` list with at least one export",
    "name": " — each export needs a `name:` (used in output file names and state keys)",
}


def _either(kind: Kind) -> str:
    item = kind.item
    assert item is not None
    what = "a list of names" if item.name == "list" else "a mapping"
    return ", ".join(f"`{v}`" for v in kind.values) + f" or {what}"


def _one_of(values: tuple[str, ...]) -> str:
    quoted = [f"`{v}`" for v in values]
    if len(quoted) == 1:
        return quoted[0]
    if len(quoted) == 2:
        return f"{quoted[0]} or {quoted[1]}"
    return "one of " + ", ".join(quoted)


def build_model(model: type[BaseModel], data: dict[str, Any]) -> Any:
    """The frozen model from already-typed data: the typing has checked every field as the
    model would (`rivet_ci.core.common.fast_model`; a test compares it with `model_validate`)."""
    return construct(model, data)

