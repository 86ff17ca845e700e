"""One escaping for the workflow-command stream (issue 23, item 5; docs/security.md).

In GitHub Actions a printed line that starts (after whitespace) with `::` is a workflow
command, and `##[...]` anywhere in a line is the older form. No text a pull request controls may
start one: every line rivet-ci prints passes `CommandGuard`, which lets through only the
commands rivet-ci built (`workflow_command`). Tried with CR, LF, CRLF, leading whitespace,
split writes, the old form, a forged token, and end to end with file names and config values
that hold command lines.
"""

from __future__ import annotations

import io
import json
import re

import pytest
from support.action import PR, REPO, Workspace, run_action
from support.fake_github import FakeGitHub
from support.pr import run_cli

from rivet_ci.output.workflow_commands import CommandGuard, workflow_command

PAYLOADS = [
    "::error::FORGED", "  ::add-mask::FORGED", "\t::set-output name=x::FORGED",
    "x\n::error::FORGED", "x\r::error file=a::FORGED", "x\r\n::stop-commands::FORGED",
    "x\n\n   ::warning::FORGED", "##[error]FORGED", "text ##[set-output name=a;]FORGED",
    "\x1e" + "0" * 32 + "\x1e::error::FORGED",  # a guessed token
    "\x1e::error::FORGED", "\r\r::notice::FORGED\r",
]
OURS = re.compile(r"^::(error|warning|notice) (file=[^,:]*,)?(line=\d+,)?title=rivet-ci[^:]*::")


def _command_lines(text: str) -> list[str]:
    """The lines the runner would read a workflow command from."""
    return [line for line in re.split(r"\r\n|\r|\n", text) if line.lstrip().startswith("::")]


def _assert_no_forged_command(text: str) -> None:
    assert "##[" not in text
    for line in _command_lines(text):
        assert OURS.match(line), f"a command rivet-ci did not build: {line!r}"


@pytest.mark.parametrize("payload", PAYLOADS)
@pytest.mark.parametrize("split", [False, True])
def test_no_text_can_start_a_workflow_command(payload: str, split: bool) -> None:
    raw = io.StringIO()
    guard = CommandGuard(raw, active=True)
    text = f"rivet-ci: {payload} is a facts document\n{payload}\n"
    if split:  # one character at a time: state carries across writes
        for char in text:
            guard.write(char)
    else:
        guard.write(text)
    assert "FORGED" in raw.getvalue()  # shown, as text
    _assert_no_forged_command(raw.getvalue())
    assert not _command_lines(raw.getvalue())


def test_the_commands_rivet_ci_builds_pass_unchanged() -> None:
    raw = io.StringIO()
    guard = CommandGuard(raw, active=True)
    line = "::warning title=rivet-ci cache::could not%0Awrite"
    guard.write("before\n" + workflow_command(line) + "\n  " + workflow_command(line) + "\n")
    # at a line start it is a command; anywhere else it is text like any other
    assert raw.getvalue() == f"before\n{line}\n  %3A%3A{line[2:]}\n"


def test_outside_actions_text_is_unchanged_and_the_token_never_shown() -> None:
    raw = io.StringIO()
    guard = CommandGuard(raw, active=False)
    guard.write("::error::plain text\n" + workflow_command("::notice::x") + "\n")
    assert raw.getvalue() == "::error::plain text\n::notice::x\n"


EVIL_NAMES = ["rivet/a\n::error title=FORGED::pwned\n.yaml", "rivet/b\r::add-mask::FORGED.yaml",
              "rivet/c ##[error]FORGED.yaml", "rivet/d\r\n  ::stop-commands::FORGED.yaml"]
FACTS = "format: rivet-ci-facts/1\nexports: {}\n"
BROKEN = ("source:\n  type: postgres\n  url_env: X\nexports:\n  - name: \"e\\n::error::FORGED\"\n"
          "    table: \"t\\r::add-mask::FORGED\"\n    mode: full\n    format: csv\n"
          "    bogus: \"::warning::FORGED\"\n    destination: {type: local}\n")


@pytest.mark.parametrize("content", [FACTS, BROKEN], ids=["facts-document", "broken-config"])
def test_an_action_run_prints_no_command_the_pr_wrote(
        gh: FakeGitHub, ws: Workspace, content: str) -> None:
    head = ws.repo.commit("evil names", {name: content for name in EVIL_NAMES})
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, cache_dir="a\n::error::FORGED")
    assert result.code in (0, 1, 2), result.stderr
    assert "FORGED" in result.stdout + result.stderr  # the text is shown...
    _assert_no_forged_command(result.stdout)  # ...but never as a command
    _assert_no_forged_command(result.stderr)
    if content is BROKEN:
        assert any(OURS.match(line) for line in _command_lines(result.stdout))


def test_cli_commands_in_a_workflow_print_no_command_the_input_wrote(tmp_path: object) -> None:
    from pathlib import Path
    root = Path(str(tmp_path))
    (root / "rivet").mkdir()
    (root / "rivet" / "c.yaml").write_text(BROKEN)
    for argv in (["plan", "rivet"], ["check", "rivet"], ["plan", "rivet", "--format", "json"]):
        result = run_cli(argv, cwd=root, environ={"GITHUB_ACTIONS": "true"})
        _assert_no_forged_command(result.stdout + "\n" + result.stderr)
        if argv[-1] == "json":
            json.loads(result.stdout)  # still the document, byte for byte valid JSON
