"""The recommendation: for each workload and model, the cheapest option that serves it.

An option is eligible when a replica holds a maximum-length sequence, every latency target is
met, and its cost is known (:func:`planner.model.cost.eligible`). The winner has the lowest cost
over the period, owned or rented whichever is cheaper (:func:`planner.model.cost.cost_usd`); ties
go to fewer devices, then the one that keeps its safety margin to the latency targets and the KV
capacity (the smaller :func:`planner.model.margins.margin_shortfall`), then lower inter-token
latency, then the earlier row of the plan. Every other
option is listed with why it lost: memory, latency, a missing price, or how it compares with the
winner.

:func:`rank` is the one place this rule is computed; :func:`ranked`, :func:`recommendations`, the
workbook's Summary (whose formulas spell the same rule and the same words), the report, the diff
and the choice of what to simulate all read it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from planner.plan.tables import ALL_KEYS

GROUP = ["workload", "model"]
#: The cost the ranking compares: the devices over the period, owned or rented.
COST = "cost_usd"
ORDER = [COST, "devices_needed", "margin_shortfall", "itl_load_s"]

#: A missing ranking key ranks after every number (as pandas sorts NaN last); the workbook
#: writes the same number into its formulas.
MISSING_LAST = 1e300

#: Why the winner won, and why another eligible option lost when it costs no more: the words
#: of the key that decided (the workbook's Summary writes the same words).
WINS = "lowest cost over the period"
RECOMMENDED = f"recommended: {WINS}"
TIE_WORDS = {
    "devices_needed": "same cost; more devices",
    "margin_shortfall": "same cost and devices; less margin to a target or to memory",
    "itl_load_s": "same cost, devices and margin; higher inter-token latency",
}
TIED = "tied on cost, devices, margin and latency: later in the Plan"
#: The tie-breaks in words, for the reader's text (report, workbook notes, terminal).
TIE_BREAKS = "fewer devices, then the larger safety margin, then lower inter-token latency"


def half_up(value: float) -> int:
    """Rounding to a whole number half away from zero, as the spreadsheet's TEXT does."""
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


#: The words around the extra cost of an option that lost on cost (the workbook's Summary puts
#: its own TEXT() of the number between them).
COST_BEFORE, COST_AFTER = "cost: ", " USD more over the period"


def cost_words(extra_usd: float) -> str:
    """Why an option lost on cost: ``cost: 822 USD more over the period``."""
    return f"{COST_BEFORE}{half_up(extra_usd):,}{COST_AFTER}"


def rank(table: pd.DataFrame) -> pd.DataFrame:
    """For every candidate, its ``rank`` in its workload × model group (1 = recommended; 0 when
    not eligible) and the table position of its group's winner (``winner``, -1 when none).

    One stable sort of the eligible rows by group, then :data:`ORDER` (a missing key last), then
    plan position: no loop over groups, so 20,000 candidates rank in milliseconds.
    """
    n = len(table)
    eligible = table["eligible"].astype(bool).to_numpy() if n else np.zeros(0, bool)
    positions = np.flatnonzero(eligible)
    groups = table.groupby(GROUP, sort=False).ngroup().to_numpy() if n else np.zeros(0, int)
    keys = [sort_key(table, k)[positions] for k in reversed(ORDER)]
    order = positions[np.lexsort((positions, *keys, groups[positions]))]
    in_group = groups[order]
    first = np.r_[True, in_group[1:] != in_group[:-1]] if len(order) else np.zeros(0, bool)
    index = np.arange(len(order))
    start = np.maximum.accumulate(np.where(first, index, 0)) if len(order) else index
    ranks = np.zeros(n, dtype=np.int64)
    ranks[order] = index - start + 1
    winner = np.full(n, -1, dtype=np.int64)
    winner[order] = order[start]
    return pd.DataFrame({"rank": ranks, "winner": winner}, index=table.index)


def sort_key(table: pd.DataFrame, column: str) -> np.ndarray:
    """A ranking key of ``table`` as floats, a missing value as :data:`MISSING_LAST`."""
    values = pd.to_numeric(table[column], errors="coerce").to_numpy(dtype=float)
    return np.where(np.isnan(values), MISSING_LAST, values)


def verdicts(table: pd.DataFrame, ranks: pd.DataFrame) -> np.ndarray:
    """Why each candidate won or lost: :data:`RECOMMENDED`; how an eligible option compares
    with its group's winner (cost, then the tie-breaking keys); else its ``status``."""
    out = table["status"].astype(object).to_numpy(copy=True) if "status" in table else None
    if out is None:
        out = np.full(len(table), "", dtype=object)
    rank_of, winner = ranks["rank"].to_numpy(), ranks["winner"].to_numpy()
    out[rank_of == 1] = RECOMMENDED
    losers = np.flatnonzero(rank_of > 1)
    if not len(losers):
        return out
    decided = np.zeros(len(losers), dtype=bool)
    words = np.full(len(losers), TIED, dtype=object)
    for k in ORDER:
        key = sort_key(table, k)
        mine, best = key[losers], key[winner[losers]]
        now = ~decided & (mine > best)
        if k == ORDER[0]:
            words[now] = [cost_words(m - b) for m, b in zip(mine[now], best[now], strict=True)]
        else:
            words[now] = TIE_WORDS.get(k, f"higher {k}")
        decided |= now
    out[losers] = words
    return out


