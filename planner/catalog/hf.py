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

import json
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from planner.catalog.families import FAMILIES, VISION, VISION_DEFAULTS, WRAPPERS, Family
from planner.catalog.problems import shown
from planner.catalog.records import MAX_COUNT, Model
from planner.catalog.safefile import FileProblem, read_text
from planner.catalog.validation import validation_message
from planner.model.architecture import (
    FULL,
    MLA,
    SLIDING,
    Architecture,
    MoE,
    SlidingWindow,
    compress_layer_pattern,
)


class UnsupportedConfig(ValueError):
    """A config.json this importer cannot turn into an Architecture without guessing.

    ``problems`` lists each thing not understood; the message joins them.
    """

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("unsupported Hugging Face config: " + "; ".join(self.problems))


class InvalidEntry(UnsupportedConfig):
    """A config.json whose entry the catalog would refuse (a count past the catalog's bound, an
    id it does not allow...); ``problems`` names each config key or option at fault."""

    def __init__(self, problems: list[str]):
        super().__init__(problems)
        self.args = ("the models.yaml entry would be refused: " + "; ".join(self.problems),)


REQUIRED = ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads")

#: Most layers a config may give: the importer spells out each layer's kind (windowed or
#: full), and the largest published models have under 200 layers.
MAX_LAYERS = 100_000

#: The config keys that count layers (a decoder's, a vision tower's).
LAYER_KEYS = frozenset({"num_hidden_layers", "depth"})

#: Longest run of digits a config.json number may have: every count a config gives fits in 18.
MAX_DIGITS = 30

_HF_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


# Reading helpers ------------------------------------------------------------------------------


@dataclass
class _Reader:
    """A config section plus its family defaults, collecting problems instead of raising."""

    cfg: Mapping[str, Any]
    defaults: Mapping[str, Any]
    where: str
    problems: list[str] = field(default_factory=list)

    def raw(self, key: str) -> Any:
        value = self.cfg.get(key)
        return self.defaults.get(key) if value is None else value

    def integer(self, key: str, *, minimum: int = 1, optional: bool = False) -> int | None:
        value = self.raw(key)
        if value is None:
            if not optional:
                self.problems.append(f"missing required field {self._name(key)}")
            return None
        limit = MAX_LAYERS if key in LAYER_KEYS else MAX_COUNT
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= limit:
            self.problems.append(
                f"field {self._name(key)} must be a whole number from {minimum} to {limit:,}, "
                f"got {shown(value)}"
            )
            return None
        return value

    def flag(self, key: str, default: bool | None = None) -> bool | None:
        value = self.raw(key)
        if value is None:
            if default is None:
                self.problems.append(f"missing required field {self._name(key)}")
            return default
        if not isinstance(value, bool):
            self.problems.append(f"field {self._name(key)} must be true or false, got {value!r}")
            return default
        return value

    def _name(self, key: str) -> str:
        return f"`{self.where}{key}`"


def _text_section(cfg: Mapping[str, Any]) -> tuple[Mapping[str, Any], str, str, list[str]]:
    """(text-decoder section, its model_type, key prefix for messages, problems)."""
    problems: list[str] = []
    outer_type = cfg.get("model_type")
    if outer_type is not None and not isinstance(outer_type, str):
        return cfg, "", "", [f"`model_type` must be text, got {shown(outer_type)}"]
    if "text_config" in cfg:
        text = cfg["text_config"]
        if not isinstance(text, Mapping):
            return cfg, str(outer_type), "", ["`text_config` is not a mapping"]
        inner_type = text.get("model_type") or WRAPPERS.get(str(outer_type))
        if outer_type not in WRAPPERS:
            problems.append(
                f"multimodal wrapper model_type {outer_type!r} is not supported "
                f"(known: {', '.join(sorted(WRAPPERS))})"
            )
        return text, str(inner_type), "text_config.", problems
    if outer_type is None:
        problems.append("missing `model_type`")
    return cfg, str(outer_type), "", problems


def _known_family(model_type: str) -> Family:
    family = FAMILIES.get(model_type)
    if family is None:
        raise UnsupportedConfig(
            [f"model_type {model_type!r} is not supported (known: {', '.join(sorted(FAMILIES))})"]
        )
    return family


