"""Catalogs: the YAML files that describe hardware, models, precisions, workloads and assumptions.

Loading turns untrusted files into typed, validated records at the edge. Every problem names the
file, the entry (its ``id``, or its position when it has none), the field and the line, and says
what was expected and what arrived; all problems are collected and reported together.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic_core import ErrorDetails

from planner.catalog.datafiles import DataFileError, read_column, read_trace
from planner.catalog.yamlsafe import Document, YamlProblem, load
from planner.model import units
from planner.model.architecture import (
    MLA,
    Architecture,
    MoE,
    ParameterCount,
    SlidingWindow,
    count_parameters,
    embedding_parameters,
    lm_head_parameters,
    mlp_parameters,
)

CATALOG_FILES = ("hardware", "models", "precisions", "workloads", "assumptions")
OPTIONAL_FILES = ("scenarios",)
ID_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"


# Quantity fields: text with a unit in the catalog, a float in base units in the record. ----------


def _quantity(kind: str, *, allow_zero: bool = False, optional: bool = False) -> BeforeValidator:
    """The validator of a field type that reads ``"80 GiB"``-style text into a float in base units.

    ``optional`` lets an explicit null through (the field's default is then None); it makes a
    separate type, ``Annotated[float | None, ...]``, so that a required quantity (``Annotated[float,
    ...]``) never accepts null.
    """

    def parse(value: Any) -> float | None:
        if value is None and optional:
            return None
        number = units.parse(value, kind)
        if number < 0 or (number == 0 and not allow_zero):
            limit = "zero or more" if allow_zero else "greater than zero"
            raise ValueError(f"must be {limit}, got {value!r}")
        return number

    return BeforeValidator(parse)


Bytes = Annotated[float, _quantity("bytes")]
OptionalBytes = Annotated[float | None, _quantity("bytes", optional=True)]
BytesOrZero = Annotated[float, _quantity("bytes", allow_zero=True)]
Bandwidth = Annotated[float, _quantity("bandwidth")]
OptionalBandwidth = Annotated[float | None, _quantity("bandwidth", optional=True)]
Compute = Annotated[float, _quantity("compute")]
OptionalPower = Annotated[float | None, _quantity("power", optional=True)]
Seconds = Annotated[float, _quantity("time", allow_zero=True)]
OptionalSeconds = Annotated[float | None, _quantity("time", allow_zero=True, optional=True)]
OptionalRate = Annotated[float | None, _quantity("rate", optional=True)]

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
    usable_memory: OptionalBytes = None
    memory_bandwidth: Bandwidth
    compute: dict[Annotated[str, Field(pattern=r"^[a-z0-9]+$")], Compute] = Field(min_length=1)
    interconnect_bandwidth: OptionalBandwidth = None
    power: OptionalPower = None
    price: Price = Price()
    devices_per_node: Count | None = None

    @model_validator(mode="after")
    def _usable_within_memory(self) -> Hardware:
        if self.usable_memory is not None and self.usable_memory > self.memory:
            raise ValueError("usable_memory cannot exceed memory")
        return self


# Models ---------------------------------------------------------------------------------------


class MoEBlock(Record):
    """Mixture of experts (fields as :class:`planner.model.architecture.MoE`)."""

    experts: Count
    experts_per_token: Count
    expert_intermediate_size: Count
    shared_experts: CountOrZero = 0
    shared_expert_intermediate_size: Count | None = None
    dense_layers: CountOrZero = 0
    router_bias: bool = False


class MLABlock(Record):
    """Multi-head latent attention (fields as :class:`planner.model.architecture.MLA`)."""

    kv_lora_rank: Count
    qk_rope_head_dim: Count
    qk_nope_head_dim: Count
    v_head_dim: Count
    q_lora_rank: Count | None = None


class SlidingWindowBlock(Record):
    """Sliding-window layers: ``pattern`` of S (windowed) and F (full), repeated over layers."""

    window: Count
    pattern: Annotated[str, Field(strict=True, pattern=r"^[SF]+$")] = "S"


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
    gated_mlp: bool = True
    moe: MoEBlock | None = None
    mla: MLABlock | None = None
    sliding_window: SlidingWindowBlock | None = None
    cacheless_layers: CountOrZero = 0
    state_per_sequence: BytesOrZero = 0.0

    @model_validator(mode="after")
    def _parameters_known(self) -> Model:
        needed = ("attention_heads", "hidden_size", "intermediate_size", "vocab_size")
        missing = [n for n in needed if getattr(self, n) is None]
        if self.parameters is None and missing:
            raise ValueError(
                "give `parameters`, or the architecture to derive it from "
                f"(missing: {', '.join(missing)})"
            )
        if (self.moe or self.mla) and missing:
            raise ValueError(
                f"a moe or mla block needs the full architecture (missing: {', '.join(missing)})"
            )
        if (
            self.attention_heads is not None
            and self.mla is None
            and self.attention_heads % self.kv_heads
        ):
            raise ValueError(
                f"attention_heads ({self.attention_heads}) must be a multiple of kv_heads "
                f"({self.kv_heads}) for grouped-query attention"
            )
        if self.cacheless_layers + self.windowed_layers > self.layers:
            raise ValueError("cacheless and windowed layers outnumber the layers")
        if self.sliding_window and len(self.sliding_window.pattern) > self.layers:
            raise ValueError("sliding_window.pattern is longer than the model has layers")
        if self.moe and self.moe.dense_layers > self.layers:
            raise ValueError("moe.dense_layers exceeds layers")
        return self

    def architecture(self) -> Architecture | None:
        """The full architecture, when the entry gives every field it needs."""
        if (
            self.attention_heads is None
            or self.hidden_size is None
            or self.intermediate_size is None
            or self.vocab_size is None
        ):
            return None
        return Architecture(
            layers=self.layers,
            hidden_size=self.hidden_size,
            intermediate_size=self.intermediate_size,
            attention_heads=self.attention_heads,
            kv_heads=self.kv_heads,
            head_dim=self.head_dim,
            vocab_size=self.vocab_size,
            tied_embeddings=self.tied_embeddings,
            attention_bias=self.attention_bias,
            gated_mlp=self.gated_mlp,
            moe=MoE(**self.moe.model_dump()) if self.moe else None,
            mla=MLA(**self.mla.model_dump()) if self.mla else None,
            sliding_window=(
                SlidingWindow(**self.sliding_window.model_dump()) if self.sliding_window else None
            ),
        )

    def derived_parameters(self) -> ParameterCount | None:
        """Parameter counts derived from the architecture (None without one)."""
        arch = self.architecture()
        return count_parameters(arch) if arch is not None else None

    @property
    def parameter_count(self) -> int:
        """Total parameters: as given (a published total), else derived from the architecture."""
        if self.parameters is not None:
            return self.parameters
        derived = self.derived_parameters()
        assert derived is not None  # guaranteed by validation
        return derived.total

    @property
    def active_parameter_count(self) -> int:
        """Parameters used per token: all of them for a dense model; routed experts in part."""
        derived = self.derived_parameters()
        if derived is None or self.moe is None:
            return self.parameter_count
        return derived.active

    @property
    def embedding_parameter_count(self) -> int:
        """Input embeddings plus an untied LM head: the layers often kept at higher precision."""
        arch = self.architecture()
        if arch is None:
            return 0
        return embedding_parameters(arch) + lm_head_parameters(arch)

    @property
    def routed_expert_parameter_count(self) -> int:
        """Parameters of all routed experts (shared experts and routers excluded)."""
        arch = self.architecture()
        if arch is None or arch.moe is None:
            return 0
        moe = arch.moe
        per_expert = mlp_parameters(arch.hidden_size, moe.expert_intermediate_size, arch.gated_mlp)
        return (arch.layers - moe.dense_layers) * moe.experts * per_expert

    @property
    def windowed_layers(self) -> int:
        """Layers that cache only the last ``window`` tokens."""
        if self.sliding_window is None:
            return 0
        pattern = self.sliding_window.pattern
        return sum(pattern[i % len(pattern)] == "S" for i in range(self.layers))

    @property
    def mla_kv_dim(self) -> int:
        """Values cached per token per layer under MLA: kv_lora_rank + rope dim (0 otherwise)."""
        return self.mla.kv_lora_rank + self.mla.qk_rope_head_dim if self.mla else 0


# Precisions, workloads, assumptions, scenarios -------------------------------------------


class Precision(Entry):
    """How weights and the KV cache are stored, and which compute rate applies.

    Weights are given either as ``weight_bytes_per_param`` or as ``weight_bits`` with an optional
    quantisation ``group_size`` and ``scale_bits`` per group (4-bit, group 128, 16-bit scale is
    4 + 16/128 = 4.125 bits). Embeddings and the LM head are kept at ``embedding_bits``
    (default: 16, or the weight bits when higher).
    """

    weight_bytes_per_param: Positive | None = None
    weight_bits: Positive | None = None
    group_size: Count | None = None
    scale_bits: Positive = 16.0
    embedding_bits: Positive | None = None
    kv_bytes_per_value: Positive
    compute: Annotated[str, Field(pattern=r"^[a-z0-9]+$")]
    compute_fallback: Annotated[str, Field(pattern=r"^[a-z0-9]+$")] | None = None

    @model_validator(mode="after")
    def _one_weight_size(self) -> Precision:
        if (self.weight_bytes_per_param is None) == (self.weight_bits is None):
            raise ValueError("give exactly one of weight_bytes_per_param and weight_bits")
        return self

    @property
    def bits(self) -> float:
        """Stored bits per quantised weight, before group scales [bit]."""
        if self.weight_bits is not None:
            return self.weight_bits
        return self.weight_bytes_per_param * 8  # type: ignore[operator]

    @property
    def embedding_bits_or_default(self) -> float:
        return self.embedding_bits if self.embedding_bits is not None else max(self.bits, 16.0)


class LengthDistribution(Record):
    """Token lengths as a summary (mean, p95, max), a list of samples, or a CSV column."""

    mean: Positive | None = None
    p95: Positive | None = None
    max: Count | None = None
    samples: list[Count] | None = Field(default=None, min_length=1, max_length=1_000_000)
    file: Annotated[str, Field(strict=True, pattern=r"^[A-Za-z0-9._/-]+\.csv$")] | None = None
    column: Annotated[str, Field(strict=True, max_length=100)] | None = None

    @model_validator(mode="after")
    def _one_form(self) -> LengthDistribution:
        forms = [self.samples is not None, self.file is not None, self.max is not None]
        if sum(forms) != 1:
            raise ValueError("give one of: {mean, p95, max}, samples, or file (with column)")
        if self.max is not None:
            if self.mean is None or self.p95 is None:
                raise ValueError("a summary needs mean, p95 and max")
            if not self.mean <= self.p95 <= self.max:
                raise ValueError(f"need mean ≤ p95 ≤ max, got {self.mean}, {self.p95}, {self.max}")
        if self.file is not None and (".." in self.file.split("/") or self.file.startswith("/")):
            raise ValueError("file must be a path inside the catalog folder")
        if self.file is not None and self.column is None:
            raise ValueError("a file needs the column to read")
        return self


Lengths = Count | LengthDistribution


class Arrival(Record):
    """Open-loop arrivals: Poisson at a rate, bursty (Poisson bursts), or a CSV trace replayed."""

    pattern: Literal["poisson", "bursty", "trace"]
    rate: OptionalRate = None
    burst_factor: Annotated[float, Field(strict=True, ge=1)] = 1.0
    file: Annotated[str, Field(strict=True, pattern=r"^[A-Za-z0-9._/-]+\.csv$")] | None = None

    @model_validator(mode="after")
    def _complete(self) -> Arrival:
        if self.pattern == "trace":
            if self.file is None:
                raise ValueError("a trace needs file: a CSV with arrival_s (and optional lengths)")
            if ".." in self.file.split("/") or self.file.startswith("/"):
                raise ValueError("file must be a path inside the catalog folder")
        elif self.rate is None:
            raise ValueError(f"a {self.pattern} arrival needs a rate such as '4 /s'")
        return self


class Targets(Record):
    """Latency targets at the 95th percentile."""

    ttft_p95: OptionalSeconds = None
    itl_p95: OptionalSeconds = None
    e2e_p95: OptionalSeconds = None
    task_p95: OptionalSeconds = None


class Workload(Entry):
    """A workload's shape: lengths, arrival pattern, agent loops, latency targets."""

    description: Text | None = None
    prompt_tokens: Lengths
    output_tokens: Lengths | None = None
    max_output_tokens: Count
    concurrency: Count | None = None
    arrival: Arrival | None = None
    requests_per_task: Count = 1
    tool_time: Seconds = 0.0
    preprocess_time: Seconds = 0.0
    network_time: Seconds = 0.0
    targets: Targets = Targets()
    admission: Literal["reserve-max", "current-length"] = "reserve-max"

    @model_validator(mode="after")
    def _one_arrival(self) -> Workload:
        if (self.concurrency is None) == (self.arrival is None):
            raise ValueError(
                "give exactly one of concurrency (closed loop) and arrival (open loop)"
            )
        return self


class Assumptions(Record):
    """Planning assumptions that apply to every candidate."""

    runtime_overhead: BytesOrZero
    reserve: BytesOrZero
    bandwidth_efficiency: Fraction = 1.0
    compute_efficiency: Fraction = 1.0
    kv_block_tokens: Count = 16
    step_overhead: Seconds = 0.0
    activation_bytes: Positive = 2.0
    tensor_parallel_sizes: list[Count] = Field(default=[1], min_length=1)
    max_rejected_fraction: Annotated[float, Field(strict=True, ge=0, le=1)] = 0.001
    max_batch_sequences: Count = 256
    simulated_requests: Annotated[int, Field(strict=True, ge=0, le=1_000_000)] = 2000
    seed: CountOrZero = 0
    # cost
    electricity_usd_per_kwh: Money | None = None
    pue: Annotated[float, Field(strict=True, ge=1)] = 1.0
    utilisation: Fraction = 1.0
    amortisation_months: Count = 36
    devices_per_node: Count = 8
    node_overhead_usd: Money = 0.0
    hosting_usd_per_node_month: Money = 0.0
    hours_per_month: Positive = 730.0


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


class UnknownEntry(KeyError):
    """An id that no entry of its catalog section has; the message lists the valid ones."""

    def __str__(self) -> str:
        return str(self.args[0])


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
    data_files: tuple[str, ...] = ()  # CSVs the workloads name, relative to the folder
    warnings: tuple[Problem, ...] = ()

    def get(self, kind: str, entry_id: str) -> Any:
        for entry in getattr(self, kind):
            if entry.id == entry_id:
                return entry
        valid = ", ".join(e.id for e in getattr(self, kind))
        raise UnknownEntry(f"no {kind} entry {entry_id!r}; valid: {valid}")


def _entry_label(section: str, data: Any, index: int) -> str:
    try:
        entry_id = data[section][index]["id"]
        if isinstance(entry_id, str):
            return f"{section} '{entry_id}'"
    except (KeyError, IndexError, TypeError):
        pass
    return f"{section}[{index}]"


def _pydantic_message(error: ErrorDetails, model: type[BaseModel] | None) -> str:
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


def _at(
    folder: Path,
    docs: dict[str, Document],
    section: str,
    index: int,
    entry_id: str,
    field: str,
    message: str,
    *path: str | int,
) -> Problem:
    """A problem with entry ``index`` of ``section``, at ``field`` (or the deeper ``path``)."""
    where = path or tuple(field.split("."))
    return Problem(
        _display(folder, section),
        message,
        line=docs[section].line_of((section, index, *where)),
        entry=f"{section} '{entry_id}'",
        field=field,
    )


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
    data_files: list[str] = []
    if not problems:
        problems.extend(_workload_files(folder, parsed, docs, data_files))
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
        data_files=tuple(dict.fromkeys(data_files)),
        warnings=tuple(_parameter_warnings(folder, parsed, docs)),
    )


