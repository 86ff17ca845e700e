"""ActionSettings.from_environ against environments shaped like a real Docker action run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from rivet_ci.core.comment.marker import make_marker
from rivet_ci.github_action.outputs import write_outputs
from rivet_ci.github_action.settings import (
    _INPUTS,
    DEFAULT_CONFIG_GLOBS,
    ActionSettings,
    SettingsError,
    input_variable,
)

TOKEN = "ghs_16C7e42F292c6912E7710c838347Ae178B4a"
SHA = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e"


ACTION_INPUTS: dict[str, dict[str, str]] = yaml.safe_load(
    (Path(__file__).parents[1] / "action.yml").read_text(encoding="utf-8")
)["inputs"]


def github_environ(**inputs: str) -> dict[str, str]:
    """What the runner gives our Docker action on a pull_request event, plus ``inputs``.

    Every input starts at its default from action.yml, as the runner fills it in.
    """
    environ = {
        "HOME": "/github/home",
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": "/github/workflow/event.json",
        "GITHUB_REPOSITORY": "acme/warehouse",
        "GITHUB_WORKSPACE": "/github/workspace",
        "GITHUB_API_URL": "https://api.github.com",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "9876543210",
        "GITHUB_OUTPUT": "/github/file_commands/set_output_1b2c",
        "GITHUB_STEP_SUMMARY": "/github/file_commands/step_summary_1b2c",
        "GITHUB_SHA": SHA,
        "GITHUB_REF": "refs/pull/42/merge",
    }
    for name, spec in ACTION_INPUTS.items():
        default = str(spec.get("default", ""))
        environ[input_variable(name)] = default.replace("${{ github.token }}", TOKEN)
    environ.update({input_variable(name): value for name, value in inputs.items()})
    return environ


def test_action_yml_inputs_are_the_settings_inputs() -> None:
    assert sorted(ACTION_INPUTS) == sorted(_INPUTS.values())
    # action.yml's defaults mean what the model's defaults mean.
    only_github = {k: v for k, v in github_environ().items() if not k.startswith("INPUT_")}
    only_github[input_variable("github-token")] = TOKEN
    assert ActionSettings.from_environ(only_github) == ActionSettings.from_environ(github_environ())


def problems_of(environ: dict[str, str]) -> tuple[str, ...]:
    with pytest.raises(SettingsError) as info:
        ActionSettings.from_environ(environ)
    return info.value.problems


def test_defaults_from_a_pull_request_run() -> None:
    settings = ActionSettings.from_environ(github_environ())
    assert settings.configs == DEFAULT_CONFIG_GLOBS
    assert settings.facts is None and settings.facts_path is None
    assert settings.live is False
    assert settings.state_url is None
    assert settings.github_token is not None
    assert settings.github_token.get_secret_value() == TOKEN
    assert settings.comment == "update"
    assert settings.gate_id == "default"
    assert settings.fail_on == ("config-error",)
    assert settings.output_path == Path("/github/workspace/plan.json")
    assert settings.base_ref is None
    assert settings.event_name == "pull_request"
    assert settings.event_path == Path("/github/workflow/event.json")
    assert settings.repository == "acme/warehouse"
    assert settings.run_id == 9876543210
    assert settings.run_url == "https://github.com/acme/warehouse/actions/runs/9876543210"
    assert settings.github_output == Path("/github/file_commands/set_output_1b2c")
    assert settings.step_summary == Path("/github/file_commands/step_summary_1b2c")
    assert settings.sha == SHA


def test_every_input_parsed() -> None:
    settings = ActionSettings.from_environ(
        github_environ(
            configs=" etl/*.yaml, rivet/**/*.yaml \n\n  **/*.rivet.yaml ",
            live="True",
            **{
                "state-url": "postgresql://rivet:hunter2@db.internal/state",
                "fail-on": "config-error, new-isolation\nnew-warning,",
                "base-ref": "release/2026.11",
            },
            comment="recreate",
            id="warehouse-eu.v2",
            output="/tmp/out/plan.json",
        )
        | {"GITHUB_API_URL": "https://ghe.acme.io/api/v3/"}
    )
    assert settings.configs == ("etl/*.yaml", "rivet/**/*.yaml", "**/*.rivet.yaml")
    assert settings.live is True
    assert settings.state_url is not None
    assert settings.state_url.get_secret_value() == "postgresql://rivet:hunter2@db.internal/state"
    assert settings.fail_on == ("config-error", "new-isolation", "new-warning")
    assert settings.base_ref == "release/2026.11"
    assert settings.comment == "recreate"
    assert settings.gate_id == "warehouse-eu.v2"
    assert settings.output_path == Path("/tmp/out/plan.json")
    assert settings.api_url == "https://ghe.acme.io/api/v3"


def test_facts_path_is_relative_to_the_workspace() -> None:
    settings = ActionSettings.from_environ(github_environ(facts="ci/facts.yaml"))
    assert settings.facts_path == Path("/github/workspace/ci/facts.yaml")


def test_every_bad_input_is_reported_in_one_run() -> None:
    """Inputs used to be checked one per run (fail-on and live/facts only after the rest)."""
    with pytest.raises(SettingsError) as info:
        ActionSettings.from_environ(github_environ(
            facts="ci/facts.yaml", live="true", id="bad id",
            **{"fail-on": "config-error, new-isolations"}))
    joined = "\n".join(info.value.problems)
    assert "id: " in joined
    assert "fail-on: unknown fail-on value(s): new-isolations" in joined
    assert "live: set either `facts` or `live: true`, not both" in joined
    assert len(info.value.problems) == 3


def test_empty_inputs_fall_back_to_defaults() -> None:
    settings = ActionSettings.from_environ(
        github_environ(configs="", live="  ", comment="", id="", output="", **{"fail-on": ""})
        | {"GITHUB_API_URL": "", "GITHUB_RUN_ID": ""}
    )
    assert settings.configs == DEFAULT_CONFIG_GLOBS
    assert settings.live is False
    assert settings.comment == "update"
    assert settings.gate_id == "default"
    assert settings.fail_on == ("config-error",)
    assert settings.output_path == Path("/github/workspace/plan.json")
    assert settings.api_url == "https://api.github.com"
    assert settings.run_id is None and settings.run_url is None


def test_every_problem_reported_at_once() -> None:
    environ = github_environ(
        comment="sometimes",
        live="yes",
        id="my gate!",
        configs="rivet/c[z-a].yaml",
        **{"github-token": ""},
    )
    del environ["GITHUB_REPOSITORY"]
    environ["GITHUB_RUN_ID"] = "abc"
    environ["GITHUB_SHA"] = "HEAD"
    problems = problems_of(environ)
    assert problems == (
        "configs: invalid glob pattern 'rivet/c[z-a].yaml': bad character range z-a "
        "(got 'rivet/c[z-a].yaml')",
        "live: expected true or false (got 'yes')",
        "comment: Input should be 'update', 'recreate', 'new' or 'off' (got 'sometimes')",
        "id: must be 1-64 characters of letters, digits, '_', '.' or '-' (got 'my gate!')",
        "GITHUB_REPOSITORY: not set; GitHub Actions sets it for every step "
        "(is this running in a workflow?)",
        "GITHUB_RUN_ID: Input should be a valid integer, unable to parse string as an integer "
        "(got 'abc')",
        "GITHUB_SHA: expected a full lowercase commit sha (got 'HEAD')",
        "github-token: required to post the comment; keep the default `${{ github.token }}` or "
        "set `comment: off`",
    )
    message = str(SettingsError(list(problems)))
    assert message.startswith("invalid action settings (8 problems):\n  - configs: ")


def test_missing_github_environment() -> None:
    problems = problems_of({"INPUT_COMMENT": "off"})
    assert [p.split(":")[0] for p in problems] == [
        "GITHUB_EVENT_NAME",
        "GITHUB_EVENT_PATH",
        "GITHUB_REPOSITORY",
        "GITHUB_WORKSPACE",
    ]


def test_no_token_needed_when_not_commenting() -> None:
    settings = ActionSettings.from_environ(github_environ(comment="off", **{"github-token": ""}))
    assert settings.github_token is None


def test_secrets_stay_out_of_repr_and_errors() -> None:
    settings = ActionSettings.from_environ(
        github_environ(**{"state-url": "postgresql://rivet:hunter2@db/state"})
    )
    assert TOKEN not in repr(settings) and "hunter2" not in repr(settings)
    assert TOKEN not in str(settings) and "hunter2" not in str(settings)
    assert "github_token" not in repr(settings)
    assert "hunter2" not in str(settings.model_dump())  # SecretStr dumps masked


def test_hyphenated_inputs_keep_their_hyphens() -> None:
    assert input_variable("fail-on") == "INPUT_FAIL-ON"
    assert input_variable("github-token") == "INPUT_GITHUB-TOKEN"
    # The underscore spelling is not what GitHub sets, so it is not read.
    environ = github_environ() | {"INPUT_FAIL_ON": "new-warning"}
    assert ActionSettings.from_environ(environ).fail_on == ("config-error",)


def test_settings_are_frozen() -> None:
    settings = ActionSettings.from_environ(github_environ())
    with pytest.raises(ValueError, match="frozen"):
        settings.comment = "off"  # type: ignore[misc]


@pytest.mark.parametrize("gate_id", ["default", "a", "eu_west-1.v2", "x" * 64])
def test_valid_gate_ids_fit_the_comment_marker(gate_id: str) -> None:
    settings = ActionSettings.from_environ(github_environ(id=gate_id))
    assert f"id={gate_id} " in make_marker(settings.gate_id, SHA, "2026-11-29T12:00:00Z")


@pytest.mark.parametrize("gate_id", ["x" * 65, "a b", "a-->b", "é"])
def test_invalid_gate_ids(gate_id: str) -> None:
    (problem,) = problems_of(github_environ(id=gate_id))
    assert problem.startswith("id: must be 1-64 characters")


# ---------------------------------------------------------------------------------------------
# GITHUB_OUTPUT


def parse_output_file(text: str) -> dict[str, str]:
    """Parse the file the way the runner does (multiline form only)."""
    outputs: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines) and lines[i]:
        name, delimiter = lines[i].split("<<", 1)
        end = lines.index(delimiter, i + 1)
        outputs[name] = "\n".join(lines[i + 1 : end])
        i = end + 1
    return outputs


def test_write_outputs_appends_multiline_values(tmp_path: Path) -> None:
    output = tmp_path / "set_output"
    output.write_text("earlier<<EOF\nfrom another step\nEOF\n")
    write_outputs(
        output,
        {
            "plan-path": "/github/workspace/plan.json",
            "changed-exports": 3,
            "gate": "failed",
            "new-isolations": 0,
            "live": True,
            "comment-file": "/github/workspace/rivet ci/comment.md",
            "summary": "line one\nEOF\nplan-path<<EOF\nforged\nEOF",
        },
    )
    write_outputs(output, {"comment-url": ""})
    text = output.read_text()
    assert parse_output_file(text) == {
        "earlier": "from another step",
        "plan-path": "/github/workspace/plan.json",
        "changed-exports": "3",
        "gate": "failed",
        "new-isolations": "0",
        "live": "true",
        "comment-file": "/github/workspace/rivet ci/comment.md",
        "summary": "line one\nEOF\nplan-path<<EOF\nforged\nEOF",
        "comment-url": "",
    }
    delimiters = re.findall(r"<<(ghadelimiter_[0-9a-f]{32})\n", text)
    assert len(delimiters) == 8 and len(set(delimiters)) == 8


@pytest.mark.parametrize("name", ["", "has space", "multi\nline", "a<<b", "1st"])
def test_write_outputs_rejects_bad_names(tmp_path: Path, name: str) -> None:
    output = tmp_path / "set_output"
    with pytest.raises(ValueError, match="invalid step output name"):
        write_outputs(output, {"ok": "1", name: "x"})
    assert not output.exists()  # nothing half-written


def test_comment_file_beside_the_plan_and_outputs_relative_to_the_workspace() -> None:
    settings = ActionSettings.from_environ(github_environ(id="eu", output="out/plan.json"))
    assert settings.comment_path == Path("/github/workspace/out/rivet-ci-comment-eu.md")
    # The steps after a Docker action see the workspace under another absolute path.
    assert settings.for_output(settings.output_path) == "out/plan.json"
    assert settings.for_output(settings.comment_path) == "out/rivet-ci-comment-eu.md"
    assert settings.for_output(Path("/tmp/plan.json")) == "/tmp/plan.json"
