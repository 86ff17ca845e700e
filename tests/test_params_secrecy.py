"""Every value the workflow hands in is a secret until shown otherwise (issue 23, item 3;
docs/security.md "Secrets are never sent where the pull request points").

The action's `params` values (unless `env-allow` lists the name) and the CLI's `-p` values are
masked in every output like secret environment values; a `${NAME}` of such a param in a config
the pull request changes is refused (an error, the value never substituted) in every position
a placeholder can take, while a config the base branch has unchanged is still filled.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.action import PR, REPO, Workspace, on_base, run_action
from support.fake_github import FakeGitHub
from support.pr import git, run_cli, secret_spellings

HIDDEN = "hidden-Param,Value&42"
PUBLIC = "public_schema_9"

# One export per position a `${...}` can take in a config.
POSITIONS = {
    "table": "    table: public.t_${P}\n",
    "query": "    query: SELECT id FROM t WHERE tag = '${P}'\n",
    "source_group": "    table: public.t\n    source_group: g_${P}\n",
    "cursor_column": ("    table: public.t\n    cursor_column: c_${P}\n"),
    "destination": "    table: public.t\n",
    "name": "    table: public.t\n",
}


def _config(position: str, name: str = "P") -> str:
    body = POSITIONS[position].replace("${P}", "${" + name + "}")
    export_name = "e_${" + name + "}" if position == "name" else "e"
    mode = "incremental" if position == "cursor_column" else "full"
    destination = ("{type: s3, bucket: b, prefix: '${" + name + "}/'}"
                   if position == "destination" else "{type: local}")
    return ("source:\n  type: postgres\n  url_env: ORDERS_REPLICA_URL\nexports:\n"
            f"  - name: {export_name}\n{body}    mode: {mode}\n    format: csv\n"
            f"    destination: {destination}\n")


def _outputs(ws: Workspace, stdout: str, stderr: str) -> dict[str, str]:
    texts = {"stdout": stdout, "stderr": stderr}
    for path in [*ws.path.glob("*.json"), *ws.path.glob("*.md"), *ws.runner_temp.rglob("*")]:
        if path.is_file():
            texts[str(path)] = path.read_text(encoding="utf-8", errors="replace")
    return texts


def _assert_absent(value: str, texts: dict[str, str]) -> None:
    for where, text in texts.items():
        for form in secret_spellings(value):
            assert form not in text, f"{form!r} in {where}"


@pytest.mark.parametrize("position", sorted(POSITIONS))
def test_a_param_in_a_config_the_pr_changes_is_refused_and_never_published(
        gh: FakeGitHub, ws: Workspace, position: str) -> None:
    head = ws.repo.commit("uses a param", {"rivet/p.yaml": _config(position)})
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, params=f"P={HIDDEN}\n")
    assert result.code == 1, result.stderr  # a config error: blocked by default
    plan = json.loads((ws.path / "plan.json").read_text())
    messages = [f["message"] for f in plan["diff"]["findings"] if f["kind"] == "config-error"]
    assert any("${P} is a value of the workflow's `params` input" in m for m in messages)
    _assert_absent(HIDDEN, _outputs(ws, result.stdout, result.stderr))


@pytest.mark.parametrize("position", sorted(POSITIONS))
def test_a_param_env_allow_lists_fills_a_pr_config_and_is_public(
        gh: FakeGitHub, ws: Workspace, position: str) -> None:
    head = ws.repo.commit("uses a param", {"rivet/p.yaml": _config(position, "SCHEMA")})
    gh.add_pull(REPO, PR, head_sha=head)
    # (indented: the layout with `resolved_plan`, where the filled table and query show)
    result, _ = run_action(gh, ws, head, params=f"SCHEMA={PUBLIC}\n", env_allow="SCHEMA",
                           plan_json="indented")
    assert result.code == 0, result.stdout + result.stderr
    plan = (ws.path / "plan.json").read_text()
    assert "is a value of the workflow's `params` input" not in plan
    assert PUBLIC in plan  # declared public by the workflow: filled and shown


def test_a_param_fills_a_config_the_base_has_unchanged_and_is_masked(
        gh: FakeGitHub, ws: Workspace) -> None:
    # rivet 0.32 refuses a `table:` that is not an identifier before it connects (V-E38), so
    # the value a table takes here must be one.
    hidden = "hidden_param_value_42"
    grouped = _config("table").replace("    mode:", "    source_group: shared\n    mode:")
    on_base(ws, {"rivet/p.yaml": grouped})
    git(ws.path, "merge", "-q", "--no-edit", "main")  # the base's config, unchanged by the PR
    # a change in the same source group, so the base's config is in the review
    git_head = ws.repo.commit("another file", {"rivet/other.yaml": grouped.replace(
        "public.t_${P}", "public.other").replace("name: e", "name: other")})
    gh.add_pull(REPO, PR, head_sha=git_head)
    result, _ = run_action(gh, ws, git_head, params=f"P={hidden}\n", plan_json="indented")
    plan = (ws.path / "plan.json").read_text()
    assert "is a value of the workflow's `params` input" not in plan
    assert result.code == 0, result.stdout + result.stderr
    assert '"rivet/p.yaml"' in plan and '"public.t_***"' in plan  # filled, then masked
    _assert_absent(hidden, _outputs(ws, result.stdout, result.stderr))


@pytest.mark.parametrize("position", sorted(POSITIONS))
def test_cli_param_values_are_masked_in_every_output(tmp_path: Path, position: str) -> None:
    (tmp_path / "c.yaml").write_text(_config(position))
    for fmt in ("json", "pretty", "rivet-json"):
        result = run_cli(["plan", "c.yaml", "-p", f"P={HIDDEN}", "--format", fmt,
                          "--output", "out.json"], cwd=tmp_path)
        assert result.code in (0, 2), result.stderr
        texts = {"stdout": result.stdout, "stderr": result.stderr,
                 "out.json": (tmp_path / "out.json").read_text()}
        for where, text in texts.items():
            for form in secret_spellings(HIDDEN):
                assert form not in text, f"{form!r} in {where} ({fmt})"
    checked = run_cli(["check", "c.yaml", "-p", f"P={HIDDEN}", "--format", "json"],
                      cwd=tmp_path)
    for form in secret_spellings(HIDDEN):
        assert form not in checked.stdout + checked.stderr
