"""Every link and install reference in the README, the docs and the comment points at something
that exists: a file, a heading's anchor, a ref of this repository (a branch, a tag, a commit),
and no release, image tag or package version before it is released. Headings are unique per
document, so every anchor names one place.

Checked locally, without network: links to this repository on github.com are resolved against
the checkout (its files, `git tag`, `main`); links elsewhere are left alone.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from rivet_ci.review.comment import RELEASED_VERSIONS, rules_url

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").glob("*.md")])
TEMPLATES = sorted((ROOT / "templates").rglob("*.j2"))
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
OWN = "https://github.com/rivet-ci/rivet-ci"
LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)\)|<a href=\"([^\"]+)\"")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^[ \t]*(```|~~~)")
USES = re.compile(r"rivet-ci/rivet-ci@([^\s\"'`]+)")
DOCKER = re.compile(r"ghcr\.io/rivet-ci/rivet-ci:([^\s\"'`]+)")
PIP = re.compile(r"rivet-ci==([^\s\"'`]+)")
# The placeholders the docs use until a release exists.
PLACEHOLDERS = {"...", "X.Y.Z", "vX.Y.Z", "vX", "X", "X.Y"}


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces
    to `-` (inline code and emphasis markers dropped first)."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def prose(text: str) -> str:
    """The text outside fenced code blocks (links in code are not links)."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return "\n".join(out)


def headings(path: Path) -> list[str]:
    return [m.group(2) for m in re.finditer(r"^(#{1,6}) (.+?)\s*$", prose(
        path.read_text(encoding="utf-8")), re.MULTILINE)]


def anchors(path: Path) -> set[str]:
    """Anchors as GitHub numbers them (a repeated heading gets `-1`, `-2`, ...)."""
    seen: Counter[str] = Counter()
    out = set()
    for heading in headings(path):
        base = slug(heading)
        out.add(base if not seen[base] else f"{base}-{seen[base]}")
        seen[base] += 1
    return out


def git_refs() -> set[str]:
    tags = subprocess.run(["git", "-C", str(ROOT), "tag"], capture_output=True, text=True,
                          check=False).stdout.split()
    return {"main", *tags}


def check_target(target: str, doc: Path, refs: set[str]) -> str | None:
    """Why `target` (a link in `doc`) is broken, or None."""
    if target in ("#", ""):
        return "an empty link"
    if target.startswith(("mailto:", "http://", "https://")) and not target.startswith(OWN):
        return None
    if target.startswith(OWN):
        rest = target[len(OWN):]
        match = re.fullmatch(r"/(?:blob|tree)/([^/]+)/([^#]*)(?:#(.*))?", rest)
        if match is None:
            return None if rest in ("", "/") else f"a link into {OWN} it cannot resolve"
        ref, path, anchor = match.groups()
        if ref not in refs and not re.fullmatch(r"[0-9a-f]{40}", ref):
            return f"ref {ref!r} does not exist (refs: {sorted(refs)})"
        target_path = ROOT / path
        if not target_path.exists():
            return f"{path} does not exist"
        if anchor and anchor not in anchors(target_path):
            return f"no heading #{anchor} in {path}"
        return None
    path_part, _, anchor = target.partition("#")
    target_path = (doc.parent / path_part).resolve() if path_part else doc
    if not target_path.exists():
        return f"{path_part} does not exist"
    if anchor and target_path.suffix == ".md" and anchor not in anchors(target_path):
        return f"no heading #{anchor} in {target_path.name}"
    return None


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_in_the_docs_resolves(doc: Path) -> None:
    refs = git_refs()
    text = prose(doc.read_text(encoding="utf-8"))
    broken = []
    for match in LINK.finditer(text):
        target = match.group(1) or match.group(2)
        why = check_target(target, doc, refs)
        if why:
            broken.append(f"{target}: {why}")
    for match in IMAGE.finditer(text):
        if not match.group(1).startswith("http") and not (doc.parent / match.group(1)).exists():
            broken.append(f"image {match.group(1)} does not exist")
    assert not broken, f"{doc.relative_to(ROOT)}: " + "; ".join(broken)


def released(reference: str) -> bool:
    version = reference.removeprefix("v")
    return any(v == version or v.startswith(version + ".") for v in RELEASED_VERSIONS)


@pytest.mark.parametrize("path", [*DOCS, *WORKFLOWS, ROOT / ".pre-commit-hooks.yaml"],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_install_path_names_a_release_that_does_not_exist(path: Path) -> None:
    """`uses: rivet-ci/rivet-ci@vX`, `ghcr.io/...:X.Y.Z`, `rivet-ci==X.Y.Z`: a placeholder, a
    commit, `main`, or a version in RELEASED_VERSIONS (the changelog's history aside)."""
    if path.name == "CHANGELOG.md":
        return
    text = path.read_text(encoding="utf-8")
    bad = []
    for pattern, kind in ((USES, "uses:"), (DOCKER, "image"), (PIP, "package")):
        for match in pattern.finditer(text):
            reference = match.group(1).rstrip(",;:)")
            reference = reference if reference == "..." else reference.rstrip(".")
            if (reference in PLACEHOLDERS or reference.startswith("<")
                    or re.fullmatch(r"[0-9a-f]{40}", reference) or reference == "main"
                    or released(reference)):
                continue
            bad.append(f"{kind} {match.group(0)}")
    assert not bad, f"{path.relative_to(ROOT)} names releases that do not exist: {bad}"


def test_the_comment_links_resolve() -> None:
    refs = git_refs()
    for template in TEMPLATES:
        for target in re.findall(r"\((https?://[^)\s{}]+)\)", template.read_text(
                encoding="utf-8")):
            assert check_target(target, template, refs) is None, (template, target)
    assert check_target(rules_url(), ROOT / "README.md", refs) is None, rules_url()


@pytest.mark.parametrize("doc", [p for p in DOCS if p.name != "CHANGELOG.md"],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_heading_is_repeated(doc: Path) -> None:
    repeated = [h for h, n in Counter(slug(h) for h in headings(doc)).items() if n > 1]
    assert not repeated, f"{doc.relative_to(ROOT)} repeats headings: {repeated}"


def test_the_checks_catch_what_they_look_for(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("# One\n\n## Two `b`\n", encoding="utf-8")
    refs = {"main"}
    assert check_target("#two-b", doc, refs) is None
    assert check_target("#three", doc, refs)
    assert check_target("#", doc, refs)  # the README's old `[rivet](#)`
    assert check_target("missing.md", doc, refs)
    assert check_target(f"{OWN}/blob/v9.9.9/docs/action.md", doc, refs)
    assert check_target(f"{OWN}/blob/main/docs/nope.md", doc, refs)
    assert check_target(f"{OWN}/blob/main/docs/action.md#quick-start", doc, refs) is None
    assert check_target(f"{OWN}/blob/main/docs/action.md#no-such", doc, refs)
    assert slug("The gate: `fail-on`") == "the-gate-fail-on"
    assert not released("v0") or RELEASED_VERSIONS
