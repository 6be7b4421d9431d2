"""What to measure next: for each option the plan asks for, the few measurements that would most
narrow the decision, and the figure at which the answer changes.

An estimate guides which measurement to collect; it does not replace it. For each line of the
ask this names the engine start-up log that checks its memory (with the pool planner predicts)
unless one is already in ``measurements/``, and the decode measurement that checks its latency,
with the bandwidth efficiency below which the option misses its inter-token target.
"""

from __future__ import annotations

import math
from typing import Any

from planner.catalog import Catalog
from planner.measure import Measurement
from planner.plan.deployment import Ask


def efficiency_at_target(
    memory_s: float, itl_s: float, target_s: float, bandwidth_efficiency: float
) -> float:
    """The bandwidth efficiency at which a memory-bound decode step takes ``target_s`` [-].

    The step is memory time + the rest (all-reduce, overhead); memory time scales as 1 ÷
    efficiency, so ``memory_s × efficiency ÷ (target − rest)``; NaN when the rest alone misses
    the target.
    """
    rest = itl_s - memory_s
    room = target_s - rest
    return memory_s * bandwidth_efficiency / room if room > 0 else math.nan


def _measured(measurements: tuple[Measurement, ...], row: Any, formats: tuple[str, ...]) -> bool:
    return any(
        m.entry.format in formats
        and (m.entry.hardware, m.entry.model, m.entry.precision, m.entry.tensor_parallel)
        == (row["hardware"], row["model"], row["precision"], int(row["tensor_parallel"]))
        for m in measurements
    )


def next_measurements(
    catalog: Catalog, plan: Ask, measurements: tuple[Measurement, ...]
) -> list[str]:
    """Sentences, one or two per option of the plan's ask, in its order."""
    efficiency = catalog.assumptions.bandwidth_efficiency
    out = []
    for line in plan.lines:
        row = line.row
        option = (
            f"{row['model']} ({row['precision']}) on {row['hardware']}"
            + (f" × {int(row['tensor_parallel'])}" if row["tensor_parallel"] > 1 else "")
            + f" for {row['workload']}"
        )
        if not _measured(measurements, row, ("vllm-log",)):
            words = (
                f"{option}: keep the serving engine's start-up log (weights, activation peak, "
                "KV cache size)"
            )
            pool = float(row.get("kv_pool_tokens", math.nan))
            if math.isfinite(pool):
                words += (
                    f"; planner predicts a pool of {pool:,.0f} tokens "
                    f"({row['kv_pool_bytes'] / 2**30:,.1f} GiB) per device"
                )
            out.append(words + ".")
        if _measured(measurements, row, ("vllm-bench", "perf-export")):
            continue
        batch = float(row["load_batch"])
        words = (
            f"{option}: measure decode inter-token latency at 1 and at {batch:,.0f} requests in "
            "flight per replica (two loads separate a step's fixed time from its bandwidth "
            f"time; planned {row['itl_load_s'] * 1e3:,.1f} ms at {batch:,.0f}"
        )
        target = row.get("itl_p95_target_s")
        memory_bound = row["load_decode_memory_s"] >= row["load_decode_compute_s"]
        if target is not None and math.isfinite(target) and memory_bound:
            limit = efficiency_at_target(
                row["load_decode_memory_s"], row["itl_load_s"], target, efficiency
            )
            if math.isfinite(limit):
                words += (
                    f"); it misses its {target * 1e3:,.0f} ms target if bandwidth efficiency "
                    f"is below {limit:.2f} (planned {efficiency:.2f})."
                )
            else:
                words += f"); the step's fixed part alone misses the {target * 1e3:,.0f} ms target."
        else:
            words += ")."
        out.append(words)
    return out
