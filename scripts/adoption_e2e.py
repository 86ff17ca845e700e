"""The quick start, end to end: a fresh repository from the quick-start files only, a pull
request, the action run as GitHub's runner runs the image, and what a new user should see.

What it uses, and nothing else:

- the workflow — the block after `<!-- quick-start: .github/workflows/rivet-ci.yml -->` in
  docs/action.md, written to `.github/workflows/rivet-ci.yml` as a user would save it; the
  rivet-ci step's `with:` inputs are what the run gets, the rest are `action.yml`'s defaults (as
  the runner fills them in), `github-token` its `${{ github.token }}`;
- the configs — `examples/pipelines/*.yaml`, under `rivet/` (the default `configs` globs);
- the facts — `examples/facts.yaml` at the path the quick start names (`facts:`).

Then two pull requests, each as a `pull_request` event: one that changes a config and passes
(the first green run, with a comment that says what moved), and one that adds a second heavy
export on a shared source group, which the quick start's `fail-on: new-isolation` blocks. For
each it checks the comment posted to the local fake GitHub (`tests/support/fake_github.py`),
the step outputs, the annotations on the YAML lines and `plan.json` (against the shipped JSON
Schema).

How the action runs: with `--image IMAGE` (`.ci/run` builds `rivet-ci-action:e2e`), `docker
run` exactly as the runner runs a Docker action (`--workdir /github/workspace`, the workspace,
home, workflow and file-commands directories mounted where GitHub mounts them, `INPUT_*` with
hyphens kept, `GITHUB_*`, `HOME=/github/home`, `CI=true`, `--network host` to reach the fake);
without it, the image's entrypoint (`rivet-ci action`) as a process with the same environment,
the runner's paths in place of the container's.

    .venv/bin/python scripts/adoption_e2e.py [--image rivet-ci-action:e2e] [--keep DIR]

Exit code 0 when every check passes; each failed check is printed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parent.parent
QUICK_START = re.compile(
    r"<!-- quick-start: (?P<path>\S+) -->\n(?P<indent>[ \t]*)```yaml\n(?P<body>.*?)\n[ \t]*```",
    re.DOTALL)
REPO = "acme/warehouse"
TOKEN = "ghs_QuickStartJobToken0123456789abcdefAB"
BOT = "github-actions[bot]"
RIVET_STEP = re.compile(r"rivet-ci/rivet-ci@")


class Checks:
    def __init__(self) -> None:
        self.failed: list[str] = []
        self.passed = 0

    def check(self, ok: object, what: str) -> None:
        if ok:
            self.passed += 1
        else:
            self.failed.append(what)
            print(f"FAILED: {what}", file=sys.stderr)


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com",
           "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.com"}
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                          text=True, env=env).stdout.strip()


def quick_start_files() -> dict[str, str]:
    """Every block docs/action.md marks as a quick-start file, by the path it is saved as."""
    text = (ROOT / "docs" / "action.md").read_text(encoding="utf-8")
    files = {}
    for match in QUICK_START.finditer(text):
        body = textwrap.dedent(match.group("body")) + "\n"
        files[match.group("path")] = body
    return files


def rivet_step(workflow: dict[str, Any]) -> dict[str, Any]:
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]
             if RIVET_STEP.match(str(s.get("uses", "")))]
    if len(steps) != 1:
        raise SystemExit(f"the quick-start workflow has {len(steps)} rivet-ci steps, not 1")
    step: dict[str, Any] = steps[0]
    return step


def action_inputs(step: dict[str, Any]) -> dict[str, str]:
    """What the runner passes: the step's `with:` over action.yml's defaults."""
    spec = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))["inputs"]
    inputs = {name: str(item.get("default", "")) for name, item in spec.items()}
    inputs["github-token"] = TOKEN  # `${{ github.token }}`
    inputs.update({name: str(value) for name, value in (step.get("with") or {}).items()})
    unknown = set(inputs) - set(spec)
    if unknown:
        raise SystemExit(f"the quick start passes inputs action.yml lacks: {sorted(unknown)}")
    return inputs


def fresh_repository(root: Path, workflow: str, facts_path: str) -> tuple[Path, str]:
    """The user's repository, on main: the workflow, the example configs under rivet/ (without
    `order_items`, which the second pull request adds), the facts."""
    repo = root / "origin"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / ".github" / "workflows").mkdir(parents=True)
    (repo / ".github" / "workflows" / "rivet-ci.yml").write_text(workflow, encoding="utf-8")
    for config in sorted((ROOT / "examples" / "pipelines").glob("*.yaml")):
        text = config.read_text(encoding="utf-8")
        if config.name == "replica_a.yaml":
            text = without_export(text, "order_items")
        target = repo / "rivet" / config.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    facts = repo / facts_path
    facts.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ROOT / "examples" / "facts.yaml", facts)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "rivet configs and the rivet-ci quick start")
    return repo, git(repo, "rev-parse", "HEAD")


def without_export(text: str, name: str) -> str:
    start = text.index(f"  - name: {name}\n")
    end = text.index("  - name: ", start + 1)
    return text[:start] + text[end:]


def export_block(name: str) -> str:
    text = (ROOT / "examples" / "pipelines" / "replica_a.yaml").read_text(encoding="utf-8")
    start = text.index(f"  - name: {name}\n")
    end = text.index("  - name: ", start + 1)
    return text[start:end]


def pull_request(repo: Path, branch: str, edit: dict[str, str], message: str) -> str:
    git(repo, "checkout", "-q", "-b", branch, "main")
    for path, text in edit.items():
        (repo / path).write_text(text, encoding="utf-8")
    git(repo, "commit", "-qam", message)
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "main")
    return head


def event(number: int, base: str, head: str, branch: str) -> dict[str, Any]:
    repository = {"id": 1, "name": "warehouse", "full_name": REPO, "fork": False,
                  "owner": {"login": "acme", "type": "Organization"}}
    return {"action": "opened", "number": number, "repository": repository,
            "pull_request": {"number": number, "state": "open",
                             "base": {"ref": "main", "sha": base, "repo": repository},
                             "head": {"ref": branch, "sha": head, "repo": repository}},
            "sender": {"login": "dev", "type": "User"}}


def run_action(*, image: str | None, api_url: str, runner: Path, origin: Path,
               number: int, base: str, head: str, branch: str, inputs: dict[str, str],
               ) -> tuple[subprocess.CompletedProcess[str], Path, Path, Path]:
    """One job: `actions/checkout` (fetch-depth as the workflow says), then the action."""
    job = runner / f"job-{number}"
    workspace = job / "work" / "warehouse" / "warehouse"
    temp = job / "work" / "_temp"
    home, workflow_dir, commands = (temp / "_github_home", temp / "_github_workflow",
                                    temp / "_runner_file_commands")
    for directory in (workspace, home, workflow_dir, commands):
        directory.mkdir(parents=True)
    git(workspace, "init", "-q")
    git(workspace, "remote", "add", "origin", origin.as_uri())
    git(workspace, "fetch", "-q", "origin", "+refs/heads/*:refs/remotes/origin/*")
    git(workspace, "checkout", "-q", "--detach", head)
    (workflow_dir / "event.json").write_text(json.dumps(event(number, base, head, branch)),
                                             encoding="utf-8")
    output, summary = commands / "set_output_1", commands / "step_summary_1"
    output.touch()
    summary.touch()
    inside = image is not None
    env = {f"INPUT_{name.upper()}": value for name, value in inputs.items()}
    env.update({
        "HOME": "/github/home" if inside else str(home), "CI": "true", "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": ("/github/workflow" if inside else str(workflow_dir))
        + "/event.json",
        "GITHUB_WORKSPACE": "/github/workspace" if inside else str(workspace),
        "GITHUB_REPOSITORY": REPO, "GITHUB_API_URL": api_url,
        "GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": str(1000 + number),
        "GITHUB_SHA": head, "GITHUB_REF": f"refs/pull/{number}/merge",
        "GITHUB_OUTPUT": ("/github/file_commands" if inside else str(commands))
        + "/set_output_1",
        "GITHUB_STEP_SUMMARY": ("/github/file_commands" if inside else str(commands))
        + "/step_summary_1",
        "RUNNER_OS": "Linux", "RUNNER_TEMP": "/home/runner/work/_temp" if inside else str(temp),
    })
    if inside:
        assert image is not None
        command = [shutil.which("docker", path="/usr/bin") or "docker", "run", "--rm",
                   "--network", "host", "--workdir", "/github/workspace",
                   "-v", f"{workspace}:/github/workspace", "-v", f"{home}:/github/home",
                   "-v", f"{workflow_dir}:/github/workflow",
                   "-v", f"{commands}:/github/file_commands"]
        for name in env:
            command += ["-e", name]
        command.append(image)
        process_env = {**os.environ, **env}
        cwd = None
    else:  # the image's ENTRYPOINT ["rivet-ci", "action"], in the workspace
        command = [str(Path(sys.executable).parent / "rivet-ci"), "action"]
        process_env = {"PATH": os.environ.get("PATH", ""), **env}
        cwd = workspace
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False,
                            env=process_env, cwd=cwd)
    return result, workspace, output, summary


def parse_outputs(text: str) -> dict[str, str]:
    """GITHUB_OUTPUT's `name<<DELIMITER` blocks (and plain `name=value` lines)."""
    outputs: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if "<<" in line:
            name, delimiter = line.split("<<", 1)
            value = []
            for inner in lines:
                if inner == delimiter:
                    break
                value.append(inner)
            outputs[name] = "\n".join(value)
        elif "=" in line:
            name, value_text = line.split("=", 1)
            outputs[name] = value_text
    return outputs


