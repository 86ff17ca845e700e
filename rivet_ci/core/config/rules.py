"""Every load-time rule of rivet's config (spec rivet-config.md §3), each defined once, in the
order the checker runs them.

A rule is one `Rule`: its id (the spec's), rivet's stable error code, the field it points at,
our message, its condition and its class. *Static* rules depend only on the files in the
repository and are always checked; *environment* rules depend on the machine (an environment
variable being set, a file existing) and are checked only with `--check-environment` —
otherwise they are reported as a note that never blocks. rivet stops at the first failure; we
report every rule that fires, in rivet's order, so one run shows them all.

The rules of the text itself (stages R, P and T: substitution, the YAML, the typing) are
checked where the text is read (`loader`, `rivet_yaml`, `node_typing`), which take their
messages from here. The rules of the typed config (stage V) carry their condition: the
checker (`config_findings`) walks the config's places (the export list, the source, each
export, the `load:` blocks, ...) and at each place runs the rules that apply there, in the
order of `STAGES`. `RULES` lists them all; docs/configs.md's table is generated from it.
"""

from __future__ import annotations

import ipaddress
import math
import re
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from rivet_ci.core.common.limits import U64_MAX
from rivet_ci.core.config.models import (
    DEFAULT_CHUNK_SIZE,
    TUNING_KEYS,
    ExportConfig,
    LoadOverride,
    LoadPartition,
    LoadSection,
    SourceConfig,
)

RuleClass = Literal["static", "environment"]
Loc = tuple[str | int, ...]
Values = dict[str, Any]
S = TypeVar("S")


# The classes of the table are plain slotted classes, not dataclasses: a dataclass is built by
# generating and compiling its methods' source, ~3M instructions each in every process.

class Hit:
    """A rule fired at `loc` (below its place), not at its field: the field names a key the
    config chooses (`<key>`, `<knob>`)."""

    __slots__ = ("loc", "values")

    def __init__(self, loc: Loc, values: Values | None = None) -> None:
        self.loc = loc
        self.values: Values = values or {}


# What a condition returns: falsy = the rule holds; True = it fired at its field; the values
# its message names (fired at its field); or a `Hit`.
Fired = bool | Values | Hit | None


class Rule(Generic[S]):
    """One rule: its id (the spec's), rivet's error code (`rivet schema errors`; None: rivet
    prints none), the field it points at, our message, and `check(subject, scope)`, its
    condition over the place it applies to (an export, the source, a `load:` block, ...; None
    for a rule of the text, checked where the text is read). `loc` is where it points below
    its place, read off `field`."""

    __slots__ = ("check", "code", "field", "id", "klass", "loc", "message", "severity")

    def __init__(self, id: str, code: str | None, field: str, message: str,
                 check: Callable[[S, Scope], Fired] | None = None, *,
                 klass: RuleClass = "static",
                 severity: Literal["error", "warning"] = "error") -> None:
        self.id = id
        self.code = code
        self.field = field
        self.message = message
        self.check = check
        self.klass: RuleClass = klass
        self.severity: Literal["error", "warning"] = severity
        self.loc: Loc = _loc_of(field)

    def __repr__(self) -> str:
        return f"Rule({self.id!r})"

    def finding(self, base: Loc, fired: Fired) -> Finding:
        if isinstance(fired, Hit):
            return Finding((*base, *fired.loc), self.id, tuple(fired.values.items()))
        values = tuple(fired.items()) if isinstance(fired, dict) else ()
        return Finding((*base, *self.loc), self.id, values)


# A place's field prefix in the rules' `field`s, and the part below it as a location.
_PLACE_PREFIXES = ("exports[i].load.tables.<table>", "<load>.partition", "exports[i]", "source",
                   "load")


def _loc_of(field_text: str) -> Loc:
    """`exports[i].cdc.checkpoint` → ("cdc", "checkpoint"): where a rule points below its
    place (an export, the source, a `load:` block...); () where the field names a chosen key."""
    if "<" in field_text.removeprefix("exports[i].load.tables.<table>").removeprefix(
            "<load>.partition"):
        return ()
    for prefix in _PLACE_PREFIXES:
        if field_text == prefix or field_text.startswith(prefix + "."):
            rest = field_text[len(prefix) + 1:]
            return tuple(rest.split(".")) if rest else ()
    return tuple(field_text.split(".")) if field_text else ()


rule = Rule


class Group(Generic[S]):
    """Rules checked together at one kind of place, in order, where `modes`, `destinations`,
    `present` and `when` allow (None: always); `first`: alternatives, only the first that
    fires counts (rivet's if/else chains). An export's groups may apply only to some modes or
    destination types (chosen once per kind of export, not checked per export), or only where
    a field is set (`present`: not None)."""

    __slots__ = ("destinations", "first", "modes", "present", "rules", "step", "when")

    def __init__(self, rules: tuple[Rule[S], ...], *,
                 when: Callable[[S, Scope], bool] | None = None, first: bool = False,
                 modes: frozenset[str] | set[str] | None = None,
                 destinations: frozenset[str] | set[str] | None = None,
                 present: str | None = None) -> None:
        self.rules = rules
        self.when = when
        self.first = first
        self.modes = modes
        self.destinations = destinations
        self.present = present
        checks = []
        for one in rules:
            if one.check is None:
                raise TypeError(f"{one.id} has no condition: a rule of the text is no group's")
            checks.append((one.check, one))
        # The group as the checker's loop reads it (a tuple unpacks faster than fields).
        self.step: Step = (present, when, tuple(checks), first)


# present, when, each (condition, rule), first
Step = tuple[str | None, Callable[[Any, "Scope"], bool] | None,
             tuple[tuple[Callable[[Any, "Scope"], Fired], Rule[Any]], ...], bool]


class Scope:
    """One config file as the rules see it: the typed source and exports (index in
    `exports:`, export: those that typed), and what the file says around them: `count`, the
    items of `exports:`, typed or not; `exports_listed`, `exports:` is a list (or empty);
    `top_level_load`, a top-level `load:` is written, `load` it typed."""

    __slots__ = ("_by_name", "_cdc_exports", "count", "exports", "exports_listed", "load",
                 "owners", "path_exists", "query_file_exists", "source", "top_level_load")

    def __init__(self, source: SourceConfig | None, exports: list[tuple[int, ExportConfig]], *,
                 count: int = 0, exports_listed: bool = False, top_level_load: bool = False,
                 load: LoadSection | None = None,
                 path_exists: Callable[[str], bool] | None = None,
                 query_file_exists: Callable[[str], bool] | None = None) -> None:
        self.source = source
        self.exports = exports
        self.count = count
        self.exports_listed = exports_listed
        self.top_level_load = top_level_load
        self.load = load
        self.path_exists = path_exists
        self.query_file_exists = query_file_exists
        # Per rule, the first owner of each value (a name, a replication slot): `claim`.
        self.owners: dict[tuple[str, Any], Any] = {}
        self._cdc_exports: list[tuple[int, ExportConfig]] | None = None
        self._by_name: dict[str, ExportConfig] | None = None

    def claim(self, rule_id: str, value: Any, owner: Any) -> Any:
        """The first owner of `value` under `rule_id`; None when `owner` is the first."""
        key = (rule_id, value)
        if key in self.owners:
            return self.owners[key]
        self.owners[key] = owner
        return None

    @property
    def cdc_exports(self) -> list[tuple[int, ExportConfig]]:
        if self._cdc_exports is None:
            self._cdc_exports = [(i, e) for i, e in self.exports if e.mode == "cdc"]
        return self._cdc_exports

    @property
    def by_name(self) -> dict[str, ExportConfig]:
        if self._by_name is None:
            self._by_name = {e.name: e for _, e in self.exports}
        return self._by_name


# rivet's codes for several rules (`rivet schema errors`, rivet-cli 0.32.2), read off the
# binary's verdicts on the differential corpus (`tests/test_config_differential.py` checks each
# against them); None where rivet prints no code (a missing query_file is an OS error) or the
# rule is ours (`--param`).
_YAML = "RIVET_CONFIG_YAML_INVALID"
_MODE = "RIVET_CONFIG_MODE_SETTING_INVALID"
_RANGE = "RIVET_CONFIG_VALUE_OUT_OF_RANGE"
_SOURCE = "RIVET_CONFIG_EXPORT_SOURCE_INVALID"
_CONNECTION = "RIVET_CONFIG_SOURCE_CONNECTION_INVALID"
_AUTH = "RIVET_CONFIG_DESTINATION_AUTH_INVALID"
_CDC = "RIVET_CONFIG_CDC_SHAPE_INVALID"
_LOAD = "RIVET_CONFIG_LOAD_BLOCK_INVALID"
_PATH = "RIVET_CONFIG_PATH_UNSAFE"
_SECRET = "RIVET_CONFIG_SECRET_UNSET"
_UNREADABLE = "RIVET_CONFIG_FILE_UNREADABLE"
_CSV = "RIVET_CONFIG_CSV_COMPRESSION_UNSUPPORTED"
_ROW_HASH = "RIVET_CONFIG_ROW_HASH_INVALID"
_COLUMN_TABLE = "RIVET_CONFIG_COLUMN_OVERRIDE_TABLE_UNKNOWN"
_REJECTED = "RIVET_PLAN_REJECTED"
_ROLLOVER = "RIVET_CONFIG_CDC_ROLLOVER_INVALID"
_CDC_CONFLICT = "RIVET_CONFIG_CDC_RESOURCE_CONFLICT"
_MONGO = "RIVET_CONFIG_SOURCE_MODE_UNSUPPORTED"


