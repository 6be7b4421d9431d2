"""Catalogs: the YAML files that describe hardware, models, precisions, workloads and assumptions.

Loading turns untrusted files into typed, validated records at the edge. Every problem names the
file, the entry (its ``id``, or its position when it has none), the field and the line, and says
what was expected and what arrived; all problems are collected and reported together.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from . import units
from .yamlsafe import Document, YamlProblem, load

CATALOG_FILES = ("hardware", "models", "precisions", "workloads", "assumptions")
OPTIONAL_FILES = ("scenarios",)
ID_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"


# Quantity fields: text with a unit in the catalog, a float in base units in the record. ----------


def _quantity(kind: str, *, positive: bool = True, allow_zero: bool = False) -> Any:
    def parse(value: Any) -> float:
        number = units.parse(value, kind)
        if positive and (number < 0 or (number == 0 and not allow_zero)):
            limit = "zero or more" if allow_zero else "greater than zero"
            raise ValueError(f"must be {limit}, got {value!r}")
        return number

    return Annotated[float, BeforeValidator(parse)]


Bytes = _quantity("bytes")
BytesOrZero = _quantity("bytes", allow_zero=True)
Bandwidth = _quantity("bandwidth")
Compute = _quantity("compute")
Power = _quantity("power")
Seconds = _quantity("time", allow_zero=True)
Rate = _quantity("rate")

Count = Annotated[int, Field(strict=True, gt=0)]
CountOrZero = Annotated[int, Field(strict=True, ge=0)]
Positive = Annotated[float, Field(strict=True, gt=0)]
Fraction = Annotated[float, Field(strict=True, gt=0, le=1)]
Money = Annotated[float, Field(strict=True, ge=0)]
Id = Annotated[str, Field(strict=True, pattern=ID_PATTERN, max_length=100)]
Text = Annotated[str, Field(strict=True, max_length=500)]


class Record(BaseModel):
    """Base of every catalog entry: unknown fields are errors, records are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Entry(Record):
    id: Id
    name: Text | None = None
    source: Text | None = None

    @property
    def label(self) -> str:
        return self.name or self.id


# Hardware -------------------------------------------------------------------------------------


class Price(Record):
    purchase_usd: Money | None = None
    cloud_usd_per_hour: Money | None = None


class Hardware(Entry):
    """One accelerator as its datasheet describes it (dense compute rates, never sparse)."""

    memory: Bytes
    memory_bandwidth: Bandwidth
    compute: dict[Annotated[str, Field(pattern=r"^[a-z0-9]+$")], Compute] = Field(min_length=1)
    interconnect_bandwidth: Bandwidth | None = None
    power: Power | None = None
    price: Price = Price()
    devices_per_node: Count | None = None


# Models ---------------------------------------------------------------------------------------


class Model(Entry):
    """A decoder model's architecture; ``parameters`` is derived when not given."""

    revision: Text | None = None
    parameters: Count | None = None
    layers: Count
    kv_heads: Count
    head_dim: Count
    attention_heads: Count | None = None
    hidden_size: Count | None = None
    intermediate_size: Count | None = None
    vocab_size: Count | None = None
    tied_embeddings: bool = False
    attention_bias: bool = False

    @model_validator(mode="after")
    def _parameters_known(self) -> Model:
        needed = ("attention_heads", "hidden_size", "intermediate_size", "vocab_size")
        missing = [n for n in needed if getattr(self, n) is None]
        if self.parameters is None and missing:
            raise ValueError(
                "give `parameters`, or the architecture to derive it from "
                f"(missing: {', '.join(missing)})"
            )
        if self.attention_heads is not None and self.attention_heads % self.kv_heads:
            raise ValueError(
                f"attention_heads ({self.attention_heads}) must be a multiple of kv_heads "
                f"({self.kv_heads}) for grouped-query attention"
            )
        return self

    @property
    def parameter_count(self) -> int:
        """Total parameters: as given, else derived from the architecture."""
        if self.parameters is not None:
            return self.parameters
        return derived_parameters(self)


