"""The plan document's JSON Schema: the shipped one (open to keys a later release adds) and the
closed one rivet-ci's own documents are held to, and checking a document against it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from rivet_ci.core.formats.plan_format import closed_schema

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "schemas" / "plan.schema.json"


def published_validator() -> jsonschema.Draft202012Validator:
    """The schema as shipped (`schemas/plan.schema.json`): what consumers validate with."""
    return jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def validator() -> jsonschema.Draft202012Validator:
    """The closed schema: every key a document of this version writes must be defined."""
    return jsonschema.Draft202012Validator(closed_schema())


def assert_matches_schema(document: Any, where: str = "plan.json") -> None:
    """Fail with the first few mismatches (JSON pointer and message) of `document`, against
    the closed schema and the shipped one."""
    errors = sorted(validator().iter_errors(document), key=lambda e: list(e.absolute_path))
    errors += list(published_validator().iter_errors(document))[:1]
    assert not errors, f"{where}: " + "; ".join(
        f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in errors[:5])
