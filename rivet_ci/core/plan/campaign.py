"""The campaign view over exports planned together (spec §6).

Orders exports, groups them into waves, warns about shared-source collisions, and flags
`isolate_on_source` as the real rivet (0.32.2) does: on the heavy members of every source group
it warns about — one with at least two heavy exports, and also one with three or more members of
which only one is heavy. The heavy-cost warning counts the heavy members and lists every member.
The product page (`source-aware-prioritization`) is narrower (isolation only with two heavy
members, the warning naming only them); docs/compatibility.md says where. Score, class and wave
never change here.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from operator import attrgetter
from typing import Literal

from rivet_ci.core.common.fast_model import maker
from rivet_ci.core.plan.reasons import ISOLATION_KIND
from rivet_ci.core.plan.recommendation import (
    HEAVY_COST,
    SHARED_SOURCE_MESSAGE,
    Campaign,
    ExportRecommendation,
    Reason,
    Wave,
)


def campaign_order(recommendations: Sequence[ExportRecommendation]) -> list[ExportRecommendation]:
    """Score descending, then name ascending: a total order (names are unique).

    Two stable sorts: by name, then by score (a descending sort keeps equal scores in name
    order)."""
    by_name = sorted(recommendations, key=_NAME)
    return sorted(by_name, key=_SCORE, reverse=True)


_NAME = attrgetter("export_name")
_SCORE = attrgetter("priority_score")


def group_members(
    recommendations: Sequence[ExportRecommendation],
) -> dict[str, list[ExportRecommendation]]:
    """Members of each source group, in config order."""
    groups: dict[str, list[ExportRecommendation]] = {}
    for rec in recommendations:
        group = rec.source_group
        if group is not None:
            members = groups.get(group)
            if members is None:
                groups[group] = [rec]
            else:
                members.append(rec)
    return groups


# (kind, heavy members, every member): `heavy` when two or more members are heavy, else
# `shared` when the group has three or more members.
GroupPressure = tuple[Literal["heavy", "shared"], tuple[str, ...], tuple[str, ...]]


def group_pressure(members: Sequence[ExportRecommendation]) -> GroupPressure | None:
    """What a group warns about, or None when it is not warned about (config order)."""
    if len(members) < 2:
        return None
    heavy = tuple(m.export_name for m in members if m.cost_class in HEAVY_COST)
    names = tuple(m.export_name for m in members)
    if len(heavy) >= 2:
        return "heavy", heavy, names
    if len(members) >= 3:
        return "shared", heavy, names
    return None


def pressure_message(group: str, pressure: GroupPressure) -> str:
    kind, heavy, names = pressure
    if kind == "heavy":  # rivet 0.32.2: the heavy count, then every member
        return (f"Source group '{group}': {len(heavy)} heavy-cost exports ({', '.join(names)}) "
                f"— avoid running them concurrently; stagger or isolate.")
    return (f"Source group '{group}': {len(names)} exports share this source — stagger "
            f"large runs to reduce replica pressure.")


def source_group_warning(group: str, members: Sequence[ExportRecommendation]) -> str | None:
    """The campaign warning for one group, or None (members in config order)."""
    pressure = group_pressure(members)
    return None if pressure is None else pressure_message(group, pressure)


@functools.lru_cache(maxsize=1024)  # frozen: one per group serves every config of the run
def isolation_reason(group: str) -> Reason:
    return _REASON.make_full({"kind": ISOLATION_KIND,
                              "message": SHARED_SOURCE_MESSAGE.format(group=group),
                              "values": ()})


def build_campaign(
    recommendations: Sequence[ExportRecommendation],
) -> tuple[list[ExportRecommendation], Campaign]:
    """Apply isolation flags and build the campaign view.

    Returns the recommendations (config order, isolation applied) and the campaign.
    """
    groups = group_members(recommendations)
    isolated: dict[str, str] = {}
    pressures: dict[str, GroupPressure] = {}
    for group, members in groups.items():
        pressure = group_pressure(members)
        if pressure is not None:
            pressures[group] = pressure
            for name in pressure[1]:  # the heavy members of every warned group
                isolated[name] = group
    reasons = {group: isolation_reason(group) for group in set(isolated.values())}
    # An isolated export's recommendation: its fields (every one, in declaration order), two
    # replaced in place (a dict display keeps an overwritten key where it was).
    updated = [
        _RECOMMENDATION.make_full({
            "export_name": rec.export_name, "source_group": rec.source_group,
            "priority_score": rec.priority_score, "priority_class": rec.priority_class,
            "cost_class": rec.cost_class, "risk_class": rec.risk_class,
            "recommended_wave": rec.recommended_wave, "isolate_on_source": True,
            "reasons": (*rec.reasons, reasons[isolated[rec.export_name]]),
        }) if rec.export_name in isolated else rec
        for rec in recommendations
    ]
    ordered = campaign_order(updated)
    waves: dict[int, list[str]] = {}
    for rec in ordered:
        names = waves.get(rec.recommended_wave)
        if names is None:
            waves[rec.recommended_wave] = [rec.export_name]
        else:
            names.append(rec.export_name)
    warnings = sorted(pressure_message(g, pressure) for g, pressure in pressures.items())
    by_wave = tuple(_WAVE.make_full({"wave": n, "exports": tuple(names)})
                    for n, names in sorted(waves.items()))
    campaign = _CAMPAIGN.make_full({
        "ordered_exports": tuple(r.export_name for r in ordered), "waves": by_wave,
        "source_group_warnings": tuple(warnings),
    })
    return updated, campaign


_RECOMMENDATION = maker(ExportRecommendation)
_REASON = maker(Reason)
_WAVE = maker(Wave)
_CAMPAIGN = maker(Campaign)
