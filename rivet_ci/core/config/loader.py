"""Config text → validated models and located problems (pure: the caller reads the file).

rivet's pipeline (spec rivet-config.md §0.1): `${...}` substitution (params, then environment)
→ YAML (one document, rivet's typing) → raw pre-scans P1–P3 → typed parse → `validate()`.
rivet stops at the first failure; here every problem of the file is reported at once, in that
order, each as `file:line: path.to.key: message` with its rule id. Each export is validated on
its own, so one bad export never hides the others: everything that can be planned is planned.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from rivet_ci.core.common.fast_model import construct
from rivet_ci.core.common.patterns import PLACEHOLDER
from rivet_ci.core.common.problems import Problem, Severity, field_path
from rivet_ci.core.common.yaml_lines import Loc, YamlSyntaxError
from rivet_ci.core.config.models import TUNING_KEYS, Config, ExportConfig, SourceConfig
from rivet_ci.core.config.node_typing import (
    UNSET_PREFIX,
    Issue,
    Kind,
    RepetitionLimitError,
    TooDeepError,
    Typer,
    Walk,
)
from rivet_ci.core.config.rivet_yaml import BOOLS, MAX_DEPTH, PLAIN, compose, resolve_any
from rivet_ci.core.config.rules import (
    ENVIRONMENT_RULES,
    RULE_BY_ID,
    Finding,
    Scope,
    config_findings,
)

# Aliases may expand a document to at most this many nodes per character of its text (a normal
# config has fewer nodes than characters; a "billion laughs" file is refused, as rivet does).
ALIAS_EXPANSION_PER_CHAR = 20
ALIAS_EXPANSION_FLOOR = 10_000
# Every `${NAME}`, overlapping ones too (`${a${b}` names `a${b` and `b`).
_PLACEHOLDERS = re.compile(f"(?={PLACEHOLDER.pattern})")


# What may follow a byte-order mark in a file rivet reads: the end of the line, blanks, a
# comment or a flow collection (a key or `---` right after it is refused).
_AFTER_BOM = frozenset({"", "\n", "\r", " ", "\t", "#", "{", "["})
_TOP_LEVEL_KEY = re.compile(r"^(?:source|exports)[ \t]*:", re.MULTILINE)


def looks_like_config(text: str) -> bool:
    """Whether a YAML text has a top-level `source:` or `exports:` key — what a directory walk
    needs to tell a rivet config (even a broken one) from a workflow or compose file."""
    return _TOP_LEVEL_KEY.search(text) is not None


class LoadedConfig(BaseModel):
    """A config file as far as it could be understood: valid exports plus every problem."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    path: str
    source: SourceConfig | None
    exports: tuple[ExportConfig, ...]
    export_lines: dict[str, int]
    problems: tuple[Problem, ...]
    unresolved_source_variables: tuple[str, ...] = ()
    # `${NAME}` placeholders written in the file (for the unused `--param` warning).
    placeholders: frozenset[str] = frozenset()
    # Top-level keys rivet only reads at run time, kept for the plan document.
    notifications: Any = None
    parallel_exports: bool = False
    parallel_export_processes: bool = False
    load: Any = None


