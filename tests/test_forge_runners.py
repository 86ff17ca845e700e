"""The forges' runners are found by their packages, and a run takes what its forge declares.

A forge's runner sets variables that look secret by name (`*_URL`) but are public; masking them
would blank the comment's links. Each forge declares them, with the variable its runner sets,
its comment limit, its links and its entry command, in `adapters/<forge>/runner.py`
(`rivet_ci.adapters.runners`). These tests prove a second forge is found by its package alone
(the command line, the redactor and `diff`'s limit and links follow), that the declaration is
chosen by the runner's variable, and that no forge's public names leak into another's run.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from rivet_ci.adapters.github.runner import GITHUB_COMMENT_LIMIT
from rivet_ci.adapters.github.runner import RUNNER as GITHUB
from rivet_ci.adapters.runners import (
    EntryCommand,
    ForgeRunner,
    comment_limit,
    discover,
    links_from_environ,
    public_names,
    runner_on,
    runners,
)
from rivet_ci.cli import COMMANDS, EXAMPLES
from rivet_ci.core.comment.view import LinkFor
from rivet_ci.output.redaction import MASK, environment_secrets, redactor_for

SERVER = "https://gitlab.example.com"


def _other_links(environ: Mapping[str, str], sha: str) -> LinkFor | None:
    project = environ.get("CI_PROJECT_PATH")
    if not project:
        return None
    return lambda path, line: f"{SERVER}/{project}/-/blob/{sha}/{path}#L{line}"


# A second forge as a GitLab backend would declare it (its runner sets GITLAB_CI=true).
OTHER = ForgeRunner(forge="Other", marker="OTHER_CI",
                    public_names=frozenset({"CI_SERVER_URL", "CI_API_V4_URL"}),
                    comment_limit=1_000_000, links_from_environ=_other_links,
                    entry=EntryCommand("other-mr", "other_ci.command", ("a", "b")))
BOTH = (GITHUB, OTHER)

_RUNNER_MODULE = '''
from rivet_ci.adapters.runners import EntryCommand, ForgeRunner
RUNNER = ForgeRunner(forge="Other", marker="OTHER_CI", public_names=frozenset({"CI_SERVER_URL"}),
                     comment_limit=1_000_000, links_from_environ=lambda environ, sha: None,
                     entry=EntryCommand("other-mr", "other_ci.command", ("a", "b")))
'''


@pytest.fixture
def adapters_dir(tmp_path: Path) -> Iterator[Path]:
    """A package laid out as `rivet_ci/adapters/` would be with a second forge in it."""
    root = tmp_path / "fake_adapters"
    (root / "other").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "other" / "__init__.py").write_text("")
    (root / "other" / "runner.py").write_text(_RUNNER_MODULE)
    (root / "preflight").mkdir()  # a package that is no forge: never imported
    (root / "preflight" / "__init__.py").write_text("raise AssertionError('imported')\n")
    (root / "git.py").write_text("raise AssertionError('imported')\n")
    sys.path.insert(0, str(tmp_path))
    try:
        yield root
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("fake_adapters")]:
            del sys.modules[name]


def test_github_is_found_by_its_package() -> None:
    assert runners() == (GITHUB,)
    assert GITHUB.comment_limit == GITHUB_COMMENT_LIMIT == 65_536
    # The command line registers the runner's entry point and its examples.
    assert COMMANDS[GITHUB.entry.name] == "rivet_ci.github_action.command" == GITHUB.entry.module
    assert EXAMPLES["action"] == GITHUB.entry.examples


def test_a_second_forge_is_found_by_its_package_alone(adapters_dir: Path) -> None:
    found = discover("fake_adapters", [str(adapters_dir)])
    assert [(r.forge, r.marker, r.entry.name) for r in found] == [("Other", "OTHER_CI",
                                                                    "other-mr")]
    assert "fake_adapters.preflight" not in sys.modules


def test_a_runner_module_must_declare_a_forge_runner(adapters_dir: Path) -> None:
    (adapters_dir / "other" / "runner.py").write_text("RUNNER = 'GitLab'\n")
    with pytest.raises(TypeError, match="is not a ForgeRunner"):
        discover("fake_adapters", [str(adapters_dir)])


def test_the_declaration_is_the_forge_the_runner_names() -> None:
    assert runner_on({"OTHER_CI": "true"}, BOTH) is OTHER
    assert runner_on({"GITHUB_ACTIONS": "true", "OTHER_CI": "false"}, BOTH) is GITHUB
    assert runner_on({}, BOTH) is None
    on_other = public_names({"OTHER_CI": "true"}, BOTH)
    assert "CI_SERVER_URL" in on_other
    assert "GITHUB_SERVER_URL" not in on_other  # GitHub's names are not public elsewhere
    assert "PWD" in on_other  # the shell's, on any runner
    on_github = public_names({"GITHUB_ACTIONS": "true", "OTHER_CI": "false"}, BOTH)
    assert "CI_SERVER_URL" not in on_github and "GITHUB_SERVER_URL" in on_github
    assert comment_limit({"OTHER_CI": "true"}, BOTH) == 1_000_000
    assert comment_limit({"GITHUB_ACTIONS": "true"}, BOTH) == 65_536


def test_outside_every_forge_the_smallest_limit_and_the_first_links() -> None:
    # A local `rivet-ci diff`: the comment fits every forge; links where a forge's variables
    # name a repository.
    assert comment_limit({}, BOTH) == 65_536
    assert links_from_environ({}, "abc", BOTH) is None
    links = links_from_environ({"CI_PROJECT_PATH": "group/repo"}, "abc", BOTH)
    assert links is not None and links("a.yaml", 3) == f"{SERVER}/group/repo/-/blob/abc/a.yaml#L3"
    links = links_from_environ({"GITHUB_REPOSITORY": "o/r"}, "abc", BOTH)
    assert links is not None and links("a.yaml", 3) == "https://github.com/o/r/blob/abc/a.yaml#L3"
    # On a forge's runner, that forge's links only.
    assert links_from_environ({"OTHER_CI": "true", "GITHUB_REPOSITORY": "o/r"}, "abc",
                              BOTH) is None


def test_a_forge_nobody_declared_has_its_urls_masked() -> None:
    # Until a forge declares its public names, its `*_URL` variables are treated as secrets
    # (failing closed): a GitLab run today masks CI_SERVER_URL, and GitHub's server URL,
    # public outside every forge, is still not masked.
    environ = {"GITLAB_CI": "true", "CI_SERVER_URL": SERVER,
               "GITHUB_SERVER_URL": "https://github.example"}
    public = public_names(environ)
    assert SERVER in environment_secrets(environ, public=public)
    assert redactor_for(environ, public=public)(f"see {SERVER}/group/repo") == \
        f"see {MASK}/group/repo"
    assert "https://github.example" not in environment_secrets(environ, public=public)
