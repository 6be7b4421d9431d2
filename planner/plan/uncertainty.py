"""The plan over uncertain inputs: Monte Carlo draws of every quantity a catalog gives as a
distribution, and the bands they leave on each option.

Each draw sets every uncertain input (:mod:`planner.catalog.distributions`) to one value, all
drawn together, and evaluates the whole plan in closed form (:func:`planner.plan.sweep.evaluate`)
and ranks it (:func:`planner.plan.recommend.rank`), so a draw's winner is chosen by the same rule
as the plan's. Over N draws each option gets the 10th, 50th and 90th percentiles of its latency,
devices and cost, the share of draws in which it meets every target, and the share in which it
is the cheapest option that does; each workload × model gets the bands of its winner's devices
and cost: the P50 and the P90 purchase.

Draw i is drawn from its own generator, seeded (seed, i), so the draws are the same whichever
executor evaluates them and however they are split into units of work. Percentiles are
empirical (the smallest drawn value with at least that share of draws at or below it), so a P90
device count is a count some draw needed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from planner.catalog import Catalog
from planner.catalog.distributions import Distribution
from planner.executor import Executor, InProcess
from planner.plan.columns import PLAN_KEYS
from planner.plan.recommend import GROUP, rank
from planner.plan.sweep import evaluate
from planner.progress import Progress

#: The percentiles reported, as shares.
PERCENTILES = (0.10, 0.50, 0.90)

#: The figures whose bands each option gets, with their units.
FIGURES = {
    "devices_needed": "devices",
    "cost_usd": "USD",
    "ttft_load_s": "s",
    "itl_load_s": "s",
    "e2e_load_s": "s",
}

#: What a draw keeps of each candidate: the ranking's inputs and the figures.
COLUMNS = sorted({"eligible", "margin_shortfall", *FIGURES})

#: Draws per unit of work sent to an executor.
DRAWS_PER_UNIT = 20

#: The most draws a run takes. A share of draws (P10, P90, how often an option wins) is known
#: within ±0.6 percentage points at 10,000 draws (two standard errors of a share of 0.1:
#: 2·√(0.1 × 0.9 / 10,000) = 0.006); more draws change no figure the report shows and only
#: add time (each draw evaluates the whole plan).
MAX_DRAWS = 10_000


@dataclass(frozen=True)
class Input:
    """One uncertain quantity of a catalog: the entry that holds it and its distribution."""

    section: str
    entry: str | None
    path: tuple[str, ...]
    distribution: Distribution
    whole: bool = False  # a count (users): each draw rounded to a whole number, at least 1

    @property
    def label(self) -> str:
        """Where the quantity is, e.g. ``hardware h100-sxm-80gb: price.purchase_usd``."""
        where = self.section if self.entry is None else f"{self.section} {self.entry}"
        return f"{where}: {'.'.join(self.path)}"


def uncertain_inputs(catalog: Catalog) -> list[Input]:
    """Every quantity the catalog gives as a distribution, in catalog order: the assumptions'
    own and their engine's speculative acceptance rate, each device's prices, each workload's
    own, its arrival's and its prefix's measured hit ratio."""
    assumptions = catalog.assumptions
    found = [Input("assumptions", None, (name,), d) for name, d in assumptions.uncertain.items()]
    speculative = None if assumptions.engine is None else assumptions.engine.speculative
    if speculative is not None:
        found += [
            Input("assumptions", None, ("engine", "speculative", n), d)
            for n, d in speculative.uncertain.items()
        ]
    for h in catalog.hardware:
        found += [Input("hardware", h.id, ("price", n), d) for n, d in h.price.uncertain.items()]
    for w in catalog.workloads:
        found += [Input("workloads", w.id, (n,), d, whole=True) for n, d in w.uncertain.items()]
        if w.arrival is not None:
            found += [
                Input("workloads", w.id, ("arrival", n), d) for n, d in w.arrival.uncertain.items()
            ]
        if w.prefix is not None:
            found += [
                Input("workloads", w.id, ("prefix", n), d) for n, d in w.prefix.uncertain.items()
            ]
    return found


def draw_values(inputs: Sequence[Input], seed: int, draw: int) -> list[float]:
    """Draw ``draw``'s value of every input, from the generator seeded (seed, draw)."""
    rng = np.random.default_rng([seed, draw])
    values = [float(i.distribution.draw(rng, 1)[0]) for i in inputs]
    return [max(1, round(v)) if i.whole else v for i, v in zip(inputs, values, strict=True)]


def _set(record: Any, path: tuple[str, ...], value: Any) -> Any:
    """``record`` with the field at ``path`` set to ``value`` (records are immutable)."""
    head, *rest = path
    new = value if not rest else _set(getattr(record, head), tuple(rest), value)
    return record.model_copy(update={head: new})


