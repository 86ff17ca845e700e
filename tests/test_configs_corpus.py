"""Our own rivet config corpus (written from spec rivet-config.md, not copied from rivet).

- `tests/configs/accept/*.yaml`: configs rivet 0.32.2 loads; together they use every key of
  every struct (checked by walking the models);
- `tests/configs/reject/<rule>.yaml`: one config per rule rivet refuses, its header naming the
  rule, `line: field` and words of our message; every rule of `RULES` that a config file can
  trigger has one (checked);
"""

from __future__ import annotations

import io
import json
import resource
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from rivet_ci.cli import run
from rivet_ci.commands.context import Context
from rivet_ci.commands.options import parse_params
from rivet_ci.core.config.loader import load_config_text
from rivet_ci.core.config.models import STRUCTS, Config
from rivet_ci.core.config.node_typing import specs
from rivet_ci.core.config.rivet_yaml import compose
from rivet_ci.core.config.rules import RULES
from rivet_ci.errors import UsageError

CONFIGS = Path(__file__).parent / "configs"
ACCEPT = sorted((CONFIGS / "accept").glob("*.yaml"))
REJECT = sorted((CONFIGS / "reject").glob("*.yaml"))
# Rules no config file can trigger: the command line (R0), reading the file (R1, R2), a NUL in a
# `--param` value (R4), alias expansion (tested below) and the unused-param warning.
NOT_FILE_RULES = {"R0", "R1", "R2", "R4", "P0-repetition", "W-param",
                  "P0-bom"}  # (a header comment would follow the BOM: tested below)


