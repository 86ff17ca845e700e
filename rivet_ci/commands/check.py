"""`rivet-ci check`: validate rivet configs (no planning), every problem at once; with `--live`
or `--facts FILE`, also each export's type fidelity as `rivet check --type-report` computes it.

Exit 2 when any config has an error (notes and warnings do not count); else, with `--strict`,
1 when `rivet check --strict` would exit 1 (a column whose mapping it refuses,
`RIVET_TYPE_UNSAFE_MAPPING`); else 0. The rules are the ones every other command applies when it
loads a config (docs/configs.md); the type rules are rivet's (docs/compatibility.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rivet_ci import RIVET_VERSION
from rivet_ci.commands.context import Context
from rivet_ci.commands.live import add_connection_arguments
from rivet_ci.commands.options import add_config_arguments, parse_params, warn_unused_params
from rivet_ci.commands.plan import load_configs
from rivet_ci.core.config.loader import LoadedConfig
from rivet_ci.core.config.rules import rivet_code, rule_tag
from rivet_ci.core.facts.catalog_models import CatalogSource
from rivet_ci.core.fidelity.targets import TARGET_NAMES, Target
from rivet_ci.core.formats.document import dump_json
from rivet_ci.errors import UsageError
from rivet_ci.exit_codes import GATE_FAILED, OK, USAGE_ERROR


def _target(text: str) -> Target:
    try:
        return TARGET_NAMES[text.lower()]
    except KeyError:
        raise argparse.ArgumentTypeError(
            f"unknown target {text!r} (expected: bigquery (bq), duckdb (duck), snowflake (sf), "
            "clickhouse (ch))") from None


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("check", help="validate rivet configs (no planning); type fidelity",
                       description=f"Check rivet configs as rivet {RIVET_VERSION} loads them: "
                                   "schema, YAML typing and every load-time rule "
                                   "(docs/configs.md). With --live or --facts, also each "
                                   "column's type mapping as `rivet check --type-report` "
                                   "reports it (docs/compatibility.md#type-fidelity).")
    p.add_argument("configs", nargs="+", type=Path, metavar="CONFIG",
                   help="config files, or directories searched for *.yaml / *.yml")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text (one problem a line) or json (default: text)")
    add_config_arguments(p)
    g = p.add_argument_group("type fidelity (rivet check --type-report --strict --target)")
    source = g.add_mutually_exclusive_group()
    source.add_argument("--live", action="store_true",
                        help="read the column types from the sources: one catalog read per "
                             "source (never a row, never an export's query)")
    source.add_argument("--facts", type=Path, metavar="FILE",
                        help="read the column types from a facts file's catalog "
                             "(rivet-ci facts)")
    g.add_argument("--strict", action="store_true",
                   help="exit 1 when `rivet check --strict` would: a column whose mapping it "
                        "refuses (RIVET_TYPE_UNSAFE_MAPPING)")
    g.add_argument("--target", type=_target, metavar="TARGET",
                   help="the warehouse the files are loaded into: bigquery, duckdb, snowflake "
                        "or clickhouse (bq, duck, sf, ch)")
    g.add_argument("--type-report", action="store_true",
                   help="text: list every column's mapping, not only the unsafe and unknown")
    add_connection_arguments(p.add_argument_group("--live: the connection"))


def run(args: argparse.Namespace, ctx: Context) -> int:
    typed = args.live or args.facts is not None
    if not typed and (args.strict or args.target or args.type_report):
        raise UsageError("--strict, --target and --type-report need the column types: give "
                         "--live or --facts FILE")
    params = parse_params(args.params)
    configs = load_configs(args.configs, ctx, args=args,
                           not_configs=(args.facts,) if args.facts else ())
    warn_unused_params(params, configs, ctx.stderr)
    problems = [p for c in configs for p in c.problems]
    errors = sum(1 for p in problems if p.severity == "error")
    types = _type_report(configs, args, ctx) if typed else None
    if args.format == "json":
        document: dict[str, object] = {
            "format": "rivet-ci-check/1",
            "configs": [c.path for c in configs],
            "errors": errors,
            "problems": [{"file": p.file, "line": p.line, "key": p.field, "rule": p.rule,
                          "code": rivet_code(p.rule), "severity": p.severity,
                          "message": p.message} for p in problems],
        }
        if types is not None:
            document["types"] = types[0]
        ctx.stdout.write(dump_json(document))
    else:
        for p in problems:
            ctx.stdout.write(f"{p.severity}: {p.render()}{rule_tag(p.rule)}\n")
        ctx.stdout.write(f"Checked {len(configs)} config file(s): {errors} error(s), "
                         f"{len(problems) - errors} note(s)/warning(s).\n")
        if types is not None:
            ctx.stdout.writelines(f"{line}\n" for line in types[1])
    if errors:
        return USAGE_ERROR
    if args.strict and types is not None and types[2]:
        return GATE_FAILED
    return OK


def _type_report(configs: list[LoadedConfig], args: argparse.Namespace, ctx: Context,
                 ) -> tuple[dict[str, object], list[str], int]:
    """(the JSON `types` section, the text lines, the columns `--strict` refuses)."""
    from rivet_ci.core.fidelity.report import type_report
    from rivet_ci.core.formats.type_report import types_document, types_text

    catalog: list[CatalogSource]
    if args.live:
        from rivet_ci.commands.live import capture_live_catalog

        catalog = capture_live_catalog(configs, args, ctx, index_ends=False)
        origin = "live"
    else:
        from rivet_ci.commands.plan import load_facts_arg

        facts, _, _ = load_facts_arg(args.facts, ctx, strict=True)
        catalog = list(facts.catalog) if facts is not None else []
        origin = f"facts {args.facts.as_posix()}"
        if not catalog:
            ctx.stderr.write(f"rivet-ci: warning: {args.facts}: the facts have no catalog; "
                             "every export's types are unknown\n")
    report = type_report(((c.path, c.source, e) for c in configs for e in c.exports), catalog,
                         target=args.target)
    lines = {(c.path, name): line for c in configs for name, line in c.export_lines.items()}
    document = types_document(report, origin=origin, strict=args.strict, lines=lines)
    text = types_text(report, origin=origin, strict=args.strict, lines=lines,
                      every_column=args.type_report)
    return document, text, len(report.refused)
