"""The wheel ships the templates (the action image installs the wheel, not the source tree)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_contains_templates_and_typed_marker(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )
    wheel = next(tmp_path.glob("rivet_ci-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {p.name for p in (ROOT / "templates").iterdir() if p.is_file()}
    assert shipped, "templates/ is empty"
    for template in shipped:
        assert f"rivet_ci/templates/{template}" in names
    assert "rivet_ci/py.typed" in names
    assert not any(n.startswith("tests/") for n in names)


def test_source_checkout_finds_the_top_level_templates() -> None:
    from rivet_ci.render import builtin_template_dir

    assert (builtin_template_dir() / "comment.md.j2").is_file()
