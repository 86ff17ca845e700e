"""The comment is ours to the last byte (issue 30, item 3): whatever names a pull request
controls — export, source group, file, column, a waiver's reason, at any length — the comment
the action would post fits the forge's limit by leaving out whole sections and rows, never by
cutting text, and in cmark-gfm's HTML of it (GitHub's engine) no pull-request text forms a live
element: no mention, link, image or HTML our template did not write.

A real review is planned once with placeholder names; each example puts fuzzed names in their
place everywhere (the diff, the gate, the head plan: messages quoting them too) and renders the
comment exactly as the action does (`review.comment.render_comments`, GitHub's limit, links to
the head commit, a previous comment for "since your last push"). Its HTML is compared with the
HTML of the same fitted view whose pull-request texts are a plain `x`: the same elements, in
the same order, with the same links — only text (and code spans) may differ.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from html.parser import HTMLParser
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from support.generated.goldens import comment_html
from support.pr import Repo, chunked, config, export, heavy_facts, write_facts

from rivet_ci.adapters.files import load_facts_file
from rivet_ci.adapters.git import GitRepo
from rivet_ci.adapters.github.runner import GITHUB_COMMENT_LIMIT, blob_linker
from rivet_ci.core.comment.shown import FIELD_KINDS
from rivet_ci.core.comment.since import make_digest
from rivet_ci.core.comment.view import TOP_ROWS_LARGE, CommentView
from rivet_ci.core.common.limits import COMMENT_NAME_CHARS, COMMENT_TEXT_CHARS
from rivet_ci.core.gate.policy import GateResult, evaluate_gate, parse_policy
from rivet_ci.core.plan.planner import FactsOrigin
from rivet_ci.output.redaction import Redactor
from rivet_ci.output.render import render_comment, render_within_limit
from rivet_ci.review.comment import (
    SHORT_COMMENT_LIMIT,
    CommentOptions,
    Reviewed,
    _builtin_environment,
    render_comments,
    reviewed,
)
from rivet_ci.review.pull_request import PullRequestPlan, plan_pull_request

SERVER, REPOSITORY = "https://github.com", "acme/pipelines"
RUN_URL = f"{SERVER}/{REPOSITORY}/actions/runs/77"
RULES = "https://github.com/rivet-ci/rivet-ci/blob/main/docs/scoring-rules.md"
NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
STAMP = "2026-11-29T12:00:00Z"
GROUPS = 6
# Placeholders planned as names; each example replaces every occurrence of each.
FILE, COLUMN, REASON = "QQFILEQQ", "QQCOLQQ", "QQREASONQQ"
EXPORTS = tuple(f"QQEXP{i}QQ" for i in range(GROUPS * 2))
GROUP_NAMES = tuple(f"QQGRP{i}QQ" for i in range(GROUPS))
PLACEHOLDERS = (FILE, COLUMN, REASON, *EXPORTS, *GROUP_NAMES)


def _configs(head: bool) -> dict[str, str | None]:
    """Base: one heavy export per group. Head: a second heavy export per group (new
    isolations and campaign warnings), a new cursor column, a waiver added in the PR whose
    reason is a name, and a file that no longer loads."""
    items = [chunked(EXPORTS[2 * i], group=g) for i, g in enumerate(GROUP_NAMES)]
    if head:
        items += [chunked(EXPORTS[2 * i + 1], group=g) for i, g in enumerate(GROUP_NAMES)]
    cursor = export("QQCURQQ", mode="incremental", source_group=GROUP_NAMES[0],
                    cursor_column=COLUMN if head else "updated_at")
    text = config(*items, cursor)
    if head:
        text = text.replace(f"- name: {EXPORTS[1]}",
                            f"- name: {EXPORTS[1]}  # rivet-ci: allow new-isolation -- {REASON}")
    broken = config(export(EXPORTS[0] + "b", source_group=GROUP_NAMES[1],
                           **({"mode": "incremental"} if head else {})))
    return {f"rivet/{FILE}.yaml": text, f"rivet/{FILE}b.yaml": broken}


_REVIEW: list[tuple[PullRequestPlan, GateResult]] = []


@pytest.fixture(scope="module", autouse=True)
def review(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The review, planned once (kept out of the test's arguments, so a failing example is
    reported as its names alone)."""
    root = tmp_path_factory.mktemp("untrusted")
    repo = Repo.init(root / "repo")
    repo.commit("base", _configs(head=False))
    repo.checkout("feature", new=True)
    repo.commit("pr", _configs(head=True))
    facts = write_facts(root / "facts.yaml", {
        name: heavy_facts() for name in (*EXPORTS, EXPORTS[0] + "b", "QQCURQQ")})
    facts_file, _ = load_facts_file(facts, root=root)
    pr = plan_pull_request(GitRepo(repo.path), base="main", head="feature",
                           globs=("rivet/**/*.yaml",), facts=facts_file,
                           origin=FactsOrigin(kind="file", path="facts.yaml"), environ={})
    gate = evaluate_gate(pr.diff, parse_policy(["new-isolation", "new-warning"]), pr.waivers)
    assert not gate.passed and pr.diff.changed_exports and gate.notes
    _REVIEW.append((pr, gate))
    yield
    _REVIEW.clear()


