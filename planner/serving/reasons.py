"""Why a candidate is not simulated, and why no replica count meets a target: the bound that
binds (``memory``, ``engine``, ``layout``, ``simulation size``; ``bandwidth``, ``compute``,
``chunked prefill``, ``preprocessing``, ``tool time``) and the reason in words, as the sizing's
``sim_bound`` and ``sim_reason`` report them (:func:`planner.serving.sizing.size_candidate`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from planner.catalog.records import MAX_SIMULATION_STEPS
from planner.catalog.workloads import length_summary
from planner.model.units import GB, GIB
from planner.plan.columns import EP_KEY, PD_KEY
from planner.serving import pools
from planner.serving.configs import EXPERT_PARALLEL_CLOSED_FORM, chunk_tokens, kv_budget_tokens
from planner.serving.search import Miss
from planner.serving.simulate import SimConfig, SimResult

if TYPE_CHECKING:
    from planner.catalog import Catalog, Workload

__all__ = ["CHUNKING_COSTS", "bound_of", "not_simulated", "prefill_steps"]


def prefill_steps(requests: int, prompt_tokens_mean: float, chunk: int | None) -> float:
    """Steps a simulation takes to prefill every prompt at least: the prompts' tokens over the
    step's token budget ``chunk`` (one step a prompt without chunked prefill) [steps]."""
    if chunk is None:
        return float(requests)
    return requests * max(prompt_tokens_mean / chunk, 1.0)


#: How much longer than one whole-prompt step the chunks of a prompt must take for the chunk
#: size, not the arithmetic, to be named as what bounds the first token.
CHUNKING_COSTS = 1.25


def bound_of(
    miss: Miss, cfg: SimConfig, catalog: Catalog, workload: Workload, result: SimResult
) -> tuple[str, str]:
    """Why a best-case miss cannot be fixed by replicas: (bound, explanation)."""
    step = cfg.step
    mean_prompt, p95_prompt, _ = length_summary(catalog, workload, "prompt")
    _, p95_output, _ = length_summary(catalog, workload, "output")

    def prefill() -> tuple[str, str]:
        chunk = cfg.chunk_tokens
        if chunk is not None and p95_prompt > chunk:
            steps = math.ceil(p95_prompt / chunk)
            chunked = steps * step.mixed_step_s(0, 0.0, [(0.0, float(chunk))])
            if chunked > CHUNKING_COSTS * step.prefill_s(p95_prompt):
                return "chunked prefill", (
                    f"the p95 prompt of {p95_prompt:,.0f} tokens is prefilled in {steps:,} "
                    f"steps of at most {chunk:,} tokens (max_num_batched_tokens), {chunked:.3f} "
                    f"s at least, every step reading the weights"
                )
        compute = step.prefill_compute_s(p95_prompt)
        memory = step.prefill_memory_s()
        kind = "compute" if compute >= memory else "bandwidth"
        return kind, (
            f"{kind}-bound prefill ({step.prefill_s(p95_prompt):.3f} s for the p95 prompt of "
            f"{p95_prompt:,.0f} tokens)"
        )

    def decode() -> tuple[str, str]:
        ctx = mean_prompt + p95_output / 2
        memory = step.decode_memory_s(1, ctx)
        compute = step.decode_compute_s(1, ctx)
        read = (step.decode_weight_bytes(1) + step.kv_bytes_per_token * ctx) / GB
        if memory >= compute:
            return "bandwidth", (
                f"bandwidth-bound decode step (reading {read:.1f} GB of weights and cache per "
                f"token takes {memory:.3f} s even at batch 1)"
            )
        return "compute", f"compute-bound decode step ({compute:.3f} s at batch 1)"

    if miss.label == "ttft":
        if workload.preprocess_time >= miss.limit:
            return "preprocessing", f"preprocessing alone takes {workload.preprocess_time:.3f} s"
        return prefill()
    if miss.label == "itl":
        return decode()
    if miss.label == "rejected":
        return "memory", "requests are rejected even one at a time (longer than the cache holds)"
    tools = (workload.requests_per_task - 1) * workload.tool_time
    if miss.label == "task" and tools >= miss.limit:
        return "tool time", f"tool time alone is {tools:.1f} s per task"
    prefill_time = step.prefill_s(p95_prompt)
    decode_time = max(p95_output - 1, 0) * result.itl_p50_s
    if prefill_time >= decode_time:
        return prefill()
    kind, text = decode()
    return kind, f"{text}; {p95_output:,.0f} output tokens at the p95"


def _memory_reason(row: Mapping[str, Any], need: int, have: int) -> tuple[str, str]:
    """Why a replica cannot hold one maximum-length request: (bound, reason in words), the
    bound ``engine`` where the engine's own limits refuse it, else ``memory``."""
    weights = float(row["weight_bytes_per_device"]) / GIB
    memory = float(row["memory_bytes"]) / GIB
    longest = float(row.get("engine_max_model_len", math.nan))
    if not bool(row.get("engine_accepts_requests", True)):
        return "engine", (
            f"engine: a maximum-length request of {need:,} tokens is longer than its "
            f"max_model_len ({longest:,.0f}), so the engine refuses it"
        )
    if not bool(row.get("engine_starts", True)):
        return "engine", (
            f"engine: its max_model_len ({longest:,.0f} tokens) needs more KV cache than its "
            f"pool holds ({float(row['kv_pool_tokens']):,.0f} tokens), so it would not start"
        )
    if weights > memory:
        return (
            "memory",
            f"memory: weights of {weights:.1f} GiB per device exceed its {memory:.1f} GiB",
        )
    if not float(row["kv_budget_bytes"]) > 0:
        return "memory", (
            f"memory: weights of {weights:.1f} GiB per device, runtime overhead and reserve leave "
            f"no room for the KV cache in {memory:.1f} GiB"
        )
    return "memory", (
        f"memory: a maximum-length request needs {need:,} tokens of cache; "
        f"a replica holds {max(have, 0):,}"
    )


def not_simulated(
    catalog: Catalog, workload: Workload, row: Mapping[str, Any], n_requests: int | None
) -> tuple[str, str] | None:
    """Why a row is not simulated at all, (bound, reason in words): a replica cannot hold one
    maximum-length request, or prefilling the requests would take too many steps, or its layout
    is planned in closed form only (:func:`planner.plan.selection.simulable`); else None."""
    if float(row.get(EP_KEY, 1)) > 1 and bool(row.get("expert_alltoall_hidden", False)):
        return "layout", EXPERT_PARALLEL_CLOSED_FORM
    if float(row.get(PD_KEY, 0)) > 0:
        refused = pools.simulable_pools(workload.arrival is None, workload.requests_per_task)
        if refused is not None:
            return "layout", refused
    a = catalog.assumptions
    need = int(length_summary(catalog, workload, "prompt")[2]) + workload.max_output_tokens
    have = kv_budget_tokens(row)
    if not bool(row["replica_fits"]) or have < need:
        return _memory_reason(row, need, have)
    chunk = chunk_tokens(a)
    requests = n_requests or a.simulated_requests
    steps = prefill_steps(requests, length_summary(catalog, workload, "prompt")[0], chunk)
    if steps <= MAX_SIMULATION_STEPS:
        return None
    return "simulation size", (
        f"not simulated: prefilling {requests:,} requests' prompts in chunks of "
        f"{chunk:,} tokens (max_num_batched_tokens) takes about {steps:,.0f} steps, past "
        f"the {MAX_SIMULATION_STEPS:,} a simulation may take; raise "
        f"max_num_batched_tokens or lower simulated_requests"
    )
