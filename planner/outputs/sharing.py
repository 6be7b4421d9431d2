"""The shared fleet in words, as the report's first page and the terminal show it: what it costs
against each workload on devices of its own and against the ask's lines, each device type's
owned and rented devices and what runs on them, and what goes to a hosted API."""

from __future__ import annotations

import math
from typing import Any

from planner.catalog import Catalog
from planner.outputs.formatting import count, usd
from planner.plan.deployment import Ask
from planner.plan.fleet import Fleet, Option, one_node_down
from planner.plan.fleet_schedule import FleetSchedule, TypeSchedule

#: Below this many USD a saving reads as none (the optimiser's tolerance, not a saving).
NO_SAVING_USD = 1.0

#: The share of each workload's cost alone that sharing must save for page 1's ask to be the
#: shared fleet (the per-workload lines then follow it as "each workload alone"): a saving
#: smaller than this does not repay a signer reading two plans.
FLEET_LEADS_FROM = 0.01


def _plural(n: int, word: str) -> str:
    return f"{count(n)} {word}{'' if n == 1 else 's'}"


def _replicas(fleet: Fleet, option: Option) -> str:
    """An option's replicas over the day: ``8 replicas at the busiest hour, 1 at the
    quietest``, with those rented."""
    hours = fleet.replicas[option]
    most, least = max(hours), min(hours)
    text = _plural(most, "replica") + (f" at the busiest hour, {count(least)} at the quietest"
                                      if least != most else " all day")  # fmt: skip
    rented = fleet.rented_replicas.get(option)
    if rented and max(rented):
        text += " (rented)" if rented == hours else f" ({count(max(rented))} of them rented)"
    return text


def _owned(fleet: Fleet, hardware: str) -> str:
    devices = fleet.owned_devices.get(hardware, 0)
    if not devices:
        return "none"
    nodes = fleet.owned_nodes.get(hardware, 0)
    text = f"{_plural(devices, 'device')} on {_plural(nodes, 'node')}"
    spare = fleet.spare.get(hardware, 0)
    return text + (f", {count(spare)} spare (N+{spare})" if spare else "")


def later_sentence(later: tuple[int, Fleet | str] | None, ask: Ask, catalog: Catalog) -> str:
    """What the forecasts' last month needs, replanned from scratch at its traffic, in one
    sentence; nothing where no forecast grows."""
    if later is None:
        return ""
    month, fleet = later
    if isinstance(fleet, str):
        return f"At month {month} of the forecasts no shared fleet is found: {fleet}."
    parts = []
    for h in fleet.hardware():
        name = catalog.get("hardware", h).label
        owned, rented = fleet.owned_devices.get(h, 0), fleet.rented_device_hours(h)
        held = [f"{_plural(owned, 'device')} owned"] if owned else []
        held += [f"{count(rented)} device-hours a day rented"] if rented else []
        parts.append(f"{name}: {' and '.join(held)}")
    api = list(fleet.api_share)
    text = (f"At month {month}, the forecasts' last, the same arithmetic at that month's traffic "
            f"gives a fleet of {usd(fleet.cost_usd)} USD over {ask.months} months "
            f"({'; '.join(parts)}")  # fmt: skip
    if api:
        text += f"; {len(api)} workload{'s' if len(api) != 1 else ''} on the hosted API"
    return text + ")."


