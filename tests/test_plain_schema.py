"""`rivet_ci.core.common.plain_schema`: a validator of plain values derived from a model's fields
refuses what the model would convert or refuse, and cannot be built for a shape it does not
know (so a change to a model never makes it looser than the model)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from support.models import same

from rivet_ci.core.common.plain_schema import plain_validator

STRICT = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class Inner(BaseModel):
    model_config = STRICT
    name: str
    flag: bool | None = None


class Outer(BaseModel):
    model_config = STRICT
    count: int | None = Field(default=None, ge=1, le=10)
    inner: dict[str, Inner] = Field(default_factory=dict)
    tags: list[str] | None = None


# Built before the models validate anything: pydantic-core reuses a model's own validator, once
# built, for any schema naming the model (see the module's docstring).
PLAIN_OUTER = plain_validator(Outer)


@pytest.mark.parametrize("data", [
    {}, {"count": 1}, {"count": 10}, {"count": None}, {"inner": {"a": {"name": "x"}}},
    {"inner": {"a": {"name": "", "flag": False}}, "tags": ["t"]}, {"tags": None},
])
def test_plain_values_give_what_the_model_gives(data: dict[str, Any]) -> None:
    text = json.dumps(data)
    same(PLAIN_OUTER.validate_json(text), Outer.model_validate_json(text))


@pytest.mark.parametrize("data", [
    {"count": 0}, {"count": 11},  # the model's bounds
    {"count": "3"}, {"count": 3.0}, {"count": True},  # the model converts these: left to it
    {"inner": {"a": {"name": 1}}}, {"inner": {"a": {"name": "x", "flag": "yes"}}},
    {"unknown": 1}, {"inner": {"a": {"name": "x", "other": 1}}},
])
def test_anything_not_plain_is_left_to_the_model(data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        PLAIN_OUTER.validate_json(json.dumps(data))


class Pattern(BaseModel):
    model_config = STRICT
    code: str = Field(pattern="^[a-z]+$")


class AfterValidated(BaseModel):
    model_config = STRICT
    value: str

    @field_validator("value")
    @classmethod
    def _upper(cls, value: str) -> str:
        return value.upper()


class ModelValidated(BaseModel):
    model_config = STRICT
    value: str

    @model_validator(mode="after")
    def _check(self) -> ModelValidated:
        return self


class ExtraAllowed(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)
    value: str


class FloatField(BaseModel):
    model_config = STRICT
    ratio: float


@pytest.mark.parametrize("model", [Pattern, AfterValidated, ModelValidated, ExtraAllowed,
                                   FloatField])
def test_an_unknown_shape_is_refused_when_built(model: type[BaseModel]) -> None:
    with pytest.raises(TypeError, match=model.__name__):
        plain_validator(model)
