"""Import a Hugging Face ``config.json`` as an :class:`~planner.model.architecture.Architecture`.

Only model families whose parameter layout this project models are accepted (see
:data:`FAMILIES`); anything else, or a config that lacks a required field or uses an option that
changes the layout in a way not modelled (``mlp_bias``, MoE on only some layers, non-attention
layer types...), raises :class:`UnsupportedConfig` listing every such problem at once. Nothing is
guessed: a field the config omits is filled only with the default of the ``transformers``
configuration class for that ``model_type`` (the value the model would be built with), and those
defaults are listed in :data:`FAMILIES`.

Field mapping (config.json → :class:`Architecture`):

=====================================  ===========================================================
``num_hidden_layers``                  ``layers``
``hidden_size``                        ``hidden_size``
``intermediate_size``                  ``intermediate_size``
``num_attention_heads``                ``attention_heads``
``num_key_value_heads``                ``kv_heads`` (absent: = attention heads, i.e. MHA)
``head_dim``                           ``head_dim`` (absent/null: hidden_size / heads; MLA:
                                       qk_nope_head_dim + qk_rope_head_dim)
``vocab_size``                         ``vocab_size``
``tie_word_embeddings``                ``tied_embeddings``
``attention_bias``                     ``attention_bias`` (Qwen2/Qwen2-MoE: always true, the
                                       architecture has q/k/v biases and no flag)
MoE keys                               ``moe``: :func:`moe_from_hf_config`
MLA keys                               ``mla``: :func:`mla_from_hf_config`
sliding-window keys                    ``sliding_window``: :func:`sliding_window_from_hf_config`
=====================================  ===========================================================

Multimodal configs (Gemma 3 4B-27B ``gemma3``, Mistral Small 3.1/3.2 ``mistral3``, Llama 4
``llama4``, Qwen2.5-VL ``qwen2_5_vl``) nest the language model under ``text_config`` (Qwen2.5-VL
before transformers 4.53 keeps it at the top level); that decoder becomes the
:class:`Architecture`, and the vision tower and its projector are counted apart
(:func:`vision_parameters_from_hf_config`: 0.42B for Gemma 3 27B, 0.44B for Mistral Small 3.1,
0.68B for Qwen2.5-VL 7B, 0.87B for Llama 4 Scout) into the entry's ``encoder_parameters``:
loaded with the weights, never run per generated token.
"""

from __future__ import annotations

from planner.catalog.families import FAMILIES
from planner.catalog.hf_architecture import (
    architecture_from_hf_config,
    mla_from_hf_config,
    moe_from_hf_config,
    sliding_window_from_hf_config,
)
from planner.catalog.hf_config import (
    LAYER_KEYS,
    MAX_DIGITS,
    MAX_LAYERS,
    REQUIRED,
    UnsupportedConfig,
    load_hf_config,
)
from planner.catalog.hf_entry import (
    ENTRY_KEYS,
    QUANTISED_AS,
    AppendRefused,
    InvalidEntry,
    append_model_entry,
    architecture_from_entry,
    entry_to_yaml,
    model_entry_from_hf_config,
    quantisation_note,
)
from planner.catalog.hf_vision import vision_parameters_from_hf_config, vit_parameters

#: The importer's public names, each defined in the module for its step: reading the config
#: (:mod:`~planner.catalog.hf_config`), the decoder's architecture
#: (:mod:`~planner.catalog.hf_architecture`), the vision tower
#: (:mod:`~planner.catalog.hf_vision`) and the models.yaml entry
#: (:mod:`~planner.catalog.hf_entry`).
__all__ = [
    "ENTRY_KEYS",
    "FAMILIES",
    "LAYER_KEYS",
    "MAX_DIGITS",
    "MAX_LAYERS",
    "QUANTISED_AS",
    "REQUIRED",
    "AppendRefused",
    "InvalidEntry",
    "UnsupportedConfig",
    "append_model_entry",
    "architecture_from_entry",
    "architecture_from_hf_config",
    "entry_to_yaml",
    "load_hf_config",
    "mla_from_hf_config",
    "model_entry_from_hf_config",
    "moe_from_hf_config",
    "quantisation_note",
    "sliding_window_from_hf_config",
    "vision_parameters_from_hf_config",
    "vit_parameters",
]
