"""Memory metrics: weight payload, KV cache, the per-device budget and safe concurrency.

Sources are named on each metric (:mod:`planner.model.sources`): the weight and cache
arithmetic of Pope et al. 2022, grouped-query attention (Ainslie et al. 2023), the paged cache,
admission and preemption of vLLM (Kwon et al. 2023). The worked figures in the docstrings (a
7-billion-parameter model, 128 KiB per cached token, a 16 GiB device) are checked by the tests.
All per-device figures divide by the tensor-parallel size of the replica.
"""

from __future__ import annotations

from typing import Any

from planner.model.expr import ceil, floor, is_number, logical_not, maximum, minimum, where
from planner.model.metric import derived, metric
from planner.model.sources import DEEPSEEK_V2, GQA, MISTRAL, PAGED, POPE, UNITS
from planner.model.units import GB, GIB, MIB


@metric(
    "B", source="GPTQ/AWQ group quantisation (Frantar et al. 2022; Lin et al. 2023)", group="memory"
)
def weight_bytes_per_param(weight_bits: Any, group_size: Any, scale_bits: Any) -> Any:
    """Stored bytes per quantised weight: (bits + scale bits ÷ group size) ÷ 8 [B].

    4-bit weights in groups of 128 with a 16-bit scale are 4 + 16/128 = 4.125 bits, 0.515625 B.
    BF16 is 16 bits, 2 B. Group size 0 means no per-group scales.
    """
    return (weight_bits + where(group_size > 0, scale_bits / maximum(group_size, 1), 0)) / 8


@metric("B", source="OCP Microscaling (MX) v1.0 for experts-only MXFP4", group="memory")
def unquantised_bytes_per_param(weight_bytes_per_param: Any, unquantised_bits: Any) -> Any:
    """Stored bytes per weight outside the routed experts: the quantised size, or
    ``unquantised_bits`` ÷ 8 where the quantisation covers the experts only [B].

    gpt-oss keeps attention and router in BF16 (2 B) beside MXFP4 experts."""
    return where(unquantised_bits > 0, unquantised_bits / 8, weight_bytes_per_param)


@metric("B", source=f"{POPE}; {UNITS}", group="memory")
def weight_bytes(
    parameters: Any,
    embedding_parameters: Any,
    routed_expert_parameters: Any,
    weight_bytes_per_param: Any,
    unquantised_bytes_per_param: Any,
    embedding_bits: Any,
) -> Any:
    """Weight payload: routed experts at the quantised size, the other layers at theirs,
    embeddings at their own bits [B].

    7e9 parameters at 2 bytes is a 14,000,000,000-byte payload, about 13.04 GiB. Memory
    holds every expert of a mixture of experts. Runtime buffers and allocator overhead are not in
    this figure; they are in ``runtime_overhead_bytes``.
    """
    other = parameters - embedding_parameters - routed_expert_parameters
    return (
        routed_expert_parameters * weight_bytes_per_param
        + other * unquantised_bytes_per_param
        + embedding_parameters * (embedding_bits / 8)
    )


@metric("B", source="Megatron-LM tensor parallelism (Shoeybi et al. 2019)", group="memory")
def weight_bytes_per_device(
    weight_bytes: Any,
    tensor_parallel: Any,
    expert_parallel: Any = 1,
    expert_parallel_weight_bytes: Any = 0,
) -> Any:
    """Weights held by each device of a tensor-parallel replica: payload ÷ TP size [B]; of an
    expert-parallel one (EP > 1), :func:`planner.model.parallel.expert_parallel_weight_bytes`."""
    return where(expert_parallel > 1, expert_parallel_weight_bytes, weight_bytes / tensor_parallel)


@metric("B", source="the model card's count outside the decoder (import-hf)", group="memory")
def decoder_weight_bytes_per_device(
    weight_bytes_per_device: Any,
    encoder_parameters: Any,
    unquantised_bytes_per_param: Any,
    tensor_parallel: Any,
) -> Any:
    """The decoder's weights on each device: all of them less a multimodal model's encoder
    (vision tower and projector, stored like the other unquantised layers), which no generated
    token runs [B]. Qwen2.5-VL 7B in BF16: 676,550,144 × 2 B less."""
    return weight_bytes_per_device - encoder_parameters * unquantised_bytes_per_param / (
        tensor_parallel
    )