# -- Stages R, P, T: the text (checked where it is read) ----------------------------------------

TEXT_RULES: tuple[Rule[None], ...] = (
    # Stage R — reading and substituting the text.
    rule("R0", None, "--param", "--param {item!r} is not KEY=VALUE (the '=' is missing); "
         "e.g. --param table=orders"),
    rule("R1", _UNREADABLE, "", "config file not found"),
    rule("R2", _UNREADABLE, "", "cannot read the config file: {reason}"),
    rule("R3", _SECRET, "${NAME}", "${{{name}}} is not set: give --param {name}=VALUE (it wins "
         "over the environment) or set the environment variable {name} (rivet refuses to "
         "substitute an empty string for it)", klass="environment"),
    rule("R3-value", _SECRET, "<key>", "its value comes from ${{NAME}}, which is not set, so it "
         "cannot be checked or planned", klass="environment"),
    rule("R4", _SECRET, "${NAME}", "the value for ${{{name}}} contains a NUL byte; rivet refuses "
         "to substitute it", klass="environment"),
    # Stage P — the YAML itself and rivet's raw pre-scans.
    rule("P0-syntax", _YAML, "", "invalid YAML: <parser message> (with a hint for TAB "
         "indentation and for unquoted {{...}} values)"),
    rule("P0-multi-document", _YAML, "", "a config must be one YAML document"),
    rule("P0-bom", _YAML, "", "the file starts with a byte-order mark directly followed by "
         "content, which rivet refuses (a BOM before a blank or comment line it skips); save it "
         "as UTF-8 without a BOM"),
    rule("P0-duplicate-key", _YAML, "<key>", "duplicate key `<key>`: rivet refuses the file"),
    rule("P0-huge-int", _YAML, "<key>", "an integer beyond 64 bits is refused anywhere in the "
         "file"),
    rule("P0-depth", _YAML, "", "nested deeper than 128 levels (recursion limit exceeded)"),
    rule("P0-repetition", _YAML, "", "aliases expand beyond rivet's bound (repetition limit "
         "exceeded)"),
    rule("P1a", _YAML, "source.<key>", "{fields} belong under `source.tuning:`, not directly "
         "under `source:`"),
    rule("P1b", _YAML, "exports[i].<key>", "{fields} belong under the export's `tuning:`, not "
         "directly in the export"),
    rule("P2a", _CSV, "exports[i].compression", "CSV output cannot be compressed ({codec}): the "
         "codec would be silently dropped; use format: parquet or compression: none"),
    rule("P2b", _CSV, "exports[i].compression_profile", "CSV output cannot use "
         "compression_profile {value} (it picks a codec CSV cannot apply); use format: parquet "
         "or compression_profile: none"),
    rule("P3", "RIVET_CONFIG_TLS_VERIFICATION_DOWNGRADE", "source.tls.<knob>", "{knob}: true "
         "turns the explicit `mode: {mode}` into trust-anything TLS (open to "
         "man-in-the-middle); trust a private CA with ca_file, or drop the explicit mode for a "
         "loopback dev container"),
    # Stage T — typing against the schema.
    rule("T-unknown-key", _YAML, "<key>", "unknown key `<key>` (did you mean `<candidate>`?)"),
    rule("T-missing", _YAML, "<key>", "missing required key `<key>`"),
    rule("T-type", _YAML, "<key>", "expected <type>, got <value>"),
    rule("T-enum", _YAML, "<key>", "unknown value <value>, expected one of <values>"),
    rule("T-range", _YAML, "<key>", "<n> is out of range: expected an integer from 0 to <max>"),
    rule("T-row-hash", _YAML, "exports[i].meta_columns.row_hash", "row_hash must be true, false "
         "or a list of column names"),
    rule("T-key", _YAML, "<key>", "a mapping or list cannot be a key"),
)


# -- Stage V: the export list and the source -----------------------------------------------------

LIST_RULES: tuple[Group[Scope], ...] = (Group((
    rule("V-L1", "RIVET_CONFIG_NO_EXPORTS", "exports", "at least one export must be defined (the "
         "list is empty)", lambda f, s: f.count == 0),
),),)


def _duplicate_name(x: tuple[ExportConfig, int], s: Scope) -> Fired:
    first = s.claim("V-L2", x[0].name, x[1])
    return {"name": x[0].name, "first": first} if first is not None else None


# Over each export that typed, with its index (`_each_export_indexed`).
LIST_EXPORT_RULES: tuple[Group[tuple[ExportConfig, int]], ...] = (Group((
    rule("V-L2", "RIVET_CONFIG_DUPLICATE_EXPORT", "exports[i].name", "export name {name!r} is "
         "used twice (first at exports[{first}]); names must be unique, rivet keys its state by "
         "name", _duplicate_name),
),),)


def _urls(source: SourceConfig) -> list[str]:
    return [k for k in ("url", "url_env", "url_file") if getattr(source, k) is not None]


def _structured(source: SourceConfig) -> list[str]:
    return [k for k in ("host", "user", "database", "password", "password_env")
            if getattr(source, k) is not None]


def _both_batch_sizes(tuning: Any) -> bool:
    return bool(tuning is not None and tuning.batch_size is not None
                and tuning.batch_size_memory_mb is not None)


SOURCE_RULES: tuple[Group[SourceConfig], ...] = (Group((
    rule("V-S1", _RANGE, "source.tuning", "batch_size and batch_size_memory_mb cannot both be "
         "set; prefer batch_size_memory_mb, or set batch_size alone to pin a row count",
         lambda c, s: _both_batch_sizes(c.tuning)),
    rule("V-S2", _CONNECTION, "source", "no way to connect: give url_env (recommended), url, "
         "url_file, or host/user/database", lambda c, s: not _urls(c) and not _structured(c)),
    rule("V-S3", _CONNECTION, "source.<url key>", "give exactly one of url, url_env, url_file "
         "({count} are set); url_env keeps credentials out of the YAML",
         lambda c, s: len(u := _urls(c)) > 1 and Hit((u[1],), {"count": len(u)})),
    rule("V-S4", _CONNECTION, "source.<key>", "give either a URL (url/url_env/url_file) or "
         "structured fields (host/user/database/password...), not both",
         lambda c, s: bool(_urls(c)) and bool(k := _structured(c)) and Hit((k[0],))),
    # A structured connection (no URL at all):
    rule("V-S5", _CONNECTION, "source.host", "structured connection without `host`",
         lambda c, s: c.host is None and not _urls(c) and bool(_structured(c))),
    rule("V-S6", _CONNECTION, "source.user", "structured connection without `user`",
         lambda c, s: c.user is None and not _urls(c) and bool(_structured(c))),
    rule("V-S7", _CONNECTION, "source.database", "structured connection without `database`",
         lambda c, s: c.database is None and not _urls(c) and bool(_structured(c))),
    rule("V-S8", _CONNECTION, "source.password", "give password or password_env, not both "
         "(prefer password_env)",
         lambda c, s: c.password is not None and c.password_env is not None and not _urls(c)),
),),)


# -- Stage V: each export ------------------------------------------------------------------------

def _first_unsafe(names: tuple[str, ...]) -> str | None:
    return next((n for n in names if not filename_safe(n)), None)


def _first_repeated(items: tuple[str, ...]) -> str | None:
    seen: set[str] = set()
    for item in items:
        if item in seen:
            return item
        seen.add(item)
    return None


def _unsafe_table_entry(e: ExportConfig) -> Fired:
    entry = _first_unsafe(e.tables or ())
    return {"entry": escape_default(entry)} if entry is not None else None


def _repeated_row_hash_column(e: ExportConfig) -> Fired:
    assert isinstance(e.meta_columns.row_hash, tuple)
    column = _first_repeated(e.meta_columns.row_hash)
    return {"column": column} if column is not None else None


def _partition_token_missing(e: ExportConfig) -> bool:
    return "{partition}" not in (e.destination.path or "") and \
        "{partition}" not in (e.destination.prefix or "")


def _effective_batch_sizes(e: ExportConfig, s: Scope) -> bool:
    merged = merged_tuning(e, s.source)
    return "batch_size" in merged and "batch_size_memory_mb" in merged


