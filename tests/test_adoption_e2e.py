"""The quick start end to end (`scripts/adoption_e2e.py`): a fresh repository from the quick
start's files only, two pull requests, the action run as the image runs it (its entrypoint, as
a process; `tests/test_image_e2e.py` runs the same script on the image itself), and the
comment, outputs, annotations and `plan.json` checked against the local fake GitHub. The quick
start in docs/action.md cannot drift from what works."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow  # whole processes: git and the action, twice
def test_the_quick_start_gets_a_fresh_repository_to_a_meaningful_comment(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "adoption_e2e.py"),
                             "--keep", str(tmp_path / "adoption")], capture_output=True,
                            text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 failed" in result.stdout and "(entrypoint," in result.stdout
    first = (tmp_path / "adoption" / "comment-1.md").read_text(encoding="utf-8")
    assert "✅ gate passed — 1 export changed" in first and "`customers`" in first
    second = (tmp_path / "adoption" / "comment-2.md").read_text(encoding="utf-8")
    assert "❌ gate failed" in second and "order_items" in second
