"""The comment fits the forge's limit by leaving out whole parts — never by cutting text
(issue 30, item 3; docs/action.md, "Size").

Names a pull request controls are bounded in the view (`core/comment/shown.py`: elided in the
middle, links left out whole; plan.json keeps them whole); what is still too long loses rows,
then the parts of `FIT_ORDER`, least important first, item by item, and the comment says what
it left out and where everything is.
"""

from __future__ import annotations

import json
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel
from support.pr import Repo, config, incremental, run_cli

from rivet_ci.core.comment.picture import label_text
from rivet_ci.core.comment.shown import ELLIPSIS, NoMasker, bounded, elide, shown
from rivet_ci.core.comment.view import (
    FIT_ORDER,
    FIXED_PARTS,
    ChangedRow,
    CommentView,
    FindingLine,
    ProblemLine,
    WarningLine,
    WhyPart,
)
from rivet_ci.core.common.limits import COMMENT_NAME_CHARS, COMMENT_TEXT_CHARS
from rivet_ci.output.redaction import MASK, Redactor
from rivet_ci.output.render import (
    CommentTooLongError,
    render_comment,
    render_within_limit,
    template_environment,
)

LIMIT = 16_000


def long(tag: str, n: int = COMMENT_NAME_CHARS) -> str:
    return (tag * n)[:n]


def crowded() -> CommentView:
    """A view whose every list is full of the longest names a view holds: far over `LIMIT`
    without a single changed row."""
    name, text = long("g"), long("m", COMMENT_TEXT_CHARS)
    blocking = tuple(FindingLine(kind="score-drop", message=text, text=text, file=name,
                                 line=i, url=None, export_name=f"{i}{name}"[:COMMENT_NAME_CHARS])
                     for i in range(50))
    warnings = tuple(WarningLine(scope=name, group=f"{i}{name}"[:COMMENT_NAME_CHARS],
                                 status="new", kind_base=None, kind_head="heavy", count_base=0,
                                 count_head=5, members=(name,) * 5, joined=(), left=())
                     for i in range(50))
    problems = tuple(ProblemLine(text=text, status="new") for _ in range(50))
    return CommentView(
        gate_id="default", marker="<!-- rivet-ci:comment id=default -->", digest="",
        passed=False, headline="❌ gate failed", policy="score-drop", counts={},
        since=None, blocking=blocking, omitted_blocking=0, waivers=(), summary=None, rows=(),
        total_rows=0, omitted_rows=0, show_details=False, details_cut=False,
        warnings=warnings, omitted_warnings=0, warnings_persisting=0,
        low_confidence=tuple(f"{i}{name}"[:COMMENT_NAME_CHARS] for i in range(50)),
        omitted_low_confidence=0, problems=problems, omitted_problems=0, base_sha="a" * 40,
        head_sha="c" * 40, facts="facts.yaml", run_url=None, rules_url=None,
        full_report_hint="`plan.json`")


def test_every_part_of_the_view_can_be_left_out_or_always_stays() -> None:
    parts = {part.field for part in FIT_ORDER}
    for field, info in CommentView.model_fields.items():
        annotation = str(info.annotation)
        nested = "tuple" in annotation or any(
            isinstance(t, type) and issubclass(t, BaseModel)
            for t in typing.get_args(info.annotation))
        if nested or field == "counts":
            assert field in parts | FIXED_PARTS, f"{field}: in FIT_ORDER or FIXED_PARTS?"


def test_a_crowded_comment_leaves_out_whole_items_and_says_so() -> None:
    env = template_environment()
    view = crowded()
    assert len(render_comment(view, env)) > 3 * LIMIT

    body, chosen = render_within_limit(view, env, LIMIT)

    assert len(body) <= LIMIT
    assert body.rstrip().endswith("</sub>")  # the footer, whole: nothing cut off the end
    # The least important went first, whole; what stays of a list is its first items, whole.
    assert chosen.low_confidence == () and chosen.problems == () and chosen.warnings == ()
    assert chosen.blocking == view.blocking[:len(chosen.blocking)] and chosen.blocking
    shown_items = [line for line in body.splitlines() if line.startswith("- ❌ ")]
    assert len(shown_items) == len(chosen.blocking)
    assert all(line.count(long("m", COMMENT_TEXT_CHARS)) == 1 for line in shown_items)
    (said,) = [line for line in body.splitlines() if line.startswith("_Left out to fit")]
    assert said == ("_Left out to fit the comment's size limit: 50 low-confidence exports, "
                    "50 configuration errors, 50 campaign warnings, "
                    f"{50 - len(chosen.blocking)} blocking findings; all of it is in "
                    "`plan.json`._")
    # With room for everything, nothing is left out.
    everything, whole = render_within_limit(view, env, 1_000_000)
    assert whole.left_out == () and "Left out" not in everything


