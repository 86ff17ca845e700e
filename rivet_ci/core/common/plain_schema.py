"""A strict validator derived from a model's own field definitions, for plain JSON values.

Validating with a pydantic model first builds the model's validator: pydantic generates a core
schema from the classes and, for the first validator of the process, loads its plugin machinery
(`importlib.metadata`, `email`, ...). For the facts file that is ~100M instructions (~20 ms) on
every `plan` run, more than validating the facts of 1,000 exports.

`plain_validator(model)` reads the same definitions (`model_fields`: each field's type, default
and `ge`/`le` bounds) and builds a pydantic-core validator directly, which accepts only *plain*
values: each of its field's exact JSON type (no coercion: not `"1"` or `1.0` for an integer, not
`1` for a string), within the field's bounds; unknown keys refused. Such values pass through the
models unchanged, so what it accepts it builds exactly as the model would (values, types and
fields set: tests/test_core_fuzz.py). Whatever it refuses, the caller gives to the model, which
decides and words the error. A datetime is converted by the same lax schema the model uses.

Only the shapes the facts models use are known. Anything else (another type, a constraint other
than `ge`/`le`, an after-validator, a model validator, extra keys allowed) is a `TypeError` when
the validator is built, so a change to a model cannot make this validator accept what the model
refuses. A *before*-validator is allowed on the understanding, stated where it is defined
(`ColumnFacts`), that it returns a value of its field's own type unchanged.

Once a model's own validator has been built (its first validation, somewhere in the process),
pydantic-core reuses it wherever a schema names that model ("prebuilt" validators): a plain
validator built after that validates as the model does. Never looser, only no faster, which is
why callers build it once, before the models are used (`functools.cache` on first need).
"""

from __future__ import annotations

import types
from datetime import datetime
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic_core import CoreSchema, SchemaValidator
from pydantic_core import core_schema as cs


def plain_validator(model: type[BaseModel]) -> SchemaValidator:
    """A validator of plain values for `model` (see the module's docstring)."""
    return SchemaValidator(_model_schema(model, {}))


def _model_schema(model: type[BaseModel], built: dict[type[BaseModel], CoreSchema]) -> CoreSchema:
    if model in built:
        return built[model]
    decorators = model.__pydantic_decorators__
    if decorators.model_validators or any(
            v.info.mode != "before" for v in decorators.field_validators.values()):
        raise TypeError(f"{model.__name__}: only before-validators have a plain schema")
    if model.model_config.get("extra") != "forbid":
        raise TypeError(f"{model.__name__}: a plain schema refuses unknown keys")
    fields: dict[str, cs.ModelField] = {}
    for name, info in model.model_fields.items():
        schema = _schema(info.annotation, info.metadata, built, f"{model.__name__}.{name}")
        if info.default_factory is not None:
            schema = cs.with_default_schema(schema, default_factory=info.default_factory)
        elif not info.is_required():
            schema = cs.with_default_schema(schema, default=info.default)
        fields[name] = cs.model_field(schema)
    built[model] = cs.model_schema(
        model, cs.model_fields_schema(fields, extra_behavior="forbid"),
        frozen=bool(model.model_config.get("frozen")))
    return built[model]


def _schema(annotation: Any, metadata: list[Any], built: dict[type[BaseModel], CoreSchema],
            where: str) -> CoreSchema:
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        if len(members) == 1:  # `X | None`
            return cs.nullable_schema(_schema(members[0], metadata, built, where))
    elif origin is Literal:
        return cs.literal_schema(list(get_args(annotation)))
    elif origin is list:
        (item,) = get_args(annotation)
        return cs.list_schema(_schema(item, [], built, where), strict=True)
    elif origin is dict:
        key, value = get_args(annotation)
        return cs.dict_schema(_schema(key, [], built, where), _schema(value, [], built, where),
                              strict=True)
    elif annotation is int:
        ge, le = _bounds(metadata, where)
        return cs.int_schema(strict=True, ge=ge, le=le)
    elif metadata:
        pass  # a constraint on anything but an integer: not known here
    elif annotation is str:
        return cs.str_schema(strict=True)
    elif annotation is bool:
        return cs.bool_schema(strict=True)
    elif annotation is datetime:
        return cs.datetime_schema()  # the model's own (lax) conversion of the text
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _model_schema(annotation, built)
    raise TypeError(f"{where}: no plain schema for {annotation!r} {metadata or ''}".rstrip())


def _bounds(metadata: list[Any], where: str) -> tuple[int | None, int | None]:
    """An integer field's `ge` and `le` (None: unbounded)."""
    ge = le = None
    for constraint in metadata:
        if isinstance(constraint, annotated_types.Ge):
            ge = int(constraint.ge)  # type: ignore[call-overload]
        elif isinstance(constraint, annotated_types.Le):
            le = int(constraint.le)  # type: ignore[call-overload]
        else:
            raise TypeError(f"{where}: no plain schema for the constraint {constraint!r}")
    return ge, le
