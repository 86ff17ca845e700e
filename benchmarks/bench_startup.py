"""Start-up benchmark: whole `rivet-ci` processes against the floor of a bare Python start.

A CLI run in CI pays its start-up on every job. The floor is a process that imports what any
rivet-ci command needs (`python -c "import yaml, pydantic"`); a command should import only what
it uses on top of that (SQLAlchemy and drivers only for live preflight, Jinja only for comments).

Measures the median of N runs (default 15) of each command, side by side with the floor, on the
bundled demo:

    .venv/bin/python benchmarks/bench_startup.py
    .venv/bin/python benchmarks/bench_startup.py --runs 31

Target: `rivet-ci --version` at most 2x the floor.

rivet-ci is measured as it is shipped, with its bytecode compiled first (`shipped.py`: pip does
it at install time; an editable checkout under `PYTHONDONTWRITEBYTECODE=1` would otherwise
compile the package from source in every process, a cost no installed rivet-ci pays).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shipped import compile_package  # rivet-ci's bytecode, as an install has it

REPO = Path(__file__).resolve().parent.parent
TARGET_RATIO = 2.0


def median_seconds(argv: list[str], runs: int) -> float:
    times: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, cwd=REPO, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    compile_package()
    py = sys.executable
    cli = [py, "-m", "rivet_ci"]
    with tempfile.TemporaryDirectory() as tmp:
        out = str(Path(tmp) / "plan.json")
        cases = {
            "floor: python -c 'import yaml, pydantic'": [py, "-c", "import yaml, pydantic"],
            "rivet-ci --version": [*cli, "--version"],
            "rivet-ci --help": [*cli, "--help"],
            "rivet-ci plan (demo, --facts)": [
                *cli, "plan", "examples/pipelines", "--facts", "examples/facts.yaml",
                "--output", out],
        }
        results = {name: median_seconds(argv, args.runs) for name, argv in cases.items()}
    floor = next(iter(results.values()))
    print(f"median of {args.runs} runs each")
    for name, seconds in results.items():
        print(f"  {name:<44} {seconds * 1000:7.1f} ms  {seconds / floor:5.2f}x floor")
    version_ratio = results["rivet-ci --version"] / floor
    verdict = "ok" if version_ratio <= TARGET_RATIO else "OVER TARGET"
    print(f"--version: {version_ratio:.2f}x the floor (target <= {TARGET_RATIO}x): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
