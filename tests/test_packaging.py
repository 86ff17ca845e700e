"""The wheel ships the templates (the action image installs the wheel, not the source tree)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
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
    # The plan document's JSON Schema ships too, the same text as the source tree's.
    shipped_schema = zipfile.ZipFile(wheel).read("rivet_ci/schemas/plan.schema.json")
    assert shipped_schema == (ROOT / "schemas" / "plan.schema.json").read_bytes()

    # Installed from the wheel (as in the image), the renderer finds the templates it ships.
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    found = subprocess.run(
        [sys.executable, "-c", "from rivet_ci.output.render import builtin_template_dir as d; "
                               "import rivet_ci; print(rivet_ci.__file__); print(d())"],
        check=True, capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
    ).stdout.splitlines()
    assert Path(found[0]).resolve() == (site / "rivet_ci" / "__init__.py").resolve()
    assert Path(found[1]) == (site / "rivet_ci" / "templates").resolve()


def test_source_checkout_finds_the_top_level_templates() -> None:
    from rivet_ci.output.render import builtin_template_dir

    assert (builtin_template_dir() / "comment.md.j2").is_file()


def _locked(path: Path) -> dict[str, str]:
    """name -> version of every `name==version \\` line, with its hashes checked present."""
    text = path.read_text(encoding="utf-8")
    pins: dict[str, str] = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):
        head = block.split("\n", 1)[0]
        match = re.match(r"([A-Za-z0-9_.-]+)==(\S+) \\$", head)
        if match:
            assert "--hash=sha256:" in block, f"{match.group(1)} has no hash in {path.name}"
            pins[re.sub(r"[-_.]+", "-", match.group(1)).lower()] = match.group(2)
    return pins


def test_the_image_lock_pins_every_runtime_dependency_with_hashes() -> None:
    """The image installs requirements/image.lock with --require-hashes: a dependency added to
    pyproject.toml but not locked would break the image build (regenerate: requirements/)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    locked = _locked(ROOT / "requirements" / "image.lock")
    for requirement in project["dependencies"]:
        name = re.sub(r"[-_.]+", "-", re.split(r"[\[<>=!~ ;]", requirement, maxsplit=1)[0])
        assert name.lower() in locked, f"{requirement} is not in requirements/image.lock"
    build = _locked(ROOT / "requirements" / "build.lock")
    assert "hatchling" in build
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert dockerfile.count("--require-hashes") == 2
    assert not re.search(r"^\s*USER\b", dockerfile, re.MULTILINE)  # GitHub: run as root