#: Largest relative difference tolerated between a published and a derived parameter count.
PARAMETER_TOLERANCE = 0.01


def _parameter_warnings(
    folder: Path, parsed: dict[str, Record], docs: dict[str, Document]
) -> list[Problem]:
    """A published ``parameters`` that differs from the architecture's count by more than 1 %."""
    warnings = []
    for i, model in enumerate(parsed["models"].models):  # type: ignore[attr-defined]
        derived = model.derived_parameters()
        if model.parameters is None or derived is None:
            continue
        gap = (derived.total - model.parameters) / model.parameters
        if abs(gap) > PARAMETER_TOLERANCE:
            message = (
                f"the architecture gives {derived.total:,} parameters, {gap:+.1%} from the "
                f"published {model.parameters:,}; the published total is used"
            )
            warnings.append(_at(folder, docs, "models", i, model.id, "parameters", message))
    return warnings


def _workload_files(
    folder: Path, parsed: dict[str, Record], docs: dict[str, Document], used: list[str]
) -> list[Problem]:
    """CSV files named by workloads must exist inside the folder and hold what is asked."""

    problems = []
    for i, w in enumerate(parsed["workloads"].workloads):  # type: ignore[attr-defined]
        checks: list[tuple[str, Any]] = []
        for key in ("prompt_tokens", "output_tokens"):
            dist = getattr(w, key)
            if isinstance(dist, LengthDistribution) and dist.file is not None:
                checks.append((f"{key}.file", lambda d=dist: read_column(folder, d.file, d.column)))
                used.append(dist.file)
        if w.arrival is not None and w.arrival.file is not None:
            checks.append(("arrival.file", lambda a=w.arrival: read_trace(folder, a.file)))
            used.append(w.arrival.file)
        for field_name, check in checks:
            try:
                values = check()
            except DataFileError as exc:
                problems.append(_at(folder, docs, "workloads", i, w.id, field_name, str(exc)))
                continue
            if field_name == "output_tokens.file" and values.max() > w.max_output_tokens:
                message = (
                    f"output lengths reach {values.max()}, above max_output_tokens "
                    f"({w.max_output_tokens})"
                )
                problems.append(_at(folder, docs, "workloads", i, w.id, "output_tokens", message))
        out = w.output_tokens
        if (
            isinstance(out, int)
            and out > w.max_output_tokens
            or (
                isinstance(out, LengthDistribution)
                and out.max is not None
                and out.max > w.max_output_tokens
            )
        ):
            message = f"output_tokens exceed max_output_tokens ({w.max_output_tokens})"
            problems.append(_at(folder, docs, "workloads", i, w.id, "output_tokens", message))
    return problems


