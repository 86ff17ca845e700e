"""`rivet-ci plan`: plan config files against a facts file (or live facts) and print the plan."""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, NoReturn

from rivet_ci import __version__
from rivet_ci.adapters.files import (
    PathResolver,
    WalkSkips,
    expand_config_paths,
    is_facts_file,
    load_config_file,
    load_facts_file,
    resolved_path,
)
from rivet_ci.commands.context import Context
from rivet_ci.commands.live import add_live_arguments, collect_live, with_state_history
from rivet_ci.commands.options import (
    add_config_arguments,
    parse_params,
    path_checker,
    warn_unused_params,
)
from rivet_ci.commands.progress import SlowNotice
from rivet_ci.core.common.fast_model import construct
from rivet_ci.core.common.problems import Problem
from rivet_ci.core.common.text import plural
from rivet_ci.core.config.loader import LoadedConfig
from rivet_ci.core.facts.models import FactsFile
from rivet_ci.core.formats.document import (
    add_to_summary,
    config_chunks,
    document_chunks,
    document_head,
    dump_json,
    empty_summary,
    plan_document_chunks,
    streamed_memo,
)
from rivet_ci.core.formats.pretty import NO_FACTS_NOTE, problem_lines, render_pretty
from rivet_ci.core.formats.rivet_artifact import rivet_document
from rivet_ci.core.plan.planner import (
    ConfigPlan,
    FactsOrigin,
    Plan,
    chosen_exports,
    plan_config,
    plan_configs,
)
from rivet_ci.errors import UsageError
from rivet_ci.exit_codes import OK, USAGE_ERROR
from rivet_ci.output.sink import write_chunks, write_output


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("plan", help="plan rivet export configs and print the prioritization",
                       description="Plan rivet export configs: source-aware priority scores, "
                                   "waves, isolation flags and the campaign view.")
    p.add_argument("configs", nargs="+", type=Path, metavar="CONFIG",
                   help="config files, or directories searched for rivet *.yaml / *.yml "
                        "(hidden and virtual-env directories skipped)")
    p.add_argument("--facts", type=Path, metavar="FILE",
                   help="facts file (rivet-ci-facts/1, JSON or YAML) captured by "
                        "`rivet-ci facts`, or a directory of rivet plan artifacts "
                        "(default: none — low confidence)")
    p.add_argument("--export", action="append", metavar="NAME", dest="exports",
                   help="print only this export, planned with its whole campaign "
                        "(repeatable; default: every export)")
    p.add_argument("--format", choices=("pretty", "json", "rivet-json"), default="pretty",
                   help="what to print on stdout (default: pretty); json is rivet-ci-plan/1, "
                        "rivet-json is rivet's own `rivet plan --format json` artifact")
    p.add_argument("--output", type=Path, metavar="FILE",
                   help="also write the JSON plan to FILE: rivet's artifact with --format "
                        "rivet-json, else rivet-ci-plan/1 (default: none)")
    p.add_argument("--live", action="store_true",
                   help="collect facts now from the live sources (instead of --facts; "
                        "default: off)")
    add_live_arguments(p)
    add_config_arguments(p)


def load_facts_arg(path: Path | None, ctx: Context, *, strict: bool = False,
                   ) -> tuple[FactsFile | None, list[Problem], FactsOrigin]:
    """The facts file; with `strict` (diff, action), one that cannot be read or parsed at all
    is a `UsageError`: a gate must not judge a pull request on facts it could not read."""
    # The origin is built from values of its fields' types (`fast_model.construct`): validating
    # it would build its validator, the only one a `plan` run would build besides the facts
    # models' (which a plain facts file does without), and load pydantic's plugin machinery.
    if path is None:
        return None, [], construct(FactsOrigin, {"kind": "none"})
    facts, problems = load_facts_file(path if path.is_absolute() else ctx.cwd / path,
                                      root=ctx.cwd)
    if strict and facts is None:
        raise_facts_error(problems)
    origin = construct(FactsOrigin, {"kind": "file", "path": path.as_posix(),
                                     "captured_at": facts.captured_at if facts else None})
    return facts, problems, origin


def raise_facts_error(problems: list[Problem]) -> NoReturn:
    listing = "\n".join(f"  {p.render()}" for p in problems)
    raise UsageError(f"facts file unusable — nothing was planned:\n{listing}")


def facts_errors(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == "error"]


