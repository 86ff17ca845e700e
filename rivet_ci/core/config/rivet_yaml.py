"""rivet's YAML layer (spec rivet-config.md §1): composing, scalar typing, limits.

rivet reads YAML with serde_yaml_ng, which types each scalar by the type the config *asks for*,
YAML-1.2 style: `yes`/`on` are strings, `007` and `1_000` are not integers, `<<` is an ordinary
key, dates are strings. PyYAML's loaders follow YAML 1.1, so configs are only *composed* here
(node graph, no implicit resolution at all, which is also faster) and every scalar is typed by
`rivet_ci.core.config.node_typing` with the readers below.

Limits, as rivet's: one document per file; nesting deeper than 128 levels is refused; alias
expansion is bounded (a "billion laughs" file is refused with "repetition limit exceeded"
instead of being expanded).
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml
from yaml._yaml import CParser as _Parser  # the C extension ships with PyYAML wheels

from rivet_ci.core.common.limits import I64_MIN, I128_MIN, U64_MAX, U128_MAX
from rivet_ci.core.common.yaml_lines import YamlSyntaxError

MAX_DEPTH = 128
# The tags `_Loader.resolve` gives nodes without an explicit tag. Each holds a NUL, which no tag
# written in a file can (libyaml ends a tag's text at a NUL: `!%00x` reads as `!`), so a config
# cannot pass a tagged value off as an untagged one by spelling the same tag.
PLAIN = "\0rivet-ci/plain"  # a plain (unquoted) scalar without an explicit tag
QUOTED = "\0rivet-ci/quoted"  # a quoted or block scalar without an explicit tag
MAP = "\0rivet-ci/map"
SEQ = "\0rivet-ci/seq"
_IMPLICIT = frozenset({PLAIN, QUOTED, MAP, SEQ})

NULLS = frozenset({"", "~", "null", "Null", "NULL"})
BOOLS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_UINT = re.compile(r"\+?(0|[1-9][0-9]*|0x[0-9a-fA-F]+|0o[0-7]+|0b[01]+)\Z")
_SINT = re.compile(r"-(0|[1-9][0-9]*|0x[0-9a-fA-F]+|0o[0-7]+|0b[01]+)\Z")
# The characters an integer's text (`_UINT`, `_SINT`) can start with: other text is no integer.
INTEGER_START = frozenset("+-0123456789")
# The shortest plain integer that may not fit in 64 bits (`huge_integer`).
HUGE_INTEGER_DIGITS = 19
_LEADING_ZERO_DIGITS = re.compile(r"[+-]?0[0-9]+\Z")
_FLOAT = re.compile(r"\+?[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\Z")
_SPECIAL_FLOATS = {".inf": math.inf, ".Inf": math.inf, ".INF": math.inf,
                   "-.inf": -math.inf, "-.Inf": -math.inf, "-.INF": -math.inf,
                   ".nan": math.nan, ".NaN": math.nan, ".NAN": math.nan,
                   "+.inf": math.inf, "+.Inf": math.inf, "+.INF": math.inf}
_TOO_BIG = 2**200
_NO_PATH_RESOLVERS: dict[object, object] = {}  # (see `_Loader.descend_resolver`)


class _Loader(_Parser):
    """Composes nodes without resolving implicit tags: plain vs quoted is all we keep."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:  # noqa: ARG002 (PyYAML's)
        if kind is yaml.ScalarNode:
            return PLAIN if implicit[0] else QUOTED
        return MAP if kind is yaml.MappingNode else SEQ

    # No path resolvers: the composer calls these around every node, so they are C builtins
    # that accept the arguments and do nothing (a Python method here costs ~10 % of composing).
    # `descend_resolver` is called as (parent, index), the parent a node or None (hashable):
    # an empty dict's `get` looks it up and returns `index`, allocating nothing (`slice`, which
    # built and freed an object per node, cost ~7M more instructions at 1,000 exports).
    descend_resolver = _NO_PATH_RESOLVERS.get
    ascend_resolver = tuple  # called without arguments (the empty tuple, never allocated)


