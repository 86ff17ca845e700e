"""JSON from bytes nobody vouches for (an event payload, a plan to show, a facts file, a
previous comment's digest): one reader, bounded by `limits` — size, nesting (Python's decoder
refuses nesting deeper than the interpreter's recursion limit, reported here, never raised as
`RecursionError`), integer digits (Python's 4,300-digit limit, reported as such) — and every
refusal a `JsonInputError` (a `ValueError`) with a message and, where known, the line."""

from __future__ import annotations

import json
from typing import Any

from rivet_ci.core.common.limits import MAX_JSON_INPUT_BYTES


class JsonInputError(ValueError):
    """JSON that cannot be read: invalid, too large, too deeply nested, or an integer of too
    many digits."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


def load_json(text: str | bytes, *, limit: int = MAX_JSON_INPUT_BYTES) -> Any:
    """The decoded value of `text`; `JsonInputError` for anything that is not JSON rivet-ci
    will read."""
    if len(text) > limit:
        raise JsonInputError(f"larger than {limit:,} bytes")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonInputError(f"invalid JSON: {exc.msg}", exc.lineno) from None
    except RecursionError:
        raise JsonInputError("invalid JSON: nested too deeply") from None
    except UnicodeDecodeError as exc:
        raise JsonInputError(f"not UTF-8: {exc.reason} at byte {exc.start}") from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise JsonInputError(f"invalid JSON: {exc}") from None
