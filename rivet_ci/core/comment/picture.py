"""The campaign at head as a picture: a Mermaid flowchart for the comment and the job summary
(pure; GitHub renders a ```mermaid block in comments).

Waves left to right, one box per source group in each wave (`replica_a · 12 exports · 2 heavy`);
heavy and isolated (🔒) exports are marked, and what the pull request added or moved (another
wave or priority class, newly isolated) is highlighted and named. The picture is bounded
whatever the plan's size: at most `MAX_GROUPS_PER_WAVE` boxes per wave (the ones the PR touched
first, then the heaviest), the rest folded into one `and N more groups` box, and at most
`MAX_NAMED` export names per box.

The picture is data (`CampaignPicture`: group and export names as they are), part of the view
model, so the view's one pass of redaction and bounds sees every name before anything escapes
it. `mermaid_text` writes it when the comment is rendered: every name is escaped there,
character by character, into Mermaid's entity codes (`#35;`), so nothing in a name can end a
label, start a statement, a link or a directive, close the Markdown fence, or carry markup — the
only markup in a label is the `<br/>` written between lines.
"""

from __future__ import annotations

import re

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
_STYLES = frozenset({"added", "moved", "heavy"})  # a box's style is one of these classes


class PictureName(BaseModel):
    """An export named in a box: what the PR did to it (`+ new:`, `moved:`, `🔒`) and its name."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    prefix: str
    name: str


class PictureBox(BaseModel):
    """One source group in one wave: `replica_a · 3 exports · 2 heavy`, then the exports this
    pull request added or moved (or isolated ones), or a line for a mass change."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    group: str
    exports: int
    heavy: int
    names: tuple[PictureName, ...] = ()
    note: str | None = None  # rivet-ci's words: `all 6 moved`, `and 2 more marked`
    style: str | None = None  # the class it is drawn in (`added`, `moved`, `heavy`)


class PictureWave(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    wave: int
    exports: int
    boxes: tuple[PictureBox, ...]
    more_groups: int = 0  # groups folded into one `and N more groups` box
    more_exports: int = 0


class CampaignPicture(BaseModel):
    """The head campaign as data (names as they are); `mermaid_text` writes it, escaping every
    label, when the comment is rendered — so the view's values are redacted and bounded before
    any of them is escaped."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    columns: tuple[PictureWave, ...]  # one per wave, in order
    groups: int
    highlighted: int  # exports the PR added or moved

    @property
    def waves(self) -> int:
        return len(self.columns)

    @property
    def boxes(self) -> int:
        return sum(len(w.boxes) + (1 if w.more_groups else 0) for w in self.columns)

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
    return _picture(waves, highlighted)


def _box(box: _Box) -> PictureBox:
    count = box.count
    heavy = len(box.heavy)
    if count > 1 and len(box.added) + len(box.moved) == count:  # a mass change: no names
        what = "new or moved" if box.added and box.moved else "new" if box.added else "moved"
        return PictureBox(group=box.group, exports=count, heavy=heavy,
                          note=f"all {count:,} {what}", style="added" if box.added else "moved")
    if count > 1 and len(box.isolated) == count and not (box.added or box.moved):
        return PictureBox(group=box.group, exports=count, heavy=heavy,
                          note=f"🔒 all {count:,} isolated", style="heavy")
    marked = [*(("+ new:", n) for n in box.added), *(("moved:", n) for n in box.moved),
              *(("🔒", n) for n in box.isolated if n not in box.added + box.moved)]
    note = f"and {len(marked) - MAX_NAMED:,} more marked" if len(marked) > MAX_NAMED else None
    style = ("added" if box.added else "moved" if box.moved
             else "heavy" if heavy >= 2 or box.isolated else None)
    return PictureBox(group=box.group, exports=count, heavy=heavy,
                      names=tuple(PictureName(prefix=p, name=n) for p, n in marked[:MAX_NAMED]),
                      note=note, style=style)


def _picture(waves: dict[int, dict[str, _Box]], highlighted: int) -> CampaignPicture:
    drawn: list[PictureWave] = []
    groups: set[str] = set()
    for wave in sorted(waves):
        members = waves[wave]
        groups.update(members)
        ranked = sorted(members.values(), key=_Box.rank)
        rest = ranked[MAX_GROUPS_PER_WAVE:]
        drawn.append(PictureWave(
            wave=wave, exports=sum(b.count for b in members.values()),
            boxes=tuple(_box(b) for b in ranked[:MAX_GROUPS_PER_WAVE]),
            more_groups=len(rest), more_exports=sum(b.count for b in rest)))
    return CampaignPicture(columns=tuple(drawn), groups=len(groups),
                           highlighted=highlighted)


# -- the Mermaid text (written when the comment is rendered) --------------------------------------

def _label(box: PictureBox) -> str:
    head = f"{label_text(box.group)} · {box.exports:,} export{'s' if box.exports != 1 else ''}"
    if box.heavy:
        head += f" · {box.heavy:,} heavy"
    lines = [head, *(f"{_ours(n.prefix)} {label_text(n.name)}" for n in box.names)]
    if box.note:
        lines.append(_ours(box.note))
    return "<br/>".join(lines)


_OWN_WORDS = re.compile(r"(?:\+ new:|moved:|🔒)|(?:🔒 )?(?:all|and) [\d,]+ [a-z ]+")


def _ours(text: str) -> str:
    """Words this module wrote (a prefix, a note) as they are; anything else escaped."""
    return text if _OWN_WORDS.fullmatch(text) else label_text(text)


def mermaid_text(picture: CampaignPicture) -> str:
    """The picture as a Mermaid flowchart: waves left to right, a wave's boxes stacked, every
    label escaped by `label_text` (the only markup in a label is the `<br/>` written here)."""
    lines = ["flowchart LR", *(f"  {d}" for d in CLASS_DEFS)]
    classes: dict[str, list[str]] = {}
    for wave in picture.columns:
        w = wave.wave
        lines.append(f'  subgraph w{w}["wave {w} · {wave.exports:,} '
                     f'export{"s" if wave.exports != 1 else ""}"]')
        lines.append("    direction TB")
        nodes = []
        for i, box in enumerate(wave.boxes):
            node = f"w{w}g{i}"
            lines.append(f'    {node}["{_label(box)}"]')
            nodes.append(node)
            if box.style in _STYLES:
                classes.setdefault(box.style, []).append(node)
        if wave.more_groups:
            node = f"w{w}more"
            lines.append(f'    {node}["and {wave.more_groups:,} more groups · '
                         f'{wave.more_exports:,} exports"]')
            classes.setdefault("more", []).append(node)
            nodes.append(node)
        if len(nodes) > 1:  # invisible links stack a wave's boxes in one column
            lines.append("    " + " ~~~ ".join(nodes))
        lines.append("  end")
    order = [wave.wave for wave in picture.columns]
    if len(order) > 1:
        lines.append("  " + " --> ".join(f"w{w}" for w in order))
    classes["wave"] = [f"w{w}" for w in order]
    for kind, nodes in classes.items():
        lines.append(f"  class {','.join(nodes)} {kind}")
    return "\n".join(lines)
