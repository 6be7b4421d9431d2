"""The shared fleet's arithmetic from its counts: what share of each workload's load the replicas
and the API carry hour by hour, whether the owned devices and nodes hold the owned replicas, and
what the fleet costs over the period. One definition per quantity, evaluated by
:mod:`planner.plan.fleet` and written as the ``Fleet`` sheet's formulas by
:mod:`planner.outputs.workbook.fleet`, so that finance can change a count and see whether the
targets still hold. The counts themselves are the integer program's
(:func:`planner.plan.fleet.solve`); these formulas check and price them, they do not choose them.

An argument's name says what it reads: a quantity of the row (an option's, a workload's or a
device type's), or, ending in ``_column``, that quantity over every option's row (a range);
``workload_number`` and ``type_number`` tie an option's row to its workload's and its device
type's rows by their numbers, never by their names.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from planner.model.expr import floor, greatest, maximum, sum_product, total, where
from planner.model.finance import HOURS, times
from planner.model.metric import Kind, Metric, metric

#: The fleet's metrics by name; read it through :func:`fleet_metrics`.
FLEET: dict[str, Metric] = {}

#: How far below 1 a share served may fall and still count as the whole load (the optimiser's
#: tolerance, not a shortfall anyone would notice).
TOLERANCE = 1e-6


def fleet_metrics() -> dict[str, Metric]:
    """Every fleet metric by name."""
    importlib.import_module(__name__)
    return FLEET


def fleet_metric(
    unit: str, *, source: str = "", kind: Kind = "number"
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a formula function as a fleet metric (:func:`planner.model.metric.metric`)."""
    return metric(unit, source=source, kind=kind, group="fleet", into=FLEET)


@fleet_metric("-", source="a share of the load needs that share of the replicas")
def option_share(replicas_owned: Any, replicas_rented: Any, replicas_alone: Any) -> Any:
    """Share of its workload's load in the hour that an option's replicas carry: the replicas on
    owned and rented devices ÷ the replicas that carry the whole load alone; none where the
    hour needs none [-]."""
    return where(replicas_alone > 0, (replicas_owned + replicas_rented) / replicas_alone, 0)


def _matches(
    workload_number_column: Any, workload_number: Any, part_number_column: Any, part_number: Any
) -> Any:
    """1 for each option that carries the demand's load: its workload's, and its length class
    or the whole mix (part 0)."""
    same_part = ((part_number_column == part_number) + (part_number_column == 0)) > 0
    return (workload_number_column == workload_number) * same_part


@fleet_metric("-")
def load_served(
    workload_number_column: Any,
    workload_number: Any,
    part_number_column: Any,
    part_number: Any,
    option_share_column: Any,
    api_share: Any,
) -> Any:
    """Share of the demand's load in the hour that the fleet serves (a workload's, or one
    length class of it): the shares of the options that carry it, and the share sent to the
    hosted API [-]."""
    mine = _matches(workload_number_column, workload_number, part_number_column, part_number)
    return sum_product(mine * option_share_column) + api_share


@fleet_metric("-")
def load_short(
    load_served: Any,
    workload_number_column: Any,
    workload_number: Any,
    part_number_column: Any,
    part_number: Any,
    replicas_alone_column: Any,
) -> Any:
    """Share of the demand's load in the hour that nothing serves: 1 − the share served, where
    any option that carries it needs a replica that hour; none otherwise [-]."""
    mine = _matches(workload_number_column, workload_number, part_number_column, part_number)
    needed = sum_product(mine * (replicas_alone_column > 0))
    return where(needed > 0, maximum(1 - load_served, 0), 0)


@fleet_metric("", kind="bool", source="each workload's targets at its forecast load")
def load_met(load_short_all: Any) -> Any:
    """Whether every hour's load is served: the largest shortfall within the tolerance."""
    return greatest(load_short_all) <= TOLERANCE


@fleet_metric("-", source="a decode pool's share of the load needs as large a share of its prefill")
def pace_short(prefill_share: Any, decode_share: Any) -> Any:
    """Share of the hour's load a two-pool option's decode pool carries beyond what its
    prefill pool keeps pace with: the decode pool's share − the prefill pool's (each its
    replicas ÷ those that carry the hour alone), none where the prefill pool keeps up [-]."""
    return maximum(decode_share - prefill_share, 0)


@fleet_metric("", kind="bool")
def pools_paced(pace_short_all: Any) -> Any:
    """Whether the prefill pool keeps pace every hour: the largest shortfall within the
    tolerance."""
    return greatest(pace_short_all) <= TOLERANCE


@fleet_metric("devices")
def devices_in_use(
    type_number_column: Any,
    type_number: Any,
    devices_per_replica_column: Any,
    replicas_column: Any,
) -> Any:
    """Devices of the type the replicas of a column use in the hour (those on owned devices, or
    those rented): Σ devices per replica × replicas, over its options [devices]."""
    on_type = type_number_column == type_number
    return sum_product(on_type * devices_per_replica_column * replicas_column)


@fleet_metric("devices")
def devices_packed(
    type_number_column: Any,
    type_number: Any,
    devices_per_replica_column: Any,
    replica_size: Any,
    replicas_owned_column: Any,
) -> Any:
    """Owned devices in the hour held by the type's replicas of ``replica_size`` devices or more
    [devices]."""
    on_type = type_number_column == type_number
    large = devices_per_replica_column >= replica_size
    return sum_product(on_type * large * devices_per_replica_column * replicas_owned_column)


