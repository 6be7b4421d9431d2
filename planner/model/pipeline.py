"""Pipeline parallelism across nodes: a replica of several stages, each a node.

A pipeline-parallel replica spans ``tensor_parallel`` devices in ``pipeline_parallel`` stages
(S), a node each: the stage's T = ``tensor_parallel`` ÷ S devices run tensor parallel over its
share of the layers, and each token passes the stages in turn, the activations of one stage sent
to the next over the network (Megatron-LM's layout; vLLM's ``--tensor-parallel-size`` T
``--pipeline-parallel-size`` S). So each device holds 1 ÷ (T × S) of the weights and the cache of
its own layers for every sequence of the replica (:func:`full_attention_layers_per_device`,
which :func:`planner.model.memory.kv_bytes_per_token` reads); its all-reduces are a stage's,
over T devices (:func:`stage_tensor_parallel`).

The engine keeps S micro-batches of the replica's batch in flight, one in each stage, so every
stage is busy: a stage step is one device's share of the weights and of a micro-batch's caches
(the tensor-parallel step's physics of :mod:`planner.model.latency` at the micro-batch), and a
token of a sequence waits for its micro-batch to pass all S stages. A prompt passes them in turn
too: a stage's prefill, S times, before its first token.

Assumptions: the layers divide evenly between the stages (the embeddings on the first stage and
the head on the last are not weighed apart; the busiest stage's caches round the layers up);
the engine's fixed step time is counted once a pass, not once a stage; a stage reads the routed
experts its micro-batch's tokens touch; the engine's batch limit holds per micro-batch, as each
virtual engine schedules its own (:mod:`planner.serving.configs` simulates one of them).
"""

from __future__ import annotations

from typing import Any

from planner.model.expr import ceil, maximum, where
from planner.model.latency import decode_compute_s, decode_memory_s, experts_touched_fraction
from planner.model.metric import metric, rebound
from planner.model.sources import MEGATRON_PP, ROOFLINE, VLLM_PP


@metric("sequences", source=VLLM_PP, group="latency")
def stage_batch(decode_batch: Any, pipeline_parallel: Any) -> Any:
    """Sequences of one micro-batch: the replica's batch ÷ its stages, one micro-batch in each
    stage [sequences]; the whole batch for one stage."""
    return decode_batch / pipeline_parallel


@metric("s", source=MEGATRON_PP, group="latency")
def stage_send_s(
    stage_batch: Any, hidden_size: Any, activation_bytes: Any, network_bytes_per_s: Any
) -> Any:
    """Time a stage takes to send one decode step's activations to the next: the micro-batch's
    tokens × hidden size × activation bytes ÷ the network a device [s] (each device sends the
    whole activation, replicated by the stage's all-reduce). 64 tokens of 16,384 BF16 values at
    50 GB/s: 41.9 µs. The link's microseconds of latency are left out."""
    return stage_batch * hidden_size * activation_bytes / network_bytes_per_s


@metric("devices", source=MEGATRON_PP, group="latency")
def stage_tensor_parallel(tensor_parallel: Any, pipeline_parallel: Any) -> Any:
    """Devices of one pipeline stage: the replica's ÷ its stages [devices]; all of them for
    one stage, whose all-reduces span them (:func:`planner.model.latency.allreduce_s_per_token`).
    16 in 2 stages: 8."""
    return tensor_parallel / pipeline_parallel


@metric("layers", source=MEGATRON_PP, group="memory")
def full_attention_layers_per_device(full_attention_layers: Any, pipeline_parallel: Any) -> Any:
    """Full-attention layers one device caches: a stage's, ⌈layers ÷ stages⌉ (the busier
    stage's), all of them for one stage [layers]. 61 in 2 stages: 31."""
    return ceil(full_attention_layers / pipeline_parallel)


@metric("layers", source=MEGATRON_PP, group="memory")
def windowed_layers_per_device(windowed_layers: Any, pipeline_parallel: Any) -> Any:
    """Sliding-window layers one device caches: a stage's, ⌈layers ÷ stages⌉ [layers]."""
    return ceil(windowed_layers / pipeline_parallel)


#: The metrics rebound below, registered by importing them first.
_REBOUND = (decode_memory_s, decode_compute_s, experts_touched_fraction)
rebound(
    "stage_experts_touched_fraction",
    "experts_touched_fraction",
    {"decode_batch": "stage_batch"},
    "Share of routed experts one stage's decode step reads: those a micro-batch's tokens are "
    "routed to (1 for dense).",
)
rebound(
    "stage_decode_weight_bytes_per_step",
    "decode_weight_bytes_per_step",
    {"experts_touched_fraction": "stage_experts_touched_fraction"},
    "Weight bytes one stage's decode step reads per device: the experts a micro-batch touches [B].",
)
rebound(
    "stage_decode_memory_s",
    "decode_memory_s",
    {
        "decode_weight_bytes_per_step": "stage_decode_weight_bytes_per_step",
        "decode_batch": "stage_batch",
    },
    "Memory time of one stage's decode step: the weights a micro-batch touches once + its "
    "caches of the stage's layers.",
)
rebound(
    "stage_decode_compute_s",
    "decode_compute_s",
    {"decode_batch": "stage_batch"},
    "Compute time of one stage's decode step: a micro-batch through a device's share of the "
    "layers, at its rate.",
)


