"""Every workflow in the repository and every workflow (or step) block in the README and docs
passes check-jsonschema's GitHub schemas; `.ci/run` also runs actionlint on the same files
(`scripts/docs_workflows.py` writes the docs' blocks as workflow files for both)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def check_jsonschema(schema: str, *paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema", schema,
                           *map(str, paths)], capture_output=True, text=True, check=False)


def docs_workflows(outdir: Path) -> list[Path]:
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "docs_workflows.py"),
                             str(outdir)], capture_output=True, text=True, check=True)
    return [Path(line) for line in result.stdout.splitlines()]


def test_every_workflow_block_of_the_docs_is_a_valid_workflow(tmp_path: Path) -> None:
    written = docs_workflows(tmp_path)
    texts = {p.name: p.read_text(encoding="utf-8") for p in written}
    # The quick start (whole) and the reference forms (steps) are among them.
    assert any("name: rivet-ci\non:" in t and "fetch-depth: 0" in t for t in texts.values())
    assert any("plan-of-record:" in t for t in texts.values())
    assert any("docker://ghcr.io/rivet-ci/rivet-ci:" in t for t in texts.values())
    assert len(written) >= 5, sorted(texts)
    result = check_jsonschema("vendor.github-workflows", *written)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_repositorys_workflows_and_action_are_valid() -> None:
    workflows = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
    assert len(workflows) >= 5
    result = check_jsonschema("vendor.github-workflows", *workflows)
    assert result.returncode == 0, result.stdout + result.stderr
    result = check_jsonschema("vendor.github-actions", ROOT / "action.yml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_broken_workflow_block_would_be_caught(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text("on:\n  pull_request:\njobs:\n  x:\n    steps:\n      - uses: a/b@c\n"
                      "        wiht:\n          facts: f\n", encoding="utf-8")
    assert check_jsonschema("vendor.github-workflows", broken).returncode != 0
