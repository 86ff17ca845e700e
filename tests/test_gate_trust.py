"""Issue 10: no silent passes, no false alarms, one exit-code map.

Each test reproduces one bullet of the issue's *Why* on a real git repository (and, for the
action, with GitHub's environment against the local fake API) and failed before the fix.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from datetime import datetime
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.fake_github import FakeGitHub
from support.pr import (
    Repo,
    Result,
    config,
    export,
    git,
    parse_outputs,
    run_cli,
    write_facts,
)

from rivet_ci.adapters.git import compile_globs
from rivet_ci.cli import run
from rivet_ci.commands.context import Context
from rivet_ci.exit_codes import GATE_FAILED, INTERRUPTED, OK, USAGE_ERROR

ROOT = Path(__file__).resolve().parent.parent
REPO = "acme/warehouse"
PR = 7
TOKEN = "ghs_ActionsJobToken0123456789abcdefABCD"
BOT = "github-actions[bot]"
BROKEN = config(export("orders", mode="incremental"))  # incremental without cursor_column
GOOD = config(export("orders"), export("customers"))


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.add_token(TOKEN, login=BOT, can_read_user=False)
        yield fake
        assert fake.crashes == []


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    """main: one valid config under rivet/; branch `feature` checked out, nothing on it yet."""
    repo = Repo.init(tmp_path / "repo")
    repo.commit("base", {"rivet/a.yaml": GOOD})
    repo.checkout("feature", new=True)
    return repo


def diff(repo: Repo, *args: str) -> Result:
    return run_cli(["diff", "--base", "main", *args], cwd=repo.path)


def action(gh: FakeGitHub, repo: Repo, head: str, tmp_path: Path, *,
           event: dict[str, Any] | None = None, api_url: str | None = None,
           **inputs: str) -> tuple[Result, dict[str, str]]:
    run_dir = tmp_path / f"run-{len(list(tmp_path.glob('run-*')))}"
    run_dir.mkdir(parents=True)
    event_path = run_dir / "event.json"
    base_sha = git(repo.path, "-c", "safe.directory=*", "rev-parse", "main")
    payload = event if event is not None else {"pull_request": {
        "number": PR, "base": {"sha": base_sha}, "head": {"sha": head}}}
    event_path.write_text(json.dumps(payload), encoding="utf-8")
    outputs = run_dir / "output"
    outputs.touch()
    environ = {
        "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_REPOSITORY": REPO, "GITHUB_WORKSPACE": str(repo.path),
        "GITHUB_API_URL": api_url or gh.url, "GITHUB_OUTPUT": str(outputs),
        "INPUT_GITHUB-TOKEN": TOKEN, "INPUT_COMMENT": "update",
    }
    environ.update({f"INPUT_{k.upper().replace('_', '-')}": v for k, v in inputs.items()})
    gh.add_pull(REPO, PR, head_sha=head)
    result = run_cli(["action"], cwd=repo.path, environ=environ)
    return result, parse_outputs(outputs.read_text(encoding="utf-8"))


# -- silent passes --------------------------------------------------------------------------------


def test_globs_matching_nothing_block_and_name_the_lookalikes(repo: Repo) -> None:
    head = repo.commit("configs elsewhere", {"pipelines/x.yaml": GOOD,
                                             "deploy/compose.yaml": "services: {}\n"})
    result = diff(repo, "--head", head, "--configs", "etl/**/*.yaml")
    assert result.code == GATE_FAILED, result.stderr
    assert "gate passed" not in result.stdout
    # The comment escapes every message as Markdown text: compare what a reader sees.
    shown = re.sub(r"\\([\\`*_\[\]!|~:.$#])", r"\1", result.stdout).replace("\u200b", "")
    assert "no config file matches `etl/**/*.yaml`: nothing was checked" in shown
    # The nearest files that look like rivet configs, not every YAML file.
    assert "pipelines/x.yaml" in shown and "rivet/a.yaml" in shown
    assert "compose.yaml" not in shown
    assert "checked 0 config files (0 exports) at head" in shown
    # Report-only gates may opt out, and still say what they checked.
    quiet = diff(repo, "--head", head, "--configs", "etl/**/*.yaml", "--fail-on", "none")
    assert quiet.code == OK
    assert "checked 0 config files" in quiet.stdout


@pytest.mark.parametrize(("name", "job"), [("example-pr-gate.yml", "rivet-ci"),
                                         ("example-fork-pr-plan.yml", "plan")])
def test_the_example_workflows_check_our_own_examples(name: str, job: str) -> None:
    workflow = yaml.safe_load((ROOT / ".github/workflows" / name).read_text())
    step = next(s for s in workflow["jobs"][job]["steps"] if s.get("id") == "rivet")
    regex = compile_globs(str(step["with"]["configs"]).split())
    examples = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "examples").rglob("*.yaml"))
    matched = [p for p in examples if regex.fullmatch(p)]
    assert "examples/pipelines/replica_a.yaml" in matched
    assert "examples/pipelines/replica_b.yaml" in matched
    # ... and its paths filter runs the workflow when they change.
    triggers = workflow.get("on", workflow.get(True))  # PyYAML reads a bare `on` as True
    paths = compile_globs(triggers["pull_request"]["paths"])
    assert paths.fullmatch("examples/pipelines/replica_a.yaml")


def test_a_mistyped_facts_path_is_a_setup_error_in_diff(repo: Repo) -> None:
    head = repo.commit("edit", {"rivet/a.yaml": GOOD + "# touched\n"})
    result = diff(repo, "--head", head, "--facts", "rivet/fatcs.yaml")
    assert result.code == USAGE_ERROR
    assert result.stdout == ""  # no comment claiming anything
    assert "facts file unusable" in result.stderr and "rivet/fatcs.yaml" in result.stderr


def test_a_mistyped_facts_path_is_a_setup_error_in_the_action(
        gh: FakeGitHub, repo: Repo, tmp_path: Path) -> None:
    head = repo.commit("edit", {"rivet/a.yaml": GOOD + "# touched\n"})
    result, _ = action(gh, repo, head, tmp_path / "runner", facts="rivet/fatcs.yaml")
    assert result.code == USAGE_ERROR
    assert "rivet/fatcs.yaml" in result.stderr
    assert gh.requests_for("POST") == []  # nothing filed "already on base"


def test_score_drop_policy_still_fails_a_new_config_error(repo: Repo) -> None:
    head = repo.commit("break it", {"rivet/b.yaml": BROKEN})
    result = diff(repo, "--head", head, "--fail-on", "score-drop:10")
    assert result.code == GATE_FAILED
    assert "fail-on: config-error, no-configs, score-drop:10" in result.stdout


# -- false alarms: the facts file is not a config -------------------------------------------------


def test_a_pr_adding_the_facts_file_under_the_config_globs_passes(
        gh: FakeGitHub, repo: Repo, tmp_path: Path) -> None:
    facts = write_facts(tmp_path / "facts.yaml", {"orders": {"row_estimate": 1000}})
    head = repo.commit("facts", {"rivet/facts.yaml": facts.read_text(encoding="utf-8")})
    result = diff(repo, "--head", head, "--facts", "rivet/facts.yaml")
    assert result.code == OK, result.stdout + result.stderr
    assert "config error" not in result.stdout
    assert "rivet/facts.yaml is a facts document, not planned as a config" in result.stderr
    outcome, outputs = action(gh, repo, head, tmp_path / "runner", facts="rivet/facts.yaml")
    assert outcome.code == OK, outcome.stdout + outcome.stderr
    # (the PR changes no config: nothing is in the review, nothing planned)
    assert outputs["head-configs"] == "0" and outputs["gate"] == "passed"
    (comment,) = gh.comments(REPO, PR)
    assert "already on base" not in comment["body"]
    assert "rivet/facts.yaml" not in comment["body"].split("facts:")[0]


def test_plan_never_plans_a_facts_document(tmp_path: Path) -> None:
    (tmp_path / "rivet").mkdir()
    (tmp_path / "rivet" / "a.yaml").write_text(GOOD, encoding="utf-8")
    write_facts(tmp_path / "rivet" / "captured.yaml", {"orders": {"row_estimate": 10}})
    result = run_cli(["plan", "rivet", "--format", "json"], cwd=tmp_path)
    assert result.code == OK, result.stderr
    assert [c["path"] for c in json.loads(result.stdout)["configs"]] == ["rivet/a.yaml"]


# -- exit codes and messages ----------------------------------------------------------------------


def test_a_directory_or_unwritable_output_is_exit_2(repo: Repo, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    result = diff(repo, "--output", str(tmp_path / "out"))
    assert result.code == USAGE_ERROR, result.stderr
    assert result.stderr.startswith("rivet-ci: error: is a directory: ")
    assert "bug" not in result.stderr


def test_a_malformed_event_payload_is_exit_2(
        gh: FakeGitHub, repo: Repo, tmp_path: Path) -> None:
    head = repo.commit("edit", {"rivet/a.yaml": GOOD + "# touched\n"})
    result, _ = action(gh, repo, head, tmp_path / "runner",
                       event={"pull_request": {"number": PR, "head": {"sha": head}}})
    assert result.code == USAGE_ERROR
    assert "malformed event payload" in result.stderr
    assert "pull_request.base.sha" in result.stderr and "bug" not in result.stderr


def test_bad_inputs_and_payload_are_reported_together(
        gh: FakeGitHub, repo: Repo, tmp_path: Path) -> None:
    head = repo.commit("edit", {"rivet/a.yaml": GOOD + "# touched\n"})
    run_dir = tmp_path / "runner"
    run_dir.mkdir()
    (run_dir / "event.json").write_text("{not json", encoding="utf-8")
    result = run_cli(["action"], cwd=repo.path, environ={
        "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": str(run_dir / "event.json"),
        "GITHUB_REPOSITORY": REPO, "GITHUB_WORKSPACE": str(repo.path), "GITHUB_SHA": head,
        "INPUT_ID": "bad id", "INPUT_FAIL-ON": "score-drop", "INPUT_COMMENT": "off"})
    assert result.code == USAGE_ERROR
    assert "(3 problems)" in result.stderr
    for needle in ("id:", "fail-on:", "GITHUB_EVENT_PATH:"):
        assert needle in result.stderr


def test_a_client_with_a_bad_api_url_is_exit_2(
        gh: FakeGitHub, repo: Repo, tmp_path: Path) -> None:
    head = repo.commit("edit", {"rivet/a.yaml": GOOD + "# touched\n"})
    result, _ = action(gh, repo, head, tmp_path / "runner", api_url="http://[::1")
    assert result.code == USAGE_ERROR, result.stderr
    assert "invalid GitHub API URL" in result.stderr and "bug" not in result.stderr


def test_ctrl_c_exits_130(repo: Repo) -> None:
    def interrupted() -> datetime:
        raise KeyboardInterrupt

    err = StringIO()
    code = run(["diff", "--base", "main"], Context(stdout=StringIO(), stderr=err, environ={},
                                                   cwd=repo.path, now=interrupted))
    assert code == INTERRUPTED
    assert err.getvalue() == "rivet-ci: interrupted\n"


def test_diff_outside_a_git_repository_says_so(tmp_path: Path) -> None:
    result = run_cli(["diff", "--base", "main"], cwd=tmp_path)
    assert result.code == USAGE_ERROR
    assert result.stderr.startswith(f"rivet-ci: error: not a git repository: {tmp_path}")
    assert "HEAD" not in result.stderr


def test_plan_without_facts_does_not_claim_preflight_failed(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(GOOD, encoding="utf-8")
    result = run_cli(["plan", "a.yaml"], cwd=tmp_path)
    assert result.code == OK
    assert "preflight failed" not in result.stdout + result.stderr
    assert "not attempted (no facts given)" in result.stdout
    assert ("no facts given — planned with low confidence; pass --facts FILE or --live"
            in result.stderr)


# -- local dry run: the working tree --------------------------------------------------------------


def test_diff_plans_uncommitted_changes_and_head_picks_a_commit(repo: Repo) -> None:
    repo.commit("feature commit", {"rivet/a.yaml": GOOD + "# committed\n"})
    (repo.path / "rivet" / "b.yaml").write_text(BROKEN, encoding="utf-8")  # untracked
    result = diff(repo)
    assert result.code == GATE_FAILED
    assert "planning the working tree: 1 matching file(s) have uncommitted changes" in (
        result.stderr)
    assert "rivet/b.yaml" in result.stdout  # the new, broken, uncommitted config
    committed = diff(repo, "--head", "HEAD")
    assert committed.code == OK
    assert "working tree" not in committed.stderr and "rivet/b.yaml" not in committed.stdout


# -- annotations ----------------------------------------------------------------------------------


def test_blocking_findings_are_errors_and_others_warnings_or_notices(
        gh: FakeGitHub, repo: Repo, tmp_path: Path) -> None:
    head = repo.commit("break and add", {"rivet/b.yaml": BROKEN})
    result, _ = action(gh, repo, head, tmp_path / "runner", fail_on="none")
    assert result.code == OK
    lines = [line for line in result.stdout.splitlines() if line.startswith("::")]
    assert any(line.startswith("::warning file=rivet/b.yaml,line=") and "config-error" in line
               for line in lines), lines
    assert not any(line.startswith("::error") for line in lines)
    blocked, _ = action(gh, repo, head, tmp_path / "runner")
    assert blocked.code == GATE_FAILED
    assert any(line.startswith("::error file=rivet/b.yaml,line=")
               for line in blocked.stdout.splitlines())


# -- ownership when run as root (the Docker action's user) ----------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="hands files to another uid: needs root")
def test_as_root_every_file_written_belongs_to_the_workspace_owner(
        gh: FakeGitHub, tmp_path: Path) -> None:
    # Outside pytest's 0700 temp root, so the owner (not root) can reach the workspace.
    top = Path(tempfile.mkdtemp(prefix="rivet-ci-owner-"))
    try:
        top.chmod(0o755)
        repo = Repo.init(top / "repo")
        repo.commit("base", {"rivet/a.yaml": GOOD})
        repo.checkout("feature", new=True)
        head = repo.commit("edit", {"rivet/a.yaml": GOOD + "# touched\n"})
        for path in [repo.path, *repo.path.rglob("*")]:
            os.lchown(path, 1001, 127)
        result, outputs = action(gh, repo, head, tmp_path / "runner",
                                 output="reports/plan.json")
        assert result.code == OK, result.stderr
        assert outputs["plan-path"] == "reports/plan.json"
        foreign = [str(p) for p in [repo.path, *repo.path.rglob("*")]
                   if (p.lstat().st_uid, p.lstat().st_gid) != (1001, 127)]
        assert foreign == []
    finally:
        shutil.rmtree(top)