@metric("heads", source="vLLM: KV heads are replicated when TP exceeds them", group="memory")
def kv_heads_per_device(kv_heads: Any, stage_tensor_parallel: Any, expert_parallel: Any = 1) -> Any:
    """KV heads each device caches: ⌈KV heads ÷ TP⌉, TP a stage's devices (heads are
    replicated, never split); all of them under data-parallel attention (EP > 1), each device
    caching its own sequences whole."""
    return ceil(kv_heads / where(expert_parallel > 1, 1, stage_tensor_parallel))


@metric("values", source=f"{POPE}; {GQA}; {DEEPSEEK_V2} for MLA", group="memory")
def kv_values_per_token_per_layer(mla_kv_dim: Any, kv_heads_per_device: Any, head_dim: Any) -> Any:
    """Values cached per token in one layer: 2 × KV heads × head dim, or the MLA latent width.

    The 2 counts keys and values. Multi-head latent attention caches one compressed
    vector of kv_lora_rank + rope dimensions per token per layer instead, with no head factor.
    """
    return where(mla_kv_dim > 0, mla_kv_dim, 2 * kv_heads_per_device * head_dim)


@metric(
    "layers",
    source=f"{MISTRAL} (sliding windows); hybrid layer patterns",
    group="memory",
)
def full_attention_layers(layers: Any, windowed_layers: Any, cacheless_layers: Any) -> Any:
    """Layers that cache every token: all layers less sliding-window and cacheless ones."""
    return layers - windowed_layers - cacheless_layers


@metric("B", source=f"{POPE}; {GQA}", group="memory")
def kv_bytes_per_token(
    full_attention_layers_per_device: Any,
    kv_values_per_token_per_layer: Any,
    kv_bytes_per_value: Any,
) -> Any:
    """KV-cache bytes per token per device over full-attention layers [B].

    For a plain decoder this is 2 × layers × KV heads × head dim × bytes per value:
    32 layers, 8 KV heads, head dim 128 and 2-byte values give 131,072 B (128 KiB) per token.
    KV heads, not query heads: grouped-query attention shares keys and values.
    """
    return full_attention_layers_per_device * kv_values_per_token_per_layer * kv_bytes_per_value


@metric("B", source=f"{MISTRAL}; Beltagy et al. 2020 (Longformer)", group="memory")
def kv_bytes_per_token_windowed(
    windowed_layers_per_device: Any, kv_values_per_token_per_layer: Any, kv_bytes_per_value: Any
) -> Any:
    """KV-cache bytes per token per device over sliding-window layers, up to the window [B]."""
    return windowed_layers_per_device * kv_values_per_token_per_layer * kv_bytes_per_value


@metric("tokens", source=f"{PAGED} (reserve the promised maximum)", group="memory")
def tokens_per_sequence(prompt_tokens: Any, max_output_tokens: Any) -> Any:
    """Tokens a sequence may hold: longest prompt + the promised maximum output [tokens].

    Reserving the promised maximum, not the current length, is what guarantees that an admitted
    request can complete.
    """
    return prompt_tokens + max_output_tokens


@metric(
    "tokens", source="Kwon et al. 2023 (vLLM PagedAttention): blocks of N tokens", group="memory"
)
def allocated_tokens_per_sequence(tokens_per_sequence: Any, kv_block_tokens: Any) -> Any:
    """Cache slots a sequence occupies with paged allocation: ⌈tokens ÷ block⌉ × block [tokens].

    The seed's estimate excludes paging waste (its last paragraph); a block of 1 reproduces it.
    """
    return ceil(tokens_per_sequence / kv_block_tokens) * kv_block_tokens


