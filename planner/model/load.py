"""Latency at the forecast load: the closed form's step times at the batch the load produces.

The closed form sizes a fleet by a replica's capacity, planning every replica full; but a replica
of that fleet decodes only the requests in flight on it. A request's tokens share each step with
itself and the others in flight. Closed loop, these are the users per replica. Open loop, by
Little's law (Little 1961) the others are on average the per-replica rate × the end-to-end
latency, and a Poisson arrival finds that time average (arrivals see time averages, Wolff 1982),
while the latency itself grows with the batch: the batch is the fixed point of
B = 1 + rate × e2e(B), solved exactly per roofline regime (:func:`open_loop_batch`). Neither counts
queueing, so under heavy load the simulation, which does, is the check. Each latency is the
formula of its full-batch metric (:mod:`planner.model.latency`) over the load batch, not a copy
of it.
"""

from __future__ import annotations

from typing import Any

from planner.model import capacity, latency
from planner.model.expr import exp, is_number, maximum, minimum, where
from planner.model.metric import metric, rebound
from planner.model.sources import (
    ARRIVAL,
    LEVIATHAN,
    LITTLE,
    PASTA,
    RESIDUAL,
    ROOFLINE,
    SARATHI,
    VLLM_METRICS,
)

NAN = float("nan")

#: The full-batch formulas this module rebinds (imported so that they are registered first).
REBOUND_FROM = (capacity, latency)


def _fixed_point(rate: Any, intercept: Any, slope: Any, cap: Any) -> Any:
    """The batch B = 1 + rate × (intercept + slope × B) [sequences]: (1 + rate × intercept) ÷
    (1 − rate × slope), or ``cap`` where the load outgrows any batch (rate × slope ≥ 1)."""
    room = 1 - rate * slope
    return where(room > 0, (1 + rate * intercept) / where(room > 0, room, NAN), cap)


#: A speculative decode step's inputs, each at its value with speculation off (k = 0): one
#: position and one token a step per sequence, no extra cache writes, no proposer.
SPECULATION_OFF: dict[str, float] = {
    "verify_tokens_per_sequence": 1,
    "speculative_tokens_per_step": 1,
    "verify_kv_write_bytes_per_sequence_step": 0,
    "speculative_tokens": 0,
    "draft_read_bytes_per_forward": 0,
    "mean_context_tokens": 0,
    "draft_kv_bytes_per_token": 0,
    "draft_flops_per_token": 0,
}


