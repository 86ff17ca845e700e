"""The campaign picture drawn as GitHub draws it (issue 22, item 7): the comment of the realistic
pull request and of the 3,000-export one rendered by cmark-gfm, each ```mermaid block drawn by
the `mermaid` npm package in headless Chromium — it must become an SVG without a parse error —
within GitHub's 65,536-character limit. Uses `scripts/render_comment_preview.py` (the same page
the README's screenshots come from). Needs `chromium` and the mermaid package `.ci/run` installs
(`/var/tmp/rivet-ci-node`); under CI=true a missing one is a failure."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from rivet_ci.adapters.github.runner import GITHUB_COMMENT_LIMIT

ROOT = Path(__file__).resolve().parent.parent
NODE_DIR = Path(os.environ.get("RIVET_CI_NODE_DIR", "/var/tmp/rivet-ci-node"))
BUNDLE = NODE_DIR / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def preview() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "render_comment_preview", ROOT / "scripts" / "render_comment_preview.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tools() -> tuple[ModuleType, str]:
    missing = [what for what, ok in (("chromium", CHROMIUM), (str(BUNDLE), BUNDLE.is_file()))
               if not ok]
    if missing:
        message = f"missing {', '.join(missing)} (.ci/run installs them)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    assert CHROMIUM is not None
    return preview(), CHROMIUM


@pytest.mark.parametrize("name", ["realistic", "large"])
def test_the_picture_renders_in_chromium_with_mermaid(
    tools: tuple[ModuleType, str], name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    module, chromium = tools
    monkeypatch.chdir(tmp_path)  # the builders chdir into their repository; restored after
    markdown = getattr(module, name)(tmp_path)
    assert len(markdown) <= GITHUB_COMMENT_LIMIT
    assert "```mermaid\nflowchart LR\n" in markdown
    page = tmp_path / f"{name}.html"
    page.write_text(module.page(markdown, name, mermaid=BUNDLE), encoding="utf-8")
    status = module.screenshot(chromium, page, tmp_path / f"{name}.png")
    assert status == "ok", status
    assert (tmp_path / f"{name}.png").stat().st_size > 10_000
