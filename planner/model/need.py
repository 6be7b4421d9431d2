"""The need of a schedule: how many replicas and nodes each month, and each hour of its day, of
a workload's option needs as its traffic grows; metrics of the schedule's registry
(:data:`planner.model.finance.SCHEDULE`, whose names say what each argument reads).

A month's traffic is this month's × its factor, an hour's × the hour's share of the daily
profile (the busiest hour 1). The option's ``replicas_needed`` (Little's law over the arrival
rate, or the users, and the replica's capacity) is applied to that traffic, raised by the
simulation's margin where the simulation asked for more replicas than the closed form, and
rounded up to whole nodes, plus the spare nodes of N+k.
"""

from __future__ import annotations

from typing import Any

from planner.model.expr import ceil, greatest, least, maximum, minimum, power, where
from planner.model.finance import SLACK, schedule_metric
from planner.model.metric import metrics


def replicas_at(
    concurrency: Any,
    replica_capacity_sequences: Any,
    in_flight_requests: Any,
    forecast_requests_per_s: Any,
    requests_per_s_per_replica: Any,
    simulation_raise: Any,
    traffic: Any,
    prefill_tokens_per_s_demanded: Any,
    prefill_tokens_per_s_per_replica: Any,
    prefill_pool_utilisation_limit: Any,
    disaggregated: Any,
) -> Any:
    """Replicas the option needs at ``traffic`` × today's traffic: the Plan's
    ``replicas_needed`` over the scaled load (a disaggregated option's prefill pool over the
    scaled prompt tokens), raised by the simulation, rounded up [replicas]."""
    registry = metrics()
    prefill = registry["prefill_pool_replicas"].func(
        disaggregated,
        prefill_tokens_per_s_demanded * traffic,
        prefill_tokens_per_s_per_replica,
        prefill_pool_utilisation_limit,
    )
    needed = registry["replicas_needed"].func(
        concurrency=concurrency * traffic,
        replica_capacity_sequences=replica_capacity_sequences,
        in_flight_requests=in_flight_requests * traffic,
        forecast_requests_per_s=forecast_requests_per_s * traffic,
        requests_per_s_per_replica=requests_per_s_per_replica,
        prefill_pool_replicas=prefill,
    )
    return ceil(needed * simulation_raise - SLACK)


def prefill_replicas_at(
    prefill_tokens_per_s_demanded: Any,
    prefill_tokens_per_s_per_replica: Any,
    prefill_pool_utilisation_limit: Any,
    disaggregated: Any,
    traffic: Any,
) -> Any:
    """A disaggregated option's prefill replicas at ``traffic`` × today's traffic: the Plan's
    ``prefill_pool_replicas`` over the scaled prompt tokens (not raised by the simulation; 0
    for one pool) [replicas]."""
    return metrics()["prefill_pool_replicas"].func(
        disaggregated,
        prefill_tokens_per_s_demanded * traffic,
        prefill_tokens_per_s_per_replica,
        prefill_pool_utilisation_limit,
    )


#: The pools of a disaggregated option whose pools are replicas of two sizes or device types:
#: the one that carries no load of its own, and the one that does.
PREFILL_POOL, DECODE_POOL = "prefill", "decode"


def pool_replicas_at(pool: str, traffic: Any, **inputs: Any) -> Any:
    """Replicas of one pool of a two-pool option (``prefill`` or ``decode``; "" both) at
    ``traffic`` × today's: the prefill pool's (:func:`prefill_replicas_at`), the rest of the
    option's (:func:`replicas_at`) the decode pool's [replicas]."""
    total = replicas_at(**inputs, traffic=traffic)
    if not pool:
        return total
    at = prefill_replicas_at(
        inputs["prefill_tokens_per_s_demanded"],
        inputs["prefill_tokens_per_s_per_replica"],
        inputs["prefill_pool_utilisation_limit"],
        inputs["disaggregated"],
        traffic,
    )
    prefill = minimum(at, total)
    return prefill if pool == PREFILL_POOL else total - prefill


@schedule_metric("ratio", source="the simulation's replicas against the closed form's")
def simulation_raise(replicas_needed: Any, replicas_planned: Any) -> Any:
    """How far the simulation raised the closed form's replicas: replicas planned ÷ replicas
    needed, 1 where the closed form needs none [-]."""
    return where(replicas_needed > 0, replicas_planned / replicas_needed, 1)