@metric("sequences", source=f"{LITTLE}: L = λ × W; {PASTA}; {LEVIATHAN}", group="latency")
def open_loop_batch_bound(
    decode_batch: Any,
    forecast_requests_per_s: Any,
    decode_pool_replicas: Any,
    decode_entry_s: Any,
    output_tokens_mean: Any,
    prefill_stall_s: Any,
    network_s: Any,
    decode_weight_bytes_per_step: Any,
    kv_read_bytes_per_sequence_step: Any,
    memory_bandwidth_bytes_per_s: Any,
    bandwidth_efficiency: Any,
    decode_flops_per_token: Any,
    matmul_padding_s: Any,
    achieved_compute_flops_per_s: Any,
    allreduce_s_per_token: Any,
    step_overhead_s: Any,
    step_overhead_per_sequence_s: Any,
    verify_tokens_per_sequence: Any = 1,
    speculative_tokens_per_step: Any = 1,
    verify_kv_write_bytes_per_sequence_step: Any = 0,
    speculative_tokens: Any = 0,
    draft_read_bytes_per_forward: Any = 0,
    mean_context_tokens: Any = 0,
    draft_kv_bytes_per_token: Any = 0,
    draft_flops_per_token: Any = 0,
) -> Any:
    """The batch an open-loop request's tokens share at the forecast load: itself and the
    others in flight, B = 1 + per-replica rate × e2e(B) by Little's law [sequences].

    The time on the replica at a batch B ≥ 1 is TTFT (``decode_entry_s``: none on a decode
    pool, which receives its requests prefilled) + (output − 1) ÷ E steps × step(B) + (B − 1)
    × stall + network, E the tokens a step emits per sequence (1 without speculation,
    :func:`planner.model.speculative.speculative_tokens_per_step`). The step
    (:func:`planner.model.latency.itl_s` × E) is the larger of a memory line (weights + B ×
    (cache + a verifying step's k extra writes)) ÷ bandwidth and a compute line B × T × FLOP
    ÷ compute + padding + B × cache ÷ bandwidth, T = k + 1 positions verified per sequence;
    plus B × (T × all-reduce + time per sequence) + overhead + the proposer's k forwards, each
    the larger of its memory line (its weights + B × context × its cache) ÷ bandwidth and its
    compute line B × its FLOP ÷ compute (:func:`planner.model.speculative.draft_s`). A sum of
    two maxima of lines is the largest of the four sums, so e2e is the largest of four lines
    in B, and the fixed point the largest of each line's (``_fixed_point``). With speculation
    off (k = 0, E = T = 1, no proposer) the four are the two lines of the plain step.
    The weights are those of the full batch: for a mixture of experts an upper bound, which
    :func:`open_loop_batch_refined` brings down. The cap is the full batch.
    """
    planned = is_number(decode_pool_replicas)  # none planned: the full batch, as load_batch
    rate = forecast_requests_per_s / where(planned, maximum(decode_pool_replicas, 1), NAN)
    steps = (output_tokens_mean - 1) / speculative_tokens_per_step
    bandwidth = memory_bandwidth_bytes_per_s * bandwidth_efficiency
    base = decode_entry_s - prefill_stall_s + network_s + steps * step_overhead_s
    per_token = allreduce_s_per_token * verify_tokens_per_sequence
    per_batch = prefill_stall_s + steps * (per_token + step_overhead_per_sequence_s)
    caches = steps * kv_read_bytes_per_sequence_step / bandwidth
    writes = steps * verify_kv_write_bytes_per_sequence_step / bandwidth
    multiply = steps * decode_flops_per_token * verify_tokens_per_sequence
    multiply = multiply / achieved_compute_flops_per_s
    forwards = steps * speculative_tokens
    target = (
        (base + steps * decode_weight_bytes_per_step / bandwidth, per_batch + caches + writes),
        (base + steps * matmul_padding_s, per_batch + multiply + caches),
    )
    draft = (
        (
            forwards * draft_read_bytes_per_forward / bandwidth,
            forwards * mean_context_tokens * draft_kv_bytes_per_token / bandwidth,
        ),
        (0, forwards * draft_flops_per_token / achieved_compute_flops_per_s),
    )
    points = [
        _fixed_point(rate, intercept + draft_intercept, slope + draft_slope, decode_batch)
        for intercept, slope in target
        for draft_intercept, draft_slope in draft
    ]
    batch = maximum(maximum(points[0], points[1]), maximum(points[2], points[3]))
    return where(planned, batch, decode_batch)


_open_loop_batch = open_loop_batch_bound  # called by the refinement, whose input shadows the name


@metric("sequences", source=f"{LITTLE}: L = λ × W; {PASTA}", group="latency")
def open_loop_batch_refined(
    open_loop_batch_bound: Any,
    experts: Any,
    experts_per_token: Any,
    decoder_weight_bytes_per_device: Any,
    routed_expert_parameters: Any,
    weight_bytes_per_param: Any,
    routed_share_per_device: Any,
    decode_batch: Any,
    forecast_requests_per_s: Any,
    decode_pool_replicas: Any,
    decode_entry_s: Any,
    output_tokens_mean: Any,
    prefill_stall_s: Any,
    network_s: Any,
    kv_read_bytes_per_sequence_step: Any,
    memory_bandwidth_bytes_per_s: Any,
    bandwidth_efficiency: Any,
    decode_flops_per_token: Any,
    matmul_padding_s: Any,
    achieved_compute_flops_per_s: Any,
    allreduce_s_per_token: Any,
    step_overhead_s: Any,
    step_overhead_per_sequence_s: Any,
    verify_tokens_per_sequence: Any = 1,
    speculative_tokens_per_step: Any = 1,
    verify_kv_write_bytes_per_sequence_step: Any = 0,
    speculative_tokens: Any = 0,
    draft_read_bytes_per_forward: Any = 0,
    mean_context_tokens: Any = 0,
    draft_kv_bytes_per_token: Any = 0,
    draft_flops_per_token: Any = 0,
) -> Any:
    """The open-loop batch solved again with the weights a step reads at the previous pass's
    batch [sequences] (one pass of the fixed-point iteration; a dense model's batch is unchanged).

    A mixture's decode step reads the experts its batch touches, fewer at a smaller batch, so the
    full-batch weights of :func:`open_loop_batch_bound` make it too large; each pass reads the
    weights at the last batch, and the batches fall towards the fixed point (each still an upper
    bound, as the weights grow with the batch). A verifying step's k + 1 tokens per sequence
    touch the experts of B × (k + 1) tokens.
    """
    touched = latency.experts_touched_fraction(
        experts, experts_per_token, open_loop_batch_bound, verify_tokens_per_sequence
    )
    weights = latency.decode_weight_bytes_per_step(
        decoder_weight_bytes_per_device,
        routed_expert_parameters,
        weight_bytes_per_param,
        touched,
        routed_share_per_device,
    )
    return _open_loop_batch(
        decode_batch,
        forecast_requests_per_s,
        decode_pool_replicas,
        decode_entry_s,
        output_tokens_mean,
        prefill_stall_s,
        network_s,
        weights,
        kv_read_bytes_per_sequence_step,
        memory_bandwidth_bytes_per_s,
        bandwidth_efficiency,
        decode_flops_per_token,
        matmul_padding_s,
        achieved_compute_flops_per_s,
        allreduce_s_per_token,
        step_overhead_s,
        step_overhead_per_sequence_s,
        verify_tokens_per_sequence,
        speculative_tokens_per_step,
        verify_kv_write_bytes_per_sequence_step,
        speculative_tokens,
        draft_read_bytes_per_forward,
        mean_context_tokens,
        draft_kv_bytes_per_token,
        draft_flops_per_token,
    )


