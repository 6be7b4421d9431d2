"""Which options of the plan to simulate: choices among the results table's rows.

The serving simulation (:mod:`planner.serving.sizing`) is too slow to run on every row, so
these functions pick the rows worth it, by the recommendation's own rule
(:func:`planner.plan.recommend.rank`): :func:`select_candidates` before any simulation,
:func:`unsimulated_leaders` and :func:`contenders` after a round, among the ranked options.
:func:`closest` is the one rule for which option comes closest where none is eligible: what the
simulation tries first and what the report shows.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from planner.plan import recommend
from planner.plan.columns import EP_KEY, LAYOUT_DEFAULTS, PD_KEY, PP_KEY

__all__ = [
    "closest",
    "contenders",
    "deciding",
    "screened",
    "select_candidates",
    "simulable",
    "unsimulated_leaders",
]


def _target_misses(table: pd.DataFrame) -> pd.Series:
    """How many closed-form latency targets each row misses [-]."""
    cols = ["meets_ttft_target", "meets_itl_target", "meets_e2e_target", "meets_task_target"]
    return (~table[cols].astype(bool)).sum(axis=1)


def closest(table: pd.DataFrame, per_group: int = 1) -> pd.DataFrame:
    """Per workload × model group of ``table``, the ``per_group`` options that come closest to
    eligible, for a group where none is: among those where a replica holds a maximum-length
    sequence (``replica_fits``), the fewest closed-form latency targets missed, then the
    recommendation's own order (:data:`recommend.ORDER`: cost, devices, margin, inter-token
    latency; a missing figure last), then plan order. A group where no replica fits has none.
    Groups in the order they first appear, closest first within each; keeps the index and
    columns."""
    near = table[table["replica_fits"].astype(bool).to_numpy()]
    if near.empty:
        return near
    keys = [recommend.sort_key(near, k) for k in reversed(recommend.ORDER)]
    groups = table.groupby(recommend.GROUP, sort=False).ngroup().to_numpy()
    groups = groups[table["replica_fits"].astype(bool).to_numpy()]
    order = np.lexsort((np.arange(len(near)), *keys, _target_misses(near).to_numpy(), groups))
    picked = near.iloc[order]
    return picked[picked.groupby(recommend.GROUP, sort=False).cumcount().to_numpy() < per_group]


def select_candidates(table: pd.DataFrame, per_group: int = 3) -> pd.DataFrame:
    """The rows worth simulating: per workload × model, the ``per_group`` best rows that are
    eligible in closed form (``meets_targets`` with a known ``cost_usd``: what ``eligible`` says
    before any simulation), ranked by the recommendation's own rule (:func:`recommend.rank`);
    where none is, the ``per_group`` :func:`closest`. Keeps the table's index and columns.
    """
    ok = table["meets_targets"].astype(bool) & table[recommend.COST].notna()
    ranks = recommend.rank(table.assign(eligible=ok))["rank"].to_numpy()
    groups = table.groupby(recommend.GROUP, sort=False).ngroup().to_numpy()
    leading = np.flatnonzero((ranks >= 1) & (ranks <= per_group))
    leading = leading[np.lexsort((ranks[leading], groups[leading]))]  # by group, then rank
    picked = [table.iloc[leading]]
    served = ok.groupby([table[g] for g in recommend.GROUP], sort=False).transform("any")
    picked.append(closest(table[~served.to_numpy(dtype=bool)], per_group))
    return pd.concat(picked)


def deciding(table: pd.DataFrame, named: Mapping[str, str]) -> np.ndarray:
    """Rows whose workload × model group can decide the ask: of a workload deployment.yaml
    names a model for (``named``: workload → model), that model's; of any other workload,
    every model's (its cheapest qualifying model serves it)."""
    model = table["workload"].astype(str).map(dict(named))
    return (model.isna() | (model == table["model"].astype(str))).to_numpy(dtype=bool)


