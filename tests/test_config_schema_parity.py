"""The config models against the real rivet's schema (`rivet schema config`, rivet-cli 0.32.2).

Every property path of rivet's schema has a key in our models (as the typing reads them,
`node_typing.specs`) and every key of ours a property; each key has the same type (string,
bool, integer and its bounds, number, enum and its values, struct, list, map, a word or a
list/struct), the same required-ness, nullability and default. A new rivet key or value fails
here until it is modelled.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_core import PydanticUndefined
from support.real_rivet import config_schema
from support.rivet_schema import Desc, Rivet

from rivet_ci.core.config.models import NULL_REFUSED, STRUCTS, Config
from rivet_ci.core.config.node_typing import Kind, specs


def _ours_kind(kind: Kind) -> Desc:
    name = kind.name
    if name in ("str", "bool", "float", "row_hash"):
        return (name,)
    if name == "name":  # a string read as any YAML value first (`load:` blocks)
        return ("str",)
    if name == "uint":
        return ("int", 0, kind.max)
    if name == "int":
        return ("int", kind.min, kind.max)
    if name == "enum":
        return ("enum", frozenset(kind.values))
    if name == "struct":
        return ("struct", kind.model)
    assert kind.item is not None, kind
    if name in ("list", "map"):
        return (name, _ours_kind(kind.item))
    assert name == "either", kind
    return ("either", frozenset(kind.values), _ours_kind(kind.item))


def _ours(model: type[BaseModel], path: str, seen: set[type[BaseModel]],
          out: dict[str, tuple[Desc, bool, bool, Any]]) -> None:
    for key, spec in specs(model).items():
        kind = _ours_kind(spec.kind)
        field = next(f for a, f in model.model_fields.items() if (f.alias or a) == key)
        default = field.get_default(call_default_factory=True)
        out[f"{path}{key}"] = (kind, spec.presence == "optional", spec.presence == "required",
                               None if default is PydanticUndefined else default)
        inner = spec.kind.item if spec.kind.name in ("list", "map", "either") else spec.kind
        while inner is not None and inner.name in ("list", "map"):
            inner = inner.item
        if inner is not None and inner.model is not None and inner.model not in seen:
            _ours(inner.model, f"{path}{key}.", seen | {inner.model}, out)


@pytest.fixture(scope="module")
def rivet() -> Rivet:
    return Rivet(config_schema())


@pytest.fixture(scope="module")
def ours() -> dict[str, tuple[Desc, bool, bool, Any]]:
    out: dict[str, tuple[Desc, bool, bool, Any]] = {}
    _ours(Config, "", {Config}, out)
    return out


def test_the_schema_is_rivet_0_32_2s(rivet: Rivet) -> None:
    assert config_schema()["title"] == "Rivet config (rivet-cli 0.32.2)"
    assert len(rivet.paths) > 150


def test_every_rivet_key_has_a_model_field_and_every_field_a_rivet_key(
        rivet: Rivet, ours: dict[str, tuple[Desc, bool, bool, Any]]) -> None:
    assert sorted(set(rivet.paths) - set(ours)) == [], "rivet keys we do not model"
    assert sorted(set(ours) - set(rivet.paths)) == [], "keys we model that rivet lacks"


def _normal(kind: Desc, structs: dict[str, type[BaseModel]]) -> Desc:
    """A rivet kind with struct names replaced by our models (matched by path)."""
    if kind[0] == "struct":
        return ("struct", structs.get(kind[1], kind[1]))
    if kind[0] in ("list", "map"):
        return (kind[0], _normal(kind[1], structs))
    if kind[0] == "either":
        return ("either", kind[1], _normal(kind[2], structs))
    return kind


def test_every_key_has_rivets_type_values_presence_and_default(
        rivet: Rivet, ours: dict[str, tuple[Desc, bool, bool, Any]]) -> None:
    # Which of our models stands for which of rivet's structs, by the paths they sit at.
    structs: dict[str, type[BaseModel]] = {}
    for path, struct in rivet.struct_of.items():
        if path and path in ours:
            (model,) = [k[1] for k in _flatten(ours[path][0]) if k[0] == "struct"]
            assert structs.setdefault(struct, model) is model, (struct, model)
    assert sorted(m.__name__ for m in structs.values()) == sorted(
        m.__name__ for m in STRUCTS if m is not Config)
    problems = []
    for path, (kind, nullable, required, default) in rivet.paths.items():
        our_kind, our_nullable, our_required, our_default = ours[path]
        if _normal(kind, structs) != our_kind:
            problems.append(f"{path}: rivet {kind}, ours {our_kind}")
        if required != our_required:
            problems.append(f"{path}: required in rivet {required}, ours {our_required}")
        model = _model_at(path, rivet, structs)
        key = path.rsplit(".", 1)[-1]
        # rivet's schema calls these nullable, but the binary refuses `key: ~` there (the
        # differential corpus pins it): the binary wins.
        if (model, key) not in NULL_REFUSED and nullable and not our_nullable \
                and not required:
            problems.append(f"{path}: null leaves it unset in rivet, not in ours")
        if default is not None and isinstance(default, (bool, int, float, str)) \
                and our_default != default:
            problems.append(f"{path}: default {default!r} in rivet, ours {our_default!r}")
    assert problems == []


def _flatten(kind: Desc) -> list[Desc]:
    out = [kind]
    for part in kind[1:]:
        if isinstance(part, tuple):
            out += _flatten(part)
    return out


def _model_at(path: str, rivet: Rivet, structs: dict[str, type[BaseModel]]) -> Any:
    parent = path.rsplit(".", 1)[0] if "." in path else ""
    if parent == "":
        return Config
    return structs.get(rivet.struct_of.get(parent, ""))


def test_a_new_rivet_key_would_fail_the_check(rivet: Rivet,
                                              ours: dict[str, Any]) -> None:
    """The comparison is not vacuous: a key rivet added (as 0.32 added `settle:`) is seen."""
    schema = config_schema()
    defs = dict(schema["$defs"])  # type: ignore[call-overload]
    export = dict(defs["ExportConfig"])
    export["properties"] = {**export["properties"], "brand_new": {"type": "string"}}
    defs["ExportConfig"] = export
    changed = Rivet({**schema, "$defs": defs})
    assert sorted(set(changed.paths) - set(ours)) == ["exports.brand_new"]