rebound(
    "open_loop_batch_refined_twice",
    "open_loop_batch_refined",
    {"open_loop_batch_bound": "open_loop_batch_refined"},
    "The open-loop batch after a second pass of the fixed-point iteration [sequences].",
)
rebound(
    "open_loop_batch",
    "open_loop_batch_refined",
    {"open_loop_batch_bound": "open_loop_batch_refined_twice"},
    "The batch an open-loop request's tokens share at the forecast load, itself included: the "
    "fixed point of B = 1 + per-replica rate × e2e(B), after three passes [sequences].",
)


@metric("sequences", source=f"{LITTLE}: L = λ × W", group="latency")
def load_batch(
    decode_batch: Any,
    in_flight_requests: Any,
    decode_pool_replicas: Any,
    arrival_rate_per_s: Any,
    open_loop_batch: Any,
) -> Any:
    """The batch a request's tokens share at the forecast load, itself included, at least one,
    at most the full batch (the full batch where no replica is planned).

    Open loop: :func:`open_loop_batch`, where Little's law holds at the load's own latency.
    Closed loop: the requests in flight per replica (users ÷ replicas without tool time), with
    the full-batch latency, so it errs high, never low. The replicas are the planned ones (the
    simulation's count where it asked for more), a disaggregated candidate's decode pool.
    """
    planned = is_number(decode_pool_replicas)
    per_replica = in_flight_requests / where(planned, maximum(decode_pool_replicas, 1), NAN)
    load = where(arrival_rate_per_s > 0, open_loop_batch, per_replica)
    return where(planned, minimum(decode_batch, maximum(1, load)), decode_batch)


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
        "draft_s": "load_draft_s",
        "expert_parallel_itl_s": "load_expert_parallel_itl_s",
        "pipeline_parallel_itl_s": "load_pipeline_parallel_itl_s",
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
rebound(
    "load_forecast_requests_per_s",
    "forecast_requests_per_s",
    {"task_s": "task_load_s"},
    "Model requests per second at the forecast load: closed loop, users run tasks at the task "
    "latency at load [1/s].",
)


@metric("1/s", source=f"{LITTLE}: L = λ × W", group="latency")
def load_requests_per_s_per_replica(
    load_forecast_requests_per_s: Any, replicas_planned: Any
) -> Any:
    """Requests one planned replica starts per second at the forecast load [1/s]; missing where
    no replica is planned."""
    planned = is_number(replicas_planned)
    return load_forecast_requests_per_s / where(planned, maximum(replicas_planned, 1), NAN)


@metric("tokens/s", source=f"{LITTLE}: L = λ × W", group="latency")
def load_output_tokens_per_s_per_replica(
    load_requests_per_s_per_replica: Any, output_tokens_mean: Any
) -> Any:
    """Output tokens (prompts not counted) one planned replica generates per second at the
    forecast load [tokens/s]: a serving benchmark's output throughput of one engine."""
    return load_requests_per_s_per_replica * output_tokens_mean


