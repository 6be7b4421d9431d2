"""Latency at the forecast load: the closed form's step times at the batch the load produces.

The closed form sizes a fleet by a replica's capacity, planning every replica full; but a replica
of that fleet decodes only the requests in flight on it. By Little's law (Little 1961) these are
the forecast rate × the end-to-end latency, spread over the replicas; that latency is taken at
the full batch, an upper bound, so the load batch here is never below the one the fleet would
settle at and the latencies below stay on the pessimistic side of it (one substitution from
above of the fixed point batch = rate × latency(batch)). Each figure is the formula of its
full-batch metric (:mod:`planner.model.latency`) over the load batch, not a copy of it.
"""

from __future__ import annotations

from typing import Any

from planner.model import latency
from planner.model.expr import is_number, maximum, minimum, where
from planner.model.metric import metric, rebound
from planner.model.sources import LITTLE

NAN = float("nan")

#: The full-batch formulas this module rebinds (imported so that they are registered first).
REBOUND_FROM = latency


@metric("sequences", source=f"{LITTLE}: L = λ × W", group="latency")
def load_batch(decode_batch: Any, in_flight_requests: Any, replicas_planned: Any) -> Any:
    """Sequences a replica decodes at the forecast load: the requests in flight per replica,
    at least one, at most the full batch (the full batch where no replica is planned).

    Closed loop without tool time this is users ÷ replicas; open loop, rate × latency ÷
    replicas. The replicas are the planned ones (the simulation's count where it asked for
    more). The latency is the full-batch one, so this errs high, never low.
    """
    planned = is_number(replicas_planned)
    per_replica = in_flight_requests / where(planned, maximum(replicas_planned, 1), NAN)
    return where(planned, minimum(decode_batch, maximum(1, per_replica)), decode_batch)


rebound(
    "load_experts_touched_fraction",
    "experts_touched_fraction",
    {"decode_batch": "load_batch"},
    "Share of routed experts a decode step reads at the load batch (1 for dense).",
)
rebound(
    "load_decode_weight_bytes_per_step",
    "decode_weight_bytes_per_step",
    {"experts_touched_fraction": "load_experts_touched_fraction"},
    "Weight bytes a decode step reads per device at the load batch [B].",
)
rebound(
    "load_decode_memory_s",
    "decode_memory_s",
    {
        "decode_weight_bytes_per_step": "load_decode_weight_bytes_per_step",
        "decode_batch": "load_batch",
    },
    "Memory time of a decode step at the load batch [s].",
)
rebound(
    "load_decode_compute_s",
    "decode_compute_s",
    {"decode_batch": "load_batch"},
    "Compute time of a decode step at the load batch [s].",
)
rebound(
    "itl_load_s",
    "itl_s",
    {
        "decode_memory_s": "load_decode_memory_s",
        "decode_compute_s": "load_decode_compute_s",
        "decode_batch": "load_batch",
    },
    "Inter-token latency at the forecast load: one decode step at the load batch [s].",
)
rebound(
    "e2e_load_s",
    "e2e_s",
    {"itl_s": "itl_load_s", "decode_batch": "load_batch"},
    "End-to-end request latency at the forecast load [s].",
)
rebound(
    "task_load_s",
    "task_s",
    {"e2e_s": "e2e_load_s"},
    "Agent task latency at the forecast load [s].",
)