@metric("tokens", source=f"{MISTRAL}: the cache holds at most the window", group="memory")
def windowed_tokens_per_sequence(
    tokens_per_sequence: Any, window_tokens: Any, kv_block_tokens: Any
) -> Any:
    """Cache slots a sliding-window layer keeps: min(window, tokens), paged [tokens]."""
    return ceil(minimum(window_tokens, tokens_per_sequence) / kv_block_tokens) * kv_block_tokens


@metric("B", source=POPE, group="memory")
def kv_bytes_per_sequence(
    allocated_tokens_per_sequence: Any,
    kv_bytes_per_token: Any,
    windowed_tokens_per_sequence: Any,
    kv_bytes_per_token_windowed: Any,
    state_bytes_per_sequence: Any,
    draft_kv_bytes_per_token: Any = 0,
) -> Any:
    """Cache reserved per sequence at its maximum length, per device [B].

    Full layers × allocated tokens + windowed layers × tokens in the window + any fixed state of
    cacheless layers + a speculative proposer's own cache (a draft model's or head's layers ×
    allocated tokens; 0 without one). 4,096 tokens at 128 KiB per token need 512 MiB; with a
    draft model caching 32 KiB per token, 640 MiB.
    """
    return (
        allocated_tokens_per_sequence * kv_bytes_per_token
        + windowed_tokens_per_sequence * kv_bytes_per_token_windowed
        + state_bytes_per_sequence
        + allocated_tokens_per_sequence * draft_kv_bytes_per_token
    )


@metric("B", source="Kwon et al. 2023 (vLLM PagedAttention)", group="memory")
def kv_paging_waste_bytes(
    allocated_tokens_per_sequence: Any, tokens_per_sequence: Any, kv_bytes_per_token: Any
) -> Any:
    """Cache lost per sequence to rounding up to whole blocks [B]."""
    return (allocated_tokens_per_sequence - tokens_per_sequence) * kv_bytes_per_token


@metric("B", source=PAGED, group="memory")
def kv_budget_bytes(
    memory_bytes: Any,
    weight_bytes_per_device: Any,
    runtime_overhead_bytes: Any,
    reserve_bytes: Any,
    engine_modelled: Any,
    kv_pool_bytes: Any,
    draft_weight_bytes_per_device: Any = 0,
) -> Any:
    """Memory left for the KV cache per device: memory − weights − runtime overhead − reserve [B].

    16 GiB − 4 GiB weights − 2 GiB runtime − 2 GiB reserve leaves 8 GiB. Negative when
    the weights alone do not fit. With an engine profile, the engine's own pool
    (``kv_pool_bytes``) instead, wherever the model's architecture sizes its activation peak.
    A speculative proposer's weights (0 without one) come out of either: the engine loads
    them before it sizes its pool.
    """
    planned = memory_bytes - weight_bytes_per_device - runtime_overhead_bytes - reserve_bytes
    pool = where((engine_modelled > 0) & is_number(kv_pool_bytes), kv_pool_bytes, planned)
    return pool - draft_weight_bytes_per_device


@metric("sequences", source=PAGED, group="memory")
def max_sequences(
    kv_budget_bytes: Any,
    kv_bytes_per_sequence: Any,
    shared_prefix_kv_bytes: Any = 0,
    expert_parallel: Any = 1,
) -> Any:
    """Concurrent sequences whose maximum-length cache fits: ⌊(budget − shared prefix) ÷ (per
    sequence − shared prefix)⌋, at least 0.

    8 GiB ÷ 512 MiB = 16; with 1,024 more output tokens per sequence (5,120 tokens,
    640 MiB) it is 12. A prefix every sequence shares (``shared_prefix_kv_bytes``, 0 without
    prefix caching) is held once: the pool reserves it once and each sequence the rest. Under
    data-parallel attention (EP > 1) each device holds that many of its own: × EP a replica.
    """
    own = kv_bytes_per_sequence - shared_prefix_kv_bytes
    return maximum(0, floor((kv_budget_bytes - shared_prefix_kv_bytes) / own)) * expert_parallel


