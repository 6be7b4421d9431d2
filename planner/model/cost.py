"""Cost: capital, operating cost, total cost of ownership, rental, cost per token, break-even.

Prices and rates come from the hardware catalog and ``assumptions.yaml``, with the currency in
each field name. A missing price stays missing (empty in results, ``#N/A`` in the workbook): it is
never costed as zero.
"""

from __future__ import annotations

from typing import Any

from planner.model.expr import ceil, concat, is_missing, logical_not, minimum, where
from planner.model.metric import derived, metric

HOURS = "hours_per_month from assumptions (730 = 8,760 h ÷ 12)"


@metric("nodes", source="devices_per_node of the hardware", group="cost")
def nodes_needed(
    devices_needed: Any,
    devices_per_node: Any,
    separate_prefill_devices: Any = 0,
    prefill_hw_devices_per_node: Any = 1,
) -> Any:
    """Server nodes for the devices: ⌈devices ÷ devices per node⌉ [nodes]; a prefill pool on
    another device on nodes of its own: ⌈decode devices ÷ their node⌉ + ⌈prefill devices ÷
    theirs⌉ (:func:`planner.model.disaggregated.separate_prefill_devices`)."""
    own = ceil((devices_needed - separate_prefill_devices) / devices_per_node)
    return own + ceil(separate_prefill_devices / prefill_hw_devices_per_node)


@metric("USD", source="purchase_usd of the hardware; node_overhead_usd assumption", group="cost")
def capital_usd(
    purchase_usd_per_device: Any, devices_needed: Any, node_overhead_usd: Any, nodes_needed: Any
) -> Any:
    """Capital cost: device price × devices + per-node overhead × nodes [USD] (the price of
    each pool's devices where a prefill pool runs on another device:
    :func:`planner.model.disaggregated.purchase_usd_per_device`)."""
    return purchase_usd_per_device * devices_needed + node_overhead_usd * nodes_needed


@metric("kWh/month", source=f"board power × utilisation × PUE; {HOURS}", group="cost")
def energy_kwh_per_month(
    power_w_per_device: Any, utilisation: Any, pue: Any, devices_needed: Any, hours_per_month: Any
) -> Any:
    """Facility energy per month: W × utilisation × PUE × devices × hours ÷ 1000 [kWh]."""
    return power_w_per_device * utilisation * pue * devices_needed * hours_per_month / 1000


@metric("USD/month", source="electricity_usd_per_kwh; hosting_usd_per_node_month", group="cost")
def opex_usd_per_month(
    energy_kwh_per_month: Any,
    electricity_usd_per_kwh: Any,
    hosting_usd_per_node_month: Any,
    nodes_needed: Any,
) -> Any:
    """Operating cost per month: energy × electricity price + hosting per node × nodes [USD]."""
    return (
        energy_kwh_per_month * electricity_usd_per_kwh + hosting_usd_per_node_month * nodes_needed
    )


@metric("USD", source="total cost of ownership over the amortisation period", group="cost")
def tco_usd(capital_usd: Any, opex_usd_per_month: Any, amortisation_months: Any) -> Any:
    """Total cost of ownership: capital + operating cost × amortisation months [USD]."""
    return capital_usd + opex_usd_per_month * amortisation_months


@metric("USD/month", source="straight-line amortisation", group="cost")
def owned_usd_per_month(tco_usd: Any, amortisation_months: Any) -> Any:
    """Owning cost per month: TCO spread over the amortisation period [USD/month]."""
    return tco_usd / amortisation_months


@metric("USD/month", source=f"cloud_usd_per_hour of the hardware; {HOURS}", group="cost")
def cloud_usd_per_month(
    cloud_usd_per_device_hour: Any, devices_needed: Any, hours_per_month: Any
) -> Any:
    """Renting the same devices around the clock: price per device-hour × devices × hours [USD]."""
    return cloud_usd_per_device_hour * devices_needed * hours_per_month


@metric("tokens/month", source="forecast load", group="cost")
def output_tokens_per_month(
    forecast_requests_per_s: Any, output_tokens_mean: Any, hours_per_month: Any
) -> Any:
    """Output tokens generated per month at the forecast load [tokens]."""
    return forecast_requests_per_s * output_tokens_mean * 3600 * hours_per_month


