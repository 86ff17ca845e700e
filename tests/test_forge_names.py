"""The redactor's public names are per forge: the list of the forge the run is on.

A forge's runner sets variables that look secret by name (`*_URL`) but are public; masking
them would blank the comment's links. Each forge lists its own (`output/forge_names.py`) with
the variable its runner sets; these tests prove the list is chosen by that variable, so a
second forge's list is one entry there, and that no forge's list leaks into another's run.
"""

from __future__ import annotations

from rivet_ci.output.forge_names import FORGES, GITHUB, ForgeNames, public_names
from rivet_ci.output.redaction import MASK, environment_secrets, redactor_for

# A second forge as a GitLab backend would add it (its runner sets GITLAB_CI=true).
OTHER = ForgeNames("Other", "OTHER_CI", frozenset({"CI_SERVER_URL", "CI_API_V4_URL"}))
SERVER = "https://gitlab.example.com"


def test_github_is_the_first_forge_and_the_default() -> None:
    assert FORGES[0] is GITHUB
    assert "GITHUB_SERVER_URL" in public_names({})
    assert "GITHUB_SERVER_URL" in public_names({"GITHUB_ACTIONS": "true"})


def test_the_list_is_the_forge_the_runner_names() -> None:
    forges = (GITHUB, OTHER)
    on_other = public_names({"OTHER_CI": "true"}, forges)
    assert "CI_SERVER_URL" in on_other
    assert "GITHUB_SERVER_URL" not in on_other  # GitHub's names are not public elsewhere
    assert "PWD" in on_other  # the shell's, on any runner
    on_github = public_names({"GITHUB_ACTIONS": "true", "OTHER_CI": "false"}, forges)
    assert "CI_SERVER_URL" not in on_github


def test_a_forge_without_a_list_has_its_urls_masked() -> None:
    # Until a forge lists its public names, its `*_URL` variables are treated as secrets
    # (failing closed): a GitLab run today would mask CI_SERVER_URL.
    environ = {"GITLAB_CI": "true", "CI_SERVER_URL": SERVER,
               "GITHUB_SERVER_URL": "https://github.example"}
    assert SERVER in environment_secrets(environ)
    assert redactor_for(environ)(f"see {SERVER}/group/repo") == f"see {MASK}/group/repo"
    assert "https://github.example" not in environment_secrets(environ)
