"""Parameter counts and KV-cache sizes derived from a decoder model's architecture.

The architecture is described by the handful of numbers a Hugging Face ``config.json`` carries
(see :mod:`planner.catalog.hf` for the import). From them this module derives:

* :func:`count_parameters`: total and per-token active parameters, with a breakdown by component;
* :func:`kv_cache_values_per_token`, :func:`kv_cache_split`, :func:`kv_cache_values`: how many
  values the KV cache stores per token, for full attention (GQA/MHA/MQA), DeepSeek's multi-head
  latent attention (MLA) and sliding-window hybrids (Mistral, Gemma 2, Gemma 3, Qwen2).

Counts are plain parameter counts [parameters] and cache sizes are numbers of stored values
[values]; multiply by bytes per parameter or per value to get bytes.

What is counted, per decoder layer, follows the Hugging Face ``transformers`` implementations
(``LlamaForCausalLM``, ``MistralForCausalLM``, ``MixtralForCausalLM``, ``Qwen2ForCausalLM``,
``Qwen3MoeForCausalLM``, ``Gemma2ForCausalLM``, ``DeepseekV3ForCausalLM``, ...): attention
projections, the MLP or the experts and their router, and two norm weight vectors. Deliberately
not counted, because they are a few thousand parameters per layer (< 0.01 % of any model here):
the extra post-attention/post-MLP norms of Gemma 2/3, the per-head q/k norms of Qwen3/Gemma 3,
the ``o_proj`` bias of models whose ``attention_bias`` flag also biases the output projection,
and Qwen2-MoE's one-output shared-expert gate. Not counted either: multi-token-prediction heads
(DeepSeek-V3 ``num_nextn_predict_layers``) and vision towers of multimodal models (a models.yaml
entry gives those as ``encoder_parameters``, which ``import-hf`` counts).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

SLIDING = "S"
FULL = "F"


# Architecture description ---------------------------------------------------------------------


@dataclass(frozen=True)
class MoE:
    """A mixture-of-experts MLP that replaces the dense MLP in (most) layers.

    * ``experts``: routed experts per MoE layer (config: ``num_local_experts`` for Mixtral,
      ``num_experts`` for Qwen-MoE, ``n_routed_experts`` for DeepSeek).
    * ``experts_per_token``: routed experts each token goes through (``num_experts_per_tok``).
    * ``expert_intermediate_size``: width of one expert's gated MLP (``moe_intermediate_size``;
      Mixtral reuses ``intermediate_size``).
    * ``shared_experts``: experts every token goes through (``n_shared_experts`` for DeepSeek;
      1 for Qwen2-MoE, whose single shared expert has ``shared_expert_intermediate_size``).
    * ``shared_expert_intermediate_size``: width of one shared expert; defaults to
      ``expert_intermediate_size`` (DeepSeek's shared experts are as wide as routed ones).
    * ``dense_layers``: the first N layers keep a dense MLP of the architecture's
      ``intermediate_size`` (DeepSeek ``first_k_dense_replace``).
    * ``router_bias``: the router carries one bias per expert (DeepSeek-V3's
      ``e_score_correction_bias``, present when ``topk_method`` is ``noaux_tc``; gpt-oss's
      router is a linear layer with bias).
    * ``expert_bias``: every expert's projections carry biases (gpt-oss: ``gate_up_proj_bias``
      of 2 × width and ``down_proj_bias`` of hidden per expert).
    """

    experts: int
    experts_per_token: int
    expert_intermediate_size: int
    shared_experts: int = 0
    shared_expert_intermediate_size: int | None = None
    dense_layers: int = 0
    router_bias: bool = False
    expert_bias: bool = False

    def __post_init__(self) -> None:
        _require_positive(self, "experts", "experts_per_token", "expert_intermediate_size")
        _require_non_negative(self, "shared_experts", "dense_layers")
        if self.shared_expert_intermediate_size is not None:
            _require_positive(self, "shared_expert_intermediate_size")
        if self.experts_per_token > self.experts:
            raise ValueError(
                f"experts_per_token ({self.experts_per_token}) cannot exceed experts "
                f"({self.experts})"
            )

    @property
    def shared_width(self) -> int:
        """Intermediate width of one shared expert [values]."""
        if self.shared_expert_intermediate_size is None:
            return self.expert_intermediate_size
        return self.shared_expert_intermediate_size


@dataclass(frozen=True)
class MLA:
    """DeepSeek-V2/V3 multi-head latent attention (DeepSeek-V2 paper, arXiv:2405.04434, §2.1).

    Keys and values are compressed into a ``kv_lora_rank`` latent plus one shared
    ``qk_rope_head_dim`` rotary key, which is what the cache stores. Queries go through a
    ``q_lora_rank`` bottleneck when it is set (DeepSeek-V2/V3), else a full projection
    (DeepSeek-V2-Lite). Field names are the config.json keys.
    """

    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None = None

    def __post_init__(self) -> None:
        _require_positive(self, "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim")
        _require_positive(self, "v_head_dim")
        if self.q_lora_rank is not None:
            _require_positive(self, "q_lora_rank")

    @property
    def qk_head_dim(self) -> int:
        """Query/key width per head: non-rotary plus rotary part [values]."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim


