"""Expert parallelism with data-parallel attention, and disaggregated prefill and decode.

A replica of D devices under expert parallelism (EP = D) and data-parallel attention (DP = D)
keeps a full copy of attention, embeddings, shared experts and dense layers on every device and
splits the routed experts between them (DeepSeek-V3 §3.4; SGLang's large-scale EP). Each
device serves its own sequences, whose caches it alone holds, and every MoE layer moves each
token to the devices of its experts (dispatch) and back (combine), an all-to-all over the
links between the devices.

A disaggregated deployment runs prompts on one pool and generation on another (DistServe): the
prefill pool is sized by the prompt tokens a second it must process, the decode pool by the
sequences it must hold at once (Little's law), and each request's KV cache crosses a link from
the one to the other before its first token.

Assumptions, each a parameter with its source: routing is uniform over the experts (each
token's k experts are k of E at random, so a share (EP − 1) ÷ EP of its copies leave its
device); the values moved are hidden-size activations, dispatched in FP8 with one FP32 scale
per 128 values and combined in BF16 as DeepEP does (:data:`DEEPEP_DISPATCH_BYTES_PER_VALUE`,
:data:`DEEPEP_COMBINE_BYTES_PER_VALUE`); the busiest device receives the mean tokens × an
imbalance factor (:data:`SGLANG_DEFAULT_IMBALANCE`).

The formulas register in :data:`PARALLEL`, a registry of their own; the plan columns at the end
(weights per device, each device's batch and step, the all-to-all, the ITL) are what an
expert-parallel candidate's layout-selecting metrics read (:mod:`planner.model.memory`,
:mod:`planner.model.latency`); a tensor-parallel candidate (EP 1) never does.
The decode step reuses the tensor-parallel physics of :mod:`planner.model.latency` (one weight
read per step, each sequence's cache, the arithmetic at the achieved rate) at TP 1.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from planner.model.expr import ceil, floor, maximum, minimum, where
from planner.model.latency import decode_compute_s, decode_memory_s, overlapped_s
from planner.model.metric import Metric, metric, rebound
from planner.model.sources import (
    DEEPEP,
    DEEPSEEK_V3,
    DISTSERVE,
    KAPLAN,
    LITTLE,
    POPE,
    ROOFLINE,
    SGLANG_EP,
)

#: Every formula of this module by name, apart from the plan's registry.
PARALLEL: dict[str, Metric] = {}

#: Bytes DeepEP sends per dispatched value: an FP8 value and an FP32 scale per 128 values
#: (DeepEP's low-latency dispatch, 7,168 + 56 × 4 = 7,392 B per token and expert).
DEEPEP_DISPATCH_BYTES_PER_VALUE = 1 + 4 / 128

#: Bytes DeepEP sends per combined value: BF16 (DeepEP; DeepSeek's inference system overview:
#: "combine transmissions use the BF16 format").
DEEPEP_COMBINE_BYTES_PER_VALUE = 2.0

#: A CX7 InfiniBand 400 Gb/s network card per GPU, "~50 GB/s maximum bandwidth" (DeepEP's
#: docs/legacy.md), the scale-out link of DeepSeek's and SGLang's deployments [B/s].
CX7_400G_BYTES_PER_S = 50e9

#: The busiest device's share of an MoE layer's tokens over the mean when experts are placed
#: without balancing: SGLang's prefill on 4 × 8 H100 (EP 32, 4,096-token prompts) ran 50,302
#: tokens/s a node with DeepSeek-V3's default expert distribution and 59,337 with a simulated
#: perfect balance (lmsys.org/blog/2025-05-05-large-scale-ep), 59,337 ÷ 50,302 ≈ 1.18.
SGLANG_DEFAULT_IMBALANCE = 59_337 / 50_302


def parallel_metric(
    unit: str, *, source: str
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a formula in :data:`PARALLEL` (:func:`planner.model.metric.metric`)."""
    return metric(unit, source=source, group="parallel", into=PARALLEL)


# Memory per device ------------------------------------------------------------------------


@parallel_metric("experts", source=f"{DEEPSEEK_V3} §3.4 (redundant experts)")
def routed_slots_per_device(experts: Any, redundant_experts: Any, expert_parallel: Any) -> Any:
    """Routed experts each device holds: (experts + redundant copies) ÷ EP [experts].

    DeepSeek-V3's 256 experts with 32 redundant copies on EP 144 are 2 a device, on EP 32 are 9
    (DeepSeek's inference system overview); without redundancy, 256 ÷ 8 = 32 on EP 8.
    """
    return (experts + redundant_experts) / expert_parallel