def derived_parameters(m: Model) -> int:
    """Parameters of a dense decoder with grouped-query attention and a gated (SwiGLU) MLP.

    embeddings (vocab × hidden) + per layer [q (hidden × heads·head_dim), k and v
    (hidden × kv_heads·head_dim each), o (heads·head_dim × hidden), q/k/v biases when
    ``attention_bias``, gate/up/down (3 × hidden × intermediate), two RMSNorm weights (2 × hidden)]
    + final norm (hidden) + LM head (vocab × hidden) unless tied. Source: the Llama architecture
    (Touvron et al. 2023) as implemented by Hugging Face ``LlamaForCausalLM``.
    """
    assert m.attention_heads and m.hidden_size and m.intermediate_size and m.vocab_size
    h, q_width, kv_width = m.hidden_size, m.attention_heads * m.head_dim, m.kv_heads * m.head_dim
    attention = h * q_width + 2 * h * kv_width + q_width * h
    if m.attention_bias:
        attention += q_width + 2 * kv_width
    per_layer = attention + 3 * h * m.intermediate_size + 2 * h
    embeddings = m.vocab_size * h
    head = 0 if m.tied_embeddings else m.vocab_size * h
    return embeddings + m.layers * per_layer + h + head


# Precisions, workloads, assumptions, scenarios -------------------------------------------


class Precision(Entry):
    """How weights and the KV cache are stored, and which compute rate applies."""

    weight_bytes_per_param: Positive
    kv_bytes_per_value: Positive
    compute: Annotated[str, Field(pattern=r"^[a-z0-9]+$")]


class Workload(Entry):
    """A workload's shape: prompt and output lengths and the concurrency to serve."""

    description: Text | None = None
    prompt_tokens: Count
    max_output_tokens: Count
    concurrency: Count


class Assumptions(Record):
    """Planning assumptions that apply to every candidate."""

    runtime_overhead: BytesOrZero
    reserve: BytesOrZero
    bandwidth_efficiency: Fraction = 1.0
    compute_efficiency: Fraction = 1.0


class Scenario(Entry):
    """A subset to cross; an omitted list means every entry of that file."""

    hardware: list[Id] | None = None
    models: list[Id] | None = None
    precisions: list[Id] | None = None
    workloads: list[Id] | None = None


class HardwareFile(Record):
    hardware: list[Hardware] = Field(min_length=1)


class ModelsFile(Record):
    models: list[Model] = Field(min_length=1)


class PrecisionsFile(Record):
    precisions: list[Precision] = Field(min_length=1)


class WorkloadsFile(Record):
    workloads: list[Workload] = Field(min_length=1)


class AssumptionsFile(Record):
    assumptions: Assumptions


class ScenariosFile(Record):
    scenarios: list[Scenario] = Field(min_length=1)


SCHEMAS: dict[str, type[Record]] = {
    "hardware": HardwareFile,
    "models": ModelsFile,
    "precisions": PrecisionsFile,
    "workloads": WorkloadsFile,
    "assumptions": AssumptionsFile,
    "scenarios": ScenariosFile,
}


# Problems ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a catalog, located as precisely as the input allows."""

    file: str
    message: str
    line: int | None = None
    entry: str | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "")
        what = []
        if self.entry:
            what.append(self.entry)
        if self.field:
            what.append(f"field '{self.field}'")
        return f"{where}: {' '.join(what) + ': ' if what else ''}{self.message}"


