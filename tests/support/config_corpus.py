"""The config corpus of the verdict differential tests (no tests): our own configs and a
generated, seeded one.

Generated: every key of `rivet schema config` set to each kind of value it takes; mutations of
each scalar key (YAML 1.1-vs-1.2 scalars, wrong types, quoted numbers, nulls, tags, out-of-range
integers), an unknown key and a repeated key at every struct; YAML structure (anchors and
aliases, an anchor defined twice, tags, a byte-order mark, several documents, `exports:` with no
value); and rule violations, old and new in 0.32. Each case is a file's bytes and the variables
its environment gives (every variable a config names gets a dummy value of the right shape, so
a verdict never depends on the machine, unless a case leaves one unset on purpose).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from support.rivet_schema import Desc, Rivet

TESTS = Path(__file__).resolve().parent.parent
SEED = 20
PROJECT_GLOBS = ("configs/accept/*.yaml", "configs/reject/*.yaml", "bad_configs/*.yaml",
                 "../examples/pipelines/*.yaml")
# Scalars whose reading differs between YAML 1.1 and 1.2, wrong types and edge values.
MUTATIONS = ("yes", "on", "off", "0o17", "1_000", "0x1F", "007", "1e3", "-1", "1.5", "'5'",
             "~", "", "[a]", "{a: 1}", "!!str 5", "!env X", "true", "FALSE", "\"\"",
             "18446744073709551616", "4294967296", "65536", ".inf", "2026-01-01")
MUTATIONS_PER_KEY = 4
URLS = {"postgres": "postgresql://u@127.0.0.1:9/db", "mysql": "mysql://u@127.0.0.1:9/db",
        "mssql": "sqlserver://u@127.0.0.1:9/db", "oracle": "oracle://u@127.0.0.1:9/db",
        "mongo": "mongodb://127.0.0.1:9/db"}


@dataclass(frozen=True)
class Raw:
    """A scalar written exactly as this text."""

    text: str


@dataclass(frozen=True)
class Again:
    """A key written a second time in the same mapping."""

    key: str


@dataclass
class Case:
    id: str
    text: bytes
    env: dict[str, str] = field(default_factory=dict)
    path: Path | None = None  # a project file, checked where it lives


def base() -> dict[Any, Any]:
    return {"source": {"type": "postgres", "url_env": "DATABASE_URL"},
            "exports": [{"name": "orders", "table": "public.orders", "format": "parquet",
                         "destination": {"type": "local", "path": "./out"}}]}


TOP_LOAD = {"target": "bigquery", "project": "p", "dataset": "d"}

# -- YAML text --------------------------------------------------------------------------------

_PLAIN = re.compile(r"[A-Za-z_/][A-Za-z0-9_./-]*\Z")
_RESERVED = {"yes", "no", "on", "off", "y", "n", "true", "false", "null", "True", "False",
             "TRUE", "FALSE", "Null", "NULL", "Yes", "No", "On", "Off"}


def scalar(value: Any) -> str:
    if isinstance(value, Raw):
        return value.text
    if value is None:
        return "~"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    text = str(value)
    return text if _PLAIN.match(text) and text not in _RESERVED else json.dumps(text)


def emit(value: Any, indent: int = 0) -> list[str]:
    """Block-style YAML lines of a mapping (keys may be `Again`: written twice)."""
    pad = " " * indent
    lines: list[str] = []
    for key, item in value.items():
        name = key.key if isinstance(key, Again) else key
        lines += _entry(f"{pad}{name}:", item, indent)
    return lines


def _entry(head: str, item: Any, indent: int) -> list[str]:
    if isinstance(item, dict) and item:
        return [head, *emit(item, indent + 2)]
    if isinstance(item, list) and item:
        out = [head]
        for element in item:
            if isinstance(element, dict) and element:
                inner = emit(element, indent + 4)
                out.append(" " * (indent + 2) + "- " + inner[0].lstrip())
                out += inner[1:]
            else:
                out.append(" " * (indent + 2) + "- " + _inline(element))
        return out
    return [f"{head} {_inline(item)}".rstrip()]


def _inline(item: Any) -> str:
    if isinstance(item, dict):
        return "{" + ", ".join(f"{k}: {_inline(v)}" for k, v in item.items()) + "}"
    if isinstance(item, list):
        return "[" + ", ".join(_inline(v) for v in item) + "]"
    return scalar(item)


def text_of(config: dict[Any, Any]) -> bytes:
    return ("\n".join(emit(config)) + "\n").encode("utf-8")


# -- the environment a config names -----------------------------------------------------------

_ENV_KEY = re.compile(
    r"^\s*-?\s*(?:[a-z_]+_env|webhook_url_env)\s*:\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)
_FLOW_ENV = re.compile(r"[a-z_]+_env\s*:\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)")
_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
_SOURCE_TYPE = re.compile(r"^\s+type:\s*['\"]?(postgres|mysql|mssql|oracle|mongo)\b", re.MULTILINE)


def environment(text: bytes, unset: frozenset[str] = frozenset()) -> dict[str, str]:
    """A dummy value for every variable the text names: a URL of the source's scheme pointing
    at a closed loopback port for `url_env`, else a word."""
    decoded = text.decode("utf-8", "replace")
    found = _SOURCE_TYPE.search(decoded)
    url = URLS[found.group(1) if found else "postgres"]
    env: dict[str, str] = {}
    for match in _FLOW_ENV.finditer(decoded):
        key = match.group(0).split(":")[0].strip()
        env[match.group(1)] = url if key == "url_env" else "x"
    for match in _ENV_KEY.finditer(decoded):
        env.setdefault(match.group(1), "x")
    for name in _PLACEHOLDER.findall(decoded):
        if name:
            env[name] = "x"
    return {k: v for k, v in env.items() if k not in unset}


# -- placing a key ----------------------------------------------------------------------------

def place(path: str, value: Any) -> dict[Any, Any]:
    """The base config with the key at `path` (`exports.` is the first export) set to `value`,
    in a context where it makes sense (a cdc block in a cdc export, a settle window in an
    incremental one, an override below a top-level `load:`)."""
    config = base()
    export = config["exports"][0]
    parts = path.split(".")
    if len(parts) == 1:
        if path == "load" and isinstance(value, dict) and value.keys() == {"target"}:
            value = {**TOP_LOAD, **value}
        config[path] = value
        return config
    if parts[0] == "exports":
        target: dict[Any, Any] = export
        parts = parts[1:]
        if parts[0] == "cdc":
            export["mode"] = "cdc"
        if parts[0] == "settle":
            export.update(mode="incremental", cursor_column="updated_at")
        if parts[0] == "load":
            config["load"] = dict(TOP_LOAD)
    else:
        target = config
        if parts[0] == "load" and len(parts) > 1:
            config["load"] = dict(TOP_LOAD)
    for part in parts[:-1]:
        if part == "tables" and target is not export:  # load.tables: keyed by table name
            export.update(mode="cdc", tables=["public.a", "public.b"])
            export.pop("table", None)
            target = target.setdefault("tables", {}).setdefault("public.a", {})
            continue
        nxt = target.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            if part == "partition":
                nxt = {}
            if part == "range":
                nxt = {"column": "id", "start": 0, "end": 10, "interval": 1}
            target[part] = nxt
        target = nxt
    key = parts[-1]
    if key in ("table", "query", "query_file", "tables") and target is export:
        for other in ("table", "query", "query_file", "tables"):
            export.pop(other, None)
    target[key] = value
    return config


def samples(kind: Desc, rivet: Rivet) -> list[Any]:
    """Valid values of a kind (one per enum value; each form of a word-or-value)."""
    name = kind[0]
    if name == "enum":
        return sorted(kind[1])
    if name == "str":
        return ["x"]
    if name == "bool":
        return [True, False]
    if name == "int":
        return [2]
    if name == "float":
        return [0.5]
    if name == "row_hash":
        return [True, ["id"]]
    if name == "list":
        return [[samples(kind[1], rivet)[0]]]
    if name == "map":
        return [{"a": samples(kind[1], rivet)[0]}]
    if name == "struct":
        return [minimal(kind[1], rivet)]
    assert name == "either", kind
    return [*sorted(kind[1]), *samples(kind[2], rivet)]


def minimal(struct: str, rivet: Rivet) -> dict[str, Any]:
    definition = rivet.defs[struct]
    out: dict[str, Any] = {}
    for key in definition.get("required", ()):
        kind, _ = rivet.kind(definition["properties"][key])
        out[key] = samples(kind, rivet)[0]
    if struct == "RawPartition":
        out["ingestion"] = "day"
    return out


# -- the cases --------------------------------------------------------------------------------

def project_cases() -> Iterator[Case]:
    for pattern in PROJECT_GLOBS:
        for path in sorted(TESTS.glob(pattern)):
            data = path.read_bytes()
            if b"source" not in data and b"exports" not in data:
                continue
            rel = path.resolve().relative_to(TESTS.parent)
            yield Case(f"project:{rel}", data, environment(data), path)


def refusal_cases() -> Iterator[Case]:
    """tests/cases/refusals.yml: the plan refusals that need no facts, as whole configs."""
    data = yaml.safe_load((TESTS / "cases" / "refusals.yml").read_text(encoding="utf-8"))
    defaults = data.get("defaults", {}).get("export", {})
    for case in data["cases"]:
        if "export" not in case or case.get("facts") or case.get("source"):
            continue
        config = base()
        export = {"name": "subject", "table": "public.subject", "format": "parquet",
                  "destination": {"type": "local", "path": "out"}, **defaults, **case["export"]}
        config["exports"] = [{k: v for k, v in export.items() if v is not None}]
        text = text_of(config)
        yield Case(f"refusals:{case['name']}", text, environment(text))


def key_cases(rivet: Rivet) -> Iterator[Case]:
    """Every key of rivet's schema, set to each kind of value it takes."""
    for path, (kind, _nullable, _required, _default) in sorted(rivet.paths.items()):
        for i, value in enumerate(samples(kind, rivet)):
            text = text_of(place(path, value))
            yield Case(f"key:{path}#{i}", text, environment(text))


