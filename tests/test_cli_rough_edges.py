"""The CLI's rough edges (issue 22, item 9): `--fail-on` takes commas as the action input does
and suggests the nearest token for a typo; a slow planning step says so on a terminal (or when
RIVET_CI_PROGRESS=1 asks), never in a CI log otherwise."""

from __future__ import annotations

import io
import time
from pathlib import Path

from support.pr import Repo, chunked, config, heavy_facts, run_cli, write_facts

from rivet_ci.commands.progress import SlowNotice


def two_heavy(tmp_path: Path) -> tuple[Repo, Path]:
    facts = write_facts(tmp_path / "facts.yaml", {"a": heavy_facts(), "b": heavy_facts()})
    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {"rivet/x.yaml": config(chunked("a"))})
    repo.checkout("feature", new=True)
    repo.commit("second heavy", {"rivet/x.yaml": config(chunked("a"), chunked("b"))})
    return repo, facts


def test_fail_on_takes_commas(tmp_path: Path) -> None:
    repo, facts = two_heavy(tmp_path)
    result = run_cli(["diff", "--base", "main", "--repo", str(repo.path), "--facts", str(facts),
                      "--fail-on", "new-isolation,score-drop:10", "--fail-on", "wave-later"],
                     cwd=repo.path)
    assert result.code == 1  # new-isolation blocks
    assert "(fail-on: config-error, no-configs, new-isolation, wave-later, score-drop:10)" in (
        result.stderr)


def test_a_mistyped_fail_on_token_names_the_nearest(tmp_path: Path) -> None:
    repo, facts = two_heavy(tmp_path)
    result = run_cli(["diff", "--base", "main", "--repo", str(repo.path), "--facts", str(facts),
                      "--fail-on", "new-isolaton, score-drp:10"], cwd=repo.path)
    assert result.code == 2 and result.stdout == ""
    assert ("rivet-ci: error: unknown fail-on value(s): new-isolaton (did you mean "
            "new-isolation?), score-drp:10 (did you mean score-drop:10?)") in result.stderr


def test_a_slow_step_says_so_once_and_a_fast_one_says_nothing() -> None:
    slow, fast, off = io.StringIO(), io.StringIO(), io.StringIO()
    notice = SlowNotice(slow, "planning base and head", enabled=True, after=0.05)
    time.sleep(0.3)
    notice.close()
    lines = slow.getvalue().splitlines()
    assert lines[0] == "rivet-ci: planning base and head …"
    assert lines[1].startswith("rivet-ci: planning base and head: done in ")
    SlowNotice(fast, "planning", enabled=True, after=5).close()
    quiet = SlowNotice(off, "planning", enabled=False, after=0.01)
    time.sleep(0.1)
    quiet.close()
    assert fast.getvalue() == "" and off.getvalue() == ""
