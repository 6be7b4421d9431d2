"""Margins: how much room a candidate leaves to each latency target and in its KV capacity.

A recommendation that meets its targets by 2 % or fills its cache to 95 % at the forecast load
is a bet on the forecast and on the estimates; a signer should see it. The figures compared are
the planned ones: the simulated p95 where the candidate was simulated, else the closed form at
the forecast load (:mod:`planner.model.load`).
"""

from __future__ import annotations

from typing import Any

from planner.model.expr import is_missing, is_number, logical_not, maximum, minimum, where
from planner.model.metric import metric
from planner.model.sources import LITTLE, SRE

NAN = float("nan")


def _planned(simulated: Any, simulated_p95: Any, closed_form: Any) -> Any:
    return where(
        simulated, where(is_number(simulated_p95), simulated_p95, closed_form), closed_form
    )


@metric("s", source="serving simulation, else closed form", group="margins")
def ttft_planned_s(simulated: Any, ttft_p95_s: Any, ttft_s: Any) -> Any:
    """Time to first token as planned [s]: simulated p95 where simulated, else closed form."""
    return _planned(simulated, ttft_p95_s, ttft_s)


@metric("s", source="serving simulation, else closed form", group="margins")
def itl_planned_s(simulated: Any, itl_p95_s: Any, itl_load_s: Any) -> Any:
    """Inter-token latency as planned [s]: simulated p95 where simulated, else closed form."""
    return _planned(simulated, itl_p95_s, itl_load_s)


@metric("s", source="serving simulation, else closed form", group="margins")
def e2e_planned_s(simulated: Any, e2e_p95_s: Any, e2e_load_s: Any) -> Any:
    """End-to-end latency as planned [s]: simulated p95 where simulated, else closed form."""
    return _planned(simulated, e2e_p95_s, e2e_load_s)


@metric("s", source="serving simulation, else closed form", group="margins")
def task_planned_s(simulated: Any, task_p95_s: Any, task_load_s: Any) -> Any:
    """Task latency as planned: the simulated p95 where simulated, else the closed form [s]."""
    return _planned(simulated, task_p95_s, task_load_s)


def _headroom(planned: Any, target: Any) -> Any:
    # no target: no headroom to speak of (missing), never a division by a missing target
    return where(is_missing(target), NAN, 1 - planned / where(target > 0, target, NAN))


@metric("fraction", source=SRE, group="margins")
def ttft_headroom(ttft_planned_s: Any, ttft_p95_target_s: Any) -> Any:
    """Share of the TTFT target left: 1 − planned ÷ target (missing without a target)."""
    return _headroom(ttft_planned_s, ttft_p95_target_s)


@metric("fraction", source=SRE, group="margins")
def itl_headroom(itl_planned_s: Any, itl_p95_target_s: Any) -> Any:
    """Share of the ITL target left: 1 − planned ÷ target (missing without a target)."""
    return _headroom(itl_planned_s, itl_p95_target_s)


@metric("fraction", source=SRE, group="margins")
def e2e_headroom(e2e_planned_s: Any, e2e_p95_target_s: Any) -> Any:
    """Share of the end-to-end target left: 1 − planned ÷ target (missing without a target)."""
    return _headroom(e2e_planned_s, e2e_p95_target_s)


@metric("fraction", source=SRE, group="margins")
def task_headroom(task_planned_s: Any, task_p95_target_s: Any) -> Any:
    """Share of the task target left: 1 − planned ÷ target (missing without a target)."""
    return _headroom(task_planned_s, task_p95_target_s)


def _least(a: Any, b: Any) -> Any:
    return where(is_missing(a), b, where(is_missing(b), a, minimum(a, b)))


@metric("fraction", source=SRE, group="margins")
def latency_headroom(
    ttft_headroom: Any, itl_headroom: Any, e2e_headroom: Any, task_headroom: Any
) -> Any:
    """The least headroom to any latency target (missing when no target is set)."""
    return _least(_least(ttft_headroom, itl_headroom), _least(e2e_headroom, task_headroom))


@metric("sequences", source=f"{LITTLE}: L = λ × W", group="margins")
def sequences_per_replica(
    concurrency: Any, in_flight_requests: Any, decode_pool_replicas: Any
) -> Any:
    """Sequences a replica holds at the forecast load: users (closed loop) or requests in
    flight (open loop) spread over the planned replicas that hold sequences (a disaggregated
    candidate's decode pool) [sequences]."""
    load = where(concurrency > 0, concurrency, in_flight_requests)
    # no replica planned (nothing fits, or the simulation found no count): missing
    return load / where(decode_pool_replicas > 0, decode_pool_replicas, NAN)


@metric("fraction", source="KV capacity of a replica at the forecast load", group="margins")
def kv_spare_fraction(sequences_per_replica: Any, replica_capacity_sequences: Any) -> Any:
    """Share of a replica's sequence capacity left at the forecast load: 1 − sequences ÷
    capacity (missing when a replica holds none)."""
    capacity = where(replica_capacity_sequences > 0, replica_capacity_sequences, NAN)
    return 1 - sequences_per_replica / capacity


@metric("", kind="bool", source="margin_fraction assumption", group="margins")
def tight_margin(latency_headroom: Any, kv_spare_fraction: Any, margin_fraction: Any) -> Any:
    """Whether a latency target or the KV capacity is closer than ``margin_fraction``."""
    tight_latency = where(is_missing(latency_headroom), False, latency_headroom < margin_fraction)
    tight_kv = where(is_missing(kv_spare_fraction), False, kv_spare_fraction < margin_fraction)
    return logical_not(logical_not(tight_latency) & logical_not(tight_kv))


@metric("fraction", source="margin_fraction assumption", group="margins")
def margin_shortfall(latency_headroom: Any, kv_spare_fraction: Any, margin_fraction: Any) -> Any:
    """How far the least room, to a latency target or in the KV capacity, falls short of
    ``margin_fraction``: margin − least room, 0 when the margin is kept (or nothing is
    measured). Among options of equal cost the ranking prefers the smaller."""
    least = _least(latency_headroom, kv_spare_fraction)
    return where(is_missing(least), 0, maximum(margin_fraction - least, 0))