class Substitution(BaseModel):
    """The text after `${...}` substitution and what could not be substituted."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    text: str
    unset: tuple[str, ...]  # distinct names, index = the marker's number
    misses: tuple[tuple[str, int, str], ...]  # (name, line, rule R3/R4) per occurrence


def substitute(text: str, params: Mapping[str, str] | None,
               environ: Mapping[str, str]) -> Substitution:
    """rivet's substitution (spec §4.2): `${NAME}` → param, else environment variable.

    NAME is everything up to the next `}` (no trimming, no default syntax, `${}` is empty);
    inserted text is never rescanned; an unterminated `${` ends substitution. An unset name (or
    a value with a NUL byte) becomes a marker the typing recognises and reports."""
    if "${" not in text:
        return construct(Substitution, {"text": text, "unset": (), "misses": ()})
    out: list[str] = []
    unset: list[str] = []
    misses: list[tuple[str, int, str]] = []
    pos = 0
    line = 1
    while True:
        start = text.find("${", pos)
        if start < 0:
            break
        end = text.find("}", start)
        if end < 0:
            break
        name = text[start + 2:end]
        line += text.count("\n", pos, start)
        out.append(text[pos:start])
        value: str | None
        if name == "":
            value = ""
        elif params is not None and name in params:
            value = params[name]
        else:
            value = environ.get(name)
        rule = "R3" if value is None else ("R4" if "\0" in value else None)
        if rule is not None:
            if name not in unset:
                unset.append(name)
            misses.append((name, line, rule))
            value = f"{UNSET_PREFIX}{unset.index(name)}-"
        assert value is not None
        out.append(value)
        line += text.count("\n", start, end + 1)
        pos = end + 1
    out.append(text[pos:])
    return construct(Substitution, {"text": "".join(out), "unset": tuple(unset),
                                     "misses": tuple(misses)})


def placeholder_names(text: str) -> frozenset[str]:
    return frozenset(m.group(1) for m in _PLACEHOLDERS.finditer(text))


def substitute_query(query: str, params: Mapping[str, str] | None,
                     environ: Mapping[str, str]) -> tuple[str, tuple[str, ...]]:
    """A query's (or query_file's) text substituted, and the names left unset (kept as
    written)."""
    result = substitute(query, params, environ)
    if not result.unset:
        return result.text, ()
    restored = re.sub(rf"{UNSET_PREFIX}(\d+)-",
                      lambda m: "${" + result.unset[int(m.group(1))] + "}", result.text)
    return restored, result.unset


def load_config_text(
    path: str, text: str, environ: Mapping[str, str], *,
    params: Mapping[str, str] | None = None,
    path_exists: Callable[[str], bool] | None = None,
    query_file_exists: Callable[[str], bool] | None = None,
) -> LoadedConfig:
    """Substitute, parse, type and validate one rivet config file's text.

    `params` are `--param` values (they win over `environ`; None = no `--param` given).
    `path_exists` is given only with `--check-environment`: then environment-dependent rules
    (unset placeholders, missing credentials_file) are errors; without it they are notes.
    `query_file_exists` tells whether a relative `query_file` exists beside the config (rivet
    reads it before it connects); None = not checked."""
    return _Loader(path, text, environ, params, path_exists,
                   query_file_exists=query_file_exists).load()


class _Loader:
    def __init__(self, path: str, text: str, environ: Mapping[str, str],
                 params: Mapping[str, str] | None,
                 path_exists: Callable[[str], bool] | None, *,
                 query_file_exists: Callable[[str], bool] | None = None) -> None:
        self.path = path
        self.query_file_exists = query_file_exists
        self.raw = text
        self.environ = environ
        self.params = params
        self.path_exists = path_exists
        self.problems: list[Problem] = []
        self.root: yaml.Node | None = None
        # Each `exports` item as typed (None where it failed) and its line.
        self.exports: list[tuple[ExportConfig | None, int]] = []
        self.text = ""  # the substituted text that was composed

    def problem(self, line: int | None, loc: Loc, rule: str, message: str) -> None:
        severity: Severity = "error"
        if rule in ENVIRONMENT_RULES and self.path_exists is None:
            severity = "note"
            message += " (environment-dependent: checked with --check-environment)"
        elif RULE_BY_ID[rule].severity == "warning":
            severity = "warning"
        self.problems.append(Problem(file=self.path, line=line, field=field_path(loc) or None,
                                     message=message, severity=severity, rule=rule))

    def finding(self, finding: Finding) -> None:
        message = finding.message
        if finding.rule == "V-E17" and self.path_exists is None:
            message = (f"credentials_file '{dict(finding.values)['path']}' must exist where "
                       "rivet runs; not checked")
        loc = finding.loc
        if loc and loc[0] == "exports" and len(loc) > 1 and isinstance(loc[1], int):
            index = loc[1]
            export = self.exports[index][0] if index < len(self.exports) else None
            if export is not None and finding.rule not in ("V-L1", "V-L2", "V-E1"):
                message = f"export '{export.name}': {message}"
        self.problem(self.line_of(loc), loc, finding.rule, message)

    def load(self) -> LoadedConfig:
        subst = substitute(self.raw, self.params, self.environ)
        for name, line, rule in subst.misses:
            self.problem(line, (), rule, RULE_BY_ID[rule].message.format(name=name))
        placeholders = placeholder_names(self.raw) if "${" in self.raw else frozenset()
        empty = construct(LoadedConfig, {"path": self.path, "source": None, "exports": (),
                                         "export_lines": {}, "problems": (),
                                         "placeholders": placeholders})
        if self.raw.startswith("\ufeff") and self.raw[1:2] not in _AFTER_BOM:
            self.problem(1, (), "P0-bom", RULE_BY_ID["P0-bom"].message)
            return empty.model_copy(update={"problems": tuple(self.problems)})
        try:
            self.text = subst.text
            self.root = compose(subst.text)
        except YamlSyntaxError as exc:
            rule = "P0-multi-document" if "one YAML document" in str(exc) else (
                "P0-depth" if "recursion limit" in str(exc) else "P0-syntax")
            self.problem(exc.line, (), rule, str(exc))
            return empty.model_copy(update={"problems": tuple(self.problems)})
        walk = Walk(unset_names=subst.unset,
                    budget=ALIAS_EXPANSION_FLOOR + ALIAS_EXPANSION_PER_CHAR * len(subst.text))
        typer = Typer(walk)
        root = self.root
        try:
            if root is None or (isinstance(root, yaml.ScalarNode) and root.tag == PLAIN
                                and root.value == ""):
                typed = typer.struct(None, Kind("struct", model=Config), (), 1, 0)
            elif not isinstance(root, yaml.MappingNode):
                typer.value(root, Kind("struct", model=Config), (), root.start_mark.line + 1, 0)
                typed = None
            else:
                typed = typer.struct(root, Kind("struct", model=Config), (),
                                     root.start_mark.line + 1, 0)
        except RepetitionLimitError:
            self.problem(None, (), "P0-repetition", "aliases expand this document far beyond "
                         "its size (repetition limit exceeded); rivet refuses it")
            return empty.model_copy(update={"problems": tuple(self.problems)})
        except TooDeepError:
            self.problem(None, (), "P0-depth", f"the document is nested deeper than "
                         f"{MAX_DEPTH} levels (recursion limit exceeded)")
            return empty.model_copy(update={"problems": tuple(self.problems)})
        if walk.issues and _too_deep(root):
            # rivet reads the whole document before typing it: a subtree our typing did not
            # enter (it was refused first) is still too deep for rivet.
            self.problem(None, (), "P0-depth", f"the document is nested deeper than "
                         f"{MAX_DEPTH} levels (recursion limit exceeded)")
            return empty.model_copy(update={"problems": tuple(self.problems)})
        self.exports = walk.exports
        self._prescans(walk)
        ordered = sorted(walk.issues, key=lambda i: not i.rule.startswith("P0"))
        for issue in ordered:
            self._issue(issue)
        source: SourceConfig | None = walk.parts.get("source")
        return self._validate(typed, source, walk, placeholders)

    def _issue(self, issue: Issue) -> None:
        self.problem(issue.line, issue.loc, issue.rule, issue.message)

    # -- pre-scans P1–P3 (rivet runs them on the raw document) ------------------------------

    def _prescans(self, walk: Walk) -> None:
        for loc, keys in walk.misplaced.items():
            fields = "[" + ", ".join(k for k in TUNING_KEYS if k in {n for n, _ in keys}) + "]"
            line = min(line for _, line in keys)
            first = next(k for k in TUNING_KEYS if k in {n for n, _ in keys})
            if loc == ("source",):
                self.problem(line, (*loc, first), "P1a",
                             RULE_BY_ID["P1a"].message.format(fields=fields))
            else:
                index = loc[1]
                assert isinstance(index, int)
                name = self._raw_name(index)
                self.problem(line, (*loc, first), "P1b", f"export '{name}': " +
                             RULE_BY_ID["P1b"].message.format(fields=fields))
        root = self.root
        if not isinstance(root, yaml.MappingNode):
            return
        exports = _get(root, "exports")
        # P2 concerns `format: csv` exports only. A scalar reads `csv` only where the text holds
        # it, or builds it from a double-quoted escape (`"\x63sv"`): without either, no export
        # can have it and the walk is skipped.
        text = self.text
        if isinstance(exports, yaml.SequenceNode) and ("csv" in text or "\\" in text):
            for index, item in enumerate(exports.value):
                self._csv_compression(index, item)
        source = _get(root, "source")
        tls = _get(source, "tls") if source is not None else None
        if isinstance(tls, yaml.MappingNode):
            mode = _get(tls, "mode")
            if isinstance(mode, yaml.ScalarNode) and resolve_any(mode)[0] == "str" and \
                    mode.value != "disable":
                for knob in ("accept_invalid_certs", "accept_invalid_hostnames"):
                    value = _get(tls, knob)
                    if isinstance(value, yaml.ScalarNode) and value.tag == PLAIN and \
                            BOOLS.get(value.value) is True:
                        tls_at: Loc = ("source", "tls", knob)
                        self.problem(self.line_of(tls_at), tls_at, "P3", RULE_BY_ID["P3"].message
                                     .format(knob=knob, mode=mode.value))
                        break

    def _raw_name(self, index: int) -> str:
        exports = _get(self.root, "exports") if self.root is not None else None
        if isinstance(exports, yaml.SequenceNode) and index < len(exports.value):
            name = _get(exports.value[index], "name")
            if isinstance(name, yaml.ScalarNode) and resolve_any(name)[0] == "str":
                return str(name.value)
        return "<unnamed>"

    def _csv_compression(self, index: int, item: yaml.Node) -> None:
        fmt = _get(item, "format")
        if not (isinstance(fmt, yaml.ScalarNode) and fmt.value == "csv"
                and resolve_any(fmt)[0] == "str"):
            return
        name = self._raw_name(index)
        compression = _get(item, "compression")
        if isinstance(compression, yaml.ScalarNode) and \
                compression.value in ("zstd", "snappy", "gzip", "lz4"):
            loc: Loc = ("exports", index, "compression")
            self.problem(self.line_of(loc), loc, "P2a", f"export '{name}': " +
                         RULE_BY_ID["P2a"].message.format(codec=compression.value))
        profile = _get(item, "compression_profile")
        if isinstance(profile, yaml.ScalarNode) and resolve_any(profile)[0] == "str" and \
                profile.value != "none":
            loc = ("exports", index, "compression_profile")
            self.problem(self.line_of(loc), loc, "P2b", f"export '{name}': " +
                         RULE_BY_ID["P2b"].message.format(value=profile.value))

    # -- validate() ---------------------------------------------------------------------------

    def _validate(self, typed: Any, source: SourceConfig | None, walk: Walk,
                  placeholders: frozenset[str]) -> LoadedConfig:
        root_map = typed if isinstance(typed, dict) else {}
        typed_exports = [(i, e) for i, (e, _) in enumerate(walk.exports) if e is not None]
        exports_node = _get(self.root, "exports") if self.root is not None else None
        scope = Scope(
            source, typed_exports, count=len(walk.exports),
            # `exports:` with no value is an empty list
            exports_listed=isinstance(exports_node, yaml.SequenceNode) or (
                isinstance(exports_node, yaml.ScalarNode) and exports_node.tag == PLAIN
                and exports_node.value == ""),
            top_level_load=root_map.get("load") is not None or self._top_level_load_written(),
            load=root_map.get("load"), path_exists=self.path_exists,
            query_file_exists=self.query_file_exists)
        for finding in config_findings(scope):
            self.finding(finding)

        blocked = {loc[1] for loc in self._error_locs() if len(loc) > 1 and loc[0] == "exports"}
        planned: list[ExportConfig] = []
        lines: dict[str, int] = {}
        seen: set[str] = set()
        for index, export in typed_exports:
            name = export.name
            if index in blocked or name in seen:
                continue
            seen.add(name)
            if export.mode == "cdc":
                at: Loc = ("exports", index, "mode")
                self.problems.append(Problem(
                    file=self.path, line=self.line_of(at), field=field_path(at),
                    severity="warning", rule="plan-cdc",
                    message=f"export '{name}': not planned — a cdc export streams changes "
                            "and has no batch plan (rivet plan refuses it; rivet run streams it)"))
                continue
            if self.params is not None and export.query is not None and "${" in export.query:
                planned.append(self._second_pass(index, export))
            else:
                planned.append(export)
            lines[name] = walk.exports[index][1]
        unresolved = self._unresolved_in_source(source, walk)
        return construct(LoadedConfig, {
            "path": self.path, "source": source, "exports": tuple(planned),
            "export_lines": lines, "problems": tuple(self.problems),
            "unresolved_source_variables": unresolved, "placeholders": placeholders,
            "notifications": root_map.get("notifications"),
            "parallel_exports": bool(root_map.get("parallel_exports", False)),
            "parallel_export_processes": bool(root_map.get("parallel_export_processes", False)),
            "load": root_map.get("load")})

    def _top_level_load_written(self) -> bool:
        node = _get(self.root, "load") if self.root is not None else None
        return node is not None and not (isinstance(node, yaml.ScalarNode)
                                          and node.tag == PLAIN and node.value in ("", "~",
                                                                                   "null", "Null",
                                                                                   "NULL"))

    def _second_pass(self, index: int, export: ExportConfig) -> ExportConfig:
        """rivet substitutes `query:` again at plan time when a `--param` was given."""
        assert export.query is not None
        query, unset = substitute_query(export.query, self.params, self.environ)
        loc: Loc = ("exports", index, "query")
        for name in unset:
            self.problem(self.line_of(loc), loc, "R3", RULE_BY_ID["R3"].message.format(name=name))
        return export.model_copy(update={"query": query})

    def _error_locs(self) -> Iterable[Loc]:
        for problem in self.problems:
            if problem.severity == "note" and problem.rule != "R3-value":
                continue
            if problem.severity == "warning":
                continue
            if problem.field and problem.field.startswith("exports["):
                index = int(problem.field[len("exports["):problem.field.index("]")])
                yield ("exports", index)

    def _unresolved_in_source(self, source: SourceConfig | None, walk: Walk) -> tuple[str, ...]:
        if not walk.unset_names:
            return ()
        names: set[str] = set()
        for issue in walk.issues:
            if issue.loc and issue.loc[0] == "source":
                names.update(issue.unset)
        if source is not None:
            for value in source.model_dump().values():
                if isinstance(value, str):
                    names.update(n for n in walk.unset_names if "${" + n + "}" in value)
        return tuple(sorted(names))

    def line_of(self, loc: Loc) -> int | None:
        """The line of the deepest node of `loc` that exists (a key's line for a value)."""
        node = self.root
        line = node.start_mark.line + 1 if node is not None else None
        for part in loc:
            if isinstance(node, yaml.MappingNode) and isinstance(part, str):
                found = next(((k, v) for k, v in node.value
                              if isinstance(k, yaml.ScalarNode) and k.value == part), None)
                if found is None:
                    break
                line, node = found[0].start_mark.line + 1, found[1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and \
                    part < len(node.value):
                node = node.value[part]
                line = node.start_mark.line + 1
            else:
                break
        return line


def _too_deep(root: yaml.Node | None) -> bool:
    """Whether some node lies deeper than rivet's 128 levels (the root at depth 0). Each node
    is measured once (an alias shares its anchor's node), so this stays linear in the text."""
    heights: dict[int, int] = {}

    def height(node: yaml.Node, budget: int) -> int:
        known = heights.get(id(node))
        if known is not None:
            return known
        if budget < 0 or isinstance(node, yaml.ScalarNode):
            return 0
        children = (node.value if isinstance(node, yaml.SequenceNode)
                    else [n for pair in node.value for n in pair])
        tallest = 0
        for child in children:
            tallest = max(tallest, height(child, budget - 1) + 1)
            if tallest > budget:
                break
        heights[id(node)] = tallest
        return tallest

    return root is not None and height(root, MAX_DEPTH + 1) > MAX_DEPTH


def _get(node: yaml.Node | None, key: str) -> yaml.Node | None:
    if not isinstance(node, yaml.MappingNode):
        return None
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            return value_node  # type: ignore[no-any-return]
    return None
