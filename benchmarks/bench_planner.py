"""Planner benchmark: how long planning N exports takes, phase by phase, against PyYAML's C loader.

Generates N exports spread over config files (50 per file by default; every mode, cursor shape and
chunking variant; ten source groups plus ungrouped exports) and a facts file covering most of them,
in a temporary directory. Then times, best of 3:

- load   — read and validate every config file (`load_config_file`)
- facts  — read and validate the facts file (`load_facts_file`)
- plan   — signals, scores and campaigns (`plan_configs`)
- json   — the plan document's UTF-8 text, built and serialised export by export as
           `rivet-ci plan --format json` writes it (`plan_document_chunks`)
- l+p+j  — load + plan + json: the planning work the 1 s target is set on
- all    — load + facts + plan + json: everything `rivet-ci plan --facts F --format json` does
- C yaml — `yaml.load(text, Loader=yaml.CSafeLoader)` on the same config and facts texts (bare
  parsing, nothing validated): the yardstick for the parsing-bound part of the work
- C gc-off — the same with the garbage collector paused, as rivet-ci's parser does: on a large
  facts file plain `yaml.load` spends most of its time in repeated collections

Targets: 10,000 exports in under 1 s of l+p+j, and all at most 3× the C loader time (checked
against the stricter C gc-off time).

    .venv/bin/python benchmarks/bench_planner.py              # N = 1,000 and 10,000
    .venv/bin/python benchmarks/bench_planner.py 50000 --per-file 100
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from rivet_ci.adapters.files import load_config_file, load_facts_file
from rivet_ci.cli.runtime import tune_gc
from rivet_ci.core.config.loader import LoadedConfig
from rivet_ci.core.facts.loader import load_facts_text
from rivet_ci.core.formats.document import plan_document_chunks
from rivet_ci.core.plan.planner import FactsOrigin, plan_configs

T = TypeVar("T")
TARGET_SECONDS = 1.0
TARGET_RATIO = 3.0
GROUPS = 10

SOURCE = """source:
  type: postgres
  url_env: REPLICA_URL
  environment: replica
exports:
"""

# One export per variant, cycled; `{n}` is the export's number.
VARIANTS = (
    """  - name: full_{n}
    table: public.t_{n}
    mode: full
    format: parquet
    destination:
      type: local
""",
    """  - name: incr_{n}
    table: public.t_{n}
    mode: incremental
    cursor_column: updated_at
    format: parquet
    destination:
      type: local
""",
    """  - name: coalesce_{n}
    query: SELECT id, updated_at, created_at FROM public.t_{n}
    mode: incremental
    cursor_column: updated_at
    incremental_cursor_mode: coalesce
    cursor_fallback_column: created_at
    reconcile_required: true
    format: parquet
    destination:
      type: local
""",
    """  - name: chunked_{n}
    table: public.t_{n}
    mode: chunked
    chunk_column: id
    chunk_size: 100000
    chunk_checkpoint: true
    parallel: 4
    format: parquet
    destination:
      type: local
""",
    """  - name: dense_{n}
    query: SELECT ROW_NUMBER() OVER (ORDER BY id) AS rn, * FROM public.t_{n}
    mode: chunked
    chunk_column: rn
    format: parquet
    destination:
      type: local
""",
    """  - name: keyset_{n}
    table: public.t_{n}
    mode: chunked
    chunk_by_key: id
    chunk_size: 50000
    format: parquet
    destination:
      type: local
""",
    """  - name: bydays_{n}
    table: public.t_{n}
    mode: chunked
    chunk_column: created_at
    chunk_by_days: 7
    format: parquet
    destination:
      type: local
""",
    """  - name: window_{n}
    table: public.t_{n}
    mode: time_window
    time_column: viewed_at
    days_window: 3
    format: parquet
    destination:
      type: local