def _has_tuning(e: ExportConfig, s: Scope) -> bool:
    return e.tuning is not None or (s.source is not None and s.source.tuning is not None)


def _readings(e: ExportConfig) -> list[str]:
    """The keys of `query`, `query_file`, `table`, `tables` the export sets, in that order."""
    return [k for k, v in (("query", e.query), ("query_file", e.query_file), ("table", e.table),
                           ("tables", e.tables)) if v is not None]


def _several_readings(e: ExportConfig) -> Fired:
    given = _readings(e)
    count = len(given)
    both = e.table is not None and e.tables is not None
    if count > 1 and not (both and count == 2):
        return Hit((given[1],), {"count": count})
    return None


def _parent_in_local_path(e: ExportConfig, s: Scope) -> Fired:  # noqa: ARG001
    d = e.destination
    for key, value in (("path", d.path), ("prefix", d.prefix)):
        if value is not None and _has_parent_component(value):
            return Hit(("destination", key), {"key": key, "value": value})
    return None


def _remote_endpoint(e: ExportConfig) -> Fired:
    d = e.destination
    if d.endpoint is not None and not d.allow_anonymous and \
            not is_loopback(endpoint_host(d.endpoint)):
        return {"endpoint": d.endpoint}
    return None


def _credentials_file_missing(e: ExportConfig, s: Scope) -> Fired:
    path = e.destination.credentials_file
    assert path is not None
    return {"path": path} if s.path_exists is None or not s.path_exists(path) else None


_MODE_KNOBS = ("chunk_column", "chunk_by_key", "chunk_count", "chunk_size_memory_mb",
               "chunk_max_attempts")


def _knob_outside_chunked(e: ExportConfig, s: Scope) -> Fired:  # noqa: ARG001
    """The first knob only `mode: chunked` reads that the export sets, outside that mode."""
    if e.mode == "chunked":
        return None
    knob = next((k for k in _MODE_KNOBS if getattr(e, k) is not None), None)
    if knob is None:
        knob = ("chunk_checkpoint" if e.chunk_checkpoint
                else "keyset_incremental" if e.keyset_incremental
                else "chunk_size" if e.chunk_size != DEFAULT_CHUNK_SIZE
                else None)
    return Hit((knob,), {"knob": knob, "mode": e.mode}) if knob is not None else None