@parallel_metric("parameters", source=f"{DEEPSEEK_V3} §3.4")
def routed_parameters_per_device(
    routed_expert_parameters: Any, experts: Any, routed_slots_per_device: Any
) -> Any:
    """Routed-expert parameters on each device: all routed parameters × slots ÷ experts
    [parameters]."""
    return routed_expert_parameters * routed_slots_per_device / experts


@parallel_metric("sequences", source=f"{SGLANG_EP} (DP attention)")
def data_parallel_sequences(max_sequences: Any, data_parallel_attention: Any) -> Any:
    """Sequences a replica holds under data-parallel attention: each device's own × DP
    [sequences].

    Each device caches only its own sequences, whole (its ``max_sequences`` is
    :func:`planner.model.memory.max_sequences` over its budget and the per-sequence bytes at
    TP 1). Under tensor parallelism an MLA latent cache is the same on every device, so a TP 8
    replica holds one device's worth; under DP attention 8 it holds eight.
    """
    return max_sequences * data_parallel_attention


# All-to-all -------------------------------------------------------------------------------


@parallel_metric("layers", source=f"{DEEPSEEK_V3} (first_k_dense_replace)")
def moe_layers(layers: Any, dense_layers: Any) -> Any:
    """Layers with routed experts, each with a dispatch and a combine: layers − dense layers
    [layers]. DeepSeek-V3: 61 − 3 = 58."""
    return layers - dense_layers


@parallel_metric("B", source=f"{DEEPEP}; uniform routing (every expert equally likely)")
def alltoall_bytes_per_device(
    tokens_per_device: Any,
    experts_per_token: Any,
    hidden_size: Any,
    bytes_per_value: Any,
    expert_parallel: Any,
    imbalance: Any = 1,
) -> Any:
    """Bytes one device sends (dispatch) or receives back (combine) in one MoE layer: tokens ×
    k × hidden × bytes per value × (EP − 1) ÷ EP × the busiest device's imbalance [B].

    Each token goes to k experts; under uniform routing a share (EP − 1) ÷ EP of those copies
    lives on other devices. 128 tokens × 8 × 7,168 × 1.03125 B (DeepEP's FP8 with scales) ×
    127 ÷ 128 at EP 128 are 7,510,272 B.
    """
    share = (expert_parallel - 1) / expert_parallel
    return tokens_per_device * experts_per_token * hidden_size * bytes_per_value * share * imbalance


@parallel_metric("s", source=f"{DEEPEP}; {ROOFLINE}")
def alltoall_s(
    alltoall_bytes_per_device: Any,
    expert_parallel: Any,
    devices_per_node: Any,
    scale_up_bytes_per_s: Any,
    scale_out_bytes_per_s: Any,
    alltoall_latency_s: Any,
) -> Any:
    """One dispatch or combine: the slower of its bytes to peers in the node over the scale-up
    link (NVLink) and to peers in other nodes over the scale-out link (the network card), +
    the collective's fixed latency [s].

    Of the EP − 1 peers, min(EP, devices per node) − 1 share the node; uniform routing sends
    each peer the same bytes. EP 72 over 8-device nodes: 7 of 71 peers local, 64 remote.
    """
    peers = maximum(expert_parallel - 1, 1)
    local = minimum(expert_parallel, devices_per_node) - 1
    local_s = alltoall_bytes_per_device * (local / peers) / scale_up_bytes_per_s
    remote_s = alltoall_bytes_per_device * ((peers - local) / peers) / scale_out_bytes_per_s
    return where(expert_parallel > 1, maximum(local_s, remote_s) + alltoall_latency_s, 0)


@parallel_metric("s", source=f"{DEEPEP}: one dispatch and one combine per MoE layer")
def alltoall_s_per_step(moe_layers: Any, dispatch_s: Any, combine_s: Any) -> Any:
    """All-to-all time of one forward pass: MoE layers × (dispatch + combine) [s]."""
    return moe_layers * (dispatch_s + combine_s)


# Decode and prefill steps -----------------------------------------------------------------


