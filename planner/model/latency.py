"""Latency in closed form: idealised bounds and a step-time model of continuous batching.

A bandwidth bound divides the bytes a step must read by the sustainable memory bandwidth; a
compute bound divides its operations by the sustainable compute throughput (the roofline model,
Williams et al. 2009; for decoding, Pope et al. 2022). Both are idealised bounds, not measured
token latency. The step-time model
combines both per step: a decode step reads the weights once for the whole batch and each
sequence's cache separately, and does 2 × active parameters FLOP per sequence; the step takes
the larger of the two times plus a fixed overhead. These are estimates to guide measurement,
never measurements.
"""

from __future__ import annotations

from typing import Any

from planner.model.expr import ceil, maximum, minimum, power, where
from planner.model.metric import derived, metric
from planner.model.sources import KAPLAN, POPE, ROOFLINE, SARATHI, VLLM_METRICS


@metric("s", source=f"{ROOFLINE}; {POPE}", group="latency")
def weight_read_s(
    weight_bytes_per_device: Any, memory_bandwidth_bytes_per_s: Any, bandwidth_efficiency: Any
) -> Any:
    """Weight-read lower bound per decode step: weight bytes ÷ achieved bandwidth [s].

    Achieved bandwidth = datasheet bandwidth × ``bandwidth_efficiency``; tensor-parallel devices
    read their shares at once. 14 GB read at 700 GB/s is 0.02 s. An idealised bound,
    not a measured token latency.
    """
    return weight_bytes_per_device / (memory_bandwidth_bytes_per_s * bandwidth_efficiency)


@metric("FLOP/s", source=ROOFLINE, group="latency")
def achieved_compute_flops_per_s(
    compute_flops_per_s: Any, compute_efficiency: Any, tensor_parallel: Any
) -> Any:
    """Compute a replica sustains: dense datasheet rate × efficiency × TP devices [FLOP/s]."""
    return compute_flops_per_s * compute_efficiency * tensor_parallel


@metric("FLOP", source=KAPLAN, group="latency")
def decode_flops_per_token(active_parameters: Any) -> Any:
    """Arithmetic for one generated token: about 2 × active parameters [FLOP]."""
    return 2 * active_parameters


@metric("s", source="GEMM sweeps by accelerator family (planner.catalog.matmul)", group="latency")
def matmul_padding_s(
    matmul_half_tokens: Any,
    matmul_plateau_fraction: Any,
    parameters: Any,
    embedding_parameters: Any,
    routed_expert_parameters: Any,
    compute_flops_per_s: Any,
    tensor_parallel: Any,
) -> Any:
    """Time a step's weight multiplications take beyond their tokens' arithmetic [s]: M½ more
    tokens through the layers' parameters every token uses (embeddings and routed experts left
    out) at the family's plateau rate, 2 × M½ × parameters ÷ (dense rate × plateau × devices).

    A multiplication of M tokens achieves the plateau × M ÷ (M + M½): a step of few tokens
    under-uses the arithmetic, a step of many saturates it. A mixture's experts run in grouped
    kernels tiled for the few tokens each receives, and are not counted.
    """
    layers_parameters = parameters - embedding_parameters - routed_expert_parameters
    plateau = compute_flops_per_s * matmul_plateau_fraction * tensor_parallel
    return 2 * matmul_half_tokens * layers_parameters / plateau


@metric("s", source=ROOFLINE, group="latency")
def compute_bound_s(decode_flops_per_token: Any, achieved_compute_flops_per_s: Any) -> Any:
    """Compute lower bound for one token of one sequence: FLOP ÷ achieved compute [s].

    Peak rates rarely equal achieved kernel performance: an idealised bound.
    """
    return decode_flops_per_token / achieved_compute_flops_per_s


@metric(
    "sequences",
    source="continuous batching (Yu et al. 2022, Orca); engine batch limit",
    group="latency",
)
def replica_capacity_sequences(
    max_sequences: Any,
    max_batch_sequences: Any,
    expert_parallel: Any = 1,
    pipeline_parallel: Any = 1,
) -> Any:
    """Sequences one replica may run at once: memory's limit, capped by the engine's batch limit
    (each data-parallel attention rank's, × EP; each pipeline micro-batch's, × stages)."""
    return minimum(max_sequences, max_batch_sequences * expert_parallel * pipeline_parallel)


