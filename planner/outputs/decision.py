"""The decision part of the report as plain values: the risks of each line of the ask, the
bill of materials, capacity over time (each forecast's schedule), the tornado of the ask's cost
and the plan over draws of its uncertain inputs, prepared so that the template does no
arithmetic.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
from markupsafe import Markup

from planner.catalog import Catalog
from planner.model.units import is_finite
from planner.outputs import charts
from planner.outputs.advice import margin_text
from planner.outputs.formatting import count, duration, usd
from planner.outputs.sections import was_simulated
from planner.plan.deployment import API, Ask
from planner.plan.labels import prefill_device, short_label
from planner.plan.schedule import HOURS, PLANS, GrowthCase, WorkloadSchedule, break_even_hours
from planner.plan.sensitivity import SWING, Bar
from planner.plan.uncertainty import Bands, leading_options


def _blend(found: WorkloadSchedule) -> str:
    """What a node of a schedule holds where the option's pools run on two device types."""
    other = prefill_device(found.line.row)
    if other is None:
        return ""
    return (
        f" (a blend of the prefill pool's {other} and the decode pool's "
        f"{found.line.row['hardware']}, in their planned mix at the decode device's node size: "
        "the Plan counts nodes pool by pool, so it may count more)"
    )


def schedule_sections(
    found_all: list[WorkloadSchedule], growth: list[list[GrowthCase]] | None = None
) -> list[dict[str, Any]]:
    """Per workload with a forecast (:func:`planner.plan.schedule.schedules`): its nodes month
    by month, the orders, what each way of paying costs over the horizon (cash, book value
    left, net, net present value) and, with ``growth`` (its :func:`growth_cases`), the peak
    and the cheapest way of paying with the growth lowered and raised."""
    out = []
    for index, found in enumerate(found_all):
        cases = growth[index] if growth else []
        forecast = found.workload.forecast
        assert forecast is not None
        chosen = found.plans["schedule"]
        step = 3 if len(found.nodes) > 12 else 1
        months = sorted({*range(0, len(found.nodes), step), len(found.nodes) - 1})
        cumulative = chosen.cumulative_usd()
        rows = [
            {
                "month": m,
                "traffic": f"{found.factors[m]:.2f}×",
                "replicas": count(found.replicas[m]),
                "needed": count(found.nodes[m]),
                "base": count(found.base_nodes[m]),
                "owned": count(chosen.owned[m]),
                "rented": count(chosen.rented[m]),
                "cash": usd(chosen.cash_usd[m]),
                "cumulative": usd(cumulative[m]),
            }
            for m in months
        ]
        lead = found.lead_time_months
        orders = [
            f"month {m}: order {count(n)} node{'s' if n != 1 else ''} (in service from month "
            f"{m + lead})"
            for m, n in chosen.orders
        ]
        payback = found.payback_month()
        costs = found.costs
        break_even = break_even_hours(costs)
        quietest = min(found.profile)
        out.append(
            {
                "workload": found.workload,
                "option": short_label(found.line.row),
                "growth": (
                    f"{forecast.growth_per_month:+.1%} a month for {len(found.nodes)} months"
                    if forecast.growth_per_month is not None
                    else f"as forecast month by month for {len(found.nodes)} months"
                ),
                "spare": forecast.spare_nodes,
                "per_node": (
                    f"A node holds {count(found.node_devices)} "
                    f"device{'s' if found.node_devices != 1 else ''}{_blend(found)} and costs "
                    f"{usd(costs.owned_usd_per_month)} a month owned "
                    f"({usd(costs.capital_usd)} over {costs.amortisation_months} months, plus "
                    f"{usd(costs.running_usd_per_month)} to run) against "
                    f"{usd(costs.rent_usd_per_month)} rented"
                ),
                "plan": chosen.name,
                "today": count(found.nodes[0]),
                "peak": count(max(found.nodes)),
                "cash": usd(chosen.total_usd),
                "net": usd(chosen.net_usd),
                "rent_cash": usd(found.plans["rent"].total_usd),
                "profile": (
                    None
                    if forecast.daily_profile is None
                    else f"Traffic follows a daily profile: the forecast's rate is the busiest "
                    f"hour's, the quietest hour carries {quietest:.0%} of it. "
                ),
                "break_even": (
                    "Owning a node never costs less than renting it, even all day."
                    if break_even >= HOURS
                    else f"A node is worth owning when it is busy more than {break_even:.1f} "
                    "hours a day (owning a month costs that share of a day's rent); the hours "
                    "above the owned nodes are rented by the hour."
                ),
                "orders": orders,
                "rows": rows,
                "plans": [
                    {
                        "name": found.plans[key].name,
                        "cash": usd(found.plans[key].total_usd),
                        "residual": usd(found.plans[key].residual_usd),
                        "net": usd(found.plans[key].net_usd),
                        "npv": usd(found.npv_usd(key)),
                    }
                    for key in PLANS
                    if key in found.plans
                ],
                "payback": payback_words(found, payback),
                "svg": Markup(
                    charts.schedule_chart(found.nodes, chosen.owned, chosen.rented, f"s{index}s")
                ),
                "growth_cases": [
                    {
                        "case": "as forecast"
                        if case.scale == 1
                        else f"growth {'+' if case.scale > 1 else '−'}{abs(case.scale - 1):.0%}",
                        "peak": count(case.peak_nodes),
                        "npv": usd(case.npv_usd["schedule"]),
                        "cheapest": found.plans[case.cheapest].name,
                    }
                    for case in cases
                ],
            }
        )
    return out