@metric("USD", source=f"cloud_usd_per_hour of the hardware; {HOURS}", group="cost")
def rent_usd(cloud_usd_per_month: Any, amortisation_months: Any) -> Any:
    """Renting the same devices over the amortisation period: rent per month × months [USD]."""
    return cloud_usd_per_month * amortisation_months


@metric("USD", source="recommendation rule: the cheaper of owning and renting", group="cost")
def cost_usd(tco_usd: Any, rent_usd: Any) -> Any:
    """The devices' cost over the period, owned or rented, whichever is cheaper [USD]; missing
    only when neither price is known."""
    return where(
        is_missing(tco_usd),
        rent_usd,
        where(is_missing(rent_usd), tco_usd, minimum(tco_usd, rent_usd)),
    )


@metric(
    "", kind="text", source="recommendation rule: the cheaper of owning and renting", group="cost"
)
def acquisition(tco_usd: Any, rent_usd: Any) -> Any:
    """How to get the devices: ``buy`` when owning costs less than renting over the period (or
    no rental price is known), ``rent`` when renting costs no more (or no purchase price or
    running cost is known); empty when neither is known. At equal cost, renting: no capital."""
    return where(
        is_missing(tco_usd),
        where(is_missing(rent_usd), "", RENT),
        where(is_missing(rent_usd), BUY, where(rent_usd <= tco_usd, RENT, BUY)),
    )


@metric("tokens/month", source="forecast load", group="cost")
def input_tokens_per_month(
    forecast_requests_per_s: Any, prompt_tokens_mean: Any, hours_per_month: Any
) -> Any:
    """Prompt tokens sent per month at the forecast load [tokens]."""
    return forecast_requests_per_s * prompt_tokens_mean * 3600 * hours_per_month


@metric("USD/month", source="api_offers.yaml: list price per million tokens", group="cost")
def api_usd_per_month(
    input_tokens_per_month: Any,
    output_tokens_per_month: Any,
    api_input_usd_per_million_tokens: Any,
    api_output_usd_per_million_tokens: Any,
    tokens_per_sequence: Any,
    api_max_context_tokens: Any,
    api_cached_input_fraction: Any = 0,
    api_cached_input_usd_per_million_tokens: Any = float("nan"),
) -> Any:
    """Calling the model's hosted API for the forecast volume: tokens in and out per month ×
    their price per million [USD/month]; missing without an API offer for the model, or when
    the workload's longest request (prompt + promised output) exceeds what the API accepts.
    The share of input tokens served from the API's prompt cache is charged at its cached
    price (the full input price where the offer gives none)."""
    cached_price = where(
        is_missing(api_cached_input_usd_per_million_tokens),
        api_input_usd_per_million_tokens,
        api_cached_input_usd_per_million_tokens,
    )
    input_price = (
        1 - api_cached_input_fraction
    ) * api_input_usd_per_million_tokens + api_cached_input_fraction * cached_price
    bill = (
        input_tokens_per_month * input_price
        + output_tokens_per_month * api_output_usd_per_million_tokens
    ) / 1_000_000
    fits = where(
        is_missing(api_max_context_tokens), True, tokens_per_sequence <= api_max_context_tokens
    )
    return where(fits, bill, float("nan"))


@metric("USD", source="api_offers.yaml: list price per million tokens", group="cost")
def api_usd(api_usd_per_month: Any, amortisation_months: Any) -> Any:
    """Calling the API over the amortisation period [USD]."""
    return api_usd_per_month * amortisation_months


@metric("requests/s", source="API cost grows with volume; the devices' does not", group="cost")
def api_break_even_requests_per_s(forecast_requests_per_s: Any, cost_usd: Any, api_usd: Any) -> Any:
    """The load at which the API would cost as much as these devices [requests/s]: the forecast
    × devices' cost ÷ API cost (the API bill is proportional to volume; the devices are sized
    for the forecast, so above this load the API costs more, below it less)."""
    # no API price or a free API: nothing to divide by (missing, never a division by zero)
    return forecast_requests_per_s * cost_usd / where(api_usd > 0, api_usd, float("nan"))


#: The words of :func:`acquisition` and :func:`advice`.
BUY, RENT, API = "buy", "rent", "API"