@metric("sequences", source="continuous batching (Yu et al. 2022, Orca)", group="latency")
def decode_batch(concurrency: Any, replica_capacity_sequences: Any) -> Any:
    """Sequences a replica decodes together: its users (closed loop), at most its capacity.

    An open-loop replica is planned full: the batch is its capacity.
    """
    return where(
        concurrency > 0,
        minimum(concurrency, replica_capacity_sequences),
        replica_capacity_sequences,
    )


@metric(
    "",
    source="Fedus et al. 2022; expected distinct experts under uniform top-k routing",
    group="latency",
)
def experts_touched_fraction(
    experts: Any, experts_per_token: Any, decode_batch: Any, verify_tokens_per_sequence: Any = 1
) -> Any:
    """Share of routed experts a decode step reads at batch B: 1 − (1 − k/E)^(B × T) (1 for
    dense), T the tokens each sequence runs (1; k + 1 when verifying speculation).

    Each token picks k of E experts; with B × T tokens an expert is missed by all with
    probability (1 − k/E)^(B × T), so weight reads of a mixture of experts grow with the batch
    towards all experts.
    """
    tokens = decode_batch * verify_tokens_per_sequence
    return where(experts > 0, 1 - power(1 - experts_per_token / maximum(experts, 1), tokens), 1)


@metric("B", source=f"{POPE} (a batch shares the weight reads)", group="latency")
def decode_weight_bytes_per_step(
    decoder_weight_bytes_per_device: Any,
    routed_expert_parameters: Any,
    weight_bytes_per_param: Any,
    experts_touched_fraction: Any,
    routed_share_per_device: Any,
) -> Any:
    """Weight bytes a decode step reads per device: the decoder's weights less its untouched
    experts [B]."""
    untouched = routed_expert_parameters * weight_bytes_per_param * (1 - experts_touched_fraction)
    return decoder_weight_bytes_per_device - untouched * routed_share_per_device


@metric("tokens", source="mean context while generating half the mean output", group="latency")
def mean_context_tokens(prompt_tokens_mean: Any, output_tokens_mean: Any) -> Any:
    """Average tokens in a sequence's cache during decoding: mean prompt + half the mean output."""
    return prompt_tokens_mean + output_tokens_mean / 2


@metric("B", source=f"{POPE} (every sequence reads its cache)", group="latency")
def kv_read_bytes_per_sequence_step(
    mean_context_tokens: Any,
    kv_bytes_per_token: Any,
    window_tokens: Any,
    kv_bytes_per_token_windowed: Any,
    state_bytes_per_sequence: Any,
) -> Any:
    """Cache bytes one sequence reads per decode step at the mean context, per device [B]."""
    return (
        mean_context_tokens * kv_bytes_per_token
        + minimum(window_tokens, mean_context_tokens) * kv_bytes_per_token_windowed
        + state_bytes_per_sequence
    )


@metric(
    "s",
    source="Megatron-LM: two all-reduces per layer; ring all-reduce moves 2(n−1)/n",
    group="latency",
)
def allreduce_s_per_token(
    stage_tensor_parallel: Any,
    layers: Any,
    hidden_size: Any,
    activation_bytes: Any,
    interconnect_bytes_per_s: Any,
    expert_parallel: Any = 1,
) -> Any:
    """Tensor-parallel communication per token: 2 all-reduces per layer of 2(TP−1)/TP × activations,
    TP a stage's devices.

    Zero without tensor parallelism, and under expert parallelism (its all-to-all is
    :func:`planner.model.parallel.expert_alltoall_s_per_step`); missing when TP > 1 and the
    device has no interconnect figure.
    """
    tp = stage_tensor_parallel
    per_layer = 2 * (2 * (tp - 1) / tp) * hidden_size * activation_bytes
    return where(tp > 1, layers * per_layer / interconnect_bytes_per_s, 0) * where(
        expert_parallel > 1, 0, 1
    )


