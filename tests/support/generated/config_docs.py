"""The rules table of `docs/configs.md`, rendered from the config rules the loader checks."""

from __future__ import annotations

import string
from collections.abc import Callable

from rivet_ci.core.config.rules import RIVET_CODES, RULES


def rules_table() -> str:
    """Every rule: its id, rivet's code, class, severity, field and our message (a value from
    the config shown as `<name>`)."""
    rows = ["| rule | rivet code | class | severity | field | our message |",
            "|---|---|---|---|---|---|"]
    for rule in RULES:
        message = "".join(literal + (f"<{field}>" if field is not None else "")
                          for literal, field, _, _ in string.Formatter().parse(rule.message))
        message = message.replace("|", "\\|")
        field = rule.field.replace("|", "\\|")
        code = RIVET_CODES[rule.id]
        rows.append(f"| `{rule.id}` | {f'`{code}`' if code else '—'} | {rule.klass} | "
                    f"{rule.severity} | "
                    f"{f'`{field}`' if field else ''} | {message} |")
    return "\n".join(rows)


# name of the generated block in docs/configs.md → its renderer
TABLES: dict[str, Callable[[], str]] = {"config-rules": rules_table}
