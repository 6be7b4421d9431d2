"""Speculative decoding in closed form: how many tokens a verifying step emits, what the step
costs, and where it stops paying.

A proposer (a small draft model, an EAGLE head or the model's own multi-token-prediction
layers) guesses k tokens per sequence; the target model then runs the k + 1 positions of each
sequence in one forward pass and keeps the guesses up to the first it rejects, plus one token of
its own. With each guess accepted independently with probability α, a step emits
1 + α + … + α^k tokens per sequence (Leviathan et al. 2023, §3.1).

The verifying step reads the target's weights once and each sequence's cache once, as a plain
decode step does, but multiplies k + 1 tokens per sequence, writes their keys and values, and
all-reduces their activations; the proposer's k forwards come before it. The step's time
divided by the tokens it emits is the inter-token latency (:func:`planner.model.latency.itl_s`
takes the step's pieces from here). At small batches the step is bound by reading the weights,
so the extra arithmetic is nearly free and speculation pays; as the batch grows the k + 1
multiplications become the step's bound and speculation turns into a loss
(:func:`speculative_speedup` below 1).

With no speculation (k = 0) every figure here is the plain step's exactly: one token per step,
no proposer time, no extra writes, no extra weights or cache.
"""

from __future__ import annotations

from typing import Any

from planner.model import latency
from planner.model.expr import is_number, maximum, power, where
from planner.model.metric import metric, rebound
from planner.model.sources import EAGLE, LEVIATHAN, POPE, ROOFLINE


@metric("fraction", source=LEVIATHAN, group="latency")
def acceptance_rate(workload_acceptance_rate: Any, speculative_acceptance_rate: Any) -> Any:
    """Share of proposed tokens the target model accepts, each independently of the others
    [fraction]: the workload's own figure (the engine profile's ``acceptance_by_workload``),
    else the profile's, else its method's shipped figure (0 without speculation)."""
    return where(
        is_number(workload_acceptance_rate),
        workload_acceptance_rate,
        speculative_acceptance_rate,
    )


@metric("tokens", source=LEVIATHAN, group="latency")
def speculative_tokens_per_step(speculative_tokens: Any, acceptance_rate: Any) -> Any:
    """Tokens one sequence emits per decode step: 1 + α + α² + … + α^k =
    (1 − α^(k+1)) ÷ (1 − α), and k + 1 at α = 1 [tokens].

    k proposals, each accepted with probability α until the first rejection, and the target's
    own token after the last accepted one (Leviathan et al. 2023, §3.1). k = 3, α = 0.7:
    1 + 0.7 + 0.49 + 0.343 = 2.533. k = 0 (no speculation): 1.
    """
    below = acceptance_rate < 1
    series = (1 - power(acceptance_rate, speculative_tokens + 1)) / where(
        below, 1 - acceptance_rate, 1
    )
    return where(below, series, speculative_tokens + 1)


@metric("tokens", source=LEVIATHAN, group="latency")
def verify_tokens_per_sequence(speculative_tokens: Any) -> Any:
    """Positions the target model runs per sequence in a verifying step: the k proposals and
    the token before them, k + 1 [tokens] (1 without speculation)."""
    return speculative_tokens + 1


@metric("B", source=f"{LEVIATHAN}; {POPE}", group="memory")
def draft_weight_bytes_per_device(
    draft_parameters: Any, weight_bytes_per_param: Any, tensor_parallel: Any
) -> Any:
    """Weights the proposer adds on each device: its own parameters at the precision's bytes
    per weight ÷ TP [B] (0 without speculation). An EAGLE head of 250,000,000 parameters in
    BF16 adds 0.5 GB at TP 1; a 1-billion-parameter draft model 2 GB."""
    return draft_parameters * weight_bytes_per_param / tensor_parallel


@metric("B", source=f"{LEVIATHAN}; {POPE}", group="memory")
def draft_kv_bytes_per_token(
    draft_kv_values_per_token: Any, kv_bytes_per_value: Any, tensor_parallel: Any
) -> Any:
    """Cache the proposer keeps per token per device: its cached values per token (a draft
    model's layers; an EAGLE head's or MTP module's layer of the target's attention shape) ×
    bytes per value ÷ TP [B]. Llama 3.2 1B as draft: 16 layers × 2 × 8 heads × 64 × 2 B =
    32,768 B per token at TP 1."""
    return draft_kv_values_per_token * kv_bytes_per_value / tensor_parallel


@metric("B", source=EAGLE, group="latency")
def draft_read_bytes_per_forward(
    draft_weight_bytes_per_device: Any,
    draft_shares_lm_head: Any,
    vocab_size: Any,
    hidden_size: Any,
    embedding_bits: Any,
    tensor_parallel: Any,
) -> Any:
    """Weight bytes one forward of the proposer reads per device: its own weights, and where it
    shares the target's LM head (EAGLE, MTP) that head too, vocabulary × width at the
    embeddings' bits ÷ TP [B] (nothing for the head where the vocabulary is unknown)."""
    head = where(is_number(vocab_size), vocab_size * hidden_size, 0)
    shared = draft_shares_lm_head * head * (embedding_bits / 8) / tensor_parallel
    return draft_weight_bytes_per_device + shared


