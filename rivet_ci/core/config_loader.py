"""Config text → validated models and located problems (pure: the caller reads the file).

Each export is validated on its own, so one bad export never hides the others: everything that
can be planned is planned, and every problem of the file is reported at once with its line.
`${NAME}` placeholders are substituted from the mapping the caller passes (the environment); an
unset one is an error only where planning reads it — in the source it matters only when
connecting, so it is recorded for live preflight instead.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from rivet_ci.core.config import ExportConfig, SourceConfig, export_rule_problems
from rivet_ci.core.problems import Problem, field_path
from rivet_ci.core.yaml_lines import Loc, ParsedYaml, YamlSyntaxError, parse_yaml

_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# An unset placeholder is replaced by this marker before parsing: a bare `${X}` would break flow
# style (`source: {url: ${X}}`), the marker is a plain scalar anywhere. Found again after parsing.
_UNSET_MARK = "rivet-ci-unset.{name}."
_UNSET = re.compile(r"rivet-ci-unset\.([A-Za-z_][A-Za-z0-9_]*)\.")
TOP_LEVEL_KEYS = ("source", "exports")


class LoadedConfig(BaseModel):
    """A config file as far as it could be understood: valid exports plus every problem."""

    model_config = ConfigDict(frozen=True)

    path: str
    source: SourceConfig | None
    exports: tuple[ExportConfig, ...]
    export_lines: dict[str, int]
    problems: tuple[Problem, ...]
    unresolved_source_variables: tuple[str, ...] = ()

    @property
    def has_errors(self) -> bool:
        return any(p.severity == "error" for p in self.problems)


def substitute_placeholders(text: str, environ: Mapping[str, str]) -> tuple[str, set[str]]:
    """Replace `${NAME}` with the variable's value; unset ones become a marker and are returned."""
    unset: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        value = environ.get(match.group(1))
        if value is None:
            unset.add(match.group(1))
            return _UNSET_MARK.format(name=match.group(1))
        return value

    if "${" not in text:
        return text, unset
    return _PLACEHOLDER.sub(replace, text), unset


def load_config_text(path: str, text: str, environ: Mapping[str, str]) -> LoadedConfig:
    """Parse, substitute, and validate one rivet config file's text."""
    text, _ = substitute_placeholders(text, environ)
    problems: list[Problem] = []

    def empty() -> LoadedConfig:
        return LoadedConfig(path=path, source=None, exports=(), export_lines={},
                            problems=tuple(problems))

    try:
        parsed = parse_yaml(text)
    except YamlSyntaxError as exc:
        problems.append(Problem(file=path, line=exc.line, message=str(exc)))
        return empty()
    data = parsed.data
    if not isinstance(data, dict):
        kind = "empty" if data is None else type(data).__name__
        problems.append(Problem(file=path, line=parsed.line_of(()) or 1,
                                message=f"a rivet config must be a mapping with `source` and "
                                        f"`exports`, this document is {kind}"))
        return empty()

    def report(loc: Loc, message: str, line: int | None = None) -> None:
        problems.append(Problem(file=path, line=line if line is not None else parsed.line_of(loc),
                                field=field_path(loc) or None, message=message))

    for loc, line in parsed.duplicates:
        report(loc, "duplicate key: YAML keeps only the last value; remove one", line)
    for key in data:
        if key not in TOP_LEVEL_KEYS:
            report((str(key),), _unknown_key_message(str(key), TOP_LEVEL_KEYS))

    source, unresolved_source = _load_source(data, parsed, report)
    exports, lines = _load_exports(data, parsed, report)
    return LoadedConfig(path=path, source=source, exports=tuple(exports), export_lines=lines,
                        problems=tuple(problems),
                        unresolved_source_variables=tuple(unresolved_source))


