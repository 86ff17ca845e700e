"""Frozen models built from values the code has already checked, without validating them again.

`model_validate` re-checks every field; where the values come from code that has produced them
with exactly the field types (the config typing, the planner), that costs a fifth of the whole
run and checks nothing. `construct(Model, values)` gives what `Model.model_validate(values)`
gives for such values — same field values, same `model_fields_set`, defaults filled in in
declaration order, each default factory called — at a fraction of the cost.

The caller guarantees the types: an `int` for an `int` field (not `3.0`), a `tuple` for a tuple
field (not a list), a model instance for a nested model. mypy checks that guarantee: a mypy
plugin (`.ci/mypy_fast_model.py`, configured in pyproject.toml) types the values of
`make_full`, `make` and `construct` as a TypedDict of the model's fields, so a dict display
that misses a field (every field, for `make_full`), names one the model lacks or gives a value
of the wrong type is a type error — a field added to a model without its value at every fast
build fails `mypy --strict` (`tests/test_fast_model_typing.py` proves it on the real call
sites). Only the config typing builds from values mypy cannot see (`construct(model, data)` over
any model, its values typed by the schema it checks them against). `tests/test_fast_model.py`
builds every such model of the corpus and of the planner benchmark both ways and compares them
field by field and type by type. Models with validators, post-init hooks or private attributes
are refused.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

_MISSING = object()
SHARED_NAME_SETS = 1024  # per model (see `Maker.names`)
_new = object.__new__
# BaseModel's instance slots, written through their own descriptors (what `object.__setattr__`
# finds by name, without the look-up); a frozen model's `__setattr__` would refuse them.
_SLOTS = vars(BaseModel)
_set_dict = _SLOTS["__dict__"].__set__
_set_fields_set = _SLOTS["__pydantic_fields_set__"].__set__
_set_extra = _SLOTS["__pydantic_extra__"].__set__
_set_private = _SLOTS["__pydantic_private__"].__set__


class Maker(Generic[M]):
    """Builds instances of one model (see the module docstring)."""

    __slots__ = ("aliases", "every_name", "factories", "fast", "model", "names", "shares_names",
                 "template")

    def __init__(self, model: type[M], template: dict[str, Any],
                 factories: tuple[tuple[str, Callable[[], Any]], ...],
                 aliases: dict[str, str], fast: bool) -> None:
        self.model = model
        self.template = template
        self.factories = factories
        self.aliases = aliases
        self.fast = fast
        # Instances of a frozen model given the same field names share one set of those names
        # (`model_fields_set`): pydantic changes an instance's set in place only when a field is
        # assigned, which a frozen model refuses first (`model_copy` copies the set). A set per
        # instance was ~45 % of the memory of plans held whole (10,000 exports: 82 -> 44 MB),
        # as `diff` and the action hold them. The field names given, in order -> their set; at
        # most SHARED_NAME_SETS of them (an export writes one of a few dozen combinations).
        self.shares_names = bool(model.model_config.get("frozen"))
        self.names: dict[tuple[str, ...], set[str]] = {}
        self.every_name = set(template)  # the fields set of `make_full`'s instances

    @classmethod
    def of(cls, model: type[M]) -> Maker[M]:
        decorators = model.__pydantic_decorators__
        fast = (model.__pydantic_post_init__ is None and not model.__private_attributes__
                and not any((decorators.validators, decorators.field_validators,
                             decorators.root_validators, decorators.model_validators)))
        template: dict[str, Any] = {}
        factories: list[tuple[str, Callable[[], Any]]] = []
        aliases: dict[str, str] = {}
        for name, info in model.model_fields.items():
            if info.alias is not None and info.alias != name:
                aliases[info.alias] = name
            template[name] = _MISSING
            if info.default_factory is not None:
                factory = info.default_factory
                if isinstance(factory, type) and issubclass(factory, BaseModel):
                    # An empty struct: frozen, so one instance serves every model that omits it.
                    sub = maker(factory)
                    fast = fast and sub.fast and bool(model.model_config.get("frozen"))
                    template[name] = sub.make({})
                else:
                    factories.append((name, factory))  # type: ignore[arg-type]
            elif not info.is_required():
                default = info.default
                try:
                    hash(default)
                except TypeError:  # pydantic copies unhashable defaults per instance
                    factories.append((name, functools.partial(copy.deepcopy, default)))
                else:
                    template[name] = default
        return cls(model, template, tuple(factories), aliases, fast)

    def make(self, data: dict[str, Any]) -> M:
        """The instance holding `data` (keys are field names or aliases; every required field
        given) and the defaults of the fields `data` leaves out."""
        if self.aliases:
            data = {self.aliases.get(key, key): value for key, value in data.items()}
        if self.factories:
            values = self.template.copy()
            for name, factory in self.factories:
                if name not in data:
                    values[name] = factory()
            values.update(data)
        else:  # one merge: the defaults, then the given values (declaration order kept)
            values = {**self.template, **data}
        instance = _new(self.model)  # object.__new__ itself: no look-up through the metaclass
        _set_dict(instance, values)
        given = tuple(data)
        names = self.names.get(given)
        if names is None:
            names = set(given)
            if self.shares_names and len(self.names) < SHARED_NAME_SETS:
                self.names[given] = names
        _set_fields_set(instance, names)
        _set_extra(instance, None)
        _set_private(instance, None)
        return instance

    def make_full(self, values: dict[str, Any]) -> M:
        """`make` for `values` that give every field, by name, in declaration order: `values`
        itself becomes the instance's `__dict__` (the caller hands it over), with no defaults to
        merge and no names to look up. The planner builds ~5 models per export: `make` of the
        22 fields of `Signals` costs ~16,000 instructions, this ~4,000. `test_fast_model.py`
        checks every such instance against `model_validate` (values, their order, fields set)."""
        instance = _new(self.model)
        _set_dict(instance, values)
        _set_fields_set(instance, self.every_name if self.shares_names else set(values))
        _set_extra(instance, None)
        _set_private(instance, None)
        return instance


_MAKERS: dict[type[BaseModel], Maker[Any]] = {}


def maker(model: type[M]) -> Maker[M]:
    """The maker of `model` (one per model; refused for a model with validators or hooks)."""
    found: Maker[M] | None = _MAKERS.get(model)
    if found is None:
        found = _MAKERS[model] = Maker.of(model)
        if not found.fast:
            raise TypeError(f"{model.__name__} has validators or hooks: build it with "
                            "model_validate")
    return found


def replace(instance: M, update: dict[str, Any]) -> M:
    """`instance.model_copy(update=update)` for a model without extra fields or private
    attributes (fields set: the instance's plus the updated ones)."""
    copied = _new(type(instance))
    _set_dict(copied, {**instance.__dict__, **update})
    _set_fields_set(copied, instance.__pydantic_fields_set__ | update.keys())
    _set_extra(copied, None)
    _set_private(copied, None)
    return copied


def construct(model: type[M], values: dict[str, Any]) -> M:
    """`model.model_validate(values)` for values already of the field types (not checked)."""
    found: Maker[M] | None = _MAKERS.get(model)
    if found is None:
        found = maker(model)
    return found.make(values)
