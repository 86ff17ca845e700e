"""`.pre-commit-hooks.yaml`: `rivet-ci check` as a pre-commit hook, run by the real `pre-commit`.

pre-commit validates the manifest with its own schema, then runs the hook, as defined there,
in a sample repository made here: a valid config passes, a broken one fails the commit with the
problem on its line, files outside the config globs and the facts file are never given to the
hook. The hook runs as `repo: local` with the manifest's own `entry`, `files`, `exclude` and
`types`, and `language: system` on this venv's `rivet-ci`, so nothing is installed from a
package index (the manifest's `language: python` is what pre-commit installs rivet-ci with from
its repository; `validate-manifest` checks it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.pr import Repo, config, export

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / ".pre-commit-hooks.yaml"
BIN = Path(sys.executable).parent


def pre_commit(repo: Path, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PATH": f"{BIN}{os.pathsep}"
           f"{os.environ.get('PATH', '')}", "PRE_COMMIT_COLOR": "never"}
    return subprocess.run([str(BIN / "pre-commit"), *args], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def sample_repository(path: Path) -> Repo:
    (hook,) = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    local = {key: hook[key] for key in ("id", "name", "entry", "files", "exclude", "types",
                                        "require_serial")}
    local["language"] = "system"  # this venv's rivet-ci, on PATH: no install, no network
    local["entry"] = str(BIN / hook["entry"].split()[0]) + " " + " ".join(
        hook["entry"].split()[1:])
    repo = Repo.init(path)
    (path / ".pre-commit-config.yaml").write_text(yaml.safe_dump(
        {"repos": [{"repo": "local", "hooks": [local]}]}, sort_keys=False), encoding="utf-8")
    repo.commit("pre-commit", {
        "rivet/orders.yaml": config(export("orders")),
        "rivet/facts.yaml": (ROOT / "examples" / "facts.yaml").read_text(encoding="utf-8"),
        "services/billing/billing.rivet.yaml": config(export("invoices")),
        ".github/workflows/ci.yml": "on: push\njobs: {}\n",
    })
    return repo


def test_the_manifest_is_valid_for_pre_commit_and_names_rivet_ci_check() -> None:
    result = subprocess.run([str(BIN / "pre-commit"), "validate-manifest", str(MANIFEST)],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    (hook,) = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    assert hook["id"] == "rivet-ci-check" and hook["entry"] == "rivet-ci check"
    assert hook["language"] == "python"  # pre-commit installs rivet-ci from its repository
    assert shutil.which("rivet-ci", path=str(BIN))


@pytest.mark.slow  # whole processes: pre-commit, git, rivet-ci
def test_a_valid_config_passes_and_a_broken_one_fails_on_its_line(tmp_path: Path) -> None:
    repo = sample_repository(tmp_path / "sample")
    home = tmp_path / "pre-commit-home"

    ok = pre_commit(repo.path, "run", "--all-files", home=home)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "rivet-ci check" in ok.stdout and "Passed" in ok.stdout

    (repo.path / "rivet" / "orders.yaml").write_text(
        config(export("orders", chunk_sise=5)), encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=repo.path, check=True)
    broken = pre_commit(repo.path, "run", home=home)  # the staged files, as on `git commit`
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "Failed" in broken.stdout
    assert "rivet/orders.yaml:" in broken.stdout and "chunk_sise" in broken.stdout

    # A commit through the installed hook is refused, and goes through once fixed.
    installed = pre_commit(repo.path, "install", home=home)
    assert installed.returncode == 0, installed.stderr
    env = {**os.environ, "PRE_COMMIT_HOME": str(home),
           "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    commit = subprocess.run(["git", "commit", "-qm", "typo"], cwd=repo.path, env=env,
                            capture_output=True, text=True, check=False)
    assert commit.returncode != 0 and "chunk_sise" in commit.stdout + commit.stderr
    (repo.path / "rivet" / "orders.yaml").write_text(
        config(export("orders"), export("customers")), encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=repo.path, check=True)
    commit = subprocess.run(["git", "commit", "-qm", "fixed"], cwd=repo.path, env=env,
                            capture_output=True, text=True, check=False)
    assert commit.returncode == 0, commit.stdout + commit.stderr


@pytest.mark.slow  # whole processes: pre-commit, git, rivet-ci
def test_only_config_files_reach_the_hook(tmp_path: Path) -> None:
    repo = sample_repository(tmp_path / "sample")
    home = tmp_path / "pre-commit-home"
    # A facts file alone, a workflow and a YAML outside the globs: the hook is skipped.
    (repo.path / "rivet" / "facts.yaml").write_text(
        (ROOT / "examples" / "facts.yaml").read_text(encoding="utf-8") + "\n# refreshed\n",
        encoding="utf-8")
    (repo.path / ".github" / "workflows" / "ci.yml").write_text("on: [push]\njobs: {}\n",
                                                                encoding="utf-8")
    (repo.path / "compose.yaml").write_text("services: {}\n", encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=repo.path, check=True)
    result = pre_commit(repo.path, "run", "--verbose", home=home)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "(no files to check)Skipped" in result.stdout.replace(".", ""), result.stdout
    # A config beside a service, at any depth, does reach it.
    (repo.path / "services" / "billing" / "billing.rivet.yaml").write_text(
        config(export("invoices", mode="sideways")), encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=repo.path, check=True)
    result = pre_commit(repo.path, "run", home=home)
    assert result.returncode == 1 and "services/billing/billing.rivet.yaml" in result.stdout
