"""A models.yaml entry from a Hugging Face ``config.json``: built from the architecture it
describes, validated as ``planner check`` validates models.yaml (each fault told against the
config key it came from), written as YAML and appended to a models.yaml safely.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from planner.catalog.components import Model
from planner.catalog.families import FAMILIES
from planner.catalog.hf_architecture import architecture_from_hf_config
from planner.catalog.hf_config import UnsupportedConfig
from planner.catalog.hf_vision import vision_parameters_from_hf_config
from planner.catalog.records import ModelsFile
from planner.catalog.validation import problems_from_validation, validation_message
from planner.catalog.yamlsafe import YamlProblem, load
from planner.model.architecture import MLA, Architecture, MoE, SlidingWindow


class InvalidEntry(UnsupportedConfig):
    """A config.json whose entry the catalog would refuse (a count past the catalog's bound, an
    id it does not allow...); ``problems`` names each config key or option at fault."""

    def __init__(self, problems: list[str]):
        super().__init__(problems)
        self.args = ("the models.yaml entry would be refused: " + "; ".join(self.problems),)


_HF_REPO = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


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


class AppendRefused(Exception):
    """An entry that would leave models.yaml invalid, or repeat an id there."""


def append_model_entry(path: Path, text: str) -> None:
    """Append a ``- id: ...`` entry (:func:`entry_to_yaml`) under ``models:`` of ``path``,
    keeping the file only if the result is still a valid models.yaml with distinct ids; written
    through a temporary file and renamed into place."""
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
