"""Capacity in closed form: throughput per replica, the forecast load, replicas and targets.

Queueing is left to the simulation (:mod:`planner.serving.simulate`); these formulas give the steady
state a fleet must at least provide, and they stay live formulas in the workbook.
"""

from __future__ import annotations

from functools import reduce
from operator import and_
from typing import Any

from planner.model.expr import ceil, concat, is_missing, is_number, maximum, where
from planner.model.metric import metric
from planner.model.sources import LITTLE, SRE
from planner.model.targets import TARGETS, taking


@metric("", kind="text", source="the five key columns", group="keys")
def candidate(
    hardware: Any,
    model: Any,
    precision: Any,
    workload: Any,
    tensor_parallel: Any,
    expert_parallel: Any = 1,
    disaggregated: Any = 0,
    pipeline_parallel: Any = 1,
    prefill_hardware: Any = "",
    prefill_parallel: Any = 0,
) -> Any:
    """The candidate's id: its keys joined with '|', e.g. ``h100|llama|bf16|chat|2``, then
    ``|ep8`` after an expert-parallel layout's, ``|pp2`` after a pipeline of two stages' and
    ``|pd`` after a disaggregated one's, ``|pd-`` and the prefill pool's hardware where that is
    another device (``h100|llama|bf16|chat|2|pd-h200``; ``prefill_hardware`` blank or the
    row's own: ``|pd``), then ``|prefill-ep32`` (``|prefill-tp8``) where the prefill replicas
    have an expert-parallel (tensor-parallel) size of their own.

    Simulated figures are looked up by it from the ``Simulated`` sheet.
    """
    layout = where(expert_parallel > 1, concat("|ep", expert_parallel), "")
    stages = where(pipeline_parallel > 1, concat("|pp", pipeline_parallel), "")
    other = concat("|pd-", prefill_hardware)
    own = (prefill_hardware == "") | (prefill_hardware == hardware)
    pools = where(disaggregated > 0, where(own, "|pd", other), "")
    sized = (disaggregated > 0) & (prefill_parallel > 0)
    kind = where(expert_parallel > 1, "|prefill-ep", "|prefill-tp")
    prefill = where(sized, concat(kind, prefill_parallel), "")
    keys = concat(hardware, "|", model, "|", precision, "|", workload, "|", tensor_parallel)
    return concat(keys, layout, stages, pools, prefill)


@metric("1/s", source="steady state of continuous batching", group="serving")
def requests_per_s_per_replica(
    decode_batch: Any,
    prefill_s: Any,
    output_tokens_mean: Any,
    itl_s: Any,
    disaggregated: Any = 0,
) -> Any:
    """Requests a replica completes per second at its batch [1/s].

    B requests take B prefills (each stalls the batch) and (mean output − 1) shared decode steps:
    B ÷ (B × prefill + (output − 1) × ITL); a decode pool's replica prefills none. A replica
    that holds no sequence (B = 0) of a one-token workload completes none: its time is
    missing, never 0 ÷ 0.
    """
    prefills = where(disaggregated > 0, 0, decode_batch * prefill_s)
    busy_s = prefills + (output_tokens_mean - 1) * itl_s
    return decode_batch / where(busy_s > 0, busy_s, float("nan"))


@metric("tokens/s", source="steady state of continuous batching", group="serving")
def output_tokens_per_s_per_replica(
    requests_per_s_per_replica: Any, output_tokens_mean: Any
) -> Any:
    """Output tokens (prompts not counted) one replica generates per second with its batch full
    [tokens/s]: its capacity, not the rate at the forecast load."""
    return requests_per_s_per_replica * output_tokens_mean


@metric("1/s", source="workload forecast", group="serving")
def forecast_requests_per_s(
    arrival_rate_per_s: Any, concurrency: Any, requests_per_task: Any, task_s: Any, tool_time_s: Any
) -> Any:
    """Model requests per second the fleet must serve [1/s].

    Open loop: task arrivals × calls per task. Closed loop: each user runs tasks back to back, so
    users × calls per task ÷ task latency.
    """
    closed = concurrency * requests_per_task / task_s
    return where(arrival_rate_per_s > 0, arrival_rate_per_s * requests_per_task, closed)


@metric("requests", source=f"{LITTLE}: L = λ × W", group="serving")
def in_flight_requests(
    forecast_requests_per_s: Any, e2e_s: Any, ttft_s: Any = 0, disaggregated: Any = 0
) -> Any:
    """Requests a pool of replicas holds at once on average: arrival rate × their time on it,
    end to end, or on a decode pool from their first token on, e2e − TTFT [requests]."""
    held_s = where(disaggregated > 0, e2e_s - ttft_s, e2e_s)
    return forecast_requests_per_s * held_s


@metric("replicas", source=f"{LITTLE}: L = λ × W", group="serving")
def replicas_needed(
    concurrency: Any,
    replica_capacity_sequences: Any,
    in_flight_requests: Any,
    forecast_requests_per_s: Any,
    requests_per_s_per_replica: Any,
    prefill_pool_replicas: Any = 0,
) -> Any:
    """Replicas for the forecast; missing when not one maximum-length sequence fits a replica.

    Closed loop: ⌈users ÷ sequences per replica⌉ (users wait for their answers, so their rate
    follows the capacity). Open loop: max(1, ⌈in flight ÷ sequences per replica⌉,
    ⌈forecast ÷ per-replica rate⌉): room for the requests in flight and enough throughput.
    A disaggregated candidate's are its decode pool's, so counted, and its prefill pool's.
    """
    # the guards only matter where no sequence fits, a branch that returns missing anyway
    slots = maximum(replica_capacity_sequences, 1)
    by_memory = ceil(in_flight_requests / slots)
    by_rate = ceil(forecast_requests_per_s / maximum(requests_per_s_per_replica, 1e-12))
    open_loop = maximum(1, maximum(by_memory, by_rate))
    closed_loop = ceil(concurrency / slots)
    return where(
        replica_capacity_sequences >= 1,
        where(concurrency > 0, closed_loop, open_loop) + prefill_pool_replicas,
        float("nan"),
    )


