"""rivet's config schema (`rivet schema config` of the real binary) read as key paths, each with
its kind, nullability, required-ness and default (no tests)."""

from __future__ import annotations

from typing import Any

from rivet_ci.core.common.limits import I64_MAX, I64_MIN, U64_MAX

# rivet's integer formats -> (min, max).
INT_FORMATS = {"uint16": (0, 2**16 - 1), "uint32": (0, 2**32 - 1), "uint64": (0, U64_MAX),
               "uint": (0, U64_MAX), "int64": (I64_MIN, I64_MAX)}
Desc = tuple[Any, ...]


class Rivet:
    """rivet's schema read as (path -> (kind, nullable, required, default))."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.defs: dict[str, Any] = schema["$defs"]
        self.paths: dict[str, tuple[Desc, bool, bool, Any]] = {}
        self.struct_of: dict[str, str] = {"": "<root>"}
        self.walk("", schema, set())

    def deref(self, node: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
        name = None
        while "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[1]
            node = {**self.defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
        return name, node

    def kind(self, node: dict[str, Any]) -> tuple[Desc, bool]:
        """(kind, nullable) of a schema node."""
        name, node = self.deref(node)
        options = node.get("anyOf") or node.get("oneOf")
        if options is not None:
            kinds = [self.kind(o) for o in options]
            nullable = any(k == ("null",) for k, _ in kinds)
            real = [k for k, _ in kinds if k != ("null",)]
            words = frozenset(v for k in real if k[0] == "enum" for v in k[1])
            others = [k for k in real if k[0] != "enum"]
            if not others:
                return ("enum", words), nullable
            if not words and len(others) == 1:
                return others[0], nullable
            if not words and sorted(k[0] for k in others) == ["bool", "list"]:
                return ("row_hash",), nullable
            assert len(others) == 1, node
            return ("either", words, others[0]), nullable
        types = node.get("type")
        listed = types if isinstance(types, list) else [types]
        nullable = "null" in listed
        real_types = [t for t in listed if t != "null"]
        if not real_types:
            return ("null",), True
        (typ,) = real_types
        if typ == "string":
            if "enum" in node:
                return ("enum", frozenset(node["enum"])), nullable
            if "const" in node:
                return ("enum", frozenset([node["const"]])), nullable
            return ("str",), nullable
        if typ == "boolean":
            return ("bool",), nullable
        if typ == "number":
            return ("float",), nullable
        if typ == "integer":
            low, high = INT_FORMATS[node["format"]]
            return ("int", low, high), nullable
        if typ == "array":
            item, _ = self.kind(node["items"])
            return ("list", item), nullable
        if typ == "object" and "properties" in node:
            return ("struct", name), nullable
        if typ == "object":
            item, _ = self.kind(node["additionalProperties"])
            return ("map", item), nullable
        raise AssertionError(f"unknown schema node {node}")  # pragma: no cover

    def walk(self, path: str, node: dict[str, Any], seen: set[str]) -> None:
        for key, prop in node["properties"].items():
            kind, nullable = self.kind(prop)
            _, resolved = self.deref(prop)
            self.paths[f"{path}{key}"] = (kind, nullable, key in node.get("required", ()),
                                          resolved.get("default", prop.get("default")))
            for struct in _structs_in(kind):
                if struct not in seen:
                    self.struct_of[f"{path}{key}"] = struct
                    self.walk(f"{path}{key}.", self.defs[struct], seen | {struct})


def _structs_in(kind: Desc) -> list[str]:
    if kind[0] == "struct":
        return [kind[1]]
    if kind[0] in ("list", "map"):
        return _structs_in(kind[1])
    if kind[0] == "either":
        return _structs_in(kind[2])
    return []
