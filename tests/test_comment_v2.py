"""Comment v2, read as a reviewer reads it: rendered by GitHub's own engine (cmark-gfm) and
checked structurally — one compact table, why each export changed, warnings per source group,
each finding once, a summary for large PRs, and one escaping rule for untrusted text.

Each test names the issue-12 *Why* bullet it covers.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options
from support.pr import (
    BIG_FILES,
    BIG_PER_FILE,
    Repo,
    Result,
    big_config,
    chunked,
    config,
    heavy_facts,
    incremental,
    run_cli,
    small_facts,
    write_facts,
)

from rivet_ci.adapters.github.runner import GITHUB_COMMENT_LIMIT
from rivet_ci.core.comment.view import detail_changes
from rivet_ci.core.gate.diff import material_change
from rivet_ci.core.plan.campaign import isolation_reason
from rivet_ci.core.plan.recommendation import ExportRecommendation, Reason
from rivet_ci.review.comment import docs_ref

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
GH_ENV = {"GITHUB_REPOSITORY": "acme/pipelines", "GITHUB_SERVER_URL": "https://github.com"}
# Tags our own template writes; any other element in the HTML came from data.
OUR_TAGS = {"p", "h3", "strong", "em", "code", "a", "ul", "li", "table", "thead", "tbody", "tr",
            "th", "td", "details", "summary", "sub", "br", "del", "pre"}


class Html(HTMLParser):
    """The elements, links and table shape of rendered HTML."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.links: list[str] = []
        self.rows: list[list[str]] = []
        self.text: list[str] = []
        self.prose: list[str] = []  # text outside code spans (where GitHub links mentions)
        self._cell: list[str] | None = None
        self._code = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self._code += tag == "code"
        if tag == "a":
            self.links.append(dict(attrs).get("href") or "")
        if tag == "tr":
            self.rows.append([])
        if tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        self._code -= tag == "code"
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if not self._code:
            self.prose.append(data)
        if self._cell is not None:
            self._cell.append(data)


def render_html(markdown: str) -> Html:
    # UNSAFE keeps raw HTML in the output, so HTML a config smuggled in would show up here.
    html = cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)
    parsed = Html()
    parsed.feed(html)
    return parsed


MENTION = re.compile(r"(?<![\w\u200b])@[A-Za-z0-9][A-Za-z0-9-]*")


def diff(repo: Repo, *args: str, environ: dict[str, str] | None = None) -> Result:
    return run_cli(["diff", "--base", "main", "--repo", str(repo.path), *args], cwd=repo.path,
                   environ=environ)


def example_configs() -> tuple[str, str, str]:
    a = (EXAMPLES / "pipelines" / "replica_a.yaml").read_text(encoding="utf-8")
    start, end = a.index("  - name: order_items"), a.index("  - name: customers")
    b = (EXAMPLES / "pipelines" / "replica_b.yaml").read_text(encoding="utf-8")
    return a[:start] + a[end:], a[start:end], b


@pytest.fixture
def example_repo(tmp_path: Path) -> Repo:
    replica_a, _, replica_b = example_configs()
    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {
        "rivet/replica_a.yaml": replica_a, "rivet/replica_b.yaml": replica_b,
        "facts.yaml": (EXAMPLES / "facts.yaml").read_text(encoding="utf-8"),
    })
    repo.checkout("feature", new=True)
    return repo


def table(html: Html) -> list[list[str]]:
    return [row for row in html.rows if row]


# -- "The table is too wide" ---------------------------------------------------------------------


def test_one_compact_table_with_the_export_linked_to_its_yaml_line(example_repo: Repo) -> None:
    replica_a, order_items, _ = example_configs()
    head = example_repo.commit("add", {"rivet/replica_a.yaml": replica_a + order_items})
    result = diff(example_repo, "--facts", str(example_repo.path / "facts.yaml"),
                  environ=GH_ENV)
    assert result.code == 0, result.stderr
    html = render_html(result.stdout)
    rows = table(html)
    assert rows[0] == ["export", "score", "priority", "cost", "wave", "why"]  # no file column
    assert all(len(row) == 6 for row in rows)
    by_name = {row[0].removeprefix("❌ "): row for row in rows[1:]}
    assert "🔒 runs alone on replica_a" in by_name["order_items"][5]
    # (`events`, heavy in a group of three, already ran alone on the base: rivet 0.32.2)
    assert "events" not in by_name
    blob = f"https://github.com/acme/pipelines/blob/{head}/rivet/replica_a.yaml#L"
    links = [link for link in html.links if link.startswith(blob)]
    assert {int(link.rsplit("#L", 1)[1]) for link in links} == {33}