def config_paths(paths: list[Path], ctx: Context, *,
                 not_configs: tuple[Path | None, ...] = (),
                 resolver: PathResolver | None = None) -> list[Path]:
    """The config files named or found in directories; `not_configs` (the facts file, the
    output) are skipped when a directory holds them. `resolver`: the run's, for `ctx.cwd`."""
    resolver = PathResolver(ctx.cwd) if resolver is None else resolver
    skip = {resolved for p in not_configs
            if p is not None and (resolved := resolved_path(ctx.cwd / p)) is not None}
    skips = WalkSkips()
    expanded = [p for p in expand_config_paths((ctx.cwd / p for p in paths), skips)
                if (resolved := resolver.resolve(p)) is None or resolved not in skip]
    if skips.directories or skips.not_rivet:
        parts = []
        if skips.directories:
            parts.append(plural(len(skips.directories), "hidden or virtual-env directory",
                                "hidden or virtual-env directories"))
        if skips.not_rivet:
            parts.append(f"{plural(len(skips.not_rivet), 'YAML file')} without a top-level "
                         "`source:` or `exports:`")
        ctx.stderr.write(f"rivet-ci: skipped {' and '.join(parts)} (name a file to plan it "
                         "anyway)\n")
    # A facts document is never a config, even when a directory or glob sweeps it in. The walk
    # has told for each file it found; only files named on the command line are read here.
    walked = skips.facts_document
    facts_documents = [p for p in expanded
                       if (walked[p] if p in walked else is_facts_file(p))]
    for path in facts_documents:
        ctx.stderr.write(f"rivet-ci: {resolver.display(path)} is a facts document, "
                         "not planned as a config\n")
    expanded = [p for p in expanded if p not in facts_documents]
    if not expanded:
        raise UsageError("no config files found: pass YAML files or directories holding them")
    return expanded


def load_configs(paths: list[Path], ctx: Context, *,
                 not_configs: tuple[Path | None, ...] = (),
                 args: argparse.Namespace | None = None) -> list[LoadedConfig]:
    """Load the configs named or found in directories; `not_configs` (the facts file, the
    output) are skipped when a directory holds them."""
    resolver = PathResolver(ctx.cwd)
    expanded = config_paths(paths, ctx, not_configs=not_configs, resolver=resolver)
    params = parse_params(getattr(args, "params", None))
    exists = path_checker(args, ctx.cwd) if args is not None else None
    configs = [load_config_file(p, root=resolver, environ=ctx.environ, params=params,
                                path_exists=exists) for p in expanded]
    if args is not None and args.command != "check":
        warn_unused_params(params, configs, ctx.stderr)
    return configs


def unknown_exports(only: frozenset[str] | None, known: set[str]) -> list[Problem]:
    """A problem for each `--export` name no config defines."""
    return [Problem(file="<command line>", field="--export",
                    message=f"no valid export named {name!r} in the given configs")
            for name in sorted((only or frozenset()) - known)]


def write_document(plan: Plan, output: Path | None, fmt: str, ctx: Context) -> None:
    target = None if output is None else output if output.is_absolute() else ctx.cwd / output
    if fmt == "rivet-json":
        text = dump_json(rivet_document(plan.configs, created_at=ctx.now()))
        if target is not None:
            write_output(target, text, ctx.redact, root=ctx.cwd)
        ctx.stdout.write(text)
        return
    if fmt == "json" or target is not None:
        # Streamed export by export, redacted once per chunk, to the file and/or stdout.
        write_chunks(target, plan_document_chunks(plan, generated_at=ctx.timestamp(),
                                                  version=__version__),
                     ctx.redact, root=ctx.cwd, stream=ctx.stdout if fmt == "json" else None)
    if fmt == "pretty":
        ctx.stdout.write(render_pretty(plan))


def run(args: argparse.Namespace, ctx: Context) -> int:
    # On a terminal (or with RIVET_CI_PROGRESS=1), a line once planning has taken a second;
    # `finish` then says how long it took.
    notice = SlowNotice(ctx.stderr, "planning", done_line=False,
                        enabled=ctx.interactive or ctx.environ.get("RIVET_CI_PROGRESS") == "1")
    try:
        return _run(args, ctx)
    finally:
        notice.close()


