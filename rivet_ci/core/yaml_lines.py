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
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark is not None else None
            raise YamlSyntaxError(_describe(exc), line) from None
        except yaml.YAMLError as exc:
            raise YamlSyntaxError(str(exc), None) from None
        except ValueError as exc:  # a constructor's refusal, e.g. an integer of 5,000 digits
            raise YamlSyntaxError(f"invalid YAML value: {exc}", None) from None
        lines: dict[Loc, int] = {}
        duplicates: list[tuple[Loc, int]] = []
        if node is not None:
            lines[()] = node.start_mark.line + 1
            _index(node, (), lines, duplicates, index_depth)
    finally:
        loader.dispose()
        if collecting:
            gc.enable()
    return ParsedYaml(data, lines, duplicates)


def _describe(exc: yaml.MarkedYAMLError) -> str:
    parts = [p for p in (exc.context, exc.problem) if p]
    return "invalid YAML: " + ("; ".join(parts) if parts else str(exc))


def _index(
    node: yaml.Node, loc: Loc, lines: dict[Loc, int], dups: list[tuple[Loc, int]], depth: int
) -> None:
    if depth == 0:
        return
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str):
                continue
            child = (*loc, key)
            line = key_node.start_mark.line + 1
            if key in seen:
                dups.append((child, line))
            else:
                seen.add(key)
                lines[child] = line
            _index(value_node, child, lines, dups, depth - 1)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            child = (*loc, i)
            lines[child] = item.start_mark.line + 1
            _index(item, child, lines, dups, depth - 1)