@metric(
    "s",
    source="Megatron-LM: two all-reduces per layer; latency per interconnect "
    "(planner.catalog.interconnects)",
    group="latency",
)
def allreduce_latency_s_per_step(
    stage_tensor_parallel: Any, layers: Any, allreduce_fixed_s: Any, allreduce_per_hop_s: Any
) -> Any:
    """Tensor-parallel latency of one step, whatever its size: 2 all-reduces per layer, each
    the link's fixed time + 2(TP − 1) ring hops, TP a stage's devices [s]; zero without tensor
    parallelism."""
    per_collective = allreduce_fixed_s + 2 * (stage_tensor_parallel - 1) * allreduce_per_hop_s
    return where(stage_tensor_parallel > 1, 2 * layers * per_collective, 0)


@metric("s", source=f"{ROOFLINE}; {POPE}", group="latency")
def decode_memory_s(
    decode_weight_bytes_per_step: Any,
    decode_batch: Any,
    kv_read_bytes_per_sequence_step: Any,
    memory_bandwidth_bytes_per_s: Any,
    bandwidth_efficiency: Any,
    verify_kv_write_bytes_per_sequence_step: Any = 0,
) -> Any:
    """Memory time of a decode step: (weights once + batch × (cache reads + a verifying step's
    extra cache writes)) ÷ bandwidth [s]."""
    per_sequence = kv_read_bytes_per_sequence_step + verify_kv_write_bytes_per_sequence_step
    read = decode_weight_bytes_per_step + decode_batch * per_sequence
    return read / (memory_bandwidth_bytes_per_s * bandwidth_efficiency)


@metric("s", source=f"{ROOFLINE}; {KAPLAN}; {POPE}", group="latency")
def decode_compute_s(
    decode_flops_per_token: Any,
    decode_batch: Any,
    achieved_compute_flops_per_s: Any,
    matmul_padding_s: Any,
    kv_read_bytes_per_sequence_step: Any,
    memory_bandwidth_bytes_per_s: Any,
    bandwidth_efficiency: Any,
    verify_tokens_per_sequence: Any = 1,
) -> Any:
    """Time of a decode step bound by its arithmetic: the weight multiplications (2 × active
    parameters × batch × tokens per sequence ÷ achieved compute + their padding), then
    attention reading every sequence's cache in kernels of its own [s]. The two run one after
    the other, so a step whose multiplications outlast the weight read still waits for its
    caches: the step is max(weights, multiplications) + caches, not max(weights + caches,
    multiplications). A verifying step multiplies k + 1 tokens per sequence.
    """
    tokens = decode_batch * verify_tokens_per_sequence
    multiply = decode_flops_per_token * tokens / achieved_compute_flops_per_s
    cache = decode_batch * kv_read_bytes_per_sequence_step
    return (
        multiply + matmul_padding_s + cache / (memory_bandwidth_bytes_per_s * bandwidth_efficiency)
    )


@metric("s", source=f"{ROOFLINE}: the slower of moving and multiplying values", group="latency")
def itl_s(
    decode_memory_s: Any,
    decode_compute_s: Any,
    allreduce_s_per_token: Any,
    decode_batch: Any,
    step_overhead_s: Any,
    step_overhead_per_sequence_s: Any,
    draft_s: Any = 0,
    verify_tokens_per_sequence: Any = 1,
    speculative_tokens_per_step: Any = 1,
    expert_parallel: Any = 1,
    expert_parallel_itl_s: Any = 0,
    pipeline_parallel: Any = 1,
    pipeline_parallel_itl_s: Any = 0,
) -> Any:
    """Inter-token latency at the replica's batch: one decode step ÷ the tokens it emits per
    sequence [s]; of an expert-parallel replica or a pipeline, the layout's own
    (:func:`planner.model.parallel.expert_parallel_itl_s`,
    :func:`planner.model.pipeline.pipeline_parallel_itl_s`).

    The step: max(memory time, compute time) + all-reduce of each sequence's tokens + fixed
    step overhead + the engine's time per sequence decoding (sampling, input preparation) +
    the speculative proposer's time (``draft_s``). Without speculation a step runs and emits one
    token per sequence; verifying k proposals it runs k + 1 and emits
    ``speculative_tokens_per_step`` (:mod:`planner.model.speculative`). Queueing and prefill
    stalls are not in it (see the simulated percentiles).
    """
    per_sequence = allreduce_s_per_token * verify_tokens_per_sequence + step_overhead_per_sequence_s
    step = (
        maximum(decode_memory_s, decode_compute_s)
        + decode_batch * per_sequence
        + step_overhead_s
        + draft_s
    )
    one_stage = step / speculative_tokens_per_step
    layouts = where(pipeline_parallel > 1, pipeline_parallel_itl_s, one_stage)
    return where(expert_parallel > 1, expert_parallel_itl_s, layouts)


