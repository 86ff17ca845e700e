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
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar

import sqlalchemy as sa

from rivet_ci.adapters.preflight import mysql, postgres, sqlite
from rivet_ci.adapters.preflight.base import (
    PlanFacts,
    PreflightOptions,
    ProbeSession,
    ProbeTimeoutError,
    QueryTarget,
    Rel,
    RelationInfo,
    TableTarget,
    Target,
    error_text,
    is_connection_lost,
)
from rivet_ci.adapters.preflight.safety import (
    Dialect,
    Redactor,
    UnsafeQueryError,
    check_column_name,
    parse_table_name,
    unsafe_to_execute,
    vet_query,
)
from rivet_ci.adapters.preflight.source_url import ResolvedSource, SourceUrlError, resolve_source
from rivet_ci.adapters.state_history import StateLocation, locate_state, read_history_at
from rivet_ci.core.config import ExportConfig
from rivet_ci.core.config_loader import LoadedConfig
from rivet_ci.core.facts import FACTS_FORMAT, ColumnFacts, ConfigFacts, ExportFacts, FactsFile

__all__ = ["PreflightOptions", "ProgressCallback", "collect_facts"]

log = logging.getLogger(__name__)
T = TypeVar("T")
ProgressCallback = Callable[[int, int], None]
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
) -> FactsFile:
    """Observe every export of `configs` on its live source (see the module docstring).

    `configs` pairs each loaded config with its file on disk (for `query_file` and the state
    database). `repo_root` confines `query_file` paths (default: the config's directory). With
    `include_history`, each export's run history (spec §5) is read from rivet's state database
    (`state_url` overrides its location, like `--state-url`) into `ExportFacts.history`.
    """
    options = options or PreflightOptions()
    redact = Redactor()
    jobs: list[_Job] = []
    for index, (loaded, config_file) in enumerate(configs):
        source: ResolvedSource | None = None
        source_error: str | None = None
        try:
            source = resolve_source(loaded.source, environ=environ, override=source_url_override,
                                    unresolved_variables=loaded.unresolved_source_variables)
            redact.add(*source.secrets)
        except SourceUrlError as exc:
            source_error = str(exc)
        for export in loaded.exports:
            job = _Job(config_index=index, config_path=loaded.path, export=export,
                       source=source, error=source_error)
            if source is not None:
                _prepare(job, source.dialect, config_file, repo_root)
            jobs.append(job)

    tracker = _Progress(len(jobs), progress)
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

    runs: list[_Lane] = []
    for lane_jobs in lanes.values():
        src = lane_jobs[0].source
        assert src is not None
        if src.key in engine_errors:
            for job in lane_jobs:
                results[job.key] = ExportFacts(preflight_error=redact(engine_errors[src.key]))
                tracker.tick()
            continue
        runs.append(_Lane(lane_jobs, src, DRIVERS[src.dialect], engines[src.key], options,
                          redact, tracker))

    memo = _Memo()
    limits = _Limits(options.max_connections_per_group)
    try:
        if runs:
            with ThreadPoolExecutor(max_workers=min(len(runs), _MAX_WORKERS),
                                    thread_name_prefix="rivet-ci-preflight") as pool:
                for lane_results in pool.map(lambda lane: lane.run(memo, limits), runs):
                    results.update(lane_results)
    finally:
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

    @property
    def key(self) -> tuple[int, str]:
        return (self.config_index, self.export.name)

    @property
    def target_key(self) -> Hashable:
        target = self.target
        if isinstance(target, TableTarget):
            return ("table", target.rel)
        assert isinstance(target, QueryTarget)
        return ("query", target.query.text)


def _prepare(job: _Job, dialect: Dialect, config_file: Path, repo_root: Path | None) -> None:
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
            job.target = QueryTarget(vet_query(text, dialect))
        field_name = next((f for f in ("chunk_column", "chunk_by_key", "cursor_column",
                                       "time_column") if getattr(export, f)), None)
        if export.range_column and field_name:
            job.range_column = fold(check_column_name(export.range_column, field_name))
        if export.cursor_fallback_column:
            job.fallback_column = fold(check_column_name(export.cursor_fallback_column,
                                                         "cursor_fallback_column"))
    except UnsafeQueryError as exc:
        job.error = f"refused: {exc}"
    except _QueryFileError as exc:
        job.error = str(exc)


