"""Redaction cost: a whole `rivet-ci plan` process on N exports, with and without secrets set.

Every byte rivet-ci writes passes the output sink, which masks the values of secret-looking
environment variables (in all their escaped forms). This benchmark runs the real CLI as a
separate process (`python -m rivet_ci plan DIR --facts F --format json --output OUT`) on the
inputs `bench_planner.py` generates, best of `--runs` by CPU time (user + system of the child
process: the machine may be shared, and CPU time is what redaction costs), in three
environments:

- `none`     — no secret-looking variable set: the sink has nothing to look for
- `secrets`  — a handful of secret-looking variables (`DB_PASSWORD`, `DEPLOY_KEY`, a token...)
- `secrets+` — the same plus 300 unrelated variables (a busy CI runner's environment)

The difference between `none` and `secrets` is what redaction costs; `secrets+` shows that the
number of environment variables does not multiply it.

    .venv/bin/python benchmarks/bench_redaction.py            # N = 10,000
    .venv/bin/python benchmarks/bench_redaction.py 20000 --runs 5
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_planner import generate

SECRETS = {
    "DB_PASSWORD": "s3cr3t-P@ss,word&<x>",
    "DEPLOY_KEY": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDeploy",
    "INPUT_GITHUB-TOKEN": "ghs_ActionsJobToken0123456789abcdefABCD",
    "ORDERS_REPLICA_URL": "postgresql://etl:Repl1ca!pw@replica.internal:5432/orders",
    "SLACK_WEBHOOK": "https://hooks.slack.example/services/T000/B000/XXXXXXXX",
    "GH_PAT": "ghp_0123456789abcdefghijABCDEFGHIJ012345",
}


def run_once(environ: dict[str, str], root: Path, facts: Path) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [sys.executable, "-m", "rivet_ci", "plan", str(root / "pipelines"), "--facts",
         str(facts), "--format", "json", "--output", str(root / "out.json")],
        env=environ, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("count", nargs="?", type=int, default=10_000)
    parser.add_argument("--per-file", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "PYTHONPATH")}
    crowd = {f"RUNNER_VAR_{i}": f"value-number-{i}-of-a-busy-runner" for i in range(300)}
    environments = {
        "none": base,
        "secrets": {**base, **SECRETS},
        "secrets+": {**base, **SECRETS, **crowd},
    }
    with tempfile.TemporaryDirectory(prefix="rivet-ci-bench-redact-") as tmp:
        root = Path(tmp)
        _, facts = generate(root, args.count, args.per_file)
        times = {name: min(run_once(env, root, facts) for _ in range(args.runs))
                 for name, env in environments.items()}
        size = (root / "out.json").stat().st_size
    print(f"{args.count:,} exports, plan.json {size / 1e6:.1f} MB, CPU seconds, best of "
          f"{args.runs}:")
    for name, seconds in times.items():
        print(f"  {name:9s} {seconds:6.2f} s")
    extra = times["secrets"] - times["none"]
    print(f"  redaction cost: {extra:+.2f} s ({100 * extra / times['secrets']:.0f} % of the "
          f"run with secrets)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
