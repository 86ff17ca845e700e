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
small launcher, so the figure is the command's own). Each starts after `os.sync()`, so the
kernel is not still writing the previous run's 52 MB `plan.json` while it runs (measured on a
shared VM: best-of-15 ratios 2.04-2.45x without it, 2.09-2.15x with it, back to back).
Target (issue 11): plan ≤ 2× the floor at 10,000 exports. `--phases` adds an in-process breakdown of
the plan run (imports, finding the configs, facts, load, plan, summary, the document's blocks,
the spool, the final write: the steps of the streamed run) to show where the time goes.

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
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple, TextIO, cast

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_planner import generate  # the planner benchmark's input generator
from shipped import compile_package  # rivet-ci's bytecode, as an install has it

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


class Laps:
    """CPU time between successive calls, summed per step name."""

    def __init__(self) -> None:
        self.took: dict[str, float] = {}
        self.clock = time.process_time()

    def __call__(self, name: str) -> None:
        now = time.process_time()
        self.took[name] = self.took.get(name, 0.0) + now - self.clock
        self.clock = now


def phases(root: Path, facts_path: Path, runs: int) -> dict[str, float]:
    """In-process CPU time of each step of the plan run, best of `runs`, step by step as
    `rivet_ci.commands.plan.run_streamed` does them: the imports (a fresh process importing the
    command), finding the configs, the facts, then per config: load, plan, the summary, the
    document's blocks (built, serialised, redacted) and the spool; then the final write of the
    document (to plan.json and to a stream, as `--format json --output` does). With the
    process-wide settings `rivet_ci.cli.main` makes (collector off, pydantic's attribute hook
    dropped)."""
    import io
    import os

    from rivet_ci.adapters.files import PathResolver, load_config_file
    from rivet_ci.adapters.runners import public_names
    from rivet_ci.cli.runtime import drop_model_attribute_hook
    from rivet_ci.commands.context import Context
    from rivet_ci.commands.plan import _spooled, config_paths, load_facts_arg
    from rivet_ci.core.formats.document import (
        add_to_summary,
        config_chunks,
        document_chunks,
        document_head,
        empty_summary,
        streamed_memo,
    )
    from rivet_ci.core.plan.planner import plan_config
    from rivet_ci.output.redaction import redactor_for
    from rivet_ci.output.sink import RedactingStream, write_chunks

    importing = "import time; import rivet_ci.commands.plan; print(time.process_time())"
    out: dict[str, float] = {"imports": min(float(subprocess.run(
        [sys.executable, "-c", importing], check=True, capture_output=True, text=True).stdout)
        for _ in range(runs))}
    redact = redactor_for({}, public=public_names({}))
    with open(os.devnull, "w", encoding="utf-8") as devnull:
        ctx = Context(stdout=io.StringIO(), stderr=io.StringIO(), environ={}, cwd=root,
                      redact=redact)
        stream = cast(TextIO, RedactingStream(devnull, redact))
        gc.disable()  # the process-wide settings of `rivet_ci.cli.main`
        drop_model_attribute_hook()
        for _ in range(runs):
            lap = Laps()
            resolver = PathResolver(root)
            paths = config_paths([Path("pipelines")], ctx,
                                 not_configs=(Path(facts_path.name), Path("plan.json")),
                                 resolver=resolver)
            lap("discovery")
            facts, problems, origin = load_facts_arg(Path(facts_path.name), ctx)
            lap("facts")
            memo, summary, sizes = streamed_memo(), empty_summary(), []
            with tempfile.TemporaryFile() as spool:
                for path in paths:
                    loaded = load_config_file(path, root=resolver, environ={})
                    lap("load")
                    config = plan_config(loaded, facts)
                    lap("plan")
                    assert config is not None
                    add_to_summary(summary, config)
                    lap("summary")
                    blocks = [redact.redact_bytes(b)
                              for b in config_chunks(config, day="2026-11-29", memo=memo)]
                    lap("document")
                    sizes.append(sum(spool.write(b) for b in blocks))
                    del loaded, config, blocks
                    lap("spool")
                head = document_head(facts=origin, summary=summary, problems=problems,
                                     generated_at="2026-11-29T12:00:00Z", version="bench")
                spool.seek(0)
                write_chunks(root / "plan.json",
                             document_chunks(head, (_spooled(spool, n) for n in sizes)),
                             redact, root=root, stream=stream)
                lap("final write")
            for name, seconds in lap.took.items():
                out[name] = min(out.get(name, seconds), seconds)
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
                os.sync()  # the previous run's writes reach the disk before this one starts
                results[name].append(run_process(argv, root))
        document = json.loads((root / "plan.json").read_text(encoding="utf-8"))
        planned = document["summary"]["exports"]
        if planned != args.count or document["summary"]["errors"]:
            raise SystemExit(f"benchmark input is wrong: planned {planned}/{args.count}")
        split = phases(root, facts, args.runs) if args.phases else None

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
        print("in-process steps (cpu, best of runs): " + ", ".join(
            f"{k} {v:.3f}s" for k, v in split.items())
            + f"; start-up (rivet-ci --version) {best['start-up'].cpu:.3f}s")
    met = cpu_ratio <= TARGET_RATIO
    print("target met" if met else "target missed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
