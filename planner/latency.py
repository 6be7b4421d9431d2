"""Latency bounds: idealised lower bounds from bandwidth and compute, not measured latency.

Seed ¶7: "A simple bandwidth bound divides bytes that must be read by sustainable memory
bandwidth ... This is an idealized bound, not measured token latency." Seed ¶8: "A compute bound
instead divides required operations by sustainable compute throughput."
"""

from __future__ import annotations

from typing import Any

from .metric import derived, metric

SEED = "seed"


@metric("s", source=f"{SEED} ¶7", group="latency")
def weight_read_s(
    weight_bytes: Any, memory_bandwidth_bytes_per_s: Any, bandwidth_efficiency: Any
) -> Any:
    """Weight-read lower bound per decode step: weight bytes ÷ achieved bandwidth [s].

    Achieved bandwidth = datasheet bandwidth × ``bandwidth_efficiency``. Seed ¶7: 14 GB read at
    700 GB/s is 0.02 s. An idealised bound, not a measured token latency.
    """
    return weight_bytes / (memory_bandwidth_bytes_per_s * bandwidth_efficiency)


@metric(
    "FLOP", source="Kaplan et al. 2020, §2.1 (forward pass ≈ 2N FLOP per token)", group="latency"
)
def decode_flops_per_token(parameters: Any) -> Any:
    """Arithmetic for one generated token: about 2 × parameters [FLOP] (one multiply-add each)."""
    return 2 * parameters


@metric("s", source=f"{SEED} ¶8", group="latency")
def compute_bound_s(
    decode_flops_per_token: Any, compute_flops_per_s: Any, compute_efficiency: Any
) -> Any:
    """Compute lower bound for one token of one sequence: FLOP ÷ achieved compute [s].

    Achieved compute = dense datasheet rate for the precision's format × ``compute_efficiency``.
    An idealised bound: peak rates rarely equal achieved kernel performance (seed ¶8).
    """
    return decode_flops_per_token / (compute_flops_per_s * compute_efficiency)


derived(
    "weight_read_ms", "weight_read_s", lambda s: s * 1000, "ms", "weight_read_s in ms", "latency"
)
derived(
    "compute_bound_ms",
    "compute_bound_s",
    lambda s: s * 1000,
    "ms",
    "compute_bound_s in ms",
    "latency",
)