def test_links_follow_the_github_server_of_the_run(example_repo: Repo) -> None:
    replica_a, order_items, _ = example_configs()
    head = example_repo.commit("add", {"rivet/replica_a.yaml": replica_a + order_items})
    ghes = {"GITHUB_REPOSITORY": "data/pipes", "GITHUB_SERVER_URL": "https://ghe.corp.example"}
    result = diff(example_repo, "--facts", str(example_repo.path / "facts.yaml"), environ=ghes)
    links = render_html(result.stdout).links
    assert f"https://ghe.corp.example/data/pipes/blob/{head}/rivet/replica_a.yaml#L33" in links
    assert not any(link.startswith("https://github.com/data/") for link in links)


# -- "Rows that changed show no change" ----------------------------------------------------------


def rec(score: int = 25, reasons: tuple[Reason, ...] = ()) -> ExportRecommendation:
    return ExportRecommendation(export_name="events", source_group="replica_a",
                                priority_score=score, priority_class="low",
                                cost_class="very_high", risk_class="low", recommended_wave=4,
                                reasons=reasons)


def test_a_value_of_a_reason_is_a_change_and_rewording_is_not() -> None:
    windows = Reason(kind="chunking_heavy", message="Chunked extraction (48 chunk windows).",
                     values=(("windows", 48),))
    more = Reason(kind="chunking_heavy", message="Chunked extraction (192 chunk windows).",
                  values=(("windows", 192),))
    reworded = Reason(kind="chunking_heavy", message="Chunked read (48 chunk windows).",
                      values=(("windows", 48),))
    assert material_change(rec(reasons=(windows,)), rec(reasons=(more,)))
    assert not material_change(rec(reasons=(windows,)), rec(reasons=(reworded,)))
    # The values are compared, never the English: a number only in the text is no change.
    texts = Reason(kind="chunking_heavy", message="Chunked extraction (50 chunk windows).",
                   values=(("windows", 48),))
    assert not material_change(rec(reasons=(windows,)), rec(reasons=(texts,)))


def test_the_comment_labels_each_moved_value_as_its_kind_defines_it() -> None:
    rows = Reason(kind="large_table", message="x", values=(("rows", 8_000_000),))
    more = Reason(kind="large_table", message="y", values=(("rows", 9_500_000),))
    (part,) = detail_changes(rows, more)
    assert (part.text, part.before, part.after) == ("row count", "~8,000,000", "~9,500,000")
    slow = Reason(kind="slow_history", message="x", values=(("minutes", 6),))
    slower = Reason(kind="slow_history", message="x", values=(("minutes", 12),))
    (part,) = detail_changes(slow, slower)
    assert (part.text, part.before, part.after) == ("average duration", "6 min", "12 min")
    heavy = Reason(kind="chunking_heavy", message="x", values=(("windows", 48),))
    light = Reason(kind="chunking_heavy", message="y")
    assert [p.text for p in detail_changes(heavy, light)] == ["chunking_heavy reworded"]
    # A name is no value: an isolated export moved from group `replica_4` to `replica_hot` has
    # no "reworded" detail (the digits of a group's name were once read as a number).
    before = isolation_reason("replica_4")
    after = isolation_reason("replica_hot")
    assert before.message != after.message and detail_changes(before, after) == []