class _QueryFileError(Exception):
    pass


def _read_query_file(config_file: Path, name: str, repo_root: Path | None) -> str:
    base = config_file.parent.resolve()
    allowed = (repo_root or base).resolve()
    path = (base / name).resolve()
    # A PR could point query_file at any file the runner can read; keep it inside the repo.
    if not path.is_relative_to(allowed):
        where = "the repository" if repo_root else "the config's directory"
        raise _QueryFileError(f"refused: query_file {name!r} points outside {where}")
    try:
        if path.stat().st_size > _MAX_QUERY_FILE_BYTES:
            raise _QueryFileError(f"query_file {name!r} is larger than 1 MiB")
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise _QueryFileError(f"cannot read query_file {name!r}: {reason}") from None


# --- shared state of one collection ------------------------------------------------------------


class _Progress:
    def __init__(self, total: int, callback: ProgressCallback | None) -> None:
        self._total, self._done, self._callback = total, 0, callback
        self._lock = threading.Lock()

    def tick(self) -> None:
        with self._lock:
            self._done += 1
            if self._callback is not None:
                try:
                    self._callback(self._done, self._total)
                except Exception:  # a broken progress display must not lose facts
                    log.exception("progress callback failed")


class _Limits:
    """Connection slots per source_group and per source URL (see the module docstring)."""

    def __init__(self, per_key: int) -> None:
        self._per_key = per_key
        self._lock = threading.Lock()
        self._slots: dict[str, threading.BoundedSemaphore] = {}

    def _slot(self, key: str) -> threading.BoundedSemaphore:
        with self._lock:
            return self._slots.setdefault(key, threading.BoundedSemaphore(self._per_key))

    @contextmanager
    def hold(self, group: str | None, source_key: str) -> Iterator[None]:
        slots = ([self._slot("group\0" + group)] if group else []) + [
            self._slot("source\0" + source_key)]
        taken: list[threading.BoundedSemaphore] = []
        try:
            for slot in slots:  # always group first, then source: no lock-order cycles
                slot.acquire()
                taken.append(slot)
            yield
        finally:
            for slot in reversed(taken):
                slot.release()


@dataclass(frozen=True)
class _Outcome(Generic[T]):
    value: T | None = None
    error: BaseException | None = None


