"""Helpers for the pull-request gate tests (no tests here): real git repos, configs, the CLI.

Repositories are real git repositories in temporary directories, committed with a config that
ignores the developer's global and system git settings.
"""

from __future__ import annotations

import html
import io
import json
import os
import re
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import yaml

from rivet_ci.cli import run
from rivet_ci.commands.context import Context

NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
FACTS_CAPTURED = "2026-11-29T06:00:00Z"


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({
        "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Rivet Tester", "GIT_AUTHOR_EMAIL": "tester@example.com",
        "GIT_COMMITTER_NAME": "Rivet Tester", "GIT_COMMITTER_EMAIL": "tester@example.com",
        "GIT_AUTHOR_DATE": "2026-11-29T10:00:00Z", "GIT_COMMITTER_DATE": "2026-11-29T10:00:00Z",
    })
    return env


def git(cwd: Path, *args: str) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True,
                            env=_git_env())
    return result.stdout.strip()


@dataclass(frozen=True)
class Repo:
    """A real git repository; `commit` writes (or, for None, deletes) files and commits."""

    path: Path

    @classmethod
    def init(cls, path: Path) -> Repo:
        path.mkdir(parents=True, exist_ok=True)
        git(path, "init", "-q", "-b", "main")
        git(path, "config", "commit.gpgsign", "false")
        return cls(path)

    def commit(self, message: str, files: Mapping[str, str | None] | None = None) -> str:
        for name, content in (files or {}).items():
            target = self.path / name
            if content is None:
                target.unlink()
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(content, encoding="utf-8")
        git(self.path, "add", "-A")
        git(self.path, "commit", "-q", "--allow-empty", "-m", message)
        return git(self.path, "rev-parse", "HEAD")

    def checkout(self, branch: str, *, new: bool = False) -> None:
        git(self.path, "checkout", "-q", *(["-b"] if new else []), branch)

    def move(self, old: str, new: str) -> None:
        (self.path / new).parent.mkdir(parents=True, exist_ok=True)
        git(self.path, "mv", old, new)


# --- configs and facts ---------------------------------------------------------------------


def export(name: str, **fields: Any) -> dict[str, Any]:
    """One export: a full-table snapshot unless `fields` say otherwise."""
    return {"name": name, "table": f"public.{name}", "mode": "full", "format": "parquet",
            "destination": {"type": "local"}, **fields}


def chunked(name: str, group: str | None = "replica_a", **fields: Any) -> dict[str, Any]:
    return export(name, mode="chunked", chunk_column="id", chunk_size=500_000,
                  chunk_checkpoint=True, **({"source_group": group} if group else {}), **fields)


def incremental(name: str, group: str | None = "replica_a", **fields: Any) -> dict[str, Any]:
    return export(name, mode="incremental", cursor_column="updated_at",
                  **({"source_group": group} if group else {}), **fields)


def config(*exports: dict[str, Any], url_env: str = "ORDERS_REPLICA_URL",
           header: str = "") -> str:
    document = {"source": {"type": "postgres", "url_env": url_env, "environment": "replica"},
                "exports": list(exports)}
    return header + yaml.safe_dump(document, sort_keys=False, width=200)


BIG_FILES, BIG_PER_FILE = 10, 300  # 3,000 exports


def big_config(index: int, mode: str) -> str:
    """One of the files of a huge repository: 300 snapshot or incremental exports."""
    fields = {"mode": "incremental", "cursor_column": "updated_at"} if mode == "incremental" else {}
    exports = [export(f"t{index:02d}_{n:04d}", source_group=f"group_{index}_{n % 50}", **fields)
               for n in range(BIG_PER_FILE)]
    return config(*exports, url_env=f"DB_{index}_URL")


def heavy_facts(rows: int = 48_000_000) -> dict[str, Any]:
    return {"row_estimate": rows, "avg_row_bytes": 96, "max_connections": 100,
            "columns": {"id": {"indexed": True, "min": "1", "max": str(rows)}}}


def small_facts(rows: int = 40_000) -> dict[str, Any]:
    return {"row_estimate": rows, "avg_row_bytes": 220, "max_connections": 100}


def cursor_facts(rows: int = 8_000_000) -> dict[str, Any]:
    return {"row_estimate": rows, "avg_row_bytes": 180, "max_connections": 100,
            "columns": {"updated_at": {"indexed": True, "min": "2021-03-01 00:00:00",
                                       "max": "2026-11-29 05:59:12"}}}