@parallel_metric("FLOP", source=f"{KAPLAN}; {SGLANG_EP} (balancedness)")
def expert_parallel_flops_per_token(
    active_parameters: Any,
    routed_expert_parameters: Any,
    experts: Any,
    experts_per_token: Any,
    imbalance: Any = 1,
) -> Any:
    """Arithmetic per token on the busiest device: 2 × (active parameters + its routed experts'
    share × (imbalance − 1)) [FLOP].

    A token uses k ÷ E of the routed parameters; the device that receives imbalance × the mean
    tokens multiplies that share as many times more. Imbalance 1: 2 × active, as
    :func:`planner.model.latency.decode_flops_per_token`.
    """
    routed_active = routed_expert_parameters * experts_per_token / experts
    return 2 * (active_parameters + routed_active * (imbalance - 1))


#: :func:`planner.model.latency.overlapped_s`, the rule every step under EP follows, among
#: this module's formulas.
overlapped_s = parallel_metric("s", source=f"{DEEPSEEK_V3} §3.4 (two micro-batches overlap)")(
    overlapped_s
)


@parallel_metric("s", source=f"{ROOFLINE}; {POPE}; {DEEPEP}")
def expert_parallel_step_s(
    decode_memory_s: Any,
    decode_compute_s: Any,
    alltoall_s_per_step: Any,
    step_overhead_s: Any,
    overlap: Any = 0,
) -> Any:
    """One decode step of a device under EP: max(memory time, compute time) of its own weights
    and sequences, with the step's all-to-all added (or overlapped), + the fixed overhead [s].

    ``decode_memory_s`` and ``decode_compute_s`` are :mod:`planner.model.latency`'s at TP 1 over
    the device's weights (:func:`expert_parallel_weight_bytes`, its experts touched
    at the whole EP group's batch) and its own batch.
    """
    compute = maximum(decode_memory_s, decode_compute_s)
    return overlapped_s(compute, alltoall_s_per_step, overlap) + step_overhead_s


@parallel_metric("tokens/s", source=ROOFLINE)
def tokens_per_s_per_device(tokens_per_step: Any, step_s: Any) -> Any:
    """Tokens one device produces a second: tokens a step ÷ step time [tokens/s]."""
    return tokens_per_step / step_s


@parallel_metric("s", source=f"{ROOFLINE}; {KAPLAN}; {DEEPEP}")
def expert_parallel_prefill_step_s(
    prefill_flops: Any,
    prompt_tokens_mean: Any,
    prefill_tokens_per_device: Any,
    achieved_compute_flops_per_s: Any,
    matmul_padding_s: Any,
    alltoall_s_per_step: Any,
    overlap: Any = 1,
) -> Any:
    """One prefill step of a device holding ``prefill_tokens_per_device`` prompt tokens: their
    prompts' arithmetic (tokens ÷ prompt × :func:`planner.model.latency.prefill_flops`) at the
    achieved rate + padding, with the all-to-all of those tokens overlapped (DeepSeek's and
    SGLang's two micro-batches) or added [s]."""
    prompts = prefill_tokens_per_device / prompt_tokens_mean
    compute = prompts * prefill_flops / achieved_compute_flops_per_s + matmul_padding_s
    return overlapped_s(compute, alltoall_s_per_step, overlap)


# Disaggregated prefill and decode ---------------------------------------------------------


@parallel_metric("B", source=f"{DISTSERVE}; {POPE}")
def kv_transfer_bytes(prompt_tokens_mean: Any, kv_bytes_per_token: Any) -> Any:
    """KV cache one request moves from the prefill pool to the decode pool: prompt tokens ×
    cache bytes per token of the whole model (at TP 1) [B]. 4,000 tokens of DeepSeek-V3's BF16
    latent (61 × 576 × 2 = 70,272 B) are 281,088,000 B."""
    return prompt_tokens_mean * kv_bytes_per_token


@parallel_metric("s", source=DISTSERVE)
def kv_transfer_s(kv_transfer_bytes: Any, link_bytes_per_s: Any, link_latency_s: Any) -> Any:
    """Time to move one request's cache over the named link: bytes ÷ bandwidth + latency [s]."""
    return kv_transfer_bytes / link_bytes_per_s + link_latency_s


@parallel_metric("s", source=DISTSERVE)
def disaggregated_ttft_s(ttft_s: Any, kv_transfer_s: Any) -> Any:
    """Time to first token of a disaggregated deployment: the prefill pool's TTFT + the cache's
    transfer to the decode pool, which emits the first generated token after it [s]."""
    return ttft_s + kv_transfer_s


@parallel_metric("tokens/s", source=f"{DISTSERVE}; {LITTLE}")
def prompt_tokens_per_s_demanded(request_rate_per_s: Any, prompt_tokens_mean: Any) -> Any:
    """Prompt tokens the prefill pool must process a second: requests a second × mean prompt
    [tokens/s]."""
    return request_rate_per_s * prompt_tokens_mean


