"""The vision tower and projector of a multimodal Hugging Face ``config.json``, counted apart
from its decoder: loaded with the weights, never run per generated token.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planner.catalog.families import VISION, VISION_DEFAULTS
from planner.catalog.hf_config import ConfigReader, UnsupportedConfig


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
    r = ConfigReader(merged | dict(section), VISION_DEFAULTS[kind], "vision_config.")
    total = _VISION_READERS[kind](r, text_hidden)
    if r.problems or total is None:
        raise UnsupportedConfig(list(dict.fromkeys(r.problems)))
    return total


def _text_width(r: ConfigReader, text_hidden: Any) -> int | None:
    if isinstance(text_hidden, bool) or not isinstance(text_hidden, int) or text_hidden < 1:
        r.problems.append(f"the projector needs the decoder's hidden_size, got {text_hidden!r}")
        return None
    return text_hidden


def _siglip(r: ConfigReader, text_hidden: Any) -> int | None:
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


def _pixtral(r: ConfigReader, text_hidden: Any) -> int | None:
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


def _llama4_vision(r: ConfigReader, text_hidden: Any) -> int | None:
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


def _qwen2_5_vl_vision(r: ConfigReader, text_hidden: Any) -> int | None:
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
