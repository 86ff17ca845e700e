"""The comment says what the change is and never gives a false signal (issue 22), on the pull
requests a reviewer meets: a source-group rename, a one-key typo, a bad indent, a mode change,
a new heavy export. Each is run through `rivet-ci diff` on a real git repository, and read both
as Markdown and as the HTML GitHub's engine (cmark-gfm) makes of it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options
from support.pr import (
    Repo,
    Result,
    chunked,
    config,
    cursor_facts,
    export,
    heavy_facts,
    incremental,
    run_cli,
    write_facts,
)

from rivet_ci.core.gate.policy import SIMPLE_RULES
from rivet_ci.review.comment import rules_url

GH_ENV = {"GITHUB_REPOSITORY": "acme/pipelines", "GITHUB_SERVER_URL": "https://github.com"}
# Every `fail-on` a team could write, the strictest included.
EVERY_FAIL_ON = [*([r] for r in SIMPLE_RULES if r != "no-plan-refused"), ["score-drop:0"],
                 [*(r for r in SIMPLE_RULES if r != "no-plan-refused"), "score-drop:0"]]


def diff(repo: Repo, *args: str) -> Result:
    return run_cli(["diff", "--base", "main", "--repo", str(repo.path), *args], cwd=repo.path,
                   environ=GH_ENV)


def html_of(markdown: str) -> str:
    html: str = cmarkgfm.github_flavored_markdown_to_html(markdown,
                                                          options=Options.CMARK_OPT_UNSAFE)
    return html


def visible(markdown: str) -> str:
    """The comment's text as a reviewer reads it (the hidden marker and digest left out)."""
    lines = [line for line in markdown.splitlines() if not line.startswith("<!-- rivet-ci:")]
    return "\n".join(lines)


# -- a source group renamed ------------------------------------------------------------------


@pytest.fixture
def rename_pr(tmp_path: Path) -> tuple[Repo, Path]:
    """200 heavy exports in `dwh_legacy` (a heavy-exports campaign warning), renamed to
    `dwh_primary` in the head, nothing else changed."""
    names = [f"fact_{i:03d}" for i in range(200)]
    facts = write_facts(tmp_path / "facts.yaml", {n: heavy_facts() for n in names})
    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {"rivet/dwh.yaml": config(*(chunked(n, group="dwh_legacy")
                                                    for n in names))})
    repo.checkout("feature", new=True)
    repo.commit("rename", {"rivet/dwh.yaml": config(*(chunked(n, group="dwh_primary")
                                                     for n in names))})
    return repo, facts


@pytest.mark.parametrize("fail_on", EVERY_FAIL_ON, ids=",".join)
def test_a_pure_rename_never_blocks(rename_pr: tuple[Repo, Path], fail_on: list[str]) -> None:
    repo, facts = rename_pr
    result = diff(repo, "--facts", str(facts), *(a for t in fail_on for a in ("--fail-on", t)))
    assert result.code == 0, result.stdout
    assert "✅ gate passed — 1 source group renamed" in result.stdout


def test_a_rename_is_one_line_neither_new_nor_resolved(rename_pr: tuple[Repo, Path],
                                                      tmp_path: Path) -> None:
    repo, facts = rename_pr
    out = tmp_path / "plan.json"
    result = diff(repo, "--facts", str(facts), "--fail-on", "new-warning", "--output", str(out))
    text = visible(result.stdout)
    assert ("- 🔁 renamed `dwh_legacy` → `dwh_primary` (200 exports, no change to priority; "
            "its campaign warning is the same)") in text
    for false_signal in ("new campaign warning", "resolved", "| export |", "same change",
                         "fact_000"):
        assert false_signal not in text, false_signal
    html = html_of(result.stdout)
    assert ("🔁 renamed <code>dwh_legacy</code> → <code>dwh_primary</code> (200 exports, no "
            "change to priority") in html
    assert "<table>" not in html
    # plan.json keeps every export's change and says the warning was matched across the rename
    document = json.loads(out.read_text(encoding="utf-8"))["diff"]
    assert document["group_renames"] == [
        {"before": "dwh_legacy", "after": "dwh_primary", "exports": 200}]
    (warning,) = document["warnings"]
    assert warning["status"] == "pre-existing" and warning["renamed_from"] == "dwh_legacy"
    assert {f["status"] for f in document["findings"] if f["kind"] == "new-warning"} == {
        "pre-existing"}
    assert len(document["exports"]) == 200
    assert document["exports"][0]["config_changes"] == [
        {"key": "source_group", "before": "dwh_legacy", "after": "dwh_primary"}]


def test_a_rename_with_another_change_keeps_that_row(tmp_path: Path) -> None:
    names = ["a", "b", "c"]
    facts = write_facts(tmp_path / "facts.yaml", {n: heavy_facts() for n in names})
    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {"rivet/x.yaml": config(*(chunked(n, group="old") for n in names))})
    repo.checkout("feature", new=True)
    repo.commit("rename", {"rivet/x.yaml": config(
        chunked("a", group="new"), chunked("b", group="new"),
        {**chunked("c", group="new"), "chunk_size": 100_000})})
    text = visible(diff(repo, "--facts", str(facts)).stdout)
    assert "renamed `old` → `new` (3 exports, 1 with another change, listed below" in text
    (row,) = [line for line in text.splitlines() if line.startswith("| ")][1:]
    assert "`c`" in row
    assert "chunk size 500,000\u00a0→\u00a0100,000, source group `old`\u00a0→\u00a0`new` ·" in row


