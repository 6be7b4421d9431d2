"""The ask's workloads as one fleet, from the plan's results: each workload's options (its
eligible rows on each device type), each device type's costs over the period from the plan's
own cost metrics, each workload's day, API and spare nodes from its catalog entry; and the
fleet the integer program of :mod:`planner.plan.fleet` chooses among them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from planner.catalog import Catalog, LengthDistribution, Workload
from planner.model.need import pool_replicas_at
from planner.model.nodes import sits_on_nodes
from planner.plan.columns import PROMPTS_KEY, PX_KEY
from planner.plan.fleet import DECODE_POOL, FLAT, PREFILL_POOL, Demand, Fleet, NodeType, Option
from planner.plan.fleet_program import solve
from planner.plan.labels import short_label
from planner.plan.lengths import lengths
from planner.plan.recommend import COST
from planner.plan.schedule import (
    NodeCosts,
    node_costs,
    replica_inputs,
    replicas_at,
    traffic_factors,
)
from planner.plan.sweep import evaluate

#: The options kept for each workload and device type, fewest devices first: enough for the
#: optimiser to mix them, few enough that the program stays small.
OPTIONS_PER_TYPE = 3

#: The device types each workload is offered on, cheapest first by its cheapest eligible option
#: alone: a catalog of thousands of types gives a program of a few dozen options, not thousands
#: (a type dearer alone than these four may still be cheaper shared; the fleet does not see it).
TYPES_PER_WORKLOAD = 4


def one_device_type(table: pd.DataFrame) -> pd.Series:
    """The rows whose replicas are all alike, of their hardware and devices: every row but a
    disaggregated one's whose prefill pool runs on another device or on replicas of another
    size, which the fleet takes as two options, a pool each (:func:`fleet_options`)."""
    alike = pd.Series(True, index=table.index)
    if "separate_prefill_hardware" in table:
        alike &= ~table["separate_prefill_hardware"].astype(bool)
    if "prefill_pool_device_offset" in table:
        alike &= pd.to_numeric(table["prefill_pool_device_offset"]).fillna(0).to_numpy() == 0
    return alike


def served_rows(table: pd.DataFrame, models: dict[str, str]) -> pd.DataFrame:
    """The eligible rows of each workload of ``models`` (workload → the model that serves it)
    that hold a replica."""
    rows = table[table["eligible"].astype(bool)]
    served = rows["workload"].astype(str).map(models)
    rows = rows[served.to_numpy() == rows["model"].astype(str).to_numpy()]
    return rows[rows["replicas_planned"] > 0]


def daily_profile(catalog: Catalog, workload: str) -> tuple[float, ...]:
    """Each hour's traffic as a share of the busiest hour's: the forecast's ``daily_profile``,
    else flat."""
    forecast = catalog.get("workloads", workload).forecast
    if forecast is None or forecast.daily_profile is None:
        return FLAT
    return tuple(float(share) for share in forecast.daily_profile)


def fleet_options(
    catalog: Catalog,
    table: pd.DataFrame,
    models: dict[str, str],
    growth: dict[str, float] | None = None,
) -> list[Option]:
    """The options of each workload of ``models``: on each of its :data:`TYPES_PER_WORKLOAD`
    device types whose cheapest eligible row alone costs least, for each replica size, the
    eligible row needing fewest replicas (the cheapest of those: another of the same size and
    more replicas can never serve a share more cheaply), the :data:`OPTIONS_PER_TYPE` smallest
    sizes (of each prefill pool's own size and device apart: :func:`pool_options`), with the
    replicas each hour of the workload's day needs alone, its traffic that day ``growth`` ×
    today's (1 where not given)."""
    rows = served_rows(table, models)
    cheapest = rows.sort_values(COST, kind="stable").drop_duplicates(["workload", "hardware"])
    leading = cheapest.groupby("workload", sort=False).head(TYPES_PER_WORKLOAD)
    keys = pd.MultiIndex.from_frame(leading[["workload", "hardware"]])
    rows = rows[pd.MultiIndex.from_frame(rows[["workload", "hardware"]]).isin(keys)]
    # pools of their own size or device are a layout of their own, its sizes kept apart
    pools = [k for k in (PX_KEY, PROMPTS_KEY) if k in rows]
    order = ["workload", "hardware", *pools, "tensor_parallel", "replicas_planned", COST]
    rows = rows.sort_values(order, kind="stable")
    rows = rows.drop_duplicates(["workload", "hardware", *pools, "tensor_parallel"])
    kept = rows.groupby(["workload", "hardware", *pools], sort=False).head(OPTIONS_PER_TYPE)
    alike = one_device_type(kept)
    options = []
    for (_, r), one in zip(kept.iterrows(), alike, strict=True):
        profile = daily_profile(catalog, str(r["workload"]))
        factor = (growth or {}).get(str(r["workload"]), 1.0)
        hourly: tuple[int, ...] = ()
        if profile != FLAT or factor != 1:
            hourly = tuple(replicas_at(r, factor * share) for share in profile)
        option = Option(
            str(r["workload"]),
            str(r["hardware"]),
            int(r["tensor_parallel"]),
            max(hourly) if hourly else int(r["replicas_planned"]),
            short_label(r, devices=False),
            hourly,
            inputs=tuple(replica_inputs(r).items()),
        )
        options += [option] if one else pool_options(option, r, profile, factor)
    return options


def pool_options(option: Option, row: Any, profile: Sequence[float], factor: float) -> list[Option]:
    """A disaggregated ``option`` whose pools are replicas of two sizes or two device types
    (``row``: its results row) as an option per pool, the decode pool's carrying the load and
    the prefill pool's keeping pace with it (:attr:`planner.plan.fleet.Option.pool`), each
    with the replicas each hour needs alone (:func:`planner.model.need.pool_replicas_at`)."""
    inputs = dict(option.inputs)
    found = []
    for pool, hardware, devices in (
        (DECODE_POOL, option.hardware, option.devices),
        (PREFILL_POOL, str(row["prompts_hardware"]), int(row["prefill_hw_tensor_parallel"])),
    ):
        hourly = tuple(int(pool_replicas_at(pool, factor * share, **inputs)) for share in profile)
        found.append(replace(
            option, hardware=hardware, devices=devices, replicas_alone=max(hourly),
            label=f"{option.label}, {pool} pool", hourly=() if profile == FLAT else hourly,
            pool=pool, pair=str(row["candidate"]),
        ))  # fmt: skip
    return found


def demands(
    catalog: Catalog,
    table: pd.DataFrame,
    models: dict[str, str],
    growth: dict[str, float] | None = None,
) -> list[Demand]:
    """Each workload's day, the bill of its model's hosted API over the period for the
    busiest hour's traffic all day (``api_usd``; inf without an offer) and the spare nodes its
    forecast asks for (N+k)."""
    rows = served_rows(table, models)
    found = []
    for workload in models:
        bills = pd.to_numeric(rows.loc[rows["workload"] == workload, "api_usd"], errors="coerce")
        bills = bills[np.isfinite(bills)]
        bill = float(bills.min()) * (growth or {}).get(workload, 1.0) if len(bills) else math.inf
        forecast = catalog.get("workloads", workload).forecast
        spare = forecast.spare_nodes if forecast is not None else 0
        found.append(Demand(workload, daily_profile(catalog, workload), bill, spare))
    return found


def _owned_usd(costs: NodeCosts) -> float:
    """Owning one node over the amortisation period: capital and running [USD]."""
    return costs.capital_usd + costs.running_usd_per_month * costs.amortisation_months


def split_costs(catalog: Catalog, row: Any, devices: int) -> tuple[NodeCosts, NodeCosts]:
    """One device's costs and a node's own beyond its devices (overhead), from the plan's own
    cost metrics over one node of ``devices`` of the row's devices: a device is a full node's
    less one of a device fewer (in a node of one device, all of it), the overhead the rest;
    a device is rented at a node's rent ÷ its devices, the overhead never alone."""
    full = node_costs(catalog, row, devices)
    months = full.amortisation_months
    device = full
    if devices > 1:
        less = node_costs(catalog, row, devices - 1)
        device = NodeCosts(
            full.capital_usd - less.capital_usd,
            full.running_usd_per_month - less.running_usd_per_month,
            full.rent_usd_per_month / devices,
            months,
        )
    overhead = NodeCosts(
        full.capital_usd - devices * device.capital_usd,
        full.running_usd_per_month - devices * device.running_usd_per_month,
        0.0,
        months,
    )
    return device, overhead


def rack_devices(catalog: Catalog, row: Any) -> int:
    """Devices a node of the row's hardware holds: its ``devices_per_node``, or as many as a
    rack's power budget takes (``rack_power`` ÷ board power, as
    :func:`planner.model.facility.nodes_per_rack` allows a node) [devices]."""
    devices = int(row["devices_per_node"])
    rack, power = catalog.assumptions.rack_power, float(row["power_w"])
    if rack is not None and math.isfinite(power) and power > 0:
        devices = min(devices, math.floor(rack / power))
    return devices


def node_types(
    catalog: Catalog, table: pd.DataFrame, hardware: Sequence[str]
) -> dict[str, NodeType]:
    """Each device type's costs over the period (:func:`split_costs`): a device owned (capital
    and running over the amortisation months), a node's own part beyond its devices, and a
    device rented around the clock, in nodes of :func:`rack_devices`; a type of which a rack
    powers no device is left out."""
    types = {}
    priced = table[one_device_type(table)]
    names = priced["hardware"].astype(str)
    for h in dict.fromkeys(hardware):
        rows = priced[names == h]
        if rows.empty:  # priced by no row of its own (a prefill pool's device alone)
            continue
        row = rows.iloc[0]
        devices = rack_devices(catalog, row)
        if devices < 1:
            continue
        device, overhead = split_costs(catalog, row, devices)
        rent = device.rent_usd_per_month * device.amortisation_months
        types[h] = NodeType(h, devices, _owned_usd(device), _owned_usd(overhead), rent)
    return types


def fleet_of(catalog: Catalog, table: pd.DataFrame, models: dict[str, str]) -> Fleet | str:
    """:func:`plan_fleet`, or why there is none (no workload served, or the program's
    refusal), in words."""
    if not models:
        return "no workload is served"
    try:
        return plan_fleet(catalog, table, models)
    except ValueError as exc:
        return str(exc)


def plan_fleet(
    catalog: Catalog,
    table: pd.DataFrame,
    models: dict[str, str],
    growth: dict[str, float] | None = None,
) -> Fleet:
    """The least-cost shared fleet for ``models`` (workload → model) over the plan ``table``,
    each workload's traffic ``growth`` × today's (1 where not given)."""
    options = fleet_options(catalog, table, models, growth)
    routed, classes = class_options(catalog, models, growth)
    options += routed
    types = node_types(catalog, table, [o.hardware for o in options])
    options = [
        o
        for o in options
        if o.hardware in types and sits_on_nodes(o.devices, types[o.hardware].devices)
    ]
    pools = Counter((o.workload, o.part, o.pair) for o in options if o.pool)
    options = [o for o in options if not o.pool or pools[o.workload, o.part, o.pair] == 2]
    missing = set(models) - {o.workload for o in options}
    if missing:
        raise ValueError(f"no eligible option for {', '.join(sorted(missing))}")
    return solve(options, types, demands(catalog, table, models, growth) + classes)


def horizon_factors(catalog: Catalog, workloads: Sequence[str]) -> dict[str, list[float]]:
    """Each workload's traffic factor month by month over the longest forecast: its
    forecast's (:func:`planner.plan.schedule.traffic_factors`), held at its last month past
    its end; 1 throughout for a workload without one."""
    found = {}
    for w in workloads:
        workload = catalog.get("workloads", w)
        found[w] = traffic_factors(catalog, workload) if workload.forecast else [1.0]
    months = max((len(f) for f in found.values()), default=1)
    return {w: f + [f[-1]] * (months - len(f)) for w, f in found.items()}


def horizon_growth(catalog: Catalog, workloads: Sequence[str]) -> tuple[int, dict[str, float]]:
    """The forecasts' last month and each workload with a forecast, its traffic then as a
    multiple of today's (:func:`horizon_factors`); month 0 where no forecast looks ahead."""
    factors = horizon_factors(catalog, workloads)
    forecast = [w for w in workloads if catalog.get("workloads", w).forecast is not None]
    if not forecast:
        return 0, {}
    return len(factors[forecast[0]]) - 1, {w: factors[w][-1] for w in forecast}


def fleet_at_horizon(
    catalog: Catalog, table: pd.DataFrame, models: dict[str, str]
) -> tuple[int, Fleet | str] | None:
    """The fleet the forecasts' last month needs (:func:`horizon_growth`), replanned from
    scratch at that month's traffic, with the month; None where no forecast grows."""
    month, growth = horizon_growth(catalog, list(models))
    if month == 0 or all(f == 1 for f in growth.values()):
        return None
    try:
        return month, plan_fleet(catalog, table, models, growth)
    except ValueError as exc:
        return month, str(exc)


#: Prompts drawn from a workload's distribution to split it by length, and the seed: the
#: classes' shares and lengths are the draws' (a fixed seed: the same classes every run).
LENGTH_DRAWS, LENGTH_SEED = 20_000, 0


def length_classes(catalog: Catalog, workload: Workload) -> list[tuple[Workload, float, str]]:
    """A workload routed by length (``long_prompt_tokens``) as two workloads of its own, prompts
    up to that length and above it, each with its share of the requests and of the arrival
    rate, and the lengths of its share of the prompts (mean, p95 and max of the draws of the
    workload's prompt distribution), and the class in words; none where the workload is not
    routed or one class would be empty."""
    split = workload.long_prompt_tokens
    rate = workload.arrival.rate if workload.arrival is not None else None
    if split is None or not isinstance(rate, (int, float)):
        return []
    prompts = lengths(catalog, workload.prompt_tokens, workload.max_output_tokens)
    draws = prompts.draw(np.random.default_rng(LENGTH_SEED), LENGTH_DRAWS)
    classes = []
    for part, words, mine in (("up-to", "up to", draws <= split), ("over", "over", draws > split)):
        values = draws[mine]
        if not len(values):
            return []
        share = len(values) / len(draws)
        mean, p95 = float(values.mean()), float(np.percentile(values, 95))
        summary = LengthDistribution(mean=mean, p95=max(p95, mean), max=int(values.max()))
        prefix = workload.prefix
        if prefix is not None and prefix.tokens > mean:
            prefix = None
        assert workload.arrival is not None
        classes.append((workload.model_copy(update={
            "id": f"{workload.id}-{part}-{split}",
            "name": f"{workload.name or workload.id} (prompts {words} {split:,} tokens)",
            "prompt_tokens": summary,
            "arrival": workload.arrival.model_copy(update={"rate": rate * share}),
            "prefix": prefix,
            "long_prompt_tokens": None,
        }), share, f"prompts {words} {split:,} tokens"))  # fmt: skip
    return classes


def class_options(
    catalog: Catalog, models: dict[str, str], growth: dict[str, float] | None = None
) -> tuple[list[Option], list[Demand]]:
    """The options and demands of the length classes of each routed workload of ``models``:
    the classes evaluated as workloads of their own (closed form), served by the workload's
    model; each option labelled with its class."""
    found: list[tuple[Workload, str]] = []
    words: dict[str, str] = {}
    for w in models:
        for c, _, text in length_classes(catalog, catalog.get("workloads", w)):
            found.append((c, w))
            words[c.id] = text
    if not found:
        return [], []
    model = {c.id: models[w] for c, w in found}
    parent = {c.id: w for c, w in found}
    grown = {c: (growth or {}).get(w, 1.0) for c, w in parent.items()}
    sub = replace(catalog, workloads=tuple(c for c, _ in found), scenarios=(), deployment=(),
                  models=tuple(m for m in catalog.models if m.id in model.values()))  # fmt: skip
    table = evaluate(sub).table
    options = [
        replace(
            o,
            workload=parent[o.workload],
            part=o.workload,
            label=f"{o.label} for {words[o.workload]}",
        )  # fmt: skip
        for o in fleet_options(sub, table, model, grown)
    ]
    classes = [replace(d, parent=parent[d.workload]) for d in demands(sub, table, model, grown)]
    return options, classes
