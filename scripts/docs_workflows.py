"""Write every GitHub Actions YAML block of the README and docs/ as a workflow file, for the
workflow linters (check-jsonschema's `vendor.github-workflows`, actionlint).

A block that is a whole workflow (`on:` and `jobs:`) is written as it is; a block of steps (a
list whose items have `uses:` or `run:`) is put in a minimal workflow (`on: pull_request`, one
job on `ubuntu-latest`, the read/write permissions the quick start gives) so the steps are
linted in the context they are documented for. Other YAML (configs, facts, waivers,
`.pre-commit-config.yaml`) is not a workflow and is left out.

    .venv/bin/python scripts/docs_workflows.py OUTDIR    # prints one line per file written
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"^(?P<indent>[ \t]*)```yaml\n(?P<body>.*?)\n(?P=indent)```", re.DOTALL
                   | re.MULTILINE)
WRAPPER = """\
# A step block from {source}, in a minimal workflow.
name: docs
on:
  pull_request:
permissions:
  contents: read
  pull-requests: write
jobs:
  docs:
    runs-on: ubuntu-latest
    steps:
"""


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every ```yaml block, dedented."""
    text = path.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start()) + 1, textwrap.dedent(m.group("body")) + "\n")
            for m in BLOCK.finditer(text)]


def is_steps(data: Any) -> bool:
    return (isinstance(data, list) and bool(data)
            and all(isinstance(s, dict) and ("uses" in s or "run" in s) for s in data))


def workflows() -> list[tuple[str, str]]:
    """(name, workflow text) for every workflow or step block of the docs."""
    out = []
    for path in documents():
        for line, text in blocks(path):
            data = yaml.safe_load(text)
            source = f"{path.relative_to(ROOT).as_posix()}:{line}"
            name = f"{path.stem}-L{line}.yml"
            if isinstance(data, dict) and "jobs" in data:
                out.append((name, f"# {source}\n{text}"))
            elif is_steps(data):
                out.append((name, WRAPPER.format(source=source)
                            + textwrap.indent(textwrap.dedent(text), " " * 6)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path)
    args = parser.parse_args(argv)
    args.outdir.mkdir(parents=True, exist_ok=True)
    for name, text in workflows():
        (args.outdir / name).write_text(text, encoding="utf-8")
        print(args.outdir / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
