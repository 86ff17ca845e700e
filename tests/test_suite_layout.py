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


SERVER_FIXTURES = ("pg_db", "mysql_db", "pg_url", "mysql_url")


def test_the_inner_loop_reaches_no_server() -> None:
    """`pytest -m "not slow"` starts no database: a module whose tests reach a server by name
    (`request.getfixturevalue("pg_db")` escapes the fixture-based marking) is listed in
    conftest's SLOW_MODULES, or marks each such test itself."""
    from conftest import SLOW_MODULES

    unlisted = []
    for path in sorted(TESTS.glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        dynamic = "getfixturevalue" in text and any(f'"{name}"' in text
                                                    for name in SERVER_FIXTURES)
        if dynamic and path.stem not in SLOW_MODULES and "mark.slow" not in text:
            unlisted.append(path.stem)
    assert unlisted == []


def test_the_inner_loop_leaves_out_what_conftest_marks() -> None:
    """The marking is real: collecting with `-m "not slow"` drops the server, fuzz and image
    tests and keeps the rest."""
    import subprocess
    import sys

    def collected(*args: str) -> set[str]:
        out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                              "-p", "no:cacheprovider", *args, str(TESTS)],
                             capture_output=True, text=True, check=True, cwd=TESTS.parent,
                             timeout=300).stdout
        return {line.split("::")[0] for line in out.splitlines() if "::" in line}

    fast = collected("-m", "not slow")
    assert fast, "the inner loop collected nothing"
    for module in ("test_core_fuzz", "test_preflight_safety", "test_state_history"):
        assert f"tests/{module}.py" not in fast
    assert "tests/test_core_rules.py" in fast