@parallel_metric("replicas", source=DISTSERVE)
def prefill_replicas_needed(
    prompt_tokens_per_s_demanded: Any, prefill_tokens_per_s_per_replica: Any
) -> Any:
    """Prefill replicas: the fewest that keep each below full, ⌊prompt tokens demanded a second
    ÷ one replica's prompt tokens a second⌋ + 1 [replicas] (at a whole ratio, that many
    replicas would run at 100 %, and their queue would grow without bound)."""
    return floor(prompt_tokens_per_s_demanded / prefill_tokens_per_s_per_replica) + 1


@parallel_metric("sequences", source=LITTLE)
def decode_concurrency(request_rate_per_s: Any, output_tokens_mean: Any, itl_s: Any) -> Any:
    """Sequences the decode pool holds at once: arrivals a second × each one's time decoding
    (mean output × ITL) [sequences] (Little's law, L = λW)."""
    return request_rate_per_s * output_tokens_mean * itl_s


@parallel_metric("replicas", source=f"{DISTSERVE}; {LITTLE}")
def decode_replicas_needed(decode_concurrency: Any, sequences_per_replica: Any) -> Any:
    """Decode replicas: ⌈concurrent sequences ÷ one replica's sequences⌉ [replicas]."""
    return ceil(decode_concurrency / sequences_per_replica)


@parallel_metric("", source=DISTSERVE)
def prefill_to_decode_devices(
    prefill_replicas_needed: Any,
    prefill_devices_per_replica: Any,
    decode_replicas_needed: Any,
    decode_devices_per_replica: Any,
) -> Any:
    """Devices of the prefill pool per device of the decode pool [ratio]."""
    prefill = prefill_replicas_needed * prefill_devices_per_replica
    return prefill / (decode_replicas_needed * decode_devices_per_replica)


# Plan columns: an expert-parallel candidate's replica ---------------------------------------


@metric("", source=f"Megatron-LM (Shoeybi et al. 2019); {DEEPSEEK_V3} §3.4", group="memory")
def routed_share_per_device(
    tensor_parallel: Any, expert_parallel: Any, experts: Any, redundant_experts: Any
) -> Any:
    """Share of the routed experts' weights each device holds [-]: 1 ÷ TP of every expert
    under tensor parallelism; under expert parallelism its slots, (experts + redundant
    slots) ÷ EP whole experts, ÷ experts. DeepSeek-V3 at EP 72 with 32 redundant slots:
    288 ÷ 72 = 4 of 256, 1/64; at EP 8 with none: 32 of 256, 1/8."""
    slots = routed_slots_per_device(experts, redundant_experts, maximum(expert_parallel, 1))
    return where(expert_parallel > 1, slots / maximum(experts, 1), 1 / tensor_parallel)


@metric("B", source=f"{DEEPSEEK_V3} §3.4; {SGLANG_EP}", group="memory")
def expert_parallel_weight_bytes(
    weight_bytes: Any,
    routed_expert_parameters: Any,
    weight_bytes_per_param: Any,
    routed_share_per_device: Any,
    expert_parallel: Any,
) -> Any:
    """Weights each device of an expert-parallel replica holds: everything but the routed
    experts (attention, embeddings, shared experts, dense layers, replicated on every device)
    whole, and its slots' share of the routed experts (:func:`routed_share_per_device`: 1 ÷ EP
    without redundant slots) [B]; the whole payload for a replica without expert parallelism
    (EP 1: every expert on each device).

    Under tensor parallelism the same payload is divided by TP; here only the experts are
    divided, so a device holds more weights and, with attention's caches not copied, more
    sequences."""
    routed = routed_expert_parameters * weight_bytes_per_param
    share = where(expert_parallel > 1, routed_share_per_device, 1)
    return weight_bytes - routed + routed * share


@metric("sequences", source=f"{SGLANG_EP} (DP attention)", group="latency")
def device_batch(decode_batch: Any, expert_parallel: Any) -> Any:
    """Sequences each device decodes: the replica's batch ÷ EP (data-parallel attention; the
    whole batch on every device of a tensor-parallel replica, EP 1) [sequences]."""
    return decode_batch / expert_parallel


@metric("FLOP/s", source=ROOFLINE, group="latency")
def device_compute_flops_per_s(achieved_compute_flops_per_s: Any, tensor_parallel: Any) -> Any:
    """Compute one device of the replica sustains: the replica's ÷ its devices [FLOP/s]."""
    return achieved_compute_flops_per_s / tensor_parallel


