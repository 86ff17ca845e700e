"""The action's step outputs: the ``GITHUB_OUTPUT`` file, through the output boundary."""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from pathlib import Path

from rivet_ci.output.redaction import Redactor
from rivet_ci.output.sink import append_output

# GitHub's own output names: a letter or "_" first, then letters, digits, "_" and "-".
_OUTPUT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def write_outputs(path: Path, outputs: Mapping[str, str | int | bool],
                  redact: Redactor | None = None) -> None:
    """Append step outputs to the ``GITHUB_OUTPUT`` file.

    Uses the multiline form ``name<<DELIMITER`` ... ``DELIMITER`` for every value, so a value
    may hold newlines, with a random delimiter: a fixed one could appear in a value (a plan
    path, a rendered warning) and let it forge further outputs.
    """
    lines: list[str] = []
    for name, value in outputs.items():
        if not _OUTPUT_NAME.fullmatch(name):
            raise ValueError(f"invalid step output name {name!r}")
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
        while delimiter in text:  # vanishingly unlikely, but then it is not a delimiter
            delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
        lines.append(f"{name}<<{delimiter}\n{text}\n{delimiter}\n")
    # Through the output boundary: redacted, and never appended through a symlink.
    append_output(path, "".join(lines), redact or Redactor())