def payback_words(found: WorkloadSchedule, payback: int | None) -> str:
    """The schedule against renting every node, in two sentences: whether the cash paid catches
    up with renting's within the horizon (``payback``: :meth:`WorkloadSchedule.payback_month`),
    and the net comparison, with the book value of the owned nodes at the end counted."""
    schedule, rent = found.plans["schedule"], found.plans["rent"]
    if payback is not None:
        cash = f"In cash, buying pays for itself against renting from month {payback} on."
    elif schedule.total_usd > rent.total_usd:
        cash = (
            f"In cash paid within the horizon, buying does not catch up with renting: "
            f"{usd(schedule.total_usd)} USD against {usd(rent.total_usd)} USD."
        )
    else:
        cash = (
            f"In cash, the schedule pays no more than renting: {usd(schedule.total_usd)} USD "
            f"against {usd(rent.total_usd)} USD."
        )
    if schedule.residual_usd <= 0:
        return cash
    net = (
        f"With the owned nodes' book value at the end counted ({usd(schedule.residual_usd)} "
        f"USD), the schedule nets {usd(schedule.net_usd)} USD against renting's "
        f"{usd(rent.net_usd)} USD"
    )
    if schedule.net_usd < rent.net_usd:
        net += f": {usd(rent.net_usd - schedule.net_usd)} USD less."
    elif schedule.net_usd > rent.net_usd:
        net += f": {usd(schedule.net_usd - rent.net_usd)} USD more."
    else:
        net += ": the same."
    return f"{cash} {net}"


def tornado_section(result: tuple[float, float, list[Bar]]) -> dict[str, Any]:
    """The ask's cost over the period under ±:data:`SWING` of each uncertain input
    (:func:`planner.plan.sensitivity.tornado`), as a chart and a table, with the inputs that
    change a line of the ask."""
    base_usd, base_devices, bars = result
    flips = {"lowered": f"−{SWING:.0%}", "raised": f"+{SWING:.0%}"}
    return {
        "swing": f"{SWING:.0%}",
        "base": usd(base_usd),
        "base_devices": count(base_devices),
        "svg": Markup(charts.tornado_chart(base_usd, bars, SWING, "tornado")) if bars else "",
        "rows": [
            {
                "input": bar.label,
                "low": usd(bar.low_usd),
                "high": usd(bar.high_usd),
                "devices": f"{count(bar.low_devices)} / {count(bar.high_devices)}",
                "flips": ", ".join(flips[f] for f in bar.flips) or "no",
            }
            for bar in bars
        ],
    }


def bill_of_materials(catalog: Catalog, plan: Ask) -> list[dict[str, Any]]:
    """What the ask installs, per line bought or rented: devices, nodes, spare nodes (N+k of
    a forecast), racks at the rack power limit, a node's and the option's peak power."""
    rows = []
    for line in plan.lines:
        if line.advice == API:
            continue
        row = line.row
        forecast = catalog.get("workloads", line.workload).forecast
        racks = row.get("racks_needed", math.nan)
        spares = forecast.spare_nodes if forecast else 0
        rows.append(
            {
                "workload": catalog.get("workloads", line.workload).label,
                "option": short_label(row),
                "advice": line.advice,
                "devices": count(line.devices),
                "nodes": count(line.nodes),
                "spares": count(spares),
                "node_down": node_down(line.nodes, spares),
                "racks": count(racks) if is_finite(racks) else "no limit",
                "node_kw": _kw(row.get("node_power_w", math.nan) / 1000),
                "peak_kw": _kw(row.get("facility_peak_kw", math.nan)),
            }
        )
    return rows


