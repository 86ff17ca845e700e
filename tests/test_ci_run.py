"""The run steps are the same on every forge (`rivet_ci/commands/ci_run.py`): an entry point that
is not GitHub's — its own settings class, an in-memory forge (`support.memory_forge`), its own
notices and effects, no `GITHUB_*` anywhere — runs a review and a plan of record through
`run_ci` as the action does (a real git repository, the bundled example): plan.json, the
outputs, one sticky comment updated in place, the annotations, the exit code by policy."""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Self

import pytest
from pydantic import SecretStr
from support.action import Workspace, add_order_items, example_workspace
from support.memory_forge import MemoryForge, MemoryThread
from support.pr import NOW

from rivet_ci.adapters.http import Deadline
from rivet_ci.commands.ci_inputs import LoadedFacts
from rivet_ci.commands.ci_run import Change, CiEffects, CiRun, run_ci
from rivet_ci.commands.context import Context
from rivet_ci.commands.plan import facts_errors
from rivet_ci.core.comment.marker import parse_marker
from rivet_ci.core.comment.view import LinkFor
from rivet_ci.core.common.problems import Problem
from rivet_ci.core.gate.diff import Finding
from rivet_ci.core.gate.policy import GateResult
from rivet_ci.exit_codes import GATE_FAILED, OK
from rivet_ci.output.paths import PathRefusedError
from rivet_ci.review.effects import OutputValue


@dataclass(frozen=True)
class OtherSettings:
    """Another forge's settings, a class of its own: the fields `RunSettings` names."""

    workspace: Path
    configs: tuple[str, ...] = ("rivet/**/*.yaml",)
    live: bool = False
    state_url: SecretStr | None = None
    comment: str = "update"
    comment_when: str = "changed"
    gate_id: str = "default"
    fail_on: tuple[str, ...] = ("config-error", "new-isolation")
    output: Path = Path("plan.json")
    rivet_compatible_artifact: Path | None = None
    facts: Path | None = Path("facts.yaml")
    template_dir: Path | None = None
    cache_dir: Path | None = None
    waivers: str = ".rivet-ci/waivers.yaml"
    waiver_in_pr: str = "block"
    env_allow: tuple[str, ...] = ()
    params: tuple[str, ...] = ()
    plan_json: str = "compact"
    facts_max_age: str = "7d"
    run_url: str | None = "memory://pipelines/1"

    @property
    def facts_max_age_delta(self) -> timedelta:
        return timedelta(days=7)

    @property
    def output_path(self) -> Path:
        return self.workspace / self.output

    @property
    def rivet_artifact_path(self) -> Path | None:
        artifact = self.rivet_compatible_artifact
        return None if artifact is None else self.workspace / artifact

    @property
    def comment_path(self) -> Path:
        return self.output_path.with_name("rivet-ci-note.md")

    @property
    def template_path(self) -> Path | None:
        return None if self.template_dir is None else self.workspace / self.template_dir

    @property
    def cache_path(self) -> Path | None:
        return None if self.cache_dir is None else self.workspace / self.cache_dir

    @property
    def facts_path(self) -> Path | None:
        return None if self.facts is None else self.workspace / self.facts

    def for_output(self, path: Path) -> str:
        return path.relative_to(self.workspace).as_posix()

    def model_copy(self, *, update: Mapping[str, Any] | None = None,
                   deep: bool = False) -> Self:
        _ = deep
        return dataclasses.replace(self, **dict(update or {}))


@dataclass
class Notes:
    """The other runner's log."""

    lines: list[tuple[str, str, str]] = field(default_factory=list)

    def warning(self, title: str, text: str) -> None:
        self.lines.append(("warning", title, text))

    def notice(self, title: str, text: str) -> None:
        self.lines.append(("notice", title, text))


class MemoryEntry:
    """The other forge's entry point: wiring only."""

    comment_limit = 60_000
    forbidden_advice = "; ask a maintainer to run the pipeline."
    docs_at: str | None = None

    def __init__(self, settings: OtherSettings, change: Change, thread: MemoryThread,
                 ctx: Context) -> None:
        self.settings, self._change, self.thread, self.ctx = settings, change, thread, ctx
        self.notices = Notes()
        self.deadline = Deadline(60)
        self.effects_made: list[MemoryEffects] = []

    def change(self) -> Change:
        return self._change

    def label(self, field: str) -> str:
        return f"RIVET_CI_{field.upper()}"

    def links(self, sha: str) -> LinkFor:
        return lambda path, line: f"https://forge.example/{sha[:7]}/{path}#L{line}"

    def artifact_facts(self) -> LoadedFacts | None:
        return None

    def conversation(self, number: int) -> MemoryForge | None:
        assert number == 7
        return MemoryForge(self.thread, comment_limit=self.comment_limit)

    def effects(self, run: CiRun) -> MemoryEffects:
        self.effects_made.append(MemoryEffects(run, self, self.ctx))
        return self.effects_made[-1]


