"""The action's settings: GitHub's environment for a Docker action, mapped to typed fields.

This is the one place that knows how inputs arrive. GitHub passes each ``with:`` input of a
Docker action as ``INPUT_<NAME>``, upper-cased with hyphens kept (``fail-on`` arrives as
``INPUT_FAIL-ON``), and describes the run in ``GITHUB_*`` variables.
:meth:`ActionSettings.from_environ` reads both, validates everything, and reports every problem
at once in one :class:`SettingsError`, each prefixed with the input or variable it concerns.

An input set to the empty string (or only whitespace) counts as not given, so its default
applies: GitHub passes ``""`` for an optional input without a default, and a workflow
expression that evaluates to nothing must not change the meaning of a setting.

Step outputs are written by `rivet_ci.github_action.outputs`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from rivet_ci.adapters.git import compile_globs
from rivet_ci.adapters.github.runner import RUNNER
from rivet_ci.core.common.patterns import COMMIT_SHA, FACTS_MAX_AGE, GATE_ID, REPOSITORY
from rivet_ci.core.gate.policy import PolicyError, parse_policy
from rivet_ci.errors import UsageError
from rivet_ci.output.redaction import SHELL_NAMES, is_secret_name
from rivet_ci.review.pull_request import DEFAULT_CONFIG_GLOBS

__all__ = [
    "DEFAULT_CONFIG_GLOBS",
    "ActionSettings",
    "CommentMode",
    "SettingsError",
]

CommentMode = Literal["update", "recreate", "new", "off"]
CommentWhen = Literal["changed", "always"]


_LIST_SEPARATOR = re.compile(r"[,\n]")

# Field name -> action input name, as written in action.yml.
_INPUTS: dict[str, str] = {
    "configs": "configs",
    "facts": "facts",
    "live": "live",
    "state_url": "state-url",
    "github_token": "github-token",
    "comment": "comment",
    "comment_when": "comment-when",
    "gate_id": "id",
    "fail_on": "fail-on",
    "output": "output",
    "base_ref": "base-ref",
    "template_dir": "template-dir",
    "env_allow": "env-allow",
    "params": "params",
    "add_mask": "add-mask",
    "plan_json": "plan-json",
    "waivers": "waivers",
    "waiver_in_pr": "waiver-in-pr",
    "rivet_compatible_artifact": "rivet-compatible-artifact",
    "cache_dir": "cache-dir",
    "github_timeout": "github-timeout",
    "facts_artifact": "facts-artifact",
    "facts_workflow": "facts-workflow",
    "facts_max_age": "facts-max-age",
}
# Field name -> the variable GitHub sets for every step.
_GITHUB_VARIABLES: dict[str, str] = {
    "event_name": "GITHUB_EVENT_NAME",
    "event_path": "GITHUB_EVENT_PATH",
    "repository": "GITHUB_REPOSITORY",
    "workspace": "GITHUB_WORKSPACE",
    "api_url": "GITHUB_API_URL",
    "server_url": "GITHUB_SERVER_URL",
    "run_id": "GITHUB_RUN_ID",
    "github_output": "GITHUB_OUTPUT",
    "step_summary": "GITHUB_STEP_SUMMARY",
    "sha": "GITHUB_SHA",
}
# Never echo these back in an error message.
_SECRET_FIELDS = frozenset({"github_token", "state_url", "add_mask"})
# What GitHub's runner sets that looks secret by name but is not (`env-allow` may name it).
_PUBLIC_NAMES = SHELL_NAMES | RUNNER.public_names


def input_name(field: str) -> str:
    """The action input behind settings field ``field``: ``fail_on`` -> ``fail-on``."""
    return _INPUTS[field]


def input_variable(name: str) -> str:
    """The variable GitHub sets for action input ``name``: ``fail-on`` -> ``INPUT_FAIL-ON``."""
    return "INPUT_" + name.replace(" ", "_").upper()


class SettingsError(UsageError):
    """The action's inputs or environment are invalid; ``problems`` lists every one of them.

    A ``UsageError``: the CLI prints the message and exits with 2.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = tuple(problems)
        listing = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid action settings ({len(self.problems)} problems):\n{listing}")


def _split_list(value: Any) -> Any:
    if isinstance(value, str):
        return tuple(item.strip() for item in _LIST_SEPARATOR.split(value) if item.strip())
    return value


