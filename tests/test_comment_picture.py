"""The campaign picture (issue 22, item 7): a bounded Mermaid flowchart of the head campaign, in
the comment and the job summary, whose labels no name from a pull request can break out of.

Drawn in headless Chromium with the `mermaid` package by `tests/test_comment_mermaid.py`; here,
what the picture says and its bounds, from real plans.
"""

from __future__ import annotations

import re
from pathlib import Path

from support.pr import (
    BIG_FILES,
    Repo,
    big_config,
    chunked,
    config,
    cursor_facts,
    heavy_facts,
    incremental,
    run_cli,
    write_facts,
)

from rivet_ci.adapters.github.runner import GITHUB_COMMENT_LIMIT
from rivet_ci.core.comment.picture import MAX_GROUPS_PER_WAVE, label_text

MERMAID = re.compile(r"```mermaid\n(.*?)\n```", re.DOTALL)


def diff(repo: Repo, *args: str) -> str:
    result = run_cli(["diff", "--base", "main", "--repo", str(repo.path), *args], cwd=repo.path)
    assert result.code in (0, 1), result.stderr
    return result.stdout


def picture(body: str) -> str:
    (block,) = MERMAID.findall(body)
    return str(block)


def test_the_picture_shows_waves_by_group_and_what_the_pr_added(tmp_path: Path) -> None:
    facts = write_facts(tmp_path / "facts.yaml", {
        "events": heavy_facts(), "items": heavy_facts(), "orders": cursor_facts(),
        "clickstream": heavy_facts(180_000_000)})
    repo = Repo.init(tmp_path / "repo")
    three = (chunked("events"), chunked("items"), incremental("orders"))
    repo.commit("base", {"rivet/a.yaml": config(*three)})
    repo.checkout("feature", new=True)
    repo.commit("add", {"rivet/a.yaml": config(*three, chunked("clickstream"))})
    body = diff(repo, "--facts", str(facts))
    text = picture(body)
    assert text.startswith("flowchart LR\n")
    assert 'subgraph w1["wave 1 · 1 export"]' in text
    assert 'subgraph w4["wave 4 · 3 exports"]' in text
    (box,) = [line for line in text.splitlines() if "clickstream" in line]
    assert "replica_a · 3 exports · 3 heavy<br/>+ new: clickstream<br/>🔒 events" in box
    node = box.split("[", 1)[0].strip()
    assert f"class {node} added" in text  # highlighted
    assert "w1 --> w4" in text
    assert "**Campaign at head**" in body  # small: shown, not folded


def test_a_hostile_name_cannot_leave_its_label(tmp_path: Path) -> None:
    hostile = 'x"]\nclick w1g0 "https://evil.example"\n%%{init: {}}%%`<b>@all #1'
    assert re.fullmatch(r"[A-Za-z0-9 _.,:/()+=#;-]*", label_text(hostile))
    assert '"' not in label_text(hostile) and "`" not in label_text(hostile)
    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {"rivet/a.yaml": config(incremental("orders"))})
    repo.checkout("feature", new=True)
    group = 'g"]; click w1g0 call alert()`%%'
    repo.commit("hostile", {"rivet/a.yaml": config(incremental("orders", group=group),
                                                   incremental("more", group=group))})
    text = picture(diff(repo))
    for line in text.splitlines():
        stripped = line.strip()
        # every line is one of the statements this module writes
        assert re.match(r"(flowchart LR|classDef \w+ |subgraph w\d+\[\"|direction TB|end$|"
                        r"w\d+(g\d+|more)\[\"|w\d+(g\d+|more)( ~~~ |$)|w\d+( --> |$)|class )",
                        stripped), stripped
        assert "click" not in stripped.split('["', 1)[0]
        assert stripped.count('"') in (0, 2)  # a label opens and closes once
    assert "`" not in text and "%%" not in text


def test_the_picture_of_3000_exports_is_bounded_and_folded(tmp_path: Path) -> None:
    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {f"rivet/big_{i:02d}.yaml": big_config(i, "full")
                         for i in range(BIG_FILES)})
    repo.checkout("feature", new=True)
    repo.commit("mass change", {f"rivet/big_{i:02d}.yaml": big_config(i, "incremental")
                                for i in range(BIG_FILES)})
    body = diff(repo, "--output", str(tmp_path / "plan.json"))
    assert len(body) <= GITHUB_COMMENT_LIMIT
    text = picture(body)
    assert len(text) < 6_000
    boxes = [line for line in text.splitlines() if re.match(r"\s+w\d+g\d+\[", line)]
    assert len(boxes) <= MAX_GROUPS_PER_WAVE * 4
    assert re.search(r"and [\d,]+ more groups · [\d,]+ exports", text)
    assert "all 6 moved" in text  # a mass change names no exports
    assert "<details><summary>Campaign at head: 1 wave, 500 source groups, 3,000 exports" in body
