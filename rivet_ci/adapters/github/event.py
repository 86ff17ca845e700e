"""Reading the GitHub event payload (`GITHUB_EVENT_PATH`) the action and `post` are given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rivet_ci.errors import UsageError


def read_event(path: Path, *, shown: str | None = None) -> dict[str, Any]:
    """The event as a JSON object; a `UsageError` naming the file when it is not one."""
    name = shown or str(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read the event payload {name}: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(f"the event payload {name} is not a JSON object")
    return data