@metric("s", source=f"{DEEPEP}; uniform routing", group="latency")
def expert_alltoall_s_per_step(
    device_batch: Any,
    experts_per_token: Any,
    hidden_size: Any,
    expert_dispatch_bytes_per_value: Any,
    activation_bytes: Any,
    expert_imbalance: Any,
    expert_parallel: Any,
    devices_per_node: Any,
    interconnect_bytes_per_s: Any,
    allreduce_fixed_s: Any,
    layers: Any,
    network_bytes_per_s: Any,
) -> Any:
    """All-to-all of one decode step of an expert-parallel replica: every layer dispatches
    (FP8 with scales) and combines (activations) the device's tokens at the busiest device's
    imbalance, the peers in its node over the interconnect and those in the replica's other
    nodes over the network (:func:`alltoall_s`: the slower of the two), + the collective's
    fixed latency [s]; 0 at EP 1. Every layer is counted as a mixture-of-experts layer (dense
    first layers are not in the catalog), which overstates DeepSeek-V3's 58 of 61 by 5 %."""
    return _replica_alltoall_s(
        device_batch,
        (experts_per_token, hidden_size, expert_imbalance, layers),
        (expert_dispatch_bytes_per_value, activation_bytes),
        (expert_parallel, devices_per_node, interconnect_bytes_per_s, network_bytes_per_s),
        allreduce_fixed_s,
    )


def _replica_alltoall_s(tokens: Any, model: tuple, values: tuple, link: tuple, latency: Any) -> Any:
    """Every layer's dispatch and combine of ``tokens`` a device [s]: ``model`` (k, hidden,
    imbalance, layers), ``values`` (bytes a value dispatched and combined), ``link`` (EP,
    devices a node, interconnect and network [B/s]), ``latency`` a collective's [s]."""
    k, hidden, imbalance, layers = model
    ep, per_node, scale_up, scale_out = link
    sent = [alltoall_bytes_per_device(tokens, k, hidden, v, ep, imbalance) for v in values]
    dispatch, combine = (alltoall_s(b, ep, per_node, scale_up, scale_out, latency) for b in sent)
    return where(ep > 1, alltoall_s_per_step(layers, dispatch, combine), 0)


#: The metrics rebound below, registered by importing them first.
_REBOUND = (decode_memory_s, decode_compute_s)
rebound(
    "device_decode_memory_s",
    "decode_memory_s",
    {"decode_batch": "device_batch"},
    "Memory time of one device's decode step: its weights once + its own sequences' caches.",
)
rebound(
    "device_decode_compute_s",
    "decode_compute_s",
    {"decode_batch": "device_batch", "achieved_compute_flops_per_s": "device_compute_flops_per_s"},
    "Compute time of one device's decode step: its own sequences at one device's rate.",
)


@metric("s", source=f"{ROOFLINE}; {POPE}; {DEEPEP}", group="latency")
def expert_parallel_itl_s(
    device_decode_memory_s: Any,
    device_decode_compute_s: Any,
    expert_alltoall_s_per_step: Any,
    device_batch: Any,
    step_overhead_s: Any,
    step_overhead_per_sequence_s: Any,
    expert_overlap: Any,
) -> Any:
    """Inter-token latency of an expert-parallel replica: one device's step
    (:func:`expert_parallel_step_s`: max(memory, compute) with the all-to-all added, or
    overlapped at ``expert_overlap`` 1) + the engine's time for each of its sequences [s]."""
    step = expert_parallel_step_s(
        device_decode_memory_s,
        device_decode_compute_s,
        expert_alltoall_s_per_step,
        step_overhead_s,
        expert_overlap,
    )
    return step + device_batch * step_overhead_per_sequence_s


@metric("s/token", source=f"{DEEPEP}; uniform routing", group="latency")
def expert_alltoall_s_per_token(
    experts_per_token: Any,
    hidden_size: Any,
    expert_dispatch_bytes_per_value: Any,
    activation_bytes: Any,
    expert_imbalance: Any,
    expert_parallel: Any,
    devices_per_node: Any,
    interconnect_bytes_per_s: Any,
    layers: Any,
    network_bytes_per_s: Any,
) -> Any:
    """All-to-all time each token of a step adds on an expert-parallel replica: every layer
    dispatches and combines it, as :func:`expert_alltoall_s_per_step` does each of a device's
    tokens, without the collectives' fixed latency, which a step pays once [s/token]; 0 at EP 1.
    DeepSeek-V3 at EP 8 over 450 GB/s, imbalance 1.18: 61 × (61,057.92 + 118,415.36 B) ÷
    450e9 = 24.33 µs. At EP 16 over two such nodes, 50 GB/s a device between them, 8 of 15
    peers are remote: 61 × (65,419.2 + 126,873.6 B) × 8/15 ÷ 50e9 = 125.12 µs, against
    12.16 µs for the 7 in its node over NVLink."""
    return _replica_alltoall_s(
        1,
        (experts_per_token, hidden_size, expert_imbalance, layers),
        (expert_dispatch_bytes_per_value, activation_bytes),
        (expert_parallel, devices_per_node, interconnect_bytes_per_s, network_bytes_per_s),
        0,
    )


