"""YAML text → Python data plus a line index, without losing where each key was written.

PyYAML's C parser composes the node tree (fast); we construct the data from it and record the
1-based line of every mapping key and sequence item, so validation errors can name `file:line`.
Duplicate mapping keys, which PyYAML would silently collapse, are reported too.
"""

from __future__ import annotations

import gc
from typing import Any

import yaml

try:
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - the C extension ships with PyYAML wheels
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

Loc = tuple[str | int, ...]


class YamlSyntaxError(Exception):
    """The text is not valid YAML; carries the line (1-based) and the parser's words."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


class ParsedYaml:
    """Parsed data, the line of every key/item path, and duplicate keys found."""

    __slots__ = ("data", "duplicates", "lines")

    def __init__(self, data: Any, lines: dict[Loc, int], duplicates: list[tuple[Loc, int]]):
        self.data = data
        self.lines = lines
        self.duplicates = duplicates

    def line_of(self, loc: Loc) -> int | None:
        """Line of the deepest known prefix of `loc` (a bad value sits on its key's line)."""
        for end in range(len(loc), -1, -1):
            line = self.lines.get(loc[:end])
            if line is not None:
                return line
        return None


def parse_yaml(text: str, *, index_depth: int = 4) -> ParsedYaml:
    """Parse one YAML document; record lines for paths up to `index_depth` levels deep."""
    loader = _Loader(text)
    # Everything built here stays alive, so the cyclic garbage collector has nothing to free — but
    # it would rescan the growing heap again and again, which makes parsing a large facts file
    # quadratic. Pause it for the parse.
    collecting = gc.isenabled()
    gc.disable()
    try:
        lines: dict[Loc, int] = {}
        duplicates: list[tuple[Loc, int]] = []
        try:
            node = loader.get_single_node()
            data = None
            if node is not None:
                lines[()] = node.start_mark.line + 1
                data = _Builder(loader, lines, duplicates).build(node, (), index_depth)
        except RecursionError:
            raise YamlSyntaxError("invalid YAML: the document is nested too deeply", None) from None
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark is not None else None
            raise YamlSyntaxError(_describe(exc), line) from None
        except yaml.YAMLError as exc:
            raise YamlSyntaxError(str(exc), None) from None
        except ValueError as exc:  # a constructor's refusal, e.g. an integer of 5,000 digits
            raise YamlSyntaxError(f"invalid YAML value: {exc}", None) from None
    finally:
        loader.dispose()
        if collecting:
            gc.enable()
    return ParsedYaml(data, lines, duplicates)


def _describe(exc: yaml.MarkedYAMLError) -> str:
    parts = [p for p in (exc.context, exc.problem) if p]
    return "invalid YAML: " + ("; ".join(parts) if parts else str(exc))


_STR = "tag:yaml.org,2002:str"
_SEQ = "tag:yaml.org,2002:seq"
_MAP = "tag:yaml.org,2002:map"
_MERGE = "tag:yaml.org,2002:merge"


class _Builder:
    """Builds Python data from composed nodes and records key lines in the same walk.

    Plain strings, sequences and mappings — nearly all of a config — are built here directly,
    which is about twice as fast as PyYAML's generic constructor; every other node (ints, bools,
    timestamps, merge keys, explicit tags) goes to the loader's safe constructor, so the data is
    exactly what `yaml.safe_load` returns. Collections are memoized by node, so aliases share
    one object (no exponential blow-up from nested aliases) as in PyYAML.
    """

    def __init__(self, loader: Any, lines: dict[Loc, int], dups: list[tuple[Loc, int]]):
        self._loader = loader
        self._lines = lines
        self._dups = dups
        self._memo: dict[int, Any] = {}

    def build(self, node: yaml.Node, loc: Loc, depth: int) -> Any:
        if isinstance(node, yaml.ScalarNode):
            return node.value if node.tag == _STR else self._loader.construct_object(node, True)
        built = self._memo.get(id(node))
        if built is not None:
            return built
        if isinstance(node, yaml.SequenceNode) and node.tag == _SEQ:
            items: list[Any] = []
            self._memo[id(node)] = items
            for i, item in enumerate(node.value):
                child = (*loc, i)
                if depth > 0:
                    self._lines[child] = item.start_mark.line + 1
                items.append(self.build(item, child, depth - 1))
            return items
        if (isinstance(node, yaml.MappingNode) and node.tag == _MAP
                and not any(k.tag == _MERGE for k, _ in node.value)):
            mapping: dict[Any, Any] = {}
            self._memo[id(node)] = mapping
            for key_node, value_node in node.value:
                key = self.build(key_node, loc, 0)
                try:
                    hash(key)
                except TypeError:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        "found unhashable key", key_node.start_mark) from None
                child = (*loc, key) if isinstance(key, str) else loc
                if depth > 0 and isinstance(key, str):
                    line = key_node.start_mark.line + 1
                    if key in mapping:
                        self._dups.append((child, line))
                    else:
                        self._lines[child] = line
                mapping[key] = self.build(value_node, child, depth - 1)
            return mapping
        return self._loader.construct_object(node, True)