def test_a_template_too_long_even_with_everything_left_out_is_a_clear_error(
        tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "comment.md.j2").write_text(
        '{% extends "base/comment.md.j2" %}{% block footer %}' + "x" * 70_000
        + "{% endblock %}", encoding="utf-8")
    with pytest.raises(CommentTooLongError, match="with every section that may go left out"):
        render_within_limit(crowded(), template_environment(templates), 65_536)
    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {"rivet/a.yaml": config(incremental("orders"))})
    result = run_cli(["diff", "--base", "main", "--repo", str(repo.path), "--template-dir",
                      str(templates)], cwd=repo.path)
    assert result.code == 2 and "over the limit of 65,536" in result.stderr
    assert "Traceback" not in result.stderr


def test_names_are_shown_elided_and_plan_json_keeps_them_whole(tmp_path: Path) -> None:
    export_name = "orders_" + "x" * 300 + "_end"
    group = "g" * 200 + "@team"
    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {"rivet/a.yaml": config(incremental("orders"))})
    repo.checkout("feature", new=True)
    repo.commit("pr", {"rivet/a.yaml": config(incremental("orders"),
                                              incremental(export_name, group=group))})
    out = tmp_path / "plan.json"
    result = run_cli(["diff", "--base", "main", "--repo", str(repo.path), "--output", str(out)],
                     cwd=repo.path)
    assert result.code == 0, result.stderr
    body = result.stdout
    shown_name = elide(export_name, COMMENT_NAME_CHARS)
    assert shown_name.startswith("orders_xxx") and shown_name.endswith("x_end")
    assert f"`{shown_name}`" in body and export_name not in body
    # the group in the campaign picture's label, elided before Mermaid's escaping
    assert label_text(elide(group, COMMENT_NAME_CHARS)) in body and "g" * 129 not in body
    document = json.loads(out.read_text(encoding="utf-8"))
    assert {e["export_name"] for e in document["diff"]["exports"]} == {export_name}


def test_bounds_by_kind_after_redaction() -> None:
    assert elide("a" * 10, 5) == f"aa{ELLIPSIS}aa" and elide("abc", 5) == "abc"
    assert len(elide("x" * 70_000, COMMENT_NAME_CHARS)) == COMMENT_NAME_CHARS
    assert bounded("link", "https://x/" + "p" * COMMENT_TEXT_CHARS) is None  # never cut
    assert bounded("ours", "m" * 10_000) == "m" * 10_000
    assert bounded("text", "t" * COMMENT_TEXT_CHARS) == "t" * COMMENT_TEXT_CHARS
    secret = "s3cr3t-" + "v" * 200  # longer than a name: masked whole before it is elided
    view = crowded().model_copy(update={"blocking": (), "warnings": (), "problems": (),
                                        "low_confidence": (secret, secret), "facts": secret})
    masked = shown(view, Redactor([secret]))
    assert masked.low_confidence == (MASK, MASK) and masked.facts == MASK
    assert shown(view, NoMasker()).low_confidence[0] == elide(secret, COMMENT_NAME_CHARS)
    # Objects shared before are shared after (the renderer renders each why once).
    why = (WhyPart(kind="isolation", text=long("g", COMMENT_TEXT_CHARS + 1)),)
    rows = tuple(ChangedRow.model_construct(  # as the view builds them: the why not copied
        export_name=name, file="rivet/a.yaml", line=3, url=None, status="changed",
        score_base=40, score_head=25, delta=-15, class_base="medium", class_head="low",
        wave_base=2, wave_head=4, blocking=False, waived=False, why=why, reasons=())
        for name in ("a", "b"))
    assert rows[0].why is rows[1].why
    bounded_rows = shown(view.model_copy(update={"rows": rows}), NoMasker()).rows
    assert bounded_rows[0].why is bounded_rows[1].why
    assert len(bounded_rows[0].why[0].text) == COMMENT_NAME_CHARS  # a name (its group)
    assert shown(crowded(), NoMasker()).blocking[0] is not None
    plain = crowded()
    assert shown(plain, NoMasker()) is plain  # nothing over its bound: the same object