# -- putting names in place ----------------------------------------------------------------------

def substituted(value: Any, names: dict[str, str], memo: dict[int, Any]) -> Any:
    """`value` with every placeholder in every string (and dict key) replaced."""
    if isinstance(value, str):
        if "QQ" not in value:
            return value
        for placeholder, name in names.items():
            value = value.replace(placeholder, name)
        return value
    if value is None or isinstance(value, int | float | bool):
        return value
    key = id(value)
    if key in memo:
        return memo[key]
    new: Any
    if isinstance(value, BaseModel):
        update = {k: substituted(v, names, memo) for k, v in value.__dict__.items()}
        new = value.model_copy(update=update)
    elif isinstance(value, tuple):
        new = tuple(substituted(v, names, memo) for v in value)
    elif isinstance(value, list):
        new = [substituted(v, names, memo) for v in value]
    elif isinstance(value, dict):
        new = {substituted(k, names, memo): substituted(v, names, memo)
               for k, v in value.items()}
    elif isinstance(value, frozenset | set):
        new = type(value)(substituted(v, names, memo) for v in value)
    else:
        new = value
    memo[key] = new
    return new


# -- the HTML as GitHub renders it ---------------------------------------------------------------

class Shape(HTMLParser):
    """The elements of rendered HTML in order (code spans and text left out), every link,
    and the text outside code (where GitHub links mentions and issue numbers)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, ...]] = []
        self.links: list[str] = []
        self.prose: list[str] = []
        self._code = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "code":
            self._code += 1
            return
        href = dict(attrs).get("href") if tag == "a" else None
        if href is not None:
            self.links.append(href)
        self.elements.append((tag, *(f"{k}={v}" for k, v in sorted(attrs, key=str)
                                     if k != "class" or tag != "pre")))

    def handle_endtag(self, tag: str) -> None:
        if tag == "code":
            self._code -= 1
            return
        self.elements.append((f"/{tag}",))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        if not self._code:
            self.prose.append(data)


def shape(markdown: str) -> Shape:
    parsed = Shape()
    parsed.feed(comment_html(markdown))  # cmark-gfm, GitHub's flavour, raw HTML kept
    return parsed


# What drives the template's choices, and rivet-ci's own links: kept in the plain view.
KEPT = frozenset({"kind", "status", "kind_base", "kind_head", "origin", "class_base",
                  "class_head", "cost_base", "cost_head", "url", "run_url", "rules_url",
                  "previous_sha", "base_sha", "head_sha"})


def plain(view: CommentView) -> CommentView:
    """`view` with every text a pull request controls made `x` (empty stays empty, blank
    stays blank): the comment's shape with nothing of the pull request's in it."""
    def walk(value: Any, field: str) -> Any:
        if isinstance(value, str):
            if field in KEPT or FIELD_KINDS.get(field) == "ours":
                return value
            return "" if not value else "x" if value.strip() else " "
        if isinstance(value, BaseModel):
            return value.model_copy(update={k: walk(v, k) for k, v in value.__dict__.items()})
        if isinstance(value, tuple):
            return tuple(walk(v, field) for v in value)
        if isinstance(value, list):
            return [walk(v, field) for v in value]
        if isinstance(value, dict):
            return {k: walk(v, field) for k, v in value.items()}
        return value

    result: CommentView = walk(view, "")
    return result


# -- names a pull request could write ------------------------------------------------------------

PIECES = ("`", "``", "|", "@", "@acme/admins", "@octocat", "<", ">", "<img src=x onerror=1>",
          "<details>", "</details>", "<summary>", "<sub>", "<br>", "](", "![", "[a](b)",
          "[x](https://evil.example)", "![p](https://evil.example/p.png)", "\n", "\r\n",
          "\n\n", "\n# h\n", "\n- item\n", "\n> quote\n", "\n---\n", "\u2028", "&amp;", "&#64;",
          "&lt;script&gt;", "&", "*", "**", "_", "~~", "#1", "#", "https://evil.example",
          "www.evil.example", "a@b.co", ":", "::", "\\", "\\`", "é", "日本", "🔒", "\u200b",
          "\u202e", " ", "\t", "x", "$x$", "<!--", "-->", "${X}", "%", '"', "'", "=", "{{",
          "}}", "{%", "\x00")
TARGETS = (COMMENT_NAME_CHARS - 1, COMMENT_NAME_CHARS, COMMENT_NAME_CHARS + 1,
           COMMENT_TEXT_CHARS - 1, COMMENT_TEXT_CHARS, COMMENT_TEXT_CHARS + 1,
           SHORT_COMMENT_LIMIT, GITHUB_COMMENT_LIMIT - 1, GITHUB_COMMENT_LIMIT,
           GITHUB_COMMENT_LIMIT + 1)

short_names = st.lists(st.sampled_from(PIECES) | st.text(max_size=4), min_size=1,
                       max_size=12).map("".join).filter(bool)


@st.composite
def names(draw: st.DrawFn) -> str:
    base = draw(short_names)
    if draw(st.booleans()):
        return base
    target = draw(st.sampled_from(TARGETS))
    return (base * (target // len(base) + 1))[:target]


def assignment(drawn: list[str]) -> dict[str, str]:
    """Each placeholder's name: drawn names in turn, told apart by a suffix."""
    return {p: drawn[i % len(drawn)] + (str(i) if i >= len(drawn) else "")
            for i, p in enumerate(sorted(PLACEHOLDERS, key=len, reverse=True))}