def _leaves(rivet: Rivet) -> list[str]:
    return sorted(p for p, (k, *_) in rivet.paths.items()
                  if k[0] in ("str", "bool", "int", "float", "enum", "either", "row_hash"))


def mutation_cases(rivet: Rivet) -> Iterator[Case]:
    """Each scalar key written as a few (seeded) of `MUTATIONS`; a handful of keys, one per
    kind, written as every one of them."""
    rng = random.Random(SEED)
    every = {"exports.parallel", "exports.name", "exports.skip_empty", "exports.mode",
             "source.port", "exports.shape_drift_warn_factor", "exports.load.pk",
             "load.partition.range.start", "exports.meta_columns.row_hash"}
    for path in _leaves(rivet):
        chosen = MUTATIONS if path in every else rng.sample(MUTATIONS, MUTATIONS_PER_KEY)
        for text_value in chosen:
            text = text_of(place(path, Raw(text_value)))
            yield Case(f"mutate:{path}={text_value!r}", text, environment(text))


def struct_cases(rivet: Rivet) -> Iterator[Case]:
    """An unknown key, and a known key written twice, in every struct."""
    for path in sorted(rivet.struct_of):
        if path == "":
            config = base()
            config["bogus_key"] = 1
            yield Case("unknown-key:<root>", text_of(config), environment(text_of(config)))
            config = base()
            config[Again("source")] = {"type": "mysql", "url_env": "DATABASE_URL"}
            yield Case("duplicate-key:<root>", text_of(config), environment(text_of(config)))
            continue
        struct = rivet.struct_of[path]
        filled = minimal(struct, rivet)
        if path in ("exports", "source"):
            filled = {}
        for label, extra in (("unknown-key", {"bogus_key": 1}), ("duplicate-key", None)):
            config = place(path, filled) if filled or path not in ("exports", "source") \
                else base()
            target = _at(config, path)
            if extra is not None:
                target.update(extra)
            else:
                first = next(iter(target), None)
                if first is None:
                    target["bogus_key"] = 1
                    target[Again("bogus_key")] = 2
                else:
                    target[Again(first)] = target[first]
            text = text_of(config)
            yield Case(f"{label}:{path}", text, environment(text))