@metric("s", source=f"{VLLM_METRICS}: TPOT excludes the first token", group="latency")
def tpot_load_s(e2e_load_s: Any, ttft_s: Any, network_s: Any, output_tokens_mean: Any) -> Any:
    """Time per output token of one request at the forecast load, the first token excluded:
    (end-to-end − TTFT − network) ÷ (output − 1) [s], so prefill stalls of others count, as in
    a benchmark's TPOT and mean ITL (its median ITL is ``itl_load_s``, one typical step);
    missing for one-token outputs."""
    steps = output_tokens_mean - 1
    return (e2e_load_s - ttft_s - network_s) / where(steps > 0, steps, NAN)


@metric("", source=f"{PASTA}; M/G/∞: the number in service is Poisson", group="latency")
def decode_busy_fraction(load_batch: Any) -> Any:
    """Share of time a replica is decoding for the others in flight, as an arrival finds it:
    1 − e^−(B − 1), the chance that at least one of the B − 1 others is there [-]."""
    return 1 - exp(-(load_batch - 1))


@metric("", source=f"{PASTA}; {ARRIVAL}", group="latency")
def others_load_fraction(load_batch: Any, arrival_rate_per_s: Any) -> Any:
    """Share of a replica's load that an arriving request finds made by the others [-].

    Open loop, the arrival is not yet in the system and sees the time average (1). Closed
    loop, a user's next request cannot meet its own previous one: with B requests in flight
    per replica an arrival sees the load of the other B − 1, (B − 1) ÷ B of it (the arrival
    theorem); a lone user meets none.
    """
    return where(arrival_rate_per_s > 0, 1, (load_batch - 1) / maximum(load_batch, 1))


@metric("", source=f"{LITTLE}: busy fraction = rate × service time; {ARRIVAL}", group="latency")
def prefill_busy_fraction(
    load_requests_per_s_per_replica: Any, prefill_s: Any, others_load_fraction: Any
) -> Any:
    """Share of time a replica spends prefilling the others' prompts, as an arrival finds it:
    per-replica rate × mean prefill × the others' share of the load, at most 1 [-]."""
    return minimum(load_requests_per_s_per_replica * prefill_s * others_load_fraction, 1)


rebound(
    "median_prefill_flops",
    "prefill_flops",
    {"prompt_tokens_mean": "prompt_tokens_median", "prefix_hit_ratio": "median_prefix_hit_ratio"},
    "Arithmetic for the median prompt, its cached tokens not computed [FLOP].",
)
rebound(
    "median_prefill_s",
    "prefill_s",
    {
        "prefill_flops": "median_prefill_flops",
        "prompt_tokens_mean": "prompt_tokens_median",
        "prefix_hit_ratio": "median_prefix_hit_ratio",
    },
    "Time to process the median prompt, its cached tokens not computed [s].",
)


@metric("steps", source=SARATHI, group="latency")
def first_token_chunks(
    prompt_tokens_median: Any,
    max_num_batched_tokens: Any,
    load_batch: Any,
    median_prefix_hit_ratio: Any = 0,
    verify_tokens_per_sequence: Any = 1,
) -> Any:
    """Steps the median prompt takes under chunked prefill: each step carries the others'
    decodes first (load batch − 1 sequences of T = k + 1 tokens each, 1 without speculation)
    and a chunk of the prompt's uncached tokens with the rest of the ``max_num_batched_tokens``
    budget: ⌈prompt × (1 − its hit ratio) ÷ (budget − others × T)⌉, at least 1 [steps].

    Tokens found in the prefix cache are not computed and take none of the budget (vLLM counts
    them as computed before it schedules the rest); a verifying sequence takes its k
    proposals and its own token.
    """
    prefilled = prompt_tokens_median * (1 - median_prefix_hit_ratio)
    decodes = (load_batch - 1) * verify_tokens_per_sequence
    return latency.chunks(prefilled, maximum(max_num_batched_tokens - decodes, 1))