@metric("", kind="bool", source="simulation run for this candidate", group="serving")
def simulated(sim_meets_targets: Any) -> Any:
    """Whether the serving simulation was run for this candidate (see the Simulated sheet)."""
    return is_number(sim_meets_targets)


#: What :func:`simulation` says of a candidate.
SIMULATED_TEXT = "simulated"
NOT_SIMULATED = "not simulated"
STALE_SIMULATION = "simulated with other inputs: rerun planner"


@metric("", kind="text", source="serving simulation; the Simulated sheet", group="serving")
def simulation(simulated: Any, sim_inputs_unchanged: Any) -> Any:
    """Whether the simulated figures hold for the inputs as they stand: "simulated", "not
    simulated", or "simulated with other inputs: rerun planner" once an input the simulation
    read (memory, bandwidth, compute, efficiencies, lengths, load, targets) has been edited."""
    return where(
        simulated,
        where(sim_inputs_unchanged > 0, SIMULATED_TEXT, STALE_SIMULATION),
        NOT_SIMULATED,
    )


@metric("replicas", source=f"{LITTLE}; serving simulation", group="serving")
def replicas_planned(replicas_needed: Any, sim_replicas_needed: Any, simulated: Any) -> Any:
    """Replicas to provision: the closed form, raised to what the simulation needed.

    Where the simulation found that no replica count meets the targets, it stays missing.
    """
    return where(
        simulated,
        where(
            is_missing(sim_replicas_needed),
            float("nan"),
            maximum(replicas_needed, sim_replicas_needed),
        ),
        replicas_needed,
    )


@metric("devices", source="a replica spans tensor_parallel devices", group="serving")
def devices_needed(
    replicas_planned: Any, tensor_parallel: Any, prefill_pool_device_offset: Any = 0
) -> Any:
    """Devices to buy or rent for the forecast: replicas × devices per replica, a prefill
    pool of its own replica size counted at it
    (:func:`planner.model.disaggregated.prefill_pool_device_offset`) [devices]."""
    return replicas_planned * tensor_parallel + prefill_pool_device_offset


def _meets(value: Any, target: Any) -> Any:
    return where(is_missing(target), True, value <= target)


@metric("", kind="bool", source="workload targets (closed-form floors)", group="serving")
def meets_ttft_target(ttft_s: Any, ttft_p95_target_s: Any) -> Any:
    """Whether the no-queue TTFT is within the p95 target (true when no target is set)."""
    return _meets(ttft_s, ttft_p95_target_s)


@metric("", kind="bool", source="workload targets (closed-form floors)", group="serving")
def meets_itl_target(itl_load_s: Any, itl_p95_target_s: Any) -> Any:
    """Whether the inter-token latency at the forecast load is within the p95 target."""
    return _meets(itl_load_s, itl_p95_target_s)


@metric("", kind="bool", source="workload targets (closed-form floors)", group="serving")
def meets_e2e_target(e2e_load_s: Any, e2e_p95_target_s: Any) -> Any:
    """Whether the end-to-end latency at the forecast load is within the p95 target."""
    return _meets(e2e_load_s, e2e_p95_target_s)


@metric("", kind="bool", source="workload targets (closed-form floors)", group="serving")
def meets_task_target(task_load_s: Any, task_p95_target_s: Any) -> Any:
    """Whether the agent task latency at the forecast load is within the p95 target."""
    return _meets(task_load_s, task_p95_target_s)


@metric(
    "",
    kind="bool",
    source=f"{SRE}: latency, throughput and failure together",
    group="serving",
)
@taking("replica_fits", *(t.meets for t in TARGETS))
def meets_targets(replica_fits: Any, *meets: Any) -> Any:
    """Whether a replica holds a maximum-length sequence and every closed-form target is met."""
    return reduce(and_, meets, replica_fits)


@metric("", kind="bool", source=f"{SRE}; serving simulation", group="serving")
def meets_targets_planned(
    replica_fits: Any, meets_targets: Any, simulated: Any, sim_meets_targets: Any
) -> Any:
    """Whether the targets are met as planned: where simulated, by the simulated p95 figures
    and the rejection ceiling (the simulation serves the forecast load, where the closed form
    plans every replica full); else by the closed form. A replica must hold a sequence."""
    return where(simulated, replica_fits & (sim_meets_targets > 0), meets_targets)


@metric("", kind="text", source=SRE, group="serving")
@taking(
    "replica_fits",
    "fit_reason",
    "engine_accepts_requests",
    "engine_starts",
    *(t.meets for t in TARGETS),
)
def target_miss_reason(
    replica_fits: Any,
    fit_reason: Any,
    engine_accepts_requests: Any,
    engine_starts: Any,
    *meets: Any,
) -> Any:
    """The first reason a candidate misses its targets, in words ("meets targets" otherwise):
    a replica that cannot hold a request (``memory:``, or ``engine:`` where the engine's
    ``max_model_len`` refuses it), else the first latency target missed."""
    reason: Any = "meets targets"
    for target, met in reversed(list(zip(TARGETS, meets, strict=True))):
        reason = where(met, reason, target.miss)
    return where(
        replica_fits,
        reason,
        concat(where(engine_accepts_requests & engine_starts, "memory: ", "engine: "), fit_reason),
    )