def screened(rows: pd.DataFrame, named: Mapping[str, str], others: int = 1) -> pd.DataFrame:
    """``rows`` (:func:`select_candidates`: each group's options in rank order) less those of
    the groups that cannot decide the ask (:func:`deciding`) beyond their first ``others``: a
    model the team did not name for a workload is sized by simulation at its leading option,
    as the report's comparison of models shows it, not searched as the named model is."""
    place = rows.groupby(recommend.GROUP, sort=False).cumcount().to_numpy()
    return rows[deciding(rows, named) | (place < others)]


def simulable(table: pd.DataFrame) -> pd.Series:
    """Rows the serving simulation can size: one pool of tensor-parallel replicas, or a
    disaggregated prefill pool and decode pool serving open-loop tasks of one request
    (:mod:`planner.serving.pools`), a pipeline of several stages, one pool, or an
    expert-parallel replica, in one pool or two (each as one of its schedulers,
    :mod:`planner.serving.configs`); an expert-parallel replica whose all-to-all is hidden under
    its arithmetic (:func:`planner.model.parallel.expert_alltoall_hidden`), and disaggregated
    pools under a closed loop or tasks of several requests, are planned in closed form only."""

    def column(name: str, default: float) -> pd.Series:
        if name not in table:
            return pd.Series(default, index=table.index)
        return pd.to_numeric(table[name], errors="coerce").fillna(default)

    open_single = (column("concurrency", 0) <= 0) & (column("requests_per_task", 1) <= 1)
    pools = column(PD_KEY, LAYOUT_DEFAULTS[PD_KEY]) != LAYOUT_DEFAULTS[PD_KEY]
    experts = column(EP_KEY, LAYOUT_DEFAULTS[EP_KEY]) != LAYOUT_DEFAULTS[EP_KEY]
    hidden = column("expert_alltoall_hidden", 0) > 0
    stages = column(PP_KEY, LAYOUT_DEFAULTS[PP_KEY]) != LAYOUT_DEFAULTS[PP_KEY]
    ranks = ~experts | ~(hidden | stages)
    return ranks & (~pools | open_single)


def unsimulated_leaders(ranks: pd.DataFrame, per_group: int) -> pd.DataFrame:
    """Per group whose first-ranked simulable option was never simulated: the unsimulated
    options ranked above its best simulated one, at most ``per_group``."""
    ranked = ranks[ranks["rank"].notna() & simulable(ranks)]
    if ranked.empty:
        return ranks.iloc[:0]
    group = ranked.groupby(["workload", "model"], sort=False).ngroup().to_numpy()
    order = np.lexsort((ranked["rank"].to_numpy(dtype=float), group))  # by group, then rank
    ordered, group = ranked.iloc[order], group[order]
    simulated = pd.Series(ordered["simulated"].astype(bool).to_numpy(dtype=int))
    above = simulated.groupby(group).cumsum().to_numpy() == 0  # no simulated option yet
    place = simulated.groupby(group).cumcount().to_numpy()
    return ordered[above & (place < per_group)]


def contenders(ranks: pd.DataFrame) -> pd.DataFrame:
    """Options that could still win but were never simulated: ruled out only by a closed-form
    latency figure (which plans every replica full, so it can be pessimistic), cheaper than
    their group's winner, and not already beyond their TTFT target at no load (``ttft_s`` is a
    floor: a proven miss). The simulation then decides; it starts with the best case, so an
    option that misses even one request at a time costs one short run."""
    cost = pd.to_numeric(ranks[recommend.COST], errors="coerce")
    groups = [ranks[g] for g in recommend.GROUP]
    best = cost.where(ranks["rank"] == 1).groupby(groups, observed=True).transform("min")
    target = pd.to_numeric(ranks["ttft_p95_target_s"], errors="coerce")
    reachable = target.isna() | (pd.to_numeric(ranks["ttft_s"], errors="coerce") <= target)
    could = (
        (ranks["ruled_out_by"].astype(str) == "latency")
        & ~ranks["simulated"].astype(bool)
        & (cost < best)
        & reachable
        & simulable(ranks)
    )
    return ranks[could.to_numpy(dtype=bool)]