def test_a_row_changed_only_inside_a_reason_says_what_changed(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {"rivet/a.yaml": config({**chunked("events"), "chunk_size": 1_000_000})})
    repo.checkout("feature", new=True)
    repo.commit("smaller chunks",
                {"rivet/a.yaml": config({**chunked("events"), "chunk_size": 250_000})})
    facts = write_facts(tmp_path / "facts.yaml", {"events": heavy_facts()})
    result = diff(repo, "--facts", str(facts))
    rows = table(render_html(result.stdout))
    (row,) = rows[1:]
    assert row[0] == "events" and row[1] == "25"  # the score did not move...
    # ...but the row says what changed in the config, then its effect
    assert re.fullmatch(r"chunk size 1,000,000 → 250,000 · chunk windows \d+ → \d+",
                        row[5].replace("\u00a0", " ")), row


def test_an_unmaterial_change_is_neither_listed_nor_counted() -> None:
    before = rec(reasons=(Reason(kind="large_table", message="Medium/large count (~8000)."),))
    after = rec(reasons=(Reason(kind="large_table", message="Medium or large count (~8000)."),))
    assert not material_change(before, after)
    assert material_change(before, rec(score=30, reasons=before.reasons))


# -- "The same source group appears twice" -------------------------------------------------------


def test_warnings_are_matched_per_source_group(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path / "repo")
    two = (chunked("events"), chunked("order_items"), incremental("orders"))
    repo.commit("base", {"rivet/a.yaml": config(*two)})
    repo.checkout("feature", new=True)
    repo.commit("third heavy", {"rivet/a.yaml": config(*two, chunked("shipments"))})
    facts = write_facts(tmp_path / "facts.yaml", {
        "events": heavy_facts(), "order_items": heavy_facts(12_000_000),
        "shipments": heavy_facts(20_000_000), "orders": small_facts()})
    body = diff(repo, "--facts", str(facts)).stdout
    section = body[body.index("**Campaign warnings**"):].split("\n\n")[1]
    lines = [line for line in section.splitlines() if "replica" in line]
    assert len(lines) == 1, lines  # one line for the group: never "new" and "resolved"
    assert "heavy exports 2 → 3 (+`shipments`)" in lines[0]
    assert "resolved" not in section


# -- "A config error is listed twice"; plurals; legend ------------------------------------------


def test_each_finding_once_plurals_and_a_legend(example_repo: Repo) -> None:
    _, _, replica_b = example_configs()
    example_repo.commit("broken", {"rivet/replica_b.yaml": replica_b.replace(
        "    table: ops.audit_log\n    mode: full\n",
        "    table: ops.audit_log\n    mode: incremental\n")})
    body = diff(example_repo, "--facts", str(example_repo.path / "facts.yaml")).stdout
    assert body.count("incremental mode needs cursor\\_column") == 1
    assert "(s)" not in body
    # The broken export is not planned at head: never "removed"
    assert "❌ gate failed (1 blocking finding) — 1 export not planned (config error)" in body
    assert "removed" not in body
    html = render_html(body)
    # At a ref that exists: the default branch until this version's tag is released.
    rules = f"https://github.com/rivet-ci/rivet-ci/blob/{docs_ref()}/docs/scoring-rules.md"
    assert rules in html.links
    text = "".join(html.text)
    assert "wave 1 runs first" in text and "isolate_on_source" in text


# -- "Large PRs are a wall" ----------------------------------------------------------------------


@pytest.fixture
def big_pr(tmp_path: Path) -> Repo:
    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {f"rivet/big_{i:02d}.yaml": big_config(i, "full")
                         for i in range(BIG_FILES)})
    repo.checkout("feature", new=True)
    repo.commit("mass change", {f"rivet/big_{i:02d}.yaml": big_config(i, "incremental")
                                for i in range(BIG_FILES)})
    return repo