def _run(args: argparse.Namespace, ctx: Context) -> int:
    started = time.monotonic()
    if args.live and args.facts:
        raise UsageError("give either --facts FILE or --live, not both")
    if args.format == "json" and not args.live and not args.state_url:
        return run_streamed(args, ctx, started)
    configs = load_configs(args.configs, ctx, not_configs=(args.facts, args.output), args=args)
    if args.live:
        facts: FactsFile | None = collect_live(configs, args, ctx)
        problems: list[Problem] = []
        origin = FactsOrigin(kind="live", captured_at=facts.captured_at if facts else None)
    else:
        facts, problems, origin = load_facts_arg(args.facts, ctx)
        if args.state_url:
            facts, notes = with_state_history(facts, configs, args.state_url, root=ctx.cwd,
                                              environ=ctx.environ)
            for note in notes:
                ctx.stderr.write(f"rivet-ci: warning: {note}\n")
    only = frozenset(args.exports) if args.exports else None
    if only is not None:
        problems += unknown_exports(only, {e.name for c in configs for e in c.exports})
    plan = plan_configs(configs, facts, origin, problems, only_exports=only)
    write_document(plan, args.output, args.format, ctx)
    return finish(ctx, plan, origin, started, exports=len(plan.exports))


def finish(ctx: Context, plan: Plan, origin: FactsOrigin, started: float, *,
           exports: int, files: int | None = None) -> int:
    """The notes after the plan: no facts, the time taken, each problem once (stderr)."""
    if origin.kind == "none":
        ctx.stderr.write(f"rivet-ci: {NO_FACTS_NOTE}\n")
    elapsed = time.monotonic() - started
    if elapsed > 1.0 or ctx.interactive:
        count = len(plan.configs) if files is None else files
        ctx.stderr.write(f"rivet-ci: planned {plural(exports, 'export')} from "
                         f"{plural(count, 'file')} in {elapsed:.2f} s\n")
    for line in problem_lines(plan):  # each problem once, on stderr; the plan on stdout
        ctx.stderr.write(line + "\n")
    errors = [p for p in plan.all_problems if p.severity == "error"]
    return USAGE_ERROR if errors else OK


def run_streamed(args: argparse.Namespace, ctx: Context, started: float) -> int:
    """`plan --format json` (with facts from a file, or none) in memory bounded by one config:
    each config is loaded, planned, serialised and redacted in turn into a temporary spool,
    only its counts and problems kept; then the document — whose summary comes before the
    configs — is written from the spool. The same bytes as planning everything first (tested)."""
    resolver = PathResolver(ctx.cwd)
    paths = config_paths(args.configs, ctx, not_configs=(args.facts, args.output),
                         resolver=resolver)
    facts, problems, origin = load_facts_arg(args.facts, ctx)
    params = parse_params(args.params)
    exists = path_checker(args, ctx.cwd)
    only = frozenset(args.exports) if args.exports else None
    generated_at = ctx.timestamp()
    memo = streamed_memo()
    summary = empty_summary()
    config_problems: list[Problem] = []
    known: set[str] = set()
    used: set[str] = set()
    sizes: list[int] = []
    with tempfile.TemporaryFile(prefix="rivet-ci-plan-") as spool:
        for path in paths:
            loaded = load_config_file(path, root=resolver, environ=ctx.environ, params=params,
                                      path_exists=exists)
            used |= loaded.placeholders
            known.update(e.name for e in loaded.exports)
            config: ConfigPlan | None = plan_config(loaded, facts)
            if only is not None and config is not None:
                config = chosen_exports(config, only)
            if config is None:
                continue
            add_to_summary(summary, config)
            config_problems.extend(config.problems)
            size = 0
            for block in config_chunks(config, day=generated_at[:10], memo=memo):
                # redacted before it touches the disk (the final write redacts again: a no-op)
                size += spool.write(ctx.redact.redact_bytes(block))
            sizes.append(size)
        warn_unused_params(params, frozenset(used), ctx.stderr)
        problems += unknown_exports(only, known)
        every = construct(Plan, {"configs": (), "facts": origin,
                                 "problems": (*problems, *config_problems)})
        summary["errors"] = sum(1 for p in every.all_problems if p.severity == "error")
        head = document_head(facts=origin, summary=summary, problems=every.all_problems,
                             generated_at=generated_at, version=__version__)
        spool.seek(0)
        target = (None if args.output is None else
                  args.output if args.output.is_absolute() else ctx.cwd / args.output)
        write_chunks(target, document_chunks(head, (_spooled(spool, n) for n in sizes)),
                     ctx.redact, root=ctx.cwd, stream=ctx.stdout)
    return finish(ctx, every, origin, started, exports=summary["exports"],
                  files=summary["configs"])


def _spooled(spool: IO[bytes], size: int, piece: int = 1 << 20) -> Iterator[bytes]:
    while size > 0:
        data = spool.read(min(piece, size))
        if not data:
            raise OSError(f"the plan's temporary spool ended {size} bytes early")
        size -= len(data)
        yield data
