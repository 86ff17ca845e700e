"""Helpers for the action's end-to-end tests (no tests here): GitHub's environment, a
`pull_request` event payload, a real git workspace and the local fake GitHub.

The fixtures built on them (`gh`, `ws`) are in `tests/conftest.py`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from support.fake_github import FakeGitHub
from support.pr import NOW, Repo, Result, config, export, run_cli

REPO = "acme/warehouse"
PR = 7
TOKEN = "ghs_ActionsJobToken0123456789abcdefABCD"
READ_ONLY = "ghs_ForkReadOnlyToken0123456789abcdefAB"
BOT = "github-actions[bot]"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def example_configs() -> tuple[str, str, str]:
    a = (EXAMPLES / "pipelines" / "replica_a.yaml").read_text(encoding="utf-8")
    start, end = a.index("  - name: order_items"), a.index("  - name: customers")
    b = (EXAMPLES / "pipelines" / "replica_b.yaml").read_text(encoding="utf-8")
    return a[:start] + a[end:], a[start:end], b


@dataclass
class Workspace:
    repo: Repo
    base_sha: str
    runner_temp: Path

    @property
    def path(self) -> Path:
        return self.repo.path


@contextmanager
def action_github() -> Iterator[FakeGitHub]:
    """The fake GitHub the action talks to (the `gh` fixture of `conftest.py`)."""
    with FakeGitHub() as fake:
        # Actions' job token cannot read GET /user; a fork's token cannot write either.
        fake.add_token(TOKEN, login=BOT, can_read_user=False)
        fake.add_token(READ_ONLY, login=BOT, can_read_user=False, can_write=False)
        yield fake
        assert fake.crashes == []


def example_workspace(tmp_path: Path) -> Workspace:
    """The bundled example committed on main, checked out on `feature` (the `ws` fixture)."""
    replica_a, _, replica_b = example_configs()
    repo = Repo.init(tmp_path / "workspace")
    base = repo.commit("base", {
        "rivet/replica_a.yaml": replica_a, "rivet/replica_b.yaml": replica_b,
        "facts.yaml": (EXAMPLES / "facts.yaml").read_text(encoding="utf-8"),
    })
    repo.checkout("feature", new=True)
    runner_temp = tmp_path / "runner"
    runner_temp.mkdir()
    return Workspace(repo, base, runner_temp)


def add_order_items(ws: Workspace) -> str:
    """The product note's PR: a second heavy chunked export on source group replica_a."""
    replica_a, order_items, _ = example_configs()
    return ws.repo.commit("add order_items", {"rivet/replica_a.yaml": replica_a + order_items})


def event(ws: Workspace, head_sha: str, *, fork: bool = False) -> dict[str, Any]:
    """A `pull_request` (synchronize) payload with the fields GitHub sends that matter here."""
    owner = "contributor" if fork else "acme"
    head_repo = {"id": 2, "name": "warehouse", "full_name": f"{owner}/warehouse",
                 "fork": fork, "owner": {"login": owner, "type": "User"}}
    base_repo = {"id": 1, "name": "warehouse", "full_name": REPO, "fork": False,
                 "default_branch": "main", "owner": {"login": "acme", "type": "Organization"}}
    return {
        "action": "synchronize",
        "number": PR,
        "before": ws.base_sha,
        "after": head_sha,
        "pull_request": {
            "url": f"https://api.github.com/repos/{REPO}/pulls/{PR}",
            "html_url": f"https://github.com/{REPO}/pull/{PR}",
            "number": PR, "state": "open", "draft": False, "title": "Add order_items",
            "user": {"login": owner},
            "head": {"label": f"{owner}:feature", "ref": "feature", "sha": head_sha,
                     "repo": head_repo, "user": {"login": owner}},
            "base": {"label": "acme:main", "ref": "main", "sha": ws.base_sha,
                     "repo": base_repo, "user": {"login": "acme"}},
        },
        "repository": base_repo,
        "sender": {"login": owner, "type": "User"},
    }


