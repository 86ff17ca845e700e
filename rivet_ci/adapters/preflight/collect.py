"""Live fact collection: loaded configs in, a `rivet-ci-facts/1` document out (spec §3, §9).

Public API::

    facts = collect_facts(
        [(loaded_config, Path("pipelines/a.yaml")), ...],
        options=PreflightOptions(),            # timeouts, probe bound, connection limit
        source_url_override=None,              # --source-url; else RIVET_CI_SOURCE_URL
        environ=os.environ,
        progress=lambda done, total: ...,      # optional
    )

The result has one `configs:` section per config, keyed by `LoadedConfig.path`, so same-named
exports in two files never collide. Nothing here raises for a database problem: every failure
(unresolvable URL, refused query, unreachable server, bad credentials, missing table or column,
timeout, lost connection) becomes that export's `preflight_error`, with passwords masked, and
collection goes on.

How it runs:

* Each export is prepared without I/O: source URL resolved (:mod:`.source_url`), query vetted or
  table/column names checked (:mod:`.safety`), `query_file` read relative to its config and
  confined to the repository (or the config's directory).
* Exports are grouped in *lanes* — same source URL and same `source_group` — and each lane uses
  one connection. A lane first holds a slot of its `source_group` and then one of its source URL;
  each has `max_connections_per_group` slots, so neither a group nor a source ever sees more
  connections than that. Slots are always taken in that order, so lanes cannot deadlock.
* In a lane: EXPLAIN every distinct query, look up all relations in one catalog round, then probe
  min/max of range columns where that is cheap (an index leads with the column of a `table:`
  export, or everything the export reads is under `range_probe_row_bound` rows). A probe skipped
  for safety is recorded in `ColumnFacts.range_skipped`.
* Every distinct probe (same source, same query/relation/column) runs once per collection, even
  when base and head configs both need it: results are memoized as futures shared by lanes.
* A lost connection is reopened once; if that fails the lane's remaining exports get the cause.
* `progress(done, total)` is called once per export, from worker threads, one call at a time.

What may be probed and what a probe costs (the range column an export needs, whether min/max is
cheap on a replica, which columns one statement covers) are pure rules in
:mod:`rivet_ci.core.facts.probe_rules`; the slots, shared sessions and memo lanes run on are in
:mod:`.scheduling`. This module prepares the exports and runs the lanes.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import sqlalchemy as sa

from rivet_ci.adapters.preflight import mysql, postgres, sqlite
from rivet_ci.adapters.preflight.base import (
    MAX_VALUE_CHARS,
    BrokenSessionError,
    ExplainTooLargeError,
    MinMax,
    PreflightOptions,
    ProbeSession,
    ProbeTimeoutError,
    QueryTarget,
    TableTarget,
    Target,
    error_class,
    error_text,
    is_connection_lost,
)
from rivet_ci.adapters.preflight.safety import (
    Dialect,
    UnsafeQueryError,
    check_column_name,
    parse_table_name,
    vet_query,
)
from rivet_ci.adapters.preflight.scheduling import (
    GroupSlots,
    Held,
    Memo,
    Outcome,
    Progress,
    ProgressCallback,
    SourcePool,
    close_session,
    outcome_of,
)
from rivet_ci.adapters.preflight.source_url import (
    ResolvedSource,
    SourceUrlError,
    UrlFileReader,
    resolve_source,
)
from rivet_ci.adapters.state_history import StateLocation, locate_state, read_history_at
from rivet_ci.core.config.loader import LoadedConfig, substitute_query
from rivet_ci.core.config.models import ExportConfig
from rivet_ci.core.facts.models import (
    FACTS_FORMAT,
    ColumnFacts,
    ConfigFacts,
    ExportFacts,
    FactsFile,
    TableFacts,
)
from rivet_ci.core.facts.probe_rules import (
    QUERY_RANGE_SKIPPED,
    UNTRUSTED_QUERY_RANGE_SKIPPED,
    FullScan,
    PlanFacts,
    Rel,
    RelationInfo,
    bare_column_of_single_table,
    column_kind,
    has_column,
    indexed,
    min_max_probe,
    probe_needs,
    query_range_skip,
    range_skip,
    range_sliced,
    unsafe_range_functions,
)
from rivet_ci.output.paths import PathRefusedError, inside, normalized
from rivet_ci.output.redaction import Redactor
from rivet_ci.output.sink import FileTooLargeError, read_nofollow

__all__ = ["QUERY_RANGE_SKIPPED", "PreflightOptions", "ProgressCallback", "TrustedReads",
           "collect_facts"]

log = logging.getLogger(__name__)
T = TypeVar("T")
_MAX_WORKERS = 8
_MAX_QUERY_FILE_BYTES = 1024 * 1024


class _Driver(NamedTuple):
    create_engine: Callable[[ResolvedSource, PreflightOptions], sa.Engine]
    open_session: Callable[[sa.Engine, PreflightOptions], ProbeSession]
    fold: Callable[[str], str]


DRIVERS: dict[Dialect, _Driver] = {
    "postgresql": _Driver(postgres.create_engine, postgres.open_session,
                          postgres.fold_identifier),
    "mysql": _Driver(mysql.create_engine, mysql.open_session, mysql.fold_identifier),
    "sqlite": _Driver(sqlite.create_engine, sqlite.open_session, sqlite.fold_identifier),
}


def collect_facts(
    configs: Sequence[tuple[LoadedConfig, Path]],
    *,
    options: PreflightOptions | None = None,
    source_url_override: str | None = None,
    environ: Mapping[str, str],
    progress: ProgressCallback | None = None,
    repo_root: Path | None = None,
    include_history: bool = False,
    state_url: str | None = None,
    redact: Redactor | None = None,
    read_url_file: UrlFileReader | None = None,
    placeholders: Mapping[str, str] | None = None,
    trusted: TrustedReads | None = None,
) -> FactsFile:
    """Observe every export of `configs` on its live source (see the module docstring).

    `configs` pairs each loaded config with its file on disk (for `query_file` and the state
    database). `repo_root` confines `query_file` paths (default: the config's directory). With
    `include_history`, each export's run history (spec §5) is read from rivet's state database
    (`state_url` overrides its location, like `--state-url`) into `ExportFacts.history`.

    `trusted`: the queries (and `table:` views) that may run inside rivet's range statement —
    a pull request's base side; None trusts every one (a trusted job planning its own configs).
    An untrusted query is only EXPLAINed; its range is observed only over a bare column of its
    single base table (`probe_rules.bare_column_of_single_table`); an untrusted view's not.
    """
    options = options or PreflightOptions()
    # The caller's redactor (the output boundary's) learns every credential resolved here.
    redact = redact if redact is not None else Redactor()
    jobs: list[_Job] = []
    for index, (loaded, config_file) in enumerate(configs):
        source: ResolvedSource | None = None
        source_error: str | None = None
        try:
            source = resolve_source(loaded.source, environ=environ, override=source_url_override,
                                    unresolved_variables=loaded.unresolved_source_variables,
                                    read_url_file=read_url_file)
            redact.add(*source.secrets)
        except SourceUrlError as exc:
            source_error = str(exc)
        for export in loaded.exports:
            job = _Job(config_index=index, config_path=loaded.path, export=export,
                       source=source, error=source_error)
            if source is not None:
                _prepare(job, source.dialect, config_file, repo_root, placeholders)
                if trusted is not None:
                    job.trusted = trusted.trusts(export, job.target, source.dialect)
            jobs.append(job)

    tracker = Progress(len(jobs), progress)
    results: dict[tuple[int, str], ExportFacts] = {}
    lanes: dict[tuple[str, str | None], list[_Job]] = {}
    for job in jobs:
        if job.error is not None or job.source is None:
            results[job.key] = ExportFacts(preflight_error=redact(job.error or "no source"))
            tracker.tick()
        else:
            lanes.setdefault((job.source.key, job.export.source_group), []).append(job)

    engines: dict[str, sa.Engine] = {}
    engine_errors: dict[str, str] = {}
    for lane_jobs in lanes.values():
        src = lane_jobs[0].source
        assert src is not None
        if src.key not in engines and src.key not in engine_errors:
            try:
                engines[src.key] = DRIVERS[src.dialect].create_engine(src, options)
            except Exception as exc:  # e.g. an in-memory SQLite URL
                engine_errors[src.key] = f"cannot use {src.display}: {error_text(exc)}"

    # Every range column wanted per table of a source, over all configs (base and head): each
    # table's min/max is probed once, for all of them.
    wanted: dict[str, dict[Rel, set[str]]] = {}
    auto_key: dict[str, set[Rel]] = {}
    for job in jobs:
        if job.source is not None and job.range_column and isinstance(job.target, TableTarget):
            wanted.setdefault(job.source.key, {}).setdefault(
                job.target.rel, set()).add(job.range_column)
        if job.source is not None and job.auto_key and isinstance(job.target, TableTarget):
            auto_key.setdefault(job.source.key, set()).add(job.target.rel)
    every_pool: list[SourcePool] = []
    pools = {key: SourcePool(options.max_connections_per_group, every_pool) for key in engines}
    runs: list[_Lane] = []
    for lane_jobs in lanes.values():
        src = lane_jobs[0].source
        assert src is not None
        if src.key in engine_errors:
            for job in lane_jobs:
                results[job.key] = ExportFacts(preflight_error=redact(engine_errors[src.key]))
                tracker.tick()
            continue
        runs.append(_Lane(
            lane_jobs, src, DRIVERS[src.dialect], engines[src.key], pools[src.key], options,
            redact, tracker,
            {rel: frozenset(cols) for rel, cols in wanted.get(src.key, {}).items()},
            frozenset(auto_key.get(src.key, ()))))

    memo = Memo()
    limits = GroupSlots(options.max_connections_per_group)
    try:
        if runs:
            with ThreadPoolExecutor(max_workers=min(len(runs), _MAX_WORKERS),
                                    thread_name_prefix="rivet-ci-preflight") as pool:
                for lane_results in pool.map(lambda lane: lane.run(memo, limits), runs):
                    results.update(lane_results)
    finally:
        for source_pool in pools.values():
            source_pool.close()
        for engine in engines.values():
            engine.dispose()

    if include_history:
        results = _with_history(configs, results, environ=environ, state_url=state_url,
                                timeout_s=options.statement_timeout_s)
    sections: dict[str, dict[str, ExportFacts]] = {}
    for index, (loaded, _) in enumerate(configs):
        section = sections.setdefault(loaded.path, {})
        for export in loaded.exports:
            # Two configs with one path (should not happen): the first one's facts stand.
            section.setdefault(export.name, results.get((index, export.name)) or ExportFacts(
                preflight_error="internal error: preflight produced no result"))
    return FactsFile(format=FACTS_FORMAT, captured_at=datetime.now(UTC).replace(microsecond=0),
                     configs={path: ConfigFacts(exports=e) for path, e in sections.items()})


# --- preparation (no I/O but the query file) ---------------------------------------------------


@dataclass
class _Job:
    """One export of one config on its way to facts."""

    config_index: int
    config_path: str
    export: ExportConfig
    source: ResolvedSource | None
    error: str | None = None
    target: Target | None = None
    range_column: str | None = None  # name in SQL (folded as the dialect folds it)
    fallback_column: str | None = None
    # A chunked `table:` export with no chunk_column/chunk_by_key: rivet chunks it on the
    # table's single-integer primary key, so that key's range is observed too.
    auto_key: bool = False
    # A chunked `table:` export: the table's catalog facts (size, keys) are looked up.
    wants_table: bool = False
    # The query may run inside rivet's range statement (not new or changed in a pull request).
    trusted: bool = True

    @property
    def key(self) -> tuple[int, str]:
        return (self.config_index, self.export.name)

    @property
    def target_key(self) -> Hashable:
        target = self.target
        if isinstance(target, TableTarget):
            return ("table", target.rel, target.order_by)
        assert isinstance(target, QueryTarget)
        return ("query", target.query.text, target.order_by)


def _prepare(job: _Job, dialect: Dialect, config_file: Path, repo_root: Path | None,
             placeholders: Mapping[str, str] | None = None) -> None:
    export = job.export
    fold = DRIVERS[dialect].fold
    try:
        if export.table is not None:
            schema, name = parse_table_name(export.table)
            job.target = TableTarget((fold(schema) if schema else None, fold(name)))
        else:
            text = export.query
            if text is None:
                text = _read_query_file(config_file, export.query_file or "", repo_root)
                if placeholders is not None:  # rivet substitutes query_file text (strict)
                    text, unset = substitute_query(text, None, placeholders)
                    if unset:
                        raise _QueryFileError(
                            f"query_file {export.query_file!r}: ${{{unset[0]}}} is not set")
            job.target = QueryTarget(vet_query(text, dialect))
        needs = probe_needs(export)
        if needs.range_field and export.range_column:
            job.range_column = fold(check_column_name(export.range_column, needs.range_field))
        if export.cursor_fallback_column:
            job.fallback_column = fold(check_column_name(export.cursor_fallback_column,
                                                         "cursor_fallback_column"))
        job.wants_table, job.auto_key = needs.wants_table, needs.auto_key
        if export.mode == "incremental" and export.cursor_column and dialect != "sqlite":
            # rivet EXPLAINs the incremental read as it runs it: ordered by the cursor key.
            key: tuple[str, ...] = (fold(check_column_name(export.cursor_column,
                                                           "cursor_column")),)
            if export.incremental_cursor_mode == "coalesce" and job.fallback_column:
                key = (*key, job.fallback_column)
            job.target = dataclasses.replace(job.target, order_by=key)
    except UnsafeQueryError as exc:
        job.error = f"refused: {exc}"
    except _QueryFileError as exc:
        job.error = str(exc)


class _QueryFileError(Exception):
    pass


@functools.lru_cache(maxsize=64)
def _vetted_texts(texts: frozenset[str], dialect: Dialect) -> frozenset[str]:
    out = set()
    for text in texts:
        try:
            out.add(vet_query(text, dialect).text)
        except UnsafeQueryError:
            continue
    return frozenset(out)


@dataclass(frozen=True)
class TrustedReads:
    """What may run inside rivet's range statement in a pull request: the base side's query
    texts and `table:` names. Anything else the pull request wrote is only EXPLAINed."""

    queries: frozenset[str] = frozenset()
    tables: frozenset[str] = frozenset()

    @classmethod
    def of(cls, configs: Sequence[LoadedConfig]) -> TrustedReads:
        return cls(queries=frozenset(e.query for c in configs for e in c.exports if e.query),
                   tables=frozenset(e.table for c in configs for e in c.exports if e.table))

    def trusts(self, export: ExportConfig, target: Target | None, dialect: Dialect) -> bool:
        if isinstance(target, QueryTarget):
            return target.query.text in _vetted_texts(self.queries, dialect)
        return export.table is not None and export.table in self.tables


def _read_query_file(config_file: Path, name: str, repo_root: Path | None) -> str:
    """A `query_file`, by the one path rule (`rivet_ci.output.paths`): relative to its config,
    normalised lexically, inside the repository (or the config's directory), and never
    through a symbolic link at any component below it."""
    base = Path(os.path.normpath(config_file.parent.absolute()))
    allowed = Path(os.path.normpath((repo_root or base).absolute()))
    path = normalized(Path(name), base)
    # A PR could point query_file at any file the runner can read; keep it inside the repo.
    if not inside(path, allowed):
        where = "the repository" if repo_root else "the config's directory"
        raise _QueryFileError(f"refused: query_file {name!r} points outside {where}")
    try:
        data = read_nofollow(path, allowed, limit=_MAX_QUERY_FILE_BYTES)
    except FileTooLargeError:
        raise _QueryFileError(f"query_file {name!r} is larger than 1 MiB") from None
    except PathRefusedError as exc:
        raise _QueryFileError(f"refused: query_file {name!r}: {exc}") from None
    except OSError as exc:
        raise _QueryFileError(f"cannot read query_file {name!r}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _QueryFileError(f"cannot read query_file {name!r}: {exc}") from None


# --- one lane: one source, one source_group, the source's session -------------------------------

# A lane replaces a lost or poisoned connection at most this many times, then gives up.
_MAX_RESETS = 3


class _LaneDownError(Exception):
    """The lane cannot reach its source any more; the message is the cause."""


@dataclass
class _Lane:
    jobs: list[_Job]
    source: ResolvedSource
    driver: _Driver
    engine: sa.Engine
    pool: SourcePool
    options: PreflightOptions
    redact: Redactor
    tracker: Progress
    # Range columns wanted per table of this source, over ALL lanes (base and head): one min/max
    # statement per table answers every export over it.
    wanted: Mapping[Rel, frozenset[str]]
    # Tables with a chunked export that chunks on the table's integer primary key.
    auto_key_tables: frozenset[Rel]
    held: Held = field(default_factory=Held)
    down: str | None = None
    resets: int = 0
    max_connections: int | None = None
    results: dict[tuple[int, str], ExportFacts] = field(default_factory=dict)

    def run(self, memo: Memo, limits: GroupSlots) -> dict[tuple[int, str], ExportFacts]:
        with limits.hold(self.jobs[0].export.source_group, self.pool) as held:
            self.held = held
            if held.session is not None and held.session.max_connections is not None:
                self.max_connections = held.session.max_connections
            log.debug("preflight lane %s: %d exports", self.source.display, len(self.jobs))
            try:
                self._run(memo)
            except Exception as exc:  # a bug must cost facts, not the whole run
                log.error("preflight lane failed: %s", error_class(exc))
                for job in self.jobs:
                    self._finish(job, ExportFacts(
                        preflight_error=f"internal error: {error_class(exc)}"))
        return self.results

    # session handling

    def _open(self) -> ProbeSession:
        if self.down is not None:
            raise _LaneDownError(self.down)
        if self.held.session is None:
            self.pool.close_every_idle()
            try:
                self.held.session = self.driver.open_session(self.engine, self.options)
            except Exception as exc:  # any driver error is "cannot connect"
                self.down = self.redact(
                    f"cannot connect to {self.source.display}: {error_text(exc)}")
                log.warning("preflight: %s", self.down)
                raise _LaneDownError(self.down) from None
            if self.held.session.max_connections is not None:
                self.max_connections = self.held.session.max_connections
        return self.held.session

    def _call(self, probe: Callable[[ProbeSession], T]) -> T:
        session = self._open()
        try:
            return probe(session)
        except Exception as exc:
            if is_connection_lost(exc) or session.broken:
                # Never send another statement down a lost or poisoned connection.
                self.held.session = None
                close_session(session)
                self.resets += 1
                if self.resets > _MAX_RESETS:
                    self.down = (f"gave up on {self.source.display} after {_MAX_RESETS} "
                                 f"connection resets (last: {error_class(exc)})")
            raise

    # memoized probes

    def _each(self, memo: Memo, kind: str, probes: Mapping[Hashable, Callable[[ProbeSession], T]],
              ) -> dict[Hashable, Outcome[T]]:
        keys: dict[Hashable, Hashable] = {(self.source.key, kind, key): key for key in probes}
        mine, futures = memo.claim(keys)
        for full_key in mine:
            try:
                futures[full_key].set_result(self._call(probes[keys[full_key]]))
            except BaseException as exc:  # stored for every waiter
                futures[full_key].set_exception(exc)
        return {key: outcome_of(futures[full_key]) for full_key, key in keys.items()}

    def _relations(self, memo: Memo, rels: Sequence[Rel]) -> dict[Rel, Outcome[RelationInfo]]:
        keys: dict[Hashable, Rel] = {(self.source.key, "relation", rel): rel
                                     for rel in dict.fromkeys(rels)}
        mine, futures = memo.claim(keys)
        if mine:
            try:
                found = self._call(lambda s: s.relations([keys[k] for k in mine]))
                for full_key in mine:
                    futures[full_key].set_result(found.get(keys[full_key]))
            except BaseException as exc:  # stored for every waiter
                for full_key in mine:
                    if not futures[full_key].done():
                        futures[full_key].set_exception(exc)
        return {rel: outcome_of(futures[full_key]) for full_key, rel in keys.items()}

    # the phases

    def _run(self, memo: Memo) -> None:
        targets = {job.target_key: job.target for job in self.jobs if job.target is not None}
        plans = self._each(memo, "explain", {
            key: _explain_probe(target) for key, target in targets.items()})
        rels: list[Rel] = []
        for job in self.jobs:
            if not (job.range_column or job.fallback_column or job.wants_table):
                continue  # nothing to look up: no statement spent
            plan = plans[job.target_key].value
            if isinstance(job.target, TableTarget):
                rels.append(job.target.rel)
            if plan is not None:
                rels.extend(plan.relations)  # a query's tables; a partitioned table's partitions
        infos = self._relations(memo, rels) if rels else {}
        for job in self.jobs:
            outcome = plans[job.target_key]
            if (self.source.dialect == "mysql" and job.range_column
                    and outcome.error is not None
                    and _mysql_error_code(outcome.error) == _BAD_FIELD):
                # An unknown column (e.g. the cursor in the incremental ORDER BY): rivet
                # 0.32.2 on MySQL/MariaDB plans the export with nothing known (DEGRADED).
                self._finish(job, _unknown_column_facts(
                    job.export.range_column or job.range_column, self.max_connections,
                    f"EXPLAIN failed: {error_class(outcome.error)}"))
                continue
            if outcome.error is not None or outcome.value is None:
                self._finish(job, self._error_facts(job, "EXPLAIN", outcome.error))
                continue
            self._finish(job, self._facts(memo, job, outcome.value, infos))

    def _facts(self, memo: Memo, job: _Job, plan: PlanFacts,
               infos: Mapping[Rel, Outcome[RelationInfo]]) -> ExportFacts:
        notes = list(plan.notes)
        columns: dict[str, ColumnFacts] = {}
        key_span: int | None = None
        rel_infos: dict[Rel, RelationInfo] = {}
        for rel, outcome in infos.items():
            if outcome.value is not None:
                rel_infos[rel] = outcome.value
            elif outcome.error is not None and rel in plan.relations:
                notes.append(self.redact(f"catalog lookup failed: {error_class(outcome.error)}"))
        export = job.export
        if job.fallback_column and export.cursor_fallback_column:
            columns[export.cursor_fallback_column] = ColumnFacts(
                indexed=self._indexed(job, plan, rel_infos, job.fallback_column))
        target = job.target
        info = rel_infos.get(target.rel) if isinstance(target, TableTarget) else None
        # A chunked `table:` export without chunk_column/chunk_by_key chunks on the table's
        # single-integer primary key (rivet-plan.md §4.2): its range is observed like any other.
        column, shown = job.range_column, export.range_column
        if column is None and job.auto_key and info is not None and info.integer_primary_key:
            column = shown = info.integer_primary_key
        if column and shown:
            missing = self._missing_column(job, rel_infos, column)
            if missing and range_sliced(export) and export.chunk_column is not None and info:
                # rivet's chunk planning finds no such integer column and refuses the plan.
                columns[shown] = ColumnFacts(integer=False)
                return ExportFacts(
                    row_estimate=plan.row_estimate, columns=columns, notes=[*notes, missing],
                    table=TableFacts(rows=info.rows,
                                     integer_primary_key=info.integer_primary_key))
            if missing and self.source.dialect == "mysql":
                return _unknown_column_facts(shown, self.max_connections, missing)
            if missing:
                return ExportFacts(preflight_error=missing)
            indexed = self._indexed(job, plan, rel_infos, column)
            low = high = None
            nulls: bool | None = None
            bound = self.options.range_probe_row_bound
            probed: Outcome[MinMax] | None = None
            if isinstance(target, TableTarget):
                skip = range_skip(self.source.dialect, target.rel, column, plan, rel_infos,
                                  bound=bound)
                if skip is None:
                    probed = self._table_min_max(memo, target.rel, plan, rel_infos).get(column)
                elif info is not None and not info.base_table and job.trusted:
                    # A view: its range as rivet reads a query's, under the query's rule.
                    skip, probed = self._query_range(memo, job, target, column,
                                                    plan=plan, infos=rel_infos)
            else:
                assert isinstance(target, QueryTarget)
                skip, probed = self._query_range(memo, job, target, column,
                                                    plan=plan, infos=rel_infos)
            if skip is None:
                if probed is None:
                    skip = "min/max was not probed"
                elif isinstance(probed.error, ProbeTimeoutError):
                    skip = f"min/max probe {probed.error}"
                elif probed.error is not None:
                    return self._error_facts(job, f"min/max of {shown}", probed.error)
                elif probed.value is not None:
                    low, high, nulls = probed.value
                    if low is None and high is None:
                        notes.append(f"{shown} has no non-null value (or its values are longer "
                                     f"than {MAX_VALUE_CHARS} characters)")
                        if range_sliced(export):
                            # rivet plans an empty key range as one window, [0, 0].
                            key_span = 1
            kind = column_kind(self.source.dialect, info, column)
            if kind.get("has_nulls") is None and nulls is not None:
                kind["has_nulls"] = nulls
            columns[shown] = ColumnFacts(
                indexed=indexed, min=low, max=high, range_skipped=skip, **kind)
        table = None
        if info is not None:
            table = TableFacts(
                rows=info.rows, integer_primary_key=info.integer_primary_key,
                unique_key=info.unique_key if self.source.dialect == "mysql" else None)
        return ExportFacts(
            row_estimate=plan.row_estimate, avg_row_bytes=plan.avg_row_bytes,
            plan_uses_index=plan.uses_index, max_connections=self.max_connections,
            columns=columns, notes=notes, table=table, key_span=key_span,
        )

    def _query_range(self, memo: Memo, job: _Job, target: Target, column: str, *,
                     plan: PlanFacts, infos: Mapping[Rel, RelationInfo],
                     ) -> tuple[str | None, Outcome[MinMax] | None]:
        """(why the range is not observed, or None; the probe's outcome) for a `query:` export.

        Trusted: rivet's own statement, `SELECT min(c), max(c) FROM (<query>) AS _rivet`,
        EXPLAINed first and run only when that plan is bounded (`query_range_skip`).
        Untrusted (new or changed in a pull request): only `min(c)`, `max(c)` of the query's
        single base table, when the query selects `c` bare (`bare_column_of_single_table`), under
        the table's own cost rule; never the query."""
        dialect, bound = self.source.dialect, self.options.range_probe_row_bound
        if not job.trusted:
            assert isinstance(target, QueryTarget)
            rel = bare_column_of_single_table(dialect, target.query.text, column, plan, infos)
            if rel is None:
                return UNTRUSTED_QUERY_RANGE_SKIPPED, None
            table_plan = PlanFacts(row_estimate=None, full_scans=(FullScan(rel),))
            skip = range_skip(dialect, rel, column, table_plan, infos, bound=bound)
            if skip is not None:
                return skip, None
            found = self._each(memo, "column-minmax", {
                ("table", rel, column): _single_min_max(rel, column, ())})
            outcome = next(iter(found.values()))
            if outcome.error is not None:
                return None, Outcome(error=outcome.error)
            return None, Outcome(value=(outcome.value or {}).get(column))
        calls = (unsafe_range_functions(target.query.functions)
                 if isinstance(target, QueryTarget) else [])
        if calls:
            return (f"the query calls {', '.join(calls[:3])}: it is only EXPLAINed, so its range "
                    f"is not observed"), None
        statement = dataclasses.replace(target, order_by=(), min_max_of=column)
        read: Hashable = (("table", target.rel) if isinstance(target, TableTarget)
                          else ("query", target.query.text))
        key = ("query-minmax", read, column)
        explained = self._each(memo, "explain", {key: _explain_probe(statement)})[key]
        if explained.error is not None or explained.value is None:
            if isinstance(explained.error, _LaneDownError):
                return None, Outcome(error=explained.error)
            why = error_class(explained.error) if explained.error is not None else "no plan"
            return f"the EXPLAIN of min/max over the query failed ({why})", None
        skip = query_range_skip(explained.value, infos, bound=bound)
        if skip is not None:
            return skip, None
        ran = self._each(memo, "query-minmax", {key: _query_min_max_probe(statement)})[key]
        if isinstance(ran.error, ProbeTimeoutError | _LaneDownError) or ran.error is None:
            return None, ran
        # The query is the config's SQL: only the error's class, never the driver's message.
        return f"min/max over the query failed ({error_class(ran.error)})", None

    def _indexed(self, job: _Job, plan: PlanFacts, infos: Mapping[Rel, RelationInfo],
                 column: str) -> bool | None:
        """Leading column of a valid btree index of the export's relation (None: unknown)."""
        rels = (job.target.rel,) if isinstance(job.target, TableTarget) else plan.relations
        return indexed(self.source.dialect, rels, infos, column)

    def _missing_column(self, job: _Job, infos: Mapping[Rel, RelationInfo],
                        column: str) -> str | None:
        if not isinstance(job.target, TableTarget):
            return None  # a query's output columns are not looked up
        if has_column(self.source.dialect, infos.get(job.target.rel), column) is not False:
            return None
        return (f"column {job.export.range_column!r} does not exist in "
                f"{job.export.table!r}")

    def _table_min_max(self, memo: Memo, rel: Rel, plan: PlanFacts,
                       infos: Mapping[Rel, RelationInfo]) -> dict[str, Outcome[MinMax]]:
        """min/max of every wanted, cheap column of the table: one statement per table for all
        exports of the collection (per column only when the statement for all of them fails)."""
        columns, null_checks = min_max_probe(
            self.source.dialect, rel, self.wanted.get(rel, ()),
            auto_key=rel in self.auto_key_tables, plan=plan, infos=infos,
            bound=self.options.range_probe_row_bound)
        if not columns:
            return {}

        def probe() -> dict[str, Outcome[MinMax]]:
            try:
                values = self._call(lambda s: s.min_max(rel, columns, null_checks))
                return {c: Outcome(value=v) for c, v in values.items()}
            except (ProbeTimeoutError, _LaneDownError) as exc:
                return {c: Outcome(error=exc) for c in columns}
            except Exception as exc:
                if len(columns) == 1 or is_connection_lost(exc):
                    return {c: Outcome(error=exc) for c in columns}
            # One column's failure (a type without an order) must not cost the others.
            out: dict[str, Outcome[MinMax]] = {}
            for column in columns:
                try:
                    one = self._call(_single_min_max(
                        rel, column, (column,) if column in null_checks else ()))
                    out[column] = Outcome(value=one[column])
                except Exception as exc:
                    out[column] = Outcome(error=exc)
            return out

        key = ("table", rel)
        mine, futures = memo.claim([(self.source.key, "minmax", key)])
        future = futures[(self.source.key, "minmax", key)]
        if mine:
            try:
                future.set_result(probe())
            except BaseException as exc:  # stored for every waiter
                future.set_exception(exc)
        outcome = outcome_of(future)
        if outcome.error is not None:
            return {c: Outcome(error=outcome.error) for c in columns}
        result: dict[str, Outcome[MinMax]] = outcome.value or {}
        return result

    def _error_facts(self, job: _Job, what: str, error: BaseException | None) -> ExportFacts:
        if isinstance(error, _LaneDownError | BrokenSessionError | ExplainTooLargeError):
            message = str(error) if isinstance(error, _LaneDownError) else f"{what}: {error}"
        elif isinstance(error, ProbeTimeoutError):
            message = f"{what} {error}"
        elif error is None:
            message = f"{what} failed: no result"
        elif isinstance(job.target, QueryTarget):
            # The query is the config's SQL: the driver's message may quote data it reached
            # (a setting, a row value in a cast error), so only the error's class is published.
            message = (f"{what} failed: {error_class(error)} (the database's message is not "
                       f"published for a query)")
        else:
            message = f"{what} failed: {error_text(error)}"
        return ExportFacts(preflight_error=message)

    def _finish(self, job: _Job, facts: ExportFacts) -> None:
        if job.key in self.results:
            return
        if facts.preflight_error is not None:
            facts = facts.model_copy(update={"preflight_error": self.redact(facts.preflight_error)})
            log.debug("preflight of %s in %s: %s", job.export.name, job.config_path,
                      facts.preflight_error)
        self.results[job.key] = facts
        self.tracker.tick()


_BAD_FIELD = 1054  # MySQL/MariaDB ER_BAD_FIELD_ERROR: unknown column


def _mysql_error_code(error: BaseException | None) -> int | None:
    orig = getattr(error, "orig", None)
    args = getattr(orig, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def _unknown_column_facts(column: str, max_connections: int | None, why: str) -> ExportFacts:
    """rivet 0.32.2 on MySQL/MariaDB: a column missing on the source is "nothing known" — no
    row estimate, no index — so the export plans DEGRADED (on PostgreSQL rivet refuses the
    plan, and rivet-ci plans it low-confidence)."""
    return ExportFacts(plan_uses_index=False, max_connections=max_connections,
                       columns={column: ColumnFacts(indexed=False)},
                       notes=[f"{why}; planned as rivet 0.32.2 plans it on MySQL/MariaDB: "
                              f"nothing known about the source (DEGRADED)"])


def _explain_probe(target: Target) -> Callable[[ProbeSession], PlanFacts]:
    return lambda session: session.explain(target)


def _query_min_max_probe(target: Target) -> Callable[[ProbeSession], MinMax]:
    return lambda session: session.query_min_max(target)


def _single_min_max(rel: Rel, column: str, null_checks: Sequence[str],
                    ) -> Callable[[ProbeSession], dict[str, MinMax]]:
    return lambda session: session.min_max(rel, [column], null_checks)


# --- history -----------------------------------------------------------------------------------


def _with_history(
    configs: Sequence[tuple[LoadedConfig, Path]], results: dict[tuple[int, str], ExportFacts],
    *, environ: Mapping[str, str], state_url: str | None, timeout_s: float,
) -> dict[tuple[int, str], ExportFacts]:
    # One read per state database for all the configs that share it.
    groups: dict[StateLocation, list[tuple[int, LoadedConfig]]] = {}
    for index, (loaded, config_file) in enumerate(configs):
        location = locate_state(config_file, environ=environ, state_url=state_url)
        groups.setdefault(location, []).append((index, loaded))
    out = dict(results)
    for location, members in groups.items():
        names = {e.name for _, loaded in members for e in loaded.exports}
        history = read_history_at(location, names, timeout_s=timeout_s)
        for index, loaded in members:
            for export in loaded.exports:
                key = (index, export.name)
                update: dict[str, Any] = {}
                if export.name in history.runs:
                    update["history"] = history.runs[export.name]
                if export.name in history.last_success:
                    update["last_success"] = history.last_success[export.name]
                if history.problem:
                    update["notes"] = [*out[key].notes, history.problem]
                if update:
                    out[key] = out[key].model_copy(update=update)
    return out
