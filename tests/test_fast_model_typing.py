"""mypy checks every fast build: a field added to a fast-built model without its value is a
type error at each build of it (issue 24: the speed work must not switch type checking off).

`.ci/mypy_fast_model.py` types the values of `Maker.make_full`, `Maker.make` and `construct` as a
TypedDict of the model's fields. Here the package is copied, every model built that way gets one
more required field, and mypy --strict with the project's configuration must report the missing
key at every such build — a build mypy did not flag would be an instance without the field, an
`AttributeError` in every plan.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest
from mypy import api as mypy_api

ROOT = Path(__file__).parent.parent
PACKAGE = ROOT / "rivet_ci"
ADDED = "added_in_test"
FAST_BUILDS = ("make_full", "make")
# The one build from values mypy cannot see: the config typing's `construct(model, data)` over
# any model, its values typed by the schema it checks them against.
GENERIC_BUILD = ("core/config/node_typing.py", "model")


def fast_builds(tree: ast.Module) -> list[tuple[int, str]]:
    """(line, model) of each fast build in a module: `NAME.make_full({...})` / `.make({...})` of
    a module-level `NAME = maker(Model)`, and `construct(Model, {...})`."""
    makers = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name) and node.value.func.id == "maker"
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value.args[0], ast.Name)):
            makers[node.targets[0].id] = node.value.args[0].id
    found = []
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        func = call.func
        if (isinstance(func, ast.Attribute) and func.attr in FAST_BUILDS
                and isinstance(func.value, ast.Name) and func.value.id in makers):
            found.append((call.lineno, makers[func.value.id]))
        elif (isinstance(func, ast.Name) and func.id == "construct" and len(call.args) == 2
                and isinstance(call.args[0], ast.Name) and call.args[0].id[:1].isupper()):
            found.append((call.lineno, call.args[0].id))
    return found


def defining_module(tree: ast.Module, path: Path, model: str, root: Path) -> Path:
    """The file that defines `model` as `path`'s module names it: imported, or its own."""
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and any(
                alias.name == model and alias.asname is None for alias in node.names):
            return root / (node.module.replace(".", "/") + ".py")
    return path


def add_field(source: str, model: str) -> str | None:
    """`source` with a required field added to `class model`, after its `model_config` (or
    its first statement); None if the module does not define it."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == model:
            anchor = node.body[0]
            for item in node.body:
                if isinstance(item, ast.Assign) and any(
                        isinstance(t, ast.Name) and t.id == "model_config" for t in item.targets):
                    anchor = item
            lines = source.splitlines(keepends=True)
            assert anchor.end_lineno is not None
            lines.insert(anchor.end_lineno, f"    {ADDED}: int\n")
            return "".join(lines)
    return None


def test_every_fast_build_is_of_a_model_mypy_can_see() -> None:
    """Each `construct`/`make`/`make_full` names its model, so the plugin can type its values
    (a model held in a variable would make the build unchecked)."""
    unseen = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "construct" and node.args
                    and not (isinstance(node.args[0], ast.Name)
                             and node.args[0].id[:1].isupper())
                    and (where, ast.unparse(node.args[0])) != GENERIC_BUILD):
                unseen.append(f"{where}:{node.lineno}")
    assert not unseen, unseen


@pytest.mark.slow
def test_mypy_flags_every_fast_build_of_a_model_given_a_new_field(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "rivet_ci"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / ".ci", tmp_path / ".ci", ignore=shutil.ignore_patterns("node_modules"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    sources = {p: p.read_text(encoding="utf-8") for p in copy.rglob("*.py")}
    models: set[tuple[Path, str]] = set()  # (defining file, class name)
    for path, text in sources.items():
        tree = ast.parse(text)
        models |= {(defining_module(tree, path, model, tmp_path), model)
                   for _, model in fast_builds(tree)}
    assert len(models) >= 15, models  # the real fast-built models
    for path, model in sorted(models):
        new = add_field(sources[path], model)
        assert new is not None, (path, model)
        path.write_text(new, encoding="utf-8")
        sources[path] = new
    # Every fast build, found after the fields went in (they move line numbers).
    expected = {(path.relative_to(tmp_path).as_posix(), line)
                for path, text in sources.items() for line, _ in fast_builds(ast.parse(text))}
    assert len(expected) >= 25, expected
    monkeypatch.chdir(tmp_path)  # mypy reads the copy, and reports paths relative to it
    out, _, _ = mypy_api.run(["--strict", "--config-file", "pyproject.toml",
                              "--cache-dir", str(tmp_path / ".mypy_cache"), "rivet_ci"])
    flagged = {(line.split(":")[0], int(line.split(":")[1])) for line in out.splitlines()
               if "TypedDict key" in line and f'"{ADDED}"' in line}  # "key" when it is the only one
    # (mypy checks a dict display's values only once its keys are right: a build written inside
    # another build's values is flagged only after that one is fixed — build it first.)
    assert expected <= flagged, sorted(expected - flagged)