@pytest.mark.slow
def test_a_large_pr_leads_with_a_summary_and_grouped_causes(big_pr: Repo,
                                                            tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    result = diff(big_pr, "--output", str(out))
    body = result.stdout
    total = BIG_FILES * BIG_PER_FILE
    assert len(body) <= GITHUB_COMMENT_LIMIT
    first_screen = body[:body.index("| export |")]
    assert "**Summary:**" in first_screen
    assert f"**{total:,} exports**: score" in first_screen
    assert "— same change" in first_screen
    rows = table(render_html(body))
    assert 1 < len(rows) <= 16
    omitted = re.search(r"_Showing (\d+) of ([\d,]+) changed exports .*?; all [\d,]+ are in "
                        r"(.*?)\._", body)
    assert omitted and int(omitted.group(1)) == len(rows) - 1
    assert int(omitted.group(2).replace(",", "")) == total
    # Locally the hint names the file written, never a job summary that does not exist.
    assert "job summary" not in body
    assert out.as_posix() in omitted.group(3)
    assert "Reasons per export are not shown here" in body


@pytest.mark.slow
def test_the_local_hint_says_how_to_get_every_row_without_output(big_pr: Repo) -> None:
    body = diff(big_pr).stdout
    assert "job summary" not in body
    assert "`rivet-ci diff --format json`" in body


# -- one escaping rule ---------------------------------------------------------------------------


HOSTILE_GROUP = ("@org/team <img src=x onerror=alert(1)> [x](https://evil.example) "
                 "![i](http://e/i.png) | www.evil.example")


def test_hostile_names_render_inert(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path / "repo")
    path = "rivet/we`ird @admins <b>|[x](javascript:e) www.e.example.yaml"
    repo.commit("base", {path: config(chunked("events", group=HOSTILE_GROUP))})
    repo.checkout("feature", new=True)
    repo.commit("pr", {path: config(chunked("events", group=HOSTILE_GROUP),
                                    chunked("order_items", group=HOSTILE_GROUP),
                                    incremental("orders", group=HOSTILE_GROUP),
                                    incremental("refunds", group=HOSTILE_GROUP))})
    facts = write_facts(tmp_path / "facts.yaml", {
        "events": heavy_facts(), "order_items": heavy_facts(12_000_000),
        "orders": small_facts(), "refunds": small_facts()})
    result = diff(repo, "--facts", str(facts), "--fail-on", "new-isolation", "--configs",
                  "rivet/*.yaml", environ=GH_ENV)
    assert result.code == 1, result.stderr
    html = render_html(result.stdout)
    assert set(html.tags) <= OUR_TAGS, set(html.tags) - OUR_TAGS
    assert "img" not in html.tags and "b" not in html.tags
    # Every link is one rivet-ci built: a blob link of this repository or the rules.
    for link in html.links:
        assert link.startswith(("https://github.com/acme/pipelines/blob/",
                                "https://github.com/rivet-ci/rivet-ci/")), link
        assert "evil" not in link and "http://e" not in link
    text = "".join(html.text)
    prose = "".join(html.prose)
    assert "org/team" in prose  # the group is shown outside code spans too...
    assert not MENTION.search(prose), MENTION.search(prose)  # ...with the mention kept inert
    assert all(len(row) == 6 for row in table(html))  # `|` did not split a cell
    assert "www.evil.example" in text.replace("\u200b", "")  # shown, as text


def test_a_trailing_newline_or_cr_in_a_name_cannot_break_a_line() -> None:
    from rivet_ci.output.render import cell_code, code, md_text

    for value in ("name\n", "a\r\n- [x](http://e)", "x\u2028# heading"):
        for rendered in (md_text(value), code(value), cell_code(value)):
            assert "\n" not in rendered and "\r" not in rendered and "\u2028" not in rendered
    hostile = "a\n# h1\n<script>"
    html = render_html(f"- {md_text(hostile)}\n")
    assert "h1" not in html.tags and "script" not in html.tags


def test_the_escape_hatch_is_not_reachable_from_a_template(tmp_path: Path,
                                                           example_repo: Repo) -> None:
    example_repo.commit("nothing")
    templates = tmp_path / "t"
    templates.mkdir()
    (templates / "comment.md.j2").write_text(
        "{{ '<b>x</b> @org' | safe }} {{ '<i>y</i>' | string }}", encoding="utf-8")
    body = diff(example_repo, "--template-dir", str(templates)).stdout
    html = render_html(body)
    assert "b" not in html.tags and "i" not in html.tags
    assert not MENTION.search("".join(html.prose))