def fleet_context(fleet: Fleet | str, ask: Ask, catalog: Catalog) -> dict[str, Any]:
    """The shared fleet of ``ask``'s workloads for the template and the terminal: a headline
    with its cost and what sharing saves, a row per device type (owned, rented by the hour,
    what runs on it), the workloads sent to a hosted API, and how it was found; or, where
    there is none, why."""
    if isinstance(fleet, str):
        return {"none": f"No shared fleet: {fleet}.", "summary": "", "leads": False}
    months = ask.months
    label = {w.id: w.label for w in catalog.workloads}
    rows = []
    for h in fleet.hardware():
        runs = [f"{label.get(o.workload, o.workload)}: {o.label}, {_replicas(fleet, o)}"
                for o in fleet.replicas if o.hardware == h]  # fmt: skip
        rented = fleet.rented_device_hours(h)
        rows.append({
            "hardware": catalog.get("hardware", h).label,
            "owned": _owned(fleet, h),
            "rented": f"{count(rented)} device-hours a day" if rented else "none",
            "runs": runs,
        })  # fmt: skip
    api = [
        f"{label.get(w, w)}: {share:.0%} of its day's traffic by the model's hosted API"
        for w, share in fleet.api_share.items()
    ]
    served = _served(fleet)
    who = (
        f"Shared, the {served} workloads cost" if served > 1 else "As one fleet, the workload costs"
    )
    headline = (
        f"{who} {usd(fleet.cost_usd)} USD over {months} months: "
        f"{usd(fleet.owned_usd)} for owned devices and nodes, {usd(fleet.rented_usd)} for "
        f"devices rented by the hour, {usd(fleet.api_usd)} for API calls."
    )
    if served <= 1:  # nothing to share devices with
        alone = ""
    elif fleet.saving_usd >= NO_SAVING_USD:
        share = fleet.saving_usd / fleet.alone_usd
        alone = (f"Sharing saves {usd(fleet.saving_usd)} USD ({share:.0%}) against each "
                 f"workload on devices of its own, {usd(fleet.alone_usd)} USD by the same "
                 "arithmetic.")  # fmt: skip
    else:
        alone = ("Sharing saves nothing here: each workload on devices of its own costs the "
                 "same by the same arithmetic, no workload's replicas fitting on another's "
                 "devices more cheaply than on their own.")  # fmt: skip
    ask_usd = ask.total("period_usd")
    against = (
        f"The ask's lines above cost {usd(ask_usd)} USD, each owning or renting its busiest "
        "hour's devices around the clock, with no spare nodes; the fleet rents by the hour what "
        "is busy only part of the day"
    )
    spares = fleet.cost_usd - fleet.unguarded_usd
    if spares >= NO_SAVING_USD:
        least, most = ("at least ", "at most ") if fleet.unguarded_gap > 1e-9 else ("", "")
        against += (
            f", and keeps the spare nodes the forecasts ask for (N+k), which cost {least}"
            f"{usd(spares)} USD: without them it would cost {most}{usd(fleet.unguarded_usd)}."
        )
    else:
        against += "."
    gap = ("proven optimal" if fleet.gap <= 1e-9
           else f"within {fleet.gap:.2%} of the optimum")  # fmt: skip
    how = (
        f"Chosen by an integer program (HiGHS, {gap}) over each workload's eligible options, "
        "hour by hour over its daily profile, replicas packed whole onto nodes; the Fleet sheet "
        "of plan.xlsx recomputes it from the counts."
    )
    leads = fleet.saving_usd >= max(NO_SAVING_USD, FLEET_LEADS_FROM * fleet.alone_usd)
    total = (f"{usd(fleet.cost_usd)} USD over {months} months, {usd(fleet.saving_usd)} less than "
             f"each workload on devices of its own ({usd(fleet.alone_usd)})")  # fmt: skip
    return {"headline": headline, "alone": alone, "against": against, "rows": rows,
            "leads": leads, "total": total,
            "api": api, "how": how, "none": "",
            "summary": _summary(fleet, ask),
            "down": _node_down(fleet, catalog, label)}  # fmt: skip


def _node_down(fleet: Fleet, catalog: Catalog, label: dict[str, str]) -> str:
    """What one owned node out of service leaves, type by type."""
    parts = []
    for h, short in one_node_down(fleet).items():
        name = catalog.get("hardware", h).label
        if not short:
            parts.append(f"with one {name} node down, the others hold its replicas")
        else:
            names = " and ".join(label.get(w, w) for w in short)
            verb, whose = ("falls", "its") if len(short) == 1 else ("fall", "their")
            parts.append(f"with one {name} node down, {names} {verb} short at {whose} busiest "
                         "hours: no spare node is kept (a forecast's spare_nodes asks for "
                         "one)")  # fmt: skip
    return ("One node down: " + "; ".join(parts) + ".") if parts else ""


def _served(fleet: Fleet) -> int:
    """Workloads the fleet serves, on devices or by an API."""
    return len({o.workload for o in fleet.replicas} | set(fleet.api_share))


