"""No exit 3 on any input (issue 23, item 6; docs/security.md "Bad input").

Every reader of bytes nobody vouches for — `show`, a facts file, the event payload (`action`
and `post`), the waivers file, plan-cache entries, a previous comment's marker and digest — is
fed nested, huge, non-UTF-8 and mangled input (hypothesis, bounded): each ends with exit 0, 1
or 2 and a message, never a traceback.
"""

from __future__ import annotations

import base64
import json
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.action import PR, REPO, Workspace, on_base, run_action
from support.fake_github import FakeGitHub
from support.pr import Result, review_plan_text, run_cli

from rivet_ci.adapters.plan_cache import PlanCache
from rivet_ci.core.comment.marker import parse_leading_marker, parse_marker
from rivet_ci.core.comment.since import read_digest

FUZZ = settings(max_examples=25, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
VALID_FACTS = b'{"format": "rivet-ci-facts/1", "exports": {"orders": {"row_estimate": 5}}}'


def _nested(opening: str, closing: str, depth: int, inner: str = "1") -> bytes:
    return (opening * depth + inner + closing * depth).encode()


# Hostile bytes: deep nesting (JSON and YAML, block and flow), huge integers, non-UTF-8 bytes
# spliced into a valid document, truncations, and plain random bytes.
HOSTILE = st.one_of(
    st.builds(_nested, st.sampled_from(["[", '{"a":'] ), st.sampled_from(["]", "}"]),
              st.integers(50, 30000)),
    st.integers(50, 3000).map(lambda d: "".join(f"{'  ' * i}k{i}:\n" for i in range(d % 600))
                              .encode()),
    st.integers(4000, 50000).map(lambda n: b'{"format": "rivet-ci-facts/1", "n": '
                                 + b"9" * n + b"}"),
    st.integers(4000, 50000).map(lambda n: b"format: rivet-ci-facts/1\nn: " + b"9" * n),
    st.tuples(st.integers(0, len(VALID_FACTS)), st.binary(min_size=1, max_size=4)).map(
        lambda t: VALID_FACTS[:t[0]] + b"\xff\xfe" + t[1] + VALID_FACTS[t[0]:]),
    st.integers(0, len(VALID_FACTS)).map(lambda n: VALID_FACTS[:n]),
    st.binary(max_size=300),
    st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
)


def _assert_clean(result: Result) -> None:
    assert result.code in (0, 1, 2), result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "unexpected error" not in result.stderr
    if result.code == 2:
        assert "rivet-ci: error:" in result.stderr or "error" in result.stderr


@FUZZ
@given(data=HOSTILE)
def test_show_never_crashes(tmp_path: Path, data: bytes) -> None:
    (tmp_path / "plan.json").write_bytes(data)
    result = run_cli(["show", "plan.json"], cwd=tmp_path)
    _assert_clean(result)
    if result.code == 2:
        assert "plan.json" in result.stderr  # the message names the file


@FUZZ
@given(data=HOSTILE)
def test_a_facts_file_never_crashes_plan(tmp_path: Path, data: bytes) -> None:
    (tmp_path / "c.yaml").write_text(
        "source: {type: postgres, url_env: X}\nexports:\n  - name: orders\n    table: t\n"
        "    mode: full\n    format: csv\n    destination: {type: local}\n")
    for name in ("facts.json", "facts.yaml"):
        (tmp_path / name).write_bytes(data)
        result = run_cli(["plan", "c.yaml", "--facts", name], cwd=tmp_path)
        _assert_clean(result)


@FUZZ
@given(data=HOSTILE)
def test_an_event_payload_never_crashes_post(tmp_path: Path, data: bytes) -> None:
    (tmp_path / "event.json").write_bytes(data)
    (tmp_path / "plan.json").write_text(review_plan_text("a" * 40))
    result = run_cli(["post", "--plan", "plan.json"], cwd=tmp_path, environ={
        "GITHUB_EVENT_PATH": "event.json", "GITHUB_TOKEN": "ghs_x" * 4,
        "GITHUB_REPOSITORY": REPO, "GITHUB_API_URL": "http://127.0.0.1:9"})
    _assert_clean(result)
    assert result.code == 2


@pytest.mark.parametrize("data", [
    _nested("[", "]", 100000), _nested('{"a":', "}", 100000),
    b'{"pull_request": {"number": ' + b"9" * 10000 + b"}}", b"\xff\xfe{}", b"[]", b"",
    b'{"pull_request": {"number": 7, "base": {"sha": "' + b"\xc3\x28" + b'"}}}',
    b'{"pull_request": {"number": true, "base": {"sha": 1}, "head": []}}',
])
def test_an_event_payload_never_crashes_the_action(gh: FakeGitHub, ws: Workspace,
                                                    data: bytes) -> None:
    head = ws.repo.commit("nothing", {})
    gh.add_pull(REPO, PR, head_sha=head)
    path = ws.runner_temp / "hostile-event.json"
    path.write_bytes(data)
    result, _ = run_action(gh, ws, head, env={"GITHUB_EVENT_PATH": str(path)})
    _assert_clean(result)
    assert result.code == 2 and "hostile-event.json" in result.stderr


@pytest.mark.parametrize("text", [
    "[" * 100000, "".join(f"{'  ' * i}k{i}:\n" for i in range(3000)),
    "waivers:\n  - export: " + "9" * 10000 + "\n", "waivers: [\n", "- - - - -\n" * 10,
    "waivers: !!python/object:os.system x\n", "\t\x00\x01",
])
def test_a_waivers_file_never_crashes_the_action(gh: FakeGitHub, ws: Workspace,
                                                 text: str) -> None:
    on_base(ws, {".rivet-ci/waivers.yaml": text})
    head = ws.repo.commit("nothing", {})
    gh.add_pull(REPO, PR, head_sha=head)
    result, _ = run_action(gh, ws, head, base_ref=ws.base_sha)
    _assert_clean(result)


@FUZZ
@given(data=HOSTILE)
def test_a_cache_entry_is_a_miss_never_a_crash(tmp_path: Path, data: bytes) -> None:
    cache = PlanCache(tmp_path)
    key = "ab" * 32
    (cache.root / key[:2]).mkdir(parents=True, exist_ok=True)
    (cache.root / key[:2] / f"{key}.json").write_bytes(data)
    assert cache.get(key) is None
    assert cache.stats.invalid + cache.stats.misses >= 1


def _digest_line(payload: bytes) -> str:
    return (f"<!-- rivet-ci:digest v=1 data="
            f"{base64.urlsafe_b64encode(zlib.compress(payload)).decode()} -->")


@FUZZ
@given(data=HOSTILE)
def test_a_previous_comment_never_crashes_its_readers(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    for body in (text, f"<!-- rivet-ci:comment {text} -->\n", _digest_line(data),
                 _digest_line(json.dumps({"h": "a" * 40, "f": [], "e": [], "pf": 0, "pe": 0,
                                          "s": text}).encode())):
        parse_marker(body)
        parse_leading_marker(body)
        assert read_digest(body) is None or read_digest(body) is not None


@pytest.mark.parametrize("body", [
    "<!-- rivet-ci:comment " + " " * 200_000 + "x",
    ("<!-- rivet-ci:comment id=default " + " " * 2000) * 100,
    "<!--" + " " * 200_000, "<!-- rivet-ci:comment " + "a=b " * 50_000,
])
def test_the_marker_is_found_in_linear_time(body: str) -> None:
    """Every comment of the pull request is parsed, whoever wrote it: no body may make the
    marker's pattern backtrack (measured: 23 s for a 2 MB comment before; here well under a
    second for each of these — asserted only by the suite not hanging, never timed)."""
    assert parse_leading_marker(body) is None
    assert parse_marker(body) is None


def test_a_digest_that_inflates_without_bound_is_ignored() -> None:
    bomb = zlib.compress(b"[" + b" " * (64 * 1024 * 1024) + b"]", 9)
    line = f"<!-- rivet-ci:digest v=1 data={base64.urlsafe_b64encode(bomb).decode()} -->"
    assert len(line) < 200_000
    assert read_digest(line) is None