class ActionSettings(BaseModel):
    """Everything the action entrypoint needs to know about its inputs and the run."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    # -- action inputs (see action.yml for what each one means) ---------------------------------
    configs: tuple[str, ...] = DEFAULT_CONFIG_GLOBS
    facts: Path | None = None
    live: bool = False
    # A database URL may carry a password, just as the token is a credential.
    state_url: SecretStr | None = Field(default=None, repr=False)
    github_token: SecretStr | None = Field(default=None, repr=False)
    comment: CommentMode = "update"
    comment_when: CommentWhen = "changed"
    gate_id: str = "default"
    # Kept as strings: the policy module owns the vocabulary and validates it.
    fail_on: tuple[str, ...] = ("config-error",)
    output: Path = Path("plan.json")
    base_ref: str | None = None
    template_dir: Path | None = None
    # Variables whose values may fill `${...}` in pull-request content (docs/security.md).
    env_allow: tuple[str, ...] = ()
    # `--param KEY=VALUE` items, one a line: they fill `${KEY}` and win over the environment.
    params: tuple[str, ...] = ()
    # Values to mask in every output; the redactor reads them from INPUT_ADD-MASK itself
    # (rivet_ci.output.redaction), before settings are even parsed.
    add_mask: SecretStr | None = Field(default=None, repr=False)
    # The waivers file, read from the BASE revision (core/waivers.py); absent means none.
    waivers: str = ".rivet-ci/waivers.yaml"
    # Whether a waiver the pull request adds itself applies (`allow`) or is only reported.
    waiver_in_pr: Literal["block", "allow"] = "block"
    # Also write the head plan as rivet's own artifact (`plan --format rivet-json`) here.
    rivet_compatible_artifact: Path | None = None
    # Folder of the plan cache (adapters/plan_cache.py), kept between runs by actions/cache.
    cache_dir: Path | None = None
    # The plan document's layout (core/formats/document.Layout): `compact` leaves out
    # whitespace and `resolved_plan`; `indented` writes it as `rivet-ci plan` does.
    plan_json: Literal["compact", "indented"] = "compact"
    # Seconds for all the run's GitHub calls together (the overall deadline, docs/security.md).
    github_timeout: int = Field(default=300, ge=1, le=3600)
    # The trusted facts: the newest artifact of this name that a schedule/manual/push run of
    # the default branch uploaded (adapters/github/artifacts.py), optionally of this workflow.
    facts_artifact: str | None = Field(default=None, pattern=r"^[^\x00-\x1f/\\:<>|*?\"]{1,256}$")
    facts_workflow: str | None = Field(default=None, pattern=r"^\.github/workflows/[^\x00-\x1f]+$")
    # Facts captured longer ago than this are shown as stale: `36h`, `7d` (default).
    facts_max_age: str = Field(default="7d", pattern=rf"^{FACTS_MAX_AGE.pattern}$")

    # -- the run, from GitHub's variables -------------------------------------------------------
    event_name: str
    event_path: Path
    repository: str
    workspace: Path
    api_url: str = "https://api.github.com"
    server_url: str = "https://github.com"
    run_id: int | None = None
    github_output: Path | None = None
    step_summary: Path | None = None
    sha: str | None = None

    @field_validator("env_allow", mode="before")
    @classmethod
    def _split_names(cls, value: Any) -> Any:
        return _split_list(value)

    @field_validator("params", mode="before")
    @classmethod
    def _split_params(cls, value: Any) -> Any:
        if isinstance(value, str):  # one KEY=VALUE a line (a value may hold commas)
            return tuple(line.strip() for line in value.splitlines() if line.strip())
        return value

    @field_validator("params")
    @classmethod
    def _check_params(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [item for item in value if "=" not in item]
        if bad:
            raise PydanticCustomError("param", "{items}: each line must be KEY=VALUE",
                                      {"items": ", ".join(repr(b) for b in bad)})
        return value

    @field_validator("env_allow")
    @classmethod
    def _check_env_allow(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        secret = [name for name in value if is_secret_name(name, _PUBLIC_NAMES)]
        if secret:
            raise PydanticCustomError(
                "secret_name", "{names}: names that look secret are never substituted into "
                "pull-request content", {"names": ", ".join(secret)})
        return value

    @field_validator("configs", "fail_on", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        return _split_list(value)

    @field_validator("configs")
    @classmethod
    def _check_globs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise PydanticCustomError("no_globs", "no glob pattern given")
        try:
            compile_globs(value)
        except ValueError as exc:
            raise PydanticCustomError("bad_glob", "{error}", {"error": str(exc)}) from None
        return value

    @field_validator("live", mode="before")
    @classmethod
    def _boolean(cls, value: Any) -> Any:
        # The YAML 1.2 core-schema spellings, as @actions/core's getBooleanInput accepts:
        # pydantic alone would also take "yes", "on" or "1", which GitHub's own tooling rejects.
        if isinstance(value, str):
            if value in ("true", "True", "TRUE"):
                return True
            if value in ("false", "False", "FALSE"):
                return False
            raise PydanticCustomError("boolean_input", "expected true or false")
        return value

    @field_validator("gate_id")
    @classmethod
    def _check_gate_id(cls, value: str) -> str:
        if not GATE_ID.fullmatch(value):
            raise PydanticCustomError(
                "gate_id", "must be 1-64 characters of letters, digits, '_', '.' or '-'"
            )
        return value

    @field_validator("repository")
    @classmethod
    def _check_repository(cls, value: str) -> str:
        if not REPOSITORY.fullmatch(value):
            raise PydanticCustomError("repository", "expected owner/name")
        return value

    @field_validator("api_url", "server_url")
    @classmethod
    def _check_url(cls, value: str) -> str:
        if not value.startswith(("https://", "http://")):
            raise PydanticCustomError("url", "expected an http(s) URL")
        # Callers append paths: "https://ghe.example.com/api/v3/" + "/repos" must not double up.
        return value.rstrip("/")

    @field_validator("sha")
    @classmethod
    def _check_sha(cls, value: str | None) -> str | None:
        if value is not None and not COMMIT_SHA.fullmatch(value):
            raise PydanticCustomError("sha", "expected a full lowercase commit sha")
        return value

    # -- derived ----------------------------------------------------------------------------------

    @property
    def output_path(self) -> Path:
        """Where to write the plan: ``output`` relative to the workspace (or absolute)."""
        return self.workspace / self.output

    @property
    def rivet_artifact_path(self) -> Path | None:
        """Where to write rivet's own artifact of the head plan; None: not written."""
        if self.rivet_compatible_artifact is None:
            return None
        return self.workspace / self.rivet_compatible_artifact

    @property
    def cache_path(self) -> Path | None:
        """The plan cache folder, relative to the workspace (or absolute); None: no cache."""
        return None if self.cache_dir is None else self.workspace / self.cache_dir

    @property
    def template_path(self) -> Path | None:
        """The comment template folder, relative to the workspace; None for the built-in."""
        return None if self.template_dir is None else self.workspace / self.template_dir

    @property
    def facts_path(self) -> Path | None:
        """The facts file, relative to the workspace (or absolute); None when not given."""
        return None if self.facts is None else self.workspace / self.facts

    @property
    def facts_max_age_delta(self) -> timedelta:
        """`facts-max-age` as a duration."""
        amount, unit = int(self.facts_max_age[:-1]), self.facts_max_age[-1]
        return timedelta(hours=amount) if unit == "h" else timedelta(days=amount)

    @property
    def comment_path(self) -> Path:
        """Where to write the rendered comment: beside the plan, named after the gate id.

        Inside the workspace, the one directory a Docker action shares with the later steps
        (actions/upload-artifact for the fork-safe workflow_run variant).
        """
        return self.output_path.with_name(f"rivet-ci-comment-{self.gate_id}.md")

    def for_output(self, path: Path) -> str:
        """``path`` as a step output: relative to the workspace when inside it.

        A Docker action sees the workspace at /github/workspace, the steps after it see the
        runner's own path; a relative path means the same file to both.
        """
        try:
            return path.relative_to(self.workspace).as_posix()
        except ValueError:
            return str(path)

    @property
    def run_url(self) -> str | None:
        """The link to this workflow run, for messages that point users at the logs."""
        if self.run_id is None:
            return None
        return f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> ActionSettings:
        """Build settings from a Docker action's environment (``os.environ`` in production).

        Raises :class:`SettingsError` listing every invalid or missing value.
        """
        raw: dict[str, str] = {}
        for field, name in _INPUTS.items():
            value = environ.get(input_variable(name), "").strip()
            if value:
                raw[field] = value
        for field, variable in _GITHUB_VARIABLES.items():
            value = environ.get(variable, "").strip()
            if value:
                raw[field] = value

        problems: list[str] = []
        # Checked here rather than by a model validator so it is reported together with the
        # per-field problems instead of only once they are all fixed.
        if raw.get("comment", "update") != "off" and "github_token" not in raw:
            problems.append(
                "github-token: required to post the comment; keep the default "
                "`${{ github.token }}` or set `comment: off`"
            )
        if "fail_on" in raw:
            try:
                parse_policy(_split_list(raw["fail_on"]))
            except PolicyError as exc:
                problems.append(f"fail-on: {exc}")
        if raw.get("live") in ("true", "True", "TRUE") and "facts" in raw:
            problems.append("live: set either `facts` or `live: true`, not both")
        if "facts_artifact" in raw and ("facts" in raw or raw.get("live") in (
                "true", "True", "TRUE")):
            problems.append("facts-artifact: set one of `facts`, `facts-artifact` and "
                            "`live: true`")
        try:
            settings = cls.model_validate(raw)
        except ValidationError as exc:
            problems[:0] = [_describe(error) for error in exc.errors()]
            raise SettingsError(problems) from None
        if problems:
            raise SettingsError(problems)
        return settings


def _describe(error: Mapping[str, Any]) -> str:
    """One line per problem: ``fail-on: message (got 'value')``."""
    field = str(error["loc"][0]) if error["loc"] else ""
    label = _INPUTS.get(field) or _GITHUB_VARIABLES.get(field) or field
    if error["type"] == "missing":
        return (
            f"{label}: not set; GitHub Actions sets it for every step "
            "(is this running in a workflow?)"
        )
    message = str(error["msg"])
    if field in _SECRET_FIELDS:
        return f"{label}: {message}"
    return f"{label}: {message} (got {error['input']!r})"