def _at(config: dict[Any, Any], path: str) -> dict[Any, Any]:
    target: Any = config
    for part in path.split("."):
        if isinstance(target, list):
            target = target[0]
        if part == "tables" and isinstance(target.get("tables"), dict):
            target = target["tables"]["public.a"]
            continue
        target = target.setdefault(part, {})
        if isinstance(target, list):
            target = target[0]
    assert isinstance(target, dict)
    return target


BASE_TEXT = text_of(base()).decode()
EXPORT_TEXT = """\
  - name: orders
    table: public.orders
    format: parquet
    destination: {type: local, path: ./out}
"""


def structure_cases() -> Iterator[Case]:
    """YAML structure: anchors, aliases, tags, byte-order mark, documents, empty values."""
    head = "source:\n  type: postgres\n  url_env: DATABASE_URL\n"
    texts = {
        "alias-destination": head + "exports:\n  - name: a\n    table: t\n    format: parquet\n"
        "    destination: &d {type: local, path: out}\n  - name: b\n    table: t\n"
        "    format: parquet\n    destination: *d\n",
        "anchor-defined-twice": head + "exports:\n  - name: a\n    table: t\n    format: parquet\n"
        "    destination: &d {type: local, path: out}\n  - name: b\n    table: t\n"
        "    format: parquet\n    destination: &d {type: local, path: out2}\n"
        "  - name: c\n    table: t\n    format: parquet\n    destination: *d\n",
        "alias-undefined": head + "exports:\n  - name: a\n    table: t\n    format: parquet\n"
        "    destination: *nowhere\n",
        "alias-scalar": head + "exports:\n  - name: &n a\n    table: *n\n    format: parquet\n"
        "    destination: {type: local, path: out}\n",
        "merge-key": head + "exports:\n  - <<: {table: t}\n    name: a\n    format: parquet\n"
        "    destination: {type: local, path: out}\n",
        "bom": "\ufeff" + BASE_TEXT,
        "bom-after-comment": "# c\n\ufeff" + BASE_TEXT,
        "multi-document": BASE_TEXT + "---\nx: 1\n",
        "leading-document-marker": "---\n" + BASE_TEXT,
        "document-end-marker": BASE_TEXT + "...\n",
        "two-markers-one-document": "---\n" + BASE_TEXT + "...\n",
        "exports-no-value": head + "exports:\n",
        "exports-null": head + "exports: ~\n",
        "exports-empty-list": head + "exports: []\n",
        "exports-empty-map": head + "exports: {}\n",
        "source-no-value": "source:\nexports:\n" + EXPORT_TEXT,
        "empty-file": "",
        "comments-only": "# nothing\n",
        "top-level-list": "- a\n",
        "top-level-scalar": "hello\n",
        "tab-indent": head + "exports:\n\t- name: a\n",
        "flow-config": '{"source": {"type": "postgres", "url_env": "DATABASE_URL"}, "exports": '
        '[{"name": "a", "table": "t", "format": "parquet", "destination": {"type": "local"}}]}\n',
        "tag-str-name": head + "exports:\n  - name: !!str orders\n    table: t\n"
        "    format: parquet\n    destination: {type: local, path: out}\n",
        "tag-str-number-name": head + "exports:\n  - name: !!str 5\n    table: t\n"
        "    format: parquet\n    destination: {type: local, path: out}\n",
        "tag-env-url": "source:\n  type: postgres\n  url_env: !env DATABASE_URL\nexports:\n"
        + EXPORT_TEXT,
        "tag-int-parallel": head + "exports:\n  - name: a\n    table: t\n    parallel: !!int 3\n"
        "    format: parquet\n    destination: {type: local, path: out}\n",
        "tag-str-parallel": head + "exports:\n  - name: a\n    table: t\n    parallel: !!str 3\n"
        "    format: parquet\n    destination: {type: local, path: out}\n",
        "tag-int-quoted-parallel": head + "exports:\n  - name: a\n    table: t\n"
        "    parallel: !!int '3'\n    format: parquet\n    destination: {type: local}\n",
        "tag-internal-spelling": head + "exports:\n  - name: a\n    table: t\n"
        "    parallel: !rivet-ci/quoted 3\n    format: parquet\n    destination: {type: local}\n",
        "tag-map-destination": head + "exports:\n  - name: a\n    table: t\n    format: parquet\n"
        "    destination: !!map {type: local, path: out}\n",
        "tag-custom-export": head + "exports:\n  - !export\n    name: a\n    table: t\n"
        "    format: parquet\n    destination: {type: local, path: out}\n",
        "tag-bool-skip-empty": head + "exports:\n  - name: a\n    table: t\n"
        "    skip_empty: !!bool true\n    format: parquet\n    destination: {type: local}\n",
        "tag-null-query": head + "exports:\n  - name: a\n    table: t\n    query: !!null ~\n"
        "    format: parquet\n    destination: {type: local}\n",
        "quoted-key": head + "exports:\n  - \"name\": a\n    'table': t\n    format: parquet\n"
        "    destination: {type: local}\n",
        "non-string-key": head + "exports:\n  - name: a\n    table: t\n    1: x\n"
        "    format: parquet\n    destination: {type: local}\n",
        "duplicate-key-by-value": head + "exports:\n  - name: a\n    table: t\n"
        "    format: parquet\n    destination: {type: local}\n    columns: {1: text, 0x1: int}\n",
        "deep-nesting": head + "exports:\n" + EXPORT_TEXT + "load: " + "[" * 140 + "]" * 140
        + "\n",
        "unset-placeholder": head.replace("DATABASE_URL", "${UNSET_URL_VAR}") + "exports:\n"
        + EXPORT_TEXT,
        "placeholder-empty-name": head + "exports:\n  - name: a${}\n    table: t\n"
        "    format: parquet\n    destination: {type: local}\n",
    }
    for label, text in texts.items():
        data = text.encode("utf-8")
        unset = frozenset({"UNSET_URL_VAR"})
        yield Case(f"yaml:{label}", data, environment(data, unset))


