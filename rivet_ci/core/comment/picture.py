"""The campaign at head as a picture: a Mermaid flowchart for the comment and the job summary
(pure; GitHub renders a ```mermaid block in comments).

Waves left to right, one box per source group in each wave (`replica_a · 12 exports · 2 heavy`);
heavy and isolated (🔒) exports are marked, and what the pull request added or moved (another
wave or priority class, newly isolated) is highlighted and named. The picture is bounded
whatever the plan's size: at most `MAX_GROUPS_PER_WAVE` boxes per wave (the ones the PR touched
first, then the heaviest), the rest folded into one `and N more groups` box, and at most
`MAX_NAMED` export names per box.

Every label is PR data (group and export names) and is escaped here, character by character,
into Mermaid's entity codes (`#35;`): nothing in a name can end a label, start a statement, a
link or a directive, close the Markdown fence, or carry markup — the only markup in a label is
the `<br/>` this module writes between lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from rivet_ci.core.gate.diff import ExportChange, PlanDiff
from rivet_ci.core.plan.planner import Plan
from rivet_ci.core.plan.recommendation import HEAVY_COST

MAX_GROUPS_PER_WAVE = 8
MAX_NAMED = 3  # export names listed in one box
COLLAPSE_NODES = 6  # more boxes than this: the picture is folded (<details>)
NO_GROUP = "(no source group)"

# Colours readable on GitHub's light and dark themes (dark text on light fills).
CLASS_DEFS = (
    "classDef added fill:#dafbe1,stroke:#1a7f37,color:#1f2328",
    "classDef moved fill:#fff8c5,stroke:#9a6700,color:#1f2328",
    "classDef heavy fill:#ffebe9,stroke:#cf222e,color:#1f2328",
    "classDef more fill:#f6f8fa,stroke:#8c959f,color:#57606a,stroke-dasharray:4 3",
    "classDef wave fill:transparent,stroke:#8c959f",
)


class CampaignPicture(BaseModel):
    """The Mermaid source (every label escaped) and what it shows."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    text: str
    waves: int
    groups: int
    boxes: int
    highlighted: int  # exports the PR added or moved

    @property
    def collapsed(self) -> bool:
        return self.boxes > COLLAPSE_NODES


_SAFE = re.compile(r"[A-Za-z0-9 _.,:/()+=-]")


def label_text(value: str) -> str:
    """`value` as inert text inside a Mermaid `["..."]` label: every character outside a small
    safe set becomes an entity code (`"` → `#34;`, `` ` `` → `#96;`, `<` → `#60;`)."""
    return "".join(c if _SAFE.fullmatch(c) else f"#{ord(c)};" for c in value
                   if c not in "\r\n\u2028\u2029\x00")


class _Box:
    __slots__ = ("added", "count", "group", "heavy", "isolated", "moved")

    def __init__(self, group: str) -> None:
        self.group = group
        self.count = 0
        self.heavy: list[str] = []
        self.isolated: list[str] = []
        self.added: list[str] = []
        self.moved: list[str] = []

    def rank(self) -> tuple[int, int, int, str]:
        return (-(len(self.added) + len(self.moved)), -len(self.heavy), -self.count,
                self.group)


def build_picture(head: Plan, diff: PlanDiff) -> CampaignPicture | None:
    """The head campaign's picture, or None when the head plans no export."""
    changed: dict[str, dict[str, ExportChange]] = {}
    for c in diff.exports:
        if c.status != "unchanged":
            changed.setdefault(c.config_path, {})[c.export_name] = c
    boxes: dict[tuple[int, str | None], _Box] = {}
    highlighted = 0
    for config in head.configs:
        in_file = changed.get(config.path, {})
        for export in config.exports:
            rec = export.recommendation
            key = (rec.recommended_wave, rec.source_group)
            box = boxes.get(key)
            if box is None:
                box = boxes[key] = _Box(rec.source_group or NO_GROUP)
            box.count += 1
            name = rec.export_name
            if rec.cost_class in HEAVY_COST:
                box.heavy.append(name)
            if rec.isolate_on_source:
                box.isolated.append(name)
            change = in_file.get(name)
            if change is None:
                continue
            base = change.base
            if change.status == "added":
                box.added.append(name)
                highlighted += 1
            elif base is not None and (
                    base.recommended_wave != rec.recommended_wave
                    or base.priority_class != rec.priority_class
                    # (beside exports a broken file keeps unplanned, isolation is unknown)
                    or (base.isolate_on_source != rec.isolate_on_source
                        and change.broken_at is None)):
                box.moved.append(name)
                highlighted += 1
    if not boxes:
        return None
    waves: dict[int, dict[str, _Box]] = {}
    for (wave, _group), box in boxes.items():
        waves.setdefault(wave, {})[box.group] = box
    return _render(waves, highlighted)


