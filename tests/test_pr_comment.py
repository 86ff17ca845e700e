"""The PR comment through `rivet-ci diff`: the product note's scenario, the golden comment, the
size limit, template overrides and untrusted text. Real git repositories, no GitHub.

The golden comment is made by `tests/support/generated/goldens.py` and checked against the
committed file by `tests/test_generated_files.py` (`scripts/regenerate.py` rewrites it); here the
same comment is read for what it must say and how GitHub renders it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options
from support.generated.goldens import (
    comment_html,
    example_configs,
    realistic_comment,
)
from support.generated.goldens import example_repo as new_example_repo
from support.plan_schema import assert_matches_schema
from support.pr import (
    BIG_FILES,
    BIG_PER_FILE,
    Repo,
    Result,
    big_config,
    chunked,
    config,
    export,
    heavy_facts,
    incremental,
    run_cli,
    small_facts,
    write_facts,
)

from rivet_ci.adapters.github.runner import GITHUB_COMMENT_LIMIT
from rivet_ci.core.comment.marker import parse_marker


def diff(repo: Repo, *args: str) -> Result:
    return run_cli(["diff", "--base", "main", "--repo", str(repo.path), *args], cwd=repo.path)


@pytest.fixture
def example_repo(tmp_path: Path) -> Repo:
    """The bundled example, before `order_items` joined the orders replica."""
    return new_example_repo(tmp_path / "repo")


# -- the product note's scenario ------------------------------------------------------------------


def test_a_second_heavy_chunked_export_on_replica_a_fails_new_isolation(
        example_repo: Repo) -> None:
    replica_a, order_items, _ = example_configs()
    example_repo.commit("add order_items", {"rivet/replica_a.yaml": replica_a + "\n" + order_items})
    facts = str(example_repo.path / "facts.yaml")

    result = diff(example_repo, "--facts", facts, "--fail-on", "new-isolation")

    assert result.code == 1, result.stderr
    body = result.stdout.replace("\u00a0", " ")  # table cells keep arrows on one line
    assert ("- ⚠️ `replica_a` in `rivet/replica_a.yaml`: 2 heavy exports (was: 3 sharing the "
            "source) — do not run them concurrently: `events`, `order_items`") in body
    # rivet 0.32.2 isolates the heavy member of a group of three already (`events`, on the
    # base): the PR adds one isolation, the new heavy export.
    assert "- ❌ `order_items`: 🔒 runs alone on `replica_a`" in body
    assert re.search(r"\| ❌ `order_items` \|.*🔒 runs alone on `replica_a`", body)
    assert "- ❌ `events`" not in body
    assert "❌ gate failed (1 blocking finding)" in body
    assert "**Blocking** (`fail-on: config-error, no-configs, new-isolation`)" in body
    # The default policy (config-error) lets the same PR through, showing the same comment.
    passing = diff(example_repo, "--facts", facts)
    assert passing.code == 0
    assert "✅ gate passed" in passing.stdout and "1 new isolation" in passing.stdout


def test_diff_json_is_the_plan_document_with_the_pull_request_keys(example_repo: Repo) -> None:
    replica_a, order_items, _ = example_configs()
    head = example_repo.commit("add", {"rivet/replica_a.yaml": replica_a + order_items})
    out = example_repo.path / "out" / "plan.json"
    result = diff(example_repo, "--facts", str(example_repo.path / "facts.yaml"), "--format",
                  "json", "--output", str(out), "--fail-on", "new-warning")
    assert result.code == 1
    document = json.loads(result.stdout)
    assert json.loads(out.read_text(encoding="utf-8")) == document
    assert document["format"] == "rivet-ci-plan/1"
    assert document["pull_request"]["head_sha"] == head
    assert document["pull_request"]["changed_files"] == [
        {"status": "modified", "path": "rivet/replica_a.yaml", "old_path": None}]
    assert document["diff"]["gate"]["passed"] is False
    assert {e["export_name"] for e in document["diff"]["exports"]} == {"order_items"}
    assert "configs" in document["base"]
    # The document matches its shipped JSON Schema, pull-request keys included.
    assert_matches_schema(document)


# -- the golden comment ---------------------------------------------------------------------------


def test_golden_comment_of_a_realistic_pr() -> None:
    body = realistic_comment()  # `rivet-ci diff` with a failing gate
    marker = parse_marker(body)
    assert marker is not None and marker.timestamp == "2026-11-29T12:00:00Z"
    # Commits have fixed dates and authors (test_pr_support), so the head sha is stable too.
    assert body.startswith(marker.render())
    for expected in ("(−54)", "`order_items`: 🔒 runs alone on `replica_a`",
                     "2 heavy exports (was: 3",
                     "❌ config error in `rivet/replica_b.yaml:41`: `exports[3].cursor_column`",
                     "❌ gate failed (3 blocking findings)", "captured 6 h ago"):
        assert expected in body
    check_structure(body)


OUR_TAGS = {"p", "h3", "strong", "em", "code", "a", "ul", "li", "table", "thead", "tbody", "tr",
            "th", "td", "details", "summary", "sub", "br", "del", "pre"}


def check_structure(body: str) -> None:
    """The golden comment as GitHub renders it (cmark-gfm; its HTML is a golden file too): the
    table is intact, every element is one the template writes, every link is one we built."""
    html = comment_html(body)
    tags = set(re.findall(r"<([a-z0-9]+)[\s>/]", html))
    assert tags <= OUR_TAGS, tags - OUR_TAGS
    rows = re.findall(r"<tr>(.*?)</tr>", html, flags=re.DOTALL)
    assert len(rows) == 5  # header + 4 changed exports
    assert all(row.count("<td>") + row.count("<th>") == 6 for row in rows)
    for href in re.findall(r'href="([^"]*)"', html):
        assert href.startswith("https://github.com/rivet-ci/rivet-ci/blob/"), href


# -- size -----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_pr_changing_thousands_of_exports_stays_within_githubs_limit(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {f"rivet/big_{i:02d}.yaml": big_config(i, "full")
                         for i in range(BIG_FILES)})
    repo.checkout("feature", new=True)
    # Every export becomes incremental on an unknown cursor: 3,000 score drops, and one
    # config error so there is something that blocks on its own.
    files: dict[str, str | None] = {f"rivet/big_{i:02d}.yaml": big_config(i, "incremental")
                                    for i in range(BIG_FILES)}
    files["rivet/broken.yaml"] = config(export("broken", mode="incremental"), url_env="X_URL")
    repo.commit("mass change", files)
    out = tmp_path / "plan.json"

    result = diff(repo, "--fail-on", "config-error", "--fail-on", "score-drop:15",
                  "--output", str(out))

    assert result.code == 1, result.stderr
    body = result.stdout
    document = json.loads(out.read_text(encoding="utf-8"))
    changed = len(document["diff"]["exports"])
    assert changed == BIG_FILES * BIG_PER_FILE
    assert len(body) <= GITHUB_COMMENT_LIMIT
    assert parse_marker(body) is not None
    omitted = re.search(r"_Showing (\d+) of ([\d,]+) changed exports .*?; all [\d,]+ are in "
                        r"(.*?)\._", body)
    assert omitted, "the comment must say how many rows it left out"
    shown = len(re.findall(r"^\| (?:❌\u00a0)?`t\d\d_\d{4}`", body, flags=re.MULTILINE))
    assert shown == int(omitted.group(1)) > 0
    assert int(omitted.group(2).replace(",", "")) == changed
    assert str(out) in omitted.group(3)  # locally: the file written, not a job summary
    # Blocking findings come first: the config error, then score drops, before the table.
    blocking = body.index("**Blocking**")
    assert blocking < body.index("| export |")
    assert body.index("broken", blocking) < body.index("| export |")
    assert re.search(r"more blocking findings: see", body)


# -- template overrides ---------------------------------------------------------------------------


def test_a_user_template_extends_the_builtin_one(example_repo: Repo, tmp_path: Path) -> None:
    replica_a, order_items, _ = example_configs()
    example_repo.commit("add", {"rivet/replica_a.yaml": replica_a + order_items})
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "comment.md.j2").write_text(
        '{% extends "base/comment.md.j2" %}\n'
        "{% block footer %}\n\n_Questions? Ask #data-platform. Gate {{ view.gate_id }}, "
        "{{ view.counts.changed }} changed._\n{% endblock %}\n", encoding="utf-8")

    result = diff(example_repo, "--facts", str(example_repo.path / "facts.yaml"),
                  "--template-dir", str(templates), "--id", "warehouse")

    assert result.code == 0, result.stderr
    body = result.stdout
    assert body.rstrip().endswith("_Questions? Ask #data-platform. Gate warehouse, 0 changed._")
    assert "<sub>base" not in body  # the built-in footer was replaced
    assert "🔒 runs alone on `replica_a`" in body  # every other block is inherited
    marker = parse_marker(body)
    assert marker is not None and marker.gate_id == "warehouse"


def test_a_broken_user_template_is_reported(example_repo: Repo, tmp_path: Path) -> None:
    example_repo.commit("nothing")
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "comment.md.j2").write_text(
        '{% extends "base/comment.md.j2" %}{% block footer %}{{ view.no_such_field }}'
        "{% endblock %}", encoding="utf-8")
    result = diff(example_repo, "--template-dir", str(templates))
    assert result.code == 2  # the user's template, not a bug in rivet-ci
    assert "cannot render the comment template" in result.stderr
    assert "no_such_field" in result.stderr
    assert "Traceback" not in result.stderr
    missing = diff(example_repo, "--template-dir", str(tmp_path / "typo"))
    assert missing.code == 2 and "does not exist" in missing.stderr


def test_a_user_template_is_sandboxed(example_repo: Repo, tmp_path: Path) -> None:
    example_repo.commit("nothing")
    templates = tmp_path / "templates"
    templates.mkdir()
    # The classic template-injection route to Python internals.
    (templates / "comment.md.j2").write_text(
        "{{ view.__class__.__mro__[1].__subclasses__() }}", encoding="utf-8")
    result = diff(example_repo, "--template-dir", str(templates))
    assert result.code == 2
    assert "cannot render the comment template" in result.stderr
    assert "unsafe" in result.stderr
    assert "__subclasses__" not in result.stdout


# -- untrusted text -------------------------------------------------------------------------------


def test_untrusted_config_text_is_escaped(tmp_path: Path) -> None:
    group = "@org/team <script>alert(1)</script>"
    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {"rivet/a.yaml": config(chunked("events", group=group))})
    repo.checkout("feature", new=True)
    repo.commit("pr", {"rivet/a.yaml": config(chunked("events", group=group),
                                              chunked("order_items", group=group),
                                              incremental("orders", group=group),
                                              incremental("refunds", group=group))})
    facts = write_facts(tmp_path / "facts.yaml", {
        "events": heavy_facts(), "order_items": heavy_facts(12_000_000),
        "orders": small_facts(), "refunds": small_facts()})

    result = diff(repo, "--facts", str(facts), "--fail-on", "new-isolation",
                  "--fail-on", "new-warning")

    body = result.stdout
    assert result.code in (0, 1), result.stderr
    assert f": 🔒 runs alone on `{group}`" in body and "Campaign warnings" in body  # shown...
    # Rendered by GitHub's engine: no element from the config, and outside code spans (where
    # GitHub would link a mention) the mention is broken by a zero-width space.
    html = cmarkgfm.github_flavored_markdown_to_html(body, options=Options.CMARK_OPT_UNSAFE)
    assert "<script" not in html
    prose = re.sub(r"<code>.*?</code>", "", html, flags=re.DOTALL)
    assert "@org" not in prose
    assert "@\u200borg/team &lt;script&gt;" in prose  # ...as inert text
