"""The model families the Hugging Face importer (:mod:`planner.catalog.hf`) accepts: for each
``model_type``, the architecture classes, the configuration defaults and which readers apply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Family:
    """What this importer knows about one ``model_type``.

    ``architectures``: the ``architectures`` classes accepted (causal LM heads, and multimodal
    wrappers whose text decoder is this model type). ``defaults``: the transformers
    configuration-class defaults used when config.json omits a key. ``qkv_bias``: q/k/v biases
    are part of the architecture regardless of any flag. ``moe`` / ``mla``: which MoE / MLA
    reader applies. ``sliding``: how the sliding-window layers are described. ``sinks``: every
    attention layer learns one sink logit per head.
    """

    architectures: frozenset[str]
    defaults: Mapping[str, Any] = field(default_factory=dict)
    qkv_bias: bool = False
    moe: str | None = None
    mla: bool = False
    sliding: str | None = None
    sinks: bool = False
    dense_width: str = "intermediate_size"


def _family(*architectures: str, **kwargs: Any) -> Family:
    return Family(architectures=frozenset(architectures), **kwargs)


#: Supported ``model_type`` values. Defaults are from transformers' ``configuration_<type>.py``
#: class signatures (``LlamaConfig(tie_word_embeddings=False, ...)`` and so on).
FAMILIES: dict[str, Family] = {
    "llama": _family("LlamaForCausalLM", defaults={"tie_word_embeddings": False}),
    "mistral": _family(
        "MistralForCausalLM",
        "Mistral3ForConditionalGeneration",  # Mistral Small 3.1/3.2: a Pixtral tower + Mistral
        defaults={"tie_word_embeddings": False},
        sliding="all",
    ),
    "mixtral": _family(
        "MixtralForCausalLM", defaults={"tie_word_embeddings": False}, moe="mixtral", sliding="all"
    ),
    "qwen2": _family(
        "Qwen2ForCausalLM",
        defaults={"tie_word_embeddings": False},
        qkv_bias=True,
        sliding="qwen2",
    ),
    # Qwen2.5-VL: configs up to transformers 4.52 keep the text fields at the top level under the
    # outer model_type; later ones nest them in text_config as qwen2_5_vl_text.
    "qwen2_5_vl": _family(
        "Qwen2_5_VLForConditionalGeneration",
        defaults={"tie_word_embeddings": False},
        qkv_bias=True,
        sliding="qwen2",
    ),
    "qwen2_5_vl_text": _family(
        "Qwen2_5_VLForConditionalGeneration",
        defaults={"tie_word_embeddings": False},
        qkv_bias=True,
        sliding="qwen2",
    ),
    "qwen2_moe": _family(
        "Qwen2MoeForCausalLM",
        defaults={"tie_word_embeddings": False},
        qkv_bias=True,
        moe="qwen",
        sliding="qwen2",
    ),
    "qwen3": _family("Qwen3ForCausalLM", defaults={"tie_word_embeddings": False}, sliding="qwen2"),
    "qwen3_moe": _family(
        "Qwen3MoeForCausalLM", defaults={"tie_word_embeddings": False}, moe="qwen", sliding="qwen2"
    ),
    "gemma2": _family(
        "Gemma2ForCausalLM", defaults={"tie_word_embeddings": True}, sliding="gemma2"
    ),
    "gemma3_text": _family(
        "Gemma3ForCausalLM",
        "Gemma3ForConditionalGeneration",
        defaults={"tie_word_embeddings": True, "vocab_size": 262_208, "sliding_window_pattern": 6},
        sliding="gemma3",
    ),
    # transformers GptOssConfig: attention_bias defaults to true; layer_types, when absent,
    # alternate from a sliding layer, as Gemma 2's do.
    "gpt_oss": _family(
        "GptOssForCausalLM",
        defaults={"tie_word_embeddings": False, "attention_bias": True},
        moe="gpt_oss",
        sliding="gemma2",
        sinks=True,
    ),
    # transformers Llama4TextConfig: every layer MoE (interleave_moe_layer_step 1) with one shared
    # expert; a NoPE full-attention layer every no_rope_layer_interval (4) layers, the others
    # attend within chunks of attention_chunk_size (8192) tokens.
    "llama4_text": _family(
        "Llama4ForCausalLM",
        "Llama4ForConditionalGeneration",
        defaults={
            "tie_word_embeddings": False,
            "interleave_moe_layer_step": 1,
            "no_rope_layer_interval": 4,
            "attention_chunk_size": 8192,
        },
        moe="llama4",
        sliding="llama4",
        dense_width="intermediate_size_mlp",
    ),
    "deepseek_v2": _family(
        "DeepseekV2ForCausalLM",
        defaults={"tie_word_embeddings": False, "topk_method": "greedy"},
        moe="deepseek",
        mla=True,
    ),
    "deepseek_v3": _family(
        "DeepseekV3ForCausalLM",
        defaults={"tie_word_embeddings": False, "topk_method": "noaux_tc"},
        moe="deepseek",
        mla=True,
    ),
}

#: Multimodal wrappers: outer ``model_type`` → the text decoder's ``model_type`` in
#: ``text_config`` (used when ``text_config`` does not name its own).
WRAPPERS: dict[str, str] = {
    "gemma3": "gemma3_text",
    "mistral3": "mistral",
    "llama4": "llama4_text",
    "qwen2_5_vl": "qwen2_5_vl_text",
}

#: Vision towers: outer ``model_type`` → the reader of its ``vision_config`` (and projector).
VISION: dict[str, str] = {
    "gemma3": "siglip",
    "mistral3": "pixtral",
    "llama4": "llama4",
    "qwen2_5_vl": "qwen2_5_vl",
}

#: transformers configuration defaults of each vision tower's ``vision_config`` (and of the
#: wrapper keys its projector reads), used when config.json omits a key.
VISION_DEFAULTS: dict[str, Mapping[str, Any]] = {
    # SiglipVisionConfig, Gemma3Config
    "siglip": {"num_channels": 3, "vision_use_head": True},
    # PixtralVisionConfig, Mistral3Config
    "pixtral": {
        "num_channels": 3,
        "spatial_merge_size": 2,
        "multimodal_projector_bias": False,
        "vision_feature_layer": -1,
    },
    # Llama4VisionConfig
    "llama4": {"num_channels": 3},
    # Qwen2_5_VLVisionConfig
    "qwen2_5_vl": {"in_channels": 3, "temporal_patch_size": 2, "spatial_merge_size": 2},
}

#: Keys a config.json must carry (or its family must default) for any supported model.