def _names(prefix: str, names: Iterable[str], budget: int) -> list[str]:
    return [f"{prefix} {label_text(n)}" for n in list(names)[:max(budget, 0)]]


def _box_label(box: _Box) -> tuple[str, str | None]:
    count = box.count
    head = f"{label_text(box.group)} · {count:,} export{'s' if count != 1 else ''}"
    if box.heavy:
        head += f" · {len(box.heavy):,} heavy"
    lines = [head]
    if count > 1 and len(box.added) + len(box.moved) == count:  # a mass change: no names
        what = "new or moved" if box.added and box.moved else "new" if box.added else "moved"
        return "<br/>".join([head, f"all {count:,} {what}"]), "added" if box.added else "moved"
    if count > 1 and len(box.isolated) == count and not (box.added or box.moved):
        return "<br/>".join([head, f"🔒 all {count:,} isolated"]), "heavy"
    budget = MAX_NAMED
    for prefix, names in (("+ new:", box.added), ("moved:", box.moved),
                          ("🔒", [n for n in box.isolated if n not in box.added + box.moved])):
        shown = _names(prefix, names, budget)
        budget -= len(shown)
        lines += shown
    named = sum(len(x) for x in (box.added, box.moved)) + len(
        [n for n in box.isolated if n not in box.added + box.moved])
    if named > MAX_NAMED:
        lines.append(f"and {named - MAX_NAMED:,} more marked")
    kind = ("added" if box.added else "moved" if box.moved
            else "heavy" if len(box.heavy) >= 2 or box.isolated else None)
    return "<br/>".join(lines), kind


def _render(waves: dict[int, dict[str, _Box]], highlighted: int) -> CampaignPicture:
    lines = ["flowchart LR", *(f"  {d}" for d in CLASS_DEFS)]
    classes: dict[str, list[str]] = {}
    boxes = 0
    groups: set[str] = set()
    order = sorted(waves)
    for wave in order:
        members = waves[wave]
        total = sum(b.count for b in members.values())
        groups.update(members)
        lines.append(f'  subgraph w{wave}["wave {wave} · {total:,} '
                     f'export{"s" if total != 1 else ""}"]')
        lines.append("    direction TB")
        ranked = sorted(members.values(), key=_Box.rank)
        nodes = []
        for i, box in enumerate(ranked[:MAX_GROUPS_PER_WAVE]):
            node = f"w{wave}g{i}"
            label, kind = _box_label(box)
            lines.append(f'    {node}["{label}"]')
            nodes.append(node)
            if kind:
                classes.setdefault(kind, []).append(node)
        rest = ranked[MAX_GROUPS_PER_WAVE:]
        if rest:
            node = f"w{wave}more"
            count = sum(b.count for b in rest)
            lines.append(f'    {node}["and {len(rest):,} more groups · {count:,} exports"]')
            classes.setdefault("more", []).append(node)
            nodes.append(node)
        if len(nodes) > 1:  # invisible links stack a wave's boxes in one column
            lines.append("    " + " ~~~ ".join(nodes))
        boxes += len(nodes)
        lines.append("  end")
    if len(order) > 1:
        lines.append("  " + " --> ".join(f"w{w}" for w in order))
    classes["wave"] = [f"w{w}" for w in order]
    for kind, nodes in classes.items():
        lines.append(f"  class {','.join(nodes)} {kind}")
    return CampaignPicture(text="\n".join(lines), waves=len(order), groups=len(groups),
                           boxes=boxes, highlighted=highlighted)
