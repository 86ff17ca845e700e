"""`rivet-ci facts`: capture a facts file (`rivet-ci-facts/1`) from the live sources.

Run by a trusted job that holds the database secrets; pull-request jobs then plan against the file
with `rivet-ci plan --facts` and need no secrets.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from rivet_ci.commands.context import Context
from rivet_ci.commands.live import (
    add_live_arguments,
    capture_live_catalog,
    collect_live,
)
from rivet_ci.commands.options import add_config_arguments
from rivet_ci.commands.plan import load_configs
from rivet_ci.core.common.text import plural
from rivet_ci.exit_codes import OK, USAGE_ERROR
from rivet_ci.output.sink import write_output


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("facts", help="capture a facts file from the live sources",
                       description="Observe every export on its source (read-only EXPLAIN and "
                                   "bounded probes) and write a rivet-ci-facts/1 file, with "
                                   "the catalog of every source the configs name.")
    p.add_argument("configs", nargs="+", type=Path, metavar="CONFIG",
                   help="config files, or directories searched for rivet *.yaml / *.yml")
    p.add_argument("--output", type=Path, metavar="FILE",
                   help="write here (.yaml/.yml → YAML, else JSON); default: stdout as JSON")
    g = p.add_argument_group("source catalog (docs/facts.md#the-source-catalog)")
    g.add_argument("--catalog-schema", action="append", metavar="SCHEMA", dest="catalog_schemas",
                   help="also capture every relation of this schema (MySQL: database) of each "
                        "source (repeatable; default: the schemas the configs name)")
    g.add_argument("--no-catalog", action="store_true",
                   help="capture per-export facts only, no source catalog")
    add_live_arguments(p)
    add_config_arguments(p)


def run(args: argparse.Namespace, ctx: Context) -> int:
    configs = load_configs(args.configs, ctx, not_configs=(args.output,), args=args)
    facts = collect_live(configs, args, ctx)
    if not args.no_catalog:
        facts = facts.model_copy(update={"catalog": capture_live_catalog(configs, args, ctx)})
    # Absent means unknown in the facts contract, so unknowns are left out, not written as null.
    data = {"format": facts.format,
            **facts.model_dump(mode="json", exclude_none=True, exclude_defaults=True)}
    output: Path | None = args.output
    if output is not None and output.suffix in (".yaml", ".yml"):
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    else:
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if output is None:
        ctx.stdout.write(text)
    else:
        target = output if output.is_absolute() else ctx.cwd / output
        write_output(target, text, ctx.redact, root=ctx.cwd)
    failed = [(c.path, e.name, entry.preflight_error) for c in configs for e in c.exports
              if (entry := facts.for_export(c.path, e.name)) and entry.preflight_error]
    total = sum(len(c.exports) for c in configs)
    for path, name, error in failed[:20]:
        ctx.stderr.write(f"rivet-ci: warning: {path}: {name}: preflight failed: {error}\n")
    ctx.stderr.write(f"rivet-ci: observed {total - len(failed):,}/{plural(total, 'export')}"
                     + (f" → {output}" if output else "") + "\n")
    errors = [p for c in configs for p in c.problems if p.severity == "error"]
    for problem in errors:
        ctx.stderr.write(f"rivet-ci: error: {problem.render()}\n")
    return USAGE_ERROR if errors else OK

