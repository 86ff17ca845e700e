"""PR comment benchmark: a pull request that changes 3,000 exports the same way.

Builds a git repository of 10 config files × 300 exports (ten per source group), planned from a
facts file, and a branch on which every export's cursor loses its index (score −12,
`+weak_cursor`) — the mass change of a PR that touches a shared template. Then times:

* the whole process, `rivet-ci diff --base main --head pr` in a fresh interpreter (median of
  `--repeat` runs), against the physical floor of a bare `python -c "import rivet_ci"`;
* the comment stage in-process (view model — redacted and bounded as it is built — and rendering
  within the 65,536, 16,000 and 1,000,000 character budgets the action renders), median of
  `--repeat` runs, with the CLI's GC setting.

On a shared machine wall time varies with the load; the CPU time of the stage is the steadier
figure to compare.

    .venv/bin/python benchmarks/bench_comment.py
    .venv/bin/python benchmarks/bench_comment.py --files 10 --per-file 300 --repeat 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

GROUPS_PER_FILE = 30


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True).stdout.strip()


def config_text(file: int, per_file: int, cursor: str) -> str:
    exports = [{"name": f"t{file:02d}_{n:04d}", "table": f"public.t{file:02d}_{n:04d}",
                "mode": "incremental", "cursor_column": cursor, "format": "parquet",
                "destination": {"type": "local"},
                "source_group": f"g{file:02d}_{n % GROUPS_PER_FILE}"} for n in range(per_file)]
    return yaml.safe_dump({"source": {"type": "postgres", "url_env": f"DB_{file}_URL",
                                      "environment": "replica"}, "exports": exports},
                          sort_keys=False)


def facts_text(files: int, per_file: int) -> str:
    exports: dict[str, Any] = {}
    for file in range(files):
        for n in range(per_file):
            exports[f"t{file:02d}_{n:04d}"] = {
                "row_estimate": 400_000 + n, "avg_row_bytes": 120, "max_connections": 100,
                "columns": {"updated_at": {"indexed": True, "min": "2024-01-01 00:00:00",
                                           "max": "2026-11-29 00:00:00"}}}
    return yaml.safe_dump({"format": "rivet-ci-facts/1", "captured_at": "2026-11-29T06:00:00Z",
                           "exports": exports}, sort_keys=False)


def build_repo(root: Path, files: int, per_file: int) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for file in range(files):
        path = root / "rivet" / f"big_{file:02d}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(config_text(file, per_file, "updated_at"), encoding="utf-8")
    facts = root.parent / "facts.yaml"
    facts.write_text(facts_text(files, per_file), encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    git(root, "checkout", "-q", "-b", "pr")
    for file in range(files):  # an unindexed cursor everywhere: score −12, +weak_cursor
        (root / "rivet" / f"big_{file:02d}.yaml").write_text(
            config_text(file, per_file, "created_at"), encoding="utf-8")
    git(root, "commit", "-q", "-am", "mass change")
    return facts


def whole_process(argv: list[str], cwd: Path, repeat: int) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - started)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{argv} failed ({done.returncode}): {done.stderr}")
        out = done.stdout
    return statistics.median(times), out


def comment_stage(repo: Path, facts: Path, repeat: int) -> tuple[float, float, int]:
    """The comment stage alone: view model and the three renderings the action makes."""
    from rivet_ci.adapters.files import load_facts_file
    from rivet_ci.adapters.git import GitRepo
    from rivet_ci.adapters.github.runner import GITHUB_COMMENT_LIMIT
    from rivet_ci.core.gate.policy import evaluate_gate, parse_policy
    from rivet_ci.core.plan.planner import FactsOrigin
    from rivet_ci.output.redaction import Redactor
    from rivet_ci.review.comment import CommentOptions, render_comments, reviewed
    from rivet_ci.review.pull_request import plan_pull_request

    facts_file, _ = load_facts_file(facts, root=repo)
    pr = plan_pull_request(GitRepo(repo), base="main", head="pr", globs=("rivet/**/*.yaml",),
                           facts=facts_file, origin=FactsOrigin(kind="file", path="facts.yaml"),
                           environ={})
    gate = evaluate_gate(pr.diff, parse_policy(["config-error"]))
    times, cpu, size = [], [], 0
    for _ in range(repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        options = CommentOptions(gate_id="default", comment_limit=GITHUB_COMMENT_LIMIT)
        # As every run renders it: the view redacted (and bounded) by the output boundary's
        # redactor when it is built (here one that knows no secret, as a run without any).
        bodies = render_comments(reviewed(pr, gate), options,
                                 timestamp="2026-11-29T12:00:00Z",
                                 now=datetime(2026, 11, 29, 12, tzinfo=UTC), redact=Redactor())
        times.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
        size = len(bodies.comment)
    return statistics.median(times), statistics.median(cpu), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--per-file", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--save", type=Path, help="write the comment of the last run here")
    args = parser.parse_args()
    from rivet_ci.cli.runtime import tune_gc

    tune_gc()  # as `rivet-ci` does at start-up (rivet_ci.cli.main)
    exe = Path(sys.executable).with_name("rivet-ci")
    with tempfile.TemporaryDirectory(prefix="rivet-ci-bench-") as tmp:
        repo = Path(tmp) / "repo"
        facts = build_repo(repo, args.files, args.per_file)
        total = args.files * args.per_file
        floor, _ = whole_process([sys.executable, "-c", "import rivet_ci"], repo, args.repeat)
        seconds, body = whole_process(
            [str(exe), "diff", "--base", "main", "--head", "pr", "--facts", str(facts)], repo,
            args.repeat)
        stage, stage_cpu, size = comment_stage(repo, facts, args.repeat)
        if args.save:
            args.save.write_text(body, encoding="utf-8")
        print(f"{total:,} changed exports ({args.files} files), median of {args.repeat}")
        print(f"  floor  python -c 'import rivet_ci'      {floor:7.3f} s")
        print(f"  whole  rivet-ci diff (plan + comment)    {seconds:7.3f} s   "
              f"comment {len(body):,} chars")
        print(f"  stage  view + 3 renderings (in-process)  {stage:7.3f} s   "
              f"(CPU {stage_cpu:.3f} s)   comment {size:,} chars")


if __name__ == "__main__":
    main()
