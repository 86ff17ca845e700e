"""How rivet-ci's pydantic models are built and read (docs/development.md).

Building a pydantic model's validator and serializer at class creation cost ~10 % of importing
the `plan` command, for ~60 models a plan run never validates. Every model therefore defers it,
and a `plan` run builds only what validates untrusted input: the facts file's models, and those
only for a file the plain facts validator (`rivet_ci.core.facts.loader`) leaves to them — a
JSON file as `rivet-ci facts` writes it builds none, nor loads pydantic's plugin machinery.

The process entry point also drops `BaseModel.__getattr__` (`rivet_ci.cli.runtime`), which
only serves private attributes and extra fields: no model may have either.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

import rivet_ci

REPO = Path(__file__).resolve().parent.parent

# The models a `plan --facts` run may validate: the facts file's (untrusted input).
FACTS_MODELS = {"FactsFile", "ConfigFacts", "ExportFacts", "ColumnFacts", "TableFacts",
                "MeasuredRun", "RunRecord"}

PROBE = """
import contextlib, io, json, sys
from pydantic import BaseModel
from rivet_ci.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    code = main(sys.argv[1:])

def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)

built = sorted({m.__name__ for m in subclasses(BaseModel)
                if m.__module__.startswith("rivet_ci.") and m.__pydantic_complete__})
print(json.dumps({"code": code, "built": built,
                  "attribute_hook": "__getattr__" in vars(BaseModel),
                  "plugins": "pydantic.plugin._loader" in sys.modules}))
"""


def _all_models() -> list[type[BaseModel]]:
    for module in pkgutil.walk_packages(rivet_ci.__path__, "rivet_ci."):
        if not module.name.endswith("__main__"):  # that one runs the CLI
            importlib.import_module(module.name)
    found: list[type[BaseModel]] = []
    pending: list[type[BaseModel]] = [BaseModel]
    while pending:
        for sub in pending.pop().__subclasses__():
            pending.append(sub)
            if sub.__module__.startswith("rivet_ci."):
                found.append(sub)
    return found


def test_every_model_defers_building_its_validator() -> None:
    models = _all_models()
    assert len(models) > 50  # the walk found the package's models
    eager = [f"{m.__module__}.{m.__qualname__}" for m in models
             if not m.model_config.get("defer_build")]
    assert eager == []


def test_a_plan_run_builds_only_the_facts_models(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "plan", "examples/pipelines", "--facts",
         "examples/facts.yaml", "--format", "json", "--output", str(tmp_path / "plan.json")],
        cwd=REPO, check=True, capture_output=True, text=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] == 0
    built = set(result["built"])
    assert "FactsFile" in built  # the facts file (YAML) was validated by its models
    assert built <= FACTS_MODELS, sorted(built - FACTS_MODELS)
    assert result["attribute_hook"] is False  # `main` dropped it for the run


def test_a_plan_run_on_json_facts_builds_no_validator(tmp_path: Path) -> None:
    """The facts as `rivet-ci facts` writes them (JSON, every value of its field's type) are
    validated by the plain facts validator: no model's validator is built, and pydantic's
    plugin machinery (`importlib.metadata`) is never loaded."""
    import yaml

    facts = yaml.safe_load((REPO / "examples" / "facts.yaml").read_text(encoding="utf-8"))
    (tmp_path / "facts.json").write_text(json.dumps(facts), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "plan", str(REPO / "examples" / "pipelines"), "--facts",
         str(tmp_path / "facts.json"), "--format", "json", "--output", str(tmp_path / "plan.json")],
        cwd=REPO, check=True, capture_output=True, text=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] == 0
    assert result["built"] == []
    assert result["plugins"] is False


def test_no_model_needs_pydantics_attribute_hook() -> None:
    """`BaseModel.__getattr__` serves private attributes and extra fields only."""
    needs = [f"{m.__module__}.{m.__qualname__}" for m in _all_models()
             if m.__private_attributes__ or m.model_config.get("extra") == "allow"]
    assert needs == []


def test_a_missing_attribute_fails_the_same_without_the_hook() -> None:
    from rivet_ci.core.plan.recommendation import Reason

    reason = Reason(kind="small_table", message="m")
    name = "__getattr__"
    hook = vars(BaseModel)[name]  # in-process: pydantic as it is
    with pytest.raises(AttributeError) as with_hook:
        reason.nothing  # type: ignore[attr-defined]  # noqa: B018
    try:
        delattr(BaseModel, name)
        with pytest.raises(AttributeError) as without:
            reason.nothing  # type: ignore[attr-defined]  # noqa: B018
        assert reason.message == "m" and reason.kind == "small_table"
    finally:
        setattr(BaseModel, name, hook)
    message = "'Reason' object has no attribute 'nothing'"
    assert str(without.value) == str(with_hook.value) == message
