"""The shared fleet's months: one device type's devices owned, rented and paid for month by month,
one definition per quantity, evaluated by :mod:`planner.plan.fleet_schedule` and written as the
``Fleet months`` sheet's formulas by :mod:`planner.outputs.workbook.fleet_months`.

A type's block reads its node's devices (``type_node_devices``), the spare nodes it keeps once
it owns a device (``type_spare_nodes``), a device's capital, running cost and rent, and a
node's overhead beyond its devices (``overhead_capital_usd``, ``overhead_running_usd_per_month``);
a month's row reads the devices each hour of its day needs (``hourly_devices``) and the devices
worth owning that month (``devices_worth_owning``: the least-cost count,
:func:`planner.plan.fleet_schedule.devices_worth_owning`, an input of the sheet). Arguments read
month columns as :mod:`planner.model.finance` describes (``_all``, ``_so_far``, ``previous_``);
the money is the schedule's own helpers over devices and nodes.
"""

from __future__ import annotations

from typing import Any

from planner.model.expr import ceil, maximum, sum_product, total, where
from planner.model.facility import facility_peak_kw
from planner.model.finance import (
    HOURS,
    SCHEDULE,
    SLACK,
    book_value_usd,
    npv,
    owned_after_lead,
    paid,
    rented_hours,
    schedule_metric,
    times,
)
from planner.model.metric import rebound


@schedule_metric("devices", kind="integer", source="spare nodes kept once a device is owned")
def devices_wanted(devices_worth_owning: Any, type_spare_nodes: Any, type_node_devices: Any) -> Any:
    """Devices to own this month: those worth owning and, once there are any, the spare nodes'
    devices (N+k) [devices]."""
    spares = type_spare_nodes * type_node_devices
    return where(devices_worth_owning > 0, devices_worth_owning + spares, 0)


@schedule_metric("devices", kind="integer", source="each device ordered a lead time ahead")
def devices_owned(month: Any, lead_time_months: Any, devices_wanted_so_far: Any) -> Any:
    """Devices owned in service: every device wanted so far, each ordered the lead time before
    it is first wanted, kept to the end [devices]."""
    return owned_after_lead(month, lead_time_months, devices_wanted_so_far)


@schedule_metric("nodes", kind="integer")
def type_nodes_owned(devices_owned: Any, type_node_devices: Any) -> Any:
    """Nodes that hold the owned devices [nodes]."""
    return ceil(maximum(devices_owned / type_node_devices - SLACK, 0))


@schedule_metric("devices", kind="integer")
def devices_serving(devices_owned: Any, type_spare_nodes: Any, type_node_devices: Any) -> Any:
    """Owned devices that serve, the spare nodes' kept free [devices]."""
    return maximum(devices_owned - type_spare_nodes * type_node_devices, 0)


@schedule_metric("device·h/day", kind="integer")
def rented_device_hours_per_day(hourly_devices: Any, devices_serving: Any) -> Any:
    """Device-hours a day beyond the owned devices that serve, rented by the hour
    [device·h/day]."""
    return rented_hours(hourly_devices, devices_serving)


@schedule_metric("kW", source="board power × PUE, as the plan's facility_peak_kw")
def owned_peak_kw(devices_owned: Any, device_power_w: Any, pue: Any) -> Any:
    """Power the owned devices draw at the facility at full load, spares included: devices ×
    board power × PUE (:func:`planner.model.facility.facility_peak_kw`) [kW]."""
    return facility_peak_kw(devices_owned, device_power_w, pue)


@schedule_metric("devices", kind="integer")
def devices_arriving(devices_owned: Any, previous_devices_owned: Any) -> Any:
    """Owned devices arriving this month, paid on arrival [devices]."""
    return devices_owned - previous_devices_owned


@schedule_metric("nodes", kind="integer")
def type_nodes_arriving(type_nodes_owned: Any, previous_type_nodes_owned: Any) -> Any:
    """Nodes arriving this month, their overhead paid on arrival [nodes]."""
    return type_nodes_owned - previous_type_nodes_owned


