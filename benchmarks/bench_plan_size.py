"""Size of the plan document the action writes, per layout (issue 25), for N exports.

Generates the planner benchmark's input (`bench_planner.generate`: N exports, 50 per config file)
as a committed repository and runs the action's plan of record on it (a `push` event, no pull
request, no GitHub access) once per layout, in-process:

- `indented` — two-space indentation and every field: the document `rivet-ci plan --format json`
  writes, and the action's `plan.json` before the compact layout existed;
- `compact` — the default: no whitespace, `resolved_plan` null (rivet's per-export blocks are in
  `rivet-compatible-artifact`), every field a documented consumer reads kept.

Reports bytes and gzip'd bytes of each and the ratio, and checks that the two documents agree on
every recommendation, campaign, problem and count (the fields `rivet-ci show`, the comment and
the documented tools read).

    .venv/bin/python benchmarks/bench_plan_size.py 200 20000
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_planner import generate  # the planner benchmark's input generator

from rivet_ci.cli import run
from rivet_ci.commands.context import Context

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def action(root: Path, layout: str) -> bytes:
    event = root.parent / "event.json"
    event.write_text(json.dumps({"ref": "refs/heads/main"}), encoding="utf-8")
    environ = {
        "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "push", "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": "acme/warehouse", "GITHUB_WORKSPACE": str(root),
        "GITHUB_SHA": git(root, "rev-parse", "HEAD"), "INPUT_CONFIGS": "pipelines/*.yaml",
        "INPUT_FACTS": "facts.yaml", "INPUT_COMMENT": "off", "INPUT_PLAN-JSON": layout,
        "INPUT_OUTPUT": f"../plan-{layout}.json",
    }
    code = run(["action"], Context(stdout=io.StringIO(), stderr=io.StringIO(), environ=environ,
                                   cwd=root, now=lambda: NOW))
    assert code == 0, code
    return (root.parent / f"plan-{layout}.json").read_bytes()


def consumed(document: dict[str, Any]) -> Any:
    """What documented consumers read: everything but each export's `resolved_plan`."""
    return [(c["path"], c["campaign"], c["problems"],
             [{k: v for k, v in e.items() if k != "resolved_plan"} for e in c["exports"]])
            for c in document["configs"]], document["summary"], document["problems"]


def measure(count: int) -> dict[str, int | float]:
    with tempfile.TemporaryDirectory(prefix="rivet-ci-size-") as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        generate(root, count, 50)
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        git(root, "-c", "user.name=b", "-c", "user.email=b@example.com", "commit", "-qm", "b")
        indented, compact = action(root, "indented"), action(root, "compact")
        a, b = json.loads(indented), json.loads(compact)
        assert consumed(a) == consumed(b), "the layouts disagree on a consumed field"
        return {"exports": count, "indented": len(indented), "compact": len(compact),
                "ratio": len(indented) / len(compact),
                "indented_gzip": len(gzip.compress(indented, 6)),
                "compact_gzip": len(gzip.compress(compact, 6))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("counts", nargs="*", type=int, default=[200, 20_000])
    for count in parser.parse_args().counts:
        m = measure(count)
        print(f"{m['exports']:>7,} exports: indented {m['indented']:>12,} B "
              f"(gzip {m['indented_gzip']:>10,}), compact {m['compact']:>11,} B "
              f"(gzip {m['compact_gzip']:>9,}): {m['ratio']:.1f}x smaller")


if __name__ == "__main__":
    main()
