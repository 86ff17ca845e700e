"""Whole-process benchmark: `rivet-ci plan` of N exports against the parse floor (issue 11).

Generates the planner benchmark's input (`bench_planner.generate`: N exports, 50 per config
file, every mode, cursor and chunking variant, ten source groups) with the facts written as JSON
(what `rivet-ci facts` writes by default). Then runs, alternately, best of `--runs`:

- floor — a `python -c` process that only parses the same config files with
  `yaml.load(..., Loader=yaml.CSafeLoader)` and the facts with `json.load` (the cyclic garbage
  collector off, as rivet-ci runs; with it on the floor is slower and the ratio looks better);
- plan  — `rivet-ci plan pipelines --facts facts.json --format json --output plan.json`
  (stdout, the same JSON document, to /dev/null).

Each is a separate process, timed from spawn to exit (wall) and by its own CPU time (user + sys
from `os.wait4`, less disturbed by other load on the machine), with its peak RSS (spawned by a
small launcher, so the figure is the command's own). Target
(issue 11): plan ≤ 2× the floor at 10,000 exports. `--phases` adds an in-process breakdown of
the plan run (start-up, load, facts, plan, document) to show where the rest of the time goes.

rivet-ci is measured as it is shipped, with its bytecode compiled (`shipped.compile_package`, as
pip does at install time): the floor's imports (yaml, json) have theirs, and an editable checkout
under `PYTHONDONTWRITEBYTECODE=1` would otherwise compile the package from source in every
process (~0.1 s of CPU no installed rivet-ci spends).

    .venv/bin/python benchmarks/bench_plan_process.py                 # N = 10,000, best of 5
    .venv/bin/python benchmarks/bench_plan_process.py 100000 --runs 3 --phases
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple, TypeVar

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_planner import generate  # the planner benchmark's input generator
from shipped import compile_package  # rivet-ci's bytecode, as an install has it

T = TypeVar("T")
TARGET_RATIO = 2.0
FLOOR = (
    "import gc, json, sys, yaml\n"
    "gc.disable()\n"
    "with open(sys.argv[1], encoding='utf-8') as f:\n"
    "    json.load(f)\n"
    "for path in sys.argv[2:]:\n"
    "    with open(path, encoding='utf-8') as f:\n"
    "        yaml.load(f.read(), Loader=yaml.CSafeLoader)\n"
)


class Run(NamedTuple):
    wall: float
    cpu: float
    rss_mb: float


# Runs one command and reports its own wall time, CPU time and peak RSS. A small launcher
# process, so the peak RSS is the command's: a child forked from this (large) benchmark process
# would inherit its high-water mark.
LAUNCHER = (
    "import json, os, sys, time\n"
    "started = time.perf_counter()\n"
    "pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ)\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "wall = time.perf_counter() - started\n"
    "print(json.dumps([os.waitstatus_to_exitcode(status), wall,\n"
    "                  usage.ru_utime + usage.ru_stime, usage.ru_maxrss]), file=sys.stderr)\n"
)


def run_process(argv: list[str], cwd: Path) -> Run:
    """One process from spawn to exit: wall time, its CPU time, its peak RSS."""
    done = subprocess.run([sys.executable, "-c", LAUNCHER, *argv], cwd=cwd,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    lines = done.stderr.decode(errors="replace").rstrip().splitlines()
    code, wall, cpu, rss_kb = json.loads(lines[-1])
    if code != 0:
        raise SystemExit(f"{' '.join(argv[:3])}... exited {code}:\n" + "\n".join(lines[:-1]))
    return Run(wall, cpu, rss_kb / 1024)


def rivet_ci_command() -> list[str]:
    script = Path(sys.executable).parent / "rivet-ci"
    return [str(script)] if script.exists() else [sys.executable, "-m", "rivet_ci"]


def prepare(root: Path, count: int, per_file: int) -> tuple[list[Path], Path]:
    configs, facts_yaml = generate(root, count, per_file)
    facts = root / "facts.json"
    facts.write_text(json.dumps(yaml.load(facts_yaml.read_text(encoding="utf-8"),
                                          Loader=yaml.CSafeLoader)), encoding="utf-8")
    facts_yaml.unlink()
    return configs, facts


def phases(root: Path, configs: list[Path], facts_path: Path, runs: int) -> dict[str, float]:
    """In-process CPU time of each phase of the plan run, best of `runs`."""
    from rivet_ci.adapters.files import load_config_file, load_facts_file
    from rivet_ci.core.document import dump_json, plan_document
    from rivet_ci.core.planner import FactsOrigin, plan_configs

    def best(fn: Callable[[], T]) -> tuple[float, T]:
        times: list[float] = []
        result: T | None = None
        for _ in range(runs):
            started = time.process_time()
            result = fn()
            times.append(time.process_time() - started)
        assert result is not None
        return min(times), result

    gc.disable()
    out: dict[str, float] = {}
    out["load"], loaded = best(lambda: [load_config_file(p, root=root, environ={})
                                        for p in configs])
    out["facts"], (facts, problems) = best(lambda: load_facts_file(facts_path, root=root))
    origin = FactsOrigin(kind="file", path=facts_path.name)
    out["plan"], plan = best(lambda: plan_configs(loaded, facts, origin, problems))
    out["document"], _ = best(lambda: dump_json(plan_document(
        plan, generated_at="2026-11-29T12:00:00Z", version="bench")))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("count", nargs="?", type=int, default=10_000,
                        help="exports to plan (default: 10000)")
    parser.add_argument("--per-file", type=int, default=50, help="exports per config file")
    parser.add_argument("--runs", type=int, default=5, help="repetitions; the best is reported")
    parser.add_argument("--phases", action="store_true",
                        help="also time each phase of the plan run in this process")
    args = parser.parse_args()

    compile_package()
    with tempfile.TemporaryDirectory(prefix="rivet-ci-bench-process-") as tmp:
        root = Path(tmp)
        configs, facts = prepare(root, args.count, args.per_file)
        relative = [str(p.relative_to(root)) for p in configs]
        floor_argv = [sys.executable, "-c", FLOOR, facts.name, *relative]
        plan_argv = [*rivet_ci_command(), "plan", "pipelines", "--facts", facts.name,
                     "--format", "json", "--output", "plan.json"]
        startup_argv = [*rivet_ci_command(), "--version"]
        results: dict[str, list[Run]] = {"floor": [], "plan": [], "start-up": []}
        for i in range(args.runs):
            order = [("floor", floor_argv), ("plan", plan_argv), ("start-up", startup_argv)]
            for name, argv in order if i % 2 == 0 else order[::-1]:
                results[name].append(run_process(argv, root))
        document = json.loads((root / "plan.json").read_text(encoding="utf-8"))
        planned = document["summary"]["exports"]
        if planned != args.count or document["summary"]["errors"]:
            raise SystemExit(f"benchmark input is wrong: planned {planned}/{args.count}")
        split = phases(root, configs, facts, args.runs) if args.phases else None

    best = {name: Run(min(r.wall for r in runs), min(r.cpu for r in runs),
                      max(r.rss_mb for r in runs)) for name, runs in results.items()}
    floor, plan = best["floor"], best["plan"]
    print(f"{args.count:,} exports in {len(configs)} files, best of {args.runs} "
          f"(python {sys.version.split()[0]}, yaml C loader)")
    print(f"{'process':<10} {'wall':>8} {'cpu':>8} {'peak RSS':>10}")
    for name in ("floor", "plan", "start-up"):
        r = best[name]
        print(f"{name:<10} {r.wall:>7.3f}s {r.cpu:>7.3f}s {r.rss_mb:>7.0f} MB")
    wall_ratio, cpu_ratio = plan.wall / floor.wall, plan.cpu / floor.cpu
    print(f"plan / floor: {wall_ratio:.2f}× wall, {cpu_ratio:.2f}× cpu "
          f"(target ≤ {TARGET_RATIO:.0f}×)")
    if split is not None:
        print("in-process phases (cpu, best of runs): " + ", ".join(
            f"{k} {v:.3f}s" for k, v in split.items())
            + f"; start-up (rivet-ci --version) {best['start-up'].cpu:.3f}s")
    met = cpu_ratio <= TARGET_RATIO
    print("target met" if met else "target missed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