@schedule_metric("USD")
def fleet_cash_usd(
    devices_arriving: Any,
    device_capital_usd: Any,
    devices_owned: Any,
    device_running_usd_per_month: Any,
    rented_device_hours_per_day: Any,
    device_rent_usd_per_month: Any,
    type_nodes_arriving: Any,
    overhead_capital_usd: Any,
    type_nodes_owned: Any,
    overhead_running_usd_per_month: Any,
) -> Any:
    """The type's cash this month: capital of the devices and nodes arriving, running cost of
    those owned, rent of the device-hours beyond them [USD]."""
    devices = paid(
        devices_arriving,
        device_capital_usd,
        devices_owned,
        device_running_usd_per_month,
        rented_device_hours_per_day,
        device_rent_usd_per_month,
    )
    nodes = times(type_nodes_arriving, overhead_capital_usd)
    return devices + nodes + times(type_nodes_owned, overhead_running_usd_per_month)


@schedule_metric("USD")
def fleet_rent_everything_usd(hourly_devices: Any, device_rent_usd_per_month: Any) -> Any:
    """Renting every device-hour of the type's need this month [USD]."""
    return times(total(hourly_devices), device_rent_usd_per_month / HOURS)


@schedule_metric("USD", source="straight-line depreciation")
def fleet_book_value_at_end_usd(
    devices_arriving: Any,
    device_capital_usd: Any,
    type_nodes_arriving: Any,
    overhead_capital_usd: Any,
    months: Any,
    month: Any,
    amortisation_months: Any,
) -> Any:
    """What the devices and nodes arriving this month are still worth at the end of the
    horizon [USD]."""
    age = months - month
    devices = times(devices_arriving, book_value_usd(device_capital_usd, age, amortisation_months))
    nodes = book_value_usd(overhead_capital_usd, age, amortisation_months)
    return devices + times(type_nodes_arriving, nodes)


rebound(
    "fleet_total_cash_usd",
    "total_cash_usd",
    {"cash_usd_all": "fleet_cash_usd_all"},
    "The type's cash over the horizon [USD].",
    SCHEDULE,
)
rebound(
    "fleet_total_book_value_at_end_usd",
    "total_cash_usd",
    {"cash_usd_all": "fleet_book_value_at_end_usd_all"},
    "What the type's owned devices and nodes are still worth at the end of the horizon [USD].",
    SCHEDULE,
)


@schedule_metric("USD", source="cash discounted monthly at the annual rate")
def fleet_npv_usd(
    fleet_cash_usd_all: Any,
    discount_factor_all: Any,
    fleet_total_book_value_at_end_usd: Any,
    discount_rate_per_year: Any,
    months: Any,
) -> Any:
    """Net present value of the type's cash less what it owns at the end [USD]."""
    return npv(
        fleet_cash_usd_all, discount_factor_all, fleet_total_book_value_at_end_usd,
        discount_rate_per_year, months,
    )  # fmt: skip


@schedule_metric("USD", source="cash discounted monthly at the annual rate")
def fleet_rent_everything_npv_usd(
    fleet_rent_everything_usd_all: Any, discount_factor_all: Any
) -> Any:
    """Net present value of renting every device-hour of the type's need [USD]."""
    return sum_product(fleet_rent_everything_usd_all, discount_factor_all)


#: The month metrics of a type, in an order that computes each after what it reads.
FLEET_MONTHS = (
    "devices_wanted", "devices_owned", "type_nodes_owned", "devices_serving",
    "rented_device_hours_per_day", "devices_arriving", "type_nodes_arriving", "fleet_cash_usd",
    "fleet_rent_everything_usd", "discount_factor", "fleet_book_value_at_end_usd",
)  # fmt: skip

#: The month metric of the facility's power, where the device's board power is known.
FLEET_POWER_MONTHS = ("owned_peak_kw",)

