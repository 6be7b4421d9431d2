"""What to measure next: for each option the plan asks for, the few measurements that would most
narrow the decision, and the figure at which the answer changes.

An estimate guides which measurement to collect; it does not replace it. For each line of the
ask this names the engine start-up log that checks its memory (with the pool planner predicts)
unless one is already in ``measurements/``, and the decode measurement that checks its latency,
with the bandwidth efficiency below which the option misses its inter-token target; and where
its plan counts a prefix cache's hits or speculates, the hit ratio or the acceptance rate it
assumes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from planner.catalog import Catalog
from planner.measure import Measurement
from planner.model.cost import API
from planner.plan.deployment import Ask
from planner.plan.labels import line_pools, option_label


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


def _gives(measurements: tuple[Measurement, ...], row: Any, figure: str) -> bool:
    """Whether a measurement of the row's model gives ``figure`` (a hit ratio: for the row's
    workload)."""
    return any(
        figure in m.figures
        and m.entry.model == row["model"]
        and (figure != "prefix_cache_hit_ratio" or m.entry.workload == row["workload"])
        for m in measurements
    )


def _number(row: Any, name: str) -> float:
    try:
        return float(row.get(name, math.nan))
    except (TypeError, ValueError):  # a text or a missing cell
        return math.nan


def feature_measurements(option: str, row: Any, measurements: tuple[Measurement, ...]) -> list[str]:
    """The engine features the option's plan depends on and nothing measured yet: the prefix
    cache's hit ratio where the plan counts cached tokens, speculative decoding's acceptance
    where it speculates."""
    out = []
    ratio = _number(row, "prefix_hit_ratio")
    measured = math.isfinite(_number(row, "measured_prefix_hit_ratio"))
    if ratio > 0 and not measured and not _gives(measurements, row, "prefix_cache_hit_ratio"):
        out.append(
            f"{option}: measure the prefix cache's hit ratio (vLLM's 'Prefix cache hit rate' "
            "log line, or vllm:prefix_cache_hits_total ÷ vllm:prefix_cache_queries_total, with "
            f"the workload named in index.yaml); planned {ratio:.0%} of the prompt found "
            f"cached, {_number(row, 'prefill_tokens_mean'):,.0f} of "
            f"{_number(row, 'prompt_tokens_mean'):,.0f} tokens prefilled."
        )
    proposed = _number(row, "speculative_tokens")
    if proposed > 0 and not _gives(measurements, row, "acceptance_length"):
        out.append(
            f"{option}: measure speculative decoding's acceptance (vLLM's 'SpecDecoding "
            "metrics: Mean acceptance length' log line, or its vllm:spec_decode counters); "
            f"planned a rate of {_number(row, 'acceptance_rate'):.2f}, "
            f"{_number(row, 'speculative_tokens_per_step'):.2f} tokens a step at "
            f"{proposed:.0f} proposed, {_number(row, 'speculative_speedup'):.2f}× the plain "
            "step's token rate at the full batch."
        )
    return out


def next_measurements(
    catalog: Catalog,
    plan: Ask,
    measurements: tuple[Measurement, ...],
    apart: Mapping[str, str] | None = None,
) -> list[str]:
    """Sentences, one or two per option of the plan's ask, in its order, one for each engine
    feature its plan depends on (:func:`feature_measurements`), and for an option on devices the
    measurement kit that takes them (:func:`kit_sentence`). A measurement taken with other
    settings than its line's (``apart``: its id → why, from :func:`planner.deploy.check.apart`)
    does not count as the line measured; the sentence says why."""
    efficiency = catalog.assumptions.bandwidth_efficiency
    apart = apart or {}
    measurements = tuple(m for m in measurements if m.entry.id not in apart)
    out = [f"{why}." for why in apart.values()]
    for line in plan.lines:
        row = line.row
        option = option_label(row, devices=False)
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
        out.extend(feature_measurements(option, row, measurements))
        if not _measured(measurements, row, ("vllm-bench", "perf-export")):
            out.append(decode_measurement(row, option, efficiency))
        if line.advice != API:
            out.append(kit_sentence(row, option))
    return out


def kit_sentence(row: Any, option: str) -> str:
    """The line's measurement kit in the run folder, by name."""
    scripts = " and ".join(f"deploy/measure-{name}.sh" for name, _ in line_pools(row))
    return (
        f"{option}: {scripts} in the run folder starts the engine with the plan's settings, "
        "keeps its start-up log, runs the benchmark at both loads and writes the "
        "measurements/index.yaml entries (--dry-run prints the commands)."
    )


def decode_measurement(row: Any, option: str, efficiency: float) -> str:
    """The decode measurement that checks the line's latency, and the bandwidth efficiency
    below which it misses its target."""
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
    return words
