"""The decoder :class:`~planner.model.architecture.Architecture` a Hugging Face ``config.json``
describes, and its blocks: mixture of experts, multi-head latent attention and the layers'
sliding windows (the field mapping is in :mod:`planner.catalog.hf`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from planner.catalog.hf_config import (
    ConfigReader,
    UnsupportedConfig,
    build_block,
    check_family,
    known_family,
    text_section,
)
from planner.model.architecture import (
    FULL,
    MLA,
    SLIDING,
    Architecture,
    MoE,
    SlidingWindow,
    compress_layer_pattern,
)


def moe_from_hf_config(cfg: Mapping[str, Any], model_type: str) -> MoE | None:
    """The MoE block of a config section, or None for a dense model.

    * Mixtral: ``num_local_experts``, ``num_experts_per_tok``; experts are ``intermediate_size``
      wide (transformers ``MixtralBlockSparseTop2MLP``).
    * gpt-oss: the same keys; the router and every expert's projections carry biases
      (transformers ``GptOssTopKRouter``, ``GptOssExperts``).
    * Qwen2-MoE / Qwen3-MoE: ``num_experts``, ``num_experts_per_tok``, ``moe_intermediate_size``;
      Qwen2-MoE adds one shared expert of ``shared_expert_intermediate_size``. Requires
      ``decoder_sparse_step`` 1 and empty ``mlp_only_layers`` (MoE in every layer).
    * DeepSeek-V2/V3: ``n_routed_experts``, ``num_experts_per_tok``, ``moe_intermediate_size``,
      ``n_shared_experts``, ``first_k_dense_replace`` (leading dense layers); router bias when
      ``topk_method`` is ``noaux_tc``. Requires ``moe_layer_freq`` 1.

    Raises :class:`UnsupportedConfig` for missing or unmodelled settings.
    """
    family = known_family(model_type)
    reader = ConfigReader(cfg, family.defaults, "")
    moe = _moe(reader, family.moe)
    if reader.problems:
        raise UnsupportedConfig(reader.problems)
    return moe


def _moe(r: ConfigReader, kind: str | None) -> MoE | None:
    if kind is None:
        return None
    if kind in ("mixtral", "gpt_oss"):
        experts, per_token = r.integer("num_local_experts"), r.integer("num_experts_per_tok")
        width = r.integer("intermediate_size")
        if None in (experts, per_token, width):
            return None
        biased = kind == "gpt_oss"
        return build_block(
            r,
            MoE,
            experts=experts,
            experts_per_token=per_token,
            expert_intermediate_size=width,
            router_bias=biased,
            expert_bias=biased,
        )
    if kind == "llama4":
        return _llama4_moe(r)
    if kind == "qwen":
        step = r.raw("decoder_sparse_step")
        if step not in (None, 1):
            r.problems.append(f"`decoder_sparse_step` {step!r} (MoE on every Nth layer only)")
        if r.raw("mlp_only_layers"):
            r.problems.append(
                f"`mlp_only_layers` {r.raw('mlp_only_layers')!r} (dense layers "
                "interleaved with MoE layers)"
            )
        experts, per_token = r.integer("num_experts"), r.integer("num_experts_per_tok")
        width = r.integer("moe_intermediate_size")
        shared_width = r.integer("shared_expert_intermediate_size", minimum=0, optional=True)
        if None in (experts, per_token, width):
            return None
        return build_block(
            r,
            MoE,
            experts=experts,
            experts_per_token=per_token,
            expert_intermediate_size=width,
            shared_experts=1 if shared_width else 0,
            shared_expert_intermediate_size=shared_width or None,
        )
    # DeepSeek
    freq = r.raw("moe_layer_freq")
    if freq not in (None, 1):
        r.problems.append(f"`moe_layer_freq` {freq!r} (MoE on every Nth layer only)")
    experts, per_token = r.integer("n_routed_experts"), r.integer("num_experts_per_tok")
    width = r.integer("moe_intermediate_size")
    shared = r.integer("n_shared_experts", minimum=0, optional=True) or 0
    dense = r.integer("first_k_dense_replace", minimum=0, optional=True) or 0
    if None in (experts, per_token, width):
        return None
    return build_block(
        r,
        MoE,
        experts=experts,
        experts_per_token=per_token,
        expert_intermediate_size=width,
        shared_experts=shared,
        dense_layers=dense,
        router_bias=r.raw("topk_method") == "noaux_tc",
    )


def _llama4_moe(r: ConfigReader) -> MoE | None:
    """Llama 4: ``num_local_experts`` routed experts and one shared expert, all
    ``intermediate_size`` wide (transformers ``Llama4TextMoe``), on the layers ``moe_layers``
    lists (default: every ``interleave_moe_layer_step``-th). Only MoE on every layer after a
    leading run of dense ones is modelled."""
    layers = r.integer("num_hidden_layers")
    step = r.integer("interleave_moe_layer_step")
    experts, per_token = r.integer("num_local_experts"), r.integer("num_experts_per_tok")
    width = r.integer("intermediate_size")
    if None in (layers, step, experts, per_token, width):
        return None
    assert layers is not None and step is not None
    moe_layers = r.raw("moe_layers")
    if moe_layers is None:
        moe_layers = list(range(step - 1, layers, step))
    dense = layers - len(moe_layers) if isinstance(moe_layers, list) else -1
    if dense < 0 or moe_layers != list(range(dense, layers)):
        r.problems.append(
            f"MoE on only some layers (`interleave_moe_layer_step` {step}, `moe_layers` "
            f"{r.raw('moe_layers')!r}): dense layers interleaved with MoE layers"
        )
        return None
    return build_block(
        r,
        MoE,
        experts=experts,
        experts_per_token=per_token,
        expert_intermediate_size=width,
        shared_experts=1,
        dense_layers=dense,
    )


def mla_from_hf_config(cfg: Mapping[str, Any]) -> MLA:
    """The MLA block of a DeepSeek-V2/V3 config section.

    Keys ``kv_lora_rank``, ``qk_rope_head_dim``, ``qk_nope_head_dim``, ``v_head_dim`` (required)
    and ``q_lora_rank`` (null or absent: full query projection, as in DeepSeek-V2-Lite).
    """
    reader = ConfigReader(cfg, {}, "")
    mla = _mla(reader)
    if reader.problems or mla is None:
        raise UnsupportedConfig(reader.problems)
    return mla


def _mla(r: ConfigReader) -> MLA | None:
    values = {
        k: r.integer(k)
        for k in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
    }
    q_lora = r.integer("q_lora_rank", optional=True)
    if None in values.values():
        return None
    return build_block(r, MLA, q_lora_rank=q_lora, **values)


def sliding_window_from_hf_config(
    cfg: Mapping[str, Any], model_type: str, layers: int
) -> SlidingWindow | None:
    """The sliding-window layout of a config section, or None when every layer is full.

    ``layer_types`` (newer transformers) wins when present: ``sliding_attention`` → S,
    ``full_attention`` → F, anything else is unsupported. Otherwise, by family:

    * Mistral/Mixtral: a non-null ``sliding_window`` windows every layer (pattern ``S``).
    * Qwen2/Qwen3 (and MoE): only with ``use_sliding_window`` true; layers from
      ``max_window_layers`` on are windowed (transformers ``Qwen2Attention``).
    * Gemma 2: ``sliding_window``, layers alternate starting with a windowed one (``SF``).
    * Gemma 3: ``sliding_window`` and ``sliding_window_pattern`` (or ``_sliding_window_pattern``)
      N: every Nth layer full.
    * Llama 4: layers with RoPE (``no_rope_layers`` 1; default: all but every
      ``no_rope_layer_interval``-th) attend within chunks of ``attention_chunk_size`` tokens and
      are described as windowed with that window (a chunked layer never holds more than one
      chunk: the window is an upper bound, reached at each chunk's end); the NoPE layers are
      full. ``layer_types`` may say ``chunked_attention`` for the same.

    ``layers`` is the model's layer count; the window is ``sliding_window`` [tokens].
    """
    family = known_family(model_type)
    reader = ConfigReader(cfg, family.defaults, "")
    window = _sliding(reader, family.sliding, layers)
    if reader.problems:
        raise UnsupportedConfig(reader.problems)
    return window


def _sliding(r: ConfigReader, kind: str | None, layers: int) -> SlidingWindow | None:
    kinds = _layer_kinds(r, kind, layers)
    if kinds is None or SLIDING not in kinds:
        return None
    window = r.integer("attention_chunk_size" if kind == "llama4" else "sliding_window")
    if window is None:
        return None
    return build_block(r, SlidingWindow, window=window, pattern=compress_layer_pattern(kinds))


def _layer_kinds(r: ConfigReader, kind: str | None, layers: int) -> str | None:
    """Each layer's kind, S (windowed) or F (full), one letter per layer: from ``layer_types``
    where the config lists them, else by the family's rule; None when the config sets no
    window, or a field is at fault (the reader holds the problem)."""
    if r.raw("layer_types") is not None:
        return _listed_kinds(r, kind, layers)
    by_family = _FAMILY_KINDS.get(kind or "")
    return None if by_family is None else by_family(r, layers)


def _listed_kinds(r: ConfigReader, kind: str | None, layers: int) -> str | None:
    """``layer_types``: ``sliding_attention`` (Llama 4: ``chunked_attention`` too) → S,
    ``full_attention`` → F."""
    types = r.raw("layer_types")
    letters = {"sliding_attention": SLIDING, "full_attention": FULL}
    if kind == "llama4":
        letters["chunked_attention"] = SLIDING
    if not isinstance(types, list) or len(types) != layers:
        got = f"{len(types)} entries" if isinstance(types, list) else repr(types)
        r.problems.append(f"`layer_types` must list one type per layer ({layers}), got {got}")
        return None
    unknown = sorted({t for t in types if t not in letters}, key=str)
    if unknown:
        r.problems.append(f"`layer_types` has unsupported layer types {unknown}")
        return None
    return "".join(letters[t] for t in types)


def _every_layer_kinds(r: ConfigReader, layers: int) -> str | None:
    """Mistral/Mixtral: a non-null ``sliding_window`` windows every layer."""
    return SLIDING * layers if r.raw("sliding_window") is not None else None


def _qwen2_kinds(r: ConfigReader, layers: int) -> str | None:
    """Qwen2/Qwen3: with ``use_sliding_window``, layers from ``max_window_layers`` on."""
    if not r.flag("use_sliding_window", default=False) or r.raw("sliding_window") is None:
        return None
    full = r.integer("max_window_layers", minimum=0)
    return None if full is None else FULL * min(full, layers) + SLIDING * (layers - full)


def _gemma2_kinds(r: ConfigReader, layers: int) -> str | None:
    """Gemma 2: windowed and full layers alternate, starting with a windowed one."""
    return _tile(SLIDING + FULL, layers)


def _gemma3_kinds(r: ConfigReader, layers: int) -> str | None:
    """Gemma 3: every ``sliding_window_pattern``-th layer full."""
    # transformers >= 4.53 writes the pattern as `_sliding_window_pattern`.
    key = "sliding_window_pattern"
    if r.cfg.get(key) is None and r.cfg.get("_" + key) is not None:
        key = "_" + key
    every = r.integer(key)
    return None if every is None else _tile(SLIDING * (every - 1) + FULL, layers)


def _llama4_kinds(r: ConfigReader, layers: int) -> str | None:
    """Llama 4: the layers with RoPE chunked (as windowed), the NoPE layers full."""
    if "attention_chunk_size" in r.cfg and r.cfg["attention_chunk_size"] is None:
        return None  # chunking switched off: every layer full
    rope = r.raw("no_rope_layers")
    if not rope:  # absent or empty: transformers builds the default list
        every = r.integer("no_rope_layer_interval")
        return None if every is None else _tile(SLIDING * (every - 1) + FULL, layers)
    if not isinstance(rope, list) or len(rope) < layers or set(rope[:layers]) - {0, 1}:
        r.problems.append(f"`no_rope_layers` must give 0 or 1 for each of {layers} layers")
        return None
    return "".join(SLIDING if flag else FULL for flag in rope[:layers])


#: Each family's rule for its layers' kinds, by the family's ``sliding`` (families.py).
_FAMILY_KINDS: dict[str, Callable[[ConfigReader, int], str | None]] = {
    "all": _every_layer_kinds,
    "qwen2": _qwen2_kinds,
    "gemma2": _gemma2_kinds,
    "gemma3": _gemma3_kinds,
    "llama4": _llama4_kinds,
}


def _tile(pattern: str, layers: int) -> str:
    """``pattern`` repeated from layer 0 and cut to ``layers`` letters (one per layer)."""
    return (pattern * (-(-layers // len(pattern))))[:layers]


def architecture_from_hf_config(cfg: Mapping[str, Any]) -> Architecture:
    """The :class:`Architecture` described by a Hugging Face config.json (parsed to a dict).

    See the module docstring for the field mapping. Raises :class:`UnsupportedConfig` listing
    every problem: unknown ``model_type`` or ``architectures``, missing required fields, values
    of the wrong type, and settings that change the parameter layout in ways not modelled.
    """
    if not isinstance(cfg, Mapping):
        raise UnsupportedConfig([f"config must be a JSON object, got {type(cfg).__name__}"])
    section, model_type, where, problems = text_section(cfg)
    family, family_problems = check_family(cfg, model_type)
    problems += family_problems
    if family is None:
        raise UnsupportedConfig(problems)

    # A multimodal wrapper may carry tie_word_embeddings at the top level; text_config wins.
    merged = dict(section)
    if where and merged.get("tie_word_embeddings") is None and "tie_word_embeddings" in cfg:
        merged["tie_word_embeddings"] = cfg["tie_word_embeddings"]
    r = ConfigReader(merged, family.defaults, where)
    layers = r.integer("num_hidden_layers")
    hidden = r.integer("hidden_size")
    intermediate = r.integer(family.dense_width)
    heads = r.integer("num_attention_heads")
    vocab = r.integer("vocab_size")
    kv_heads = r.integer("num_key_value_heads", optional=True) or heads
    tied = r.flag("tie_word_embeddings")
    bias = True if family.qkv_bias else r.flag("attention_bias", default=False)
    if r.raw("mlp_bias"):
        r.problems.append("`mlp_bias` true (MLP biases are not modelled)")

    mla = _mla(r) if family.mla else None
    head_dim = _head_dim(r, hidden, heads, mla)
    moe = _moe(r, family.moe)
    window = _sliding(r, family.sliding, layers) if layers else None

    problems += r.problems
    if problems:
        problems = list(dict.fromkeys(problems))
        raise UnsupportedConfig(problems)
    # The reader reports every value it cannot supply, so with no problems none of them is None.
    assert layers is not None and hidden is not None and intermediate is not None
    assert heads is not None and kv_heads is not None and head_dim is not None
    assert vocab is not None and tied is not None and bias is not None
    try:
        return Architecture(
            layers=layers, hidden_size=hidden, intermediate_size=intermediate,
            attention_heads=heads, kv_heads=kv_heads, head_dim=head_dim, vocab_size=vocab,
            tied_embeddings=tied, attention_bias=bias, attention_sinks=family.sinks,
            gated_mlp=True,
            moe=moe, mla=mla, sliding_window=window,
        )  # fmt: skip
    except ValueError as error:
        raise UnsupportedConfig([str(error)]) from error


def _head_dim(
    r: ConfigReader, hidden: int | None, heads: int | None, mla: MLA | None
) -> int | None:
    if mla is not None:
        return mla.qk_head_dim
    explicit = r.integer("head_dim", optional=True)
    if explicit is not None or r.cfg.get("head_dim") is not None:
        return explicit
    if hidden is None or heads is None:
        return None
    if hidden % heads:
        r.problems.append(
            f"no `head_dim`, and hidden_size {hidden} is not a multiple of "
            f"num_attention_heads {heads}"
        )
        return None
    return hidden // heads