#: The lists a scenario may restrict; each is named like the catalog file it refers to.
SCENARIO_SECTIONS = ("hardware", "models", "precisions", "workloads")


def _dangling(folder: Path, parsed: dict[str, Record], docs: dict[str, Document]) -> list[Problem]:
    """References between files that name no entry."""
    problems = []
    hardware = parsed["hardware"].hardware  # type: ignore[attr-defined]
    formats = sorted({k for h in hardware for k in h.compute})
    for i, p in enumerate(parsed["precisions"].precisions):  # type: ignore[attr-defined]
        if p.compute_fallback and p.compute_fallback not in formats:
            message = f"compute_fallback {p.compute_fallback!r} is not given by any hardware"
            problems.append(_at(folder, docs, "precisions", i, p.id, "compute_fallback", message))
        if p.compute not in formats:
            message = (
                f"compute format {p.compute!r} is not given by any hardware "
                f"(hardware gives: {', '.join(formats)})"
            )
            problems.append(_at(folder, docs, "precisions", i, p.id, "compute", message))
    if "scenarios" not in parsed:
        return problems
    for i, scenario in enumerate(parsed["scenarios"].scenarios):  # type: ignore[attr-defined]
        for section in SCENARIO_SECTIONS:
            wanted = getattr(scenario, section)
            if wanted is None:
                continue
            valid = [e.id for e in getattr(parsed[section], section)]
            for j, ref in enumerate(wanted):
                if ref not in valid:
                    message = (
                        f"no {section} entry {ref!r} in {section}.yaml; valid: {', '.join(valid)}"
                    )
                    problems.append(
                        _at(folder, docs, "scenarios", i, scenario.id, section, message, section, j)
                    )
    return problems
