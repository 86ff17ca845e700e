"""The comment's words about isolation (`isolate_on_source`) are defined once, in the view model
(`ISOLATION_WORDS`, rivet_ci/core/comment/view.py), and every place that says the fact says it
in those words: a row's why, the blocking finding, "since your last push" and the legend
(issue 24: "isolation wording in three files").

Each test swaps the words for others no code writes, and finds the new ones in every place:
a phrase written anywhere else (in the renderer, the template, the view) would still show.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.action import example_configs
from support.generated.goldens import example_repo as new_example_repo
from support.pr import Repo, run_cli

from rivet_ci.core.comment.since import MovedExport, SinceLastPush
from rivet_ci.core.comment.view import (
    ISOLATION_WORDS,
    ITS_GROUP,
    ChangedRow,
    CommentView,
    FindingLine,
    WhyPart,
    isolation_words,
)
from rivet_ci.output.render import code, render_comment, template_environment
from rivet_ci.review.comment import _builtin_environment

SWAPPED = {"isolation": "SOLO on {} (swapped)", "cleared": "SHARED on {} (swapped)",
           "unknown": "MAYBE SOLO while {} is broken (swapped)"}
OLD = ("run alone", "isolated", "isolation cleared", "isolation unknown")


@pytest.fixture
def swapped(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for kind, words in SWAPPED.items():
        monkeypatch.setitem(ISOLATION_WORDS, kind, words)
    # What a process compiles once and keeps, in the words of its time: the built-in template
    # (Jinja folds the legend's constant filter call when it compiles). Rendered whys are the
    # rendering's own (`render.RenderCache`): nothing else to clear.
    _builtin_environment.cache_clear()
    yield
    _builtin_environment.cache_clear()


def said(kind: str, name: str) -> str:
    """`kind`'s words around `name` as the comment writes them (the name a code span)."""
    return isolation_words(kind, name, name_as=code)


def row(name: str, why: tuple[WhyPart, ...]) -> ChangedRow:
    return ChangedRow(
        export_name=name, file="rivet/a.yaml", line=3, url=None, status="changed",
        score_base=40, score_head=25, delta=-15, class_base="medium", class_head="low",
        wave_base=2, wave_head=4, blocking=False, waived=False, why=why, reasons=())


def view() -> CommentView:
    """Every place the comment says an isolation changed: three rows (now alone, no longer,
    unknown), a blocking new-isolation finding, two exports moved since the last push."""
    since = SinceLastPush(
        previous_sha="b" * 40, new_findings=(), resolved_findings=(), new_count=0,
        resolved_count=0, moved_count=2, partial=False, moved=(
            MovedExport(export_name="events", score_before=40, score_after=25,
                        isolated_after=True, source_group="replica_a"),
            MovedExport(export_name="items", score_before=25, score_after=40,
                        isolated_before=True, source_group="replica_b")))
    finding = FindingLine(kind="new-isolation", message="order_items: isolate_on_source",
                          text=isolation_words("isolation", "replica_a"), file="rivet/a.yaml",
                          line=3, url=None, export_name="order_items", source_group="replica_a")
    rows = (row("order_items", (WhyPart(kind="isolation", text="replica_a"),)),
            row("refunds", (WhyPart(kind="cleared", text="replica_b"),)),
            row("orders", (WhyPart(kind="unknown", text="rivet/b.yaml"),)))
    return CommentView(
        gate_id="default", marker="<!-- rivet-ci:comment id=default -->", digest="",
        passed=False, headline="❌ gate failed", policy="new-isolation", counts={},
        since=since, blocking=(finding,), omitted_blocking=0, waivers=(), summary=None,
        rows=rows, total_rows=len(rows), omitted_rows=0, show_details=True, details_cut=False,
        warnings=(), omitted_warnings=0, warnings_persisting=0, low_confidence=(),
        omitted_low_confidence=0, problems=(), omitted_problems=0, base_sha="a" * 40,
        head_sha="c" * 40, facts="facts.yaml", run_url=None, rules_url=None,
        full_report_hint="`plan.json`")


def lines(body: str) -> list[str]:
    return body.replace("\u00a0", " ").splitlines()