@metric(
    "",
    kind="text",
    source="recommendation rule: the cheapest of owning, renting and the API",
    group="cost",
)
def advice(acquisition: Any, api_usd: Any, cost_usd: Any) -> Any:
    """What to do about an option, in one word: ``API`` where the model's hosted API costs less
    over the period than the devices, owned or rented (or they have no known cost), else the
    cheaper way to get the devices (``acquisition``: buy or rent)."""
    cheaper = where(is_missing(cost_usd), True, api_usd < cost_usd)
    return where(is_missing(api_usd), acquisition, where(cheaper, API, acquisition))


@metric("USD", source="owning cost ÷ tokens at the forecast load", group="cost")
def owned_usd_per_million_tokens(owned_usd_per_month: Any, output_tokens_per_month: Any) -> Any:
    """Owning cost per million output tokens at the forecast load [USD]."""
    return owned_usd_per_month / output_tokens_per_month * 1_000_000


@metric("USD", source="rental cost ÷ tokens at the forecast load", group="cost")
def cloud_usd_per_million_tokens(cloud_usd_per_month: Any, output_tokens_per_month: Any) -> Any:
    """Rental cost per million output tokens at the forecast load [USD]."""
    return cloud_usd_per_month / output_tokens_per_month * 1_000_000


@metric("months", source="capital recovered by the monthly saving over renting", group="cost")
def break_even_month(capital_usd: Any, cloud_usd_per_month: Any, opex_usd_per_month: Any) -> Any:
    """First month by whose end buying has cost less than renting: ⌈capital ÷ (rent − opex)⌉.

    Missing when renting costs no more per month than operating owned devices (never breaks even)
    or when a price is missing.
    """
    saving = cloud_usd_per_month - opex_usd_per_month
    # no saving: nothing to divide by (missing, never a division by zero)
    return ceil(capital_usd / where(saving > 0, saving, float("nan")))


@metric("", kind="bool", source="recommendation rule", group="cost")
def eligible(meets_targets_planned: Any, cost_usd: Any, within_power: Any) -> Any:
    """Whether a candidate may be recommended: it meets every target, can be installed and
    powered within the rack and site limits, and has a known cost (to own or to rent)."""
    return meets_targets_planned & within_power & logical_not(is_missing(cost_usd))


@metric("", kind="text", source="recommendation rule", group="cost")
def status(
    replica_fits: Any,
    meets_targets_planned: Any,
    simulated: Any,
    target_miss_reason: Any,
    sim_reason: Any,
    cost_usd: Any,
    within_power: Any,
) -> Any:
    """Why a candidate can or cannot be recommended: memory, latency (simulated where the
    simulation ran, else the closed form), power (rack or site), or a missing price."""
    return where(
        meets_targets_planned,
        where(
            within_power,
            where(
                is_missing(cost_usd),
                "cost: no purchase price (with electricity rate) or rental price",
                "eligible",
            ),
            "power: a node draws more than a rack's budget, or the devices more than the site's",
        ),
        where(simulated & replica_fits, concat("simulation: ", sim_reason), target_miss_reason),
    )


#: The words of :func:`ruled_out_by`, in the order the recommendation rule tests them.
RULED_OUT_REASONS = ("memory", "latency", "simulation", "power", "cost")


@metric("", kind="text", source="recommendation rule", group="cost")
def ruled_out_by(
    replica_fits: Any,
    meets_targets_planned: Any,
    simulated: Any,
    cost_usd: Any,
    within_power: Any,
) -> Any:
    """What keeps a candidate from being recommended, in one word: memory (a replica cannot
    hold one maximum-length sequence), simulation (a simulated target or the rejection ceiling
    is missed), latency (not simulated, and a closed-form target is missed), power (a node over
    a rack's budget, or the devices over the site's) or cost (a price is missing); empty when it
    is eligible. ``status`` says the same in a sentence."""
    return where(
        replica_fits,
        where(
            meets_targets_planned,
            where(within_power, where(is_missing(cost_usd), "cost", ""), "power"),
            where(simulated, "simulation", "latency"),
        ),
        "memory",
    )


derived("tco_kusd", "tco_usd", lambda v: v / 1000, "kUSD", "tco_usd in thousands", "cost")
