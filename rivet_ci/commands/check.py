"""`rivet-ci check`: validate rivet configs only (no planning), every problem at once.

Exit 0 when no config has an error (notes and warnings do not count), 2 otherwise. The rules
are the ones every other command applies when it loads a config (docs/configs.md).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rivet_ci import RIVET_VERSION
from rivet_ci.commands.context import Context
from rivet_ci.commands.options import add_config_arguments, parse_params, warn_unused_params
from rivet_ci.commands.plan import load_configs
from rivet_ci.core.config.rules import rivet_code, rule_tag
from rivet_ci.exit_codes import OK, USAGE_ERROR


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("check", help="validate rivet configs (no planning)",
                       description=f"Check rivet configs as rivet {RIVET_VERSION} loads them: "
                                   "schema, YAML typing and every load-time rule "
                                   "(docs/configs.md).")
    p.add_argument("configs", nargs="+", type=Path, metavar="CONFIG",
                   help="config files, or directories searched for *.yaml / *.yml")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text (one problem a line) or json (default: text)")
    add_config_arguments(p)


def run(args: argparse.Namespace, ctx: Context) -> int:
    params = parse_params(args.params)
    configs = load_configs(args.configs, ctx, args=args)
    warn_unused_params(params, configs, ctx.stderr)
    problems = [p for c in configs for p in c.problems]
    errors = sum(1 for p in problems if p.severity == "error")
    if args.format == "json":
        document = {
            "format": "rivet-ci-check/1",
            "configs": [c.path for c in configs],
            "errors": errors,
            "problems": [{"file": p.file, "line": p.line, "key": p.field, "rule": p.rule,
                          "code": rivet_code(p.rule), "severity": p.severity,
                          "message": p.message} for p in problems],
        }
        ctx.stdout.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    else:
        for p in problems:
            ctx.stdout.write(f"{p.severity}: {p.render()}{rule_tag(p.rule)}\n")
        ctx.stdout.write(f"Checked {len(configs)} config file(s): {errors} error(s), "
                         f"{len(problems) - errors} note(s)/warning(s).\n")
    return USAGE_ERROR if errors else OK