def _last_segment(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _captured(e: ExportConfig) -> tuple[str, ...]:
    """The tables an export reads by name (`table:`, `tables:`)."""
    return ((e.table,) if e.table is not None else ()) + (e.tables or ())


def _qualified_override(e: ExportConfig, *, by_query: bool) -> Fired:
    """The first `columns:` key `table.column` that the export cannot apply: any, when it
    reads a query; one naming a table it does not read, otherwise."""
    captured = {_last_segment(t) for t in _captured(e)}
    for key in e.columns:
        if "." not in key:
            continue
        if by_query:
            return Hit(("columns", key), {"key": key})
        table = key.split(".", 1)[0]
        if table not in captured:
            return Hit(("columns", key), {"key": key, "table": table})
    return None


def _reads_query(e: ExportConfig) -> bool:
    return e.query is not None or e.query_file is not None


def _bad_column_type(e: ExportConfig) -> Fired:
    for key, value in e.columns.items():
        reason = column_type_problem(value)
        if reason is not None:
            return Hit(("columns", key), {"key": key, "reason": reason})
    return None


def _engine(s: Scope) -> str:
    assert s.source is not None
    return _ENGINE_NAMES[s.source.type]


def _needs_table_shortcut(e: ExportConfig) -> bool:
    """A chunked export whose knobs rivet can only check with `table:` — and has no `table:`."""
    return e.table is None and not (e.chunk_column is not None and e.chunk_size_memory_mb is None)


def _key_with_range_knob(e: ExportConfig) -> Fired:
    if e.chunk_by_key is None:
        return None
    for knob, present in (("chunk_column", e.chunk_column is not None),
                          ("chunk_by_days", e.chunk_by_days is not None),
                          ("chunk_count", e.chunk_count is not None)):
        if present:
            return Hit((knob,), {"knob": knob})
    return None


_DURATION = re.compile(r"([0-9]+)([smhd])\Z")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
SETTLE_MAX_SECONDS = 2**31 - 1


def _settle_seconds(e: ExportConfig) -> int | None:
    """`settle.after` in seconds; None when it is not a positive duration."""
    assert e.settle is not None
    match = _DURATION.match(e.settle.after)
    if match is None or int(match.group(1)) == 0:
        return None
    return int(match.group(1)) * _SECONDS[match.group(2)]


_IDENTIFIER_CHARS = frozenset(string.ascii_letters + string.digits + "_")
# A `table:` none of V-E38 refuses (what nearly every export writes): the rules are skipped.
_PLAIN_TABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?\Z")


def _table_text(e: ExportConfig) -> str:
    assert e.table is not None
    return e.table.strip()


def _bad_segment(e: ExportConfig, rule_id: str) -> Fired:
    """V-E38d/e: the first segment of `table:` that is not an unquoted identifier, if it fails
    the way `rule_id` says (d: its first character, e: another)."""
    for segment in _table_text(e).split("."):
        first = segment[0]
        if not (first == "_" or (first.isascii() and first.isalpha())):
            return {"segment": segment} if rule_id == "V-E38d" else None
        if not set(segment) <= _IDENTIFIER_CHARS:
            return {"segment": segment} if rule_id == "V-E38e" else None
    return None


def _query_file_missing(e: ExportConfig, s: Scope) -> Fired:
    path = e.query_file
    assert path is not None and s.query_file_exists is not None
    if path.startswith("/") or _has_parent_component(path) or s.query_file_exists(path):
        return None
    return {"path": path}


_CLOUD = frozenset({"s3", "gcs", "azure"})
_BATCH_MODES = frozenset({"full", "incremental", "chunked", "time_window"})

# Each export's rules, in rivet's order (V-E1..V-E40; V-E37 needs the other exports: below).
EXPORT_RULES: tuple[Group[ExportConfig], ...] = (
    Group((
        rule("V-E1", _PATH, "exports[i].name", "export name '{name}' is not filename-safe: no "
             "'/', '\\', '..', NUL, no leading '.', not absolute (it names output paths and "
             "state keys)",
             lambda e, s: not filename_safe(e.name) and {"name": escape_default(e.name)}),
    )),
    Group((
        rule("V-E2", _PATH, "exports[i].tables", "tables entry '{entry}' is not filename-safe: no "
             "'/', '\\', '..', NUL, no leading '.' (each table becomes a path segment)",
             lambda e, s: _unsafe_table_entry(e)),
    ), present="tables"),
    Group((  # a row_hash written as a list of columns
        rule("V-E3a", _ROW_HASH, "exports[i].meta_columns.row_hash", "row_hash is an empty "
             "list, which covers nothing: use true for every column or name the columns",
             lambda e, s: not e.meta_columns.row_hash),
        rule("V-E3b", _ROW_HASH, "exports[i].meta_columns.row_hash", "row_hash lists {column!r} "
             "twice", lambda e, s: _repeated_row_hash_column(e)),
        rule("V-E4", _ROW_HASH, "exports[i].meta_columns.row_hash", "a row_hash column list "
             "names one table's columns and cannot apply to a multi-table `tables:` stream; use "
             "one export per table or row_hash: true", lambda e, s: e.tables is not None),
    ), when=lambda e, s: isinstance(e.meta_columns.row_hash, tuple)),
    Group((
        rule("V-E5a", _MODE, "exports[i].partition_by", "partition_by must name a column",
             lambda e, s: not (e.partition_by or "").strip()),
        rule("V-E5b", _PATH, "exports[i].partition_by", "partition_by column '{column}' is not "
             "filename-safe (it becomes a col=value path segment)",
             lambda e, s: bool((pb := e.partition_by or "").strip()) and not filename_safe(pb)
             and {"column": escape_default(pb)}),
        rule("V-E5c", _MODE, "exports[i].partition_by", "partition_by does not work with mode: "
             "{mode} (it lays out batch output; partition a full, chunked or incremental "
             "export)", lambda e, s: e.mode in ("time_window", "cdc") and {"mode": e.mode}),
        rule("V-E5d", _MODE, "exports[i].partition_by", "partition_by does not work with a "
             "`load:` block (the loader would load one partition and cleanup_source would wipe "
             "the rest)", lambda e, s: e.load is not None or s.top_level_load),
        rule("V-E5e", _MODE, "exports[i].partition_by", "partition_by does not work with "
             "chunk_by_key (partitioning wraps the query, so the keyset index cannot be "
             "verified)", lambda e, s: e.chunk_by_key is not None),
        rule("V-E5f", _MODE, "exports[i].partition_by", "partition_by needs a '{{partition}}' "
             "token in destination.path or destination.prefix, or every partition overwrites "
             "the same place", lambda e, s: _partition_token_missing(e)),
    ), present="partition_by"),
    Group((
        rule("V-E6", _RANGE, "exports[i].chunk_size_memory_mb", "chunk_size and "
             "chunk_size_memory_mb cannot both be set (the memory budget decides the window "
             "size; chunk_size would be ignored)",
             lambda e, s: e.chunk_size != DEFAULT_CHUNK_SIZE),
    ), present="chunk_size_memory_mb"),
    Group((
        rule("V-E7", _RANGE, "exports[i].tuning", "the effective tuning (export over source) "
             "sets both batch_size and batch_size_memory_mb, which exclude each other",
             _effective_batch_sizes),
        # (the export's own tuning sets both: then the effective one does too, V-E7)
        rule("V-E8", _RANGE, "exports[i].tuning", "tuning.batch_size and "
             "tuning.batch_size_memory_mb cannot both be set",
             lambda e, s: _both_batch_sizes(e.tuning)),
    ), when=_has_tuning),
    Group((  # what the export reads (unless it names exactly one of them)
        rule("V-E9", _SOURCE, "exports[i].tables", "`table:` and `tables:` exclude each other; "
             "use tables: [a, b] for a multi-table stream",
             lambda e, s: e.table is not None and e.tables is not None),
        rule("V-E10a", _SOURCE, "exports[i]", "give one of query, query_file, table or tables "
             "(table: for a whole table, query: for inline SQL, query_file: for SQL kept in a "
             "file)", lambda e, s: e.table is None and e.tables is None and e.query is None
             and e.query_file is None),
        rule("V-E10b", _SOURCE, "exports[i].<second key>", "give exactly one of query, "
             "query_file, table, tables ({count} are set)", lambda e, s: _several_readings(e)),
    ), when=lambda e, s: (e.query is not None) + (e.query_file is not None) + (e.table is not None)
        + (e.tables is not None) != 1),
    Group((
        rule("V-E11a", _SOURCE, "exports[i].query_file", "query_file must be a relative path: "
             "'{path}'", lambda e, s: (p := e.query_file or "").startswith("/")
             and {"path": p}),
        rule("V-E11b", _SOURCE, "exports[i].query_file", "query_file must not contain '..': "
             "'{path}'", lambda e, s: not (p := e.query_file or "").startswith("/")
             and _has_parent_component(p) and {"path": p}),
    ), present="query_file"),
    Group((
        rule("V-E13", _PATH, "exports[i].destination.<path|prefix>", "local destination {key} "
             "'{value}' must not contain a '..' component (it would write outside the output "
             "tree)", _parent_in_local_path),
    ), destinations={"local"}),
    Group((
        rule("V-E12", "RIVET_CONFIG_DESTINATION_ENDPOINT_UNSAFE", "exports[i].destination."
             "endpoint", "destination.endpoint '{endpoint}' is not a loopback host: a committed "
             "custom endpoint sends every upload elsewhere; drop it, point it at a loopback "
             "emulator, or set allow_anonymous: true for an anonymous emulator",
             lambda e, s: _remote_endpoint(e)),
        rule("V-E14", _AUTH, "exports[i].destination", "S3 needs both access_key_env and "
             "secret_key_env, or neither (default AWS credential chain)",
             lambda e, s: e.destination.type == "s3" and (e.destination.access_key_env is None)
             != (e.destination.secret_key_env is None)),
        rule("V-E15", _AUTH, "exports[i].destination.allow_anonymous", "GCS allow_anonymous and "
             "credentials_file exclude each other",
             lambda e, s: e.destination.type == "gcs" and e.destination.allow_anonymous
             and e.destination.credentials_file is not None),
    ), destinations=_CLOUD),
    Group((  # an Azure destination's credentials: the first of these that fires
        rule("V-E16a", _AUTH, "exports[i].destination.allow_anonymous", "Azure allow_anonymous "
             "excludes account_name, account_key_env and sas_token_env",
             lambda e, s: e.destination.allow_anonymous and any(
                 v is not None for v in (e.destination.account_name,
                                         e.destination.account_key_env,
                                         e.destination.sas_token_env))),
        rule("V-E16b", _AUTH, "exports[i].destination.sas_token_env", "Azure account_key_env "
             "and sas_token_env exclude each other; pick one way to authenticate",
             lambda e, s: not e.destination.allow_anonymous
             and e.destination.account_key_env is not None
             and e.destination.sas_token_env is not None),
        rule("V-E16c", _AUTH, "exports[i].destination", "Azure needs account_name (with "
             "account_key_env or sas_token_env), or allow_anonymous: true for Azurite",
             lambda e, s: not e.destination.allow_anonymous
             and e.destination.account_name is None),
        rule("V-E16d", _AUTH, "exports[i].destination", "Azure needs account_key_env or "
             "sas_token_env (or allow_anonymous: true for Azurite)",
             lambda e, s: not e.destination.allow_anonymous
             and e.destination.account_key_env is None and e.destination.sas_token_env is None),
    ), destinations={"azure"}, first=True),
    Group((
        rule("V-E17", _SECRET, "exports[i].destination.credentials_file", "credentials_file "
             "'{path}' does not exist", _credentials_file_missing, klass="environment"),
    ), when=lambda e, s: e.destination.credentials_file is not None),
    Group((
        rule("V-E18", _RANGE, "exports[i].max_file_size", "max_file_size '{value}' is not a size "
             "(e.g. 256MB, 1.5GB, 1048576)",
             lambda e, s: max_file_size_bytes(v := e.max_file_size or "") is None
             and {"value": v}),
    ), present="max_file_size"),
    Group((
        rule("V-E19a", _RANGE, "exports[i].compression_level", "zstd compression_level must be "
             "1..22, got {level}", lambda e, s: e.compression == "zstd"
             and not 1 <= (n := e.compression_level or 0) <= 22 and {"level": n}),
        rule("V-E19b", _RANGE, "exports[i].compression_level", "gzip compression_level must be "
             "0..9, got {level}", lambda e, s: e.compression == "gzip"
             and (n := e.compression_level or 0) > 9 and {"level": n}),
        rule("V-E19c", _RANGE, "exports[i].compression_level", "compression_level applies only "
             "to zstd and gzip (compression is {compression})",
             lambda e, s: e.compression in ("snappy", "lz4", "none")
             and {"compression": e.compression}),
    ), present="compression_level"),
    # What the export's mode needs (V-E20).
    Group((
        rule("V-E20a", _MODE, "exports[i].cursor_column", "incremental mode needs cursor_column",
             lambda e, s: e.cursor_column is None),
        rule("V-E20b", _MODE, "exports[i].cursor_fallback_column", "incremental_cursor_mode: "
             "coalesce needs cursor_fallback_column",
             lambda e, s: e.incremental_cursor_mode == "coalesce"
             and e.cursor_fallback_column is None),
        rule("V-E20c", _MODE, "exports[i].cursor_fallback_column", "cursor_fallback_column is "
             "only valid with incremental_cursor_mode: coalesce",
             lambda e, s: e.incremental_cursor_mode == "single_column"
             and e.cursor_fallback_column is not None),
    ), modes={"incremental"}),
    Group((
        rule("V-E20d", _MODE, "exports[i].mode", "chunked mode needs a chunking strategy: "
             "chunk_column, chunk_by_key, chunk_count or chunk_by_days — or the `table:` "
             "shortcut, whose integer primary key rivet resolves",
             lambda e, s: e.chunk_column is None and e.chunk_by_key is None
             and e.chunk_count is None and e.chunk_by_days is None and e.table is None),
        rule("V-E20e", _MODE, "exports[i].chunk_size", "chunked mode needs chunk_size >= 1 (got "
             "0)", lambda e, s: e.chunk_size == 0),
        rule("V-E20f", _MODE, "exports[i].parallel", "chunked mode needs parallel >= 1 (got 0)",
             lambda e, s: e.parallel == 0),
        rule("V-E20g", "RIVET_CONFIG_CHUNK_COUNT_INVALID", "exports[i].chunk_count", "chunk_count "
             "must be at least 1", lambda e, s: e.chunk_count == 0),
        rule("V-E20i", _MODE, "exports[i].chunk_by_days", "chunk_count and chunk_by_days exclude "
             "each other (N integer chunks, or D-day windows of a date column)",
             lambda e, s: e.chunk_count is not None and e.chunk_by_days is not None),
    ), modes={"chunked"}),
    Group((
        rule("V-E20j", _MODE, "exports[i].time_column", "time_window mode needs time_column",
             lambda e, s: e.time_column is None),
        rule("V-E20k", _MODE, "exports[i].days_window", "time_window mode needs days_window",
             lambda e, s: e.days_window is None),
    ), modes={"time_window"}),
    Group((
        rule("V-E20l", _CDC, "exports[i].mode", "cdc mode needs `table:` (or `tables:` for a "
             "multi-table stream)", lambda e, s: e.table is None and e.tables is None),
        rule("V-E20m", _CDC, "exports[i].tables", "`tables:` must list at least one table",
             lambda e, s: e.tables is not None and not e.tables),
        rule("V-E20n", _CDC, "exports[i].tables", "table {table!r} is listed twice in `tables:`",
             lambda e, s: (t := _first_repeated(e.tables or ())) is not None and {"table": t}),
        rule("V-E20o", _CDC, "exports[i].tables", "`tables:` is not supported for SQL Server cdc "
             "(capture instances are per table): use one cdc export per table",
             lambda e, s: e.tables is not None and s.source is not None
             and s.source.type == "mssql"),
        rule("V-E20p", _CDC, "exports[i].<query|query_file>", "cdc mode reads the transaction "
             "log, not a query: remove query/query_file and use `table:`",
             lambda e, s: _reads_query(e)
             and Hit(("query" if e.query is not None else "query_file",))),
    ), modes={"cdc"}),
    # Knobs written outside the mode that reads them.
    Group((
        rule("V-E21", _MODE, "exports[i].tables", "`tables:` is only valid with mode: cdc (a "
             "batch export reads one query or table)", lambda e, s: e.mode != "cdc"),
    ), present="tables"),
    Group((
        rule("V-E23", _MODE, "exports[i].<knob>", "{knob} needs mode: chunked — in mode: {mode} "
             "it is ignored and the whole table is read in one unbounded snapshot; add mode: "
             "chunked or remove {knob}",
             _knob_outside_chunked),
        rule("V-E24", _MODE, "exports[i].keyset_incremental", "keyset_incremental: true needs "
             "chunk_by_key (it continues from the last exported key; a range chunk_column has "
             "no such key)", lambda e, s: e.keyset_incremental and e.chunk_by_key is None),
    )),
    Group((
        rule("V-E25", _MODE, "exports[i].cdc", "a `cdc:` block is only valid with mode: cdc",
             lambda e, s: e.mode != "cdc"),
    ), present="cdc"),
    Group((  # column overrides (nearly every export has none)
        rule("V-E26a", _COLUMN_TABLE, "exports[i].columns.<key>", "qualified column override "
             "'{key}' needs a table-shaped export (table:/tables:), not a query",
             lambda e, s: _reads_query(e) and _qualified_override(e, by_query=True)),
        rule("V-E26b", _COLUMN_TABLE, "exports[i].columns.<key>", "column override '{key}' names "
             "table '{table}', which this export does not read; fix the table name or use a "
             "bare column key",
             lambda e, s: not _reads_query(e) and _qualified_override(e, by_query=False)),
        # rivet's plan reads the types before it connects
        rule("V-E40", "RIVET_CONFIG_COLUMN_OVERRIDE_TYPE_INVALID", "exports[i].columns.<key>",
             "column override for {key!r}: {reason}",
             lambda e, s: e.mode != "cdc" and _bad_column_type(e)),
    ), when=lambda e, s: bool(e.columns)),
    Group((  # an export with a `cdc:` section or `mode: cdc`
        rule("V-E27", _CDC, "exports[i].cdc.initial", "a table named 'snapshot' collides with "
             "the snapshot/ sub-prefix that cdc.initial: snapshot writes; rename it or use "
             "another export without initial",
             lambda e, s: e.cdc is not None and e.cdc.initial == "snapshot"
             and any(_last_segment(t) == "snapshot" for t in _captured(e))),
        rule("V-E28", _MODE, "exports[i].cdc.checkpoint", "cdc.initial on {engine} needs "
             "cdc.checkpoint (the file is the only resume anchor; without it every run skips "
             "the changes since the last one)",
             lambda e, s: s.source is not None and e.cdc is not None
             and e.cdc.initial is not None and s.source.type != "postgres"
             and e.cdc.checkpoint is None and {"engine": _engine(s)}),
        rule("V-E29", _MODE, "exports[i].cdc.checkpoint", "{engine} mode: cdc needs "
             "cdc.checkpoint (no server-side resume anchor; without it every run loses the "
             "changes between runs)",
             lambda e, s: s.source is not None and e.mode == "cdc"
             and s.source.type in ("mongo", "mysql", "oracle")
             and (e.cdc is None or e.cdc.checkpoint is None)
             and Hit(("cdc",), {"engine": _engine(s)})),
        rule("V-E36a", _ROLLOVER, "exports[i].cdc.rollover", "cdc.rollover must be >= 1 (got 0): "
             "a zero rollover rolls a part on every event",
             lambda e, s: s.source is not None and e.cdc is not None and e.cdc.rollover == 0),
        rule("V-E36b", _ROLLOVER, "exports[i].cdc.rollover_memory_mb", "cdc.rollover_memory_mb "
             "must be >= 1 (got 0): a zero budget rolls a part on every event",
             lambda e, s: s.source is not None and e.cdc is not None
             and e.cdc.rollover_memory_mb == 0),
    ), when=lambda e, s: e.cdc is not None or e.mode == "cdc"),
    Group((
        rule("V-E31a", _MODE, "exports[i].chunk_by_days", "chunk_by_days needs mode: chunked",
             lambda e, s: e.mode != "chunked"),
        rule("V-E31c", "RIVET_CONFIG_CHUNK_BY_DAYS_INVALID", "exports[i].chunk_by_days",
             "chunk_by_days must be at least 1", lambda e, s: e.chunk_by_days == 0),
    ), present="chunk_by_days"),
    Group((
        rule("V-E32", _MODE, "exports[i].chunk_dense", "`chunk_dense` was removed in rivet 0.32 "
             "(it re-numbered rows per chunk and skipped or duplicated rows under concurrent "
             "writes); use `chunk_by_key: <unique key>` (keyset) or `chunk_column:` range "
             "chunking", lambda e, s: bool(e.chunk_dense)),
    )),
    Group((  # a chunked export's knobs, checked before rivet connects: the first that fires
        rule("V-E33a", _RANGE, "exports[i].<knob>", "chunk_by_key and {knob} are mutually "
             "exclusive", lambda e, s: _key_with_range_knob(e)),
        rule("V-E33b", _MODE, "exports[i].chunk_by_key", "`chunk_by_key:` needs the `table:` "
             "shortcut so the planner can verify the key is backed by a unique index; set "
             "`table:` instead of a query",
             lambda e, s: e.chunk_by_key is not None and _needs_table_shortcut(e)),
        rule("V-E33c", _MODE, "exports[i].chunk_size_memory_mb", "`chunk_size_memory_mb:` only "
             "applies with the `table:` shortcut — set `table:` or remove it and keep an "
             "explicit `chunk_size:`",
             lambda e, s: e.chunk_size_memory_mb is not None and _needs_table_shortcut(e)),
        rule("V-E33d", _MODE, "exports[i].chunk_column", "chunked mode requires 'chunk_column' "
             "(auto-resolve from the primary key is only supported with the `table:` shortcut)",
             lambda e, s: (e.chunk_count is not None or e.chunk_by_days is not None)  # (else
             and _needs_table_shortcut(e)),  # V-E20d)
    ), modes={"chunked"}, first=True),
    Group((  # rivet's plan checks these before it connects
        rule("V-E34a", _REJECTED, "exports[i].max_file_size", "max_file_size cannot be used with "
             "a stdout destination (file splitting needs named output files)",
             lambda e, s: e.max_file_size is not None),
        rule("V-E34b", _REJECTED, "exports[i].destination", "chunked mode cannot be used with a "
             "stdout destination (each chunk is a separate binary stream; concatenated output "
             "is unusable)", lambda e, s: e.mode == "chunked" and e.chunk_column is not None
             and e.chunk_by_key is None),
    ), destinations={"stdout"}),
    Group((
        rule("V-E35a", _MODE, "exports[i].settle", "`settle` requires mode: incremental (it "
             "bounds the incremental cursor query and would be ignored in mode: {mode})",
             lambda e, s: e.mode != "incremental" and {"mode": e.mode}),
        rule("V-E35b", _RANGE, "exports[i].settle.after", "settle.after {after!r} is not a "
             "duration: use a positive number with a unit, `90s`, `30m`, `1h` or `2d`",
             lambda e, s: e.settle is not None and _settle_seconds(e) is None
             and {"after": e.settle.after}),
        rule("V-E35c", _RANGE, "exports[i].settle.after", "settle.after {after!r} exceeds "
             "2147483647 seconds (~68 years), the largest age every source can compute",
             lambda e, s: e.settle is not None
             and (_settle_seconds(e) or 0) > SETTLE_MAX_SECONDS and {"after": e.settle.after}),
    ), present="settle"),
    Group((  # a `table:` is `<name>` or `<schema>.<name>`, each an unquoted identifier
        rule("V-E38a", _SOURCE, "exports[i].table", "'table' is empty",
             lambda e, s: not _table_text(e)),
        rule("V-E38b", _SOURCE, "exports[i].table", "'table' must be `<name>` or "
             "`<schema>.<name>` (got {table!r})",
             lambda e, s: len((t := _table_text(e)).split(".")) > 2 and {"table": t}),
        rule("V-E38c", _SOURCE, "exports[i].table", "'table' has an empty segment in {table!r}",
             lambda e, s: "" in (t := _table_text(e)).split(".") and {"table": t}),
        rule("V-E38d", _SOURCE, "exports[i].table", "'table' segment {segment!r} must start "
             "with a letter or underscore (use 'query:' for quoted identifiers)",
             lambda e, s: _bad_segment(e, "V-E38d")),
        rule("V-E38e", _SOURCE, "exports[i].table", "'table' segment {segment!r} contains "
             "non-identifier characters (use 'query:' for quoted identifiers)",
             lambda e, s: _bad_segment(e, "V-E38e")),
        # (a `table:` of an unset `${NAME}`: R3)
    ), modes=_BATCH_MODES, present="table", first=True,
        when=lambda e, s: "${" not in (t := e.table or "")
        and _PLAIN_TABLE.match(t.strip()) is None),
    Group((
        rule("V-E39", None, "exports[i].query_file", "query_file {path!r} does not exist "
             "(relative to the config's directory)", _query_file_missing),
    ), present="query_file", when=lambda e, s: s.query_file_exists is not None),
)


# -- Stage V: what needs the other exports of the file -------------------------------------------

def _backfill_tables(e: ExportConfig) -> list[str]:
    return [t.strip() for t in _captured(e)]


def _auto_backfill_missing(e: ExportConfig, s: Scope) -> Fired:
    readers = {(b.table or "").strip() for b in s.by_name.values()
               if b.mode != "cdc" and b.table is not None}
    missing = [t for t in _backfill_tables(e) if t not in readers]
    return {"table": missing[0]} if missing else None


def _named_backfill(e: ExportConfig, s: Scope) -> tuple[str, Values] | set[str]:
    """The first export `cdc.backfill` names that cannot give the baseline (the rule and its
    values), or the tables the named exports cover."""
    assert e.cdc is not None and isinstance(e.cdc.backfill, tuple)
    captured = _backfill_tables(e)
    covered: set[str] = set()
    for name in e.cdc.backfill:
        named = s.by_name.get(name)
        if named is None:
            return "V-E37b", {"name": name}
        if named is e:
            return "V-E37c", {}
        if (named.table or "").strip() not in captured:
            return "V-E37d", {"name": name, "table": (named.table or named.query or
                                                      named.query_file or "").strip()}
        covered.add((named.table or "").strip())
    return covered


def _backfill_refused(e: ExportConfig, s: Scope, rule_id: str) -> Fired:
    found = _named_backfill(e, s)
    return isinstance(found, tuple) and found[0] == rule_id and (found[1] or True)


def _backfill_uncovered(e: ExportConfig, s: Scope) -> Fired:
    covered = _named_backfill(e, s)
    if isinstance(covered, tuple):
        return None
    captured = _backfill_tables(e)
    missing = [t for t in captured if t not in covered]
    if not missing:
        return None
    return {"covered": len(captured) - len(missing), "total": len(captured),
            "missing": ", ".join(missing)}


_BACKFILL_AT = "exports[i].cdc.backfill"

# A cdc export with `cdc.backfill`: the batch exports that take its baseline.
BACKFILL_RULES: tuple[Group[ExportConfig], ...] = (
    Group((
        rule("V-E37a", _CDC, _BACKFILL_AT, "`cdc.backfill: auto` found no export reading table "
             "{table!r}; add the batch export that reads it, or name the exports: "
             "`backfill: [<name>, ...]`", _auto_backfill_missing),
    ), when=lambda e, s: e.mode == "cdc" and e.cdc is not None and e.cdc.backfill == "auto"),
    Group((
        rule("V-E37b", _CDC, _BACKFILL_AT, "`cdc.backfill` names export {name!r}, which this "
             "config does not define", lambda e, s: _backfill_refused(e, s, "V-E37b")),
        rule("V-E37c", _CDC, _BACKFILL_AT, "`cdc.backfill` names the cdc export itself; the "
             "baseline is read by a batch export of the same table",
             lambda e, s: _backfill_refused(e, s, "V-E37c")),
        rule("V-E37d", _CDC, _BACKFILL_AT, "`cdc.backfill` names export {name!r}, which reads "
             "{table!r}, a table this stream does not capture",
             lambda e, s: _backfill_refused(e, s, "V-E37d")),
        rule("V-E37e", _CDC, _BACKFILL_AT, "`cdc.backfill` covers {covered} of {total} captured "
             "tables: no baseline for {missing}", _backfill_uncovered),
    ), when=lambda e, s: e.mode == "cdc" and e.cdc is not None
        and isinstance(e.cdc.backfill, tuple)),
)


_TARGET_KEYS = {"bigquery": ("project", "dataset"),
                "snowflake": ("connection", "warehouse", "database", "schema",
                              "storage_integration"),
                "clickhouse": ("database", "url", "user", "password_env")}
_KEY_OWNERS = {"project": "bigquery", "dataset": "bigquery", "connection": "snowflake",
               "warehouse": "snowflake", "database": "snowflake`/`clickhouse",
               "schema": "snowflake", "storage_integration": "snowflake", "url": "clickhouse",
               "user": "clickhouse", "password_env": "clickhouse",
               "named_collection": "clickhouse", "ca_file": "clickhouse"}


def _load_value(load: LoadSection, key: str) -> Any:
    return getattr(load, "schema_" if key == "schema" else key)


def _foreign_load_key(load: LoadSection) -> Fired:
    for key, owner in _KEY_OWNERS.items():
        if _load_value(load, key) is not None and load.target not in owner.split("`/`"):
            return Hit((key,), {"target": load.target, "key": key, "owner": owner})
    return None


def _missing_load_key(load: LoadSection) -> Fired:
    key = next((k for k in _TARGET_KEYS[load.target] if _load_value(load, k) is None), None)
    return {"target": load.target, "key": key} if key is not None else None


def _partition_kinds(p: LoadPartition) -> int:
    return sum(v is not None for v in (p.column, p.range, p.ingestion))


def _splits_tables(e: ExportConfig) -> bool:
    """A `mode: cdc` export with `tables:`: its `load.tables` blocks name its tables."""
    return e.mode == "cdc" and e.tables is not None


# The top-level `load:` block (a typed one).
LOAD_SECTION_RULES: tuple[Group[LoadSection], ...] = (Group((
    rule("V-LD1", _YAML, "load.<key>", "`load:` targets `{target}` but carries `{key}`, a "
         "`{owner}` field; remove it (it would be silently ignored)",
         lambda load, s: _foreign_load_key(load)),
    rule("V-LD2", _YAML, "load", "`load:` targets `{target}` but has no `{key}`",
         lambda load, s: _missing_load_key(load)),
), first=True),)

# A `partition:` mapping of any `load:` block (top level, an export's, a table's).
PARTITION_RULES: tuple[Group[LoadPartition], ...] = (Group((
    rule("V-LD3", _YAML, "<load>.partition", "`partition` takes exactly one of `column`, "
         "`range` or `ingestion`", lambda p, s: _partition_kinds(p) != 1),
    rule("V-LD4", _YAML, "<load>.partition.range.interval", "`range.interval` must be "
         "positive, got {interval}",
         lambda p, s: p.range is not None and p.range.interval <= 0
         and {"interval": p.range.interval}),
    rule("V-LD5", _YAML, "<load>.partition.range", "`range.start` ({start}) must be below "
         "`range.end` ({end})", lambda p, s: p.range is not None and p.range.start >= p.range.end
         and {"start": p.range.start, "end": p.range.end}),
), first=True),)

# Each export, when the file has a `load:` block anywhere.
EXPORT_LOAD_RULES: tuple[Group[ExportConfig], ...] = (Group((
    rule("V-LD10", "RIVET_CONFIG_CSV_LOAD_UNSUPPORTED", "exports[i].format", "`format: csv` "
         "cannot feed a `load:` block (the warehouse loaders read parquet parts only); use "
         "format: parquet", lambda e, s: s.top_level_load and e.format == "csv"),
    rule("V-LD6", _LOAD, "exports[i].load", "export {name!r} has a `load:` override but the "
         "config has no top-level `load:` block (the warehouse is declared once, at the top "
         "level)", lambda e, s: e.load is not None and not s.top_level_load
         and {"name": e.name}),
)),)

# An export's `load:` override with `tables:`.
OVERRIDE_TABLES_RULES: tuple[Group[ExportConfig], ...] = (Group((
    rule("V-LD7", _LOAD, "exports[i].load.tables", "`load.tables:` is for a mode: cdc export "
         "with `tables:`; this export has one unit, so its `load:` block already is the "
         "table's", lambda e, s: not _splits_tables(e)),
)),)

# One table of such an override: (the export, the table's name, its block).
OVERRIDE_TABLE_RULES: tuple[Group[tuple[ExportConfig, str, LoadOverride]], ...] = (Group((
    rule("V-LD8", _LOAD, "exports[i].load.tables.<table>", "`load.tables.{table}` names a table "
         "this export does not capture",
         lambda x, s: x[1] not in (x[0].tables or ()) and {"table": x[1]}),
    rule("V-LD9", _LOAD, "exports[i].load.tables.<table>.tables", "`load.tables.{table}.tables`: "
         "a per-table block takes no `tables:` of its own",
         lambda x, s: bool(x[2].tables) and {"table": x[1]}),
), first=True),)


_ENGINE_NAMES = {"postgres": "PostgreSQL", "mysql": "MySQL", "mssql": "SQL Server",
                 "oracle": "Oracle", "mongo": "MongoDB"}
_DEFAULT_SLOT = "rivet_slot"
_DEFAULT_SERVER_ID = 4271


def _shared(rule_id: str, value: Any, e: ExportConfig, s: Scope, **named: Any) -> Fired:
    previous = s.claim(rule_id, value, e.name)
    return {**named, "previous": previous} if previous is not None else None


# Each `mode: cdc` export: the source's resources it holds alone.
CDC_CONFLICT_RULES: tuple[Group[ExportConfig], ...] = (Group((
    rule("V-C1", _CDC_CONFLICT, "exports[i].cdc.slot", "same PostgreSQL replication slot "
         "{slot!r} as export {previous!r}: a slot has one consumer, sharing it loses data; set "
         "a distinct cdc.slot (default rivet_slot)",
         lambda e, s: s.source is not None and s.source.type == "postgres" and _shared(
             "V-C1", slot := (e.cdc.slot if e.cdc else None) or _DEFAULT_SLOT, e, s, slot=slot)),
    rule("V-C2", _CDC_CONFLICT, "exports[i].cdc.server_id", "same MySQL server_id {server_id} "
         "as export {previous!r}: the server drops one of the two replica connections; set a "
         "distinct cdc.server_id (default 4271)",
         lambda e, s: s.source is not None and s.source.type == "mysql" and _shared(
             "V-C2", n := (e.cdc.server_id if e.cdc and e.cdc.server_id is not None
                           else _DEFAULT_SERVER_ID), e, s, server_id=n)),
    rule("V-C3", _CDC_CONFLICT, "exports[i].cdc.checkpoint", "same checkpoint path {path!r} as "
         "export {previous!r}: each export must own its resume position",
         lambda e, s: e.cdc is not None and (path := e.cdc.checkpoint) is not None
         and _shared("V-C3", path, e, s, path=path)),
), when=lambda e, s: e.mode == "cdc"),)


def _mongo_resume(s: Scope) -> bool:
    return s.source is not None and s.source.mongo is not None and s.source.mongo.resume


# A `type: mongo` source: each export, then the source.
MONGO_EXPORT_RULES: tuple[Group[ExportConfig], ...] = (Group((
    rule("V-M1", _MONGO, "exports[i].mode", "a MongoDB source supports mode: full and mode: cdc "
         "only (got mode: {mode})", lambda e, s: e.mode not in ("full", "cdc")
         and {"mode": e.mode}),
    rule("V-M2", _MONGO, "exports[i].parallel", "source.mongo.resume: true cannot be combined "
         "with parallel: {parallel} (the parallel _id fan-out keeps no checkpoint); drop one",
         lambda e, s: e.parallel > 1 and _mongo_resume(s) and {"parallel": e.parallel}),
)),)
MONGO_SOURCE_RULES: tuple[Group[SourceConfig], ...] = (Group((
    rule("V-M3", _MONGO, "source.mongo.page_size", "source.mongo.resume: true needs "
         "source.mongo.page_size (only keyset paging reads the checkpoint)",
         lambda c, s: _mongo_resume(s) and c.mongo is not None and c.mongo.page_size is None),
)),)


# -- Warnings (the config is accepted) -----------------------------------------------------------

WARNING_RULES: tuple[Rule[None], ...] = (
    # checked where the `--param` values meet the files (`commands/options.py`)
    rule("W-param", None, "--param", "--param {key!r} is not used by any ${{{key}}} placeholder "
         "of the config (names are case-sensitive)", severity="warning"),
)


# -- The checker: each place of a config and the rules that apply there -------------------------

# A place: where it is (the base of its rules' locations), what is there, which rules apply.
Place = tuple[Loc, Any, tuple[Step, ...]]


def _steps(groups: tuple[Group[Any], ...]) -> tuple[Step, ...]:
    return tuple(g.step for g in groups)


_LIST, _LIST_EXPORT, _SOURCE_STEPS = _steps(LIST_RULES), _steps(LIST_EXPORT_RULES), _steps(
    SOURCE_RULES)
_LOAD_SECTION, _PARTITION, _EXPORT_LOAD = (_steps(LOAD_SECTION_RULES), _steps(PARTITION_RULES),
                                           _steps(EXPORT_LOAD_RULES))
_OVERRIDE_TABLES, _OVERRIDE_TABLE = _steps(OVERRIDE_TABLES_RULES), _steps(OVERRIDE_TABLE_RULES)
_MONGO_SOURCE = _steps(MONGO_SOURCE_RULES)


def _export_list(s: Scope) -> Iterator[Place]:
    if s.exports_listed:
        yield (), s, _LIST
        if len(s.by_name) < len(s.exports):  # (V-L2 needs a name written twice)
            for index, e in s.exports:
                yield ("exports", index), (e, index), _LIST_EXPORT


def _source(s: Scope) -> Iterator[Place]:
    if s.source is not None:
        yield ("source",), s.source, _SOURCE_STEPS


def _each_export(groups: tuple[Group[ExportConfig], ...], *,
                 cdc: bool = False) -> Callable[[Scope], Iterator[Place]]:
    """Each export (`cdc`: each `mode: cdc` export) with the groups for its mode and
    destination type."""
    by_kind: dict[tuple[str, str], tuple[Step, ...]] = {}

    def places(s: Scope) -> Iterator[Place]:
        for index, e in (s.cdc_exports if cdc else s.exports):
            kind = (e.mode, e.destination.type)
            chosen = by_kind.get(kind)
            if chosen is None:
                chosen = by_kind[kind] = tuple(
                    g.step for g in groups if (g.modes is None or kind[0] in g.modes)
                    and (g.destinations is None or kind[1] in g.destinations))
            yield ("exports", index), e, chosen
    return places


def _partition(partition: Any, at: Loc) -> Iterator[Place]:
    if isinstance(partition, LoadPartition):  # (a word, `none`, or nothing: no rule)
        yield at, partition, _PARTITION


def _load_blocks(s: Scope) -> Iterator[Place]:
    """The top-level `load:` block, then each export's override and its tables."""
    if not s.top_level_load and not any(e.load is not None for _, e in s.exports):
        return
    if s.load is not None:
        yield ("load",), s.load, _LOAD_SECTION
        yield from _partition(s.load.partition, ("load", "partition"))
    for index, e in s.exports:
        at: Loc = ("exports", index)
        yield at, e, _EXPORT_LOAD
        override = e.load
        if override is None:
            continue
        yield from _partition(override.partition, (*at, "load", "partition"))
        if not override.tables:
            continue
        yield at, e, _OVERRIDE_TABLES
        if not _splits_tables(e):
            continue
        for table, inner in override.tables.items():
            table_at = (*at, "load", "tables", table)
            yield table_at, (e, table, inner), _OVERRIDE_TABLE
            yield from _partition(inner.partition, (*table_at, "partition"))


def _mongo(s: Scope) -> Iterator[Place]:
    if s.source is None or s.source.type != "mongo":
        return
    yield from _each_export(MONGO_EXPORT_RULES)(s)
    yield ("source",), s.source, _MONGO_SOURCE


_EACH_EXPORT = _each_export(EXPORT_RULES)


class Stage:
    """Rules of one kind of place: every group its places use, in order, and the walk that
    finds those places in a config."""

    __slots__ = ("groups", "name", "places")

    def __init__(self, name: str, groups: tuple[tuple[Group[Any], ...], ...],
                 places: Callable[[Scope], Iterator[Place]]) -> None:
        self.name = name
        self.groups = groups
        self.places = places


# The typed config's rules, in the order rivet checks them.
STAGES: tuple[Stage, ...] = (
    Stage("the export list", (LIST_RULES, LIST_EXPORT_RULES), _export_list),
    Stage("the source", (SOURCE_RULES,), _source),
    Stage("each export", (EXPORT_RULES,), _EACH_EXPORT),
    Stage("cdc backfills", (BACKFILL_RULES,), _each_export(BACKFILL_RULES, cdc=True)),
    Stage("load blocks", (LOAD_SECTION_RULES, PARTITION_RULES, EXPORT_LOAD_RULES,
                          OVERRIDE_TABLES_RULES, OVERRIDE_TABLE_RULES), _load_blocks),
    Stage("cdc resources", (CDC_CONFLICT_RULES,), _each_export(CDC_CONFLICT_RULES, cdc=True)),
    Stage("MongoDB sources", (MONGO_EXPORT_RULES, MONGO_SOURCE_RULES), _mongo),
)


def _check(steps: tuple[Step, ...], subject: Any, scope: Scope, base: Loc,
           out: list[Finding]) -> None:
    for present, when, checks, first in steps:
        if present is not None and getattr(subject, present) is None:
            continue
        if when is not None and not when(subject, scope):
            continue
        for check, one in checks:
            fired = check(subject, scope)
            if fired:
                out.append(one.finding(base, fired))
                if first:
                    break


def config_findings(scope: Scope) -> list[Finding]:
    """Every rule of the typed config that fires, in rivet's order."""
    out: list[Finding] = []
    for stage in STAGES:
        for base, subject, steps in stage.places(scope):
            _check(steps, subject, scope, base, out)
    return out


def export_findings(
    export: ExportConfig, index: int, source: SourceConfig | None, *, top_level_load: bool,
    path_exists: Callable[[str], bool] | None,
    query_file_exists: Callable[[str], bool] | None = None,
) -> list[Finding]:
    """The rules of one export on its own (`EXPORT_RULES`), in rivet's order."""
    scope = Scope(source, [(index, export)], top_level_load=top_level_load,
                  path_exists=path_exists, query_file_exists=query_file_exists)
    out: list[Finding] = []
    for base, subject, steps in _EACH_EXPORT(scope):
        _check(steps, subject, scope, base, out)
    return out


def _stage_rules(stage: Stage) -> Iterator[Rule[Any]]:
    for groups in stage.groups:
        for group in groups:
            yield from group.rules


# Every rule, in the order they are checked (docs/configs.md's table is generated from it).
RULES: tuple[Rule[Any], ...] = (*TEXT_RULES, *(r for stage in STAGES for r in _stage_rules(stage)),
                                *WARNING_RULES)
RULE_BY_ID: dict[str, Rule[Any]] = {r.id: r for r in RULES}
RIVET_CODES: dict[str, str | None] = {r.id: r.code for r in RULES}
ENVIRONMENT_RULES = frozenset(r.id for r in RULES if r.klass == "environment")


def rivet_code(rule: str | None) -> str | None:
    """rivet's stable error code for one of our rules (None: rivet has none, or no rule)."""
    return RIVET_CODES.get(rule) if rule is not None else None


def rule_tag(rule: str | None) -> str:
    """` [V-E38b RIVET_CONFIG_EXPORT_SOURCE_INVALID]`: the rule id and rivet's code, as every
    output names a config problem (check, the gate's findings: annotations, the comment and
    plan.json); empty when no rule fired."""
    if rule is None:
        return ""
    code = rivet_code(rule)
    return f" [{rule} {code}]" if code else f" [{rule}]"


@dataclass(frozen=True)
class Finding:
    """A rule that fired: where (a path from the root) and the values its message names."""

    loc: Loc
    rule: str
    values: tuple[tuple[str, Any], ...] = ()

    @property
    def message(self) -> str:
        return RULE_BY_ID[self.rule].message.format(**dict(self.values))


# -- helper predicates (spec appendix B) ---------------------------------------------------------

def filename_safe(name: str) -> bool:
    return (bool(name) and not name.startswith(".") and "/" not in name and "\\" not in name
            and ".." not in name and "\0" not in name)


def escape_default(text: str) -> str:
    """Rust's `str::escape_default` (how rivet shows an unsafe name)."""
    out = []
    for char in text:
        code = ord(char)
        if char in "\t\r\n":
            out.append({"\t": "\\t", "\r": "\\r", "\n": "\\n"}[char])
        elif char in "'\"\\":
            out.append("\\" + char)
        elif 0x20 <= code <= 0x7E:
            out.append(char)
        else:
            out.append(f"\\u{{{code:x}}}")
    return "".join(out)


def _has_parent_component(path: str) -> bool:
    return any(part == ".." for part in path.split("/") if part)


def endpoint_host(endpoint: str) -> str | None:
    scheme, sep, rest = endpoint.partition("://")
    if not sep or not scheme:
        return None
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    authority = authority.rsplit("@", 1)[-1]
    if authority.startswith("["):
        host = authority[1:].split("]", 1)[0]
        host = "[" + host + "]"
    else:
        host = authority.split(":", 1)[0]
    return host.lower() or None


def is_loopback(host: str | None) -> bool:
    if host is None:
        return False
    if host == "localhost":
        return True
    text = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    return bool(address.is_loopback) and not (
        isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None)


_SIZE_NUMBER = re.compile(
    r"[+-]?(inf|infinity|nan|([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?)\Z", re.IGNORECASE)


def max_file_size_bytes(text: str) -> int | None:
    """rivet's size parser (spec B.4): bytes, or None when it refuses the text."""
    s = text.strip().upper()
    multiplier = 1
    for suffix, factor in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024), ("B", 1)):
        if s.endswith(suffix):
            s, multiplier = s[: -len(suffix)].strip(), factor
            break
    if not _SIZE_NUMBER.match(s):
        return None
    value = float(s) * multiplier
    if math.isnan(value) or value <= 0:
        return None
    size = U64_MAX if value > U64_MAX else int(value)
    return size or None


