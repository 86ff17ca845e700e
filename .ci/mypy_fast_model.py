"""A mypy plugin: type-check the values of a fast model build against the model's fields.

`rivet_ci.core.common.fast_model` builds frozen pydantic models from a dict of values without
validating them (`maker(Model).make_full({...})`, `.make({...})`, `construct(Model, {...})`):
the planner's speed depends on it. To mypy the dict is a `dict[str, Any]`, so a field added to
`Model` and missing from a build, a misspelt key or a value of the wrong type would pass the type
check and fail at run time. This plugin gives the values parameter of those calls the type of a
`TypedDict` made from the model's fields (their names and types, as pydantic's own mypy plugin
collected them): every key required for `make_full` (it takes every field), the fields without a
default for `make` and `construct`, no other key. mypy then checks each dict display as it checks
any TypedDict. Development tooling: configured in pyproject.toml, not shipped in the package.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from mypy.nodes import Var
from mypy.plugin import FunctionSigContext, MethodSigContext, Plugin
from mypy.types import (
    AnyType,
    CallableType,
    FunctionLike,
    Instance,
    ProperType,
    Type,
    TypedDictType,
    TypeOfAny,
    TypeType,
    get_proper_type,
)

MODULE = "rivet_ci.core.common.fast_model"
PYDANTIC_METADATA = "pydantic-mypy-metadata"  # where pydantic.mypy keeps a model's fields


def _fields_type(model: ProperType, every_field: bool,
                 api: MethodSigContext | FunctionSigContext) -> TypedDictType | None:
    """The TypedDict of `model`'s fields, or None when it is not a pydantic model mypy knows."""
    if not isinstance(model, Instance):
        return None
    info = model.type
    metadata = info.metadata.get(PYDANTIC_METADATA)
    if not metadata:
        return None
    items: dict[str, Type] = {}
    required: set[str] = set()
    for name, field in metadata["fields"].items():
        symbol = info.get(name)
        node = symbol.node if symbol is not None else None
        items[name] = (node.type if isinstance(node, Var) and node.type is not None
                       else AnyType(TypeOfAny.special_form))
        if every_field or not field.get("has_default"):
            required.add(name)
    fallback = api.api.named_generic_type("typing._TypedDict", [])
    return TypedDictType(items, required, set(), fallback)


def _method(ctx: MethodSigContext, every_field: bool) -> FunctionLike:
    """`Maker[Model].make_full(values)` / `.make(values)`: `values` typed as the fields."""
    maker = get_proper_type(ctx.type)
    signature = ctx.default_signature
    if not isinstance(maker, Instance) or not maker.args:
        return signature
    fields = _fields_type(get_proper_type(maker.args[0]), every_field, ctx)
    if fields is None or len(signature.arg_types) != 1:
        return signature
    return signature.copy_modified(arg_types=[fields])


def _construct(ctx: FunctionSigContext) -> FunctionLike:
    """`construct(Model, values)`: `values` typed as `Model`'s fields."""
    signature = ctx.default_signature
    if len(ctx.args) != 2 or len(ctx.args[0]) != 1 or len(signature.arg_types) != 2:
        return signature
    model_type = get_proper_type(ctx.api.get_expression_type(ctx.args[0][0]))
    if isinstance(model_type, CallableType) and model_type.is_type_obj():
        model = get_proper_type(model_type.ret_type)
    elif isinstance(model_type, TypeType):
        model = model_type.item
    else:
        return signature
    fields = _fields_type(model, False, ctx)
    if fields is None:
        return signature
    return signature.copy_modified(arg_types=[signature.arg_types[0], fields])


class FastModelPlugin(Plugin):
    def get_method_signature_hook(
            self, fullname: str) -> Callable[[MethodSigContext], FunctionLike] | None:
        if fullname == f"{MODULE}.Maker.make_full":
            return partial(_method, every_field=True)
        if fullname == f"{MODULE}.Maker.make":
            return partial(_method, every_field=False)
        return None

    def get_function_signature_hook(
            self, fullname: str) -> Callable[[FunctionSigContext], FunctionLike] | None:
        return _construct if fullname == f"{MODULE}.construct" else None


def plugin(version: str) -> type[Plugin]:  # noqa: ARG001  (mypy calls it with its version)
    return FastModelPlugin
