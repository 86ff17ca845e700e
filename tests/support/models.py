"""Comparing pydantic models built two ways: field by field, type by type."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def same(built: Any, expected: Any) -> None:
    """`built` equals `expected` down to the Python type of every value (`3` vs `3.0`, a tuple
    vs a list, the datetime's `tzinfo`) and each model's `model_fields_set`."""
    assert type(built) is type(expected)
    if isinstance(expected, BaseModel):
        assert built.model_fields_set == expected.model_fields_set
        assert list(built.__dict__) == list(expected.__dict__)
        for name, value in expected.__dict__.items():
            same(built.__dict__[name], value)
    elif isinstance(expected, (tuple, list)):
        assert len(built) == len(expected)
        for a, b in zip(built, expected, strict=True):
            same(a, b)
    elif isinstance(expected, dict):
        assert list(built) == list(expected)
        for key, value in expected.items():
            same(built[key], value)
    else:
        assert built == expected
        if hasattr(expected, "tzinfo"):
            assert type(built.tzinfo) is type(expected.tzinfo)
