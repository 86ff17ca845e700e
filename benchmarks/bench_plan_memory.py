"""Peak memory of a whole `rivet-ci plan --facts F.json --format json` process.

Generates N exports (100,000 by default) with `bench_planner`'s generator (50 per config file;
every mode, cursor shape and chunking variant) and its facts as JSON (what `rivet-ci facts`
writes by default), then runs the real command line in a child process, once writing the plan
document to stdout (sent to /dev/null) and once also to a file with `--output`, and reports the
child's peak resident set size (`getrusage(RUSAGE_CHILDREN).ru_maxrss`, each run in its own
measuring process so the peaks do not mix), its wall time and its CPU time (user + system: steady
on a shared machine), next to the size of the document.

Target (issue 11): 100,000 exports peak at most 1 GB RSS for the whole process.

    .venv/bin/python benchmarks/bench_plan_memory.py            # N = 100,000
    .venv/bin/python benchmarks/bench_plan_memory.py 10000 100000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_planner import generate  # the generator shared with bench_planner

TARGET_BYTES = 1_000_000_000
# Runs one command and prints its peak RSS (KiB on Linux) and wall time: RUSAGE_CHILDREN of a
# process that ran only this child is that child's own peak.
_MEASURE = """
import resource, subprocess, sys, time
started = time.perf_counter()
with open(sys.argv[1], "wb") as out:
    code = subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.DEVNULL).returncode
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(code, usage.ru_maxrss, time.perf_counter() - started, usage.ru_utime + usage.ru_stime)
"""


def measure(argv: list[str], stdout: str, cwd: Path) -> tuple[int, int, float, float]:
    """(exit code, peak RSS in bytes, wall seconds, CPU seconds) of `argv` run in `cwd`."""
    result = subprocess.run([sys.executable, "-c", _MEASURE, stdout, *argv], cwd=cwd,
                            capture_output=True, text=True, check=True)
    code, kib, wall, cpu = result.stdout.split()
    return int(code), int(kib) * 1024, float(wall), float(cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("counts", nargs="*", type=int, default=[100_000],
                        help="numbers of exports (default: 100000)")
    parser.add_argument("--per-file", type=int, default=50, help="exports per config file")
    args = parser.parse_args()
    rivet_ci = Path(sys.executable).with_name("rivet-ci")
    print(f"{'exports':>8} {'files':>6} {'document':>9} {'stdout RSS':>11} {'wall':>7} "
          f"{'CPU':>7} {'+output RSS':>12} {'wall':>7} {'CPU':>7}  target ≤ "
          f"{TARGET_BYTES / 1e9:.0f} GB")
    missed = []
    for count in args.counts:
        with tempfile.TemporaryDirectory(prefix="rivet-ci-bench-mem-") as tmp:
            root = Path(tmp)
            configs, facts_yaml = generate(root, count, args.per_file)
            facts = root / "facts.json"
            facts.write_text(json.dumps(yaml.load(facts_yaml.read_text(encoding="utf-8"),
                                                  Loader=yaml.CSafeLoader)), encoding="utf-8")
            facts_yaml.unlink()
            base = [str(rivet_ci), "plan", "pipelines", "--facts", "facts.json",
                    "--format", "json"]
            code, rss, wall, cpu = measure(base, str(root / "stdout.json"), root)
            size = (root / "stdout.json").stat().st_size
            (root / "stdout.json").unlink()
            code2, rss2, wall2, cpu2 = measure([*base, "--output", "plan.json"], os.devnull,
                                               root)
            if code or code2:
                raise SystemExit(f"rivet-ci plan exited with {code or code2}")
        print(f"{count:>8} {len(configs):>6} {size / 1e6:>7.1f}MB {rss / 1e6:>9.0f}MB "
              f"{wall:>6.2f}s {cpu:>6.2f}s {rss2 / 1e6:>10.0f}MB {wall2:>6.2f}s {cpu2:>6.2f}s")
        if count >= 100_000 and max(rss, rss2) > TARGET_BYTES:
            missed.append(f"N={count}: peak {max(rss, rss2) / 1e6:.0f} MB")
    print()
    print("target met" if not missed else "target missed:\n  " + "\n  ".join(missed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
