"""The output boundary (rivet_ci.output.redaction, rivet_ci.output.sink): one redactor for every
byte written.

Secrets are masked in every form an output may carry them (HTML-/entity-/JSON-/repr-escaped,
YAML-split, case-folded), in stdout, stderr, logging (the last-resort handler and
`log.exception` included), and files written without following symlinks.
"""

from __future__ import annotations

import html
import io
import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO

import pytest
from support.isolation import free_port
from support.pr import TEST_SECRETS, assert_no_secrets, secret_spellings

from rivet_ci import cli
from rivet_ci.adapters.runners import public_names
from rivet_ci.commands import show
from rivet_ci.commands.context import Context
from rivet_ci.errors import UsageError
from rivet_ci.output.redaction import MASK, Redactor, environment_secrets, is_secret_name
from rivet_ci.output.sink import RedactingStream, write_output

SECRET = 's3cr3t-P@ss,w<o>rd&"q\\z|x'
REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", [
    "DEPLOY_KEY", "SIGNING_KEY", "GH_PAT", "DB_PASS", "SLACK_WEBHOOK", "DB_PWD", "API_AUTH",
    "AWS_CREDS", "GCP_CREDENTIALS", "PRIVATE_KEY_PEM", "JWT_SIGNATURE", "INPUT_GITHUB-TOKEN",
    "INPUT_MY-TOKEN-VALUE", "GITHUB_TOKEN", "DB_PASSWORD", "MYAPIKEY", "ORDERS_REPLICA_URL",
    "INPUT_STATE-URL",
])
def test_secret_looking_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", [
    "PATH", "PWD", "HOME", "GITHUB_EVENT_PATH", "GITHUB_SERVER_URL", "KEYBOARD", "PASSENGERS",
    "GITHUB_AUTHOR", "INPUT_FAIL-ON", "INPUT_ENV-ALLOW",
])
def test_public_names(name: str) -> None:
    assert not is_secret_name(name, public_names({}))  # GitHub's public names, a run's shell's


def test_add_mask_values_are_secrets() -> None:
    environ = {"INPUT_ADD-MASK": "first-value\nsecond-value\n", "PLAIN": "first-value"}
    assert set(environment_secrets(environ, public=public_names(environ))) == {
        "first-value", "second-value"}


@pytest.mark.parametrize("form", [
    SECRET, html.escape(SECRET), html.escape(SECRET).replace("@", "&#64;"),
    SECRET.replace("&", "&amp;").replace("<", "&lt;").replace("@", "&#64;"),
    "".join(f"&#{ord(c)};" if c in "&<>\"'@|\\" else c for c in SECRET),
    "".join(f"&#x{ord(c):x};" if c in "&<>\"'@|\\" else c for c in SECRET),
    json.dumps(SECRET)[1:-1], repr(SECRET)[1:-1], SECRET.upper(), SECRET.lower(),
    SECRET.replace("|", "\\|"), "s3cr3t-P@ss",  # a YAML flow sequence splits at the comma
])
def test_every_escaped_form_is_masked(form: str) -> None:
    redact = Redactor([SECRET])
    out = redact(f"before {form} after → ünïcode")
    assert form not in out and MASK in out
    assert out.startswith("before ") and out.endswith(" after → ünïcode")


def test_url_passwords_are_masked_without_knowing_them() -> None:
    redact = Redactor()
    text = "cannot connect to postgresql://etl:p@ss:w0rd@db.internal:5432/orders (x)"
    assert redact(text) == "cannot connect to postgresql://etl:***@db.internal:5432/orders (x)"


def test_scrub_redacts_data_before_it_is_escaped() -> None:
    redact = Redactor([SECRET])
    data = {"rows": [("a", SECRET), {"k": f"x{SECRET}y"}], "n": 1}
    assert redact.scrub(data) == {"rows": [("a", MASK), {"k": f"x{MASK}y"}], "n": 1}
    untouched = {"a": ["b"]}
    assert redact.scrub(untouched) is untouched


def test_a_secret_split_over_two_writes_is_still_masked() -> None:
    raw = io.StringIO()
    stream = RedactingStream(raw, Redactor([SECRET]))
    stream.write("value: " + SECRET[:5])
    stream.write(SECRET[5:] + "\n")
    stream.flush()
    assert raw.getvalue() == f"value: {MASK}\n"


def test_the_suite_wide_scan_catches_escaped_forms() -> None:
    environ = {"RIVET_TEST_DB_PASSWORD": SECRET}
    for form in secret_spellings(SECRET):
        with pytest.raises(AssertionError):
            assert_no_secrets({"comment": f"x {form} y"}, environ)
    assert_no_secrets({"comment": "nothing here"}, environ)