#: The metrics over the horizon, likewise.
FLEET_HORIZON = (
    "fleet_total_cash_usd", "fleet_total_book_value_at_end_usd", "fleet_npv_usd",
    "fleet_rent_everything_npv_usd",
)  # fmt: skip


# Leasing the type's devices and nodes instead of buying them -----------------------------------

rebound(
    "device_lease_payment_usd_per_month",
    "lease_payment_usd_per_month",
    {"node_capital_usd": "device_capital_usd"},
    "Monthly payment of a lease that repays one device's capital over the term [USD/month].",
    SCHEDULE,
)
rebound(
    "overhead_lease_payment_usd_per_month",
    "lease_payment_usd_per_month",
    {"node_capital_usd": "overhead_capital_usd"},
    "Monthly payment of a lease that repays one node's overhead over the term [USD/month].",
    SCHEDULE,
)
rebound(
    "lease_paying_devices",
    "lease_paying_nodes",
    {"nodes_owned": "devices_owned", "nodes_owned_all": "devices_owned_all"},
    "Leased devices still paid for this month: those arrived within the term [devices].",
    SCHEDULE,
)
rebound(
    "lease_paying_type_nodes",
    "lease_paying_nodes",
    {"nodes_owned": "type_nodes_owned", "nodes_owned_all": "type_nodes_owned_all"},
    "Leased nodes still paid for this month: those arrived within the term [nodes].",
    SCHEDULE,
)
rebound(
    "fleet_lease_cash_usd",
    "fleet_cash_usd",
    {
        "devices_arriving": "lease_paying_devices",
        "device_capital_usd": "device_lease_payment_usd_per_month",
        "type_nodes_arriving": "lease_paying_type_nodes",
        "overhead_capital_usd": "overhead_lease_payment_usd_per_month",
    },
    "Leasing the type's devices and nodes, this month: the payments of those within their "
    "term, running cost of those owned, rent of the device-hours beyond them [USD].",
    SCHEDULE,
)
rebound(
    "devices_lease_owed_at_end_usd",
    "lease_owed_at_end_usd",
    {
        "nodes_arriving_all": "devices_arriving_all",
        "lease_payment_usd_per_month": "device_lease_payment_usd_per_month",
    },
    "The devices' lease payments still owed at the end of the horizon [USD].",
    SCHEDULE,
)
rebound(
    "type_nodes_lease_owed_at_end_usd",
    "lease_owed_at_end_usd",
    {
        "nodes_arriving_all": "type_nodes_arriving_all",
        "lease_payment_usd_per_month": "overhead_lease_payment_usd_per_month",
    },
    "The nodes' lease payments still owed at the end of the horizon [USD].",
    SCHEDULE,
)


@schedule_metric("USD")
def fleet_lease_owed_at_end_usd(
    devices_lease_owed_at_end_usd: Any, type_nodes_lease_owed_at_end_usd: Any
) -> Any:
    """The type's lease payments still owed at the end of the horizon [USD]."""
    return devices_lease_owed_at_end_usd + type_nodes_lease_owed_at_end_usd


rebound(
    "fleet_lease_npv_usd",
    "lease_npv_usd",
    {
        "lease_cash_usd_all": "fleet_lease_cash_usd_all",
        "lease_owed_at_end_usd": "fleet_lease_owed_at_end_usd",
    },
    "Net present value of leasing the type's devices and nodes, the payments still owed at "
    "the end included [USD].",
    SCHEDULE,
)

#: With a lease in the assumptions: the block's payments, the month metrics and the totals.
FLEET_LEASE_BLOCK = ("device_lease_payment_usd_per_month", "overhead_lease_payment_usd_per_month")
FLEET_LEASE_MONTHS = ("lease_paying_devices", "lease_paying_type_nodes", "fleet_lease_cash_usd")
FLEET_LEASE_HORIZON = (
    "devices_lease_owed_at_end_usd", "type_nodes_lease_owed_at_end_usd",
    "fleet_lease_owed_at_end_usd", "fleet_lease_npv_usd",
)  # fmt: skip
