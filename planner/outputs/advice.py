"""The advice in words: buy or rent, the hosted API, and the one ask of the report's first page.

The numbers come from the metrics and from :mod:`planner.plan.deployment`; this module only
words them and formats them for the templates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from planner.catalog import Catalog
from planner.model.units import is_finite
from planner.outputs.formatting import count, durations_apart, usd
from planner.plan import recommend
from planner.plan.deployment import API, BUY, RENT, Ask, Line, advice
from planner.plan.labels import prefill_device, short_label

if TYPE_CHECKING:
    from planner.outputs.outlook import CacheWorth


def break_even_text(row: pd.Series | dict[str, Any], months: int, short: bool = False) -> str:
    """When buying beats renting, in words, from ``break_even_month`` and the rental price."""
    if not is_finite(row["cloud_usd_per_month"]):
        return "no rental price"
    if not is_finite(row["break_even_month"]):
        if short:
            return "never (rent ≤ running cost)"
        return "never: renting costs no more a month than running owned devices"
    month = int(row["break_even_month"])
    if month > months:
        return f"month {month}" + (" (> period)" if short else f", after the {months}-month period")
    return f"month {month}"


def buy_or_rent_sentence(row: pd.Series, months: int) -> str:
    """Owning against renting the same devices, as a sentence."""
    owning = (
        f"Owning costs {usd(row['capital_usd'])} USD of capital and "
        f"{usd(row['opex_usd_per_month'])} USD a month to run: {usd(row['tco_usd'])} USD over "
        f"{months} months"
        if is_finite(row["tco_usd"])
        else "No purchase price (or electricity rate) is catalogued for this device"
    )
    if not is_finite(row["cloud_usd_per_month"]):
        return f"{owning}; no rental price is catalogued, so renting could not be compared. "
    renting = (
        f"renting the same devices costs {usd(row['cloud_usd_per_month'])} USD a month: "
        f"{usd(row['rent_usd'])} USD over the period"
    )
    if row.get("acquisition") == RENT:
        verdict = "rent: owning would not pay back within the period" + (
            f" (break-even {break_even_text(row, months)})"
            if is_finite(row["break_even_month"])
            else " (renting costs no more a month than running owned devices)"
        )
    else:
        verdict = f"buy: owning breaks even in {break_even_text(row, months)}"
    if not is_finite(row["tco_usd"]):
        return f"{owning}; {renting}. "
    return f"{owning}; {renting}. So {verdict}. "


def api_sentence(row: pd.Series, catalog: Catalog) -> str:
    """The hosted API against the devices, as a sentence, or why it could not be compared."""
    model = catalog.get("models", row["model"])
    offer = next((o for o in catalog.api_offers if o.model == model.id), None)
    if offer is None:
        return "No API price is catalogued for this model: the API comparison could not be made. "
    if not is_finite(row.get("api_usd")):
        return (
            f"{offer.label} accepts at most {offer.max_context_tokens or 0:,} tokens a request, "
            f"fewer than this workload's longest ({float(row['tokens_per_sequence']):,.0f}): "
            "the API cannot serve it. "
        )
    api = (
        f"Calling {offer.label} (list price as of {offer.as_of}) for the forecast volume would "
        f"cost {usd(row['api_usd'])} USD over the period"
    )
    load = row["api_break_even_requests_per_s"]
    at = f"{float(load):,.2f} requests/s" if is_finite(load) else "n/a"
    if advice(row) == API:
        return (
            f"{api}, less than the devices: call the API unless the load grows beyond {at} "
            f"(the forecast is {float(row['forecast_requests_per_s']):,.2f}). "
        )
    return f"{api}, more than the devices; it would cost less below {at}. "


def _money(value: float) -> str:
    return usd(value) if is_finite(value) else "n/a"


def _devices(n: float) -> str:
    return f"{count(n)} device{'' if n == 1 else 's'}"


def _deployed(line: Line) -> str:
    what = "the hosted API" if line.advice == API else short_label(line.row)
    return f"{line.model}: {line.advice} {what}"


def _bill(line: Line) -> str:
    return f"{_devices(line.devices)}, {_money(line.monthly_usd)} USD a month"


def caching_text(worth: CacheWorth, catalog: Catalog) -> str:
    """What prefix caching is worth to a workload's line of the ask, in a sentence: the line's
    devices and monthly bill with the cache and without it, like with like (where the planned
    line is the simulation's, the closed form's with and without, and the planned line
    beside them)."""
    cached, uncached, compared = worth.cached, worth.uncached, worth.compared
    label = catalog.get("workloads", worth.workload).label
    hit = float(cached.row["prefix_hit_ratio"])
    basis = (
        "as measured"
        if is_finite(cached.row.get("measured_prefix_hit_ratio"))
        else "expected from its prefix"
    )
    head = f"Prefix caching for {label} ({hit:.0%} of prompt tokens found cached, {basis})"
    # said only where the simulation's line differs from the closed form's
    apart = (compared.devices, compared.monthly_usd) != (cached.devices, cached.monthly_usd)
    planned = f"; the planned line, from the simulation, is {_bill(cached)}" if apart else ""
    if uncached is None:
        return f"{head}: without it nothing would qualify{planned}"
    within = "in closed form, " if planned else ""
    with_ttft, without_ttft = durations_apart(compared.row["ttft_s"], uncached.row["ttft_s"])
    ttft = f"; TTFT {with_ttft} with it, {without_ttft} without"
    if worth.devices_saved == 0 and worth.monthly_usd_saved == 0:
        same = f"{within}the line is the same without it ({_bill(compared)})"
        return f"{head}: {same}{planned}{ttft}"
    changed = "" if _deployed(compared) == _deployed(uncached) else f" ({_deployed(uncached)})"
    return (
        f"{head}: {within}with it {_bill(compared)}; without it {_bill(uncached)}{changed}, so "
        f"the cache is worth {_devices(worth.devices_saved)} and "
        f"{_money(worth.monthly_usd_saved)} USD a month{planned}{ttft}"
    )


def caching_lines(caching: dict[str, CacheWorth] | None, catalog: Catalog) -> list[str]:
    """:func:`caching_text` for each workload of ``caching``, none where it is None."""
    return [caching_text(worth, catalog) for worth in (caching or {}).values()]


def named_label(row: Any, catalog: Catalog) -> str:
    """What a line deploys, its devices named as the catalog names them (each pool's where
    its prompts run on another device): :func:`planner.plan.labels.short_label`."""
    hardware = catalog.get("hardware", row["hardware"]).label
    prompts = prefill_device(row)
    prefill = None if prompts is None else catalog.get("hardware", prompts).label
    return short_label(row, hardware=hardware, prefill=prefill)


def ask_context(
    ask: Ask, catalog: Catalog, caching: dict[str, CacheWorth] | None = None
) -> dict[str, Any]:
    """The first page's ask: a line per workload, the totals, the alternatives, the ties, the
    workloads nothing serves and what prefix caching is worth to each line it applies to
    (``caching``: :attr:`planner.outputs.outlook.Outlook.caching`), as the template shows
    them."""
    lines = []
    for line in ask.lines:
        row = line.row
        named = named_label(row, catalog)
        lines.append(
            {
                "workload": catalog.get("workloads", line.workload).label,
                "model": catalog.get("models", line.model).label,
                "chosen_by": line.chosen_by,
                "advice": line.advice,
                "what": "hosted API" if line.advice == API else named,
                "option": short_label(row),
                "ids": (
                    line.workload,
                    line.model,
                    "hosted API" if line.advice == API else short_label(row),
                ),
                "nodes": count(line.nodes),
                "capital": _money(line.capital_usd),
                "monthly": _money(line.monthly_usd),
                "period": _money(line.period_usd),
                "margin": margin_text(row, catalog.assumptions.margin),
                "confidence": "" if line.advice == API else confidence_text(line),
            }
        )
    owning, owned = ask.alternative("tco_usd")
    renting, rented = ask.alternative("rent_usd")
    api, priced = ask.alternative("api_usd")
    n = len(ask.lines)
    devices = ask.total("devices")
    alternatives = [
        f"Owning every option instead: {_money(owning)} USD over the period"
        + ("" if owned == n else f" ({owned} of {n} workloads have a purchase price)"),
        f"Renting every option instead: {_money(renting)} USD"
        + ("" if rented == n else f" ({rented} of {n} workloads have a rental price)"),
        f"Calling hosted APIs instead: {_money(api)} USD ({priced} of {n} workloads priced)"
        if priced
        else "Calling hosted APIs instead: no API price is catalogued for these models",
    ]
    ties = [
        f"{catalog.get('workloads', line.workload).label}: "
        + ", ".join([line.model, *line.ties])
        + f" tie at {_money(float(line.row['cost_usd']))} USD; the plan takes {line.model} by "
        f"the ranking's tie-breaks ({recommend.TIE_BREAKS}, then the order of models.yaml): "
        "name the one to deploy in deployment.yaml"
        for line in ask.lines
        if line.ties
    ]
    upper = ask.total("devices_upper")
    owned_lines = [line for line in ask.lines if line.advice != API]
    calibrated = sum(bool(line.row["latency_calibrated"]) for line in owned_lines)
    return {
        "lines": lines,
        "devices": f"{count(devices)} device{'' if devices == 1 else 's'}",
        "devices_upper": f"{count(upper)} at 90% confidence" if upper > devices else "",
        "calibrated": f"{calibrated} of {len(owned_lines)}",
        "uncalibrated_band": f"{catalog.assumptions.uncalibrated_band:.0%}",
        "nodes": count(ask.total("nodes")),
        "capital": _money(ask.total("capital_usd")),
        "monthly": _money(ask.total("monthly_usd")),
        "period": _money(ask.total("period_usd")),
        "facility_kw": f"{ask.facility_kw:,.1f}",
        "bought": any(advice(line.row) == BUY for line in ask.lines),
        "months": ask.months,
        "alternatives": alternatives,
        "ties": ties,
        "caching": caching_lines(caching, catalog),
        "unserved": [catalog.get("workloads", w).label for w in ask.unserved],
        "unserved_reasons": [
            f"{catalog.get('workloads', w).label}: {ask.reasons[w]}"
            for w in ask.unserved
            if w in ask.reasons
        ],
        "prepared_by": catalog.prepared_by or "",
    }


def confidence_text(line: Line) -> str:
    """How far an option's estimates may be off, in words: its latency band at 90%
    confidence and whether measurements on its hardware narrowed it, the devices at the top of
    the band where more, and a target the top of the band misses."""
    row = line.row
    band = float(row["latency_band_fraction"])
    basis = "calibrated" if bool(row["latency_calibrated"]) else "uncalibrated"
    words = [f"latency +{band:.0%} at 90% ({basis})"]
    if line.devices_upper > line.devices:
        words.append(f"{count(line.devices_upper)} devices at 90%")
    if not bool(row["meets_targets_upper"]):
        words.append(f"misses a target at +{band:.0%}")
    return "; ".join(words)


HEADROOMS = (
    ("TTFT", "ttft_headroom"),
    ("ITL", "itl_headroom"),
    ("end-to-end", "e2e_headroom"),
    ("task", "task_headroom"),
)


def margin_text(row: pd.Series | dict[str, Any], margin: float) -> str:
    """What is closer than ``margin`` for an option, in words; empty when nothing is: ``tight:
    4 % headroom to the ITL target; 6 % of KV capacity spare``."""
    if not bool(row.get("tight_margin")):
        return ""
    parts = [
        f"{float(row[column]):.0%} headroom to the {name} target"
        for name, column in HEADROOMS
        if is_finite(row.get(column)) and float(row[column]) < margin
    ]
    if is_finite(row.get("kv_spare_fraction")) and float(row["kv_spare_fraction"]) < margin:
        parts.append(f"{float(row['kv_spare_fraction']):.0%} of KV capacity spare")
    return "tight: " + "; ".join(parts) if parts else ""


def sensitivity_text(changes: list[tuple[str, Line | None]], tried: list[str]) -> str:
    """What would change a workload's line of the ask, in a sentence (closed form)."""
    if not changes:
        return f"In closed form, none of {', '.join(tried)} changes this decision."
    said = []
    for label, line in changes:
        if line is None:
            said.append(f"{label} (nothing would then qualify)")
        else:
            devices = "" if line.advice == API else f" {short_label(line.row)}"
            said.append(f"{label} (then {line.model}: {line.advice}{devices})")
    return "In closed form, the decision changes with " + "; ".join(said) + "."