@dataclass(frozen=True)
class SlidingWindow:
    """Which layers attend only to the last ``window`` tokens, and how wide that window is.

    ``pattern`` is a string of ``S`` (sliding-window layer) and ``F`` (full-attention layer),
    repeated from layer 0 to the last layer: layer ``i`` is ``pattern[i % len(pattern)]``.

    ========================  ==================  ============================================
    model                     pattern             config.json source
    ========================  ==================  ============================================
    Mistral 7B v0.1           ``S``               ``sliding_window`` set: every layer windowed
    Gemma 2                   ``SF``              alternating, layer 0 sliding (transformers
                                                  ``Gemma2DecoderLayer``)
    Gemma 3                   ``SSSSSF``          ``sliding_window_pattern: 6``: every 6th
                                                  layer full
    Qwen2, N full layers      ``F``×N + ``S``×M   ``use_sliding_window`` with
                                                  ``max_window_layers: N`` (explicit string,
                                                  one letter per layer)
    any ``layer_types`` list  shortest repeating  ``sliding_attention``→S, ``full_attention``→F
    ========================  ==================  ============================================

    The pattern may be at most as long as the model has layers; one letter per layer is always
    valid. :func:`compress_layer_pattern` turns a per-layer string into the shortest pattern.
    """

    window: int
    pattern: str = SLIDING

    def __post_init__(self) -> None:
        _require_positive(self, "window")
        if not self.pattern or set(self.pattern) - {SLIDING, FULL}:
            raise ValueError(
                f"sliding-window pattern must be a non-empty string of 'S' and 'F', "
                f"got {self.pattern!r}"
            )
        if SLIDING not in self.pattern:
            raise ValueError(
                f"sliding-window pattern {self.pattern!r} has no sliding layer; "
                "describe such a model without a sliding window"
            )

    def layer_kinds(self, layers: int) -> str:
        """One letter per layer, ``S`` or ``F``, for a model of ``layers`` layers."""
        repeats = -(-layers // len(self.pattern))
        return (self.pattern * repeats)[:layers]

    def sliding_layers(self, layers: int) -> int:
        """Number of sliding-window layers in a model of ``layers`` layers."""
        return self.layer_kinds(layers).count(SLIDING)


def compress_layer_pattern(kinds: str) -> str:
    """Shortest pattern that, repeated from layer 0, reproduces ``kinds`` (one letter per layer).

    ``"SFSFSF"`` → ``"SF"``; ``"FFSS"`` stays ``"FFSS"``. Pure string function, no units.
    """
    for length in range(1, len(kinds) + 1):
        unit = kinds[:length]
        repeats = -(-len(kinds) // length)
        if (unit * repeats)[: len(kinds)] == kinds:
            return unit
    return kinds


@dataclass(frozen=True)
class Architecture:
    """A decoder-only transformer, in the terms of its Hugging Face config.json.

    Sizes are counts of values (not bytes). ``head_dim`` is the per-head width of queries, keys
    and values under standard attention (config ``head_dim``, else ``hidden_size /
    num_attention_heads``); under MLA it is informational (``qk_nope + qk_rope``) and the
    :class:`MLA` block governs. ``intermediate_size`` is the dense MLP width, used by every layer
    without MoE and by the first ``moe.dense_layers`` layers with it. ``attention_bias`` adds
    biases to the q, k and v projections (Qwen2 always has them). ``attention_sinks`` adds one
    learned sink logit per query head per layer (gpt-oss). ``gated_mlp`` selects gate/up/down
    (SwiGLU/GeGLU, 3 matrices) over up/down (2 matrices).
    """

    layers: int
    hidden_size: int
    intermediate_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    vocab_size: int
    tied_embeddings: bool = False
    attention_bias: bool = False
    attention_sinks: bool = False
    gated_mlp: bool = True
    moe: MoE | None = None
    mla: MLA | None = None
    sliding_window: SlidingWindow | None = None

    def __post_init__(self) -> None:
        _require_positive(self, "layers", "hidden_size", "intermediate_size", "attention_heads")
        _require_positive(self, "kv_heads", "head_dim", "vocab_size")
        if self.attention_heads % self.kv_heads:
            raise ValueError(
                f"attention_heads ({self.attention_heads}) must be a multiple of kv_heads "
                f"({self.kv_heads})"
            )
        if self.moe is not None and self.moe.dense_layers > self.layers:
            raise ValueError(
                f"moe.dense_layers ({self.moe.dense_layers}) exceeds layers ({self.layers})"
            )
        if self.mla is not None and self.attention_bias:
            raise ValueError("attention_bias with MLA is not modelled")
        if self.sliding_window is not None and len(self.sliding_window.pattern) > self.layers:
            raise ValueError(
                f"sliding-window pattern {self.sliding_window.pattern!r} is longer than the "
                f"model's {self.layers} layers"
            )


def _require_positive(obj: object, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _require_non_negative(obj: object, *names: str) -> None:
    for name in names:
        value = getattr(obj, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}")


# Parameter counts -----------------------------------------------------------------------------

BREAKDOWN_KEYS = ("embeddings", "attention", "mlp", "experts", "norms", "lm_head")


@dataclass(frozen=True)
class ParameterCount:
    """Parameters of a model [parameters].

    ``total`` is every stored weight. ``active`` is what one token's forward pass uses: all
    non-expert weights, the router, ``experts_per_token`` routed experts and every shared expert
    (equal to ``total`` for dense models). Both include the input embedding table and the LM
    head, the convention of Mistral ("12.9B active" for Mixtral) and Qwen; DeepSeek's "activated"
    figures leave the input embedding out (``active - breakdown["embeddings"]``).

    ``breakdown`` and ``active_breakdown`` split the two over :data:`BREAKDOWN_KEYS`:
    ``embeddings`` (input table), ``attention`` (projections and their biases), ``mlp`` (dense
    MLP layers), ``experts`` (routed and shared experts plus routers), ``norms`` (per-layer and
    final norm weights, and MLA's latent norms) and ``lm_head`` (0 when tied).
    """

    total: int
    active: int
    breakdown: dict[str, int]
    active_breakdown: dict[str, int]

    @property
    def non_embedding(self) -> int:
        """Total minus input embeddings and LM head, as model cards quote it [parameters]."""
        return self.total - self.breakdown["embeddings"] - self.breakdown["lm_head"]


def embedding_parameters(arch: Architecture) -> int:
    """Input embedding table: vocab_size × hidden_size [parameters].

    Config fields ``vocab_size`` and ``hidden_size``; the table is ``model.embed_tokens``.
    """
    return arch.vocab_size * arch.hidden_size


def lm_head_parameters(arch: Architecture) -> int:
    """Output projection: vocab_size × hidden_size, or 0 when tied to the embeddings [parameters].

    Config field ``tie_word_embeddings``.
    """
    return 0 if arch.tied_embeddings else arch.vocab_size * arch.hidden_size


def gqa_attention_parameters(arch: Architecture) -> int:
    """One layer of grouped-query attention [parameters].

    q: hidden × heads·head_dim; k and v: hidden × kv_heads·head_dim each; o: heads·head_dim ×
    hidden; plus q/k/v biases (heads·head_dim + 2·kv_heads·head_dim) when ``attention_bias``,
    and one sink logit per head when ``attention_sinks``. Source: GQA (Ainslie et al. 2023,
    arXiv:2305.13245) as in transformers ``LlamaAttention``; Qwen2's biases per
    ``Qwen2Attention`` (``q_proj``/``k_proj``/``v_proj`` with ``bias=True``); gpt-oss's
    ``GptOssAttention.sinks`` (one parameter per attention head).
    """
    h = arch.hidden_size
    q_width = arch.attention_heads * arch.head_dim
    kv_width = arch.kv_heads * arch.head_dim
    weights = h * q_width + 2 * h * kv_width + q_width * h
    biases = q_width + 2 * kv_width if arch.attention_bias else 0
    sinks = arch.attention_heads if arch.attention_sinks else 0
    return weights + biases + sinks


def mla_attention_parameters(arch: Architecture, mla: MLA) -> int:
    """One layer of multi-head latent attention, projections only [parameters].

    With ``q_lora_rank`` r_q: q_a hidden × r_q and q_b r_q × heads·(nope+rope); without it one
    q_proj hidden × heads·(nope+rope). kv_a: hidden × (kv_lora_rank + rope); kv_b: kv_lora_rank ×
    heads·(nope + v); o: heads·v × hidden. The two latent norms are in
    :func:`norm_parameters`. Source: DeepSeek-V2 paper (arXiv:2405.04434) §2.1 and
    ``DeepseekV3Attention`` (``q_a_proj``, ``q_b_proj``, ``kv_a_proj_with_mqa``, ``kv_b_proj``,
    ``o_proj``).
    """
    h, heads = arch.hidden_size, arch.attention_heads
    q_out = heads * mla.qk_head_dim
    if mla.q_lora_rank is None:
        query = h * q_out
    else:
        query = h * mla.q_lora_rank + mla.q_lora_rank * q_out
    kv_a = h * (mla.kv_lora_rank + mla.qk_rope_head_dim)
    kv_b = mla.kv_lora_rank * heads * (mla.qk_nope_head_dim + mla.v_head_dim)
    out = heads * mla.v_head_dim * h
    return query + kv_a + kv_b + out


def attention_parameters(arch: Architecture) -> int:
    """One layer's attention projections, GQA or MLA as the architecture says [parameters]."""
    if arch.mla is not None:
        return mla_attention_parameters(arch, arch.mla)
    return gqa_attention_parameters(arch)


def mlp_parameters(hidden_size: int, intermediate_size: int, gated: bool = True) -> int:
    """One MLP (or one expert) [parameters].

    Gated (SwiGLU/GeGLU: gate, up, down): 3 × hidden × intermediate; plain (up, down):
    2 × hidden × intermediate; no biases. Source: Shazeer 2020 (arXiv:2002.05202), transformers
    ``LlamaMLP``.
    """
    return (3 if gated else 2) * hidden_size * intermediate_size


def router_parameters(arch: Architecture, moe: MoE) -> int:
    """One MoE layer's router: hidden × experts, plus one bias per expert if ``router_bias``.

    Source: Mixtral paper (arXiv:2401.04088) §2.1 gating ``W_g``; DeepSeek-V3
    ``e_score_correction_bias`` (arXiv:2412.19437 §2.1.2) [parameters].
    """
    return arch.hidden_size * moe.experts + (moe.experts if moe.router_bias else 0)


def expert_bias_parameters(arch: Architecture, moe: MoE, width: int) -> int:
    """Biases of one expert of ``width`` when ``expert_bias``: gated 2 × width (gate and up) +
    hidden (down), plain width + hidden; else 0 [parameters]. Source: transformers
    ``GptOssExperts`` (``gate_up_proj_bias``, ``down_proj_bias``)."""
    if not moe.expert_bias:
        return 0
    return (2 if arch.gated_mlp else 1) * width + arch.hidden_size


def moe_layer_parameters(arch: Architecture, moe: MoE) -> tuple[int, int]:
    """One MoE layer's (total, active) expert parameters, router included [parameters].

    Total: all routed experts + shared experts + router. Active: ``experts_per_token`` routed
    experts + all shared experts + router (every token is scored against every expert).
    """
    width = moe.expert_intermediate_size
    routed = mlp_parameters(arch.hidden_size, width, arch.gated_mlp)
    routed += expert_bias_parameters(arch, moe, width)
    shared_one = mlp_parameters(arch.hidden_size, moe.shared_width, arch.gated_mlp)
    shared = moe.shared_experts * (shared_one + expert_bias_parameters(arch, moe, moe.shared_width))
    router = router_parameters(arch, moe)
    return (
        moe.experts * routed + shared + router,
        moe.experts_per_token * routed + shared + router,
    )


def norm_parameters(arch: Architecture) -> int:
    """All norm weight vectors [parameters].

    Two per layer (before attention, before the MLP) of ``hidden_size`` each, the final norm
    (``hidden_size``), and under MLA the per-layer latent norms (``kv_a_layernorm`` of
    ``kv_lora_rank``, ``q_a_layernorm`` of ``q_lora_rank`` when set). RMSNorm has no bias.
    Source: transformers ``LlamaDecoderLayer`` / ``DeepseekV3Attention``.
    """
    per_layer = 2 * arch.hidden_size
    if arch.mla is not None:
        per_layer += arch.mla.kv_lora_rank + (arch.mla.q_lora_rank or 0)
    return arch.layers * per_layer + arch.hidden_size


def count_parameters(arch: Architecture) -> ParameterCount:
    """Total and per-token active parameters of ``arch``, with a breakdown [parameters].

    total = embeddings + layers × attention + dense-MLP layers × MLP + MoE layers × experts
    (all experts + shared + router) + norms + LM head (unless tied). Active replaces all experts
    by ``experts_per_token`` of them. See :class:`ParameterCount` for the conventions and the
    functions above for each component's formula and source.
    """
    dense_layers = arch.layers
    experts_total = experts_active = 0
    if arch.moe is not None:
        dense_layers = arch.moe.dense_layers
        per_layer_total, per_layer_active = moe_layer_parameters(arch, arch.moe)
        moe_layers = arch.layers - arch.moe.dense_layers
        experts_total = moe_layers * per_layer_total
        experts_active = moe_layers * per_layer_active

    dense_mlp = mlp_parameters(arch.hidden_size, arch.intermediate_size, arch.gated_mlp)
    shared = {
        "embeddings": embedding_parameters(arch),
        "attention": arch.layers * attention_parameters(arch),
        "mlp": dense_layers * dense_mlp,
        "norms": norm_parameters(arch),
        "lm_head": lm_head_parameters(arch),
    }
    breakdown = {key: shared.get(key, 0) for key in BREAKDOWN_KEYS} | {"experts": experts_total}
    active = {key: shared.get(key, 0) for key in BREAKDOWN_KEYS} | {"experts": experts_active}
    return ParameterCount(
        total=sum(breakdown.values()),
        active=sum(active.values()),
        breakdown=breakdown,
        active_breakdown=active,
    )


# KV cache -------------------------------------------------------------------------------------


def kv_values_per_token_per_layer(arch: Architecture) -> int:
    """Values one layer caches for one token [values].

    Full attention: 2 (key and value) × kv_heads × head_dim (Pope et al. 2022; GQA,
    arXiv:2305.13245).
    MLA: kv_lora_rank + qk_rope_head_dim: the compressed latent and the shared rotary key, with no
    factor 2 and no per-head factor (DeepSeek-V2 paper, arXiv:2405.04434, Table 1:
    (d_c + d_h^R) per layer).
    """
    if arch.mla is not None:
        return arch.mla.kv_lora_rank + arch.mla.qk_rope_head_dim
    return 2 * arch.kv_heads * arch.head_dim


def kv_cache_values_per_token(arch: Architecture) -> float:
    """Values cached per token summed over all layers, as if every layer kept every token [values].

    Full attention: 2 × layers × kv_heads × head_dim. MLA: layers × (kv_lora_rank +
    qk_rope_head_dim). Sliding windows are ignored here, so for windowed models this is exact
    only while the context is within the window and an upper bound beyond it; use
    :func:`kv_cache_split` / :func:`kv_cache_values` for those. Multiply by bytes per value.
    """
    return float(arch.layers * kv_values_per_token_per_layer(arch))


class KVCacheSplit(NamedTuple):
    """Per-token cache values on full-attention and on sliding-window layers [values], and the
    window [tokens]: cache(tokens) = full × tokens + windowed × min(window, tokens)."""

    full_values_per_token: float
    windowed_values_per_token: float
    window: int


def kv_cache_split(arch: Architecture) -> KVCacheSplit:
    """Split the per-token cache between full-attention and sliding-window layers.

    Returns ``(full values per token, windowed values per token, window)``: a sequence of T
    tokens holds ``full × T + windowed × min(window, T)`` values. A model without a sliding
    window returns ``(kv_cache_values_per_token(arch), 0.0, 0)``. Source: Mistral 7B paper
    (arXiv:2310.06825) §2 rolling buffer cache; Gemma 2 (arXiv:2408.00118) and Gemma 3
    (arXiv:2503.19786) interleaved local/global layers.
    """
    per_layer = kv_values_per_token_per_layer(arch)
    if arch.sliding_window is None:
        return KVCacheSplit(float(arch.layers * per_layer), 0.0, 0)
    sliding = arch.sliding_window.sliding_layers(arch.layers)
    return KVCacheSplit(
        float((arch.layers - sliding) * per_layer),
        float(sliding * per_layer),
        arch.sliding_window.window,
    )


def kv_cache_values(arch: Architecture, tokens: float) -> float:
    """Values cached for one sequence of ``tokens`` tokens, windows applied [values].

    ``full × tokens + windowed × min(window, tokens)`` from :func:`kv_cache_split`.
    """
    if tokens < 0:
        raise ValueError(f"tokens must be zero or more, got {tokens!r}")
    full, windowed, window = kv_cache_split(arch)
    return full * tokens + windowed * min(window, tokens)
