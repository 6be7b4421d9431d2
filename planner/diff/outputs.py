"""What changed in the outputs: recommendations per workload and model, and candidates that
begin or stop fitting or being eligible, with the deltas of the cost the ranking compares.
"""

from __future__ import annotations

from typing import Any, cast

import pandas as pd

from planner.diff.changes import Change, RecommendationChange, key_part, key_parts
from planner.diff.values import (
    WINNER_FIELDS,
    WINNER_SHOWN,
    as_plain,
    format_value,
    is_missing,
    same,
)
from planner.plan.columns import EP_KEY, PD_KEY, PF_KEY, PP_KEY, PX_KEY
from planner.plan.labels import option_label
from planner.plan.recommend import COST, recommendations
from planner.plan.tables import ALL_KEYS, TP_KEY


def _winners(table: pd.DataFrame) -> dict[tuple[str, str], tuple[dict[str, Any] | None, str]]:
    if table.empty:
        return {}
    picks = recommendations(table)
    shown = _records(table, WINNER_SHOWN)
    out: dict[tuple[str, str], tuple[dict[str, Any] | None, str]] = {}
    for _, row in picks.iterrows():
        winner = None
        if not is_missing(row["hardware"]):
            winner = {k: as_plain(row[k]) for k in WINNER_FIELDS}
            details = shown.get(_key(row), {})
            winner |= {k: as_plain(details.get(k)) for k in WINNER_SHOWN}
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


#: The results columns compared candidate by candidate: whether it fits, may be recommended,
#: the cost the ranking compares and its devices; and those that explain a change (why it does
#: not fit or is not eligible; how its devices are got, owning's and renting's costs).
COMPARED = (
    "fits",
    "eligible",
    COST,
    "devices_needed",
    "status",
    "fit_reason",
    "acquisition",
    "tco_usd",
    "rent_usd",
)


def candidate_keys(table: pd.DataFrame) -> list[str]:
    """``hardware/model/precision/workload/tensor_parallel`` for every row (:func:`key_part`),
    then ``/ep8`` for an expert-parallel layout, ``/pp2`` for a pipeline of two stages and
    ``/pd`` for disaggregated pools (``/pd-b200-180gb`` with the prompts on another device, then
    ``/prefill-ep32`` or ``/prefill-tp8`` where the prefill replicas are of their own size), so a
    run from before the layouts existed keys its rows as it did."""
    keys = ["/".join(map(key_part, row)) for row in table[ALL_KEYS].itertuples(index=False)]
    columns = [EP_KEY, PD_KEY, PP_KEY, PF_KEY, "hardware", PX_KEY]
    layouts = table.reindex(columns=columns).to_numpy()
    suffixes = [_suffix(row) for row in layouts]
    return [key + suffix for key, suffix in zip(keys, suffixes, strict=True)]


def candidate_label(key: str) -> str:
    """A candidate key for people: ``chat × llama-3.1-8b: h100-sxm-80gb (TP 1) · fp8``."""
    parts = key_parts(key)
    option: dict[str, Any] = dict(zip(ALL_KEYS, parts[: len(ALL_KEYS)], strict=True))
    for part in parts[len(ALL_KEYS) :]:
        if part.startswith(("prefill-ep", "prefill-tp")):
            option[PX_KEY] = int(part[len("prefill-ep") :])
        elif part == "pd" or part.startswith("pd-"):
            option[PD_KEY] = 1
            option[PF_KEY] = part[3:]
        elif part.startswith("ep"):
            option[EP_KEY] = int(part[2:])
        elif part.startswith("pp"):
            option[PP_KEY] = int(part[2:])
    return option_label(option)


def _key(row: pd.Series) -> str:
    """The candidate key of a row (:func:`candidate_keys`)."""
    ids = [int(row[k]) if k == TP_KEY else row[k] for k in ALL_KEYS]
    return "/".join(map(key_part, ids)) + _suffix(
        (row.get(EP_KEY), row.get(PD_KEY), row.get(PP_KEY), row.get(PF_KEY), row["hardware"],
         row.get(PX_KEY))
    )  # fmt: skip


def _suffix(layout: Any) -> str:
    """A key's layout parts, ``/ep8``, ``/pp2`` and ``/pd`` (``/pd-`` and the prefill pool's
    device where that is another, then ``/prefill-ep32`` or ``/prefill-tp8`` for prefill
    replicas of their own size); none for one pool of tensor-parallel replicas (or a row from
    before the layouts, which has none of the columns)."""
    expert, pools, stages, prefill, hardware, own = layout
    parts = ""
    if not is_missing(expert) and int(expert) > 1:
        parts += f"/ep{int(expert)}"
    if not is_missing(stages) and int(stages) > 1:
        parts += f"/pp{int(stages)}"
    if not is_missing(pools) and int(pools) > 0:
        other = isinstance(prefill, str) and prefill not in ("", hardware)
        parts += f"/pd-{key_part(prefill)}" if other else "/pd"
        if not is_missing(own) and int(own) > 0:
            kind = "ep" if not is_missing(expert) and int(expert) > 1 else "tp"
            parts += f"/prefill-{kind}{int(own)}"
    return parts


def _records(table: pd.DataFrame, names: tuple[str, ...] = COMPARED) -> dict[str, dict[str, Any]]:
    """The columns ``names`` (those the table has) of every candidate, by candidate key."""
    columns = [c for c in names if c in table.columns]
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


def _acquisition_note(prior: dict[str, Any], row: dict[str, Any]) -> str:
    """Where how a candidate's devices are got flips between runs, the flip and what owning
    (``tco_usd``) and renting (``rent_usd``) cost in the new run: ``buy → rent: owning 21,314
    USD, renting 13,140 USD``; else empty."""
    before, after = prior.get("acquisition"), row.get("acquisition")
    if any(is_missing(way) or not way for way in (before, after)) or before == after:
        return ""
    owning, renting = (
        format_value(row.get("tco_usd"), "USD"),
        format_value(row.get("rent_usd"), "USD"),
    )
    return f"{before} → {after}: owning {owning}, renting {renting}"


def _cost_changes(key: str, prior: dict[str, Any], row: dict[str, Any]) -> list[Change]:
    """The cost the ranking compares and the devices of a candidate in both runs, where they
    differ; the note says why a cost is missing or how the devices' getting flipped."""
    changes = []
    for column, unit in ((COST, "USD"), ("devices_needed", "devices")):
        if column not in row or column not in prior or same(prior[column], row[column]):
            continue
        old_value, new_value = as_plain(prior[column]), as_plain(row[column])
        note = ""
        if new_value is None:
            note = _why(row)
        elif old_value is None:
            note = f"before: {_why(prior)}"
        elif column == COST:
            note = _acquisition_note(prior, row)
        changes.append(Change("cost_changed", key, column, old_value, new_value, unit, note))
    return changes


def candidate_changes(old: pd.DataFrame, new: pd.DataFrame) -> list[Change]:
    """Candidates added or removed; for those in both, fit, eligibility and cost changes (the cost
    the ranking compares, :data:`planner.plan.recommend.COST`)."""
    before, after = _records(old), _records(new)
    changes: list[Change] = []
    flips = (
        ("fits", "newly_fits", "stops_fitting", "fit_reason"),
        ("eligible", "newly_eligible", "stops_eligible", "status"),
    )
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
        changes += _cost_changes(key, prior, row)
    for key, row in before.items():
        if key not in after:
            changes.append(Change("candidate_removed", key, note=_status(row)))
    return changes