@metric("B", source=POPE, group="memory")
def kv_bytes_at_concurrency(
    concurrency: Any, kv_bytes_per_sequence: Any, shared_prefix_kv_bytes: Any = 0
) -> Any:
    """KV cache the workload's concurrent users need at maximum length, per device [B].

    Sixteen 4,096-token sequences need 8 GiB. Zero for an open-loop workload. A prefix they all
    share is counted once: users × (per sequence − shared prefix) + shared prefix.
    """
    shared = where(concurrency > 0, shared_prefix_kv_bytes, 0)
    return concurrency * (kv_bytes_per_sequence - shared_prefix_kv_bytes) + shared


@metric("", source=PAGED, kind="bool", group="memory")
def replica_fits(
    max_sequences: Any,
    engine_starts: Any,
    engine_accepts_requests: Any,
    prefill_pool_fits: Any = True,
) -> Any:
    """Whether one replica holds at least one sequence at its promised maximum length, in an
    engine that starts with its ``max_model_len`` and accepts the workload's requests (and, for
    a prefill pool on another device, whether that device holds its share too:
    :func:`planner.model.disaggregated.prefill_pool_fits`)."""
    return (max_sequences >= 1) & engine_starts & engine_accepts_requests & prefill_pool_fits


@metric("", source=PAGED, kind="bool", group="memory")
def fits(concurrency: Any, max_sequences: Any, replica_fits: Any) -> Any:
    """Whether the workload's concurrency fits one replica with every sequence at its maximum.

    Loading the weights is not enough: the cache for the promised context and output
    of every concurrent request must fit as well. An open-loop workload fits when one sequence
    does; ``replicas_needed`` then sizes the fleet.
    """
    return replica_fits & where(concurrency > 0, concurrency <= max_sequences, True)


@metric("", source=PAGED, kind="text", group="memory")
def fit_reason(
    weight_bytes_per_device: Any,
    memory_bytes: Any,
    max_sequences: Any,
    engine_accepts_requests: Any,
    engine_starts: Any,
    fits: Any,
    prefill_pool_fits: Any = True,
) -> Any:
    """Why a candidate fits or not, in words."""
    return where(
        fits,
        "fits",
        where(
            weight_bytes_per_device > memory_bytes,
            "weights exceed device memory",
            where(
                logical_not(prefill_pool_fits),
                "the prefill pool's device cannot hold its weights, the shared prefix and one "
                "request's cache",
                where(
                    engine_accepts_requests,
                    where(
                        max_sequences < 1,
                        "no room for one maximum-length sequence",
                        where(
                            engine_starts,
                            "concurrency exceeds KV capacity of one replica",
                            "the engine's max_model_len needs more KV cache than its pool holds "
                            "(it would not start)",
                        ),
                    ),
                    "the workload's requests are longer than the engine's max_model_len",
                ),
            ),
        ),
    )


@metric("B", source=PAGED, group="memory")
def memory_headroom_bytes(kv_budget_bytes: Any, kv_bytes_at_concurrency: Any) -> Any:
    """KV budget left after the workload's concurrency at maximum length [B]; negative if short."""
    return kv_budget_bytes - kv_bytes_at_concurrency


def _per(size: float) -> Any:
    return lambda value: value / size


for _name, _of, _size, _unit in (
    ("memory_gib", "memory_bytes", GIB, "GiB"),
    ("weight_gb", "weight_bytes", GB, "GB"),
    ("weight_gib", "weight_bytes", GIB, "GiB"),
    ("weight_gib_per_device", "weight_bytes_per_device", GIB, "GiB"),
    ("kv_mib_per_sequence", "kv_bytes_per_sequence", MIB, "MiB"),
    ("kv_budget_gib", "kv_budget_bytes", GIB, "GiB"),
    ("kv_gib_at_concurrency", "kv_bytes_at_concurrency", GIB, "GiB"),
    ("memory_headroom_gib", "memory_headroom_bytes", GIB, "GiB"),
):
    derived(_name, _of, _per(_size), _unit, f"{_of} in {_unit}", group="memory")
