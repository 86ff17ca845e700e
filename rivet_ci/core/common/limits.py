"""Every numeric limit rivet-ci enforces, and the one coercion of untrusted numbers to them.

One definition each: the modules that enforce a limit import it from here. A forge's own limits
are the forge's (its comment size: `ForgeRunner.comment_limit`, `rivet_ci.adapters.runners`).
"""

from __future__ import annotations

import math
from decimal import Decimal

# GitHub allows 1 MiB per step summary.
STEP_SUMMARY_LIMIT = 1_000_000

# The longest a value a pull request controls is shown in the comment (and the job summary):
# an export, source group, file, column or branch name, a waiver's line — anything from its
# configs, its file names or its plan.json. Longer ones are elided in the middle (`…`) before
# anything is escaped; plan.json keeps them whole (docs/action.md, "Size"). A message, which
# quotes such names, is bounded at `COMMENT_TEXT_CHARS`; a link (a URL, a waiver line to paste)
# longer than that is left out rather than cut. 128 holds a qualified PostgreSQL name
# (63 + `.` + 63).
COMMENT_NAME_CHARS = 128
COMMENT_TEXT_CHARS = 4 * COMMENT_NAME_CHARS
# The longest backtick string cmark-gfm (GitHub's Markdown engine) takes as a code span's fence:
# a longer one is text, and what it would have fenced is read as Markdown.
CODE_SPAN_MAX_FENCE = 80

# The largest JSON input read whole (an event payload, a plan to show): GitHub caps a webhook
# payload at 25 MB; a plan document of 100,000 exports is ~500 MB (facts files and plan
# documents rivet-ci writes are read by their own paths, not capped here).
MAX_JSON_INPUT_BYTES = 1024 * 1024 * 1024
MAX_EVENT_BYTES = 64 * 1024 * 1024
# A previous comment's digest, decompressed (it is at most a comment long compressed).
MAX_DIGEST_BYTES = 8 * 1024 * 1024

# A facts archive (a forge's artifact holding the trusted facts file, a zip): the bytes
# downloaded, the members its central directory may list, and the bytes all its members may
# inflate to together (as read, not as declared). One facts file of 100,000 exports is
# ~50 MB; a zip inflates a thousandfold, so without a total a 12.5 MB archive of many
# members, each within a per-member bound, would inflate to 12 GiB.
MAX_FACTS_ARCHIVE_BYTES = 64 * 1024 * 1024
MAX_FACTS_ARCHIVE_MEMBERS = 1_000
MAX_FACTS_ARCHIVE_INFLATED_BYTES = 256 * 1024 * 1024

# rivet's integers are Rust i64 and u64 (config keys follow rivet's u16/u32/u64 ranges); YAML
# integers beyond those but within i128/u128 get rivet's own error. i64 is also the upper bound
# of every integer fact and history figure: larger values would overflow the planner's float
# arithmetic.
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
U64_MAX = 2**64 - 1
I128_MIN, U128_MAX = -(2**127), 2**128 - 1


def as_number(value: object) -> float | None:
    """A number read from a driver or a JSON plan (int, float, Decimal or numeric text) as a
    float; None for anything else (booleans included)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float | Decimal | str):
        try:
            return float(value)
        except (ValueError, OverflowError):
            return None
    return None


def as_int(value: object) -> int | None:
    """An integer as stored (ints kept exact, finite numbers truncated); None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    number = as_number(value)
    return int(number) if number is not None and math.isfinite(number) else None


def fact_count(value: object) -> int | None:
    """A count or size a database reported (row estimate, width, examined rows): rounded,
    capped at i64; None when negative or not a number."""
    number = as_number(value)
    return round(min(number, I64_MAX)) if number is not None and number >= 0 else None
