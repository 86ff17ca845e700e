"""What a pull-request run on a CI forge plans with, read from the trusted side — the same for
every forge's entry point (`github_action/` today).

`config_inputs`: `${...}` in pull-request content is filled only from the variables the
workflow allows (`env-allow`) and its `params`; every other param value is withheld from a
config the pull request changes, and masked. `FactsGathering`: live facts and run history
for the configs in the review, each file that steers them (`url_file` sources,
`.rivet_state.db`) read through `review.trust.TrustedFiles`, never from the pull request's
head. What an entry point reports while gathering (a history note) goes to its `warn`.
`trusted_facts`: the facts file (or a directory of rivet plan artifacts) from the trusted side;
`fetched_facts`: the facts a forge's trusted artifact store gave (GitHub's `facts-artifact`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rivet_ci.adapters.files import load_facts_file
from rivet_ci.adapters.preflight.collect import TrustedReads, collect_facts
from rivet_ci.commands.live import with_state_history
from rivet_ci.commands.plan import raise_facts_error
from rivet_ci.core.common.json_input import JsonInputError, load_json
from rivet_ci.core.common.problems import Problem
from rivet_ci.core.config.loader import LoadedConfig
from rivet_ci.core.facts.loader import load_facts_text
from rivet_ci.core.facts.models import FactsFile
from rivet_ci.core.facts.rivet_artifacts import facts_from_artifacts
from rivet_ci.core.gate.diff import Finding
from rivet_ci.core.plan.planner import FactsOrigin
from rivet_ci.output.redaction import MIN_SECRET_LENGTH, Redactor
from rivet_ci.review import FactsSource
from rivet_ci.review.trust import TrustedFiles, check_outside_review, trusted_state_root

# (title, text) of a warning the entry point shows its way (GitHub: a `::warning` command).
Warn = Callable[[str, str], None]
Enrich = Callable[[FactsFile | None, Sequence[LoadedConfig]], FactsFile]
# The facts a run plans with, the problems found reading them, and where they came from.
LoadedFacts = tuple[FactsFile | None, list[Problem], FactsOrigin]


@dataclass(frozen=True)
class ConfigInputs:
    """What fills `${...}` in the configs, and the state database's URL."""

    allowed: dict[str, str]  # the `env-allow` variables and the workflow's `params`
    withheld: frozenset[str]  # params `env-allow` does not list: never in a changed config
    state_url: str | None


def config_inputs(*, env_allow: Sequence[str], params: Sequence[str], state_url: str | None,
                  environ: Mapping[str, str], redact: Redactor) -> ConfigInputs:
    """`${...}` in pull-request content is filled only from the `env-allow` variables and the
    workflow's `params`; the redactor learns every credential here."""
    redact.add(state_url)
    allowed = {name: environ[name] for name in env_allow if name in environ}
    # The workflow's `params` input wins over the environment, as `--param`. Every value the
    # workflow hands in is a secret until shown otherwise: a param whose name `env-allow`
    # does not list is masked in every output, and fills only configs the base branch has
    # unchanged — in a config the pull request changes its `${NAME}` is an error.
    values = dict(item.partition("=")[::2] for item in params)
    withheld = frozenset(name for name in values if name not in env_allow)
    redact.add(*(values[name] for name in withheld if len(values[name]) >= MIN_SECRET_LENGTH))
    allowed.update(values)
    return ConfigInputs(allowed=allowed, withheld=withheld, state_url=state_url)