def with_values(catalog: Catalog, inputs: Sequence[Input], values: Sequence[float]) -> Catalog:
    """The catalog with each input set to its value."""
    assumptions = catalog.assumptions
    hardware = {h.id: h for h in catalog.hardware}
    workloads = {w.id: w for w in catalog.workloads}
    for i, value in zip(inputs, values, strict=True):
        if i.section == "assumptions":
            assumptions = _set(assumptions, i.path, value)
        elif i.section == "hardware":
            hardware[i.entry] = _set(hardware[i.entry], i.path, value)  # type: ignore[index]
        else:
            workloads[i.entry] = _set(workloads[i.entry], i.path, value)  # type: ignore[index]
    return replace(
        catalog,
        assumptions=assumptions,
        hardware=tuple(hardware.values()),
        workloads=tuple(workloads.values()),
    )


def _evaluate_draws(
    shared: tuple[Catalog, list[Input], int], item: tuple[int, int]
) -> pd.DataFrame:
    """A unit of work: draws ``start`` to ``stop`` − 1, each candidate's figures, whether it is
    eligible and whether it is its group's winner."""
    catalog, inputs, seed = shared
    start, stop = item
    frames = []
    for draw in range(start, stop):
        drawn = with_values(catalog, inputs, draw_values(inputs, seed, draw))
        table = evaluate(drawn, columns=COLUMNS).table
        frame = table[[*PLAN_KEYS, *COLUMNS]].copy()
        frame["eligible"] = frame["eligible"].astype(bool)
        frame["cheapest"] = rank(table)["rank"].to_numpy() == 1
        frame["draw"] = draw
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def seconds_per_draw(catalog: Catalog, tries: int = 2) -> float:
    """How long one draw of ``catalog``'s plan takes here: the quickest of ``tries`` draws
    (the first pays for warming up), each evaluated and ranked as every draw is."""
    shared = (catalog, uncertain_inputs(catalog), catalog.assumptions.seed)
    times = []
    for draw in range(max(tries, 1)):
        start = time.perf_counter()
        _evaluate_draws(shared, (draw, draw + 1))
        times.append(time.perf_counter() - start)
    return min(times)


def draws_seconds(per_draw_s: float, draws: int, workers: int) -> float:
    """The time ``draws`` draws take at ``per_draw_s`` [s] each on ``workers`` processes, as
    many as their units of :data:`DRAWS_PER_UNIT` draws can keep busy [s]."""
    busy = max(1, min(workers, math.ceil(draws / DRAWS_PER_UNIT)))
    return per_draw_s * draws / busy


@dataclass(frozen=True)
class Bands:
    """The plan's spread over the draws."""

    draws: int
    inputs: list[Input]
    options: pd.DataFrame
    """Per option (the five keys): ``<figure>_p10/_p50/_p90`` and ``meets_share`` (draws in
    which it is eligible) and ``cheapest_share`` (draws in which it wins its group)."""
    purchases: pd.DataFrame
    """Per workload × model: ``served_share`` (draws with a winner) and the bands of the
    winner's ``devices_needed`` and ``cost_usd``."""
    winners: pd.DataFrame
    """Each draw's winner of each workload × model: the keys, ``draw``, devices and cost."""
    simulated: pd.DataFrame | None = None
    """Per line of the ask, its model's winner at the draw of the P90 cost, simulated under
    that draw's inputs (:func:`simulate_p90`); None until simulated."""


def percentile_position(n: int, p: float) -> int:
    """Where the empirical ``p`` quantile of ``n`` sorted values sits: the ⌈p × n⌉-th smallest
    (the smallest value with at least that share of the values at or below it), 0-based."""
    return max(math.ceil(p * n) - 1, 0)


def _quantile(values: pd.Series, p: float) -> float:
    finite = values.to_numpy(dtype=float)
    finite = np.sort(finite[np.isfinite(finite)])
    return float(finite[percentile_position(len(finite), p)]) if len(finite) else float("nan")


def _bands(frame: pd.DataFrame, keys: list[str], figures: Sequence[str]) -> pd.DataFrame:
    grouped = frame.groupby(keys, sort=False)
    out = {}
    for name in figures:
        for p in PERCENTILES:
            out[f"{name}_p{round(p * 100)}"] = grouped[name].agg(partial(_quantile, p=p))
    return pd.DataFrame(out)