def _check_family(cfg: Mapping[str, Any], model_type: str) -> tuple[Family | None, list[str]]:
    family = FAMILIES.get(model_type)
    if family is None:
        return None, [
            f"model_type {model_type!r} is not supported (known: {', '.join(sorted(FAMILIES))})"
        ]
    problems = []
    architectures = cfg.get("architectures") or []
    if not isinstance(architectures, list) or not all(isinstance(a, str) for a in architectures):
        problems.append(
            f"`architectures` must be a list of class names, got {shown(architectures)}"
        )
    else:
        unknown = [a for a in architectures if a not in family.architectures]
        if unknown:
            problems.append(
                f"architectures {unknown} not supported for model_type {model_type!r} "
                f"(known: {', '.join(sorted(family.architectures))})"
            )
    return family, problems


# Blocks ---------------------------------------------------------------------------------------


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
    family = _known_family(model_type)
    reader = _Reader(cfg, family.defaults, "")
    moe = _moe(reader, family.moe)
    if reader.problems:
        raise UnsupportedConfig(reader.problems)
    return moe


def _moe(r: _Reader, kind: str | None) -> MoE | None:
    if kind is None:
        return None
    if kind in ("mixtral", "gpt_oss"):
        experts, per_token = r.integer("num_local_experts"), r.integer("num_experts_per_tok")
        width = r.integer("intermediate_size")
        if None in (experts, per_token, width):
            return None
        biased = kind == "gpt_oss"
        return _build(
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
        return _build(
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
    return _build(
        r,
        MoE,
        experts=experts,
        experts_per_token=per_token,
        expert_intermediate_size=width,
        shared_experts=shared,
        dense_layers=dense,
        router_bias=r.raw("topk_method") == "noaux_tc",
    )


def _llama4_moe(r: _Reader) -> MoE | None:
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
    return _build(
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
    reader = _Reader(cfg, {}, "")
    mla = _mla(reader)
    if reader.problems or mla is None:
        raise UnsupportedConfig(reader.problems)
    return mla


def _mla(r: _Reader) -> MLA | None:
    values = {
        k: r.integer(k)
        for k in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
    }
    q_lora = r.integer("q_lora_rank", optional=True)
    if None in values.values():
        return None
    return _build(r, MLA, q_lora_rank=q_lora, **values)


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
    family = _known_family(model_type)
    reader = _Reader(cfg, family.defaults, "")
    window = _sliding(reader, family.sliding, layers)
    if reader.problems:
        raise UnsupportedConfig(reader.problems)
    return window


def _sliding(r: _Reader, kind: str | None, layers: int) -> SlidingWindow | None:
    kinds = _layer_kinds(r, kind, layers)
    if kinds is None or SLIDING not in kinds:
        return None
    window = r.integer("attention_chunk_size" if kind == "llama4" else "sliding_window")
    if window is None:
        return None
    return _build(r, SlidingWindow, window=window, pattern=compress_layer_pattern(kinds))


def _layer_kinds(r: _Reader, kind: str | None, layers: int) -> str | None:
    types = r.raw("layer_types")
    if types is not None:
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
    if kind == "all":
        return SLIDING * layers if r.raw("sliding_window") is not None else None
    if kind == "qwen2":
        if not r.flag("use_sliding_window", default=False) or r.raw("sliding_window") is None:
            return None
        full = r.integer("max_window_layers", minimum=0)
        return None if full is None else FULL * min(full, layers) + SLIDING * (layers - full)
    if kind == "gemma2":
        return _tile(SLIDING + FULL, layers)
    if kind == "gemma3":
        # transformers >= 4.53 writes the pattern as `_sliding_window_pattern`.
        key = "sliding_window_pattern"
        if r.cfg.get(key) is None and r.cfg.get("_" + key) is not None:
            key = "_" + key
        every = r.integer(key)
        return None if every is None else _tile(SLIDING * (every - 1) + FULL, layers)
    if kind == "llama4":
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
    return None


def _tile(pattern: str, layers: int) -> str:
    """``pattern`` repeated from layer 0 and cut to ``layers`` letters (one per layer)."""
    return (pattern * (-(-layers // len(pattern))))[:layers]


def _build(r: _Reader, cls: type, **kwargs: Any) -> Any:
    try:
        return cls(**kwargs)
    except ValueError as error:
        r.problems.append(f"{cls.__name__}: {error}")
        return None


# Vision towers ----------------------------------------------------------------------------------


def vit_parameters(
    layers: int,
    hidden: int,
    intermediate: int,
    *,
    gated_mlp: bool,
    attention_bias: bool,
    mlp_bias: bool,
    norm_bias: bool,
    patch_values: int,
    patch_bias: bool = False,
    positions: int = 0,
) -> int:
    """A vision transformer's encoder: its layers, patch embedding and position table [parameters].

    Per layer: q, k, v and output projections 4·h² (+ 4·h biases); the MLP 2·h·i (fc1, fc2) or,
    gated, 3·h·i (gate, up, down), with biases i + h (gated 2·i + h); two norms of h (LayerNorm
    adds a bias each: 4·h). Patch embedding: ``patch_values`` (channels × patch² × temporal
    patch) × h, + h with a bias; learned positions: ``positions`` × h. ``layers`` [layers],
    ``hidden`` h and ``intermediate`` i [values]. Source: ViT (Dosovitskiy et al. 2020,
    arXiv:2010.11929) §3.1, as transformers ``SiglipVisionModel``, ``PixtralVisionModel``,
    ``Llama4VisionModel`` and ``Qwen2_5_VisionTransformerPretrainedModel`` build it.
    """
    h, i = hidden, intermediate
    attention = 4 * h * h + (4 * h if attention_bias else 0)
    mlp = (3 if gated_mlp else 2) * h * i
    if mlp_bias:
        mlp += (2 * i if gated_mlp else i) + h
    norms = 2 * h * (2 if norm_bias else 1)
    patch = patch_values * h + (h if patch_bias else 0)
    return layers * (attention + mlp + norms) + patch + positions * h


def vision_parameters_from_hf_config(cfg: Mapping[str, Any]) -> int:
    """Parameters of a multimodal config's vision tower and its projector into the decoder, 0
    for a text-only config [parameters].

    The tower is read from ``vision_config`` by the wrapper's ``model_type`` (see
    :data:`~planner.catalog.families.VISION`):

    * ``gemma3`` (SigLIP): :func:`vit_parameters` with biases and LayerNorms, a biased
      ``num_channels``·patch² patch embedding and (``image_size``/``patch_size``)² positions, the
      post-LayerNorm (2·h); projector ``Gemma3MultiModalProjector``: h × text hidden + an
      RMSNorm of h. Refused with ``vision_use_head`` (the attention-pooling head is not counted).
    * ``mistral3`` (Pixtral): gated MLP, no biases, RMSNorms, no position table (2-D RoPE),
      ``ln_pre`` (h); projector ``Mistral3MultiModalProjector``: RMSNorm h, patch merger
      h·m² × h (m = ``spatial_merge_size``), linear_1 h·f × text hidden and linear_2 text
      hidden² (f feature layers; biases when ``multimodal_projector_bias``).
    * ``llama4``: biases and LayerNorms, a ``num_channels``·patch² patch embedding, (image /
      patch)² + 1 positions and a class embedding (h), pre- and post-LayerNorms (4·h); the
      pixel-shuffle adapter ``intermediate_size`` × ``projector_input_dim`` +
      ``projector_output_dim``² and the projector ``vision_output_dim`` × text hidden, no biases.
    * ``qwen2_5_vl``: ``depth`` layers, biased attention and gated MLP, RMSNorms, a channels ×
      ``temporal_patch_size`` × patch² patch embedding, no position table; merger RMSNorm h,
      then (h·m²)² and h·m² × ``out_hidden_size``, both biased.

    Raises :class:`UnsupportedConfig` for an unknown wrapper with a ``vision_config``, or a
    missing or malformed field.
    """
    section = cfg.get("vision_config")
    if section is None:
        return 0
    outer = cfg.get("model_type")
    kind = VISION.get(str(outer))
    if kind is None:
        raise UnsupportedConfig(
            [
                f"vision tower of model_type {outer!r} is not supported "
                f"(known: {', '.join(sorted(VISION))})"
            ]
        )
    if not isinstance(section, Mapping):
        raise UnsupportedConfig(["`vision_config` is not a mapping"])
    text = cfg.get("text_config", cfg)
    text_hidden = text.get("hidden_size") if isinstance(text, Mapping) else None
    # Wrapper keys (merge size, projector bias) sit beside vision_config; the vision section wins.
    merged = {k: v for k, v in cfg.items() if k not in ("vision_config", "text_config")}
    r = _Reader(merged | dict(section), VISION_DEFAULTS[kind], "vision_config.")
    total = _VISION_READERS[kind](r, text_hidden)
    if r.problems or total is None:
        raise UnsupportedConfig(list(dict.fromkeys(r.problems)))
    return total


def _text_width(r: _Reader, text_hidden: Any) -> int | None:
    if isinstance(text_hidden, bool) or not isinstance(text_hidden, int) or text_hidden < 1:
        r.problems.append(f"the projector needs the decoder's hidden_size, got {text_hidden!r}")
        return None
    return text_hidden


def _siglip(r: _Reader, text_hidden: Any) -> int | None:
    if r.flag("vision_use_head"):
        r.problems.append("`vision_config.vision_use_head` true (the pooling head is not modelled)")
    keys = ("num_hidden_layers", "hidden_size", "intermediate_size", "patch_size", "image_size")
    layers, h, i, patch, image = (r.integer(k) for k in keys)
    channels, text = r.integer("num_channels"), _text_width(r, text_hidden)
    if None in (layers, h, i, patch, image, channels, text) or r.problems:
        return None
    assert layers and h and i and patch and image and channels and text
    tower = vit_parameters(
        layers, h, i, gated_mlp=False, attention_bias=True, mlp_bias=True, norm_bias=True,
        patch_values=channels * patch * patch, patch_bias=True, positions=(image // patch) ** 2,
    )  # fmt: skip
    return tower + 2 * h + h * text + h


def _pixtral(r: _Reader, text_hidden: Any) -> int | None:
    keys = ("num_hidden_layers", "hidden_size", "intermediate_size", "patch_size")
    layers, h, i, patch = (r.integer(k) for k in keys)
    channels, merge = r.integer("num_channels"), r.integer("spatial_merge_size")
    bias = r.flag("multimodal_projector_bias")
    feature_layer = r.raw("vision_feature_layer")
    features = len(feature_layer) if isinstance(feature_layer, list) else 1
    text = _text_width(r, text_hidden)
    if None in (layers, h, i, patch, channels, merge, bias, text):
        return None
    assert layers and h and i and patch and channels and merge and text
    tower = vit_parameters(
        layers, h, i, gated_mlp=True, attention_bias=False, mlp_bias=False, norm_bias=False,
        patch_values=channels * patch * patch,
    )  # fmt: skip
    projector = h + h * merge * merge * h + h * features * text + text * text
    if bias:
        projector += 2 * text
    return tower + h + projector


def _llama4_vision(r: _Reader, text_hidden: Any) -> int | None:
    keys = ("num_hidden_layers", "hidden_size", "intermediate_size", "patch_size", "image_size")
    layers, h, i, patch, image = (r.integer(k) for k in keys)
    channels = r.integer("num_channels")
    adapter_in, adapter_out = r.integer("projector_input_dim"), r.integer("projector_output_dim")
    vision_out, text = r.integer("vision_output_dim"), _text_width(r, text_hidden)
    if None in (layers, h, i, patch, image, channels, adapter_in, adapter_out, vision_out, text):
        return None
    assert layers and h and i and patch and image and channels and adapter_in and adapter_out
    assert vision_out and text
    tower = vit_parameters(
        layers, h, i, gated_mlp=False, attention_bias=True, mlp_bias=True, norm_bias=True,
        patch_values=channels * patch * patch, positions=(image // patch) ** 2 + 1,
    )  # fmt: skip
    adapter = i * adapter_in + adapter_out * adapter_out
    return tower + h + 4 * h + adapter + vision_out * text


def _qwen2_5_vl_vision(r: _Reader, text_hidden: Any) -> int | None:
    layers, h, i, patch = (
        r.integer(k) for k in ("depth", "hidden_size", "intermediate_size", "patch_size")
    )
    # transformers 4.49 and earlier wrote the channels as `in_chans`.
    channels = r.integer("in_channels" if r.cfg.get("in_chans") is None else "in_chans")
    temporal, merge = r.integer("temporal_patch_size"), r.integer("spatial_merge_size")
    out = r.integer("out_hidden_size")
    if None in (layers, h, i, patch, channels, temporal, merge, out):
        return None
    assert layers and h and i and patch and channels and temporal and merge and out
    tower = vit_parameters(
        layers, h, i, gated_mlp=True, attention_bias=True, mlp_bias=True, norm_bias=False,
        patch_values=channels * temporal * patch * patch,
    )  # fmt: skip
    merged = h * merge * merge
    return tower + h + merged * merged + merged + merged * out + out


_VISION_READERS = {
    "siglip": _siglip,
    "pixtral": _pixtral,
    "llama4": _llama4_vision,
    "qwen2_5_vl": _qwen2_5_vl_vision,
}


# Public API -----------------------------------------------------------------------------------


def architecture_from_hf_config(cfg: Mapping[str, Any]) -> Architecture:
    """The :class:`Architecture` described by a Hugging Face config.json (parsed to a dict).

    See the module docstring for the field mapping. Raises :class:`UnsupportedConfig` listing
    every problem: unknown ``model_type`` or ``architectures``, missing required fields, values
    of the wrong type, and settings that change the parameter layout in ways not modelled.
    """
    if not isinstance(cfg, Mapping):
        raise UnsupportedConfig([f"config must be a JSON object, got {type(cfg).__name__}"])
    section, model_type, where, problems = _text_section(cfg)
    family, family_problems = _check_family(cfg, model_type)
    problems += family_problems
    if family is None:
        raise UnsupportedConfig(problems)

    # A multimodal wrapper may carry tie_word_embeddings at the top level; text_config wins.
    merged = dict(section)
    if where and merged.get("tie_word_embeddings") is None and "tie_word_embeddings" in cfg:
        merged["tie_word_embeddings"] = cfg["tie_word_embeddings"]
    r = _Reader(merged, family.defaults, where)
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


def _head_dim(r: _Reader, hidden: int | None, heads: int | None, mla: MLA | None) -> int | None:
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


def model_entry_from_hf_config(
    cfg: Mapping[str, Any],
    id: str,
    name: str | None = None,
    source: str | None = None,
    revision: str | None = None,
) -> dict[str, Any]:
    """A models.yaml entry (plain dict) for the model a config.json describes.

    Keys, in order: ``id``, ``name`` (default: ``id``), ``source`` (default: the Hugging Face
    page of ``_name_or_path`` when that looks like ``org/name``; omitted when unknown),
    ``revision`` (only when given: a config.json carries no commit hash, and neither
    ``_name_or_path`` nor ``transformers_version`` identifies the weights), then ``layers``,
    ``hidden_size``, ``intermediate_size``, ``attention_heads``, ``kv_heads``, ``head_dim``,
    ``vocab_size``, ``tied_embeddings``, ``attention_bias``, and the optional blocks ``moe``,
    ``mla``, ``sliding_window`` keyed by the dataclass field names (null fields left out).

    A multimodal config also gets ``encoder_parameters`` (before ``layers``): its vision tower
    and projector (:func:`vision_parameters_from_hf_config`), which the weights a server loads
    include and no generated token runs; the decoder's count is derived from the fields.
    """
    arch = architecture_from_hf_config(cfg)
    vision = vision_parameters_from_hf_config(cfg)
    entry: dict[str, Any] = {"id": id, "name": name or id}
    src = source or _default_source(cfg)
    if src:
        entry["source"] = src
    if revision:
        entry["revision"] = revision
    if vision:
        entry["encoder_parameters"] = vision
    entry |= {
        "layers": arch.layers,
        "hidden_size": arch.hidden_size,
        "intermediate_size": arch.intermediate_size,
        "attention_heads": arch.attention_heads,
        "kv_heads": arch.kv_heads,
        "head_dim": arch.head_dim,
        "vocab_size": arch.vocab_size,
        "tied_embeddings": arch.tied_embeddings,
        "attention_bias": arch.attention_bias,
    }
    if arch.attention_sinks:
        entry["attention_sinks"] = True
    for key in ("moe", "mla", "sliding_window"):
        block = getattr(arch, key)
        if block is not None:
            entry[key] = {k: v for k, v in asdict(block).items() if v is not None}
    _check_entry(cfg, entry)
    return entry


def _entry_source(cfg: Mapping[str, Any], path: tuple[Any, ...]) -> str:
    """Where an entry's field came from: the config.json key it was read from (in the text
    decoder's section for a multimodal config), or the option that gave it."""
    options = {"id": "the id (--id, else the config's name)", "name": "--name"}
    options |= {"revision": "--revision", "source": "`_name_or_path`"}
    if path and path[0] in options:
        return options[str(path[0])]
    model_type = cfg.get("model_type")
    prefix = "text_config." if isinstance(cfg.get("text_config"), Mapping) else ""
    family = FAMILIES.get(str(model_type)) if not prefix else None
    keys = ENTRY_KEYS | {"intermediate_size": family.dense_width if family else "intermediate_size"}
    name = ".".join(str(p) for p in path)
    if name in keys:
        return f"config.json `{prefix}{keys[name]}` (the entry's `{name}`)"
    if name == "encoder_parameters":
        return "config.json `vision_config` (its tower's parameter count, `encoder_parameters`)"
    return f"the entry's `{name}` (derived from config.json)"


#: The config.json key each field of an imported entry is read from, where it is read as is.
ENTRY_KEYS = {
    "layers": "num_hidden_layers",
    "hidden_size": "hidden_size",
    "attention_heads": "num_attention_heads",
    "kv_heads": "num_key_value_heads",
    "head_dim": "head_dim",
    "vocab_size": "vocab_size",
    "moe.experts": "the experts count (num_local_experts, num_experts or n_routed_experts)",
    "moe.experts_per_token": "num_experts_per_tok",
    "moe.expert_intermediate_size": "moe_intermediate_size",
    "moe.shared_experts": "n_shared_experts",
    "moe.shared_expert_intermediate_size": "shared_expert_intermediate_size",
    "moe.dense_layers": "first_k_dense_replace",
    "mla.kv_lora_rank": "kv_lora_rank",
    "mla.qk_rope_head_dim": "qk_rope_head_dim",
    "mla.qk_nope_head_dim": "qk_nope_head_dim",
    "mla.v_head_dim": "v_head_dim",
    "mla.q_lora_rank": "q_lora_rank",
    "sliding_window.window": "sliding_window",
}


def _check_entry(cfg: Mapping[str, Any], entry: dict[str, Any]) -> None:
    """Refuse an entry that ``planner check`` would refuse: it is validated by the catalog's
    own :class:`~planner.catalog.records.Model`, and each fault is told against the config.json
    key (or the option) it came from."""
    try:
        Model.model_validate(entry)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            path = tuple(p for p in error["loc"] if not (isinstance(p, str) and "-" in p))
            where = _entry_source(cfg, path) if path else "the entry"
            problems.append(f"{where}: {validation_message(error)}")
        raise InvalidEntry(list(dict.fromkeys(problems))) from None


#: Checkpoint quantisation methods and the shipped precision that stores them.
QUANTISED_AS = {"mxfp4": "mxfp4 (routed experts only)", "fp8": "fp8", "nvfp4": "nvfp4"}


def quantisation_note(cfg: Mapping[str, Any]) -> str | None:
    """What a config's ``quantization_config`` says about how the checkpoint stores its
    weights, and the precision to plan it with (None when it names no method)."""
    section = cfg.get("quantization_config")
    method = section.get("quant_method") if isinstance(section, Mapping) else None
    if not isinstance(method, str):
        return None
    precision = QUANTISED_AS.get(method)
    advice = (
        f"plan it with the precision {precision}" if precision else "describe it in precisions.yaml"
    )
    return f"the checkpoint stores its weights as {method!r} (quantization_config): {advice}"


def _default_source(cfg: Mapping[str, Any]) -> str | None:
    path = cfg.get("_name_or_path")
    if isinstance(path, str) and _HF_REPO.match(path):
        return f"https://huggingface.co/{path}"
    return None


def architecture_from_entry(entry: Mapping[str, Any]) -> Architecture:
    """Rebuild the :class:`Architecture` from a models.yaml entry made by
    :func:`model_entry_from_hf_config` (identity keys such as ``id`` are ignored)."""
    blocks = {"moe": MoE, "mla": MLA, "sliding_window": SlidingWindow}
    fields = set(Architecture.__dataclass_fields__)
    kwargs = {k: v for k, v in entry.items() if k in fields and k not in blocks}
    for key, cls in blocks.items():
        if entry.get(key) is not None:
            kwargs[key] = cls(**entry[key])
    return Architecture(**kwargs)


def entry_to_yaml(entry: Mapping[str, Any], *, list_item: bool = False) -> str:
    """YAML text of a models.yaml entry, keys in the entry's order.

    ``list_item=True`` renders it as one item of a YAML list (``- id: ...``), ready to append
    under ``models:``.
    """
    data: Any = [dict(entry)] if list_item else dict(entry)
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True)


def load_hf_config(path: str | Path) -> dict[str, Any]:
    """Read a config.json file into a dict (UTF-8 JSON); a file that cannot be read safely
    (:func:`~planner.catalog.safefile.read_text`: a FIFO, a device, past the size limit), is
    not JSON, nests past the parser's depth or writes a number of more than
    :data:`MAX_DIGITS` digits raises :class:`UnsupportedConfig` saying why."""
    try:
        data = json.loads(read_text(Path(path)), parse_int=_integer)
    except FileProblem as exc:
        raise UnsupportedConfig([f"cannot read it: it {exc}"]) from None
    except json.JSONDecodeError as exc:
        raise UnsupportedConfig(
            [f"cannot read it: it is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"]
        ) from None
    except _TooLong as exc:
        raise UnsupportedConfig([str(exc)]) from None
    except RecursionError:
        raise UnsupportedConfig(
            ["cannot read it: it nests lists or objects too deeply to be a config.json"]
        ) from None
    if not isinstance(data, dict):
        raise UnsupportedConfig([f"config must be a JSON object, got a {type(data).__name__}"])
    return data


class _TooLong(ValueError):
    """A number written with more digits than any config field needs."""


def _integer(text: str) -> int:
    """A JSON integer, refused past :data:`MAX_DIGITS` digits (Python itself stops at 4,300
    with a message about its own limits)."""
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise _TooLong(
            f"holds a number of {len(text):,} digits; no config field needs more than {MAX_DIGITS}"
        )
    return int(text)


class AppendRefused(Exception):
    """An entry that would leave models.yaml invalid, or repeat an id there."""


def append_model_entry(path: Path, text: str) -> None:
    """Append a ``- id: ...`` entry (:func:`entry_to_yaml`) under ``models:`` of ``path``,
    keeping the file only if the result is still a valid models.yaml with distinct ids; written
    through a temporary file and renamed into place."""
    from planner.catalog.records import ModelsFile
    from planner.catalog.validation import problems_from_validation
    from planner.catalog.yamlsafe import YamlProblem, load

    if path.exists() and not path.is_file():
        raise AppendRefused(f"{path} is not a regular file: --append writes a models.yaml file")
    current = path.read_text() if path.exists() else "models:\n"
    if not current.endswith("\n"):
        current += "\n"
    indented = "".join(f"  {line}" if line.strip() else line for line in text.splitlines(True))
    updated = current + indented
    try:
        doc = load(updated)
        models = ModelsFile.model_validate(doc.data)
    except YamlProblem as exc:
        where = f"{path}:{exc.line}" if exc.line else str(path)
        raise AppendRefused(f"{where} would not stay a valid models.yaml: {exc.message}") from None
    except ValidationError as exc:
        problems = problems_from_validation(str(path), doc, ModelsFile, exc)
        raise AppendRefused(
            f"{path} would not stay a valid models.yaml:\n" + "\n".join(str(p) for p in problems)
        ) from None
    ids = [m.id for m in models.models]
    if len(ids) != len(set(ids)):
        raise AppendRefused(f"{path} already has a model with that id")
    try:
        handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise AppendRefused(f"{path} could not be written: {exc.strerror or exc}") from None
    temporary = Path(name)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(updated)
        os.replace(temporary, path)
    except OSError as exc:  # a full disk: the models.yaml is left as it was
        raise AppendRefused(
            f"{path} could not be written: {exc.strerror or exc}; it was left as it was"
        ) from None
    finally:
        temporary.unlink(missing_ok=True)