def fuzzed_review(pr: PullRequestPlan, gate: GateResult, names: dict[str, str]) -> Reviewed:
    memo: dict[int, Any] = {}
    base = reviewed(pr, gate)
    return Reviewed(
        base_sha=base.base_sha, head_sha=base.head_sha,
        diff=substituted(base.diff, names, memo), gate=substituted(base.gate, names, memo),
        head=substituted(base.head, names, memo),
        unchanged=substituted(base.unchanged, names, memo),
        checked=base.checked, waiver_problems=substituted(base.waiver_problems, names, memo),
        quiet=base.quiet)


def previous_comment(review: Reviewed) -> str:
    """A comment of an earlier push in which every export scored one point more: "since your
    last push" lists them (and the findings as new)."""
    moved = review.diff.model_copy(update={"exports": tuple(
        c.model_copy(update={"head": c.head.model_copy(update={
            "priority_score": c.head.priority_score + 1})}) if c.head is not None else c
        for c in review.diff.exports), "findings": ()})
    return ("<!-- rivet-ci:comment id=default head=" + "f" * 40 + f" at={STAMP} -->\n"
            + make_digest("f" * 40, moved, clean=str) + "\n")


def options(review: Reviewed) -> CommentOptions:
    previous = previous_comment(review)
    return CommentOptions(gate_id="default", comment_limit=GITHUB_COMMENT_LIMIT,
                          run_url=RUN_URL, links=lambda sha: blob_linker(SERVER, REPOSITORY, sha),
                          previous_body=lambda: previous)


def check_posted(body: str, view: CommentView, limit: int, *, max_rows: int | None,
                 details: bool, names: dict[str, str]) -> None:
    assert len(body) <= limit
    assert body.startswith("<!-- rivet-ci:comment id=default ")
    assert body.rstrip().endswith("</sub>")  # the footer is whole: nothing was cut off
    again, chosen = render_within_limit(view, _builtin_environment(), limit,
                                        max_rows=max_rows, details=details)
    assert again == body
    posted, skeleton = shape(body), shape(render_comment(plain(chosen), _builtin_environment()))
    assert posted.elements == skeleton.elements  # no element, link or image of the PR's
    head = f"{SERVER}/{REPOSITORY}/blob/{view.head_sha}/"
    assert all(link.startswith((head, RULES, RUN_URL)) for link in posted.links), posted.links
    prose = "".join(posted.prose)
    assert not re.search(r"(?<![\w\u200b])@[A-Za-z0-9]", prose)  # a mention GitHub would link
    assert not re.search(r"(?<![\w&])#[0-9]", prose)  # an issue reference
    for name in names.values():  # a name over its bound is never shown whole
        if len(name) > COMMENT_TEXT_CHARS:
            assert name not in body


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisWarning")  # 65k-char names
@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(drawn=st.lists(names(), min_size=1, max_size=5))
def test_no_name_a_pull_request_writes_forms_a_live_element(drawn: list[str]) -> None:
    ((pr, gate),) = _REVIEW
    assigned = assignment(drawn)
    fuzzed = fuzzed_review(pr, gate, assigned)
    bodies = render_comments(fuzzed, options(fuzzed), timestamp=STAMP, now=NOW,
                             redact=Redactor())
    view = bodies.view
    cap = TOP_ROWS_LARGE if view.large else None
    for body, limit in ((bodies.comment, GITHUB_COMMENT_LIMIT),
                        (bodies.short, SHORT_COMMENT_LIMIT)):
        check_posted(body, view, limit, max_rows=cap, details=not view.large, names=assigned)
