"""What the comment may show of a value: redacted first, then bounded — once, when the view is
built, before anything is escaped (pure).

The view model holds every value as it is (names, messages, the picture's labels); the
template's filters escape them when the comment is rendered, each for its place (Markdown
text, a code span, a table cell, a Mermaid label). Two things must happen to a value before
any of that, and they happen here, once, to the whole view:

1. **Redaction** (`Masker`: the output boundary's redactor): a secret is masked while it is
   still in its plain form, so no escaped spelling of it (`&lt;`, `@\u200b`, `#64;`, `\\|`) is
   ever written — not even by a user template, which only sees the view.
2. **Bounds**: a pull request controls names of any length (an export, a group, a file, a
   column; the fork poster renders from a plan.json a fork wrote). Each string is bounded by
   the kind of field that holds it (`FIELD_KINDS`): a name is elided in the middle at
   `COMMENT_NAME_CHARS`, a message at `COMMENT_TEXT_CHARS`, a link longer than that is left out
   whole (a cut URL or waiver line would point elsewhere); rivet-ci's own fragments (the
   marker, the digest, the headline) are left as they are. Elision happens after redaction,
   so a secret is never cut into pieces the redactor would not know.

So the comment is fitted to the forge's limit by leaving out whole sections and rows, never by
cutting text (`output/render.py`), and a new field of the view is bounded as a name unless it
is listed here as something else.

Cost: one walk over the view's strings (objects shared between rows are visited once), one
scan by the redactor of all of them joined; the view is rebuilt only when something must
change (a secret, or a value over its bound) — and then only the objects that hold one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol, TypeVar

from pydantic import BaseModel

from rivet_ci.core.common.limits import COMMENT_NAME_CHARS, COMMENT_TEXT_CHARS

Kind = Literal["name", "text", "link", "ours"]

ELLIPSIS = "…"

# Fields (by name, in every model of the view) that are not names; any other string is a name.
FIELD_KINDS: dict[str, Kind] = {
    # messages and sentences, which quote names
    **dict.fromkeys(("message", "text", "detail", "reason", "facts", "policy", "now",
                     "new_findings", "resolved_findings", "waiver_problems", "waivers_file"),
                    "text"),
    # kept whole or left out: a link, or a line to paste (a cut one would match nothing)
    **dict.fromkeys(("url", "run_url", "rules_url", "waiver_hint", "waiver_yaml"), "link"),
    # rivet-ci's own: built from counts and checked inputs, or Markdown it built itself
    **dict.fromkeys(("marker", "digest", "headline", "checked_line", "full_report_hint",
                     "gate_id", "rivet_version", "waiver_in_pr", "prefix", "note", "style",
                     "left_out"), "ours"),
}
BOUNDS: dict[Kind, int] = {"name": COMMENT_NAME_CHARS, "text": COMMENT_TEXT_CHARS,
                           "link": COMMENT_TEXT_CHARS}
# A field of one model whose kind differs from its name's elsewhere: a why part's `text` is a
# reason kind, a label or a name (its group, its file), shown in a table cell.
MODEL_FIELD_KINDS: dict[tuple[str, str], Kind] = {("WhyPart", "text"): "name"}
_BY_MODEL: dict[type, dict[str, Kind]] = {}


def field_kinds(model: type[BaseModel]) -> dict[str, Kind]:
    """The kind of each field of `model` (computed once per model)."""
    found = _BY_MODEL.get(model)
    if found is None:
        found = _BY_MODEL[model] = {
            name: MODEL_FIELD_KINDS.get((model.__name__, name), FIELD_KINDS.get(name, "name"))
            for name in model.model_fields}
    return found


class Masker(Protocol):
    """The output boundary's redactor, as the view needs it (`output.redaction.Redactor`)."""

    def found(self, text: str) -> bool:
        """Whether `text` holds anything to mask."""

    def __call__(self, text: str) -> str:
        """`text` with every secret masked."""


class NoMasker:
    """A masker that finds nothing: for views no secret can reach (the core's own tests)."""

    def found(self, text: str) -> bool:  # noqa: ARG002 (the protocol's signature)
        return False

    def __call__(self, text: str) -> str:
        return text


