"""Reading a Hugging Face ``config.json``: the file itself (JSON, bounded), its text decoder's
section and family, and a reader of its fields that fills a field the config omits only with
its family's ``transformers`` default and collects every problem instead of stopping at the
first.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.catalog.families import FAMILIES, WRAPPERS, Family
from planner.catalog.fields import MAX_COUNT
from planner.catalog.problems import shown
from planner.catalog.safefile import FileProblem, read_text


class UnsupportedConfig(ValueError):
    """A config.json this importer cannot turn into an Architecture without guessing.

    ``problems`` lists each thing not understood; the message joins them.
    """

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("unsupported Hugging Face config: " + "; ".join(self.problems))


REQUIRED = ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads")

#: Most layers a config may give: the importer spells out each layer's kind (windowed or
#: full), and the largest published models have under 200 layers.
MAX_LAYERS = 100_000

#: The config keys that count layers (a decoder's, a vision tower's).
LAYER_KEYS = frozenset({"num_hidden_layers", "depth"})

#: Longest run of digits a config.json number may have: every count a config gives fits in 18.
MAX_DIGITS = 30


@dataclass
class ConfigReader:
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


def text_section(cfg: Mapping[str, Any]) -> tuple[Mapping[str, Any], str, str, list[str]]:
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


def known_family(model_type: str) -> Family:
    family = FAMILIES.get(model_type)
    if family is None:
        raise UnsupportedConfig(
            [f"model_type {model_type!r} is not supported (known: {', '.join(sorted(FAMILIES))})"]
        )
    return family


def check_family(cfg: Mapping[str, Any], model_type: str) -> tuple[Family | None, list[str]]:
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


def build_block(r: ConfigReader, cls: type, **kwargs: Any) -> Any:
    try:
        return cls(**kwargs)
    except ValueError as error:
        r.problems.append(f"{cls.__name__}: {error}")
        return None


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