def _load_source(
    data: dict[str, Any], parsed: ParsedYaml, report: Any
) -> tuple[SourceConfig | None, list[str]]:
    """The source, and the unset variables it names (they matter only when connecting)."""
    if "source" not in data:
        report(("source",), "missing required key `source`", parsed.line_of(()))
        return None, []
    raw = data["source"]
    unset = sorted({m.group(1) for v in (raw.values() if isinstance(raw, dict) else ())
                    if isinstance(v, str) for m in _UNSET.finditer(v)})
    try:
        return _as_written(SourceConfig.model_validate(raw)), unset
    except ValidationError as exc:
        # A connection field that is wrong only because its variable is unset (`port: ${PORT}`)
        # must not stop planning from facts: drop it and try again.
        unset_fields = {err["loc"][0] for err in exc.errors() if err["loc"]
                        and isinstance(err.get("input"), str) and _UNSET.search(err["input"])}
        if unset_fields and "type" not in unset_fields and isinstance(raw, dict):
            try:
                kept = {k: v for k, v in raw.items() if k not in unset_fields}
                return _as_written(SourceConfig.model_validate(kept)), unset
            except ValidationError:
                pass
        _report_validation(exc, ("source",), report)
        return None, unset


def _load_exports(
    data: dict[str, Any], parsed: ParsedYaml, report: Any
) -> tuple[list[ExportConfig], dict[str, int]]:
    exports: list[ExportConfig] = []
    lines: dict[str, int] = {}
    raw = data.get("exports")
    if "exports" not in data:
        report(("exports",), "missing required key `exports`", parsed.line_of(()))
        return exports, lines
    if not isinstance(raw, list):
        report(("exports",), f"must be a list of exports, found {type(raw).__name__}")
        return exports, lines
    if not raw:
        report(("exports",), "must list at least one export")
        return exports, lines
    first_seen: dict[str, int] = {}
    for i, item in enumerate(raw):
        loc: Loc = ("exports", i)
        if not isinstance(item, dict):
            report(loc, f"each export must be a mapping, found {type(item).__name__}")
            continue
        try:
            export = ExportConfig.model_validate(item)
        except ValidationError as exc:
            _report_validation(exc, loc, report)
            continue
        rule_problems = export_rule_problems(export)
        for field, message in rule_problems:
            report((*loc, field), message)
        unresolved = _unresolved_fields(item)
        for field, name in unresolved:
            report((*loc, field), f"environment variable {name} is not set")
        if export.name in first_seen:
            report((*loc, "name"), f"duplicate export name {export.name!r} "
                                   f"(first defined at exports[{first_seen[export.name]}])")
            continue
        first_seen[export.name] = i
        if rule_problems or unresolved:
            continue
        exports.append(export)
        lines[export.name] = parsed.line_of(loc) or 0
    return exports, lines


def _report_validation(exc: ValidationError, prefix: Loc, report: Any) -> None:
    model_fields: tuple[str, ...] = ()
    if prefix and prefix[0] == "source":
        model_fields = tuple(SourceConfig.model_fields)
    else:
        model_fields = tuple(ExportConfig.model_fields)
    for err in exc.errors(include_url=False):
        loc = (*prefix, *err["loc"])
        value = err.get("input")
        if err["type"] == "extra_forbidden":
            message = _unknown_key_message(str(err["loc"][-1]), model_fields)
        elif err["type"] == "missing":
            message = "missing required key"
        elif isinstance(value, str) and (unset := _UNSET.search(value)):
            message = f"environment variable {unset.group(1)} is not set"
        else:
            message = err["msg"]
            if err["type"] == "value_error":
                message = message.removeprefix("Value error, ")
            if value is not None and not isinstance(value, dict | list) and err["loc"]:
                message += f" (got {value!r})"
        report(loc, message)


def _unknown_key_message(key: str, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
    hint = f" (did you mean `{close[0]}`?)" if close else ""
    return f"unknown key `{key}`{hint}"


def _as_written(source: SourceConfig) -> SourceConfig:
    """Unset placeholders back as the user wrote them (`${NAME}`), for live preflight to report."""
    restored = {k: _UNSET.sub(lambda m: "${" + m.group(1) + "}", v)
                for k, v in source.model_dump().items()
                if isinstance(v, str) and _UNSET.search(v)}
    return source.model_copy(update=restored) if restored else source


def _unresolved_fields(item: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, variable) for every export field that names an unset variable."""
    out = []
    for key, value in item.items():
        if isinstance(value, str) and (match := _UNSET.search(value)):
            out.append((str(key), match.group(1)))
    return out
