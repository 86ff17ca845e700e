"""Facts file text → `FactsFile` and located problems (pure: the caller reads the file).

A bad entry loses only that export's facts (it is kept as an unusable entry, so the export is
planned with low confidence as if preflight had failed); the rest of the file still counts. JSON
and YAML are both accepted.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from pydantic import ValidationError
from pydantic_core import SchemaValidator

from rivet_ci.core.common.patterns import did_you_mean
from rivet_ci.core.common.plain_schema import plain_validator
from rivet_ci.core.common.problems import Problem, field_path
from rivet_ci.core.common.yaml_lines import Loc, ParsedYaml, YamlSyntaxError, parse_yaml
from rivet_ci.core.facts.models import FACTS_FORMAT, ConfigFacts, ExportFacts, FactsFile

FACTS_KEYS = tuple(FactsFile.model_fields)
# A facts document names its format on a top-level `format:` line (YAML, unindented) or as the
# `"format"` member of a JSON object. A text matching neither cannot be one (a cheap necessary
# condition, never the decision): `is_facts_document` decides by the parsed structure.
_FACTS_MARK = re.compile(
    r"""^(?:format|"format"|'format')[ \t]*:[ \t]*["']?rivet-ci-facts/"""
    r"""|^[ \t]*\{?[ \t]*"format"[ \t]*:[ \t]*"rivet-ci-facts/""",
    re.MULTILINE)


def is_facts_document(text: str) -> bool:
    """Whether `text` is a facts document, never planned as a config — decided by its
    structure, never by a text match: it parses as a mapping whose every key is a facts file's
    (`FACTS_KEYS`) and whose `format` is `rivet-ci-facts/...`. A config (any `source:` key or
    other key of its own) whose text merely holds such a line — in a query, a name, a
    description — is a config, planned and reported like any other; a text that does not
    parse is not a facts document either (the config loader reports why)."""
    # Both forms name the format, so a text without it is not one: the substring and the line
    # pattern first (the pattern alone tries every line start of every config a directory walk
    # meets: ~40 ms for the 200 files, 2.4 MB, of 10,000 exports; the substring test: <1 ms);
    # only a text passing both is parsed.
    if "rivet-ci-facts/" not in text or _FACTS_MARK.search(text) is None:
        return False
    data: Any
    try:
        if text.lstrip().startswith("{"):
            data = json.loads(text)
        else:
            data = parse_yaml(text, index_depth=0).data
    except (ValueError, YamlSyntaxError, RecursionError):
        return False
    return (isinstance(data, dict) and all(isinstance(k, str) and k in FACTS_KEYS for k in data)
            and isinstance(data.get("format"), str)
            and data["format"].startswith("rivet-ci-facts/"))


INVALID_ENTRY = "the facts file entry for this export is invalid (see the problems)"