def check_run(checks: Checks, name: str, *, gh: Any, number: int, head: str,
              result: subprocess.CompletedProcess[str], workspace: Path, output: Path,
              summary: Path, exit_code: int, gate: str) -> None:
    where = f"[{name}]"
    checks.check(result.returncode == exit_code,
                 f"{where} exit code {result.returncode}, expected {exit_code}: "
                 f"{result.stderr[-2000:]}")
    outputs = parse_outputs(output.read_text(encoding="utf-8"))
    checks.check(outputs.get("gate") == gate, f"{where} output gate={outputs.get('gate')}")
    checks.check(outputs.get("comment-posted") == "true",
                 f"{where} output comment-posted={outputs.get('comment-posted')}")
    comments = gh.comments(REPO, number)
    checks.check(len(comments) == 1, f"{where} {len(comments)} comments on the pull request")
    body = comments[0]["body"] if comments else ""
    checks.check(f"head={head}" in body.split("\n", 1)[0], f"{where} the comment's marker")
    checks.check(comments and comments[0]["login"] == BOT, f"{where} the comment's author")
    checks.check(bool(comments) and outputs.get("comment-url", "").endswith(
        f"/pull/{number}#issuecomment-{comments[0]['id']}"),
                 f"{where} output comment-url={outputs.get('comment-url')}")
    verdict = "✅ gate passed" if gate == "passed" else "❌ gate failed"
    checks.check(verdict in body, f"{where} the comment says {verdict!r}")
    checks.check("low confidence" not in body.lower() or gate == "failed",
                 f"{where} planned on the facts, not low-confidence")
    checks.check((workspace / "rivet-ci-comment-default.md").read_text(encoding="utf-8")
                 == body, f"{where} comment-file holds the posted comment")
    checks.check(bool(summary.read_text(encoding="utf-8").strip()),
                 f"{where} the job summary is written")
    plan_path = workspace / outputs.get("plan-path", "plan.json")
    plan = json.loads(plan_path.read_bytes())
    schema = json.loads((ROOT / "schemas" / "plan.schema.json").read_text(encoding="utf-8"))
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(plan))
    checks.check(not errors, f"{where} plan.json matches the schema: {errors[:1]}")
    checks.check(plan.get("pull_request", {}).get("head_sha") == head,
                 f"{where} plan.json is this head's")
    checks.check(plan.get("facts", {}).get("path") == "rivet/facts.yaml",
                 f"{where} plan.json was planned on the quick start's facts")
    checks.check(plan["diff"]["gate"]["passed"] == (gate == "passed"),
                 f"{where} plan.json's gate")
    checks.check(str(len(plan["diff"]["exports"])) == outputs.get("changed-exports"),
                 f"{where} output changed-exports={outputs.get('changed-exports')}")
    annotations = [line for line in result.stdout.splitlines()
                   if line.startswith(("::error ", "::warning ", "::notice "))]
    if gate == "failed":
        checks.check(any(a.startswith("::error file=rivet/replica_a.yaml,line=")
                         and "new-isolation" in a for a in annotations),
                     f"{where} an ::error annotation on the YAML line: {annotations}")
    else:
        checks.check(not any(a.startswith("::error ") for a in annotations),
                     f"{where} no ::error annotation: {annotations}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", help="run this image as the runner does (default: the "
                                        "entrypoint as a process)")
    parser.add_argument("--keep", type=Path, help="work in DIR and keep it (default: a "
                                                  "temporary directory)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "tests"))
    fake_github = importlib.import_module("support.fake_github")
    started = time.monotonic()
    files = quick_start_files()
    checks = Checks()
    checks.check(".github/workflows/rivet-ci.yml" in files,
                 "docs/action.md has the quick-start workflow block")
    workflow_text = files[".github/workflows/rivet-ci.yml"]
    workflow = yaml.safe_load(workflow_text)
    triggers = workflow.get(True, workflow.get("on"))  # YAML 1.1 reads `on` as true
    checks.check("pull_request" in (triggers or {}), "the workflow runs on pull_request")
    checks.check(workflow.get("permissions", {}).get("pull-requests") == "write",
                 "the workflow grants pull-requests: write")
    checkout = next(s for job in workflow["jobs"].values() for s in job["steps"]
                    if str(s.get("uses", "")).startswith("actions/checkout@"))
    checks.check((checkout.get("with") or {}).get("fetch-depth") == 0,
                 "the checkout fetches the history (fetch-depth: 0)")
    step = rivet_step(workflow)
    checks.check(bool(step.get("id")) and "id" not in (step.get("with") or {}),
                 "the rivet-ci step has one id")
    inputs = action_inputs(step)
    facts_path = inputs["facts"]
    with tempfile.TemporaryDirectory(prefix="rivet-ci-adoption-") as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        runner = root / "runner"
        origin, base = fresh_repository(root, workflow_text, facts_path)
        replica_a = (origin / "rivet" / "replica_a.yaml").read_text(encoding="utf-8")
        green = pull_request(origin, "orders-daily", {"rivet/replica_a.yaml": replica_a.replace(
            "  - name: customers\n    table: public.customers\n    mode: full\n",
            "  - name: customers\n    table: public.customers\n    mode: incremental\n"
            "    cursor_column: updated_at\n")}, "customers: incremental")
        red = pull_request(origin, "order-items", {
            "rivet/replica_a.yaml": replica_a + "\n" + export_block("order_items")},
            "add order_items")
        with fake_github.FakeGitHub() as gh:
            gh.add_token(TOKEN, login=BOT, can_read_user=False)
            for number, head, branch, exit_code, gate in ((1, green, "orders-daily", 0, "passed"),
                                                          (2, red, "order-items", 1, "failed")):
                gh.add_pull(REPO, number, head_sha=head)
                one = time.monotonic()
                result, workspace, output, summary = run_action(
                    image=args.image, api_url=gh.url, runner=runner, origin=origin,
                    number=number, base=base, head=head, branch=branch, inputs=inputs)
                print(f"pull request {number} ({branch}): exit {result.returncode} in "
                      f"{time.monotonic() - one:.1f} s")
                check_run(checks, branch, gh=gh, number=number, head=head, result=result,
                          workspace=workspace, output=output, summary=summary,
                          exit_code=exit_code, gate=gate)
            if args.keep:
                for number in (1, 2):
                    (root / f"comment-{number}.md").write_text(
                        gh.comments(REPO, number)[0]["body"], encoding="utf-8")
            checks.check(gh.crashes == [], f"the fake GitHub crashed: {gh.crashes}")
    print(f"{checks.passed} passed, {len(checks.failed)} failed "
          f"({'image ' + args.image if args.image else 'entrypoint'}, "
          f"{time.monotonic() - started:.1f} s)")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
