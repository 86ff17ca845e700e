"""One definition per limit and pattern: `rivet_ci/core/common/limits.py` and
`rivet_ci/core/common/patterns.py` hold them (a forge's own limit, its forge's runner:
`adapters/github/runner.py`), nothing else in the package restates one."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from rivet_ci.core.common.limits import I64_MAX, as_int, as_number, fact_count
from rivet_ci.core.common.patterns import (
    COMMIT_SHA,
    COMMIT_SHA_PREFIX,
    PLACEHOLDER,
    did_you_mean,
    mask_url_userinfo,
)
from rivet_ci.core.plan.strategy import resolved_max_file_size

PACKAGE = Path(__file__).resolve().parent.parent / "rivet_ci"
COMMON = (PACKAGE / "core" / "common" / "limits.py", PACKAGE / "core" / "common" / "patterns.py")
GITHUB_RUNNER = (PACKAGE / "adapters" / "github" / "runner.py",)

# Spellings of a definition, and the modules that are its home.
RESTATED = {
    "the GitHub comment limit": (re.compile(r"65_?536"), GITHUB_RUNNER),
    "a commit sha pattern": (re.compile(r"0-9a-f(A-F)?\]\{(7|40)"), COMMON),
    "the gate id pattern": (re.compile(r"A-Za-z0-9_\.-\]\{1,64\}"), COMMON),
    "the ${NAME} grammar": (re.compile(r"\\\$\\\{\(\[\^\}\]\*\)\\\}"), COMMON),
    "the i64 bounds": (re.compile(r"2\s*\*\*\s*63"), COMMON),
    "a did-you-mean builder": (
        re.compile(r"get_close_matches|def _levenshtein|import difflib"), COMMON),
    "a URL userinfo masker": (re.compile(r"://\)\[\^/@\\s\]\+@"), COMMON),
    "a bound on a facts archive": (re.compile(r"MAX_\w*ARCHIVE\w*\s*=\s*\d"), COMMON),
}


def test_no_module_restates_a_limit_or_a_pattern() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for what, (pattern, homes) in RESTATED.items():
            if path not in homes and pattern.search(text):
                found.append(f"{path.relative_to(PACKAGE)}: {what}")
    assert found == []


def test_each_definition_is_in_its_home() -> None:
    for what, (pattern, homes) in RESTATED.items():
        texts = "\n".join(path.read_text(encoding="utf-8") for path in homes)
        assert pattern.search(texts), what


@pytest.mark.parametrize(("value", "expected"), [
    (12, 12.0), (1.5, 1.5), ("7", 7.0), (Decimal("2.5"), 2.5), (True, None), ("x", None),
    (None, None), ([1], None)])
def test_as_number(value: object, expected: float | None) -> None:
    assert as_number(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (2**70, 2**70), (-3, -3), (3.9, 3), ("4", 4), (Decimal("5.7"), 5), (float("inf"), None),
    ("nan", None), (False, None)])
def test_as_int(value: object, expected: int | None) -> None:
    assert as_int(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (10, 10), (2.5, 2), (3.5, 4), ("12", 12), (-1, None), (1e30, I64_MAX), ("nan", None)])
def test_fact_count_rounds_and_caps_at_i64(value: object, expected: int | None) -> None:
    assert fact_count(value) == expected


def test_shas() -> None:
    assert COMMIT_SHA.fullmatch("a" * 40) and COMMIT_SHA.fullmatch("b" * 64)
    assert not COMMIT_SHA.fullmatch("a" * 41) and not COMMIT_SHA.fullmatch("A" * 40)
    assert COMMIT_SHA_PREFIX.fullmatch("abc1234") and not COMMIT_SHA_PREFIX.fullmatch("abc123")


def test_placeholder_and_masking_and_suggestions() -> None:
    assert PLACEHOLDER.findall("postgresql://${USER}:${PASS}@h") == ["USER", "PASS"]
    assert mask_url_userinfo("git fetch https://x:tok@github.com/o/r") == (
        "git fetch https://***@github.com/o/r")
    assert did_you_mean("export", ("format", "exports", "configs")) == "exports"
    assert did_you_mean("zzzz", ("format", "exports")) is None


@pytest.mark.parametrize(("text", "expected"), [
    ("256MB", 256 * 1024**2), ("1e3", 1000), ("INF", 2**64 - 1), ("1.9B", 1), ("10TB", None),
    (None, None), (1048576, 1048576)])
def test_the_artifacts_max_file_size_is_rivets_parser(text: object, expected: int | None) -> None:
    assert resolved_max_file_size(text) == expected
