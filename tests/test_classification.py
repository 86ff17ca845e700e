"""Classification by structure (issue 23, item 2; docs/security.md "Classification").

A file is a facts document only when it parses as one (a mapping of facts keys only, with
`format: rivet-ci-facts/...`). A config whose text merely holds something that looks like the
facts format marker — in a query, a name, a comment, a quoted string, a top-level `format:` key
beside `source:` — is a config: planned by `plan`, counted by `check`, and reviewed by the
action, never silently left out.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.action import PR, REPO, Workspace, run_action
from support.fake_github import FakeGitHub
from support.pr import run_cli

from rivet_ci.core.facts.loader import is_facts_document

HEAD = """source:
  type: postgres
  url_env: ORDERS_REPLICA_URL
{top}exports:
  - name: sneaky_orders
    query: {query}
    mode: full
    isolate_on_source: true
    bogus_unknown_key: 1
    format: parquet
    destination: {{type: local}}
"""
BLOCK = "|\n      SELECT 1\n{line}\n      FROM t\n"
MARKERS = ('format: rivet-ci-facts/1', '"format": "rivet-ci-facts/1"',
           "'format': 'rivet-ci-facts/1'", '{"format": "rivet-ci-facts/1"}')
# Every place a marker-like line can sit in a config's text.
VARIANTS = {
    **{f"query-block-{i}": HEAD.format(top="", query=BLOCK.format(line="      " + m))
       for i, m in enumerate(MARKERS)},
    "query-block-unindented-json": HEAD.format(top="", query=BLOCK.format(
        line='      "format": "rivet-ci-facts/1",')),
    "comment-line": "# format: rivet-ci-facts/1\n" + HEAD.format(top="", query="SELECT 1"),
    "top-level-format-key": HEAD.format(top="format: rivet-ci-facts/1\n", query="SELECT 1"),
    "quoted-top-level-format-key": HEAD.format(top='"format": "rivet-ci-facts/1"\n',
                                               query="SELECT 1"),
    "double-quoted-query": HEAD.format(top="", query='"SELECT 1\n\n format: rivet-ci-facts/1"'),
    "flow-config": json.dumps({"format": "rivet-ci-facts/1", "source": {"type": "postgres"},
                               "exports": [{"name": "sneaky_orders", "table": "t",
                                            "mode": "full", "format": "parquet",
                                            "destination": {"type": "local"}}]}),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_marker_like_text_never_makes_a_config_a_facts_document(variant: str) -> None:
    assert not is_facts_document(VARIANTS[variant])


@pytest.mark.parametrize("text", [
    "format: rivet-ci-facts/1\nexports: {}\n",
    "format: 'rivet-ci-facts/1'\ncaptured_at: '2026-01-01T00:00:00Z'\nconfigs: {}\n",
    '{"format": "rivet-ci-facts/1", "exports": {}}',
    '  {"format": "rivet-ci-facts/1"}',
])
def test_a_real_facts_document_is_one(text: str) -> None:
    assert is_facts_document(text)


@pytest.mark.parametrize("text", [
    "format: rivet-ci-facts/1\nexports: [\n",  # does not parse: the config loader says why
    "format: rivet-ci-facts/1\nsource: {type: postgres}\n",  # a config key
    "- format: rivet-ci-facts/1\n",  # not a mapping
    "format: 1\nnote: rivet-ci-facts/1\n",  # the format is not the facts format
    "[" * 5000 + "format: rivet-ci-facts/1",  # nested beyond any parser's depth
])
def test_a_text_that_is_not_structurally_a_facts_document_is_not_one(text: str) -> None:
    assert not is_facts_document(text)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_plan_and_check_always_review_a_config_matched_by_the_walk(
        tmp_path: Path, variant: str) -> None:
    (tmp_path / "rivet").mkdir()
    (tmp_path / "rivet" / "sneaky.yaml").write_text(VARIANTS[variant])
    result = run_cli(["plan", "rivet", "--format", "json"], cwd=tmp_path)
    assert "facts document" not in result.stderr
    if variant == "flow-config":  # a directory walk reports YAML without a `source:` line
        assert "skipped 1 YAML file without a top-level `source:`" in result.stderr
        return
    assert result.code == 2  # the unknown key (or the `format` key) is an error, reported
    document = json.loads(result.stdout)
    assert [c["path"] for c in document["configs"]] == ["rivet/sneaky.yaml"]
    checked = run_cli(["check", "rivet"], cwd=tmp_path)
    assert checked.code == 2 and "no config files found" not in checked.stderr
    assert "sneaky.yaml" in checked.stdout + checked.stderr


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_action_reviews_a_config_however_its_text_looks(
        gh: FakeGitHub, ws: Workspace, variant: str) -> None:
    head = ws.repo.commit("sneaky config", {"rivet/sneaky.yaml": VARIANTS[variant]})
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head)
    assert result.code == 1, result.stderr  # a config error blocks (fail-on: config-error)
    assert "is a facts document" not in result.stdout
    plan = json.loads((ws.path / "plan.json").read_text())
    assert "rivet/sneaky.yaml" in [c["path"] for c in plan["configs"]]
    assert "rivet/sneaky.yaml" in {f["file"] for f in plan["diff"]["findings"]
                                   if f["kind"] == "config-error"}
