"""The action's Docker image, run exactly as GitHub's runner runs a Docker action.

`.ci/run` starts a Docker engine of its own, builds the image from the project's Dockerfile and
sets ``RIVET_CI_TEST_IMAGE`` (the tag) and ``DOCKER_HOST``. Each scenario then:

* serves a real upstream repository with ``git daemon`` on a free loopback port and checks it
  out into a workspace the way actions/checkout does (shallow: one commit; full: everything),
  owned by the runner's uid/gid (1001 on a GitHub-hosted runner, 1000 on a self-hosted one);
* runs ``docker run --rm --network host --workdir /github/workspace`` with the workspace, home,
  workflow and file-commands directories mounted where GitHub mounts them, ``INPUT_*`` (hyphens
  kept) and ``GITHUB_*`` variables, ``HOME=/github/home`` and ``CI=true`` — as root, the image's
  default user, since a workflow cannot pass ``--user``;
* talks to the local fake GitHub API (``fake_github.FakeGitHub``) on 127.0.0.1;
* asserts the exit code, the step outputs, the comment, and that every file in the workspace
  (including what ``git fetch`` wrote into ``.git``) belongs to the workspace's owner.

Without Docker the module is skipped, except under ``CI=true``, where that is a failure.
Scenario times are appended to ``$RIVET_CI_E2E_TIMES`` when set (`.ci/run` prints them).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.fake_github import FakeGitHub
from support.isolation import free_port
from support.pr import Repo, git, parse_outputs

IMAGE = os.environ.get("RIVET_CI_TEST_IMAGE", "")
DOCKER = shutil.which("docker", path="/usr/bin") or shutil.which("docker") or "docker"
EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
REPO = "acme/warehouse"
PR = 12
TOKEN = "ghs_ActionsJobToken0123456789abcdefABCD"
READ_ONLY = "ghs_ForkReadOnlyToken0123456789abcdefAB"
BOT = "github-actions[bot]"


def _docker_ready() -> str | None:
    """None when the image can be run, else why not."""
    if not IMAGE:
        return "RIVET_CI_TEST_IMAGE is not set (.ci/run builds the image and sets it)"
    try:
        probe = subprocess.run([DOCKER, "image", "inspect", IMAGE], capture_output=True,
                               text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"docker cannot run: {exc}"
    if probe.returncode != 0:
        return f"image {IMAGE} not available: {probe.stderr.strip()}"
    return None


_WHY_NOT = _docker_ready()
if _WHY_NOT is not None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"the image end-to-end test cannot run under CI=true: {_WHY_NOT}",
                    pytrace=False)
    pytest.skip(_WHY_NOT, allow_module_level=True)


@dataclass(frozen=True)
class Upstream:
    url: str
    base_sha: str
    head_sha: str


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    """The repository on "github.com": main, and a PR branch adding a second heavy export."""
    root = tmp_path_factory.mktemp("upstream")
    a = (EXAMPLES / "pipelines" / "replica_a.yaml").read_text(encoding="utf-8")
    start, end = a.index("  - name: order_items"), a.index("  - name: customers")
    work = Repo.init(root / "work")
    for n in range(3):  # some history below the fork point, so a shallow clone must deepen
        work.commit(f"history {n}", {"rivet/notes.md": f"history {n}\n"})
    base = work.commit("base", {
        "rivet/replica_a.yaml": a[:start] + a[end:],
        "rivet/replica_b.yaml": (EXAMPLES / "pipelines" / "replica_b.yaml").read_text(
            encoding="utf-8"),
        # The quick start's layout: the facts file under the default `rivet/**/*.yaml`.
        "rivet/facts.yaml": (EXAMPLES / "facts.yaml").read_text(encoding="utf-8"),
    })
    work.checkout("feature", new=True)
    head = work.commit("add order_items", {"rivet/replica_a.yaml": a})
    work.checkout("main")
    work.commit("unrelated change on main", {"README.md": "later\n"})
    git(root, "clone", "-q", "--bare", str(work.path), str(root / "upstream.git"))
    port = free_port()
    daemon = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", "--listen=127.0.0.1", f"--port={port}",
         f"--base-path={root}", "--export-all", str(root)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield Upstream(f"git://127.0.0.1:{port}/upstream.git", base, head)
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)


@dataclass(frozen=True)
class Scenario:
    name: str
    uid: int
    gid: int
    shallow: bool
    token: str = TOKEN
    outage: bool = False
    inputs: tuple[tuple[str, str], ...] = ()
    exit_code: int = 0
    posted: bool = True
    # `uses: docker://ghcr.io/...`: the runner does not read action.yml, so only the inputs the
    # workflow writes in `with:` arrive (no defaults).
    prebuilt: bool = False


SCENARIOS = [
    # GitHub-hosted: runner uid 1001 (gid 127, its `docker` group); actions/checkout default.
    Scenario("hosted-1001-shallow", 1001, 127, shallow=True,
             inputs=(("fail-on", "new-isolation"),), exit_code=1),
    # Self-hosted runner whose user is uid 1000; `fetch-depth: 0`.
    Scenario("self-hosted-1000-full", 1000, 1000, shallow=False),
    Scenario("self-hosted-1000-shallow", 1000, 1000, shallow=True),
    # A pull request from a fork: the token may read, not comment (403).
    Scenario("fork-token-403", 1001, 127, shallow=False, token=READ_ONLY, posted=False,
             prebuilt=True),
    # GitHub answers 503 to everything: the gate still decides, the files are kept.
    Scenario("github-outage-5xx", 1000, 1000, shallow=False, outage=True, posted=False,
             inputs=(("fail-on", "new-isolation"),), exit_code=1),
    # Two bad inputs: both reported, exit 2, nothing written.
    Scenario("bad-inputs", 1001, 127, shallow=False,
             inputs=(("fail-on", "score-drop"), ("id", "bad id")), exit_code=2, posted=False),
]


def checkout(upstream: Upstream, workspace: Path, *, shallow: bool) -> None:
    """What actions/checkout does for a pull_request (here: the PR head commit)."""
    workspace.mkdir(parents=True)
    git(workspace, "init", "-q")
    git(workspace, "remote", "add", "origin", upstream.url)
    if shallow:
        git(workspace, "fetch", "-q", "--no-tags", "--depth=1", "origin", upstream.head_sha)
    else:
        git(workspace, "fetch", "-q", "--no-tags", "origin",
            "+refs/heads/*:refs/remotes/origin/*")
    git(workspace, "checkout", "-q", "--detach", upstream.head_sha)


def chown_tree(path: Path, uid: int, gid: int) -> None:
    os.lchown(path, uid, gid)
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            os.lchown(os.path.join(dirpath, name), uid, gid)


def foreign_owned(path: Path, uid: int, gid: int) -> list[str]:
    """Every path under (and including) `path` not owned by uid:gid, with its owner."""
    paths = [path]
    for dirpath, dirnames, filenames in os.walk(path):
        paths += [Path(dirpath, name) for name in (*dirnames, *filenames)]
    out = []
    for full in paths:
        st = full.lstat()
        if (st.st_uid, st.st_gid) != (uid, gid):
            out.append(f"{full.relative_to(path).as_posix()} ({st.st_uid}:{st.st_gid})")
    return out


def event(upstream: Upstream) -> dict[str, Any]:
    repo = {"id": 1, "name": "warehouse", "full_name": REPO, "fork": False,
            "owner": {"login": "acme", "type": "Organization"}}
    return {"action": "synchronize", "number": PR, "repository": repo,
            "pull_request": {"number": PR, "state": "open",
                             "base": {"ref": "main", "sha": upstream.base_sha, "repo": repo},
                             "head": {"ref": "feature", "sha": upstream.head_sha,
                                      "repo": repo}}}


def run_like_github(gh: FakeGitHub, upstream: Upstream, runner: Path,
                    scenario: Scenario) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`docker run` as the runner does for `uses: ./` (or `docker://`) with `with:` inputs."""
    workspace = runner / "work" / "warehouse" / "warehouse"
    temp = runner / "work" / "_temp"
    home, workflow, commands = (temp / "_github_home", temp / "_github_workflow",
                                temp / "_runner_file_commands")
    checkout(upstream, workspace, shallow=scenario.shallow)
    for directory in (home, workflow, commands):
        directory.mkdir(parents=True)
    (workflow / "event.json").write_text(json.dumps(event(upstream)), encoding="utf-8")
    (commands / "set_output_1").touch()
    (commands / "step_summary_1").touch()
    chown_tree(runner, scenario.uid, scenario.gid)
    defaults = {} if scenario.prebuilt else {
        "configs": "rivet/**/*.yaml\n**/*.rivet.yaml", "live": "false", "state-url": "",
        "comment": "update", "id": "default", "fail-on": "config-error", "output": "plan.json",
        "base-ref": "", "template-dir": ""}
    inputs = {**defaults, "github-token": scenario.token, "facts": "rivet/facts.yaml",
              **dict(scenario.inputs)}
    env = {f"INPUT_{k.upper()}": v for k, v in inputs.items()}
    env.update({
        "HOME": "/github/home", "CI": "true", "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": "/github/workflow/event.json",
        "GITHUB_WORKSPACE": "/github/workspace", "GITHUB_REPOSITORY": REPO,
        "GITHUB_API_URL": gh.url, "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "777", "GITHUB_SHA": upstream.head_sha,
        "GITHUB_REF": f"refs/pull/{PR}/merge",
        "GITHUB_OUTPUT": "/github/file_commands/set_output_1",
        "GITHUB_STEP_SUMMARY": "/github/file_commands/step_summary_1",
        "RUNNER_OS": "Linux", "RUNNER_TEMP": "/home/runner/work/_temp",
    })
    command = [DOCKER, "run", "--rm", "--network", "host", "--workdir", "/github/workspace",
               "-v", f"{workspace}:/github/workspace", "-v", f"{home}:/github/home",
               "-v", f"{workflow}:/github/workflow",
               "-v", f"{commands}:/github/file_commands"]
    for name in env:
        command += ["-e", name]
    command.append(IMAGE)
    result = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False,
                            env={**os.environ, **env})
    return result, workspace


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_the_image_as_github_runs_it(upstream: Upstream, tmp_path: Path,
                                     scenario: Scenario) -> None:
    started = time.monotonic()
    with FakeGitHub() as gh:
        gh.add_token(TOKEN, login=BOT, can_read_user=False)
        gh.add_token(READ_ONLY, login=BOT, can_read_user=False, can_write=False)
        gh.add_pull(REPO, PR, head_sha=upstream.head_sha)
        if scenario.outage:
            gh.inject(503, times=1000, message="Service Unavailable")
        result, workspace = run_like_github(gh, upstream, tmp_path / "runner", scenario)
        comments = gh.comments(REPO, PR)
        assert gh.crashes == []
    elapsed = time.monotonic() - started
    if os.environ.get("RIVET_CI_E2E_TIMES"):
        with open(os.environ["RIVET_CI_E2E_TIMES"], "a", encoding="utf-8") as handle:
            handle.write(f"{scenario.name}: {elapsed:.1f} s (exit {result.returncode})\n")
    log = f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert result.returncode == scenario.exit_code, log
    assert "Traceback" not in result.stderr and "bug in rivet-ci" not in result.stderr, log

    # Nothing root-owned anywhere: not the outputs, not what git fetched into .git.
    assert foreign_owned(workspace, scenario.uid, scenario.gid) == [], log
    commands = tmp_path / "runner" / "work" / "_temp" / "_runner_file_commands"
    assert foreign_owned(commands, scenario.uid, scenario.gid) == [], log
    outputs = parse_outputs((commands / "set_output_1").read_text(encoding="utf-8"))

    if scenario.exit_code == 2:
        assert "(2 problems)" in result.stderr and "fail-on:" in result.stderr, log
        assert "id:" in result.stderr, log
        assert outputs == {} and not (workspace / "plan.json").exists()
        assert comments == []
        return

    plan = json.loads((workspace / "plan.json").read_text(encoding="utf-8"))
    assert plan["pull_request"]["head_sha"] == upstream.head_sha
    assert outputs["plan-path"] == "plan.json"
    assert outputs["comment-file"] == "rivet-ci-comment-default.md"
    # The facts file under the config globs is not planned (2 configs match, no config error),
    # and the review covers what the change can affect: replica_a.yaml, not replica_b.yaml
    # (another source group), which plan.json says.
    assert (outputs["head-configs"], outputs["base-configs"]) == ("1", "1"), outputs
    assert plan["pull_request"]["review"] == {"base_files": 2, "head_files": 2,
                                              "narrowed": True}, plan["pull_request"]
    assert [c["path"] for c in plan["configs"]] == ["rivet/replica_a.yaml"]
    assert "rivet/facts.yaml is a facts document, not planned as a config" in result.stdout
    assert outputs["gate"] == ("failed" if scenario.exit_code == 1 else "passed")
    assert outputs["comment-posted"] == ("true" if scenario.posted else "false")
    assert outputs["new-isolations"] == "1"  # as tests/test_pr_action.py (rivet 0.32.2)
    body = (workspace / "rivet-ci-comment-default.md").read_text(encoding="utf-8")
    assert ("checked 1 of 2 config files (4 exports) at head, 1 of 2 (3) at base — the changed "
            "files and the source groups they touch") in body
    assert "config error" not in body
    summary = (commands / "step_summary_1").read_text(encoding="utf-8")
    assert "checked 1 of 2 config files" in summary
    if scenario.exit_code == 1:
        assert "::error file=rivet/replica_a.yaml,line=" in result.stdout, log
    if scenario.posted:
        (comment,) = comments
        assert comment["body"] == body
        assert outputs["comment-url"].endswith(f"#issuecomment-{comment['id']}")
    else:
        assert comments == []
        assert outputs["comment-url"] == ""
        level = "::warning" if scenario.outage else "::notice"
        assert f"{level} title=rivet-ci comment::" in result.stdout, log
    if scenario.shallow:
        # The base commit was fetched into the shallow clone, as the workspace's owner.
        assert git(workspace, "-c", "safe.directory=*", "cat-file", "-t",
                   upstream.base_sha) == "commit"


def test_the_quick_start_on_the_image(tmp_path: Path) -> None:
    """`scripts/adoption_e2e.py` (tests/test_adoption_e2e.py) with the action run as the image:
    the quick start's workflow, configs and facts, two pull requests, `docker run` as GitHub's
    runner does."""
    started = time.monotonic()
    result = subprocess.run([sys.executable, str(EXAMPLES.parent / "scripts" / "adoption_e2e.py"),
                             "--image", IMAGE, "--keep", str(tmp_path / "adoption")],
                            capture_output=True, text=True, timeout=900, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 failed" in result.stdout and f"(image {IMAGE}," in result.stdout
    if os.environ.get("RIVET_CI_E2E_TIMES"):
        with open(os.environ["RIVET_CI_E2E_TIMES"], "a", encoding="utf-8") as handle:
            handle.write(f"quick-start adoption (2 pull requests): "
                         f"{time.monotonic() - started:.1f} s\n")
