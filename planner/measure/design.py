"""Which figures a set of measured points can fit, and what they cannot tell apart: the
overhead needs decode figures at two step sizes, the compute efficiency prompts of two lengths
whose arithmetic outlasts their weight read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from planner.catalog import Catalog
from planner.catalog.engines import step_overhead_per_sequence
from planner.measure.points import DECODE_FIGURES, LatencyPoint

#: Two step sizes closer than this (relative) are one size to the fit.
DISTINCT = 0.05


@dataclass(frozen=True)
class Design:
    """Which figures a set of points can fit, and what they cannot tell apart."""

    free: tuple[str, ...]
    notes: tuple[str, ...]


def _distinct(values: Sequence[float]) -> int:
    """How many values differ from each other by more than :data:`DISTINCT`."""
    kept: list[float] = []
    for value in sorted(v for v in values if math.isfinite(v)):
        if not kept or value > kept[-1] * (1 + DISTINCT):
            kept.append(value)
    return len(kept)


def design(points: Sequence[LatencyPoint], rows: Sequence[Any], catalog: Catalog) -> Design:
    """The figures the points can fit (their estimates at the assumptions in ``rows``)."""
    decode = [(p, r) for p, r in zip(points, rows, strict=True) if p.figure in DECODE_FIGURES]
    prompts = [(p, r) for p, r in zip(points, rows, strict=True) if p.figure.startswith("ttft")]
    free: list[str] = []
    notes: list[str] = []
    a = catalog.assumptions
    if decode:
        free.append("bandwidth_efficiency")
        steps = _distinct([float(r["load_decode_memory_s"]) for _, r in decode])
        if steps >= 2:
            free.append("step_overhead")
        else:
            notes.append(
                f"the decode figures are at one step size (one batch, one context length): the "
                f"step overhead and the bandwidth efficiency are one slope, so the overhead "
                f"stays assumed ({a.step_overhead * 1e3:g} ms); measure the decode latency at a "
                f"second batch size (e.g. 1 and 32 requests at once) to fit both"
            )
        contexts = _distinct([float(r["kv_read_bytes_per_sequence_step"]) for _, r in decode])
        if contexts < 2:
            notes.append(
                f"the decode figures are at one context length: the time per decoding sequence "
                f"and the bandwidth spent reading each sequence's cache are one slope, so the "
                f"time per sequence stays assumed ({step_overhead_per_sequence(a) * 1e6:g} µs); "
                f"measure at a second prompt length to tell them apart"
            )
    if prompts:
        bound = [
            (p, r)
            for p, r in prompts
            if r["prefill_flops"] / r["achieved_compute_flops_per_s"] + r["matmul_padding_s"]
            >= r["weight_read_s"]
        ]
        if _distinct([float(r["prefill_flops"]) for _, r in bound]) >= 2:
            free.append("compute_efficiency")
        elif bound:
            notes.append(
                f"the prompts whose arithmetic outlasts their weight read are of one length: "
                f"their arithmetic and the fixed time of their steps are one slope, so the "
                f"compute efficiency stays assumed ({a.compute_efficiency:g}); measure the time "
                f"to first token at a second prompt length (e.g. 1,000 and 4,000 tokens at one "
                f"request) to fit it"
            )
        else:
            notes.append(
                "every prompt measured is bound by reading the weights, not by its arithmetic: "
                "the compute efficiency stays assumed; measure the time to first token of a "
                "longer prompt (thousands of tokens) at one request"
            )
        if not decode and "step_overhead" not in free:
            notes.append(
                "no decode figure: the bandwidth efficiency and the step overhead stay assumed"
            )
    return Design(tuple(free), tuple(notes))