def header(path: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("# ") or ": " not in line:
            break
        key, _, value = line[2:].partition(": ")
        out[key] = value
    return out


@pytest.mark.parametrize("path", ACCEPT, ids=[p.name for p in ACCEPT])
def test_rivet_accepts_it_so_do_we(path: Path) -> None:
    # With --check-environment, relative paths resolved where the corpus lives.
    loaded = load_config_text(path.name, path.read_text(encoding="utf-8"), {},
                              path_exists=lambda name: (path.parent / name).exists(),
                              query_file_exists=lambda name: (path.parent / name).is_file())
    assert [p for p in loaded.problems if p.rule != "plan-cdc"] == []
    assert loaded.source is not None


@pytest.mark.parametrize("path", REJECT, ids=[p.name for p in REJECT])
def test_rivet_refuses_it_so_do_we(path: Path) -> None:
    want = header(path)
    environment = want.get("check-environment") == "true"
    text = path.read_text(encoding="utf-8")
    loaded = load_config_text(path.name, text, {},
                              path_exists=(lambda _: False) if environment else None,
                              query_file_exists=lambda name: (path.parent / name).is_file())
    hits = [p for p in loaded.problems if p.rule == want["rule"]]
    assert hits, [p.render() for p in loaded.problems]
    line, _, field = want["at"].partition(": ")
    assert (hits[0].line, hits[0].field or "") == (None if line == "-" else int(line), field)
    assert want["says"] in hits[0].message
    assert hits[0].severity == "error"
    assert path.stem == want["rule"]
    if environment:  # without --check-environment the same rule is a note that never blocks
        relaxed = load_config_text(path.name, text, {})
        notes = [p for p in relaxed.problems if p.rule == want["rule"]]
        assert notes and all(p.severity == "note" for p in notes)
        assert not [p for p in relaxed.problems if p.severity == "error"]


def test_every_rule_a_file_can_trigger_has_a_refused_config() -> None:
    ids = {r.id for r in RULES} - NOT_FILE_RULES
    assert {p.stem for p in REJECT} == ids


def _key_paths(model: type[BaseModel], prefix: str,
               seen: set[type[BaseModel]] | None = None) -> set[str]:
    """Every key of every struct, each struct's keys at the first path it appears at (depth
    first): `exports[].x` for a list of structs, `exports[].load.partition.x` for a
    word-or-struct (`load.partition` is the same struct, walked there already)."""
    seen = {model} if seen is None else seen
    out: set[str] = set()
    for key, spec in specs(model).items():
        path = f"{prefix}{key}"
        out.add(path)
        kind, step = spec.kind, ""
        if kind.name in ("list", "map", "either") and kind.item is not None:
            kind, step = kind.item, {"list": "[]", "map": ".*", "either": ""}[kind.name]
        if kind.name == "struct" and kind.model is not None and kind.model not in seen:
            seen.add(kind.model)
            out |= _key_paths(kind.model, f"{path}{step}.", seen)
    return out


def _written_paths(node: Any, prefix: str, out: set[str]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            path = f"{prefix}{key.value}"
            out.add(path)
            if key.value in ("columns", "null_ratio_max"):
                continue  # free-form maps: their keys are data, not schema keys
            if path.endswith("load.tables") and isinstance(value, yaml.MappingNode):
                for _, override in value.value:  # keyed by table name
                    _written_paths(override, path + ".*.", out)
                continue
            _written_paths(value, path + ".", out)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _written_paths(item, prefix.rstrip(".") + "[].", out)


def test_every_key_of_the_schema_has_an_accepted_config() -> None:
    schema = _key_paths(Config, "")
    assert len(STRUCTS) == 18
    assert sum(len(specs(m)) for m in STRUCTS) == 174
    written: set[str] = set()
    for path in ACCEPT:
        _written_paths(compose(path.read_text(encoding="utf-8")), "", written)
    assert sorted(schema - written) == []


def test_billion_laughs_is_a_clear_config_error_quickly_and_in_bounded_memory() -> None:
    lines = ["source:", "  type: postgres", "  url_env: U", "  tuning:",
             "    a0: &a0 {pk: [x, x, x, x, x, x, x, x, x, x]}"]
    lines += [f"    a{i}: &a{i} {{tables: {{{', '.join(f't{j}: *a{i - 1}' for j in range(10))}}}}}"
              for i in range(1, 9)]
    lines += ["exports: [{name: a, table: t, format: parquet, destination: {type: stdout}, "
              "load: *a8}]"]
    text = "\n".join(lines) + "\n"
    assert len(text) < 1200  # 10^9 leaves once expanded
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.process_time()
    loaded = load_config_text("laughs.yaml", text, {})
    assert time.process_time() - started < 5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB
    assert [p.rule for p in loaded.problems] == ["P0-repetition"]
    assert "repetition limit exceeded" in loaded.problems[0].message
    assert loaded.exports == ()


def test_a_modest_alias_is_expanded_as_rivet_does() -> None:
    text = ("source: {type: postgres, url_env: U}\nexports:\n"
            "  - &base {name: a, table: t, format: csv, destination: {type: stdout}}\n"
            "  - {name: b, table: t, format: csv, destination: &out {type: local, path: o}}\n"
            "  - {name: c, table: t, format: csv, destination: *out}\n"
            "  - {name: d, table: t, format: csv, destination: *out, meta_columns: *base}\n")
    loaded = load_config_text("alias.yaml", text, {})
    # Expanded where it is used: the shared destination, and the whole export where a
    # meta_columns block is expected (each of its keys unknown there).
    assert [p.field for p in loaded.problems] == [
        f"exports[3].meta_columns.{key}" for key in ("name", "table", "format", "destination")]
    assert loaded.exports[2].destination.path == "o"


def test_merge_keys_and_second_documents_are_not_rivet() -> None:
    merge = ("source: {type: postgres, url_env: U}\nexports:\n"
             "  - {<<: {table: t}, name: a, format: csv, destination: {type: stdout}}\n")
    assert [p.rule for p in load_config_text("m.yaml", merge, {}).problems] == ["T-unknown-key"]
    second = "source: {type: postgres, url_env: U}\nexports: []\n---\nx: 1\n"
    assert [p.rule for p in load_config_text("d.yaml", second, {}).problems] == [
        "P0-multi-document"]


def test_csv_written_through_an_escape_or_a_placeholder_is_still_csv() -> None:
    """The P2 pre-scan is skipped only when no scalar can read `csv`: a double-quoted escape
    and a substituted placeholder still reach it."""
    escaped = ("source: {type: postgres, url_env: U}\nexports:\n"
               "  - {name: a, table: t, format: \"\\x63sv\", compression: gzip,\n"
               "     destination: {type: stdout}}\n")
    assert "csv" not in escaped
    assert [p.rule for p in load_config_text("e.yaml", escaped, {}).problems] == ["P2a"]
    placeholder = ("source: {type: postgres, url_env: U}\nexports:\n"
                   "  - {name: a, table: t, format: ${FMT}, compression: gzip,\n"
                   "     destination: {type: stdout}}\n")
    assert [p.rule for p in load_config_text("p.yaml", placeholder, {"FMT": "csv"}).problems
            ] == ["P2a"]


def cli(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(argv, Context(stdout=out, stderr=err, environ={}, cwd=cwd))
    return code, out.getvalue(), err.getvalue()


def test_check_command_exit_codes_and_json(tmp_path: Path) -> None:
    good, bad = CONFIGS / "accept", CONFIGS / "reject" / "V-E20a.yaml"
    code, out, _ = cli(["check", str(good)], tmp_path)
    assert code == 0 and "0 error(s)" in out
    code, out, _ = cli(["check", str(bad), "--format", "json"], tmp_path)
    document = json.loads(out)
    assert code == 2 and document["errors"] == 1
    (problem,) = document["problems"]
    assert {k: problem[k] for k in ("line", "key", "rule", "severity")} == {
        "line": 9, "key": "exports[0].cursor_column", "rule": "V-E20a", "severity": "error"}
    assert problem["code"] == "RIVET_CONFIG_MODE_SETTING_INVALID"  # rivet's own code
    code, _, err = cli(["check", str(bad), "-p", "UNUSED=1"], tmp_path)
    assert "--param 'UNUSED' is not used" in err
    code, out, _ = cli(["check", str(tmp_path / "missing.yaml")], tmp_path)
    assert code == 2 and "[R1 RIVET_CONFIG_FILE_UNREADABLE]" in out


def test_param_grammar_and_refusal() -> None:
    assert parse_params(["a=1=2", "b=", "a=3", " k =v"]) == {"a": "3", "b": "", " k ": "v"}
    assert parse_params([]) is None
    with pytest.raises(UsageError, match="'table' is not KEY=VALUE"):
        parse_params(["table"])


def test_diff_takes_params_over_the_environment_and_warns_about_unused_ones(
        tmp_path: Path) -> None:
    from support.pr import Repo, config, export, run_cli  # the git-repo helpers

    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {"rivet/a.yaml": config(export("orders"))})
    repo.commit("head", {"rivet/a.yaml": config(
        export("orders"), export("${EXTRA_EXPORT}", table="public.refunds"))})
    result = run_cli(["diff", "--base", "HEAD~1", "--format", "json",
                      "-p", "EXTRA_EXPORT=refunds", "-p", "UNUSED=1"],
                     cwd=repo.path, environ={"EXTRA_EXPORT": "from_the_environment"})
    head = {e["export_name"] for c in json.loads(result.stdout)["configs"]
            for e in c["exports"]}
    # The param wins over the environment; its value is masked in every output, like a secret
    # environment value (a value handed in is a secret until shown otherwise, docs/security.md).
    assert head == {"orders", "***"}
    assert "from_the_environment" not in result.stdout
    assert "--param 'UNUSED' is not used" in result.stderr
    assert "EXTRA_EXPORT" not in result.stderr


@pytest.mark.parametrize(("after", "refused"), [
    ("source:", True), ("---\nsource:", True), ("\nsource:", False), ("# c\nsource:", False),
    ("  # c\nsource:", False)])
def test_a_byte_order_mark_is_refused_where_rivet_refuses_it(after: str, refused: bool) -> None:
    """rivet 0.32.2 refuses a BOM directly followed by a key or `---` (and reads one before a
    blank or comment line); the differential corpus compares each with the binary."""
    text = "\ufeff" + after + " {type: postgres, url_env: U}\nexports:\n" \
        "  - {name: a, table: t, format: parquet, destination: {type: local}}\n"
    rules = [p.rule for p in load_config_text("bom.yaml", text, {}).problems]
    assert rules == (["P0-bom"] if refused else [])
