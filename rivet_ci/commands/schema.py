"""`rivet-ci schema`: print the JSON Schema of the plan document (`rivet-ci-plan/1`).

The schema is generated from the document's one definition
(`rivet_ci.core.formats.plan_format`); the
copy shipped as `schemas/plan.schema.json` (and inside the wheel as
`rivet_ci/schemas/plan.schema.json`) is the same text, which a test checks.
"""

from __future__ import annotations

import argparse

from rivet_ci.commands.context import Context
from rivet_ci.core.formats.document import dump_json
from rivet_ci.core.formats.plan_format import plan_schema
from rivet_ci.exit_codes import OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub.add_parser("schema", help="print the JSON Schema of the plan document (rivet-ci-plan/1)",
                   description="Print the JSON Schema (draft 2020-12) of the plan document "
                               "that plan --format json, diff --format json and the action "
                               "write. The same text ships as schemas/plan.schema.json.")


def run(args: argparse.Namespace, ctx: Context) -> int:  # noqa: ARG001 (every command's)
    ctx.stdout.write(schema_text())
    return OK


def schema_text() -> str:
    return dump_json(plan_schema())
