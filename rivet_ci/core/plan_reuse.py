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
from collections.abc import Iterable, Mapping

from rivet_ci.core.config_loader import placeholder_names
from rivet_ci.core.facts import FactsFile
from rivet_ci.core.fast_model import replace
from rivet_ci.core.planner import ConfigPlan

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