""",
)


def export_text(n: int) -> str:
    text = VARIANTS[n % len(VARIANTS)].format(n=n)
    if n % 5:  # four exports in five share one of the source groups
        text += f"    source_group: replica_{n % GROUPS}\n"
    return text


# The column facts a live capture records for each variant: the export's range column (and the
# fallback column of a coalesce cursor).
COLUMNS = (
    (),
    ("updated_at: {{indexed: true, min: '2021-01-01 00:00:00', max: '2026-11-29 05:00:00'}}",),
    ("updated_at: {{indexed: true, min: '2021-01-01 00:00:00', max: '2026-11-29 05:00:00'}}",
     "created_at: {{indexed: false, min: '2021-01-01', max: '2026-11-29'}}"),
    ("id: {{indexed: {indexed}, min: '1', max: '{high}'}}",),
    ("rn: {{indexed: false}}",),
    ("id: {{indexed: {indexed}, min: '1', max: '{high}'}}",),
    ("created_at: {{indexed: true, min: '2021-01-01 00:00:00', max: '2026-11-29 05:00:00'}}",),
    ("viewed_at: {{indexed: true, min: '2026-11-26 00:00:00', max: '2026-11-29 05:00:00'}}",),
)


def facts_entry(n: int) -> str | None:
    if n % 13 == 0:  # some exports have no entry: planned with low confidence
        return None
    variant = n % len(VARIANTS)
    name = VARIANTS[variant].split("name: ", 1)[1].split("\n", 1)[0].format(n=n)
    rows = (n * 7919) % 60_000_000
    lines = [f"  {name}:", f"    row_estimate: {rows}", f"    avg_row_bytes: {64 + n % 400}",
             "    max_connections: 100"]
    if COLUMNS[variant]:
        lines.append("    columns:")
        lines.extend("      " + c.format(indexed=str(n % 3 > 0).lower(), high=rows + n)
                     for c in COLUMNS[variant])
    if n % 4 == 0:
        lines.append("    history:")
        lines.extend(f"      - {{status: {'failed' if (n + i) % 6 == 0 else 'success'}, "
                     f"duration_ms: {120_000 + 1000 * i}, retries: {i % 2}}}" for i in range(5))
    return "\n".join(lines) + "\n"


def generate(root: Path, count: int, per_file: int) -> tuple[list[Path], Path]:
    configs: list[Path] = []
    for start in range(0, count, per_file):
        path = root / "pipelines" / f"domain_{start // per_file:04d}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(SOURCE + "\n".join(export_text(n) for n in
                                           range(start, min(start + per_file, count))))
        configs.append(path)
    entries = [e for n in range(count) if (e := facts_entry(n)) is not None]
    facts = root / "facts.yaml"
    facts.write_text("format: rivet-ci-facts/1\ncaptured_at: '2026-11-29T06:00:00Z'\n"
                     "exports:\n" + "".join(entries))
    return configs, facts


def best_of(runs: int, fn: Callable[[], T]) -> tuple[float, T]:
    best, result = float("inf"), None
    for _ in range(runs):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    assert result is not None
    return best, result


def measure(count: int, per_file: int, runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="rivet-ci-bench-") as tmp:
        root = Path(tmp)
        config_paths, facts_path = generate(root, count, per_file)

        def load() -> list[LoadedConfig]:
            return [load_config_file(p, root=root, environ={}) for p in config_paths]

        t_load, configs = best_of(runs, load)
        t_facts, (facts, facts_problems) = best_of(
            runs, lambda: load_facts_file(facts_path, root=root))
        # The same facts as JSON (what `rivet-ci facts` writes by default): json.loads is C.
        facts_json = json.dumps(yaml.safe_load(facts_path.read_text(encoding="utf-8")))
        t_facts_json, _ = best_of(runs, lambda: load_facts_text("facts.json", facts_json))
        origin = FactsOrigin(kind="file", path="facts.yaml")
        t_plan, plan = best_of(runs, lambda: plan_configs(configs, facts, origin, facts_problems))
        t_json, json_bytes = best_of(runs, lambda: sum(len(chunk) for chunk in plan_document_chunks(
            plan, generated_at="2026-11-29T12:00:00Z", version="bench")))
        texts = [p.read_text() for p in [*config_paths, facts_path]]
        t_c, _ = best_of(runs, lambda: [yaml.load(t, Loader=yaml.CSafeLoader) for t in texts])
        collecting = gc.isenabled()
        gc.disable()
        try:
            t_c_nogc, _ = best_of(runs, lambda: [yaml.load(t, Loader=yaml.CSafeLoader)
                                                 for t in texts])
        finally:
            if collecting:  # restore what the run had, not the default
                gc.enable()

    planned = len(plan.exports)
    errors = [p for p in plan.all_problems if p.severity == "error"]
    if planned != count or errors:  # the benchmark must plan valid input, or it measures nothing
        raise SystemExit(f"benchmark input is wrong: planned {planned}/{count}, "
                         f"first error: {errors[0].render() if errors else None}")
    work = t_load + t_plan + t_json
    total = work + t_facts
    return {"n": count, "files": len(config_paths), "load": t_load, "facts": t_facts,
            "plan": t_plan, "json": t_json, "work": work, "total": total, "c_yaml": t_c,
            "c_nogc": t_c_nogc, "ratio": total / t_c, "ratio_nogc": total / t_c_nogc,
            "json_bytes": json_bytes, "facts_json": t_facts_json}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("counts", nargs="*", type=int, default=[1_000, 10_000],
                        help="numbers of exports to plan (default: 1000 10000)")
    parser.add_argument("--per-file", type=int, default=50, help="exports per config file")
    parser.add_argument("--runs", type=int, default=3, help="repetitions; the best is reported")
    args = parser.parse_args()
    # Measure the program as `rivet-ci` runs it: the CLI turns the cyclic GC off at start-up.
    tune_gc()

    header = (f"{'exports':>8} {'files':>6} {'load':>8} {'facts':>8} {'plan':>8} {'json':>8} "
              f"{'l+p+j':>8} {'all':>8} {'C yaml':>8} {'C gc-off':>8} {'all/C':>7}")
    print(header)
    print("-" * len(header))
    missed = []
    for count in args.counts:
        r = measure(count, args.per_file, args.runs)
        print(f"{r['n']:>8} {r['files']:>6} " + " ".join(
            f"{r[k]:>7.3f}s" for k in ("load", "facts", "plan", "json", "work", "total", "c_yaml",
                                       "c_nogc"))
            + f" {r['ratio_nogc']:>6.2f}×  (all / C yaml {r['ratio']:.2f}×; document "
              f"{r['json_bytes'] / 1e6:.1f} MB; facts as JSON {r['facts_json']:.3f}s)")
        if r["ratio_nogc"] > TARGET_RATIO:
            missed.append(f"N={count}: all is {r['ratio_nogc']:.2f}× the C loader (target ≤ "
                          f"{TARGET_RATIO:.0f}×)")
        if count == 10_000 and r["work"] >= TARGET_SECONDS:
            missed.append(f"N=10000: l+p+j {r['work']:.3f} s (target < {TARGET_SECONDS:.0f} s)")
    print()
    print("targets met" if not missed else "targets missed:\n  " + "\n  ".join(missed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
