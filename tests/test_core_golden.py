"""Golden files: the example's pretty output, JSON document and rivet artifact, byte for byte.

`tests/golden/plan/example.txt` and `example.json` are generated, never edited by hand. After an
intended change of the output, regenerate them and review the diff:

    RIVET_CI_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_core_golden.py

(The JSON document has no room for a "generated" header; `generated_at` comes from a fixed clock.)
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pytest

from rivet_ci.cli import run
from rivet_ci.commands.context import Context
from rivet_ci.exit_codes import OK

REPO = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).parent / "golden" / "plan"
UPDATE = os.environ.get("RIVET_CI_UPDATE_GOLDEN") == "1"
CLOCK = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def plan_example(*args: str) -> str:
    out, err = StringIO(), StringIO()
    ctx = Context(stdout=out, stderr=err, environ={}, cwd=REPO, now=lambda: CLOCK)
    code = run(["plan", "examples/pipelines", "--facts", "examples/facts.yaml", *args], ctx)
    assert code == OK, err.getvalue()
    return out.getvalue()


@pytest.mark.parametrize(("golden", "args"), [
    ("example.txt", ()),
    ("example.json", ("--format", "json")),
    ("example.rivet.json", ("--format", "rivet-json")),
])
def test_example_matches_its_golden_file(golden: str, args: tuple[str, ...]) -> None:
    actual = plan_example(*args)
    path = GOLDEN / golden
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run RIVET_CI_UPDATE_GOLDEN=1 pytest {__file__}"
    assert path.read_text(encoding="utf-8") == actual, (
        f"{path.name} differs from the output; if the change is intended, regenerate with "
        f"RIVET_CI_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_core_golden.py and review the diff")