@metric("FLOP/s", source=f"{ROOFLINE}; {SGLANG_EP} (DP attention)", group="latency")
def prefill_compute_flops_per_s(
    prefill_hw_achieved_compute_flops_per_s: Any,
    prefill_hw_device_compute_flops_per_s: Any,
    prefill_hw_expert_parallel: Any,
    routed_expert_parameters: Any,
    experts_per_token: Any,
    experts: Any,
    active_parameters: Any,
    disaggregated: Any = 0,
) -> Any:
    """Compute a prompt is prefilled at [FLOP/s]: the replica's; under data-parallel
    attention (EP > 1) one device's for the part of its arithmetic that stays on its rank
    (attention, shared experts, dense layers) and every device's for the routed experts' share
    r of it, whose tokens are dispatched: device ÷ (1 − r + r ÷ EP), with r = routed
    parameters × k ÷ experts ÷ active parameters. DeepSeek-V3 at EP 8: r = 653.9e9 × 8 ÷ 256
    ÷ 37.55e9 = 0.544, 1.91 devices' worth. That is the step of a rank that prefills while the
    others decode; where several prefill at once their routed arithmetic adds up, which this
    leaves out. In a prefill pool every rank prefills: one device's rate. The rates are those
    of the hardware and layout the prompts run on (``prefill_hw_``: a prefill pool's own
    device and expert-parallel size)."""
    device = prefill_hw_device_compute_flops_per_s
    ranks = prefill_hw_expert_parallel
    routed = routed_expert_parameters * experts_per_token / maximum(experts, 1)
    share = minimum(routed / maximum(active_parameters, 1), 1)
    spread = device / (1 - share + share / maximum(ranks, 1))
    rank = where(disaggregated > 0, device, spread)
    return where(ranks > 1, rank, prefill_hw_achieved_compute_flops_per_s)


@metric("", kind="bool", source=f"{DEEPSEEK_V3} §3.4 (two micro-batches overlap)", group="latency")
def expert_alltoall_hidden(expert_parallel: Any, expert_overlap: Any) -> Any:
    """Whether an expert-parallel replica's all-to-all is planned hidden under its arithmetic
    (``expert_overlap`` above 0: the step the longer of the two), not added to its step. The
    serving simulation steps an expert-parallel replica with its all-to-all added, so this one
    is planned in closed form only."""
    return (expert_parallel > 1) & (expert_overlap > 0)


# The same step at the forecast load's batch (planner.model.load) --------------------------

rebound(
    "load_device_batch",
    "device_batch",
    {"decode_batch": "load_batch"},
    "Sequences each device decodes at the load batch: the load batch ÷ EP.",
)
rebound(
    "load_device_decode_memory_s",
    "device_decode_memory_s",
    {
        "decode_weight_bytes_per_step": "load_decode_weight_bytes_per_step",
        "device_batch": "load_device_batch",
    },
    "Memory time of one device's decode step at the load batch [s].",
)
rebound(
    "load_device_decode_compute_s",
    "device_decode_compute_s",
    {"device_batch": "load_device_batch"},
    "Compute time of one device's decode step at the load batch [s].",
)
rebound(
    "load_expert_alltoall_s_per_step",
    "expert_alltoall_s_per_step",
    {"device_batch": "load_device_batch"},
    "All-to-all of one decode step at the load batch [s].",
)
rebound(
    "load_expert_parallel_itl_s",
    "expert_parallel_itl_s",
    {
        "device_decode_memory_s": "load_device_decode_memory_s",
        "device_decode_compute_s": "load_device_decode_compute_s",
        "expert_alltoall_s_per_step": "load_expert_alltoall_s_per_step",
        "device_batch": "load_device_batch",
    },
    "Inter-token latency of an expert-parallel replica at the load batch [s].",
)
