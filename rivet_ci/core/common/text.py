"""Text helpers shared by every output of the core."""

from __future__ import annotations


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """`1 export`, `2 exports`, `3,000 exports` (thousands separated)."""
    word = singular if count == 1 else (plural_form or f"{singular}s")
    return f"{count:,} {word}"