def write_facts(path: Path, exports: Mapping[str, Mapping[str, Any]]) -> Path:
    document = {"format": "rivet-ci-facts/1", "captured_at": FACTS_CAPTURED,
                "exports": {k: dict(v) for k, v in exports.items()}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


# --- a pull request's plan.json --------------------------------------------------------------


def review_plan_text(head_sha: str, base_sha: str = "0" * 40, *,
                     generated_at: str = "2026-11-29T12:00:00Z") -> str:
    """The plan.json of a pull request that changes nothing (written by rivet-ci's own
    writer): what `rivet-ci post` needs when a test is about the pull request it finds."""
    from rivet_ci import __version__
    from rivet_ci.core.formats.diff_document import pull_request_document
    from rivet_ci.core.formats.document import dump_json
    from rivet_ci.core.gate.diff import PlanDiff
    from rivet_ci.core.gate.policy import GateResult
    from rivet_ci.core.plan.planner import FactsOrigin, Plan

    empty = Plan(configs=(), facts=FactsOrigin(kind="none"))
    diff = PlanDiff(exports=(), warnings=(), order_moves=(), findings=(), head_problems=())
    gate = GateResult(passed=True, blocking=(), policy="config-error, no-configs")
    return dump_json(pull_request_document(
        empty, empty, diff, gate, base_sha=base_sha, head_sha=head_sha, changed_files=[],
        generated_at=generated_at, version=__version__,
        review={"base_files": 0, "head_files": 0, "narrowed": False}))


# --- running the CLI in-process --------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str


# Secrets every CLI run of these tests has in its environment, with the characters escaping
# changes: the suite-wide scan below checks that none of them leaves in any form.
TEST_SECRETS: dict[str, str] = {
    "RIVET_TEST_DB_PASSWORD": 's3cr3t-P@ss,w<o>rd&"q\\z|x',
    "RIVET_TEST_DEPLOY_KEY": "dk_live_9Zy@x&<b>'quoted'",
    "RIVET_TEST_WEBHOOK": "https://hooks.example/T0/B0/xyzSECRETxyz",
}
_TEST_SECRET_NAME = re.compile(r"TOKEN|PASSWORD|SECRET|KEY|WEBHOOK|_PAT$|PASS$", re.IGNORECASE)


def secret_spellings(secret: str) -> set[str]:
    """Every spelling of `secret` an output could carry: raw, HTML/entity-escaped, JSON-,
    `repr`- and URL-escaped, Markdown-table-escaped (written independently of rivet_ci's own
    redactor, so the scan does not trust what it checks)."""
    forms = {secret, html.escape(secret), html.escape(secret, quote=False),
             secret.replace("@", "&#64;"), html.escape(secret).replace("@", "&#64;"),
             json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1],
             repr(secret)[1:-1], quote(secret, safe=""), quote(secret),
             secret.replace("|", "\\|"), html.escape(secret, quote=False).replace("|", "\\|")}
    return {f for f in forms if f}


def assert_no_secrets(texts: Mapping[str, str], environ: Mapping[str, str]) -> None:
    """No secret of `environ` (secret-looking names, the test secrets) in any of `texts`."""
    secrets = {v for k, v in environ.items() if _TEST_SECRET_NAME.search(k) and len(v) >= 6}
    for where, text in texts.items():
        for secret in secrets:
            for form in secret_spellings(secret):
                assert form not in text, f"a secret ({form!r}) leaked into {where}"


def run_cli(argv: list[str], *, cwd: Path, environ: Mapping[str, str] | None = None,
            now: datetime = NOW) -> Result:
    """Run the CLI in-process; then scan every output it produced for secrets (suite-wide)."""
    env = {**TEST_SECRETS, **(environ or {})}
    started = time.time() - 1
    out, err = io.StringIO(), io.StringIO()
    ctx = Context(stdout=out, stderr=err, environ=env, cwd=cwd, now=lambda: now)
    code = run(argv, ctx)
    result = Result(code, out.getvalue(), err.getvalue())
    texts = {"stdout": result.stdout, "stderr": result.stderr}
    written = [Path(env[k]) for k in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY") if env.get(k)]
    written += [p for p in cwd.rglob("*") if ".git" not in p.parts]
    for path in written:
        if path.is_file() and not path.is_symlink() and path.stat().st_mtime >= started:
            texts[str(path)] = path.read_bytes().decode("utf-8", "replace")
    assert_no_secrets(texts, env)
    return result


def parse_outputs(text: str) -> dict[str, str]:
    """Parse a GITHUB_OUTPUT file written in the `name<<DELIMITER` form."""
    outputs: dict[str, str] = {}
    lines = iter(text.split("\n"))
    for line in lines:
        if not line:
            continue
        name, sep, delimiter = line.partition("<<")
        assert sep, f"not a multiline output: {line!r}"
        value: list[str] = []
        for item in lines:
            if item == delimiter:
                break
            value.append(item)
        else:
            raise AssertionError(f"unterminated output {name}")
        outputs[name] = "\n".join(value)
    return outputs
