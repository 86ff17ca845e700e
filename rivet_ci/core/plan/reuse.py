"""What a pull request's change can affect, and when a config's plan can be reused (pure).

A config file's plan (`plan_config`) depends on nothing but that file's text, its path, the
values of the `${NAME}` placeholders it uses and the facts: never on another file (the campaign
is built per file; scores do not depend on the source group's other members). So

* a file whose content (git blob id) is the same at base and head, at the same path, has ONE
  plan, shared by both sides: the change cannot affect it, and `core.diff.diff_plans` compares
  nothing inside it (:func:`shared_plans`);
* the only cross-file view, the repo-wide `source_group` warnings (`core.diff`), is recomputed
  from the per-file plans, so a change moving exports between groups or files comes out exactly
  as a full plan;
* a plan can be stored and reused across runs under :func:`plan_key`: a digest of everything
  the plan depends on — the code that plans (`fingerprint`: rivet-ci's version and its planning
  code), the path, the blob id, the placeholder values and the facts.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from rivet_ci.core.common.fast_model import replace
from rivet_ci.core.config.loader import placeholder_names
from rivet_ci.core.facts.models import FactsFile
from rivet_ci.core.plan.planner import ConfigPlan, Plan

# Bump when the key's recipe or the stored entry's shape changes.
PLAN_KEY_FORMAT = 1


def placeholder_values(text: str, environ: Mapping[str, str]) -> dict[str, str | None]:
    """The value of every `${NAME}` the text uses (None: unset), and of the names those values
    use in turn (`query:` is substituted a second time, so a value may bring in a name)."""
    values: dict[str, str | None] = {}
    pending = sorted(placeholder_names(text)) if "${" in text else []
    while pending:
        name = pending.pop()
        if name in values:
            continue
        value = environ.get(name)
        values[name] = value
        if value is not None and "${" in value:
            pending.extend(placeholder_names(value) - values.keys())
    return values


def plan_key(*, fingerprint: str, path: str, blob: str, text: str,
             environ: Mapping[str, str], facts_digest: str) -> str:
    """The key a config's plan is stored under: sha256 over everything the plan depends on."""
    recipe = json.dumps([PLAN_KEY_FORMAT, fingerprint, path, blob,
                         sorted(placeholder_values(text, environ).items()), facts_digest],
                        separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(recipe.encode("ascii")).hexdigest()


def unchanged_files(base: Plan, head: Plan, renames: Mapping[str, str]) -> frozenset[str]:
    """Paths whose plan is the same on both sides (`shared_plans`, or equal) and untouched by a
    rename: nothing inside them can differ."""
    shared = shared_plans(base.configs, head.configs, renames)
    touched = set(renames) | set(renames.values())
    before = {c.path: c for c in base.configs}
    equal = {c.path for c in head.configs
             if c.path not in shared and c.path not in touched
             and (b := before.get(c.path)) is not None and b == c}
    return shared | equal if equal else shared


def affected_groups(base: Plan, head: Plan, unchanged: frozenset[str]) -> frozenset[str]:
    """The source groups of every export, on either side, of the files the change touches."""
    return frozenset(
        group for plan in (base, head) for c in plan.configs if c.path not in unchanged
        for e in c.exports if (group := e.recommendation.source_group) is not None)


@dataclass(frozen=True)
class ReviewScope:
    """What a pull request's review covers: every export of the files the change touches and
    every export, in any file, in a source group one of those is in (on either side)."""

    base: Plan
    head: Plan
    groups: frozenset[str]
    # Whether anything planned was left out (a file, or an export outside `groups`).
    narrowed: bool


def review_scope(base: Plan, head: Plan, renames: Mapping[str, str]) -> ReviewScope:
    """Both sides' plans cut down to what the change can affect.

    A file the change cannot affect (`unchanged_files`) keeps only its exports in an affected
    group (its campaign and problems kept); one with none of them is left out. What the diff of
    the result shows for the affected groups — their repo-wide and per-file warnings, with every
    member in every file — and for the changed files is exactly what the diff of the full plans
    shows. Configs that are left out need not have been planned at all: the result is the same
    for any `base`/`head` holding at least the configs it keeps."""
    return scope_of(base, head, unchanged_files(base, head, renames))


def scope_of(base: Plan, head: Plan, unchanged: frozenset[str]) -> ReviewScope:
    """`review_scope` for the files `unchanged` names as the ones the change cannot affect (a
    plan document records them: `diff.unchanged_files`, so a plan read back is cut the same)."""
    groups = affected_groups(base, head, unchanged)
    cut: dict[int, ConfigPlan | None] = {}  # one cut per plan object: shared plans stay shared
    narrowed = False

    def keep(config: ConfigPlan) -> ConfigPlan | None:
        nonlocal narrowed
        if config.path not in unchanged:
            return config
        if id(config) not in cut:
            kept = tuple(e for e in config.exports if e.recommendation.source_group in groups)
            if len(kept) < len(config.exports) or not kept:
                narrowed = True
            cut[id(config)] = (None if not kept else config if len(kept) == len(config.exports)
                               else replace(config, {"exports": kept}))
        return cut[id(config)]

    def side(plan: Plan) -> Plan:
        kept = [keep(c) for c in plan.configs]
        if all(k is c for k, c in zip(kept, plan.configs, strict=True)):
            return plan
        return replace(plan, {"configs": tuple(k for k in kept if k is not None)})

    new_base, new_head = side(base), side(head)
    return ReviewScope(base=new_base, head=new_head, groups=groups, narrowed=narrowed)


def review_counts(base: Plan, head: Plan, matched: tuple[int, int] | None,
                  narrowed: bool) -> dict[str, int]:
    """What a review's verdict is based on: config files and exports it covers on each side
    (`base`, `head`: the review's plans); when it left something out (`narrowed`), also how
    many config files matched on each side (`base-files`, `head-files`)."""
    counts = {"base-configs": len(base.configs),
              "base-exports": sum(len(c.exports) for c in base.configs),
              "head-configs": len(head.configs),
              "head-exports": sum(len(c.exports) for c in head.configs)}
    if narrowed and matched is not None:
        counts["base-files"], counts["head-files"] = matched
    return counts


# What a group name must not hold for `may_hold_group` to look for it as written: a space or
# a line break (YAML folds lines into spaces) or a quote (`''` in a single-quoted scalar).
_SPELLED_OTHERWISE = re.compile(r"[\s'\"]")


def may_hold_group(text: str, groups: Collection[str]) -> bool:
    """False only when the config `text` provably has no export in one of `groups` — so it
    need not be loaded to know it is outside a review (`review_scope`).

    A `source_group` value is a YAML string scalar, and its characters appear in the text as
    they are, unless the text can spell them another way: a `${NAME}` placeholder (substituted
    over the whole raw text before parsing), an escape in a double-quoted scalar (`\\x5f`,
    `\\u0031`, an escaped line break), a folded line (a line break read as a space), or `''`
    for a quote in a single-quoted scalar. So the answer is True (load it) when the text has
    `${` or a backslash, when a group's name is empty or holds whitespace or a quote, or when a
    name occurs in the text at all (a comment or another key naming it is enough)."""
    if not groups:
        return False
    if "${" in text or "\\" in text:
        return True
    return any(not name or _SPELLED_OTHERWISE.search(name) or name in text for name in groups)


def shared_plans(base: Iterable[ConfigPlan], head: Iterable[ConfigPlan],
                 renames: Mapping[str, str]) -> frozenset[str]:
    """Paths whose plan is the same object on both sides and untouched by a rename: files the
    change cannot affect (the caller shares a plan only between identical blobs)."""
    before = {c.path: c for c in base}
    touched = set(renames) | set(renames.values())
    return frozenset(c.path for c in head
                     if before.get(c.path) is c and c.path not in touched)


def summary_plan(plan: ConfigPlan) -> ConfigPlan:
    """A plan reduced to what the diff and the comment read: per export its recommendation and
    line, plus the file's campaign and problems (no signals, history, notes, or the config as
    written — those only go into a plan document). Used for files the change cannot affect
    when no plan document is written."""
    dropped = {"signals": None, "history": None, "notes": (), "config": None,
               "preflight_error": None}
    return replace(plan, {"source": None, "exports": tuple(
        replace(e, dropped) for e in plan.exports)})


def facts_digest(facts: FactsFile | None) -> str:
    """A digest of the facts every plan is made against (`none` without facts)."""
    if facts is None:
        return "none"
    return hashlib.sha256(facts.model_dump_json().encode("utf-8")).hexdigest()
