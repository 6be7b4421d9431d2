"""The deployment plan: which model serves each workload, on what, and the one ask it adds up to.

Each workload is served by one model: the one ``deployment.yaml`` names, else the model whose
recommended option ranks first by the recommendation's own rule (cost, then fewer devices, then the
larger safety margin, then lower inter-token latency; then the earlier model in the catalog).
Models whose options cost the same are named as a tie. Its recommended option
(:mod:`planner.plan.recommend`) is then bought, rented or replaced by the model's hosted API,
whichever costs least over the period (the ``advice`` metric). The ask adds the lines up: devices
and nodes to buy or rent, capital, the monthly bill, the cost over the period, the power owned
devices draw, and the alternatives a signer may ask about.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from planner.catalog import Catalog
from planner.model.cost import API, BUY, RENT
from planner.plan.recommend import COST, ORDER, rank, why_none


def _number(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return math.nan
    return number


def advice(row: pd.Series | dict[str, Any]) -> str:
    """What to do about an option, in one word: the metric :func:`planner.model.cost.advice`
    (:data:`API`, :data:`RENT` or :data:`BUY`)."""
    return str(row["advice"]) or BUY


@dataclass(frozen=True)
class Line:
    """One workload of the plan: the model that serves it, its recommended option (a row of the
    results table), the advice, and what it costs under that advice."""

    workload: str
    model: str
    row: pd.Series
    advice: str
    chosen_by: str  # "deployment.yaml" or "cheapest"
    ties: tuple[str, ...] = ()  # other models whose recommended option costs the same

    @property
    def devices(self) -> float:
        return 0.0 if self.advice == API else _number(self.row["devices_needed"])

    @property
    def devices_upper(self) -> float:
        """Devices at 90 % confidence: the count if every step is as slow as the top of the
        latency band allows (``devices_upper``)."""
        return 0.0 if self.advice == API else _number(self.row["devices_upper"])

    @property
    def nodes(self) -> float:
        return 0.0 if self.advice == API else _number(self.row["nodes_needed"])

    @property
    def capital_usd(self) -> float:
        return _number(self.row["capital_usd"]) if self.advice == BUY else 0.0

    @property
    def monthly_usd(self) -> float:
        """The monthly bill: running owned devices, the rent, or the API [USD/month]."""
        column = {
            BUY: "opex_usd_per_month",
            RENT: "cloud_usd_per_month",
            API: "api_usd_per_month",
        }[self.advice]
        return _number(self.row[column])

    @property
    def period_usd(self) -> float:
        """Cost over the amortisation period under the advice [USD]."""
        return _number(self.row[{BUY: "tco_usd", RENT: "rent_usd", API: "api_usd"}[self.advice]])

    @property
    def energy_kwh_per_month(self) -> float:
        """Facility energy of owned devices per month [kWh] (none for rented devices or APIs)."""
        return _number(self.row["energy_kwh_per_month"]) if self.advice == BUY else 0.0


@dataclass(frozen=True)
class Ask:
    """The plan's lines and their totals, with the workloads nothing serves and why."""

    lines: list[Line]
    unserved: list[str] = field(default_factory=list)
    months: int = 36
    hours_per_month: float = 730.0
    #: why each unserved workload is (by its id): the model deployment.yaml pins and why that
    #: model has no eligible option, or why no model has one
    reasons: dict[str, str] = field(default_factory=dict)

    @property
    def facility_kw(self) -> float:
        """Average facility power of the owned devices: energy per month ÷ hours [kW]."""
        return self.total("energy_kwh_per_month") / self.hours_per_month

    def total(self, name: str) -> float:
        """The sum of a :class:`Line` figure over the lines (0 for none)."""
        return float(sum(getattr(line, name) for line in self.lines))

    def alternative(self, column: str) -> tuple[float, int]:
        """The sum of ``column`` over the lines that have it, and how many have it (the cost of
        renting everything, ``rent_usd``, or of owning everything, ``tco_usd``...)."""
        values = [_number(line.row[column]) for line in self.lines]
        known = [v for v in values if math.isfinite(v)]
        return float(sum(known)), len(known)


def _requested(catalog: Catalog) -> dict[str, str]:
    return {line.workload: line.model for line in catalog.deployment}


def ask(catalog: Catalog, table: pd.DataFrame, ranks: pd.DataFrame | None = None) -> Ask:
    """The deployment plan of ``catalog`` over the evaluated ``table`` (``ranks``: its
    :func:`~planner.plan.recommend.rank` where the caller has it)."""
    ranks = rank(table) if ranks is None else ranks
    winners = table[ranks["rank"].to_numpy() == 1]
    requested = _requested(catalog)
    model_order = {m.id: i for i, m in enumerate(catalog.models)}
    lines, unserved = [], []
    reasons: dict[str, str] = {}
    for workload in catalog.workloads:
        options = winners[winners["workload"] == workload.id]
        if workload.id in requested:
            chosen = options[options["model"] == requested[workload.id]]
            how = "deployment.yaml"
        else:
            order = options.copy()
            order["_model"] = order["model"].map(model_order)
            chosen = order.sort_values([*ORDER, "_model"], kind="stable").head(1)
            how = "cheapest"
        if chosen.empty:
            unserved.append(workload.id)
            pinned = requested.get(workload.id)
            reasons[workload.id] = unserved_reason(table, workload.id, pinned, options)
            continue
        row = chosen.iloc[0]
        ties = tuple(
            str(m)
            for m in options.loc[options[COST] == row[COST], "model"]
            if m != row["model"] and how == "cheapest"
        )
        lines.append(Line(workload.id, str(row["model"]), row, advice(row), how, ties))
    a = catalog.assumptions
    return Ask(lines, unserved, a.amortisation_months, a.hours_per_month, reasons)


def unserved_reason(
    table: pd.DataFrame, workload: str, pinned: str | None, winners: pd.DataFrame
) -> str:
    """Why ``workload`` is served by nothing: the model deployment.yaml pins (``pinned``) and
    why none of its options is eligible (:func:`~planner.plan.recommend.why_none`: it may fit
    no candidate at all), naming the models that would serve it were the pin removed
    (``winners``: the workload's recommended options); else why no option of any model is
    eligible, each reason with its count."""
    rows = table[table["workload"] == workload]
    if pinned is None:
        why = why_none(rows) if len(rows) else ""
        return "no model has an eligible option" + (f" ({why})" if why else "")
    mine = rows[rows["model"] == pinned]
    if mine.empty:
        why = f"deployment.yaml pins {pinned}, which no candidate of this plan evaluates"
    else:
        why = f"deployment.yaml pins {pinned}, which has no eligible option: {why_none(mine)}"
    others = list(dict.fromkeys(str(m) for m in winners["model"]))
    if others:
        why += f"; {', '.join(others)} would serve it were the pin removed"
    return why