@dataclass(frozen=True)
class FactsGathering:
    """Live facts (`live`) and run history for the configs in the review, from the trusted
    side: `url_file` sources and `.rivet_state.db` files at the base revision (copied under
    `state_dir` for the history reader), unless a `state_url` names the database."""

    trusted: TrustedFiles
    inputs: ConfigInputs
    workspace: Path
    configs: Sequence[str]  # the config globs (for the changes outside the review)
    live: bool
    environ: Mapping[str, str]
    redact: Redactor
    state_dir: Path
    warn: Warn

    def read_url_file(self, path: str) -> str:
        data = self.trusted.read_file(Path(path), "url-file")
        if data is None:
            raise FileNotFoundError(2, "not on the base revision")
        return data.decode("utf-8")

    def history(self, current: FactsFile | None, configs: Sequence[LoadedConfig]) -> FactsFile:
        state_url = self.inputs.state_url
        root = (self.workspace if state_url else
                trusted_state_root(self.trusted, [c.path for c in configs], self.state_dir))
        enriched, notes = with_state_history(current, configs, state_url, root=root,
                                             environ=self.environ)
        for note in notes:
            self.warn("rivet-ci history", note)
        return enriched

    def collect(self, configs: Sequence[LoadedConfig], base: Sequence[LoadedConfig],
                ) -> FactsFile:
        live = collect_facts(
            [(c, self.workspace / c.path) for c in configs], environ=self.environ,
            repo_root=self.workspace, include_history=False, redact=self.redact,
            read_url_file=self.read_url_file, placeholders=self.inputs.allowed,
            trusted=TrustedReads.of(base))
        return self.history(live, configs)

    def trust_findings(self) -> list[Finding]:
        """The pull request's changes to the files that grade it (read once planning is done:
        the configs outside the review were not probed, their trusted files are compared)."""
        check_outside_review(self.trusted, self.configs, self.environ, url_files=self.live,
                             state=self.live and not self.inputs.state_url)
        return self.trusted.findings

    def facts_source(self, facts: FactsFile | None, origin: FactsOrigin,
                     problems: Sequence[Problem]) -> FactsSource:
        inputs, live = self.inputs, self.live
        return FactsSource(facts, origin, problems, environ=inputs.allowed,
                           collect=self.collect if live else None,
                           add_history=self.history if inputs.state_url and not live else None,
                           source_environ=self.environ, withheld=inputs.withheld)

    def enrich_record(self) -> Enrich | None:
        """For the plan of record (the pushed commit is the trusted side, as a PR's base is)."""
        if self.live:
            return lambda _f, configs: self.collect(configs, configs)
        return self.history if self.inputs.state_url else None


def trusted_facts(path: Path, shown: str, trusted: TrustedFiles, workspace: Path,
                  ) -> LoadedFacts:
    """The facts file at `path` (`shown` in messages) from the trusted side: the base
    revision's, or the workflow's own untracked file; or a directory of rivet plan artifacts
    there. A facts file only the pull request has is not used (`trusted` records the finding);
    one that cannot be read or parsed is a setup error, never a config error of the base."""
    data = trusted.read_file(path, "facts")
    if data is None and (artifacts := _trusted_artifact_dir(path, shown, trusted,
                                                            workspace)) is not None:
        return artifacts
    if data is None:
        if any(f.kind == "facts-changed-in-pr" for f in trusted.findings):
            return None, [], FactsOrigin(kind="none")  # only the PR has it: not used
        raise_facts_error([Problem(file=shown, message="cannot read facts file: no such file "
                                                       "(not on the base revision either)")])
    try:
        facts, problems = load_facts_text(shown, data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        facts, problems = None, [Problem(file=shown, message=f"cannot read facts file: {exc}")]
    if facts is None:
        raise_facts_error(problems)
    return facts, problems, FactsOrigin(kind="file", path=shown, captured_at=facts.captured_at)


def _trusted_artifact_dir(path: Path, shown: str, trusted: TrustedFiles, workspace: Path,
                          ) -> LoadedFacts | None:
    """`path` as a directory of rivet plan artifacts (`*.json` directly in it), read from the
    trusted side like a facts file: the base revision's, or the workflow's own untracked
    directory. None when `path` is no such directory."""
    files = trusted.read_dir(path, "facts")
    problems: list[Problem] = []
    if files is None:
        if not path.is_dir():
            return None
        facts, problems = load_facts_file(path, root=workspace)
    else:
        documents: list[tuple[str, object]] = []
        for name, blob in sorted(files.items()):
            if "/" in name or not name.endswith(".json"):
                continue
            try:
                documents.append((f"{shown}/{name}", load_json(blob)))
            except JsonInputError as exc:
                problems.append(Problem(file=f"{shown}/{name}", line=exc.line,
                                        message=f"cannot read rivet plan artifact: "
                                                f"{exc.message}"))
        if not documents and not problems:
            return None
        found, more = facts_from_artifacts(documents)
        facts, problems = (found if found.exports else None), [*problems, *more]
    if facts is None:
        raise_facts_error(problems)
    return facts, problems, FactsOrigin(kind="file", path=shown, captured_at=facts.captured_at)


def fetched_facts(shown: str, text: str, created_at: datetime | None) -> LoadedFacts:
    """The facts file a forge's trusted artifact store gave (`shown` in messages; captured when
    the artifact was made, unless the file says). None usable is a setup error."""
    facts, problems = load_facts_text(shown, text)
    if facts is None:
        raise_facts_error(problems)
    return facts, problems, FactsOrigin(kind="file", path=shown,
                                        captured_at=facts.captured_at or created_at)
