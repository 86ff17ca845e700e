"""Render the PR comment as a reviewer sees it: PNG previews for the README and docs.

Builds two pull requests in temporary git repositories — the bundled example with a realistic
change, and a mass change of 3,000 exports — runs `rivet-ci diff` on each, renders the
Markdown with GitHub's own engine (cmark-gfm), wraps it in GitHub-like CSS at the width of a
PR comment (~780 px of text) and screenshots it with headless Chromium (Debian `chromium`).

    .venv/bin/python scripts/render_comment_preview.py            # writes docs/comment-*.png
    .venv/bin/python scripts/render_comment_preview.py --out /tmp  # elsewhere

Needs `chromium` on PATH (`apt-get install chromium fonts-noto-color-emoji`) and the test extra
(`cmarkgfm`).
"""

from __future__ import annotations

import argparse
import html
import io
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import cmarkgfm
from cmarkgfm.cmark import Options

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.pr import (  # noqa: E402  (the tests' real-git helpers)
    BIG_FILES,
    Repo,
    big_config,
)

from rivet_ci.cli import run  # noqa: E402
from rivet_ci.commands.context import Context  # noqa: E402

EXAMPLES = ROOT / "examples"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
ENVIRON = {"GITHUB_REPOSITORY": "acme/pipelines", "GITHUB_SERVER_URL": "https://github.com"}
# GitHub's comment body: a 1012 px timeline column minus the avatar gutter and padding.
WIDTH = 780

CSS = """
body { margin: 0; background: #ffffff; }
.comment { width: %(width)dpx; margin: 16px; border: 1px solid #d0d7de; border-radius: 6px; }
.header { background: #f6f8fa; border-bottom: 1px solid #d0d7de; padding: 8px 16px;
  font: 14px -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif;
  color: #57606a; border-radius: 6px 6px 0 0; }
.header b { color: #1f2328; }
.markdown-body { padding: 16px; color: #1f2328; font-size: 14px; line-height: 1.5;
  font-family: -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif,
  "Noto Color Emoji"; word-wrap: break-word; }
.markdown-body h3 { font-size: 1.25em; font-weight: 600; margin: 0 0 16px; }
.markdown-body p, .markdown-body ul, .markdown-body table, .markdown-body details {
  margin: 0 0 16px; }
.markdown-body ul { padding-left: 2em; }
.markdown-body li + li { margin-top: .25em; }
.markdown-body a { color: #0969da; text-decoration: none; }
.markdown-body code { padding: .2em .4em; font-size: 85%%; background: rgba(175,184,193,.2);
  border-radius: 6px; font-family: ui-monospace, SFMono-Regular, "DejaVu Sans Mono", Menlo,
  monospace; }
.markdown-body table { border-spacing: 0; border-collapse: collapse; display: block;
  width: max-content; max-width: 100%%; overflow: auto; }
.markdown-body th { font-weight: 600; }
.markdown-body th, .markdown-body td { padding: 6px 13px; border: 1px solid #d0d7de; }
.markdown-body tr { background: #fff; border-top: 1px solid #d8dee4; }
.markdown-body tr:nth-child(2n) { background: #f6f8fa; }
.markdown-body sub { font-size: 75%%; color: #57606a; }
.markdown-body summary { cursor: pointer; }
"""


def diff_comment(repo: Repo, *args: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(stdout=out, stderr=err, environ=dict(ENVIRON), cwd=repo.path,
                  now=lambda: NOW)
    code = run(["diff", "--base", "main", "--repo", str(repo.path), *args], ctx)
    if code not in (0, 1):
        raise SystemExit(f"rivet-ci diff failed ({code}): {err.getvalue()}")
    return out.getvalue()


def realistic(tmp: Path) -> str:
    a = (EXAMPLES / "pipelines" / "replica_a.yaml").read_text(encoding="utf-8")
    start, end = a.index("  - name: order_items"), a.index("  - name: customers")
    replica_a, order_items = a[:start] + a[end:], a[start:end]
    replica_b = (EXAMPLES / "pipelines" / "replica_b.yaml").read_text(encoding="utf-8")
    repo = Repo.init(tmp / "realistic")
    repo.commit("base", {"rivet/replica_a.yaml": replica_a, "rivet/replica_b.yaml": replica_b,
                         "facts.yaml": (EXAMPLES / "facts.yaml").read_text(encoding="utf-8")})
    repo.checkout("feature", new=True)
    head_a = replica_a.replace(
        "cursor_column: updated_at\n    source_group: replica_a",
        "cursor_column: created_at\n    source_group: replica_a") + "\n" + order_items
    head_b = replica_b.replace("    days_window: 3\n", "    days_window: 30\n")
    repo.commit("realistic PR", {"rivet/replica_a.yaml": head_a,
                                 "rivet/replica_b.yaml": head_b})
    os.chdir(repo.path)  # a relative --facts keeps temporary paths out of the footer
    return diff_comment(repo, "--facts", "facts.yaml", "--fail-on", "new-isolation",
                        "--fail-on", "score-drop:10")


def large(tmp: Path) -> str:
    repo = Repo.init(tmp / "large")
    repo.commit("base", {f"rivet/big_{i:02d}.yaml": big_config(i, "full")
                         for i in range(BIG_FILES)})
    repo.checkout("feature", new=True)
    repo.commit("mass change", {f"rivet/big_{i:02d}.yaml": big_config(i, "incremental")
                                for i in range(BIG_FILES)})
    os.chdir(repo.path)
    return diff_comment(repo, "--output", "plan.json")


def page(markdown: str, title: str) -> str:
    body = cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    return (f"<!doctype html><html><head><meta charset='utf-8'><style>"
            f"{CSS % {'width': WIDTH}}</style></head><body><div class='comment'>"
            f"<div class='header'><b>github-actions</b> bot commented · {html.escape(title)}"
            f"</div><div class='markdown-body'>{body}</div></div></body></html>")


def screenshot(chromium: str, html_path: Path, png: Path, height: int) -> None:
    with tempfile.TemporaryDirectory(prefix="rivet-ci-chromium-") as profile:
        subprocess.run([
            chromium, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update", "--no-first-run",
            f"--user-data-dir={profile}", "--hide-scrollbars", "--force-device-scale-factor=1",
            f"--window-size={WIDTH + 34},{height}", f"--screenshot={png}",
            html_path.as_uri()], check=True, capture_output=True, timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium not found: apt-get install chromium fonts-noto-color-emoji")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    cwd = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="rivet-ci-preview-") as tmp:
        shots = [("comment-realistic", realistic(Path(tmp)), "a realistic PR", 820),
                 ("comment-3000-exports", large(Path(tmp)), "3,000 exports changed", 1010)]
        os.chdir(cwd)
        for name, markdown, title, height in shots:
            html_path = Path(tmp) / f"{name}.html"
            html_path.write_text(page(markdown, title), encoding="utf-8")
            screenshot(chromium, html_path, out / f"{name}.png", height)
            print(f"wrote {out / name}.png")


if __name__ == "__main__":
    main()