class MemoryEffects(CiEffects):
    """The other runner's outputs, summary and annotations, kept in memory."""

    def __init__(self, run: CiRun, entry: MemoryEntry, ctx: Context) -> None:
        super().__init__(run, entry, ctx)
        self.outputs: dict[str, OutputValue] = {}
        self.summaries: list[str] = []
        self.annotated: list[Finding] = []

    def write_outputs(self, values: Mapping[str, OutputValue]) -> None:
        self.outputs.update(values)

    def write_summary(self, text: str) -> None:
        self.summaries.append(text)

    def annotate(self, gate: GateResult, findings: Sequence[Finding]) -> list[Problem]:
        self.annotated.extend(gate.blocking)
        return facts_errors(self.run.facts_problems)


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    yield example_workspace(tmp_path)


@dataclass(frozen=True)
class Ran:
    code: int
    entry: MemoryEntry
    stdout: str
    stderr: str


def _run(ws: Workspace, change: Change, thread: MemoryThread, **settings: Any) -> Ran:
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(stdout=out, stderr=err, environ={}, cwd=ws.path, now=lambda: NOW)
    entry = MemoryEntry(OtherSettings(workspace=ws.path, **settings), change, thread, ctx)
    code = run_ci(entry, ctx)
    return Ran(code, entry, out.getvalue(), err.getvalue())


def test_another_forges_entry_reviews_a_change_through_the_same_steps(ws: Workspace) -> None:
    head = add_order_items(ws)  # a second heavy export on replica_a: a new isolation
    thread = MemoryThread(head=head)
    change = Change(number=7, base=ws.base_sha, head=head, record=False)

    ran = _run(ws, change, thread)

    assert ran.code == GATE_FAILED, ran.stderr  # (fail-on: new-isolation)
    plan = json.loads((ws.path / "plan.json").read_text(encoding="utf-8"))
    assert plan["pull_request"]["head_sha"] == head
    assert plan["pull_request"]["base_sha"] == ws.base_sha
    (comment,) = thread.comments
    marker = parse_marker(comment.body)
    assert marker is not None and marker.head_sha == head
    # The forge's links to the config's lines.
    assert f"(https://forge.example/{head[:7]}/rivet/replica_a.yaml#L" in comment.body
    (effects,) = ran.entry.effects_made
    assert effects.outputs["gate"] == "failed" and effects.outputs["comment-posted"] is True
    assert effects.outputs["comment-url"] == comment.url
    assert effects.outputs["comment-file"] == "rivet-ci-note.md"
    assert [f.kind for f in effects.annotated] == ["new-isolation"]
    assert len(effects.summaries) == 1
    assert (ws.path / "rivet-ci-note.md").read_text(encoding="utf-8") == comment.body
    assert ("; gate failed (fail-on: config-error, no-configs, new-isolation); plan: plan.json"
            in ran.stdout)

    # A rerun edits the one comment in place.
    assert _run(ws, change, thread).code == GATE_FAILED
    assert [c.id for c in thread.comments] == [comment.id]


def test_another_forges_entry_writes_the_plan_of_record(ws: Workspace) -> None:
    thread = MemoryThread(head=ws.base_sha)
    ran = _run(ws, Change(number=None, base=ws.base_sha, head=ws.base_sha, record=True), thread)

    assert ran.code == OK, ran.stderr
    assert thread.comments == []  # a plan of record posts nothing
    plan = json.loads((ws.path / "plan.json").read_text(encoding="utf-8"))
    assert plan["coverage"]["scope"] == "repository"
    (effects,) = ran.entry.effects_made
    assert effects.outputs["comment-file"] == "" and effects.outputs["base-exports"] == 0
    assert "plan of record at" in ran.stdout


def test_the_entry_names_its_own_inputs_in_errors(ws: Workspace) -> None:
    change = Change(number=7, base=ws.base_sha, head=ws.base_sha, record=False)
    with pytest.raises(PathRefusedError, match=r"refusing to write RIVET_CI_OUTPUT \.\./"):
        _run(ws, change, MemoryThread(head=ws.base_sha), output=Path("../plan.json"))