def merged_tuning(export: ExportConfig, source: SourceConfig | None) -> dict[str, Any]:
    """Per key: the export's `tuning` value if set, else the source's (unset keys omitted)."""
    out: dict[str, Any] = {}
    layers = [t for t in ((source.tuning if source else None), export.tuning) if t is not None]
    for layer in layers:
        for key in TUNING_KEYS:
            value = getattr(layer, key)
            if value is not None:
                out[key] = value
    return out


# -- column override types (rivet's plan reads them before it connects) --------------------

# Each name rivet accepts for a column override (any case), and the rivet type it stands for;
# `decimal(p,s)` / `numeric(p,s)` besides. `rivet_ci.core.fidelity` maps those types.
OVERRIDE_TYPES: dict[str, str] = {
    **dict.fromkeys(("bool", "boolean"), "bool"),
    **dict.fromkeys(("int2", "smallint", "int16"), "int2"),
    **dict.fromkeys(("int", "int4", "integer", "int32"), "int4"),
    **dict.fromkeys(("int8", "bigint", "int64"), "int8"),
    **dict.fromkeys(("float4", "real", "float32"), "float4"),
    **dict.fromkeys(("float8", "double", "double precision", "float64"), "float8"),
    "date": "date",
    **dict.fromkeys(("timestamp", "timestamp without time zone"), "timestamp"),
    "timestamp_ns": "timestamp_ns",
    **dict.fromkeys(("timestamp_tz", "timestamptz", "timestamp with time zone"), "timestamp_tz"),
    "timestamp_tz_ns": "timestamp_tz_ns",
    **dict.fromkeys(("text", "string", "varchar", "char", "bpchar"), "string"),
    **dict.fromkeys(("binary", "bytea", "varbinary", "blob"), "binary"),
    **dict.fromkeys(("json", "jsonb"), "json"),
    "uuid": "uuid",
}
_DECIMAL = re.compile(r"(?:decimal|numeric)\(\s*(-?[0-9]+)\s*,\s*(-?[0-9]+)\s*\)\Z")
DECIMAL_MAX_PRECISION = 76  # Arrow's decimal256
_SUPPORTED_TYPES = ("bool, int2/int4/int8, float4/float8, decimal(p,s), date, timestamp, "
                    "timestamp_ns, timestamp_tz, timestamp_tz_ns, text, binary, json, uuid")


