"""Every textual format rivet-ci recognises by pattern, defined once, and the text helpers
built on them (URL userinfo masking, "did you mean" suggestions).

The modules that validate or parse one of these formats import it from here.
"""

from __future__ import annotations

import re

# A full git commit id (SHA-1 or SHA-256), as GitHub's environment and events carry it.
COMMIT_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
# A commit id, possibly abbreviated (git's shortest form is 7 hex digits).
COMMIT_SHA_PREFIX = re.compile(r"[0-9a-f]{7,64}")
# The action's `id` input: names the gate's sticky comment (its marker carries it).
GATE_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")
# A UTC time to the second, as the comment's marker and a plan document's `generated_at` write it.
UTC_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
# How long facts stay fresh (the action's `facts-max-age`, `rivet-ci post --facts-max-age`).
FACTS_MAX_AGE = re.compile(r"\d{1,5}[hd]")
# `owner/name` of a GitHub repository.
REPOSITORY = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
# rivet's `${NAME}` placeholder in config text (rivet-config.md: the name runs to the first `}`).
PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
# A plain decimal integer (sign and ASCII digits only), as Rust's `str::parse::<i64>` reads it.
INTEGER = re.compile(r"[+-]?[0-9]+")
# `scheme://userinfo@` anywhere in a text (a remote, a command line, a tool's message).
URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@")


def mask_url_userinfo(text: str, mask: str = "***") -> str:
    """`text` with every URL's whole userinfo (user and password or token) replaced by `mask`."""
    return URL_USERINFO.sub(lambda m: f"{m['scheme']}{mask}@", text)


def did_you_mean(needle: str, candidates: tuple[str, ...] | list[str]) -> str | None:
    """rivet's suggestion for an unknown key (spec B.6): the closest candidate by edit distance
    (case-insensitive) within a third of the longer name (at least 2), else the longest
    candidate of 3+ characters containing or contained in the needle."""
    low = needle.lower()
    best: str | None = None
    best_distance = 1 << 30
    for candidate in candidates:
        distance = _levenshtein(low, candidate.lower())
        if distance < best_distance:
            best, best_distance = candidate, distance
    if best is not None and best_distance <= max(max(len(needle), len(best)) // 3, 2):
        return best
    contained = [c for c in candidates if len(c) >= 3 and (c.lower() in low or low in c.lower())]
    return max(contained, key=len) if contained else None


def _levenshtein(a: str, b: str) -> int:
    ab, bb = a.encode(), b.encode()
    previous = list(range(len(bb) + 1))
    for i, ca in enumerate(ab, 1):
        current = [i]
        for j, cb in enumerate(bb, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1,
                               previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]
