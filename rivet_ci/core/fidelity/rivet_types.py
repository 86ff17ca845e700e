"""rivet's own column types, and what rivet derives from one: its label in the type report,
its Arrow type, its fidelity and whether a CSV file can hold it.

Learned from the binary (`rivet check --type-report --json`, rivet 0.32.2; tests/
test_type_fidelity_parity.py runs it over every type both servers have): a source column maps
to one of these types; `unsupported` carries the source's type name and rivet's reason.
"""

from __future__ import annotations

from typing import Literal, NamedTuple, get_args

Kind = Literal["bool", "int2", "int4", "int8", "uint8", "float4", "float8", "decimal", "date",
               "time", "timestamp", "timestamp_tz", "string", "text", "binary", "json", "uuid",
               "interval", "enum", "list", "unsupported"]
Fidelity = Literal["exact", "compatible", "logical_string", "lossy", "unsupported"]
# The fidelities `--strict` refuses (rivet's TypePolicy::strict).
UNSAFE_FIDELITIES: frozenset[Fidelity] = frozenset({"lossy", "unsupported"})


class RivetType(NamedTuple):
    """One rivet type. `precision`/`scale`: a decimal's; `nanos`: a timestamp of nanoseconds
    (only a `columns:` override makes one); `inner`: a list's element; `native`/`reason`: an
    unsupported type's source name and rivet's reason; `lossy`: a `columns:` override that
    narrows the source's decimal (`narrowing`)."""

    kind: Kind
    precision: int | None = None
    scale: int | None = None
    nanos: bool = False
    inner: RivetType | None = None
    native: str | None = None
    reason: str | None = None
    lossy: bool = False

    @property
    def label(self) -> str:
        """The type as the report's `rivet_type` writes it (`decimal(10,2)`, `list<int4>`,
        `unsupported(numeric)`; a nanosecond timestamp is written as its microsecond one)."""
        if self.kind == "decimal":
            return f"decimal({self.precision},{self.scale})"
        if self.kind == "list":
            assert self.inner is not None
            return f"list<{self.inner.label}>"
        if self.kind == "unsupported":
            return f"unsupported({self.native})"
        return _LABELS.get(self.kind, self.kind)

    @property
    def arrow(self) -> str | None:
        """The Arrow type as the report writes it (Rust's `Debug` of it); None: no Arrow type
        (an unsupported type, or a list of one), which the report writes `-`."""
        if self.kind == "decimal":
            assert self.precision is not None
            width = 128 if self.precision <= DECIMAL128_MAX_PRECISION else 256
            return f"Decimal{width}({self.precision}, {self.scale})"
        if self.kind in ("timestamp", "timestamp_tz"):
            unit = "Nanosecond" if self.nanos else "Microsecond"
            zone = 'Some("UTC")' if self.kind == "timestamp_tz" else "None"
            return f"Timestamp({unit}, {zone})"
        if self.kind == "list":
            assert self.inner is not None
            inner = self.inner.arrow
            if inner is None:
                return None
            return f"List(Field {{ data_type: {inner}, nullable: true }})"
        return _ARROW.get(self.kind)

    @property
    def fidelity(self) -> Fidelity:
        """rivet's `derive_fidelity`: a list is never better than its element."""
        if self.lossy:
            return "lossy"
        if self.kind == "list":
            assert self.inner is not None
            inner = self.inner.fidelity
            return inner if inner in UNSAFE_FIDELITIES else "compatible"
        return _FIDELITY.get(self.kind, "exact")

    @property
    def unsupported_reason(self) -> str | None:
        """rivet's reason for an unsupported type (a list of one has none of its own)."""
        return self.reason if self.kind == "unsupported" else None


def unsupported(native: str, reason: str | None) -> RivetType:
    return RivetType("unsupported", native=native, reason=reason)


def decimal(precision: int, scale: int) -> RivetType:
    return RivetType("decimal", precision=precision, scale=scale)


def list_of(inner: RivetType) -> RivetType:
    return RivetType("list", inner=inner)


# Arrow's Decimal128 holds 38 digits; wider decimals are Decimal256 (up to 76).
DECIMAL128_MAX_PRECISION = 38
# The widest decimal rivet maps (Decimal256); a catalog's wider precision is unsupported.
DECIMAL_MAX_PRECISION = 76

_LABELS: dict[str, str] = {"string": "text", "uint8": "uint8"}
_ARROW: dict[str, str] = {
    "bool": "Boolean", "int2": "Int16", "int4": "Int32", "int8": "Int64", "uint8": "UInt64",
    "float4": "Float32", "float8": "Float64", "date": "Date32", "time": "Time64(Microsecond)",
    "string": "Utf8", "text": "Utf8", "binary": "Binary", "json": "Utf8",
    "uuid": "FixedSizeBinary(16)", "interval": "Utf8", "enum": "Utf8"}
_FIDELITY: dict[str, Fidelity] = {
    "json": "logical_string", "enum": "compatible", "interval": "compatible",
    "unsupported": "unsupported"}

# The Arrow types rivet's CSV writer cannot serialize (refused before the run starts): a
# Decimal256, a list, a nanosecond timestamp (a `timestamp_ns`/`timestamp_tz_ns` override).
CSV_REFUSAL = ("column '{column}' (Arrow {arrow}) cannot be serialized to CSV — use "
               "`format: parquet` or drop it from the query")


def csv_refuses(rivet: RivetType) -> bool:
    """Whether a CSV export refuses a column of this type (an unsupported one is refused as
    such, not again for CSV)."""
    arrow = rivet.arrow
    if arrow is None:
        return False
    return (arrow.startswith(("Decimal256", "List(")) or
            (rivet.kind in ("timestamp", "timestamp_tz") and rivet.nanos))


def narrowing(source: RivetType, override: RivetType) -> str | None:
    """Why a decimal `columns:` override of a decimal column loses values (rivet then calls
    the column `lossy`): fewer fractional digits, or fewer integer digits, than the source's."""
    if source.kind != "decimal" or override.kind != "decimal":
        return None
    sp, ss, op, os = source.precision or 0, source.scale or 0, override.precision or 0, \
        override.scale or 0
    if os < ss:
        return (f"override decimal({op},{os}) reduces scale from source numeric({sp},{ss}) — "
                f"{ss - os} fractional digit(s) are truncated at run; this is lossy, not exact")
    if op - os < sp - ss:
        return (f"override decimal({op},{os}) reduces integer-digit capacity from source "
                f"numeric({sp},{ss}) — large values overflow at run; this is lossy, not exact")
    return None


def from_override(name: str, precision: int | None, scale: int | None) -> RivetType:
    """The rivet type of a `columns:` override (`core.config.rules.column_override`)."""
    if name == "decimal":
        assert precision is not None and scale is not None
        return decimal(precision, scale)
    if name in ("timestamp_ns", "timestamp_tz_ns"):
        return RivetType("timestamp" if name == "timestamp_ns" else "timestamp_tz", nanos=True)
    return RivetType(_KINDS[name])


_KINDS: dict[str, Kind] = {kind: kind for kind in get_args(Kind)}