def column_override(text: str) -> tuple[str, int | None, int | None] | None:
    """The rivet type a column override names — `(type, precision, scale)`, precision and scale
    for `decimal` only — or None when rivet refuses it (`column_type_problem` says why)."""
    name = text.strip().lower()
    if name in OVERRIDE_TYPES:
        return OVERRIDE_TYPES[name], None, None
    match = _DECIMAL.match(name)
    if match is None:
        return None
    precision, scale = int(match.group(1)), int(match.group(2))
    if not 1 <= precision <= DECIMAL_MAX_PRECISION or scale > precision:
        return None
    return "decimal", precision, scale


def column_type_problem(text: str) -> str | None:
    """Why rivet refuses a column override type (before it connects), or None."""
    name = text.strip().lower()
    if name in OVERRIDE_TYPES:
        return None
    match = _DECIMAL.match(name)
    if match is None:
        return f"unrecognised type {text!r}; supported: {_SUPPORTED_TYPES}"
    precision, scale = int(match.group(1)), int(match.group(2))
    if not 1 <= precision <= DECIMAL_MAX_PRECISION:
        return f"precision {precision} is outside 1..{DECIMAL_MAX_PRECISION}"
    if scale > precision:
        return f"scale {scale} is larger than the precision {precision}"
    return None