def test_the_built_in_words_read_the_same_in_every_place() -> None:
    body = lines(render_comment(view(), template_environment()))
    now, cleared = said("isolation", "replica_a"), said("cleared", "replica_b")
    assert now == "🔒 runs alone on `replica_a`"
    assert cleared == "🔓 no longer runs alone on `replica_b`"
    assert f"- ❌ `order_items`: {now}" in body  # the blocking finding
    assert f"- `events`: score 40 → 25, {now}" in body  # since your last push
    assert f"- `items`: score 25 → 40, {said('cleared', 'replica_b')}" in body
    assert any(line.startswith("| `order_items` |") and line.endswith(f"| {now} |")
               for line in body)  # the row's why
    assert any(line.startswith("| `refunds` |") and line.endswith(f"| {cleared} |")
               for line in body)
    assert any(line.endswith("| ❔ still runs alone? unknown while `rivet/b.yaml` is broken |")
               for line in body)
    (legend,) = [line for line in body if "**score** 0–100" in line]
    assert f"· 🔒 runs alone on {ITS_GROUP} (isolate_on_source)</sub>" in legend


@pytest.mark.usefixtures("swapped")
def test_every_place_takes_its_words_from_the_one_definition() -> None:
    text = render_comment(view(), template_environment())
    body = lines(text)
    assert "- ❌ `order_items`: SOLO on `replica_a` (swapped)" in body
    assert "- `events`: score 40 → 25, SOLO on `replica_a` (swapped)" in body
    assert "- `items`: score 25 → 40, SHARED on `replica_b` (swapped)" in body
    assert any(line.startswith("| `order_items` |")
               and line.endswith("| SOLO on `replica_a` (swapped) |") for line in body)
    assert any(line.startswith("| `refunds` |")
               and line.endswith("| SHARED on `replica_b` (swapped) |") for line in body)
    assert any(line.startswith("| `orders` |")
               and line.endswith("| MAYBE SOLO while `rivet/b.yaml` is broken (swapped) |")
               for line in body)
    (legend,) = [line for line in body if "**score** 0–100" in line]
    assert f"· SOLO on {ITS_GROUP} (swapped) (isolate_on_source)</sub>" in legend
    for old in ("🔒", "🔓", "❔", *OLD):
        assert old not in text, old


@pytest.mark.usefixtures("swapped")
def test_a_real_pull_request_says_it_in_the_one_definitions_words(tmp_path: Path) -> None:
    """The view built from a real diff (the blocking finding's text included), not by hand."""
    repo: Repo = new_example_repo(tmp_path / "repo")
    replica_a, order_items, _ = example_configs()
    repo.commit("add order_items", {"rivet/replica_a.yaml": replica_a + "\n" + order_items})
    # A team's template showing the findings' own text says the same words, group and all.
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "comment.md.j2").write_text(
        "{% for f in view.blocking %}{{ f.export_name }}: {{ f.text }}\n{% endfor %}",
        encoding="utf-8")

    def diff(*args: str) -> str:
        result = run_cli(["diff", "--base", "main", "--repo", str(repo.path), "--facts",
                          str(repo.path / "facts.yaml"), "--fail-on", "new-isolation", *args],
                         cwd=repo.path)
        assert result.code == 1, result.stderr
        return result.stdout.replace("\u00a0", " ")

    assert "order\\_items: SOLO on replica\\_a (swapped)" in diff("--template-dir",
                                                                  str(templates))
    body = diff()
    assert "- ❌ `order_items`: SOLO on `replica_a` (swapped)" in body
    assert body.count("SOLO on `replica_a` (swapped)") == 3  # finding, row, reasons entry
    assert f"SOLO on {ITS_GROUP} (swapped)" in body  # the legend
    # (the campaign picture marks the exports that run alone at head, 🔒, a state, not a change)
    start = body.index("**Campaign at head**")
    rest = body[:start] + body[body.index("```\n", body.index("```mermaid", start)):]
    for old in ("🔒", *OLD):
        assert old not in rest, old


def test_a_template_asking_for_words_that_do_not_exist_is_a_template_error() -> None:
    from rivet_ci.errors import UsageError

    env = template_environment(files={"comment.md.j2": b'{{ "isolated" | isolation("g") }}'})
    with pytest.raises(UsageError, match="'isolated' is none of isolation, cleared, unknown"):
        render_comment(view(), env)


def test_a_digest_from_before_the_group_was_recorded_says_its_source_group() -> None:
    """A re-run shows the since section its first comment stored; one written before
    `MovedExport.source_group` existed has no group to name."""
    old = view().since
    assert old is not None
    stored = old.model_dump(mode="json")
    for moved in stored["moved"]:
        del moved["source_group"]
    since = SinceLastPush.model_validate(stored)
    body = lines(render_comment(view().model_copy(update={"since": since}),
                                template_environment()))
    assert f"- `events`: score 40 → 25, 🔒 runs alone on {ITS_GROUP}" in body
    assert f"- `items`: score 25 → 40, 🔓 no longer runs alone on {ITS_GROUP}" in body
