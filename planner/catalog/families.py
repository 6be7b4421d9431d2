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


def _family(*architectures: str, **kwargs: Any) -> Family:
    return Family(architectures=frozenset(architectures), **kwargs)


#: Supported ``model_type`` values. Defaults are from transformers' ``configuration_<type>.py``
#: class signatures (``LlamaConfig(tie_word_embeddings=False, ...)`` and so on).
FAMILIES: dict[str, Family] = {
    "llama": _family("LlamaForCausalLM", defaults={"tie_word_embeddings": False}),
    "mistral": _family(
        "MistralForCausalLM", defaults={"tie_word_embeddings": False}, sliding="all"
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
WRAPPERS: dict[str, str] = {"gemma3": "gemma3_text"}

#: Keys a config.json must carry (or its family must default) for any supported model.
