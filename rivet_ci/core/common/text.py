"""Text helpers shared by every output of the core."""

from __future__ import annotations

import functools
import re


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """`1 export`, `2 exports`, `3,000 exports` (thousands separated)."""
    word = singular if count == 1 else (plural_form or f"{singular}s")
    return f"{count:,} {word}"


_LONG_NUMBER = re.compile(r"(?<![\w.,])(\d{5,})(?![\w.,]\d)")


@functools.lru_cache(maxsize=8192)  # reasons repeat over thousands of exports
def people_numbers(text: str) -> str:
    """`~180000000` → `~180,000,000`: whole numbers of five digits or more in a text meant for
    people get thousands separators (`plan.json` keeps rivet's exact texts). Digits inside a
    word (`t00_0001`, a hash) or a decimal are left alone."""
    return _LONG_NUMBER.sub(lambda m: f"{int(m.group(1)):,}", text)


def reason_anchor(kind: str) -> str:
    """The anchor of a reason kind's row in docs/scoring-rules.md (the comment links to it)."""
    return f"reason-{kind}"