def test_stderr_logging_and_tracebacks_pass_the_sink(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    dsn = "postgresql://etl:Dsn-Pa55word@db.internal/orders"

    def leaky(args: object, ctx: Context) -> int:
        log = logging.getLogger("rivet_ci.leaky")
        try:
            key = TEST_SECRETS["RIVET_TEST_DEPLOY_KEY"]
            raise ConnectionError(f"cannot reach {dsn} with {key}")
        except ConnectionError:
            log.exception("preflight failed for %s", dsn)
        log.warning("password is %s", TEST_SECRETS["RIVET_TEST_DB_PASSWORD"])
        raise RuntimeError(f"bug while holding {TEST_SECRETS['RIVET_TEST_DB_PASSWORD']}")

    monkeypatch.setattr(show, "run", leaky)
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(["show", "x.yaml"], Context(stdout=out, stderr=err, environ=dict(TEST_SECRETS),
                                               cwd=tmp_path))
    assert code == 3
    text = err.getvalue()
    assert "preflight failed for postgresql://etl:***@db.internal/orders" in text
    assert "password is ***" in text and "bug while holding ***" in text
    assert "Dsn-Pa55word" not in text
    assert_no_secrets({"stderr": text, "stdout": out.getvalue()}, TEST_SECRETS)


def test_a_whole_process_keeps_secrets_out_of_stdout_and_stderr(tmp_path: Path) -> None:
    # Live preflight against a closed loopback port: the driver's error and rivet-ci's warning
    # name the source URL, whose password comes from the environment.
    port = free_port()  # a port nobody listens on
    password = "Whole-Pr0cess@Secret&<x>"
    config = tmp_path / "orders.yaml"
    config.write_text("source:\n  type: postgres\n  url_env: SRC_URL\nexports:\n"
                      "  - name: orders\n    table: public.orders\n    mode: full\n"
                      "    format: parquet\n    destination: {type: local}\n")
    env = {**{k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")},
           "PYTHONPATH": str(REPO_ROOT), "DB_PASSWORD": password,
           "SRC_URL": f"postgresql://etl:{password.replace('@', '%40')}@127.0.0.1:{port}/x"}
    result = subprocess.run(
        [sys.executable, "-m", "rivet_ci", "plan", str(config), "--live", "--format", "json",
         "--connect-timeout", "2"], capture_output=True, text=True, env=env, cwd=tmp_path,
        check=False, timeout=120)
    assert result.returncode in (0, 2), result.stderr
    assert "preflight" in result.stdout + result.stderr
    assert_no_secrets({"stdout": result.stdout, "stderr": result.stderr},
                      {"DB_PASSWORD": password, "SRC_PASSWORD": password.replace("@", "%40")})


def test_writes_replace_a_symlink_instead_of_following_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    link = tmp_path / "ws" / "plan.json"
    link.parent.mkdir()
    link.symlink_to(victim)
    write_output(link, f"plan with {SECRET}\n", Redactor([SECRET]), root=tmp_path / "ws")
    assert victim.read_text() == "untouched"
    assert not link.is_symlink() and link.read_text() == f"plan with {MASK}\n"
    (tmp_path / "ws" / "dir").symlink_to(tmp_path)
    with pytest.raises(UsageError, match="symbolic link"):
        write_output(tmp_path / "ws" / "dir" / "x.json", "{}", Redactor(), root=tmp_path / "ws")
    assert not (tmp_path / "x.json").exists()


def test_a_credential_substituted_into_a_source_url_is_never_echoed(tmp_path: Path) -> None:
    # `X` does not look secret by name, but its value became a connection password: from then
    # on it is masked everywhere, even where a config also put it into a planning field.
    port = free_port()  # a port nobody listens on
    (tmp_path / "a.yaml").write_text(
        "source:\n  type: postgres\n"
        f"  url: postgresql://etl:${{X}}@127.0.0.1:{port}/orders\n"
        "exports:\n  - name: orders\n    table: public.orders\n    mode: full\n"
        "    source_group: grp-${X}\n    format: parquet\n    destination: {type: local}\n")
    out, err = io.StringIO(), io.StringIO()
    code = cli.run(["plan", "a.yaml", "--live", "--format", "json", "--connect-timeout", "2"],
                   Context(stdout=out, stderr=err, environ={"X": "Plain-Name-Pw-77"},
                           cwd=tmp_path))
    assert code in (0, 2), err.getvalue()
    assert "grp-***" in out.getvalue()
    assert "Plain-Name-Pw-77" not in out.getvalue() + err.getvalue()


def test_plan_spools_only_redacted_bytes(monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    """`plan --format json` keeps each planned config in a temporary file until the summary is
    known: what reaches that file is already redacted, like every output."""
    spooled: list[bytes] = []
    real = tempfile.TemporaryFile

    class Recording:
        def __init__(self, inner: IO[bytes]) -> None:
            self.inner = inner

        def write(self, data: bytes) -> int:
            spooled.append(bytes(data))
            return self.inner.write(data)

        def __getattr__(self, name: str) -> object:
            return getattr(self.inner, name)

        def __enter__(self) -> Recording:
            return self

        def __exit__(self, *exc: object) -> None:
            self.inner.close()

    def recording(prefix: str | None = None) -> Recording:
        return Recording(real("w+b", prefix=prefix))

    monkeypatch.setattr(tempfile, "TemporaryFile", recording)
    (tmp_path / "c.yaml").write_text(
        "source: {type: postgres, url: 'postgresql://etl@db.internal/app'}\n"
        "exports:\n"
        "  - name: orders\n"
        "    table: orders\n"
        "    format: parquet\n"
        "    destination: {type: local, path: 'out/${RIVET_TEST_DB_PASSWORD}'}\n")
    out, err = io.StringIO(), io.StringIO()
    environ = {"RIVET_TEST_DB_PASSWORD": SECRET}
    code = cli.run(["plan", "c.yaml", "--format", "json"],
                   Context(stdout=out, stderr=err, environ=environ, cwd=tmp_path))
    assert code == 0, err.getvalue()
    assert spooled, "the plan was not spooled"
    assert MASK.encode() in b"".join(spooled)
    assert_no_secrets({"spool": b"".join(spooled).decode(), "stdout": out.getvalue(),
                       "stderr": err.getvalue()}, environ)