def load_facts_text(path: str, text: str) -> tuple[FactsFile | None, list[Problem]]:
    """Parse and validate a facts file; entries that fail validation are reported, kept unusable."""
    problems: list[Problem] = []
    json_text = text.lstrip().startswith(("{", "["))
    if json_text:
        whole = _validated_json(text)
        if whole is not None:
            return whole, problems
    data: Any
    try:
        data = json.loads(text) if json_text else parse_yaml(text, index_depth=0).data
    except json.JSONDecodeError as exc:
        return None, [Problem(file=path, line=exc.lineno, message=f"invalid JSON: {exc.msg}")]
    except RecursionError:
        return None, [Problem(file=path, message="invalid JSON: nested too deeply")]
    except ValueError as exc:  # e.g. an integer of 5,000 digits
        return None, [Problem(file=path, message=f"invalid JSON: {exc}")]
    except YamlSyntaxError as exc:
        return None, [Problem(file=path, line=exc.line, message=str(exc))]

    indexed: ParsedYaml | None = None

    def line_of(loc: Loc) -> int | None:
        # A facts file can be large and is usually fine: find lines only when something is wrong
        # (JSON is a subset of YAML, so the same index serves both).
        nonlocal indexed
        if indexed is None:
            try:
                indexed = parse_yaml(text, index_depth=6)
            except YamlSyntaxError:
                return None
        return indexed.line_of(loc)

    def report(loc: Loc, message: str) -> None:
        problems.append(Problem(file=path, line=line_of(loc), field=field_path(loc) or None,
                                message=message))

    if not isinstance(data, dict):
        report((), f"a facts file must be a mapping with `format: {FACTS_FORMAT}`")
        return None, problems
    if data.get("format") != FACTS_FORMAT:
        report(("format",), f"expected `format: {FACTS_FORMAT}`, found {data.get('format')!r}")
        return None, problems
    whole = _validated_whole(data)
    if whole is not None:
        return whole, problems
    # Entry by entry: every problem named, the valid entries kept.
    clean: dict[str, Any] = {k: v for k, v in data.items() if k not in ("exports", "configs")}
    clean["exports"] = _valid_entries(data.get("exports"), ("exports",), report)
    configs: dict[str, ConfigFacts] = {}
    raw_configs = data.get("configs")
    if isinstance(raw_configs, dict):
        for config_path, section in raw_configs.items():
            loc: Loc = ("configs", str(config_path))
            if not isinstance(section, dict) or set(section) - {"exports"}:
                report(loc, "each config section must be a mapping with only `exports`")
                continue
            entries = _valid_entries(section.get("exports"), (*loc, "exports"), report)
            configs[str(config_path)] = ConfigFacts(exports=entries)
    elif raw_configs is not None:
        report(("configs",), "must be a mapping of config path → {exports: ...}")
    clean["configs"] = configs
    try:
        return FactsFile.model_validate(clean), problems
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            message = err["msg"]
            if err["type"] == "extra_forbidden":
                close = did_you_mean(str(err["loc"][-1]), FACTS_KEYS)
                message = "unknown key" + (f" (did you mean `{close}`?)" if close else "")
            report(tuple(err["loc"]), message)
        return None, problems


def _validated_whole(data: dict[str, Any]) -> FactsFile | None:
    """A valid file (the usual case) validated whole, in one pydantic-core call instead of one
    per export (~12,000 at 10,000 exports: about half of the loading time); None when anything
    in it fails. The same models, so exactly as strict: whatever the whole document fails on —
    a bad entry, a null entry or section, a non-string key, all of which the per-entry path
    accepts or reports — is left to that path, which names every problem and keeps the valid
    entries. For a file both accept, they give equal `FactsFile`s (tests/test_core_fuzz.py)."""
    try:
        return FactsFile.model_validate(data)
    except ValidationError:
        return None


def _validated_json(text: str) -> FactsFile | None:
    """A valid JSON file (what `rivet-ci facts` writes) parsed and validated in one
    pydantic-core call, without building the decoded document in Python first: 0.064 s instead
    of 0.081 s (`json.loads` + `_validated_whole`) at 10,000 exports. The plain facts validator
    first (below: the same models, without building their validator), then the models for what
    it leaves to them; so exactly as strict as the models. Anything they refuse (invalid JSON,
    a lone surrogate, a bad entry) takes the path below, which decodes with `json` and names
    every problem. For a file both accept they give equal `FactsFile`s
    (tests/test_core_fuzz.py)."""
    try:
        facts: FactsFile = _plain_facts_validator().validate_json(text)
        return facts
    except ValidationError:
        pass
    try:
        return FactsFile.model_validate_json(text)
    except ValidationError:
        return None


@functools.cache
def _plain_facts_validator() -> SchemaValidator:
    """`FactsFile`'s fields as a validator of plain values (`rivet_ci.core.common.plain_schema`):
    built in ~6M instructions, where the models' own validator and pydantic's plugin loader
    take ~100M on every run (1,000 exports: 1,446M -> 1,360M for the whole `plan` run)."""
    return plain_validator(FactsFile)


def _valid_entries(raw: Any, loc: Loc, report: Any) -> dict[str, ExportFacts]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        report(loc, "must be a mapping of export name → facts")
        return {}
    out: dict[str, ExportFacts] = {}
    for name, entry in raw.items():
        try:
            out[str(name)] = ExportFacts.model_validate(entry if entry is not None else {})
        except ValidationError as exc:
            for err in exc.errors(include_url=False):
                message = err["msg"]
                if err["type"] == "extra_forbidden":
                    message = "unknown key"
                report((*loc, str(name), *err["loc"]),
                       f"{message}; export {name!r} is planned without facts")
            # Keep the entry, as unusable: dropping it would let a per-config entry fall back to
            # the top-level one, facts the file says do not apply to this config.
            out[str(name)] = ExportFacts(preflight_error=INVALID_ENTRY)
    return out