def node_room(replica_size: Any, devices_per_node: Any) -> Any:
    """Devices of one node that replicas of ``replica_size`` devices can use: size × ⌊devices a
    node ÷ size⌋, or the whole node for a replica of several whole nodes (a pipeline's stages)
    [devices]. Three-device replicas on 8-device nodes: 6; 16-device ones: 8."""
    within = replica_size * floor(devices_per_node / replica_size)
    return where(replica_size > devices_per_node, devices_per_node, within)


@fleet_metric("devices", source="bin packing with divisible item sizes (Coffman et al. 1987)")
def packing_room(
    owned_nodes: Any, spare_nodes: Any, replica_size: Any, devices_per_node: Any
) -> Any:
    """Devices that replicas of ``replica_size`` devices or more can use on the owned nodes
    left beside the spares: nodes × :func:`node_room` [devices] (with sizes that divide one
    another, replicas that fit this room for every size pack whole onto the nodes)."""
    return (owned_nodes - spare_nodes) * node_room(replica_size, devices_per_node)


@fleet_metric("", kind="bool")
def packing_holds(devices_packed_all: Any, packing_room: Any) -> Any:
    """Whether the replicas of the size fit the room on the nodes at every hour."""
    return greatest(devices_packed_all) <= packing_room


@fleet_metric("", kind="bool")
def devices_hold(
    devices_owned_used_all: Any, spare_nodes: Any, devices_per_node: Any, owned_devices: Any
) -> Any:
    """Whether the owned devices hold the owned replicas at every hour with the spare nodes'
    devices kept free, and fit on the owned nodes."""
    return greatest(devices_owned_used_all) + spare_nodes * devices_per_node <= owned_devices


@fleet_metric("", kind="bool")
def nodes_hold(owned_devices: Any, owned_nodes: Any, devices_per_node: Any) -> Any:
    """Whether the owned nodes have room for the owned devices."""
    return owned_devices <= owned_nodes * devices_per_node


@fleet_metric("device·h/day")
def rented_device_hours_per_day(devices_rented_all: Any) -> Any:
    """Device-hours of the type rented a day [device·h/day]."""
    return total(devices_rented_all)


@fleet_metric("USD", source="the plan's capital, running and rental cost metrics")
def type_cost_usd(
    owned_devices: Any,
    device_owned_usd: Any,
    owned_nodes: Any,
    node_owned_usd: Any,
    rented_device_hours_per_day: Any,
    device_rented_usd: Any,
) -> Any:
    """The device type over the period: devices and nodes owned, and device-hours rented a day
    at a device's rent around the clock spread over the day's hours [USD]."""
    return (
        times(owned_devices, device_owned_usd)
        + times(owned_nodes, node_owned_usd)
        + times(rented_device_hours_per_day, device_rented_usd / HOURS)
    )


@fleet_metric("USD", source="the API offer's prices over the forecast volume")
def api_cost_usd(api_share_all: Any, daily_profile: Any, api_bill_usd: Any) -> Any:
    """The workload's API calls over the period: the bill for the busiest hour's traffic all
    day × Σ each hour's share sent × the hour's traffic ÷ 24 [USD]."""
    return times(sum_product(api_share_all, daily_profile), api_bill_usd / HOURS)


@fleet_metric("USD")
def fleet_cost_usd(type_cost_usd_all: Any, api_cost_usd_all: Any) -> Any:
    """The fleet over the period: its device types and its API calls [USD]."""
    return total(type_cost_usd_all) + total(api_cost_usd_all)


#: What the Fleet sheet's status reads with the optimiser's counts, and once one is edited.
CHOSEN = "the optimiser's fleet"
EDITED = "edited: no longer the optimiser's fleet (the sheet checks it, it does not re-optimise)"


@fleet_metric("", kind="text")
def plan_status(
    replicas_owned_all: Any,
    chosen_replicas_owned: Any,
    replicas_rented_all: Any,
    chosen_replicas_rented: Any,
    api_share_all: Any,
    chosen_api_share: Any,
    owned_counts_all: Any,
    chosen_owned_counts: Any,
) -> Any:
    """Whether the counts are still those the optimiser chose: each count against its copy."""
    pairs = [
        (replicas_owned_all, chosen_replicas_owned),
        (replicas_rented_all, chosen_replicas_rented),
        (api_share_all, chosen_api_share),
        (owned_counts_all, chosen_owned_counts),
    ]
    changed = sum_product((pairs[0][0] - pairs[0][1]) * (pairs[0][0] - pairs[0][1]))
    for now, chosen in pairs[1:]:
        changed = changed + sum_product((now - chosen) * (now - chosen))
    return where(changed > TOLERANCE, EDITED, CHOSEN)


def _number(value: Any) -> Any:
    """A value as the formulas compute with it: ranges as float arrays, numbers as floats."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return np.asarray(value, dtype=float)
    return np.float64(value)


def value(name: str, values: Mapping[str, Any]) -> Any:
    """Fleet metric ``name`` over ``values`` (each of its arguments by name; a range as a list)
    [the metric's unit]."""
    m = fleet_metrics()[name]
    with np.errstate(all="ignore"):
        result = m.func(*(_number(values[i]) for i in m.inputs))
    if m.kind == "bool":
        return bool(result)
    return str(result) if m.kind == "text" else float(result)
