"""Pull-request gate at monorepo scale: a one-file PR in a large repository, whole processes.

Builds a git repository in a temporary directory — 2,000 config files of 50 exports each
(100,000 exports, every mode, ten source groups) and a facts file (JSON) covering them — commits
it on `main`, and a branch `pr` changing ONE file (a chunk size, a mode and a source group
change, one export added, one removed; as `bench_pr_diff.py` does). Two layouts (`--scenario`):

- `shared`: every file has exports in all ten source groups (the worst case for a review that
  follows the change: the changed file's groups span every file, so every file is planned);
- `dirs`: source groups follow directories, as monorepos are laid out — replica k's exports
  live in its own tenth of the files (`rivet/replica_k/`); the change touches one replica's
  group and a new one, so a tenth of the files can be affected.

Then runs, each as its own `rivet-ci` process, best of `--repeat` wall time and the peak RSS:

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
peak RSS. The comment printed by every diff variant must be identical (checked), and so must the
comment of a run writing the plan document (`--output`: the same files planned, in full).

    .venv/bin/python benchmarks/bench_pr_scale.py
    .venv/bin/python benchmarks/bench_pr_scale.py --files 200 --per-file 50 --repeat 1
    .venv/bin/python benchmarks/bench_pr_scale.py --scenario dirs
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
from bench_pr_diff import GROUPS, config_text, facts_exports, git

_AGE = re.compile(r"captured [^·]*? ago")
TARGET_RATIO = 0.5
TARGET_RSS_MB = 1024
SCENARIOS = ("shared", "dirs")


def facts_json(files: int, per_file: int) -> str:
    return json.dumps({"format": "rivet-ci-facts/1", "captured_at": "2026-11-29T06:00:00Z",
                       "exports": facts_exports(files, per_file)})


def dirs_text(file: int, files: int, per_file: int, *, changed: bool = False) -> str:
    """`config_text` with every grouped export in its directory's replica (`replica_k`)."""
    own = f"replica_{replica_of(file, files)}"
    text = config_text(file, per_file, changed=changed)
    return re.sub(r"source_group: replica_\d+", f"source_group: {own}", text)


def replica_of(file: int, files: int) -> int:
    return file * GROUPS // files


def config_path(root: Path, file: int, files: int, scenario: str) -> Path:
    if scenario == "dirs":
        return root / "rivet" / f"replica_{replica_of(file, files)}" / f"domain_{file:04d}.yaml"
    return root / "rivet" / f"domain_{file:04d}.yaml"


def build_repo(root: Path, files: int, per_file: int, scenario: str = "shared") -> Path:
    def text(file: int, changed: bool = False) -> str:
        if scenario == "dirs":
            return dirs_text(file, files, per_file, changed=changed)
        return config_text(file, per_file, changed=changed)

    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    for file in range(files):
        path = config_path(root, file, files, scenario)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text(file), encoding="utf-8")
    facts = root.parent / "facts.json"
    facts.write_text(facts_json(files, per_file), encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    git(root, "checkout", "-q", "-b", "pr", "main")
    changed = config_path(root, files // 2, files, scenario)
    changed.write_text(text(files // 2, changed=True), encoding="utf-8")
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


Row = tuple[str, float, float, float, float, float, bool]  # label, wall, x, cpu, x, rss, ok


def run_scenario(scenario: str, args: argparse.Namespace, rivet_ci: str,
                 tmp: Path) -> tuple[list[Row], bool, list[tuple[str, list[str]]]]:
    """The rows of one layout, whether every comment was the same, and the commands."""
    repo = tmp / scenario / "repo"
    started = time.perf_counter()
    facts = build_repo(repo, args.files, args.per_file, scenario)
    print(f"{scenario}: {args.files:,} config files, {args.files * args.per_file:,} exports, "
          f"one file changed on `pr`; built in {time.perf_counter() - started:.1f} s",
          flush=True)
    git(repo, "checkout", "-q", "pr")
    cache = tmp / scenario / "cache"
    document = tmp / scenario / "plan.json"
    diff = [rivet_ci, "diff", "--base", "main", "--head", "pr", "--facts", str(facts)]
    runs: list[tuple[str, list[str], bool]] = [
        ("plan", [rivet_ci, "plan", "rivet", "--facts", str(facts), "--format", "json"],
         False),
        ("diff", diff, False),
        ("diff cold", [*diff, "--cache-dir", str(cache)], True),
        ("diff warm", [*diff, "--cache-dir", str(cache)], False),
        ("diff -o", [*diff, "--output", str(document)], False),
    ]
    rows: list[Row] = []
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
        # On CPU time: wall time on a shared machine mostly measures the neighbours.
        ok = best_cpu <= TARGET_RATIO * plan_cpu and peak <= TARGET_RSS_MB
        rows.append((label, best, best / plan_seconds, best_cpu, best_cpu / plan_cpu, peak, ok))
    shown = [(label, [Path(c).name if c == rivet_ci else c for c in command])
             for label, command, _ in runs]
    return rows, len(comments) == 1, shown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--per-file", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scenario", choices=(*SCENARIOS, "both"), default="both")
    args = parser.parse_args()
    rivet_ci = shutil.which("rivet-ci", path=str(Path(sys.executable).parent)) or "rivet-ci"
    chosen = SCENARIOS if args.scenario == "both" else (args.scenario,)
    results: dict[str, tuple[list[Row], bool, list[tuple[str, list[str]]]]] = {}
    with tempfile.TemporaryDirectory(prefix="rivet-ci-bench-") as tmp:
        for scenario in chosen:
            results[scenario] = run_scenario(scenario, args, rivet_ci, Path(tmp))
    print(f"\n{args.files:,} config files, {args.files * args.per_file:,} exports; wall best "
          f"of {args.repeat}; the verdict is on CPU time (target: diff <= {TARGET_RATIO}x "
          f"plan and <= {TARGET_RSS_MB} MB)")
    header = f"{'command':<10}"
    for scenario in chosen:
        header += (f" | {scenario + ': wall':>13} {'x':>5} {'CPU':>7} {'x':>5} {'RSS':>7}"
                   f" {'':>2}")
    print(header)
    labels = [row[0] for row in results[chosen[0]][0]]
    for i, label in enumerate(labels):
        line = f"{label:<10}"
        for scenario in chosen:
            _, wall, wall_x, cpu, cpu_x, rss, ok = results[scenario][0][i]
            verdict = "" if label == "plan" else ("ok" if ok else "no")
            line += (f" | {wall:>12.2f}s {wall_x:>4.2f}x {cpu:>6.2f}s {cpu_x:>4.2f}x "
                     f"{rss:>4.0f} MB {verdict:>2}")
        print(line)
    for scenario in chosen:
        print(f"{scenario}: comment identical across diff runs (with and without cache and "
              f"plan document):", "yes" if results[scenario][1] else "NO")
    print("commands (in the repository, on branch pr):")
    for label, command in results[chosen[0]][2]:
        print(f"  {label:<10} {' '.join(command)}")


if __name__ == "__main__":
    main()
