"""Pull-request gate benchmark: `rivet-ci diff` end to end on a real git repository.

Builds a repository in a temporary directory with 100 config files of 50 exports each (5,000
exports, every mode, ten source groups) and a facts file covering them, commits it on `main`,
then one branch per variant changing 1, 5, 20, 50 or 100 files (five exports per changed file:
a chunk size, a mode and a source group change, one export added, one removed). Each variant is
timed in-process through `rivet_ci.cli.run(["diff", ...])`, best of 3 — git reads, loading,
planning both sides, the diff, the gate and rendering the comment — and the table shows how the
time grows with the number of changed files.

    .venv/bin/python benchmarks/bench_pr_diff.py
    .venv/bin/python benchmarks/bench_pr_diff.py --files 100 --per-file 50 --changed 1 20 100
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from rivet_ci.cli import run
from rivet_ci.cli.runtime import tune_gc
from rivet_ci.commands.context import Context

GROUPS = 10


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def export(file: int, n: int, *, changed: bool = False) -> dict[str, Any]:
    name = f"f{file:03d}_e{n:03d}"
    group = {"source_group": f"replica_{(file + n) % GROUPS}"} if n % 3 else {}
    kind = n % 4
    if kind == 0:
        body: dict[str, Any] = {"mode": "full"}
    elif kind == 1:
        body = {"mode": "incremental", "cursor_column": "updated_at"}
    elif kind == 2:
        body = {"mode": "chunked", "chunk_column": "id", "chunk_size": 500_000}
    else:
        body = {"mode": "time_window", "time_column": "created_at", "days_window": 7}
    if changed:  # what a PR typically does to an export
        if kind == 2:
            body["chunk_size"] = 50_000
        elif kind == 0:
            body = {"mode": "incremental", "cursor_column": "created_at"}
        group = {"source_group": "replica_hot"}
    return {"name": name, "table": f"public.{name}", **body, **group, "format": "parquet",
            "destination": {"type": "local"}}


def config_text(file: int, per_file: int, *, changed: bool = False) -> str:
    exports = [export(file, n, changed=changed and n < 5) for n in range(per_file)]
    if changed:
        exports.pop()  # one removed
        exports.append(export(file, per_file + 1))  # one added
    document = {"source": {"type": "postgres", "url_env": f"REPLICA_{file % GROUPS}_URL",
                           "environment": "replica"}, "exports": exports}
    return yaml.safe_dump(document, sort_keys=False)


def facts_exports(files: int, per_file: int) -> dict[str, Any]:
    """The facts of every export the generated configs hold (and two more per file)."""
    exports: dict[str, Any] = {}
    for file in range(files):
        for n in range(per_file + 2):
            name = f"f{file:03d}_e{n:03d}"
            rows = 10 ** (4 + (file * 7 + n) % 5)  # 10k .. 100M rows
            exports[name] = {
                "row_estimate": rows, "avg_row_bytes": 120, "max_connections": 100,
                "columns": {"id": {"indexed": True, "min": "1", "max": str(rows)},
                            "updated_at": {"indexed": True, "min": "2024-01-01 00:00:00",
                                           "max": "2026-11-29 00:00:00"}}}
    return exports


def facts_text(files: int, per_file: int) -> str:
    return yaml.safe_dump({"format": "rivet-ci-facts/1", "captured_at": "2026-11-29T06:00:00Z",
                           "exports": facts_exports(files, per_file)}, sort_keys=False)


def build_repo(root: Path, files: int, per_file: int, variants: list[int]) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for file in range(files):
        path = root / "rivet" / f"domain_{file:03d}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(config_text(file, per_file), encoding="utf-8")
    facts = root.parent / "facts.yaml"
    facts.write_text(facts_text(files, per_file), encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    for changed in variants:
        git(root, "checkout", "-q", "-b", f"pr-{changed}", "main")
        # Spread the changed files over the repository rather than the first few.
        for file in sorted({round(i * files / changed) % files for i in range(changed)}):
            path = root / "rivet" / f"domain_{file:03d}.yaml"
            path.write_text(config_text(file, per_file, changed=True), encoding="utf-8")
        git(root, "commit", "-q", "-am", f"change {changed} files")
    git(root, "checkout", "-q", "main")
    return facts


def time_diff(repo: Path, facts: Path, head: str, repeat: int) -> tuple[float, int, str]:
    best, code, body = float("inf"), 0, ""
    for _ in range(repeat):
        out, err = io.StringIO(), io.StringIO()
        ctx = Context(stdout=out, stderr=err, environ={}, cwd=repo)
        started = time.perf_counter()
        code = run(["diff", "--base", "main", "--head", head, "--repo", str(repo), "--facts",
                    str(facts), "--fail-on", "new-isolation"], ctx)
        best = min(best, time.perf_counter() - started)
        body = out.getvalue()
        if code not in (0, 1):
            raise SystemExit(f"rivet-ci diff failed ({code}): {err.getvalue()}")
    return best, code, body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--per-file", type=int, default=50)
    parser.add_argument("--changed", type=int, nargs="+", default=[1, 5, 20, 50, 100])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    tune_gc()  # as `rivet-ci` does at start-up (rivet_ci.cli.main)
    variants = [min(c, args.files) for c in args.changed]
    with tempfile.TemporaryDirectory(prefix="rivet-ci-bench-") as tmp:
        started = time.perf_counter()
        facts = build_repo(Path(tmp) / "repo", args.files, args.per_file, variants)
        print(f"repository: {args.files} config files, {args.files * args.per_file:,} exports, "
              f"built in {time.perf_counter() - started:.1f} s")
        print(f"{'changed files':>13} {'best of ' + str(args.repeat):>10} {'vs first':>9} "
              f"{'changed exports':>16} {'comment chars':>14} {'gate':>6}")
        baseline = None
        for changed in variants:
            seconds, code, body = time_diff(Path(tmp) / "repo", facts, f"pr-{changed}",
                                            args.repeat)
            baseline = baseline or seconds
            rows = body.count("\n| ") - 1 if "| export |" in body else 0
            headline = next((line for line in body.splitlines() if "export(s) changed" in line),
                            "")
            touched = headline.split(" — ")[-1].split(" export(s)")[0] if headline else "?"
            print(f"{changed:>13} {seconds:>9.3f}s {seconds / baseline:>8.2f}x "
                  f"{touched:>16} {len(body):>14,} {'pass' if code == 0 else 'fail':>6}"
                  f"  ({rows} rows shown)")


if __name__ == "__main__":
    main()