def _export(**keys: Any) -> dict[str, Any]:
    export: dict[str, Any] = {"name": "orders", "table": "public.orders", "format": "parquet",
                              "destination": {"type": "local", "path": "./out"}}
    for key, value in keys.items():
        if value is None:
            export.pop(key, None)
        else:
            export[key] = value
    return export


# Rule violations (and their valid neighbours): (label, exports, top-level keys).
RULE_CASES: list[tuple[str, list[dict[str, Any]], dict[str, Any]]] = [
    ("chunk_dense", [_export(mode="chunked", chunk_column="id", chunk_dense=True)], {}),
    ("chunk_dense-false", [_export(mode="chunked", chunk_column="id", chunk_dense=False)], {}),
    ("chunk_by_key+chunk_column", [_export(mode="chunked", chunk_column="id",
                                           chunk_by_key="id")], {}),
    ("chunk_by_key", [_export(mode="chunked", chunk_by_key="id")], {}),
    ("chunk_count+chunk_by_days", [_export(mode="chunked", chunk_column="d", chunk_count=3,
                                           chunk_by_days=2)], {}),
    ("chunk_count-0", [_export(mode="chunked", chunk_column="id", chunk_count=0)], {}),
    ("chunked-no-strategy-query", [_export(table=None, query="SELECT 1", mode="chunked")], {}),
    ("chunked-table-shortcut", [_export(mode="chunked")], {}),
    ("chunk_size-0", [_export(mode="chunked", chunk_column="id", chunk_size=0)], {}),
    ("parallel-0", [_export(mode="chunked", chunk_column="id", parallel=0)], {}),
    ("cdc-rollover-0", [_export(mode="cdc", cdc={"rollover": 0})], {}),
    ("cdc-rollover-1", [_export(mode="cdc", cdc={"rollover": 1})], {}),
    ("cdc-max_events-0", [_export(mode="cdc", cdc={"max_events": 0})], {}),
    ("cdc-rollover_memory_mb-0", [_export(mode="cdc", cdc={"rollover_memory_mb": 0})], {}),
    ("cdc-block-full", [_export(cdc={"slot": "s"})], {}),
    ("cdc-query", [_export(table=None, query="SELECT 1", mode="cdc")], {}),
    ("cdc-backfill-auto-found", [_export(mode="cdc", cdc={"backfill": "auto"}),
                                 _export(name="orders_full")], {}),
    ("cdc-backfill-auto-none", [_export(mode="cdc", cdc={"backfill": "auto"})], {}),
    ("cdc-backfill-names", [_export(mode="cdc", cdc={"backfill": ["orders_full"]}),
                            _export(name="orders_full")], {}),
    ("cdc-backfill-unknown", [_export(mode="cdc", cdc={"backfill": ["nope"]})], {}),
    ("cdc-backfill-self", [_export(mode="cdc", cdc={"backfill": ["orders"]})], {}),
    ("cdc-backfill-other-table", [_export(mode="cdc", cdc={"backfill": ["other"]}),
                                  _export(name="other", table="public.other")], {}),
    ("cdc-backfill-empty", [_export(mode="cdc", cdc={"backfill": []})], {}),
    ("cdc-backfill-on-full", [_export(cdc={"backfill": "auto"})], {}),
    ("settle-incremental", [_export(mode="incremental", cursor_column="u",
                                    settle={"after": "1h"})], {}),
    ("settle-full", [_export(settle={"after": "1h"})], {}),
    ("settle-chunked", [_export(mode="chunked", chunk_column="id", settle={"after": "1h"})], {}),
    ("settle-after-bad", [_export(mode="incremental", cursor_column="u",
                                  settle={"after": "1x"})], {}),
    ("settle-after-0", [_export(mode="incremental", cursor_column="u",
                                settle={"after": "0s"})], {}),
    ("settle-after-days", [_export(mode="incremental", cursor_column="u",
                                   settle={"after": "2d"})], {}),
    ("settle-after-number", [_export(mode="incremental", cursor_column="u",
                                     settle={"after": "90"})], {}),
    ("settle-after-empty", [_export(mode="incremental", cursor_column="u",
                                    settle={"after": ""})], {}),
    ("settle-column", [_export(mode="incremental", cursor_column="u",
                               settle={"after": "30m", "column": "created_at"})], {}),
    ("settle-coalesce", [_export(mode="incremental", cursor_column="u",
                                 incremental_cursor_mode="coalesce",
                                 cursor_fallback_column="c", settle={"after": "1h"})], {}),
    ("csv-feeds-load", [_export(format="csv")], {"load": TOP_LOAD}),
    ("csv-no-load", [_export(format="csv")], {}),
    ("export-load-no-top-load", [_export(load={"pk": ["id"]})], {}),
    ("export-load-with-top-load", [_export(load={"pk": ["id"]})], {"load": TOP_LOAD}),
    ("export-load-tables-not-cdc", [_export(load={"tables": {"a": {}}})], {"load": TOP_LOAD}),
    ("export-load-tables-cdc", [_export(table=None, tables=["a", "b"], mode="cdc",
                                        load={"tables": {"a": {"pk": ["id"]}}})],
     {"load": TOP_LOAD}),
    ("export-load-tables-unknown", [_export(table=None, tables=["a", "b"], mode="cdc",
                                            load={"tables": {"c": {}}})], {"load": TOP_LOAD}),
    ("export-load-tables-nested", [_export(table=None, tables=["a", "b"], mode="cdc",
                                           load={"tables": {"a": {"tables": {"b": {}}}}})],
     {"load": TOP_LOAD}),
    ("load-partition-two", [_export()], {"load": {**TOP_LOAD, "partition": {
        "column": "d", "ingestion": "day"}}}),
    ("load-partition-none", [_export()], {"load": {**TOP_LOAD, "partition": "none"}}),
    ("load-partition-empty", [_export()], {"load": {**TOP_LOAD, "partition": {}}}),
    ("load-partition-granularity-only", [_export()], {"load": {**TOP_LOAD, "partition": {
        "granularity": "day"}}}),
    ("load-partition-range-interval-0", [_export()], {"load": {**TOP_LOAD, "partition": {
        "range": {"column": "id", "start": 0, "end": 10, "interval": 0}}}}),
    ("load-partition-range-backwards", [_export()], {"load": {**TOP_LOAD, "partition": {
        "range": {"column": "id", "start": 10, "end": 0, "interval": 1}}}}),
    ("load-bigquery-no-dataset", [_export()], {"load": {"target": "bigquery", "project": "p"}}),
    ("load-bigquery-foreign", [_export()], {"load": {**TOP_LOAD, "warehouse": "w"}}),
    ("load-snowflake", [_export()], {"load": {"target": "snowflake", "connection": "c",
                                              "warehouse": "w", "database": "d", "schema": "s",
                                              "storage_integration": "i"}}),
    ("load-snowflake-missing", [_export()], {"load": {"target": "snowflake", "connection": "c"}}),
    ("load-clickhouse", [_export()], {"load": {"target": "clickhouse", "database": "d",
                                               "url": "u", "user": "x",
                                               "password_env": "CH_PASSWORD"}}),
    ("load-clickhouse-missing", [_export()], {"load": {"target": "clickhouse", "database": "d",
                                                       "url": "u"}}),
    ("load-partition_by", [_export(partition_by="d",
                                   destination={"type": "local", "path": "out/{partition}"})],
     {"load": TOP_LOAD}),
    ("partition_by", [_export(partition_by="d",
                              destination={"type": "local", "path": "out/{partition}"})], {}),
    ("table-three-part", [_export(table="db.public.orders")], {}),
    ("table-empty", [_export(table="")], {}),
    ("table-injection", [_export(table="a; DROP TABLE x")], {}),
    ("table-quoted", [_export(table='"Orders"')], {}),
    ("table-spaces", [_export(table="  public.orders  ")], {}),
    ("table-dash", [_export(table="public.order-items")], {}),
    ("table-digit", [_export(table="1orders")], {}),
    ("table-dot-end", [_export(table="public.")], {}),
    ("table-unicode", [_export(table="public.zäkaz")], {}),
    ("query_file-missing", [_export(table=None, query_file="sql/missing.sql")], {}),
    ("query_file-absolute", [_export(table=None, query_file="/etc/passwd")], {}),
    ("query-empty", [_export(table=None, query="")], {}),
    ("columns-type-unknown", [_export(columns={"id": "frobnicate"})], {}),
    ("columns-type-int64", [_export(columns={"id": "int64"})], {}),
    ("columns-type-decimal", [_export(columns={"id": "decimal(10,2)"})], {}),
    ("columns-type-text", [_export(columns={"id": "text"})], {}),
    ("columns-type-utf8", [_export(columns={"id": "utf8"})], {}),
    ("columns-type-timestamp", [_export(columns={"id": "timestamp"})], {}),
    ("columns-qualified-query", [_export(table=None, query="SELECT 1",
                                         columns={"t.id": "text"})], {}),
    ("oracle-cdc", [_export(mode="cdc")], {"source": {"type": "oracle",
                                                      "url_env": "DATABASE_URL"}}),
    ("oracle-cdc-checkpoint", [_export(mode="cdc", cdc={"checkpoint": "c.ckpt"})],
     {"source": {"type": "oracle", "url_env": "DATABASE_URL"}}),
    ("oracle-full", [_export()], {"source": {"type": "oracle", "url_env": "DATABASE_URL"}}),
    ("mongo-chunked", [_export(mode="chunked", chunk_column="id")],
     {"source": {"type": "mongo", "url_env": "DATABASE_URL"}}),
    ("mysql-cdc-no-checkpoint", [_export(mode="cdc")],
     {"source": {"type": "mysql", "url_env": "DATABASE_URL"}}),
    ("mssql-cdc-tables", [_export(table=None, tables=["a", "b"], mode="cdc")],
     {"source": {"type": "mssql", "url_env": "DATABASE_URL"}}),
    ("incremental-no-cursor", [_export(mode="incremental")], {}),
    ("time_window-no-column", [_export(mode="time_window", days_window=3)], {}),
    ("time_window", [_export(mode="time_window", time_column="t", days_window=3)], {}),
    ("keyset_incremental", [_export(mode="chunked", chunk_column="id",
                                    keyset_incremental=True)], {}),
    ("duplicate-names", [_export(), _export()], {}),
    ("name-slash", [_export(name="a/b")], {}),
    ("name-dot", [_export(name=".hidden")], {}),
    ("csv-compression", [_export(format="csv", compression="gzip")], {}),
    ("zstd-level-23", [_export(compression_level=23)], {}),
    ("max_file_size-bad", [_export(max_file_size="lots")], {}),
    ("max_file_size-ok", [_export(max_file_size="1.5GB")], {}),
    ("stdout-chunked-query", [_export(table=None, query="SELECT 1", mode="chunked",
                                      chunk_column="id", destination={"type": "stdout"})], {}),
    ("stdout-chunked-table", [_export(mode="chunked", chunk_column="id",
                                      destination={"type": "stdout"})], {}),
    ("stdout-keyset", [_export(mode="chunked", chunk_by_key="id",
                               destination={"type": "stdout"})], {}),
    ("stdout-chunked-count", [_export(mode="chunked", chunk_count=4,
                                      destination={"type": "stdout"})], {}),
    ("stdout-full", [_export(destination={"type": "stdout"})], {}),
    ("oneshot_budget-0", [_export(destination={"type": "s3", "bucket": "b",
                                               "oneshot_budget_mb": 0})], {}),
    ("source-url-and-url_env", [_export()], {"source": {"type": "postgres", "url": "x",
                                                        "url_env": "DATABASE_URL"}}),
    ("source-structured", [_export()], {"source": {"type": "postgres", "host": "h", "user": "u",
                                                   "database": "d"}}),
    ("source-no-connection", [_export()], {"source": {"type": "postgres"}}),
    ("tls-insecure", [_export()], {"source": {"type": "postgres", "url_env": "DATABASE_URL",
                                              "tls": {"mode": "require",
                                                      "accept_invalid_certs": True}}}),
    ("tuning-misplaced", [_export(batch_size=10)], {}),
    ("tuning-both", [_export(tuning={"batch_size": 1, "batch_size_memory_mb": 1})], {}),
    ("slack-env", [_export()], {"notifications": {"slack": {"webhook_url_env": "SLACK_URL",
                                                            "on": ["failure"]}}}),
]


def rule_cases() -> Iterator[Case]:
    for label, exports, top in RULE_CASES:
        config = base()
        config["exports"] = exports
        config.update(top)
        text = text_of(config)
        yield Case(f"rule:{label}", text, environment(text))


def corpus(rivet: Rivet) -> list[Case]:
    cases = [*project_cases(), *refusal_cases(), *key_cases(rivet), *mutation_cases(rivet),
             *struct_cases(rivet), *structure_cases(), *rule_cases()]
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1][:5]
    return cases
