"""What changed in the outputs: recommendations per workload and model, and candidates that
begin or stop fitting or being eligible, with their cost deltas.
"""

from __future__ import annotations

from typing import Any, cast

import pandas as pd

from planner.diff.changes import Change, RecommendationChange, key_part, key_parts
from planner.diff.values import WINNER_FIELDS, as_plain, is_missing, same
from planner.plan.recommend import recommendations
from planner.plan.tables import ALL_KEYS


def _winners(table: pd.DataFrame) -> dict[tuple[str, str], tuple[dict[str, Any] | None, str]]:
    if table.empty:
        return {}
    picks = recommendations(table)
    out: dict[tuple[str, str], tuple[dict[str, Any] | None, str]] = {}
    for _, row in picks.iterrows():
        winner = None
        if not is_missing(row["hardware"]):
            winner = {k: as_plain(row[k]) for k in WINNER_FIELDS}
        why = row.get("why_none", "")
        out[(row["workload"], row["model"])] = (winner, "" if is_missing(why) else str(why))
    return out


def recommendation_changes(old: pd.DataFrame, new: pd.DataFrame) -> list[RecommendationChange]:
    """Each workload × model whose recommended option (or its cost) differs between runs: those
    with another option first, then those whose option only costs differently."""
    before, after = _winners(old), _winners(new)
    changes = []
    for group in [*after, *(g for g in before if g not in after)]:
        old_pick, old_why = before.get(group, (None, ""))
        new_pick, new_why = after.get(group, (None, ""))
        change = RecommendationChange(
            group[0],
            group[1],
            old_pick,
            new_pick,
            old_present=group in before,
            new_present=group in after,
            old_why=old_why,
            new_why=new_why,
        )
        if change.changes():
            changes.append(change)
    return sorted(changes, key=lambda c: not c.winner_changed)


#: The results columns compared candidate by candidate (and those that explain a change).
COMPARED = ("fits", "eligible", "tco_usd", "devices_needed", "status", "fit_reason")


def candidate_keys(table: pd.DataFrame) -> list[str]:
    """``hardware/model/precision/workload/tensor_parallel`` for every row (:func:`key_part`)."""
    return ["/".join(map(key_part, row)) for row in table[ALL_KEYS].itertuples(index=False)]


def candidate_label(key: str) -> str:
    """A candidate key for people: ``chat × llama-3.1-8b: h100-sxm-80gb (TP 1) · fp8``."""
    hardware, model, precision, workload, tp = key_parts(key)
    return f"{workload} × {model}: {hardware} (TP {tp}) · {precision}"


def _records(table: pd.DataFrame) -> dict[str, dict[str, Any]]:
    columns = [c for c in COMPARED if c in table.columns]
    # The results columns are named by strings, so each record is keyed by them.
    records = cast("list[dict[str, Any]]", table[columns].to_dict(orient="records"))
    return dict(zip(candidate_keys(table), records, strict=True))


def _status(row: dict[str, Any]) -> str:
    """Why a candidate can or cannot be recommended (``eligible``, ``memory: ...``)."""
    for column in ("status", "fit_reason"):
        if not is_missing(row.get(column)):
            return str(row[column])
    return ""


def _why(row: dict[str, Any]) -> str:
    """Why a candidate is not eligible; empty when it is."""
    status = _status(row)
    return "" if status == "eligible" else status


def candidate_changes(old: pd.DataFrame, new: pd.DataFrame) -> list[Change]:
    """Candidates added or removed; for those in both, fit, eligibility and cost changes."""
    before, after = _records(old), _records(new)
    changes: list[Change] = []
    flips = (
        ("fits", "newly_fits", "stops_fitting", "fit_reason"),
        ("eligible", "newly_eligible", "stops_eligible", "status"),
    )
    costs = (("tco_usd", "USD"), ("devices_needed", "devices"))
    for key, row in after.items():
        prior = before.get(key)
        if prior is None:
            changes.append(Change("candidate_added", key, note=_status(row)))
            continue
        for column, up, down, reason in flips:
            if column in row and column in prior and bool(prior[column]) != bool(row[column]):
                now = bool(row[column])
                note = "" if now or is_missing(row.get(reason)) else str(row[reason])
                changes.append(Change(up if now else down, key, column, not now, now, note=note))
        for column, unit in costs:
            if column in row and column in prior and not same(prior[column], row[column]):
                old_value, new_value = as_plain(prior[column]), as_plain(row[column])
                note = ""
                if new_value is None:
                    note = _why(row)
                elif old_value is None:
                    note = f"before: {_why(prior)}"
                changes.append(
                    Change("cost_changed", key, column, old_value, new_value, unit, note)
                )
    for key, row in before.items():
        if key not in after:
            changes.append(Change("candidate_removed", key, note=_status(row)))
    return changes