class _Memo:
    """Probe results shared by all lanes: each key is computed once, by whoever claims it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._futures: dict[Hashable, Future[Any]] = {}

    def claim(self, keys: Iterable[Hashable]) -> tuple[list[Hashable], dict[Hashable, Future[Any]]]:
        mine: list[Hashable] = []
        out: dict[Hashable, Future[Any]] = {}
        with self._lock:
            for key in keys:
                if key not in self._futures:
                    self._futures[key] = Future()
                    mine.append(key)
                out[key] = self._futures[key]
        return mine, out


def _outcome(future: Future[Any]) -> _Outcome[Any]:
    error = future.exception()
    return _Outcome(error=error) if error is not None else _Outcome(value=future.result())


# --- one lane: one connection, one source, one source_group -----------------------------------


class _LaneDownError(Exception):
    """The lane cannot reach its source any more; the message is the cause."""


@dataclass
class _Lane:
    jobs: list[_Job]
    source: ResolvedSource
    driver: _Driver
    engine: sa.Engine
    options: PreflightOptions
    redact: Redactor
    tracker: _Progress
    session: ProbeSession | None = None
    down: str | None = None
    reconnected: bool = False
    max_connections: int | None = None
    results: dict[tuple[int, str], ExportFacts] = field(default_factory=dict)

    def run(self, memo: _Memo, limits: _Limits) -> dict[tuple[int, str], ExportFacts]:
        with limits.hold(self.jobs[0].export.source_group, self.source.key):
            log.debug("preflight lane %s: %d exports", self.source.display, len(self.jobs))
            try:
                self._run(memo)
            except Exception as exc:  # a bug must cost facts, not the whole run
                log.exception("preflight lane failed")
                for job in self.jobs:
                    self._finish(job, ExportFacts(
                        preflight_error=f"internal error: {error_text(exc)}"))
            finally:
                self._close()
        return self.results

    # session handling

    def _open(self) -> ProbeSession:
        if self.down is not None:
            raise _LaneDownError(self.down)
        if self.session is None:
            try:
                self.session = self.driver.open_session(self.engine, self.options)
            except Exception as exc:  # any driver error is "cannot connect"
                self.down = self.redact(
                    f"cannot connect to {self.source.display}: {error_text(exc)}")
                log.warning("preflight: %s", self.down)
                raise _LaneDownError(self.down) from None
            if self.session.max_connections is not None:
                self.max_connections = self.session.max_connections
        return self.session

    def _call(self, probe: Callable[[ProbeSession], T]) -> T:
        session = self._open()
        try:
            return probe(session)
        except Exception as exc:
            if is_connection_lost(exc):
                self._close()
                if self.reconnected:
                    self.down = self.redact(f"lost the connection to {self.source.display}: "
                                            f"{error_text(exc)}")
                self.reconnected = True
            raise

    def _close(self) -> None:
        if self.session is not None:
            try:
                self.session.close()
            except Exception:  # closing a dead connection may fail; ignore
                log.debug("closing a preflight session failed", exc_info=True)
            self.session = None

    # memoized probes

    def _each(self, memo: _Memo, kind: str, probes: Mapping[Hashable, Callable[[ProbeSession], T]],
              ) -> dict[Hashable, _Outcome[T]]:
        keys: dict[Hashable, Hashable] = {(self.source.key, kind, key): key for key in probes}
        mine, futures = memo.claim(keys)
        for full_key in mine:
            try:
                futures[full_key].set_result(self._call(probes[keys[full_key]]))
            except BaseException as exc:  # stored for every waiter
                futures[full_key].set_exception(exc)
        return {key: _outcome(futures[full_key]) for full_key, key in keys.items()}

    def _relations(self, memo: _Memo, rels: Sequence[Rel]) -> dict[Rel, _Outcome[RelationInfo]]:
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
        return {rel: _outcome(futures[full_key]) for full_key, rel in keys.items()}

    # the phases

    def _run(self, memo: _Memo) -> None:
        targets = {job.target_key: job.target for job in self.jobs if job.target is not None}
        plans = self._each(memo, "explain", {
            key: _explain_probe(target) for key, target in targets.items()})
        rels: list[Rel] = []
        for job in self.jobs:
            if not (job.range_column or job.fallback_column):
                continue  # nothing to look up: no statement spent
            plan = plans[job.target_key].value
            if isinstance(job.target, TableTarget):
                rels.append(job.target.rel)
            if plan is not None:
                rels.extend(plan.relations)
        infos = self._relations(memo, rels) if rels else {}
        for job in self.jobs:
            outcome = plans[job.target_key]
            if outcome.error is not None or outcome.value is None:
                self._finish(job, self._error_facts("EXPLAIN", outcome.error))
                continue
            self._finish(job, self._facts(memo, job, outcome.value, infos))

    def _facts(self, memo: _Memo, job: _Job, plan: PlanFacts,
               infos: Mapping[Rel, _Outcome[RelationInfo]]) -> ExportFacts:
        notes = list(plan.notes)
        columns: dict[str, ColumnFacts] = {}
        rel_infos: dict[Rel, RelationInfo] = {}
        for rel, outcome in infos.items():
            if outcome.value is not None:
                rel_infos[rel] = outcome.value
            elif outcome.error is not None and rel in plan.relations:
                notes.append(self.redact(f"catalog lookup failed: {error_text(outcome.error)}"))
        export = job.export
        if job.fallback_column and export.cursor_fallback_column:
            columns[export.cursor_fallback_column] = ColumnFacts(
                indexed=self._indexed(job, plan, rel_infos, job.fallback_column))
        if job.range_column and export.range_column:
            column = job.range_column
            missing = self._missing_column(job, rel_infos, column)
            if missing:
                return ExportFacts(preflight_error=missing)
            indexed = self._indexed(job, plan, rel_infos, column)
            skip = self._skip_reason(job, plan, rel_infos, indexed, column)
            low = high = None
            if skip is None:
                key = (job.target_key, column)
                target = job.target
                assert target is not None
                minmax = self._each(memo, "minmax", {key: _min_max_probe(target, column)})
                probed = minmax[key]
                if isinstance(probed.error, ProbeTimeoutError):
                    skip = f"min/max probe {probed.error}"
                elif probed.error is not None:
                    return self._error_facts(f"min/max of {export.range_column}", probed.error)
                elif probed.value is not None:
                    low, high = probed.value
                    if low is None and high is None:
                        notes.append(f"{export.range_column} has no non-null values")
            columns[export.range_column] = ColumnFacts(indexed=indexed, min=low, max=high,
                                                       range_skipped=skip)
        return ExportFacts(
            row_estimate=plan.row_estimate, avg_row_bytes=plan.avg_row_bytes,
            plan_uses_index=plan.uses_index, max_connections=self.max_connections,
            columns=columns, notes=notes,
        )

    def _same(self, a: str, b: str) -> bool:
        # Names are folded already; PostgreSQL compares exactly, the others ignore case.
        return a == b if self.source.dialect == "postgresql" else a.lower() == b.lower()

    def _indexed(self, job: _Job, plan: PlanFacts, infos: Mapping[Rel, RelationInfo],
                 column: str) -> bool | None:
        """Leading column of a valid btree index of the export's relation (None: unknown)."""
        if isinstance(job.target, TableTarget):
            rels: Sequence[Rel] = (job.target.rel,)
        else:
            rels = plan.relations
        known = [infos[rel] for rel in rels if rel in infos]
        if not known:
            return None
        return any(self._same(column, lead) for info in known
                   for lead in info.leading_index_columns)

    def _missing_column(self, job: _Job, infos: Mapping[Rel, RelationInfo],
                        column: str) -> str | None:
        if not isinstance(job.target, TableTarget):
            return None  # a query's output columns are checked by the min/max probe, if any
        info = infos.get(job.target.rel)
        if info is None or not info.columns:
            return None
        if any(self._same(column, c) for c in info.columns):
            return None
        return (f"column {job.export.range_column!r} does not exist in "
                f"{job.export.table!r}")

    def _skip_reason(self, job: _Job, plan: PlanFacts, infos: Mapping[Rel, RelationInfo],
                     indexed: bool | None, column: str) -> str | None:
        """Why min/max must not be probed (None: it is cheap)."""
        bound = self.options.range_probe_row_bound
        target = job.target
        if isinstance(target, TableTarget):
            if indexed:
                return None  # the index's two ends answer min and max
            what = f"no index leads with {job.export.range_column}, so min/max reads the table"
        else:
            assert isinstance(target, QueryTarget)
            unsafe = unsafe_to_execute(target.query)
            if unsafe:
                return (f"the query calls {', '.join(unsafe)}; running it to find min/max "
                        f"could have side effects")
            what = "min/max over a query runs the whole query"
        rows = plan.row_estimate
        if rows is None:
            return f"{what}, and its size is unknown"
        if rows >= bound:
            return f"{what}: ~{rows} rows, at or above the probe bound of {bound}"
        for scan in plan.full_scans:
            if isinstance(target, TableTarget) and scan.relation == target.rel:
                continue  # that is the row estimate itself
            info = infos.get(scan.relation) if scan.relation is not None else None
            size = info.rows if info is not None else scan.rows
            name = ".".join(p for p in scan.relation if p) if scan.relation else "a relation"
            if size is None:
                return f"{what}, and it reads {name} of unknown size in full"
            if size >= bound:
                return (f"{what}, and it reads {name} in full: ~{size} rows, at or above the "
                        f"probe bound of {bound}")
        if plan.examined_rows is not None and plan.examined_rows >= bound:
            return (f"{what}, and its plan examines ~{plan.examined_rows} rows, at or above the "
                    f"probe bound of {bound}")
        return None

    def _error_facts(self, what: str, error: BaseException | None) -> ExportFacts:
        if isinstance(error, _LaneDownError):
            message = str(error)
        elif isinstance(error, ProbeTimeoutError):
            message = f"{what} {error}"
        else:
            message = f"{what} failed: {error_text(error) if error else 'no result'}"
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


def _explain_probe(target: Target) -> Callable[[ProbeSession], PlanFacts]:
    return lambda session: session.explain(target)


def _min_max_probe(target: Target, column: str,
                   ) -> Callable[[ProbeSession], tuple[str | None, str | None]]:
    return lambda session: session.min_max(target, column)


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
                if history.problem:
                    update["notes"] = [*out[key].notes, history.problem]
                if update:
                    out[key] = out[key].model_copy(update=update)
    return out