@metric("", source=ROOFLINE, kind="text", group="latency")
def decode_bound(decode_memory_s: Any, decode_compute_s: Any) -> Any:
    """Whether a decode step is limited by memory bandwidth or by compute (its weight
    multiplications outlasting the weight read)."""
    return where(decode_memory_s >= decode_compute_s, "memory-bound", "compute-bound")


@metric(
    "FLOP",
    source=f"{KAPLAN}; causal attention ≈ 2 × layers × P² × heads × head dim",
    group="latency",
)
def prefill_flops(
    active_parameters: Any,
    prompt_tokens_mean: Any,
    layers: Any,
    attention_heads: Any,
    head_dim: Any,
    prefix_hit_ratio: Any = 0,
) -> Any:
    """Arithmetic for a prompt of P tokens: 2 × active × P + attention growing with P² [FLOP].

    Attention scores and weighted sums cost 4 × P² × heads × head dim per layer, halved by the
    causal mask. With C = hit ratio × P tokens found in the prefix cache, only N = P − C are
    computed: 2 × active × N + 2 × layers × heads × head dim × (N² + 2 × N × C), the new
    tokens attending over the cached ones in full and over each other causally (C = 0: the
    whole prompt).
    """
    cached = prefix_hit_ratio * prompt_tokens_mean
    new = prompt_tokens_mean - cached
    linear = 2 * active_parameters * new
    attention = 2 * layers * new * new * attention_heads * head_dim
    return linear + attention + 4 * layers * new * cached * attention_heads * head_dim


def overlapped_s(compute_s: Any, communication_s: Any, overlap: Any) -> Any:
    """A step's time given its compute and its communication: their sum, or the longer of the
    two where two micro-batches overlap them (``overlap`` above 0) [s] (DeepSeek-V3 §3.4; the
    ``expert_overlap`` assumption). 30 ms of arithmetic and 20 ms of all-to-all: 50 ms, or
    30 ms overlapped."""
    return where(overlap > 0, maximum(compute_s, communication_s), compute_s + communication_s)


@metric("s", source=f"{ROOFLINE}; {POPE}", group="latency")
def prefill_s(
    prefill_flops: Any,
    prefill_compute_flops_per_s: Any,
    prefill_hw_matmul_padding_s: Any,
    prefill_hw_weight_read_s: Any,
    prompt_tokens_mean: Any,
    prefill_hw_allreduce_s_per_token: Any,
    prefill_hw_step_overhead_s: Any,
    prefix_hit_ratio: Any = 0,
    prefill_hw_expert_alltoall_s_per_token: Any = 0,
    expert_overlap: Any = 0,
) -> Any:
    """Time to process the mean prompt: max(compute, one weight read) + its tokens'
    communication + overhead [s], on the hardware the prompts run on (the ``prefill_hw_``
    figures: the row's own hardware's, or its prefill pool's where that is another device).

    The compute is the prompt's arithmetic and the multiplications' padding at the rate a prompt
    is prefilled at (:func:`planner.model.parallel.prefill_compute_flops_per_s`). Long prompts
    are compute-bound; tiny ones are bound by reading the weights once. Each token is
    all-reduced (tensor parallelism) or dispatched to its experts and back (expert parallelism:
    added, or hidden under the compute where two micro-batches overlap them,
    :func:`overlapped_s`); tokens found in the prefix cache (the hit ratio of the prompt) are
    neither.
    """
    compute = prefill_flops / prefill_compute_flops_per_s + prefill_hw_matmul_padding_s
    new = prompt_tokens_mean * (1 - prefix_hit_ratio)
    exchange = new * prefill_hw_expert_alltoall_s_per_token
    reads = maximum(compute, prefill_hw_weight_read_s)
    return (
        overlapped_s(reads, exchange, expert_overlap)
        + new * prefill_hw_allreduce_s_per_token
        + prefill_hw_step_overhead_s
    )