def elide(text: str, limit: int) -> str:
    """`text` if it has at most `limit` characters, else its start and end around `…`
    (`limit` characters in all)."""
    if len(text) <= limit:
        return text
    keep = limit - len(ELLIPSIS)
    head = (keep + 1) // 2
    return f"{text[:head]}{ELLIPSIS}{text[len(text) - (keep - head):]}"


def bounded(kind: Kind, text: str) -> str | None:
    """`text` as a field of `kind` may show it (None: a link too long to show)."""
    if kind == "ours" or len(text) <= BOUNDS[kind]:
        return text
    return None if kind == "link" else elide(text, BOUNDS[kind])


_M = TypeVar("_M", bound=BaseModel)
_PLAIN = (int, float, bool, type(None))
_PLAIN_TYPES = frozenset({int, float, bool})
_LIMITS: dict[Kind, int | None] = {**BOUNDS, "ours": None}


def shown(view: _M, mask: Masker) -> _M:
    """`view` with every string redacted by `mask` and then bounded by its field's kind; the
    same object when nothing changes."""
    strings: list[str] = []
    over = _survey(view, strings)
    masked = bool(strings) and mask.found("\0".join(strings))
    if not (masked or over):
        return view
    rebuilt: _M = _Rebuild(mask if masked else None).value(view, "name")
    return rebuilt


def _survey(root: BaseModel, strings: list[str]) -> bool:
    """Collect every string of `root` into `strings`; whether one is over its kind's bound.
    Objects reachable twice (a why shared by thousands of rows) are visited once. (The view
    of 3,000 rows holds ~30,000 strings: a tight loop, strings handled where they are met.)"""
    seen: set[int] = set()
    over = False
    limits = _LIMITS
    stack: list[tuple[Any, Kind]] = [(root, "name")]
    push, pop, add = stack.append, stack.pop, strings.append
    while stack:
        item, kind = pop()
        key = id(item)
        if key in seen:
            continue
        seen.add(key)
        if isinstance(item, BaseModel):
            kinds = field_kinds(type(item))
            for name, value in item.__dict__.items():
                if type(value) is str:
                    add(value)
                    bound = limits[kinds[name]]
                    if bound is not None and len(value) > bound:
                        over = True
                elif value is not None and type(value) not in _PLAIN_TYPES:
                    push((value, kinds[name]))
            continue
        values = (item.values() if isinstance(item, dict)
                  else item if isinstance(item, tuple | list) else ())
        bound = limits[kind]
        for value in values:
            if type(value) is str:
                add(value)
                if bound is not None and len(value) > bound:
                    over = True
            elif value is not None and type(value) not in _PLAIN_TYPES:
                push((value, kind))
    return over


class _Rebuild:
    """The view with each string redacted and bounded; objects shared before stay shared (the
    renderer keys its per-row work by object)."""

    def __init__(self, mask: Callable[[str], str] | None) -> None:
        self.mask = mask
        self.memo: dict[int, tuple[Any, Any]] = {}  # id → (the object, its rebuilt value)

    def value(self, item: Any, kind: Kind) -> Any:
        if type(item) is str:
            text = self.mask(item) if self.mask is not None else item
            return bounded(kind, text)
        if isinstance(item, _PLAIN):
            return item
        hit = self.memo.get(id(item))
        if hit is not None and hit[0] is item:
            return hit[1]
        new = self._rebuilt(item, kind)
        self.memo[id(item)] = (item, new)
        return new

    def _rebuilt(self, item: Any, kind: Kind) -> Any:
        if isinstance(item, BaseModel):
            update = {}
            kinds = field_kinds(type(item))
            for name, value in item.__dict__.items():
                new = self.value(value, kinds[name])
                if new is not value and new != value:
                    update[name] = new
            return item.model_copy(update=update) if update else item
        if isinstance(item, tuple | list):
            values = [self.value(v, kind) for v in item]
            if all(n is v for n, v in zip(values, item, strict=True)):
                return item
            return type(item)(values) if isinstance(item, list) else tuple(values)
        if isinstance(item, dict):
            mapped = {k: self.value(v, kind) for k, v in item.items()}
            return item if all(mapped[k] is v for k, v in item.items()) else mapped
        return item