@metric("s", source=f"{SARATHI}; {ROOFLINE}; {LEVIATHAN}", group="latency")
def chunked_prefill_s(
    first_token_chunks: Any,
    load_decode_memory_s: Any,
    weight_read_s: Any,
    load_batch: Any,
    decode_flops_per_token: Any,
    matmul_padding_s: Any,
    median_prefill_flops: Any,
    achieved_compute_flops_per_s: Any,
    prompt_tokens_median: Any,
    allreduce_s_per_token: Any,
    step_overhead_s: Any,
    step_overhead_per_sequence_s: Any,
    kv_read_bytes_per_sequence_step: Any,
    memory_bandwidth_bytes_per_s: Any,
    bandwidth_efficiency: Any,
    median_prefix_hit_ratio: Any = 0,
    verify_tokens_per_sequence: Any = 1,
    load_draft_s: Any = 0,
) -> Any:
    """Time of the median prompt's chunks, each in a step shared with the others' decodes [s].

    Each of the steps is a decode step of the others (:func:`planner.model.latency.itl_s`
    over one step, not divided by the tokens it emits) that reads the weights (all of them: a
    prompt's tokens touch every expert) and the caches of the load batch, and carries an equal
    share of the prompt's arithmetic (``median_prefill_flops``, its cached tokens not
    computed); the prompt's uncached tokens, median × (1 − hit ratio), are all-reduced
    besides. The prompt's arithmetic hides under the weight read, which a prompt's step of its
    own cannot do; the others' cache reads follow the multiplications
    (:func:`planner.model.latency.decode_compute_s`). With speculation the others' step is a
    verifying one: k + 1 positions each multiplied and all-reduced, its cache writes (in
    ``load_decode_memory_s``) and the proposer's forwards at the load batch
    (``load_draft_s``). With no others in flight each step reads the weights alone and
    proposes nothing: a lone prompt in one chunk takes its no-load prefill.
    """
    steps = first_token_chunks
    others = maximum(load_batch - 1, 0)
    memory = where(others > 0, maximum(load_decode_memory_s, weight_read_s), weight_read_s)
    decodes = others * decode_flops_per_token * verify_tokens_per_sequence
    flops = decodes + median_prefill_flops / steps
    caches = (
        others
        * kv_read_bytes_per_sequence_step
        / (memory_bandwidth_bytes_per_s * bandwidth_efficiency)
    )
    compute = flops / achieved_compute_flops_per_s + matmul_padding_s + caches
    draft = where(others > 0, load_draft_s, 0)
    step = latency.itl_s(
        memory, compute, allreduce_s_per_token, others, step_overhead_s,
        step_overhead_per_sequence_s, draft, verify_tokens_per_sequence,
    )  # fmt: skip
    prefilled = prompt_tokens_median * (1 - median_prefix_hit_ratio)
    return steps * step + prefilled * allreduce_s_per_token


@metric("s", source=f"{RESIDUAL}; {PASTA}", group="latency")
def step_wait_s(
    decode_busy_fraction: Any, itl_load_s: Any, prefill_busy_fraction: Any, prefill_s: Any
) -> Any:
    """Expected wait of an arriving prompt for the step in progress at the forecast load [s]:
    the mean residual of a step of fixed length, half of it: half a decode step at the load
    batch when one runs, half a mean prefill when one runs. Zero where no replica is planned:
    no load, no wait."""
    wait = decode_busy_fraction * itl_load_s / 2 + prefill_busy_fraction * prefill_s / 2
    return where(is_number(wait), wait, 0)


@metric("s", source=f"{RESIDUAL}; {PASTA}; {SARATHI}", group="latency")
def ttft_load_s(
    preprocess_s: Any,
    median_prefill_s: Any,
    chunked_prefill: Any,
    chunked_prefill_s: Any,
    step_wait_s: Any,
    disaggregated: Any = 0,
    prefill_pool_wait_s: Any = 0,
    request_kv_transfer_s: Any = 0,
    pipeline_prefill_s: Any = 0,
) -> Any:
    """Typical time to first token at the forecast load [s]: preprocessing + the wait for the
    step in progress + the median prompt's prefill: a step of its own with whole-prompt steps,
    its chunks in steps shared with the others' decodes with chunked prefill
    (``chunked_prefill_s``). No queue for memory or for other prefills: the simulation's p50 is
    the check. A disaggregated candidate's prompt waits for a prefill replica
    (``prefill_pool_wait_s``), has it to itself, and its cache moves to the decode pool; a
    pipeline's passes its stages before the last.
    """
    prefill = where(chunked_prefill > 0, chunked_prefill_s, median_prefill_s)
    pooled = prefill_pool_wait_s + median_prefill_s + request_kv_transfer_s
    one_pool = preprocess_s + step_wait_s + prefill + pipeline_prefill_s
    return where(disaggregated > 0, preprocess_s + pooled, one_pool)