def _summary(fleet: Fleet, ask: Ask) -> str:
    """The first page's sentence: the fleet's cost against the ask's and each workload alone
    (one workload: its cost, with nothing to share)."""
    shared = _served(fleet) > 1
    who = "As one shared fleet, o" if shared else "O"
    costs = "the workloads cost" if shared else "the workload costs"
    text = (
        f"{who}wning what is busy all day and renting the rest by the hour, {costs} "
        f"{usd(fleet.cost_usd)} USD over {ask.months} months"
    )
    if shared and fleet.saving_usd >= NO_SAVING_USD:
        text += f", {usd(fleet.saving_usd)} less than each on devices of its own"
    elif shared:
        text += ", no less than each on devices of its own"
    spares = fleet.cost_usd - fleet.unguarded_usd
    if spares >= NO_SAVING_USD:
        text += (f"; that includes {usd(spares)} USD of spare nodes (N+k) the forecasts ask for "
                 "and the lines above leave out")  # fmt: skip
    return text


def _orders(orders: list[tuple[int, int]]) -> str:
    """``month 0: 1 node; month 11: 2 nodes``, or ``none``."""
    return "; ".join(f"month {m}: {_plural(n, 'node')}" for m, n in orders) or "none"


def _owned_months(t: TypeSchedule) -> str:
    """``0 → 12 (2 nodes at the end, N+1)``, or ``none``."""
    if not t.owned_devices[-1]:
        return "none"
    spare = f", N+{t.spare_nodes}" if t.spare_nodes else ""
    return (f"{count(t.owned_devices[0])} → {count(t.owned_devices[-1])} "
            f"({_plural(t.owned_nodes[-1], 'node')} at the end{spare})")  # fmt: skip


def schedule_context(found: FleetSchedule | None, catalog: Catalog) -> dict[str, Any]:
    """The fleet over the months of the forecasts for the template: a sentence with its net
    present value against renting everything and against each workload's fleet alone
    scheduled the same way, and a row per device type (devices at the busiest hour and owned,
    first and last month; the orders; its net present value and renting everything's); empty
    where there is none."""
    if found is None or not found.types:
        return {}
    last = found.months - 1
    rows = [
        {
            "hardware": catalog.get("hardware", t.hardware).label,
            "needed": f"{count(t.peak_devices[0])} → {count(t.peak_devices[-1])}",
            "owned": _owned_months(t),
            "orders": _orders(t.orders),
            "npv": usd(t.npv_usd),
            "rent": usd(t.rent_everything_npv_usd),
            "lease": usd(t.lease_npv_usd) if math.isfinite(t.lease_npv_usd) else "",
        }
        for t in found.types
    ]
    leased = math.isfinite(found.lease_npv_usd)
    npv = found.npv_usd
    text = (
        f"Over the {found.months} months of the forecasts the fleet keeps today's mix of "
        "options and grows its replicas with each workload's traffic. Each month, each device "
        "type owns the devices that cost least against renting their hours (with their nodes' "
        "overhead and spare nodes, as the optimiser prices them), each ordered "
        f"{_plural(found.lead_time_months, 'month')} ahead and kept; the other hours are "
        f"rented. Its net present value is {usd(npv)} USD"
    )
    if found.api_npv_usd > 0:
        text += f", {usd(found.api_npv_usd)} of it for the hosted API's share"
    text += f", against {usd(found.rent_everything_npv_usd)} USD renting every hour"
    if leased:
        text += f", {usd(found.lease_npv_usd)} leasing the same devices"
    alone = found.alone_npv_usd
    if math.isfinite(alone):
        saved = alone - npv
        text += (f" and {usd(alone)} USD for each workload's fleet alone scheduled the same "
                 "way: " + (f"sharing saves {usd(saved)} USD over the months"
                            if saved >= NO_SAVING_USD else "sharing saves nothing over the "
                            "months"))  # fmt: skip
    text += f". Devices in month 0 and month {last}; fleet.json has every month."
    return {"text": text, "rows": rows, "leased": leased}


def schedule_summary(found: FleetSchedule | None, catalog: Catalog) -> str:
    """The fleet over the months in one line for the terminal: its net present value against
    renting every hour (and leasing), and each device type's orders; empty without one."""
    if found is None or not found.types:
        return ""
    rent = usd(found.rent_everything_npv_usd)
    text = (f"Over the {found.months} months of the forecasts the fleet's net present value is "
            f"{usd(found.npv_usd)} USD (renting every hour {rent}")  # fmt: skip
    if math.isfinite(found.lease_npv_usd):
        text += f", leasing {usd(found.lease_npv_usd)}"
    orders = [f"{catalog.get('hardware', t.hardware).label} {_orders(t.orders)}"
              for t in found.types if t.orders]  # fmt: skip
    return text + ")" + (f"; orders: {'; '.join(orders)}." if orders else "; nothing to order.")