def push_event(ws: Workspace, head_sha: str) -> dict[str, Any]:
    """A `push` payload (to main) with the fields GitHub sends that matter here."""
    return {"ref": "refs/heads/main", "before": ws.base_sha, "after": head_sha,
            "repository": {"id": 1, "name": "warehouse", "full_name": REPO},
            "head_commit": {"id": head_sha}, "sender": {"login": "acme"}}


def run_action(gh: FakeGitHub, ws: Workspace, head_sha: str, *, token: str = TOKEN,
               minutes: int = 0, fork: bool = False, env: dict[str, str] | None = None,
               event_name: str = "pull_request", **inputs: str) -> tuple[Result, Path]:
    """Run `rivet-ci action` once; returns the result and this run's GITHUB_OUTPUT file.
    `event_name` other than `pull_request`: a push payload (`push_event`), as a push, a
    schedule or a manual run gives no pull request."""
    gh.add_repository(REPO, ws.path)  # GitHub's copy of the repository the runner checked out
    run_dir = ws.runner_temp / f"run-{len(list(ws.runner_temp.iterdir()))}"
    run_dir.mkdir()
    event_path = run_dir / "event.json"
    payload = (event(ws, head_sha, fork=fork) if event_name == "pull_request"
               else push_event(ws, head_sha))
    event_path.write_text(json.dumps(payload), encoding="utf-8")
    outputs = run_dir / "output"
    outputs.touch()
    environ = {
        "GITHUB_ACTIONS": "true", "CI": "true",
        "GITHUB_EVENT_NAME": event_name, "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_REPOSITORY": REPO, "GITHUB_WORKSPACE": str(ws.path),
        "GITHUB_API_URL": gh.url, "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "4242", "GITHUB_SHA": head_sha,
        "GITHUB_OUTPUT": str(outputs), "GITHUB_STEP_SUMMARY": str(ws.runner_temp / "summary.md"),
        "GITHUB_REF": f"refs/pull/{PR}/merge", "RUNNER_TEMP": str(ws.runner_temp),
        # Inputs as GitHub passes them to a Docker action: upper-cased, hyphens kept.
        "INPUT_GITHUB-TOKEN": token, "INPUT_FACTS": "facts.yaml", "INPUT_COMMENT": "update",
        "INPUT_ID": "default", "INPUT_FAIL-ON": "config-error", "INPUT_OUTPUT": "plan.json",
        "INPUT_CONFIGS": "rivet/**/*.yaml\n**/*.rivet.yaml\n", "INPUT_BASE-REF": "",
        "INPUT_LIVE": "false", "INPUT_STATE-URL": "",
    }
    environ.update({f"INPUT_{k.upper().replace('_', '-')}": v for k, v in inputs.items()})
    environ.update(env or {})
    result = run_cli(["action"], cwd=ws.path, environ=environ,
                     now=NOW + timedelta(minutes=minutes))
    return result, outputs


def on_base(ws: Workspace, files: dict[str, str | None]) -> None:
    """Commit `files` on the base branch (main), after the feature branch forked."""
    ws.repo.checkout("main")
    ws.base_sha = ws.repo.commit("on base", files)
    ws.repo.checkout("feature")


def live_orders_config(*, reconcile_customers: bool = False) -> str:
    """`rivet/orders.yaml` of `live_workspace`: orders and customers on `replica_a`; with
    `reconcile_customers`, the head side most live tests commit (customers must reconcile)."""
    customers: dict[str, object] = {"reconcile_required": True} if reconcile_customers else {}
    return config(
        export("orders", table="public.orders", mode="incremental",
               cursor_column="updated_at", source_group="replica_a"),
        export("customers", table="public.customers", source_group="replica_a", **customers),
        url_env="SRC_URL")


def live_workspace(tmp_path: Path) -> Workspace:
    repo = Repo.init(tmp_path / "workspace")
    base = repo.commit("base", {"rivet/orders.yaml": live_orders_config()})
    repo.checkout("feature", new=True)
    runner = tmp_path / "runner"
    runner.mkdir()
    return Workspace(repo, base, runner)
