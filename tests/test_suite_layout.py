"""The suite's own shape: helpers in `tests/support/`, no test module importing another."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_test_module_imports_another_test_module() -> None:
    offenders = {
        path.name: sorted(name for name in imported_modules(path)
                          if name.split(".")[0].startswith("test_"))
        for path in sorted(TESTS.glob("test_*.py"))}
    assert {name: found for name, found in offenders.items() if found} == {}


def test_support_modules_hold_no_tests() -> None:
    found = {}
    for path in sorted((TESTS / "support").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        tests = [node.name for node in tree.body
                 if isinstance(node, ast.FunctionDef | ast.ClassDef)
                 and node.name.lower().startswith("test")]
        if tests:
            found[path.name] = tests
    assert found == {}


def test_every_helper_module_is_in_support() -> None:
    assert {p.name for p in TESTS.glob("*.py") if not p.name.startswith("test_")} == {
        "conftest.py"}
