"""Render the PR comment as a reviewer sees it: PNG previews for the README and docs.

Builds pull requests in temporary git repositories — the bundled example with a realistic
change, a mass change of 3,000 exports, and (with `--scenarios`) a source-group rename, a
one-key typo, a new heavy export and long, hostile names — runs `rivet-ci diff` on each,
renders the Markdown with GitHub's own engine (cmark-gfm), wraps it in GitHub-like CSS (light,
and dark with `--dark`) at the width of a PR comment (~780 px of text), draws each ```mermaid
block with the `mermaid` npm package as GitHub does, and screenshots it with headless Chromium
(Debian `chromium`).

    .venv/bin/python scripts/render_comment_preview.py            # writes docs/comment-*.png
    .venv/bin/python scripts/render_comment_preview.py --out /tmp --scenarios --dark

Needs `chromium` on PATH (`apt-get install chromium fonts-noto-color-emoji`), `npm` (the
`mermaid` package is installed into `--node-dir`, default `/var/tmp/rivet-ci-node`, never into
the repository) and the test extra (`cmarkgfm`). Each Mermaid block must render to an SVG
without a parse error, or the script fails.
"""

from __future__ import annotations

import argparse
import html
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
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
    chunked,
    config,
    cursor_facts,
    heavy_facts,
    incremental,
    write_facts,
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
.markdown-body pre { padding: 16px; background: #f6f8fa; border-radius: 6px; overflow: auto; }
.markdown-body pre code { background: none; padding: 0; }
.markdown-body .mermaid-box { margin: 0 0 16px; overflow: auto; }
"""
# GitHub's dark theme ("dark default"): the same layout, other colours.
DARK_CSS = """
body { background: #0d1117; }
.comment { border-color: #30363d; }
.header { background: #161b22; border-color: #30363d; color: #8d96a0; }
.header b { color: #e6edf3; }
.markdown-body { color: #e6edf3; }
.markdown-body a { color: #4493f8; }
.markdown-body code { background: rgba(101,108,118,.4); }
.markdown-body th, .markdown-body td { border-color: #30363d; }
.markdown-body tr { background: #0d1117; border-color: #21262d; }
.markdown-body tr:nth-child(2n) { background: #161b22; }
.markdown-body sub { color: #8d96a0; }
.markdown-body pre { background: #161b22; }
"""
MERMAID_VERSION = "11"
# Replaces each ```mermaid block cmark-gfm wrote with the SVG mermaid draws, and records the
# outcome (and the page height) in the DOM for `--dump-dom` to read.
MERMAID_SCRIPT = """
<script src="%(src)s"></script>
<script>
(async () => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const blocks = [...document.querySelectorAll('pre[lang="mermaid"], code.language-mermaid')];
  const status = [];
  mermaid.initialize({startOnLoad: false, securityLevel: 'strict', theme: '%(theme)s'});
  for (const [i, block] of blocks.entries()) {
    const pre = block.tagName === 'PRE' ? block : block.parentElement;
    try {
      const {svg} = await mermaid.render('picture' + i, pre.textContent);
      const box = document.createElement('div');
      box.className = 'mermaid-box';
      box.innerHTML = svg;
      pre.replaceWith(box);
      status.push('ok');
    } catch (e) { status.push('error: ' + e); }
  }
  document.body.dataset.mermaid = status.join(' | ') || 'none';
  document.body.dataset.height = String(document.documentElement.scrollHeight);
})();
</script>
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


def rename(tmp: Path) -> str:
    """`source_group: dwh_legacy → dwh_primary` on 200 heavy exports, nothing else."""
    names = [f"fact_{i:03d}" for i in range(200)]
    repo = Repo.init(tmp / "rename")
    write_facts(repo.path / "facts.yaml", {n: heavy_facts() for n in names})
    repo.commit("base", {"rivet/dwh.yaml": config(*(chunked(n, group="dwh_legacy")
                                                    for n in names))})
    repo.checkout("feature", new=True)
    repo.commit("rename", {"rivet/dwh.yaml": config(*(chunked(n, group="dwh_primary")
                                                     for n in names))})
    os.chdir(repo.path)
    return diff_comment(repo, "--facts", "facts.yaml", "--fail-on", "new-warning")


def _three(tmp: Path, name: str) -> tuple[Repo, str]:
    repo = Repo.init(tmp / name)
    write_facts(repo.path / "facts.yaml", {
        "events": heavy_facts(), "items": heavy_facts(), "orders": cursor_facts(),
        "clickstream": heavy_facts(180_000_000)})
    text = config(chunked("events"), chunked("items"), incremental("orders"))
    repo.commit("base", {"rivet/a.yaml": text})
    repo.checkout("feature", new=True)
    return repo, text


def typo(tmp: Path) -> str:
    """`chunk_column:` mistyped `chunk_colum:` in a file with a heavy-exports warning."""
    repo, text = _three(tmp, "typo")
    repo.commit("typo", {"rivet/a.yaml": text.replace("chunk_column:", "chunk_colum:", 1)})
    os.chdir(repo.path)
    return diff_comment(repo, "--facts", "facts.yaml", "--fail-on", "new-warning")


def new_heavy(tmp: Path) -> str:
    """A new 180,000,000-row chunked export on a source group with two heavy exports."""
    repo, _ = _three(tmp, "heavy")
    repo.commit("add", {"rivet/a.yaml": config(chunked("events"), chunked("items"),
                                               incremental("orders"), chunked("clickstream"))})
    os.chdir(repo.path)
    return diff_comment(repo, "--facts", "facts.yaml", "--fail-on", "new-isolation")


def long_names(tmp: Path) -> str:
    """Names a pull request chose, long and hostile: each shown bounded and inert."""
    # (an export name is filename-safe for rivet: no `/`)
    export_name = "orders_" + "`@octocat <img src=x onerror=alert(1)> ![p](x) [l](x) " * 8 + "end"
    group = "replica_" + "![p](https://evil.example/p.png) ** " * 10 + "hot"
    file = "rivet/" + "team_" * 30 + "orders.yaml"
    repo = Repo.init(tmp / "long")
    write_facts(repo.path / "facts.yaml", {export_name: heavy_facts(), "events": heavy_facts()})
    repo.commit("base", {file: config(chunked("events", group=group))})
    repo.checkout("feature", new=True)
    repo.commit("add", {file: config(chunked("events", group=group),
                                     chunked(export_name, group=group, table="public.wide"))})
    os.chdir(repo.path)
    return diff_comment(repo, "--facts", "facts.yaml", "--fail-on", "new-isolation")


def mermaid_js(node_dir: Path) -> Path:
    """The `mermaid` package's browser bundle, installed with npm into `node_dir` once."""
    bundle = node_dir / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
    if not bundle.is_file():
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("npm not found: apt-get install npm")
        node_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run([npm, "install", "--prefix", str(node_dir), "--no-audit", "--no-fund",
                        "--silent", f"mermaid@{MERMAID_VERSION}"], check=True, timeout=600)
    return bundle


def page(markdown: str, title: str, *, mermaid: Path | None = None, dark: bool = False) -> str:
    body = cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    css = CSS % {"width": WIDTH} + (DARK_CSS if dark else "")
    script = (MERMAID_SCRIPT % {"src": mermaid.as_uri(), "theme": "dark" if dark else "default"}
              if mermaid is not None else "")
    return (f"<!doctype html><html><head><meta charset='utf-8'><style>"
            f"{css}</style></head><body><div class='comment'>"
            f"<div class='header'><b>github-actions</b> bot commented · {html.escape(title)}"
            f"</div><div class='markdown-body'>{body}</div></div>{script}</body></html>")


def _chromium(chromium: str, profile: str, *args: str) -> str:
    done = subprocess.run([
        chromium, "--headless", "--no-sandbox", "--disable-gpu",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", f"--user-data-dir={profile}", "--hide-scrollbars",
        "--force-device-scale-factor=1", "--virtual-time-budget=15000", *args],
        check=True, capture_output=True, text=True, timeout=180)
    return done.stdout


def screenshot(chromium: str, html_path: Path, png: Path, height: int | None = None) -> str:
    """Screenshot the page at its own height (measured in a first pass); returns the Mermaid
    outcome the page recorded (`ok`, `error: ...`, or `none`)."""
    with tempfile.TemporaryDirectory(prefix="rivet-ci-chromium-") as profile:
        dom = _chromium(chromium, profile, f"--window-size={WIDTH + 34},1000", "--dump-dom",
                        html_path.as_uri())
        status = re.search(r'data-mermaid="([^"]*)"', dom)
        measured = re.search(r'data-height="(\d+)"', dom)
        tall = height or (int(measured.group(1)) + 16 if measured else 1000)
        _chromium(chromium, profile, f"--window-size={WIDTH + 34},{min(tall, 6000)}",
                  f"--screenshot={png}", html_path.as_uri())
    return html.unescape(status.group(1)) if status else "none"


Scenario = tuple[str, Callable[[Path], str], str]
SHOTS: list[Scenario] = [
    ("comment-realistic", realistic, "a realistic PR"),
    ("comment-3000-exports", large, "3,000 exports changed"),
]
SCENARIOS: list[Scenario] = [
    ("comment-rename", rename, "source group renamed"),
    ("comment-typo", typo, "a one-key typo"),
    ("comment-new-heavy", new_heavy, "a new heavy export"),
    ("comment-long-names", long_names, "long, hostile names"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    parser.add_argument("--scenarios", action="store_true",
                        help="also the rename, typo, new-heavy-export and long-names pull "
                             "requests")
    parser.add_argument("--dark", action="store_true", help="also each one in the dark theme")
    parser.add_argument("--node-dir", type=Path, default=Path("/var/tmp/rivet-ci-node"),
                        help="where npm installs the mermaid package (outside the repository)")
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium not found: apt-get install chromium fonts-noto-color-emoji")
    bundle = mermaid_js(args.node_dir)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    cwd = Path.cwd()
    failed = []
    with tempfile.TemporaryDirectory(prefix="rivet-ci-preview-") as tmp:
        shots = SHOTS + (SCENARIOS if args.scenarios else [])
        for name, build, title in shots:
            markdown = build(Path(tmp))
            os.chdir(cwd)
            if args.scenarios:  # the Markdown beside its pictures, to read
                (out / f"{name}.md").write_text(markdown, encoding="utf-8")
            for dark in (False, True) if args.dark else (False,):
                suffix = "-dark" if dark else ""
                html_path = Path(tmp) / f"{name}{suffix}.html"
                html_path.write_text(page(markdown, title, mermaid=bundle, dark=dark),
                                     encoding="utf-8")
                png = out / f"{name}{suffix}.png"
                status = screenshot(chromium, html_path, png)
                print(f"wrote {png} ({len(markdown):,} characters; mermaid: {status})")
                if "error" in status:
                    failed.append(f"{name}{suffix}: {status}")
    if failed:
        raise SystemExit("mermaid could not render: " + "; ".join(failed))


if __name__ == "__main__":
    main()
