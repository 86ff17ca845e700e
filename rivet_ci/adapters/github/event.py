"""The GitHub event payload (`GITHUB_EVENT_PATH`) the action and `post` are given: reading it,
and the pull request it names (`PullRequestEvent`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rivet_ci.core.common.json_input import JsonInputError, load_json
from rivet_ci.core.common.limits import MAX_EVENT_BYTES
from rivet_ci.errors import UsageError


def read_event(path: Path, *, shown: str | None = None) -> dict[str, Any]:
    """The event as a JSON object; a `UsageError` naming the file when it is not one (not
    readable, not UTF-8, over `MAX_EVENT_BYTES`, not JSON, nested too deeply, an integer of too
    many digits, not an object)."""
    name = shown or str(path)
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_EVENT_BYTES + 1)
        value = load_json(data.decode("utf-8"), limit=MAX_EVENT_BYTES)
    except OSError as exc:
        raise UsageError(f"cannot read the event payload {name}: {exc}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"cannot read the event payload {name}: not UTF-8 ({exc.reason} at "
                         f"byte {exc.start})") from None
    except JsonInputError as exc:
        where = f"{name}:{exc.line}" if exc.line else name
        raise UsageError(f"cannot read the event payload {where}: {exc.message}") from None
    if not isinstance(value, dict):
        raise UsageError(f"the event payload {name} is not a JSON object")
    return value


@dataclass(frozen=True)
class PullRequestEvent:
    """What a `pull_request` (or `pull_request_target`) event says about its pull request."""

    number: int
    base_sha: str
    head_sha: str

    @classmethod
    def of(cls, event: Mapping[str, Any], *, shown: str) -> PullRequestEvent | None:
        """The pull request of the payload; None when it names none (a push, a schedule).

        A `pull_request` object without the fields a pull request event has is a `UsageError`
        naming the payload `shown` and every missing field.
        """
        pr = event.get("pull_request")
        if pr is None:
            return None
        number = pr.get("number") if isinstance(pr, dict) else None
        base = pr.get("base") if isinstance(pr, dict) else None
        head = pr.get("head") if isinstance(pr, dict) else None
        base_sha = base.get("sha") if isinstance(base, dict) else None
        head_sha = head.get("sha") if isinstance(head, dict) else None
        missing = [name for name, value in (("pull_request.number", number),
                                            ("pull_request.base.sha", base_sha),
                                            ("pull_request.head.sha", head_sha))
                   if not isinstance(value, int if name.endswith("number") else str)
                   or isinstance(value, bool) or value == ""]
        if missing:
            raise UsageError(f"malformed event payload {shown}: "
                             f"{', '.join(missing)} missing or of the wrong type")
        assert isinstance(number, int) and isinstance(base_sha, str)
        assert isinstance(head_sha, str)
        return cls(number=number, base_sha=base_sha, head_sha=head_sha)
