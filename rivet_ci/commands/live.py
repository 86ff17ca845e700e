"""Shell glue between the CLI and live preflight: options from arguments, facts, history.

Used by `rivet-ci facts` (capture a facts file) and `rivet-ci plan --live` (plan on fresh facts).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rivet_ci.commands.context import Context
from rivet_ci.commands.options import parse_params
from rivet_ci.commands.progress import ProgressBar
from rivet_ci.core.config.loader import LoadedConfig
from rivet_ci.core.facts.catalog_models import CatalogSource
from rivet_ci.core.facts.models import ConfigFacts, ExportFacts, FactsFile
from rivet_ci.errors import UsageError

if TYPE_CHECKING:
    from rivet_ci.adapters.preflight.collect import PreflightOptions

# SQLAlchemy and the drivers are imported by the functions that connect, so a plan from a facts
# file never loads them.


def add_connection_arguments(g: argparse._ArgumentGroup) -> None:
    """Where and how long to connect: `--source-url`, `--statement-timeout`,
    `--connect-timeout` (live preflight, and `check --live`'s catalog read)."""
    g.add_argument("--source-url", metavar="URL",
                   help="connect here instead of the configs' sources (else RIVET_CI_SOURCE_URL)")
    g.add_argument("--statement-timeout", type=float, default=5.0, metavar="SECONDS",
                   help="server-side timeout of every statement (default 5)")
    g.add_argument("--connect-timeout", type=float, default=5.0, metavar="SECONDS",
                   help="give up connecting to a source after this long (default 5)")


def add_live_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("live preflight (read-only EXPLAIN and bounded probes)")
    add_connection_arguments(g)
    g.add_argument("--state-url", metavar="URL",
                   help="rivet state database for run history (else RIVET_STATE_URL, else "
                        ".rivet_state.db beside each config)")
    g.add_argument("--range-probe-bound", type=int, default=1_000_000, metavar="ROWS",
                   help="probe min/max of an unindexed column only below this row estimate "
                        "(default 1000000)")
    g.add_argument("--max-connections-per-group", type=int, default=1, metavar="N",
                   help="concurrent connections per source_group and per source (default 1)")


def preflight_options(args: argparse.Namespace) -> PreflightOptions:
    """The options of `add_live_arguments` (`add_connection_arguments` alone: the defaults for
    the rest)."""
    from rivet_ci.adapters.preflight.collect import PreflightOptions

    defaults = PreflightOptions()
    try:
        return PreflightOptions(
            statement_timeout_s=args.statement_timeout, connect_timeout_s=args.connect_timeout,
            range_probe_row_bound=getattr(args, "range_probe_bound",
                                          defaults.range_probe_row_bound),
            max_connections_per_group=getattr(args, "max_connections_per_group",
                                              defaults.max_connections_per_group))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def on_disk(configs: Sequence[LoadedConfig], ctx: Context) -> list[tuple[LoadedConfig, Path]]:
    return [(c, ctx.cwd / c.path) for c in configs]


def collect_live(configs: Sequence[LoadedConfig], args: argparse.Namespace,
                 ctx: Context) -> FactsFile:
    from rivet_ci.adapters.preflight.collect import collect_facts

    bar = ProgressBar(ctx.stderr, "preflight", enabled=ctx.interactive)
    try:
        return collect_facts(
            on_disk(configs, ctx), options=preflight_options(args),
            source_url_override=args.source_url, environ=ctx.environ, progress=bar,
            repo_root=ctx.cwd, include_history=True, state_url=args.state_url,
            redact=ctx.redact,  # credentials resolved here are masked in every output
            # `${...}` in query_file text: --param over the environment, as for the configs.
            placeholders={**ctx.environ, **(parse_params(getattr(args, "params", None)) or {})})
    finally:
        bar.close()


def capture_live_catalog(configs: Sequence[LoadedConfig], args: argparse.Namespace,
                         ctx: Context, *, index_ends: bool = True) -> list[CatalogSource]:
    """The source catalog of every source the configs name (`rivet-ci facts`; `rivet-ci check
    --live` without the index ends). Each source is also named by the config's own spelling of
    it, read from the file without the environment (so no secret is part of it), which is how
    configs planned without the secrets find it."""
    from rivet_ci.adapters.files import PathResolver, load_config_file
    from rivet_ci.adapters.preflight.catalog import capture_catalog

    resolver = PathResolver(ctx.cwd)
    params = parse_params(getattr(args, "params", None))
    written = [load_config_file(ctx.cwd / c.path, root=resolver, environ={}, params=params).source
               for c in configs]
    sources, warnings = capture_catalog(
        list(zip(configs, written, strict=True)), options=preflight_options(args),
        environ=ctx.environ, source_url_override=args.source_url,
        schemas=tuple(getattr(args, "catalog_schemas", None) or ()), redact=ctx.redact,
        index_ends=index_ends)
    for warning in warnings:
        ctx.stderr.write(f"warning: {warning}\n")
    relations = sum(len(s.relations) for s in sources)
    ctx.stderr.write(f"rivet-ci: catalogued {relations} relation(s) of "
                     f"{len(sources)} source(s)\n")
    return sources


def with_state_history(facts: FactsFile | None, configs: Sequence[LoadedConfig],
                       state_url: str | None, *, root: Path, environ: Mapping[str, str],
                       ) -> tuple[FactsFile, list[str]]:
    """Facts whose history comes from the state database (`plan --facts F --state-url U`).

    Several configs may share a path (base and head of a PR): their exports are merged.
    """
    from rivet_ci.adapters.state_history import read_history

    base = facts or FactsFile(format="rivet-ci-facts/1")
    sections = {path: dict(section.exports) for path, section in base.configs.items()}
    notes: list[str] = []
    for loaded in configs:
        names = [e.name for e in loaded.exports]
        history = read_history(root / loaded.path, names, environ=environ, state_url=state_url)
        if history.problem:
            notes.append(history.problem)
        section = sections.setdefault(loaded.path, {})
        for name in names:
            entry = section.get(name) or base.for_export(loaded.path, name)
            runs = history.runs.get(name)
            if entry is None:
                # No facts: stays "preflight failed"; the history alone cannot vouch for it.
                entry = ExportFacts(preflight_error="no facts for this export")
            update: dict[str, object] = {"history": runs} if runs else {}
            if name in history.last_success:
                update["last_success"] = history.last_success[name]
            section[name] = entry.model_copy(update=update) if update else entry
    return base.model_copy(update={"configs": {
        path: ConfigFacts(exports=exports) for path, exports in sections.items()}}), notes
