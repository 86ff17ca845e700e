"""Every file (or part of one) the repository generates from its code, and how: one home.

A doc's table sits between `<!-- generated: NAME -->` and `<!-- end: NAME -->`; a golden file
or the JSON Schema is generated whole. `scripts/regenerate.py` rewrites whatever is stale
(`--check` only lists it); `tests/test_generated_files.py` fails while any committed file
differs from what its generator makes. None of this ships: the wheel holds `rivet_ci/` only.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rivet_ci.commands.schema import schema_text
from support.generated import action_docs, config_docs, goldens, scoring_docs

REPO = Path(__file__).resolve().parents[3]


def block_pattern(name: str) -> re.Pattern[str]:
    """A generated block of a doc: its opening line, its body, its closing line."""
    return re.compile(rf"(<!-- generated: {re.escape(name)} -->\n)(.*?)(\n<!-- end: "
                      rf"{re.escape(name)} -->)", re.DOTALL)


@dataclass(frozen=True)
class Generated:
    """A generated file (`block` None) or one generated block of a doc."""

    path: str  # below the repository
    block: str | None
    render: Callable[[], str]

    @property
    def name(self) -> str:
        return self.path if self.block is None else f"{self.path}#{self.block}"

    def current(self) -> str | None:
        """The committed text (of the block), None when the file or block is missing."""
        path = REPO / self.path
        if not path.exists():
            return None
        text = path.read_text(encoding="utf-8")
        if self.block is None:
            return text
        match = block_pattern(self.block).search(text)
        return match.group(2) if match else None

    def write(self, rendered: str) -> None:
        path = REPO / self.path
        if self.block is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(rendered, encoding="utf-8", newline="\n")
            return
        text = path.read_text(encoding="utf-8")
        pattern = block_pattern(self.block)
        if pattern.search(text) is None:
            raise LookupError(f"{self.path} has no block `<!-- generated: {self.block} -->`: "
                              "write its opening and closing lines where the table belongs")
        text = pattern.sub(lambda m: m.group(1) + rendered + m.group(3), text)
        path.write_text(text, encoding="utf-8", newline="\n")


GENERATED: tuple[Generated, ...] = (
    *(Generated("docs/scoring-rules.md", name, render)
      for name, render in scoring_docs.TABLES.items()),
    *(Generated("docs/configs.md", name, render) for name, render in config_docs.TABLES.items()),
    *(Generated("docs/action.md", name, render) for name, render in action_docs.TABLES.items()),
    Generated("schemas/plan.schema.json", None, schema_text),
    *(Generated(path, None, render) for path, render in goldens.FILES.items()),
)


def stale() -> list[tuple[Generated, str]]:
    """Each generated file or block that differs from what its generator makes, with that."""
    out = []
    for target in GENERATED:
        rendered = target.render()
        if target.current() != rendered:
            out.append((target, rendered))
    return out