class CatalogError(Exception):
    """Raised with every problem found in a catalog folder."""

    def __init__(self, problems: Iterable[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


# Loading ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Catalog:
    """A validated catalog folder."""

    folder: Path
    hardware: tuple[Hardware, ...]
    models: tuple[Model, ...]
    precisions: tuple[Precision, ...]
    workloads: tuple[Workload, ...]
    assumptions: Assumptions
    scenarios: tuple[Scenario, ...] = ()
    files: dict[str, str] = field(default_factory=dict)  # file name -> SHA-256

    def get(self, kind: str, entry_id: str) -> Any:
        for entry in getattr(self, kind):
            if entry.id == entry_id:
                return entry
        valid = ", ".join(e.id for e in getattr(self, kind))
        raise KeyError(f"no {kind} entry {entry_id!r}; valid: {valid}")


def _entry_label(section: str, data: Any, index: int) -> str:
    try:
        entry_id = data[section][index]["id"]
        if isinstance(entry_id, str):
            return f"{section} '{entry_id}'"
    except (KeyError, IndexError, TypeError):
        pass
    return f"{section}[{index}]"


def _pydantic_message(error: dict[str, Any], model: type[BaseModel] | None) -> str:
    kind = error["type"]
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        allowed = ", ".join(model.model_fields) if model is not None else ""
        return f"unknown field; expected one of: {allowed}"
    message = error["msg"]
    if message.startswith("Value error, "):
        return message[len("Value error, ") :]
    return f"{message}; got {error.get('input')!r}"


def _model_at(schema: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The record class that owns the last field of ``loc`` (for listing its valid fields)."""
    current: Any = schema
    owner = schema
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        info = getattr(current, "model_fields", {}).get(part)
        if info is None:
            return owner
        annotation = info.annotation
        for candidate in _walk_types(annotation):
            if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                current = owner = candidate
                break
    return owner


def _walk_types(annotation: Any) -> Iterable[Any]:
    yield annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        yield from _walk_types(arg)


def _problems_from_validation(
    name: str, doc: Document, schema: type[BaseModel], exc: ValidationError
) -> list[Problem]:
    problems = []
    for error in exc.errors():
        loc = tuple(
            p for p in error["loc"] if not (isinstance(p, str) and p.startswith("function"))
        )
        entry = None
        field_path: list[str] = []
        if len(loc) >= 2 and isinstance(loc[1], int):
            entry = _entry_label(str(loc[0]), doc.data, loc[1])
            field_path = [str(p) for p in loc[2:]]
        elif loc:
            field_path = [str(p) for p in loc]
        problems.append(
            Problem(
                file=name,
                message=_pydantic_message(error, _model_at(schema, loc)),
                line=doc.line_of(loc),
                entry=entry,
                field=".".join(field_path) or None,
            )
        )
    return problems


def _read(path: Path, display: str) -> tuple[Document | None, str | None, list[Problem]]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return None, None, [Problem(display, f"cannot read the file: {exc.strerror}")]
    digest = hashlib.sha256(raw).hexdigest()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, digest, [Problem(display, "is not UTF-8 text")]
    try:
        doc = load(text)
    except YamlProblem as exc:
        return None, digest, [Problem(display, exc.message, line=exc.line)]
    if doc.data is None:
        return None, digest, [Problem(display, "the file is empty")]
    return doc, digest, []


def _duplicates(name: str, doc: Document, section: str) -> list[Problem]:
    seen: dict[str, int] = {}
    problems = []
    for i, item in enumerate(doc.data.get(section) or []):
        entry_id = item.get("id") if isinstance(item, dict) else None
        if not isinstance(entry_id, str):
            continue
        if entry_id in seen:
            problems.append(
                Problem(
                    name,
                    f"duplicate id {entry_id!r} (first used by entry {seen[entry_id]})",
                    line=doc.line_of((section, i, "id")),
                    entry=f"{section} '{entry_id}'",
                    field="id",
                )
            )
        else:
            seen[entry_id] = i
    return problems


def _display(folder: Path, stem: str) -> str:
    return str(folder / f"{stem}.yaml")


def load_catalog(folder: str | Path) -> Catalog:
    """Load and validate every catalog file in ``folder``.

    Raises :class:`CatalogError` listing every problem found in every file.
    """
    folder = Path(folder)
    problems: list[Problem] = []
    if not folder.is_dir():
        raise CatalogError([Problem(str(folder), "is not a catalog folder")])
    parsed: dict[str, Record] = {}
    docs: dict[str, Document] = {}
    files: dict[str, str] = {}
    for stem in CATALOG_FILES + OPTIONAL_FILES:
        path = folder / f"{stem}.yaml"
        display = _display(folder, stem)
        if not path.exists():
            if stem in CATALOG_FILES:
                problems.append(Problem(display, "the file is missing"))
            continue
        doc, digest, file_problems = _read(path, display)
        if digest:
            files[path.name] = digest
        problems.extend(file_problems)
        if doc is None:
            continue
        if not isinstance(doc.data, dict):
            problems.append(
                Problem(display, f"expected a mapping with the key '{stem}'", line=doc.line_of(()))
            )
            continue
        docs[stem] = doc
        schema = SCHEMAS[stem]
        if stem in doc.data and isinstance(doc.data[stem], list):
            problems.extend(_duplicates(display, doc, stem))
        try:
            parsed[stem] = schema.model_validate(doc.data)
        except ValidationError as exc:
            problems.extend(_problems_from_validation(display, doc, schema, exc))
    if not problems:
        problems.extend(_dangling(folder, parsed, docs))
    if problems:
        raise CatalogError(problems)
    scenarios = getattr(parsed.get("scenarios"), "scenarios", [])
    return Catalog(
        folder=folder,
        hardware=tuple(parsed["hardware"].hardware),  # type: ignore[attr-defined]
        models=tuple(parsed["models"].models),  # type: ignore[attr-defined]
        precisions=tuple(parsed["precisions"].precisions),  # type: ignore[attr-defined]
        workloads=tuple(parsed["workloads"].workloads),  # type: ignore[attr-defined]
        assumptions=parsed["assumptions"].assumptions,  # type: ignore[attr-defined]
        scenarios=tuple(scenarios),
        files=files,
    )


SCENARIO_KEYS: dict[str, str] = {
    "hardware": "hardware",
    "models": "models",
    "precisions": "precisions",
    "workloads": "workloads",
}


def _dangling(folder: Path, parsed: dict[str, Record], docs: dict[str, Document]) -> list[Problem]:
    """References between files that name no entry."""
    problems = []
    hardware = parsed["hardware"].hardware  # type: ignore[attr-defined]
    for p in parsed["precisions"].precisions:  # type: ignore[attr-defined]
        if not any(p.compute in h.compute for h in hardware):
            i = [q.id for q in parsed["precisions"].precisions].index(p.id)  # type: ignore[attr-defined]
            formats = sorted({k for h in hardware for k in h.compute})
            problems.append(
                Problem(
                    _display(folder, "precisions"),
                    f"compute format {p.compute!r} is not given by any hardware "
                    f"(hardware gives: {', '.join(formats)})",
                    line=docs["precisions"].line_of(("precisions", i, "compute")),
                    entry=f"precisions '{p.id}'",
                    field="compute",
                )
            )
    if "scenarios" not in parsed:
        return problems
    for i, scenario in enumerate(parsed["scenarios"].scenarios):  # type: ignore[attr-defined]
        for key, section in SCENARIO_KEYS.items():
            wanted = getattr(scenario, key)
            if wanted is None:
                continue
            valid = [e.id for e in getattr(parsed[section], section)]
            for j, ref in enumerate(wanted):
                if ref not in valid:
                    problems.append(
                        Problem(
                            _display(folder, "scenarios"),
                            f"no {section} entry {ref!r} in {section}.yaml; "
                            f"valid: {', '.join(valid)}",
                            line=docs["scenarios"].line_of(("scenarios", i, key, j)),
                            entry=f"scenarios '{scenario.id}'",
                            field=key,
                        )
                    )
    return problems


def id_is_valid(value: str) -> bool:
    """Whether ``value`` is a valid catalog id."""
    return re.match(ID_PATTERN, value) is not None