def compose(text: str) -> yaml.Node | None:
    """The single document's root node (None for an empty or comments-only file)."""
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
    except yaml.composer.ComposerError as exc:
        if "duplicate anchor" in (exc.context or ""):
            # rivet (serde_yaml_ng) lets an anchor be defined again: later aliases refer to
            # the newer definition. PyYAML refuses it; rename each redefinition.
            renamed = _rename_redefined_anchors(text)
            if renamed != text:
                return compose(renamed)
        if exc.problem and "another document" in exc.problem:
            mark = exc.problem_mark
            raise YamlSyntaxError(
                "a config must be one YAML document (a second `---` document was found)",
                mark.line + 1 if mark else None) from None
        raise _syntax_error(exc) from None
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(exc, text) from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(f"invalid YAML: {exc}", None) from None
    except RecursionError:
        raise YamlSyntaxError(
            f"invalid YAML: nested deeper than {MAX_DEPTH} levels (recursion limit exceeded)",
            None) from None
    finally:
        loader.dispose()
    if root is not None and "!" in text:
        untag(root)
    return root


def untag(root: yaml.Node) -> None:
    """Drop every tag written in the document, as rivet does (serde_yaml_ng ignores `!!str`,
    `!env`, ...): each node becomes what it is untagged — a plain scalar stays plain (`!!str 5`
    is the integer 5 where one is wanted), a quoted one quoted. Each node once (aliases share)."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            if node.tag not in _IMPLICIT:
                # Kept for the one place a tag still counts: a value rivet reads as "any YAML
                # value" first (`load.partition`), where `!!str 5` is the string "5".
                node.written_tag = node.tag  # type: ignore[attr-defined]
                node.tag = PLAIN if not node.style else QUOTED
            continue
        if isinstance(node, yaml.MappingNode):
            if node.tag not in _IMPLICIT:
                node.tag = MAP
            for key, value in node.value:
                stack += (key, value)
        else:
            if node.tag not in _IMPLICIT:
                node.tag = SEQ
            stack += node.value


def _rename_redefined_anchors(text: str) -> str:
    """The text with each anchor defined again renamed (the second `&a` becomes
    `&a--rivet-ci-2`), and the aliases after it following the newest definition. Anchors and
    aliases are found by the parser's events (never inside quoted text or comments)."""
    spans: list[tuple[int, int, str]] = []  # (start, end, replacement)
    current: dict[str, str] = {}
    count: dict[str, int] = {}
    try:
        for event in yaml.parse(text, Loader=_Parser):  # type: ignore[arg-type]
            anchor = getattr(event, "anchor", None)
            if anchor is None or event.start_mark is None:
                continue
            start = event.start_mark.index
            sigil = "*" if isinstance(event, yaml.AliasEvent) else "&"
            found = text.find(sigil + anchor, start)
            if found < 0:
                return text
            if sigil == "&":
                count[anchor] = count.get(anchor, 0) + 1
                current[anchor] = (anchor if count[anchor] == 1
                                   else f"{anchor}--rivet-ci-{count[anchor]}")
            name = current.get(anchor, anchor)
            if name != anchor:
                spans.append((found, found + 1 + len(anchor), sigil + name))
    except yaml.YAMLError:
        return text
    out: list[str] = []
    pos = 0
    for start, end, replacement in spans:
        out.append(text[pos:start])
        out.append(replacement)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _syntax_error(exc: yaml.MarkedYAMLError, text: str | None = None) -> YamlSyntaxError:
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark is not None else None
    parts = [p for p in (exc.context, exc.problem) if p]
    message = "invalid YAML: " + ("; ".join(parts) if parts else str(exc))
    if text is not None and line is not None and "tab" in message.lower():
        lines = text.splitlines()
        if 0 < line <= len(lines):
            leading = lines[line - 1][: len(lines[line - 1]) - len(lines[line - 1].lstrip())]
            if "\t" in leading:
                message += (f" — line {line} is indented with a TAB; YAML requires spaces, "
                            f"replace the tab(s) with spaces")
    if text is not None and line is not None and _brace_symptom(message) and _unquoted_brace(text):
        message += (" — a value containing { } (such as {partition} or {date}) must be quoted, "
                    "e.g. prefix: \"exports/{partition}/\"")
    return YamlSyntaxError(message, line)


