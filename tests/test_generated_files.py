"""Every generated file is what its generator makes: the docs' tables, the golden files and the
JSON Schema (`tests/support/generated/`, the one list; `scripts/regenerate.py` rewrites them).

A failure here means the code changed what it prints or documents and the committed file was
not regenerated (run `.venv/bin/python scripts/regenerate.py` and review the diff), or the file
was edited by hand (edit the code instead).
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from support.generated import GENERATED, REPO, Generated
from support.generated.goldens import header_matches_body


@pytest.mark.parametrize("target", GENERATED, ids=lambda target: target.name)
def test_the_committed_file_is_what_its_generator_makes(target: Generated) -> None:
    current = target.current()
    assert current is not None, (
        f"{target.path} has no block `<!-- generated: {target.block} -->`" if target.block
        else f"{target.path} is missing: run .venv/bin/python scripts/regenerate.py")
    assert current == target.render(), (
        f"{target.name} differs from what its generator makes: run .venv/bin/python "
        "scripts/regenerate.py and review the diff")


def test_every_generated_block_of_the_docs_has_its_generator() -> None:
    known = {(t.path, t.block) for t in GENERATED if t.block is not None}
    written = set()
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for name in re.findall(r"<!-- generated: ([a-z0-9-]+) -->", text):
            written.add((str(path.relative_to(REPO)), name))
            assert f"<!-- end: {name} -->" in text, f"{path.name}: block {name} is not closed"
    assert written == known


def test_the_golden_comment_carries_the_hash_of_its_body() -> None:
    # An edit by hand is told apart from a stale file: the header no longer matches the body.
    text = (REPO / "tests/golden/comment/realistic.md").read_text(encoding="utf-8")
    assert header_matches_body(text)
    header, _, body = text.partition("\n")
    assert not header_matches_body(header + "\n" + body.replace("gate failed", "gate passed"))


def test_every_golden_file_is_generated() -> None:
    # tests/golden/rivet/ holds rivet's own artifact (an input, written by rivet, not by us).
    golden = {str(p.relative_to(REPO)) for p in (REPO / "tests" / "golden").rglob("*")
              if p.is_file() and "rivet" not in p.relative_to(REPO / "tests" / "golden").parts}
    assert golden == {t.path for t in GENERATED if t.path.startswith("tests/golden/")}


def test_regenerate_check_says_every_file_is_current() -> None:
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "regenerate.py"), "--check"],
                            capture_output=True, text=True, check=False, cwd=REPO)
    assert (result.returncode, result.stdout) == (0, "every generated file is current\n"), (
        result.stdout + result.stderr)