def risk_lines(catalog: Catalog, plan: Ask, measured: int) -> list[str]:
    """The ask's margins and risks in plain words, for the decision part: per line, what is
    tight, how far its latency may be off and whether the top of that band misses a target,
    how it was sized and what one node down leaves; then what every figure rests on
    (``measured``: how many measurements the catalog holds)."""
    out = []
    a = catalog.assumptions
    for line in plan.lines:
        label = catalog.get("workloads", line.workload).label
        row = line.row
        words = []
        margin = margin_text(row, a.margin)
        if margin:
            words.append(margin)
        if line.advice == API:
            words.append("served by the hosted API: no devices, the provider's latency")
            out.append(f"{label} ({line.model}): " + "; ".join(words) + ".")
            continue
        band = float(row["latency_band_fraction"])
        basis = "calibrated on measurements" if bool(row["latency_calibrated"]) else "assumed"
        if bool(row["meets_targets_upper"]):
            words.append(f"latency may be {band:.0%} slower ({basis}) and still meets its targets")
        else:
            words.append(f"latency {band:.0%} slower ({basis}) would miss a target")
        if line.devices_upper > line.devices:
            words.append(
                f"{count(line.devices_upper)} devices rather than {count(line.devices)} at "
                "the top of that band"
            )
        words.append(
            "sized by the serving simulation"
            if was_simulated(row)
            else "sized in closed form only, with no queueing: a floor"
        )
        forecast = catalog.get("workloads", line.workload).forecast
        spares = forecast.spare_nodes if forecast else 0
        down = node_down(line.nodes, spares)
        words.append(
            "with a node down the targets hold"
            if down == "targets hold"
            else f"with a node down: {down}"
        )
        out.append(f"{label} ({line.model}): " + "; ".join(words) + ".")
    out.append(
        f"Every figure is an estimate from datasheets and assumptions; {count(measured)} "
        f"measurement{'s' if measured != 1 else ''} of a device "
        f"{'is' if measured == 1 else 'are'} in the catalog (see What to measure next)."
        if measured
        else "Every figure is an estimate from datasheets and assumptions: no measurement of a "
        "device is in the catalog. Measure before buying (see What to measure next)."
    )
    return out


def node_down(nodes: float, spares: int) -> str:
    """What one node down leaves of a line: the targets hold with spare nodes (N+k, k ≥ 1);
    else the service is gone (one node) or short of the capacity it was sized for."""
    if spares >= 1:
        return "targets hold"
    if nodes <= 1:
        return "no service"
    return f"short: {count(nodes - 1)} of {count(nodes)} nodes"


def _kw(value: float) -> str:
    return f"{value:,.1f}" if is_finite(value) else "n/a"


def uncertainty_section(bands: Bands | None, plan: Ask) -> dict[str, Any] | None:
    """The plan over draws of its uncertain inputs (:mod:`planner.plan.uncertainty`): for each
    line of the ask, the bands of its model's winning devices and cost, and the options that
    were the cheapest in at least one draw in ten; None without draws."""
    if bands is None:
        return None
    purchases = bands.purchases
    if not {"workload", "model"} <= set(purchases.columns):  # no draw had a winner at all
        purchases = pd.DataFrame(columns=["workload", "model"])
    purchases = purchases.set_index(["workload", "model"])
    options = leading_options(bands, least_share=0.1)
    lines: list[dict[str, Any]] = []
    for line in plan.lines:
        if (line.workload, line.model) not in purchases.index:  # the line won in no draw
            lines.append(
                {
                    "workload": line.workload,
                    "model": line.model,
                    "served": f"{0:.0%}",
                    "devices": "none",
                    "cost": "none",
                    "options": [],
                }
            )
            continue
        p: Any = purchases.loc[(line.workload, line.model)]
        chosen = options[(options["workload"] == line.workload) & (options["model"] == line.model)]
        lines.append(
            {
                "workload": line.workload,
                "model": line.model,
                "served": f"{p['served_share']:.0%}",
                "devices": " / ".join(count(p[f"devices_needed_p{q}"]) for q in (10, 50, 90)),
                "cost": " / ".join(usd(p[f"cost_usd_p{q}"]) for q in (10, 50, 90)),
                "options": [
                    {
                        "option": short_label(o, devices=False),
                        "cheapest": f"{o['cheapest_share']:.0%}",
                        "meets": f"{o['meets_share']:.0%}",
                        "devices": " / ".join(
                            count(o[f"devices_needed_p{q}"]) for q in (10, 50, 90)
                        ),
                        "itl": f"{duration(o['itl_load_s_p50'])} / {duration(o['itl_load_s_p90'])}",
                    }
                    for o in chosen.to_dict("records")
                ],
            }
        )
    for shown in lines:
        shown["p90"] = _p90_words(bands, shown["workload"], shown["model"])
    return {
        "draws": count(bands.draws),
        "inputs": [(i.label, i.distribution.describe()) for i in bands.inputs],
        "lines": lines,
    }


def _devices(value: Any) -> str:
    """A device count in words: ``1 device``, ``4 devices``."""
    return f"{count(value)} device{'' if count(value) == '1' else 's'}"


def _p90_words(bands: Bands, workload: str, model: str) -> str:
    """The line's winner at the draw of its P90 cost, as the simulation sized it, in words."""
    simulated = bands.simulated
    if simulated is None or simulated.empty:
        return ""
    mine = simulated[(simulated["workload"] == workload) & (simulated["model"] == model)]
    if mine.empty:
        return ""
    r = mine.iloc[0]
    met = "meets every target" if bool(r["meets_targets_sim"]) else "misses a target"
    return (
        f"At the draw of its P90 cost (draw {int(r['draw'])}), {short_label(r, devices=False)}: "
        f"{_devices(r['devices_needed'])} in closed form; "
        f"simulated under that draw's inputs, {_devices(r['sim_devices_needed'])}, p95 TTFT "
        f"{duration(r['ttft_p95_s'])}, p95 ITL {duration(r['itl_p95_s'])}: {met}"
    )