_BRACE_SYMPTOMS = ("did not find expected ',' or '}'", "while parsing a flow mapping",
                   "expected a string", "did not find expected key",
                   "expected ',' or '}'")


def _brace_symptom(message: str) -> bool:
    return any(s in message for s in _BRACE_SYMPTOMS)


def _unquoted_brace(text: str) -> bool:
    """rivet's hint test (spec B.7): some `key: value` line has a `{` outside quotes."""
    return any(has_unquoted_brace(raw) for raw in text.splitlines())


def has_unquoted_brace(raw: str) -> bool:
    line = raw.lstrip()
    if line.startswith("#"):
        return False
    match = re.search(r":(\s|$)", line)
    if match is None:
        return False
    value = line[match.end():].lstrip()
    if not value or value.startswith("#"):
        return False
    single = double = False
    previous = ""
    for char in value:
        if char == "'" and not double:
            single = not single
        elif char == '"' and not single:
            double = not double
        elif char == "{" and not single and not double and previous != "$":
            return True
        previous = char
    return False


def read_uint(node: yaml.ScalarNode) -> int | None:
    """rivet's unsigned integer text (decimal without leading zeros, 0x/0o/0b), else None."""
    if node.tag != PLAIN or not _UINT.match(node.value):
        return None
    return _int_value(node.value.removeprefix("+"))


def _int_value(digits: str) -> int:
    if digits[:2] in ("0x", "0o", "0b"):
        return int(digits[2:], {"0x": 16, "0o": 8, "0b": 2}[digits[:2]])
    if len(digits) > 60:  # beyond any range rivet knows; never convert thousands of digits
        return _TOO_BIG
    return int(digits)


def read_float(node: yaml.ScalarNode) -> float | None:
    if node.tag != PLAIN:
        return None
    special = _SPECIAL_FLOATS.get(node.value)
    if special is not None:
        return special
    if not _FLOAT.match(node.value):
        return None
    value = float(node.value.removeprefix("+"))
    return value if math.isfinite(value) else None


def resolve_any(node: yaml.ScalarNode) -> tuple[str, Any]:
    """A scalar read as rivet's untagged YAML value: (kind, value), kind null/bool/int/float/str.

    Used to compare mapping keys (duplicates) and for values typed as "any YAML value"."""
    if node.tag != PLAIN:
        return ("str", node.value)
    text = node.value
    if text in NULLS:
        return ("null", None)
    boolean = BOOLS.get(text)
    if boolean is not None:
        return ("bool", boolean)
    if _UINT.match(text):
        return ("int", _int_value(text.removeprefix("+")))
    if _SINT.match(text):
        return ("int", -_int_value(text[1:]))
    if _LEADING_ZERO_DIGITS.match(text):  # `007`: a string, as YAML 1.2 says (serde_yaml_ng)
        return ("str", text)
    number = read_float(node)
    if number is not None:
        return ("float", number)
    return ("str", text)


def huge_integer(node: yaml.ScalarNode) -> int | None:
    """A plain integer beyond 64 bits but within 128: rivet's generic pre-parse refuses it
    anywhere in the file, even where the key wants a string (spec §1.1)."""
    text = node.value
    if node.tag != PLAIN or len(text) < HUGE_INTEGER_DIGITS or text[0] not in INTEGER_START:
        return None
    kind, value = resolve_any(node)
    if kind != "int" or not isinstance(value, int):
        return None
    if (value > U64_MAX or value < I64_MIN) and I128_MIN <= value <= U128_MAX:
        return value
    return None


def render_key(kind: str, value: Any) -> str:
    if kind == "null":
        return "null"
    if kind == "bool":
        return "true" if value else "false"
    return str(value)