@schedule_metric("devices", kind="integer", source="devices_per_node of the hardware")
def node_devices(devices_per_node: Any, tensor_parallel: Any, replicas_all: Any) -> Any:
    """Devices in one node of the schedule: a full node once the horizon's peak fills one,
    else the peak's devices (a replica's at least), so a fleet smaller than a node is not priced
    as a full one [devices]."""
    return minimum(
        devices_per_node, maximum(tensor_parallel, greatest(replicas_all) * tensor_parallel)
    )


@schedule_metric("-", source="compound growth")
def traffic_factor(growth_per_month: Any, month: Any) -> Any:
    """Traffic in the month as a multiple of this month's: (1 + growth)^month [-]."""
    return power(1 + growth_per_month, month)


@schedule_metric("replicas", kind="integer", source="replicas_needed over the month's traffic")
def replicas(
    concurrency: Any,
    replica_capacity_sequences: Any,
    in_flight_requests: Any,
    forecast_requests_per_s: Any,
    requests_per_s_per_replica: Any,
    simulation_raise: Any,
    traffic_factor: Any,
    daily_profile: Any,
    prefill_tokens_per_s_demanded: Any,
    prefill_tokens_per_s_per_replica: Any,
    prefill_pool_utilisation_limit: Any,
    disaggregated: Any,
) -> Any:
    """Replicas the month's busiest hour needs [replicas]."""
    return replicas_at(
        concurrency,
        replica_capacity_sequences,
        in_flight_requests,
        forecast_requests_per_s,
        requests_per_s_per_replica,
        simulation_raise,
        traffic_factor * greatest(daily_profile),
        prefill_tokens_per_s_demanded,
        prefill_tokens_per_s_per_replica,
        prefill_pool_utilisation_limit,
        disaggregated,
    )


@schedule_metric("nodes", kind="integer", source="replicas_needed over the hour's traffic")
def hour_nodes(
    concurrency: Any,
    replica_capacity_sequences: Any,
    in_flight_requests: Any,
    forecast_requests_per_s: Any,
    requests_per_s_per_replica: Any,
    simulation_raise: Any,
    traffic_factor: Any,
    hour_share: Any,
    tensor_parallel: Any,
    node_devices: Any,
    spare_nodes: Any,
    prefill_tokens_per_s_demanded: Any,
    prefill_tokens_per_s_per_replica: Any,
    prefill_pool_utilisation_limit: Any,
    disaggregated: Any,
    prefill_hw_tensor_parallel: Any = 0,
) -> Any:
    """Nodes an hour of the month needs: its replicas' devices in whole nodes, plus the spare
    nodes [nodes]. A prefill pool of its own replica size counts its replicas at the hour's
    prompt tokens (unraised) at that size
    (:func:`planner.model.disaggregated.prefill_pool_device_offset`)."""
    traffic = traffic_factor * hour_share
    prefill = prefill_replicas_at(
        prefill_tokens_per_s_demanded,
        prefill_tokens_per_s_per_replica,
        prefill_pool_utilisation_limit,
        disaggregated,
        traffic,
    )
    own = where(prefill_hw_tensor_parallel > 0, prefill_hw_tensor_parallel, tensor_parallel)
    offset = metrics()["prefill_pool_device_offset"].func(prefill, own, tensor_parallel)
    hour_replicas = replicas_at(
        concurrency,
        replica_capacity_sequences,
        in_flight_requests,
        forecast_requests_per_s,
        requests_per_s_per_replica,
        simulation_raise,
        traffic,
        prefill_tokens_per_s_demanded,
        prefill_tokens_per_s_per_replica,
        prefill_pool_utilisation_limit,
        disaggregated,
    )
    devices = hour_replicas * tensor_parallel + offset
    return ceil(devices / node_devices - SLACK) + spare_nodes


@schedule_metric("nodes", kind="integer")
def nodes_needed(hourly_nodes: Any) -> Any:
    """Nodes the month's busiest hour needs [nodes]."""
    return greatest(hourly_nodes)


@schedule_metric("nodes", kind="integer")
def nodes_base(hourly_nodes: Any) -> Any:
    """Nodes the month's quietest hour needs [nodes]."""
    return least(hourly_nodes)