# -- a broken file is not a deletion ---------------------------------------------------------


def three_exports() -> tuple[dict[str, Any], ...]:
    return (chunked("events"), chunked("items"), incremental("orders"))


def three_facts(tmp_path: Path) -> Path:
    return write_facts(tmp_path / "facts.yaml", {
        "events": heavy_facts(), "items": heavy_facts(), "orders": cursor_facts()})


@pytest.mark.parametrize("breakage", [
    pytest.param(("chunk_column:", "chunk_colum:"), id="one-key-typo"),
    pytest.param(("  table: public.items", "     table: public.items"), id="bad-indent"),
])
@pytest.mark.parametrize("fail_on", [["new-warning", "new-isolation"], ["none"]])
def test_a_broken_file_never_shows_removed_or_resolved(
    tmp_path: Path, breakage: tuple[str, str], fail_on: list[str],
) -> None:
    text = config(*three_exports())
    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {"rivet/a.yaml": text})
    repo.checkout("feature", new=True)
    old, new = breakage
    repo.commit("broken", {"rivet/a.yaml": text.replace(old, new, 1)})
    out = tmp_path / "plan.json"
    result = diff(repo, "--facts", str(three_facts(tmp_path)), "--output", str(out),
                  *(a for t in fail_on for a in ("--fail-on", t)))
    body = visible(result.stdout)
    for false_signal in ("removed", "resolved", "✅ fixed", "🔓", "no longer runs alone"):
        assert false_signal not in body, false_signal
    (headline,) = [line for line in body.splitlines() if line.startswith("**❌ gate failed")
                   or line.startswith("**✅ gate passed")]
    assert "not planned (config error)" in headline
    assert "unknown while `rivet/a.yaml` is broken" in body
    if "chunk_colum" in new:  # `items` is still planned, beside the export that is not
        assert "| ❔ still runs alone? unknown while `rivet/a.yaml` is broken |" in body
        assert "moved: items" not in body  # the picture does not call it moved either
    html = html_of(result.stdout)
    assert "removed" not in html and "resolved" not in html
    # each export that is not planned links to the error's line at head
    assert 'not planned: config error in <a href="https://github.com/acme/pipelines/blob/' in html
    document = json.loads(out.read_text(encoding="utf-8"))["diff"]
    statuses = {e["export_name"]: e["status"] for e in document["exports"]}
    assert "removed" not in statuses.values() and "not-planned" in statuses.values()
    assert not [f for f in document["findings"] if f["status"] == "resolved"]
    (warning,) = document["warnings"]
    assert warning["status"] == "unknown" and warning["broken_file"] == "rivet/a.yaml"


def test_a_deleted_export_is_still_removed(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {"rivet/a.yaml": config(*three_exports())})
    repo.checkout("feature", new=True)
    repo.commit("delete", {"rivet/a.yaml": config(chunked("events"), incremental("orders"))})
    body = visible(diff(repo, "--facts", str(three_facts(tmp_path))).stdout)
    assert "~~25~~\u00a0removed" in body and "not planned" not in body
    assert "resolved (was: 2 heavy exports)" in body


# -- the change is named first ------------------------------------------------------------------


def test_a_mode_change_names_the_mode_before_its_effect(tmp_path: Path) -> None:
    facts = write_facts(tmp_path / "facts.yaml", {"orders": cursor_facts()})
    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {"rivet/a.yaml": config(incremental("orders"))})
    repo.checkout("feature", new=True)
    repo.commit("full", {"rivet/a.yaml": config(export("orders", source_group="replica_a"))})
    body = visible(diff(repo, "--facts", str(facts)).stdout)
    (row,) = [line for line in body.splitlines() if line.startswith("| ")][1:]
    cells = [c.strip() for c in row.strip("|").split(" | ")]
    assert cells[2] == "high\u00a0→\u00a0low" and cells[3] == "medium"  # priority, cost
    rules = rules_url()  # the scoring rules the comment links to
    assert cells[5].startswith(
        "mode incremental\u00a0→\u00a0full, cursor `updated_at`\u00a0→\u00a0none · "
        f"[`−strong_cursor`]({rules}#reason-strong_cursor)"), cells[5]


def test_a_new_heavy_export_shows_its_cost_and_the_heavy_members(tmp_path: Path) -> None:
    facts = write_facts(tmp_path / "facts.yaml", {
        "events": heavy_facts(), "items": heavy_facts(), "orders": cursor_facts(),
        "clickstream": heavy_facts(180_000_000)})
    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {"rivet/a.yaml": config(*three_exports())})
    repo.checkout("feature", new=True)
    repo.commit("add", {"rivet/a.yaml": config(*three_exports(), chunked("clickstream"))})
    result = diff(repo, "--facts", str(facts), "--fail-on", "new-isolation")
    assert result.code == 1
    body = visible(result.stdout)
    (row,) = [line for line in body.splitlines() if line.startswith("| ❌")]
    cells = [c.strip() for c in row.strip("|").split(" | ")]
    assert cells[1] == "**25**\u00a0new" and cells[3] == "very\\_high"
    assert ("`replica_a` in `rivet/a.yaml`: heavy exports 2 → 3 (+`clickstream`): `events`, "
            "`items`, `clickstream`") in body
    html = html_of(result.stdout)
    assert "<th>priority</th>\n<th>cost</th>" in html
    assert "<td>very_high</td>" in html
