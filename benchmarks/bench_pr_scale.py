"""Pull-request gate at monorepo scale: a one-file PR in a large repository, whole processes.

Builds a git repository in a temporary directory — 2,000 config files of 50 exports each
(100,000 exports, every mode, ten source groups spanning many files) and a facts file (JSON)
covering them — commits it on `main`, and a branch `pr` changing ONE file (a chunk size, a mode
and a source group change, one export added, one removed; as `bench_pr_diff.py` does). Then runs,
each as its own `rivet-ci` process, best of `--repeat` wall time and the peak RSS of that run:

- plan      — `rivet-ci plan rivet --facts F --format json` of the head tree (the cold full
              plan the targets are set against; stdout to /dev/null);
- diff      — `rivet-ci diff --base main --head pr --facts F` (the comment on stdout), no cache;
- diff cold — the same with `--cache-dir` pointing at an empty directory (the first run of a
              workflow: fills the cache);
- diff warm — the same with the cache the cold run left (a later push of the same PR, or
              another PR once `actions/cache` restored the directory).

Wall time and CPU time (user + system, steadier on a shared machine) are both reported; the
verdict is on CPU time. The peak RSS is the process's own (measured from a small parent).

Targets (issue 11): `diff` of a one-file PR at most 0.5x the cold full plan, and at most 1 GB
peak RSS. The comment printed by every diff variant must be identical (checked).

    .venv/bin/python benchmarks/bench_pr_scale.py
    .venv/bin/python benchmarks/bench_pr_scale.py --files 200 --per-file 50 --repeat 1
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_pr_diff import config_text, facts_exports, git

_AGE = re.compile(r"captured [^·]*? ago")
TARGET_RATIO = 0.5
TARGET_RSS_MB = 1024


def facts_json(files: int, per_file: int) -> str:
    return json.dumps({"format": "rivet-ci-facts/1", "captured_at": "2026-11-29T06:00:00Z",
                       "exports": facts_exports(files, per_file)})


def build_repo(root: Path, files: int, per_file: int) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for file in range(files):
        path = root / "rivet" / f"domain_{file:04d}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(config_text(file, per_file), encoding="utf-8")
    facts = root.parent / "facts.json"
    facts.write_text(facts_json(files, per_file), encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    git(root, "checkout", "-q", "-b", "pr", "main")
    changed = root / "rivet" / f"domain_{files // 2:04d}.yaml"
    changed.write_text(config_text(files // 2, per_file, changed=True), encoding="utf-8")
    git(root, "commit", "-q", "-am", "change one file")
    return facts


# Runs the command and writes its own rusage: a child's peak RSS must be measured from a small
# parent, since Linux carries the pre-exec image's peak (this benchmark's, after building the
# repository) into the child's ru_maxrss.
_MEASURE = """
import json, os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:], stdout=sys.stdout, stderr=sys.stderr)
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as out:
    json.dump({"code": os.waitstatus_to_exitcode(status), "maxrss": usage.ru_maxrss,
               "cpu": usage.ru_utime + usage.ru_stime}, out)
"""


def run_process(command: list[str], cwd: Path) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak RSS in MB, stdout) of one whole process."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "usage.json"
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", _MEASURE, str(report), *command], cwd=cwd,
                              capture_output=True, check=False)
        seconds = time.perf_counter() - started
        usage = json.loads(report.read_text(encoding="utf-8"))
    if usage["code"] not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed ({usage['code']}): "
                         f"{done.stderr.decode('utf-8', 'replace')}")
    return seconds, float(usage["cpu"]), usage["maxrss"] / 1024, done.stdout.decode("utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--per-file", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rivet_ci = shutil.which("rivet-ci", path=str(Path(sys.executable).parent)) or "rivet-ci"
    with tempfile.TemporaryDirectory(prefix="rivet-ci-bench-") as tmp:
        repo = Path(tmp) / "repo"
        started = time.perf_counter()
        facts = build_repo(repo, args.files, args.per_file)
        print(f"repository: {args.files:,} config files, {args.files * args.per_file:,} "
              f"exports, one file changed on `pr`; built in "
              f"{time.perf_counter() - started:.1f} s")
        git(repo, "checkout", "-q", "pr")
        cache = Path(tmp) / "cache"
        diff = [rivet_ci, "diff", "--base", "main", "--head", "pr", "--facts", str(facts)]
        runs: list[tuple[str, list[str], bool]] = [
            ("plan", [rivet_ci, "plan", "rivet", "--facts", str(facts), "--format", "json"],
             False),
            ("diff", diff, False),
            ("diff cold", [*diff, "--cache-dir", str(cache)], True),
            ("diff warm", [*diff, "--cache-dir", str(cache)], False),
        ]
        print(f"{'command':<10} {'wall, best of ' + str(args.repeat):>16} {'vs plan':>8} "
              f"{'CPU, best':>10} {'vs plan':>8} {'peak RSS':>10}")
        plan_seconds = plan_cpu = 0.0
        comments: set[str] = set()
        for label, command, clear_cache in runs:
            best, best_cpu, peak = float("inf"), float("inf"), 0.0
            for _ in range(args.repeat):
                if clear_cache:
                    shutil.rmtree(cache, ignore_errors=True)
                seconds, cpu, rss, text = run_process(command, repo)
                best, best_cpu, peak = min(best, seconds), min(best_cpu, cpu), max(peak, rss)
                if label != "plan":
                    # The marker carries a timestamp and the facts line the facts' age (which
                    # may tick over between runs): compare the rest of the comment.
                    comments.add(_AGE.sub("captured ... ago", "\n".join(
                        line for line in text.splitlines() if "rivet-ci:" not in line)))
            plan_seconds, plan_cpu = plan_seconds or best, plan_cpu or best_cpu
            verdict = ""
            if label != "plan":
                # On CPU time: wall time on a shared machine mostly measures the neighbours.
                ok = best_cpu <= TARGET_RATIO * plan_cpu and peak <= TARGET_RSS_MB
                verdict = "  ok" if ok else f"  misses {TARGET_RATIO}x / {TARGET_RSS_MB} MB"
            print(f"{label:<10} {best:>15.2f}s {best / plan_seconds:>7.2f}x {best_cpu:>9.2f}s "
                  f"{best_cpu / plan_cpu:>7.2f}x {peak:>7.0f} MB{verdict}")
        print("comment identical across diff runs:", "yes" if len(comments) == 1 else "NO")
        print("commands (in the repository, on branch pr):")
        for label, command, _ in runs:
            shown = " ".join(Path(c).name if c == rivet_ci else c for c in command)
            print(f"  {label:<10} {shown}")


if __name__ == "__main__":
    main()