def ranked(table: pd.DataFrame, ranks: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every candidate with its ``rank`` in its workload × model group (1 = recommended; NA when
    not eligible) and a ``verdict`` saying why it won or lost; ``ranks`` is :func:`rank` of
    ``table`` where the caller has it."""
    ranks = rank(table) if ranks is None else ranks
    out = table.copy()
    out["rank"] = pd.array(ranks["rank"].to_numpy(), dtype="Int64")
    out.loc[ranks["rank"].to_numpy() == 0, "rank"] = pd.NA
    out["verdict"] = verdicts(table, ranks)
    return out


#: What :func:`recommendations` gives of each group's winner and runner-up.
SHOWN = ("hardware", "precision", "tensor_parallel", "devices_needed", COST, "advice")
WINNER_DETAILS = (
    "replicas_needed",
    "nodes_needed",
    "capital_usd",
    "opex_usd_per_month",
    "tco_usd",
    "cloud_usd_per_month",
    "rent_usd",
    "break_even_month",
    "api_usd",
    "api_break_even_requests_per_s",
    "owned_usd_per_million_tokens",
    "itl_load_s",
    "ttft_load_s",
    "e2e_load_s",
    "task_load_s",
)


def recommendations(table: pd.DataFrame, ranks: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per workload × model, in plan order: the winner (or none) and the runner-up,
    with the group's number of options and of eligible ones; ``why_none`` counts the reasons
    where nothing is eligible (``ranks``: :func:`rank` of ``table`` where the caller has it)."""
    if table.empty:
        return pd.DataFrame(columns=[*GROUP, "options", "eligible"])
    ranks = rank(table) if ranks is None else ranks
    grouped = table.groupby(GROUP, sort=False)
    frame = grouped.size().rename("options").reset_index()
    frame["eligible"] = grouped["eligible"].sum().astype(int).to_numpy()
    keys = pd.MultiIndex.from_frame(frame[GROUP])
    for prefix, place, columns in (("", 1, SHOWN + WINNER_DETAILS), ("runner_up_", 2, SHOWN)):
        picked = table[ranks["rank"].to_numpy() == place]
        picked = picked.set_index(GROUP).reindex(keys)
        for column in columns:
            if column in picked:
                frame[f"{prefix}{column}"] = picked[column].to_numpy()
    none = frame["eligible"] == 0
    if none.any() and "status" in table:
        why = {
            key: why_none(group)
            for key, group in grouped
            if not group["eligible"].astype(bool).any()
        }
        frame["why_none"] = [why.get(k, np.nan) for k in keys]
    for column in ("hardware", "precision", "runner_up_hardware", "runner_up_precision"):
        if column in frame:
            frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
    return frame


#: How a reason opens when no option of a model holds even one replica in memory.
FITS_NOTHING = "fits no candidate"


def why_none(group: pd.DataFrame) -> str:
    """Why none of a workload × model group's options is eligible: each reason with its count
    (``2 × cost: price missing``); where no option holds even one replica in memory, said first
    (:data:`FITS_NOTHING`), and where the weights alone outgrow every device at every
    tensor-parallel size tried, said so with the closest option's figures [GiB]."""
    reasons = group["status"].value_counts()
    counted = "; ".join(f"{n} × {reason}" for reason, n in reasons.items() if n)
    if "replica_fits" not in group or group["replica_fits"].astype(bool).any():
        return counted
    weights = pd.to_numeric(group["weight_gib_per_device"], errors="coerce")
    memory = pd.to_numeric(group["memory_gib"], errors="coerce")
    if not (weights > memory).all():
        return f"{FITS_NOTHING} (not one replica fits in memory): {counted}"
    closest = group.iloc[int((weights / memory).to_numpy().argmin())]
    sizes = ", ".join(str(int(t)) for t in sorted(group["tensor_parallel"].unique()))
    return (
        f"{FITS_NOTHING}: its weights alone exceed every device's memory at every "
        f"tensor-parallel size tried ({sizes}); the closest, {closest['hardware']} at TP "
        f"{int(closest['tensor_parallel'])} with {closest['precision']}, needs "
        f"{float(closest['weight_gib_per_device']):,.1f} GiB of weights per device in "
        f"{float(closest['memory_gib']):,.1f} GiB"
    )


def closing_line(table: pd.DataFrame) -> str:
    """What a run ends with: candidates evaluated, eligible options, and recommendations (one
    per workload × model that has an eligible option), naming the groups left without one."""
    eligible = table["eligible"].astype(bool)
    served = eligible.groupby([table[g] for g in GROUP], sort=False).any()
    line = (
        f"{len(table):,} candidates evaluated; {int(eligible.sum()):,} eligible; "
        f"{int(served.sum())} recommendations (workload × model)"
    )
    if not served.all():
        line += f", {int((~served).sum())} with no eligible option"
    return line + "."


__all__ = [
    "ALL_KEYS",
    "closing_line",
    "rank",
    "ranked",
    "recommendations",
    "verdicts",
    "why_none",
]
