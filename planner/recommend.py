"""The recommendation: for each workload and model, the cheapest option that serves it.

An option is eligible when a replica holds a maximum-length sequence, every latency target is
met, and its cost is known (:func:`planner.cost.eligible`). The winner has the lowest total cost
of ownership; ties go to fewer devices, then lower inter-token latency. Every other option is
listed with why it lost: memory, latency, a missing price, or its extra cost.
"""

from __future__ import annotations

import pandas as pd

from .tables import ALL_KEYS

GROUP = ["workload", "model"]
ORDER = ["tco_usd", "devices_needed", "itl_s"]


def ranked(table: pd.DataFrame) -> pd.DataFrame:
    """Every candidate with its ``rank`` in its workload × model group (1 = recommended) and a
    ``verdict`` saying why it won or lost. Ineligible candidates have no rank."""
    out = table.copy()
    out["rank"] = pd.NA
    out["verdict"] = out["status"]
    for _, group in out.groupby(GROUP, sort=False):
        ok = group[group["eligible"].astype(bool)].sort_values(ORDER, kind="stable")
        if ok.empty:
            continue
        best = ok.iloc[0]
        for position, index in enumerate(ok.index, start=1):
            out.loc[index, "rank"] = position
            if position == 1:
                out.loc[index, "verdict"] = "recommended: lowest total cost of ownership"
            else:
                extra = out.loc[index, "tco_usd"] - best["tco_usd"]
                out.loc[index, "verdict"] = f"cost: {extra:,.0f} USD more over the period"
    out["rank"] = out["rank"].astype("Int64")
    return out


def recommendations(table: pd.DataFrame) -> pd.DataFrame:
    """One row per workload × model: the winner (or none) and the runner-up."""
    rows = []
    ranks = ranked(table)
    for (workload, model), group in ranks.groupby(GROUP, sort=False):
        ordered = group[group["rank"].notna()].sort_values("rank")
        winner = ordered.iloc[0] if len(ordered) else None
        runner = ordered.iloc[1] if len(ordered) > 1 else None
        row = {
            "workload": workload,
            "model": model,
            "options": len(group),
            "eligible": len(ordered),
        }
        for prefix, pick in (("", winner), ("runner_up_", runner)):
            for key in ("hardware", "precision", "tensor_parallel", "devices_needed", "tco_usd"):
                row[f"{prefix}{key}"] = pick[key] if pick is not None else None
        if winner is not None:
            for key in (
                "replicas_needed",
                "nodes_needed",
                "capital_usd",
                "opex_usd_per_month",
                "cloud_usd_per_month",
                "break_even_month",
                "owned_usd_per_million_tokens",
                "itl_s",
                "ttft_s",
                "e2e_s",
                "task_s",
            ):
                row[key] = winner[key]
        else:
            reasons = group["status"].value_counts()
            row["why_none"] = "; ".join(f"{n} × {reason}" for reason, n in reasons.items())
        rows.append(row)
    return pd.DataFrame(rows)


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


def candidate_label(row: pd.Series) -> str:
    """A short human label of an option: ``4 × h100-sxm-80gb (TP 2) · fp8``."""
    return (
        f"{int(row['devices_needed']) if pd.notna(row['devices_needed']) else '?'} × "
        f"{row['hardware']} (TP {int(row['tensor_parallel'])}) · {row['precision']}"
    )


__all__ = ["ALL_KEYS", "candidate_label", "closing_line", "ranked", "recommendations"]