def summarise(frame: pd.DataFrame, draws: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The option, purchase and winner tables of :class:`Bands` from every draw's rows."""
    options = _bands(frame, PLAN_KEYS, list(FIGURES))
    grouped = frame.groupby(PLAN_KEYS, sort=False)
    options["meets_share"] = grouped["eligible"].sum() / draws
    options["cheapest_share"] = grouped["cheapest"].sum() / draws
    winners = frame.loc[frame["cheapest"], [*PLAN_KEYS, "draw", "devices_needed", "cost_usd"]]
    purchases = _bands(winners, GROUP, ["devices_needed", "cost_usd"])
    purchases["served_share"] = winners.groupby(GROUP, sort=False)["draw"].nunique() / draws
    return options.reset_index(), purchases.reset_index(), winners.reset_index(drop=True)


def monte_carlo(
    catalog: Catalog,
    draws: int,
    executor: Executor | None = None,
    progress: Progress | None = None,
) -> Bands:
    """The plan evaluated over ``draws`` draws of its uncertain inputs, seeded by the
    assumptions' ``seed``; ``progress`` is told of the draws done (stage ``"drawing"``)."""
    if draws < 1:
        raise ValueError("draws must be at least 1")
    inputs = uncertain_inputs(catalog)
    units = [(s, min(s + DRAWS_PER_UNIT, draws)) for s in range(0, draws, DRAWS_PER_UNIT)]
    shared = (catalog, inputs, catalog.assumptions.seed)
    tell: Progress = progress or (lambda stage, done, total: None)
    tell("drawing", 0, draws)
    frames = []
    for (_, stop), frame in zip(
        units, (executor or InProcess()).map(_evaluate_draws, shared, units), strict=True
    ):
        frames.append(frame)
        tell("drawing", stop, draws)
    return Bands(draws, inputs, *summarise(pd.concat(frames, ignore_index=True), draws))


def p90_draw(winners: pd.DataFrame) -> pd.Series:
    """Of one group's winners, the one at the 90th percentile of cost, as the bands take it
    (:func:`percentile_position`: the ⌈0.9 × n⌉-th cheapest), ties by draw."""
    ordered = winners.sort_values(["cost_usd", "draw"], kind="stable")
    return ordered.iloc[percentile_position(len(ordered), 0.9)]


#: Sizes rows of the plan by simulation: ``(catalog, rows, executor)`` → the rows' key columns
#: then the simulation's sizing columns (:func:`planner.serving.sizing.simulate_rows`).
Simulator = Callable[[Catalog, pd.DataFrame, Executor], pd.DataFrame]


def p90_pick(
    catalog: Catalog, bands: Bands, workload: str, model: str
) -> tuple[pd.Series, Catalog, pd.DataFrame] | None:
    """Of (``workload``, ``model``)'s winners, the one at the draw of the P90 cost
    (:func:`p90_draw`), the catalog under that draw's inputs, and the winner's row of the plan
    evaluated there; None where the group never had a winner."""
    mine = bands.winners[
        (bands.winners["workload"] == workload) & (bands.winners["model"] == model)
    ]
    if mine.empty:
        return None
    pick = p90_draw(mine)
    values = draw_values(bands.inputs, catalog.assumptions.seed, int(pick["draw"]))
    drawn = with_values(catalog, bands.inputs, values)
    keys = pd.DataFrame([pick[PLAN_KEYS].to_dict()], columns=PLAN_KEYS)
    return pick, drawn, evaluate(drawn, rows=keys).table


def simulate_p90(
    catalog: Catalog,
    bands: Bands,
    groups: Sequence[tuple[str, str]],
    simulate: Simulator,
    executor: Executor | None = None,
) -> pd.DataFrame:
    """For each (workload, model) of ``groups``, its winner at the draw of the P90 cost,
    evaluated and sized by ``simulate`` under that draw's inputs: the key columns, ``draw``,
    ``devices_needed`` (closed form) and the simulation's sizing columns. A purchase sized at
    the P90 is then checked as the plan's options are: by simulation, not the closed form."""
    found = []
    for workload, model in groups:
        picked = p90_pick(catalog, bands, workload, model)
        if picked is None:
            continue
        pick, drawn, row = picked
        sized = simulate(drawn, row, executor or InProcess())
        found.append({"draw": int(pick["draw"]), "cost_usd": float(pick["cost_usd"]),
                      "devices_needed": float(row["devices_needed"].iloc[0]),
                      **sized.iloc[0].to_dict()})  # fmt: skip
    return pd.DataFrame(found)


def leading_options(bands: Bands, least_share: float = 0.0) -> pd.DataFrame:
    """The options that were the cheapest in more than ``least_share`` of the draws, most
    often first within each workload × model."""
    options = bands.options[bands.options["cheapest_share"] > least_share]
    return options.sort_values(
        [*GROUP, "cheapest_share"], ascending=[True, True, False], kind="stable"
    )