@metric("FLOP", source=f"{EAGLE}; 2 FLOP per parameter per token", group="latency")
def draft_flops_per_token(
    draft_parameters: Any, draft_shares_lm_head: Any, vocab_size: Any, hidden_size: Any
) -> Any:
    """Arithmetic of one proposer forward for one sequence: 2 × (its parameters + the shared
    LM head's) [FLOP]."""
    head = where(is_number(vocab_size), vocab_size * hidden_size, 0)
    return 2 * (draft_parameters + draft_shares_lm_head * head)


@metric("s", source=f"{LEVIATHAN}; {ROOFLINE}", group="latency")
def draft_s(
    speculative_tokens: Any,
    draft_read_bytes_per_forward: Any,
    decode_batch: Any,
    mean_context_tokens: Any,
    draft_kv_bytes_per_token: Any,
    draft_flops_per_token: Any,
    achieved_compute_flops_per_s: Any,
    memory_bandwidth_bytes_per_s: Any,
    bandwidth_efficiency: Any,
) -> Any:
    """Time the proposer takes in a step: k forwards one after the other, each the slower of
    reading its weights and every sequence's draft cache, and its arithmetic for the batch [s]:
    k × max((draft bytes + B × context × draft cache per token) ÷ bandwidth,
    B × draft FLOP ÷ compute). 0 without speculation.

    Each forward is launched within the engine's step (CUDA graphs), so no fixed step overhead
    is added per forward; its multiplications' padding is not counted.
    """
    bandwidth = memory_bandwidth_bytes_per_s * bandwidth_efficiency
    caches = decode_batch * mean_context_tokens * draft_kv_bytes_per_token
    memory = (draft_read_bytes_per_forward + caches) / bandwidth
    compute = decode_batch * draft_flops_per_token / achieved_compute_flops_per_s
    return speculative_tokens * maximum(memory, compute)


@metric("B", source=f"{LEVIATHAN}; {POPE}", group="latency")
def verify_kv_write_bytes_per_sequence_step(
    speculative_tokens: Any, kv_bytes_per_token: Any
) -> Any:
    """Cache one sequence writes in a verifying step beyond a plain step's: the k proposed
    positions' keys and values, k × KV bytes per token [B] (a plain step's one write is small
    beside its cache read and is not counted). 0 without speculation."""
    return speculative_tokens * kv_bytes_per_token


@metric("s", source=f"{ROOFLINE}; {POPE}", group="latency")
def plain_itl_s(
    decoder_weight_bytes_per_device: Any,
    routed_expert_parameters: Any,
    weight_bytes_per_param: Any,
    experts: Any,
    experts_per_token: Any,
    routed_share_per_device: Any,
    decode_batch: Any,
    kv_read_bytes_per_sequence_step: Any,
    memory_bandwidth_bytes_per_s: Any,
    bandwidth_efficiency: Any,
    decode_flops_per_token: Any,
    achieved_compute_flops_per_s: Any,
    matmul_padding_s: Any,
    allreduce_s_per_token: Any,
    step_overhead_s: Any,
    step_overhead_per_sequence_s: Any,
) -> Any:
    """Inter-token latency of the same replica without speculation: one plain decode step at
    the batch, :func:`planner.model.latency.itl_s` of one token per sequence [s] (``itl_s``
    itself where speculation is off)."""
    touched = latency.experts_touched_fraction(experts, experts_per_token, decode_batch)
    weights = latency.decode_weight_bytes_per_step(
        decoder_weight_bytes_per_device,
        routed_expert_parameters,
        weight_bytes_per_param,
        touched,
        routed_share_per_device,
    )
    memory = latency.decode_memory_s(
        weights,
        decode_batch,
        kv_read_bytes_per_sequence_step,
        memory_bandwidth_bytes_per_s,
        bandwidth_efficiency,
    )
    compute = latency.decode_compute_s(
        decode_flops_per_token,
        decode_batch,
        achieved_compute_flops_per_s,
        matmul_padding_s,
        kv_read_bytes_per_sequence_step,
        memory_bandwidth_bytes_per_s,
        bandwidth_efficiency,
    )
    return latency.itl_s(
        memory,
        compute,
        allreduce_s_per_token,
        decode_batch,
        step_overhead_s,
        step_overhead_per_sequence_s,
    )


@metric("ratio", source=LEVIATHAN, group="latency")
def speculative_speedup(plain_itl_s: Any, itl_s: Any) -> Any:
    """How much faster tokens come with speculation at the replica's batch: plain ITL ÷
    speculative ITL [ratio]; above 1 it pays, below 1 it is a loss (1 without speculation).
    Output tokens per second per replica grow by the same factor.

    The batch where it turns into a loss has no one closed form: both steps are the larger of
    a memory line and an arithmetic line in the batch B (and the proposer's step too), so the
    crossing depends on which lines bind on each side. Within one regime it is a linear
    equation: with the plain step bound by its weight read and the verifying step by its
    k + 1 tokens' arithmetic, B = (E × (W + O) − k × D − O) ÷ ((k + 1) × F + C + k × d −
    E × R), E the tokens per step, W the plain step's weight-read time, O the fixed overheads,
    D and d the proposer's read time per forward and per sequence, F the arithmetic per
    sequence, C and R the cache times per sequence (tests/test_speculative.py works one: 55.7
    sequences). In general it is found by evaluating this ratio at increasing batches (the
    serving simulation's step table, or the Plan's column at each candidate's batch), the
    smallest batch where it falls to 1 or below.
    """
    return plain_itl_s / itl_s


rebound(
    "load_draft_s",
    "draft_s",
    {"decode_batch": "load_batch"},
    "Time the speculative proposer takes in a decode step at the load batch [s].",
)
