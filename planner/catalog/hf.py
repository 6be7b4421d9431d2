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

Multimodal configs (e.g. Gemma 3 4B-27B, ``Gemma3ForConditionalGeneration``) nest the language
model under ``text_config``; only that text decoder is imported, so the vision tower (about 0.4B
parameters for Gemma 3) is not in the resulting counts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from planner.catalog.families import FAMILIES, WRAPPERS, Family
from planner.catalog.safefile import FileProblem, read_text
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


REQUIRED = ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads")

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
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.problems.append(
                f"field {self._name(key)} must be an integer >= {minimum}, got {value!r}"
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
    if not isinstance(architectures, list):
        problems.append(f"`architectures` must be a list, got {architectures!r}")
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
    window = r.integer("sliding_window")
    if window is None:
        return None
    return _build(r, SlidingWindow, window=window, pattern=compress_layer_pattern(kinds))


def _layer_kinds(r: _Reader, kind: str | None, layers: int) -> str | None:
    types = r.raw("layer_types")
    if types is not None:
        letters = {"sliding_attention": SLIDING, "full_attention": FULL}
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
    intermediate = r.integer("intermediate_size")
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
    """
    arch = architecture_from_hf_config(cfg)
    entry: dict[str, Any] = {"id": id, "name": name or id}
    src = source or _default_source(cfg)
    if src:
        entry["source"] = src
    if revision:
        entry["revision"] = revision
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
    return entry


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
    """Read a config.json file into a dict (UTF-8 JSON); a file that cannot be read or is not
    JSON raises :class:`UnsupportedConfig` saying why."""
    try:
        data = json.loads(read_text(Path(path)))
    except FileProblem as exc:
        raise UnsupportedConfig([f"cannot read it: it {exc}"]) from None
    except ValueError as exc:  # not JSON
        raise UnsupportedConfig([f"cannot read it: {exc}"]) from None
    if not isinstance(data, dict):
        raise UnsupportedConfig([f"{path}: config must be a JSON object"])
    return data


class AppendRefused(Exception):
    """An entry that would leave models.yaml invalid, or repeat an id there."""


def append_model_entry(path: Path, text: str) -> None:
    """Append a ``- id: ...`` entry (:func:`entry_to_yaml`) under ``models:`` of ``path``,
    keeping the file only if the result is still a valid models.yaml with distinct ids; written
    through a temporary file and renamed into place."""
    from planner.catalog import ModelsFile
    from planner.catalog.yamlsafe import YamlProblem, load

    current = path.read_text() if path.exists() else "models:\n"
    if not current.endswith("\n"):
        current += "\n"
    indented = "".join(f"  {line}" if line.strip() else line for line in text.splitlines(True))
    updated = current + indented
    try:
        models = ModelsFile.model_validate(load(updated).data)
    except (YamlProblem, ValueError) as exc:  # ValueError: pydantic's ValidationError
        raise AppendRefused(f"{path} would not stay a valid models.yaml: {exc}") from None
    ids = [m.id for m in models.models]
    if len(ids) != len(set(ids)):
        raise AppendRefused(f"{path} already has a model with that id")
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(updated)
    tmp.replace(path)