@metric("s", source=f"{VLLM_METRICS}: preprocessing + prompt computation", group="latency")
def ttft_s(
    preprocess_s: Any,
    prefill_s: Any,
    request_kv_transfer_s: Any = 0,
    pipeline_prefill_s: Any = 0,
) -> Any:
    """Time to first token with no queueing: preprocessing + prefill, + the KV cache's move
    to the decode pool where the candidate is disaggregated, + the stages before the last of a
    pipeline [s] (a floor, not a p95)."""
    return preprocess_s + prefill_s + request_kv_transfer_s + pipeline_prefill_s


def chunks(prompt_tokens: Any, room_tokens: Any) -> Any:
    """Steps a prompt takes in chunks of at most ``room_tokens`` each: ⌈prompt ÷ room⌉, at
    least 1 [steps]."""
    return maximum(ceil(prompt_tokens / room_tokens), 1)


@metric("steps", source=SARATHI, group="latency")
def prompt_chunks(prompt_tokens_mean: Any, max_num_batched_tokens: Any) -> Any:
    """Steps the mean prompt's chunks take at most ``max_num_batched_tokens`` tokens a step:
    ⌈prompt ÷ budget⌉, at least 1 [steps] (the decodes that share the steps are not counted)."""
    return chunks(prompt_tokens_mean, max_num_batched_tokens)


@metric("s", source=f"{SARATHI}; {ROOFLINE}", group="latency")
def prefill_stall_s(
    chunked_prefill: Any,
    prefill_s: Any,
    prefill_flops: Any,
    prefill_compute_flops_per_s: Any,
    prompt_chunks: Any,
    weight_read_s: Any,
    prompt_tokens_mean: Any,
    allreduce_s_per_token: Any,
    prefix_hit_ratio: Any = 0,
    disaggregated: Any = 0,
    expert_alltoall_s_per_token: Any = 0,
) -> Any:
    """Time another request's prompt adds to a running request's life [s].

    Whole prompts stop the decodes for a prefill step of their own (``prefill_s``). In chunks,
    the prompt's arithmetic shares steps that decode anyway and read the weights anyway, so
    only what outlasts those reads is added, and its tokens' communication (all-reduce, or
    all-to-all under expert parallelism): max(0, prompt FLOP ÷ compute − chunks × weight read)
    + prompt × communication per token. A decode pool's replica prefills nothing: 0.
    """
    compute = prefill_flops / prefill_compute_flops_per_s
    shared = maximum(compute - prompt_chunks * weight_read_s, 0)
    per_token = allreduce_s_per_token + expert_alltoall_s_per_token
    chunked = shared + prompt_tokens_mean * (1 - prefix_hit_ratio) * per_token
    stall = where(chunked_prefill > 0, chunked, prefill_s)
    return where(disaggregated > 0, 0, stall)


@metric("s", source=f"{VLLM_METRICS}: output length, network delivery", group="latency")
def e2e_s(
    ttft_s: Any,
    output_tokens_mean: Any,
    itl_s: Any,
    decode_batch: Any,
    prefill_stall_s: Any,
    network_s: Any,
) -> Any:
    """End-to-end request latency: TTFT + (mean output − 1) × ITL + stalls + network [s].

    In a full batch each of the other B − 1 sequences is replaced, and so prefilled, once during
    a request's life; each prefill stalls the request's decoding by ``prefill_stall_s``.
    """
    stalls = maximum(decode_batch - 1, 0) * prefill_stall_s
    return ttft_s + (output_tokens_mean - 1) * itl_s + stalls + network_s


@metric("s", source="agent loop: one task sends several requests", group="latency")
def task_s(requests_per_task: Any, e2e_s: Any, tool_time_s: Any) -> Any:
    """Agent task latency: calls × end-to-end + tool time between calls [s]."""
    return requests_per_task * e2e_s + (requests_per_task - 1) * tool_time_s


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
derived("itl_ms", "itl_s", lambda s: s * 1000, "ms", "itl_s in ms", "latency")
derived("ttft_ms", "ttft_s", lambda s: s * 1000, "ms", "ttft_s in ms", "latency")