@metric("s", source=f"{MEGATRON_PP}; {VLLM_PP}; {ROOFLINE}", group="latency")
def pipeline_parallel_itl_s(
    pipeline_parallel: Any,
    stage_decode_memory_s: Any,
    stage_decode_compute_s: Any,
    stage_send_s: Any,
    stage_batch: Any,
    decode_batch: Any,
    allreduce_s_per_token: Any,
    step_overhead_s: Any,
    step_overhead_per_sequence_s: Any,
) -> Any:
    """Inter-token latency of a pipeline-parallel replica: a micro-batch's pass through its S
    stages, S × max(memory, compute) of a stage step + (S − 1) sends between stages + its
    tokens' all-reduces over every layer + the engine's fixed step time once + its time for
    each sequence of the replica [s].

    With S micro-batches in flight every stage is busy, so a pass is S stage steps. Two stages
    of 10 ms steps, 0.1 ms sends, no all-reduce, 3 ms fixed and 64 sequences at 10 µs:
    2 × 10 + 0.1 + 3 + 0.64 = 23.74 ms."""
    stages = pipeline_parallel * maximum(stage_decode_memory_s, stage_decode_compute_s)
    sends = (pipeline_parallel - 1) * stage_send_s
    return (
        stages
        + sends
        + stage_batch * allreduce_s_per_token
        + step_overhead_s
        + decode_batch * step_overhead_per_sequence_s
    )


@metric("s", source=f"{MEGATRON_PP}; {ROOFLINE}", group="latency")
def pipeline_prefill_s(
    pipeline_parallel: Any,
    prefill_flops: Any,
    achieved_compute_flops_per_s: Any,
    matmul_padding_s: Any,
    weight_read_s: Any,
    prompt_tokens_mean: Any,
    hidden_size: Any,
    activation_bytes: Any,
    network_bytes_per_s: Any,
    prefix_hit_ratio: Any = 0,
) -> Any:
    """Time a prompt spends in the stages before the last, beyond one stage's prefill
    (``prefill_s``, a stage's share of the arithmetic): (S − 1) × (a stage's arithmetic or
    weight read + the prompt's activations sent on) [s]; 0 for one stage. A prefill of 0.2 s a
    stage and 4,000 tokens of 16,384 BF16 values at 50 GB/s (2.62 ms) in 2 stages: 0.2026 s."""
    arithmetic = prefill_flops / achieved_compute_flops_per_s + matmul_padding_s
    compute = maximum(arithmetic, weight_read_s)
    sent = prompt_tokens_mean * (1 - prefix_hit_ratio) * hidden_size * activation_bytes
    hop = compute + sent / network_bytes_per_s
    return where(pipeline_parallel > 1, (pipeline_parallel - 1) * hop, 0)


# The same pass at the forecast load's batch (planner.model.load) -------------------------

rebound(
    "load_stage_batch",
    "stage_batch",
    {"decode_batch": "load_batch"},
    "Sequences of one micro-batch at the load batch: the load batch ÷ the stages.",
)
rebound(
    "load_stage_experts_touched_fraction",
    "stage_experts_touched_fraction",
    {"stage_batch": "load_stage_batch"},
    "Share of routed experts one stage's decode step reads at the load batch.",
)
rebound(
    "load_stage_decode_weight_bytes_per_step",
    "stage_decode_weight_bytes_per_step",
    {"stage_experts_touched_fraction": "load_stage_experts_touched_fraction"},
    "Weight bytes one stage's decode step reads per device at the load batch [B].",
)
rebound(
    "load_stage_decode_memory_s",
    "stage_decode_memory_s",
    {
        "stage_decode_weight_bytes_per_step": "load_stage_decode_weight_bytes_per_step",
        "stage_batch": "load_stage_batch",
    },
    "Memory time of one stage's decode step at the load batch [s].",
)
rebound(
    "load_stage_decode_compute_s",
    "stage_decode_compute_s",
    {"stage_batch": "load_stage_batch"},
    "Compute time of one stage's decode step at the load batch [s].",
)
rebound(
    "load_stage_send_s",
    "stage_send_s",
    {"stage_batch": "load_stage_batch"},
    "Time a stage sends one decode step's activations at the load batch [s].",
)
rebound(
    "load_pipeline_parallel_itl_s",
    "pipeline_parallel_itl_s",
    {
        "stage_decode_memory_s": "load_stage_decode_memory_s",
        "stage_decode_compute_s": "load_stage_decode_compute_s",
        "stage_send_s": "load_stage_send_s",
        "stage_batch": "load_stage_batch",
        "decode_batch": "load_batch",
    },
    "Inter-token latency of a pipeline-parallel replica at the load batch [s].",
)
