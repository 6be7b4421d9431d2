"""The catalogs' records: what each entry of hardware, models, precisions, workloads, assumptions
and scenarios may hold, validated by pydantic, every quantity parsed from text with its unit into
base units (a bare number for a quantity is refused).
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationInfo,
    field_validator,
    model_validator,
)

from planner.catalog.distributions import FORMS, Distribution
from planner.catalog.distributions import parse as parse_distribution
from planner.catalog.interconnects import Kind
from planner.catalog.matmul import Family
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

OPTIONAL_FILES = ("scenarios", "api_offers", "deployment", "calibration")

ID_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"


@dataclass(frozen=True)
class _Quantity:
    """Reads ``"80 GiB"``-style text of a ``kind`` of quantity into a float in base units."""

    kind: str
    allow_zero: bool
    optional: bool

    def __call__(self, value: Any) -> float | None:
        if value is None and self.optional:
            return None
        number = units.parse(value, self.kind)
        if number < 0 or (number == 0 and not self.allow_zero):
            limit = "zero or more" if self.allow_zero else "greater than zero"
            raise ValueError(f"must be {limit}, got {value!r}")
        return number


def _quantity(kind: str, *, allow_zero: bool = False, optional: bool = False) -> BeforeValidator:
    """The validator of a field type that reads ``"80 GiB"``-style text into a float in base units.

    ``optional`` lets an explicit null through (the field's default is then None); it makes a
    separate type, ``Annotated[float | None, ...]``, so that a required quantity (``Annotated[float,
    ...]``) never accepts null.
    """
    return BeforeValidator(_Quantity(kind, allow_zero, optional))


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

#: Largest whole number a catalog may give (tokens, parameters, layers...): 10¹⁵, far past any
#: model or workload, and well inside a float's exact integers.
MAX_COUNT = 10**15

Count = Annotated[int, Field(strict=True, gt=0, le=MAX_COUNT)]

#: The most steps one simulation may take (each a step of its Python event loop, some 10⁴ to
#: 10⁵ a second here): every request takes a prefill step at least, so this bounds
#: ``simulated_requests`` too, and a run stays within minutes.
MAX_SIMULATION_STEPS = 300_000

#: Most length samples written inline in a catalog (a CSV file has no count limit).
MAX_SAMPLES = 1_000_000

CountOrZero = Annotated[int, Field(strict=True, ge=0, le=MAX_COUNT)]

Positive = Annotated[float, Field(strict=True, gt=0)]

Fraction = Annotated[float, Field(strict=True, gt=0, le=1)]

Money = Annotated[float, Field(strict=True, ge=0)]

#: Ids that a CSV reader (pandas, a spreadsheet) or YAML would take for a missing value or a
#: truth value rather than a name.
RESERVED_IDS = frozenset(
    {"nan", "null", "none", "na", "nat", "inf", "true", "false", "yes", "no", "on", "off"}
)


def _not_reserved(value: str) -> str:
    if value in RESERVED_IDS:
        raise ValueError(
            f"{value!r} cannot be an id: spreadsheets and CSV readers take it for a missing or "
            "true/false value; choose a name"
        )
    return value


def _printable(value: str) -> str:
    bad = next((c for c in value if unicodedata.category(c) == "Cc"), None)
    if bad is not None:
        raise ValueError(
            f"holds the control character U+{ord(bad):04X} at position {value.index(bad) + 1}; "
            "text must be printable (no tabs, line breaks or other control characters)"
        )
    return value


Id = Annotated[
    str, Field(strict=True, pattern=ID_PATTERN, max_length=100), AfterValidator(_not_reserved)
]

#: Free text (names, sources): at most 500 printable characters.
Text = Annotated[str, Field(strict=True, max_length=500), AfterValidator(_printable)]


class Record(BaseModel):
    """Base of every catalog entry: unknown fields are errors, records are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Uncertain(Record):
    """A record some of whose quantities may be given as distributions
    (:mod:`planner.catalog.distributions`).

    ``UNCERTAIN`` names those fields and the largest value each may take (1 for a fraction).
    The field holds the central value, which the plan uses; ``uncertain`` holds each
    distribution in base units, which ``planner run --draws`` samples. A catalog never writes
    ``uncertain`` itself.
    """

    UNCERTAIN: ClassVar[dict[str, float]] = {}
    #: Fields whose mappings may mean something else (a length's samples or summary describe
    #: the spread of requests, not doubt about the catalog): only ``{low, mode, high}`` is read
    #: as a distribution there.
    RANGES_ONLY: ClassVar[frozenset[str]] = frozenset()

    uncertain: dict[str, Distribution] = Field(default_factory=dict, exclude=True, repr=False)

    @model_validator(mode="before")
    @classmethod
    def _distributions(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        if "uncertain" in data:
            raise ValueError("'uncertain' is not a catalog field: write a distribution in place")
        found: dict[str, Distribution] = {}
        data = dict(data)
        for name, upper in cls.UNCERTAIN.items():
            value = data.get(name)
            if not isinstance(value, dict):
                continue
            if name in cls.RANGES_ONLY and FORMS.get(frozenset(value)) != "triangular":
                continue
            field = cls.model_fields[name]
            kind: Any = field.annotation
            if field.metadata:
                kind = Annotated[kind, *field.metadata]
            adapter: TypeAdapter[Any] = TypeAdapter(kind)
            try:
                distribution = parse_distribution(value, adapter.validate_python, upper)
            except Exception as error:  # the field's own message, or the distribution's
                raise ValueError(f"{name}: {_first_error(error)}") from None
            data[name] = _central_as_written(value, distribution)
            found[name] = distribution
        if found:
            data["uncertain"] = found
        return data


def _central_as_written(value: dict[str, Any], distribution: Distribution) -> Any:
    """The central value as the catalog wrote it (with its unit), for the field to read."""
    if distribution.form == "triangular":
        return value["mode"]
    if distribution.form == "normal":
        return value["mean"]
    return value["samples"][distribution.samples.index(distribution.central)]


def _first_error(error: Exception) -> str:
    """The message of a validation error without pydantic's framing."""
    errors = getattr(error, "errors", None)
    if callable(errors):
        first = errors()[0]
        return str(first.get("msg", error)).removeprefix("Value error, ")
    return str(error)


class Entry(Record):
    id: Id
    name: Text | None = None
    source: Text | None = None

    @property
    def label(self) -> str:
        return self.name or self.id


class Price(Uncertain):
    UNCERTAIN: ClassVar[dict[str, float]] = {
        "purchase_usd": float("inf"),
        "cloud_usd_per_hour": float("inf"),
    }

    purchase_usd: Money | None = None
    cloud_usd_per_hour: Money | None = None


class Hardware(Entry):
    """One accelerator as its datasheet describes it (dense compute rates, never sparse)."""

    memory: Bytes
    usable_memory: OptionalBytes = None
    memory_bandwidth: Bandwidth
    compute: dict[Annotated[str, Field(pattern=r"^[a-z0-9]+$")], Compute] = Field(min_length=1)
    interconnect_bandwidth: OptionalBandwidth = None
    interconnect: Kind | None = None
    family: Family | None = None
    matmul_half_tokens: CountOrZero | None = None
    power: OptionalPower = None
    price: Price = Price()
    devices_per_node: Count | None = None

    @model_validator(mode="after")
    def _usable_within_memory(self) -> Hardware:
        if self.usable_memory is not None and self.usable_memory > self.memory:
            raise ValueError("usable_memory cannot exceed memory")
        return self


class MoEBlock(Record):
    """Mixture of experts (fields as :class:`planner.model.architecture.MoE`)."""

    experts: Count
    experts_per_token: Count
    expert_intermediate_size: Count
    shared_experts: CountOrZero = 0
    shared_expert_intermediate_size: Count | None = None
    dense_layers: CountOrZero = 0
    router_bias: bool = False
    expert_bias: bool = False


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
    """A decoder model's architecture; ``parameters`` (the published total, any encoder
    included) is derived when not given."""

    revision: Text | None = None
    parameters: Count | None = None
    #: Parameters outside the decoder (a multimodal model's vision tower and projector): loaded
    #: with the weights, never run per generated token.
    encoder_parameters: CountOrZero = 0
    layers: Count
    kv_heads: Count
    head_dim: Count
    attention_heads: Count | None = None
    hidden_size: Count | None = None
    intermediate_size: Count | None = None
    vocab_size: Count | None = None
    tied_embeddings: bool = False
    attention_bias: bool = False
    attention_sinks: bool = False
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
        if self.parameters is not None and self.encoder_parameters >= self.parameters:
            raise ValueError(
                f"encoder_parameters ({self.encoder_parameters}) must be less than the total "
                f"`parameters` ({self.parameters}), which includes them"
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
            attention_sinks=self.attention_sinks,
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
        """Total parameters, the weights a server loads: as given (a published total), else
        derived from the architecture plus ``encoder_parameters``."""
        if self.parameters is not None:
            return self.parameters
        derived = self.derived_parameters()
        assert derived is not None  # guaranteed by validation
        return derived.total + self.encoder_parameters

    @property
    def active_parameter_count(self) -> int:
        """Decoder parameters used per generated token: all of the decoder's for a dense model
        (the total less ``encoder_parameters``); routed experts in part for a mixture."""
        derived = self.derived_parameters()
        if derived is None or self.moe is None:
            return self.parameter_count - self.encoder_parameters
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
    def mlp_width(self) -> int | None:
        """Intermediate width a token passes through in its widest MLP layer: the dense width,
        or a mixture's experts per token × expert width + its shared experts (None without the
        architecture)."""
        arch = self.architecture()
        if arch is None:
            return None
        if arch.moe is None:
            return arch.intermediate_size
        moe = arch.moe
        routed = moe.experts_per_token * moe.expert_intermediate_size
        experts = routed + moe.shared_experts * moe.shared_width
        return max(experts, arch.intermediate_size) if moe.dense_layers else experts

    @property
    def windowed_layers(self) -> int:
        """Layers that cache only the last ``window`` tokens."""
        if self.sliding_window is None:
            return 0
        pattern = self.sliding_window.pattern
        whole, rest = divmod(self.layers, len(pattern))  # the pattern repeats over the layers
        return whole * pattern.count("S") + pattern[:rest].count("S")

    @property
    def mla_kv_dim(self) -> int:
        """Values cached per token per layer under MLA: kv_lora_rank + rope dim (0 otherwise)."""
        return self.mla.kv_lora_rank + self.mla.qk_rope_head_dim if self.mla else 0


class Precision(Entry):
    """How weights and the KV cache are stored, and which compute rate applies.

    Weights are given either as ``weight_bytes_per_param`` or as ``weight_bits`` with an optional
    quantisation ``group_size`` and ``scale_bits`` per group (4-bit, group 128, 16-bit scale is
    4 + 16/128 = 4.125 bits). Embeddings and the LM head are kept at ``embedding_bits``
    (default: 16, or the weight bits when higher). ``quantised: experts`` quantises only the
    routed experts of a mixture (gpt-oss's MXFP4 checkpoints); its other weights (attention,
    router, shared and dense layers) are stored at ``unquantised_bits``, and the precision
    does not apply to dense models.
    """

    weight_bytes_per_param: Positive | None = None
    weight_bits: Positive | None = None
    group_size: Count | None = None
    scale_bits: Positive = 16.0
    embedding_bits: Positive | None = None
    quantised: Literal["all", "experts"] = "all"
    unquantised_bits: Positive = 16.0
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
    samples: list[Count] | None = Field(default=None, min_length=1, max_length=MAX_SAMPLES)
    file: Annotated[str, Field(strict=True, pattern=r"^[A-Za-z0-9._/-]+\.csv$")] | None = None
    column: (
        Annotated[str, Field(strict=True, max_length=100), AfterValidator(_printable)] | None
    ) = None

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


class Arrival(Uncertain):
    """Open-loop arrivals: Poisson at a rate, bursty (Poisson bursts), or a CSV trace replayed."""

    UNCERTAIN: ClassVar[dict[str, float]] = {"rate": float("inf")}

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


#: A month's traffic as a multiple of today's.
TrafficFactor = Annotated[float, Field(strict=True, gt=0, le=1e6)]


class Forecast(Record):
    """How a workload's load moves over the planning horizon, month 0 being today: this month's
    traffic (its arrival rate, or its users) × (1 + ``growth_per_month``)^month for ``months``
    months, or a table of each month's multiple of today's traffic (``factors`` inline, or a
    CSV ``file`` and ``column``; months: its length); with ``spare_nodes`` nodes kept beyond
    demand (N+k: the targets hold with k nodes down). ``daily_profile`` (24 fractions, hour 0 to
    23, the busiest being 1) shapes each day: the workload's traffic is its busiest hour's, and
    the other hours need fewer nodes, which may be rented by the hour instead of owned."""

    months: Annotated[int, Field(strict=True, ge=1, le=240)] | None = None
    growth_per_month: Annotated[float, Field(strict=True, ge=-0.5, le=1)] | None = None
    factors: Annotated[list[TrafficFactor], Field(min_length=1, max_length=240)] | None = None
    file: Annotated[str, Field(strict=True, pattern=r"^[A-Za-z0-9._/-]+\.csv$")] | None = None
    column: Annotated[str, Field(max_length=100), AfterValidator(_printable)] | None = None
    spare_nodes: Annotated[int, Field(strict=True, ge=0, le=1000)] = 0
    daily_profile: Annotated[list[Fraction], Field(min_length=24, max_length=24)] | None = None

    @model_validator(mode="after")
    def _one_form(self) -> Forecast:
        if self.daily_profile is not None and max(self.daily_profile) != 1:
            raise ValueError(
                "daily_profile gives each hour's traffic as a fraction of the busiest hour's, "
                f"so its largest value must be 1 (it is {max(self.daily_profile):g}); the "
                "workload's rate or users are the busiest hour's"
            )
        forms = [self.growth_per_month is not None, self.factors is not None, self.file is not None]
        if sum(forms) > 1:
            raise ValueError("give one of growth_per_month, factors, or file (with column)")
        if (self.file is None) != (self.column is None):
            raise ValueError("a forecast file needs its column (and a column its file)")
        if self.months is None and self.factors is None and self.file is None:
            raise ValueError("give months (with growth_per_month), or the factors month by month")
        if self.factors is not None and self.months not in (None, len(self.factors)):
            raise ValueError(
                f"months is {self.months} but the factors give {len(self.factors)}: "
                "leave months out"
            )
        return self


class Workload(Entry, Uncertain):
    """A workload's shape: lengths, arrival pattern, agent loops, latency targets."""

    UNCERTAIN: ClassVar[dict[str, float]] = {
        "concurrency": float("inf"),
        "prompt_tokens": float("inf"),
        "output_tokens": float("inf"),
    }
    RANGES_ONLY: ClassVar[frozenset[str]] = frozenset({"prompt_tokens", "output_tokens"})

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
    forecast: Forecast | None = None

    @model_validator(mode="after")
    def _one_arrival(self) -> Workload:
        if (self.concurrency is None) == (self.arrival is None):
            raise ValueError(
                "give exactly one of concurrency (closed loop) and arrival (open loop)"
            )
        output = self.uncertain.get("output_tokens")
        if output is not None and output.high > self.max_output_tokens:
            raise ValueError(
                f"output_tokens: the range reaches {output.high:g} tokens, past "
                f"max_output_tokens ({self.max_output_tokens})"
            )
        return self


#: Each engine's argument for the share of memory it sizes its KV pool from.
MEMORY_FRACTION_FIELDS = {
    "vllm": "gpu_memory_utilization",
    "sglang": "mem_fraction_static",
    "tensorrt-llm": "free_gpu_memory_fraction",
}


class Engine(Record):
    """The serving engine whose start-up memory arithmetic sizes the KV pool.

    The engine's arguments of the same names: vLLM's ``gpu_memory_utilization``, SGLang's
    ``mem_fraction_static`` or TensorRT-LLM's ``free_gpu_memory_fraction`` (each only for its
    engine; left out, the release's default), ``max_num_batched_tokens`` (SGLang's
    ``chunked_prefill_size``, TensorRT-LLM's ``max_num_tokens``), ``max_num_seqs`` (else the
    assumptions' ``max_batch_sequences``). Its block size is the assumptions'
    ``kv_block_tokens``; its KV dtype is the precision's. ``version`` selects the engine's
    measured constants (activation, non-torch and CUDA-graph memory, budget rule) from the data
    file shipped with planner; a release it lacks is planned with the nearest series it has,
    with a warning.
    """

    name: Literal["vllm", "sglang", "tensorrt-llm"]
    version: Annotated[str, Field(strict=True, pattern=r"^[0-9]+\.[0-9]+(\.[0-9]+)?$")]
    gpu_memory_utilization: Fraction | None = None
    mem_fraction_static: Fraction | None = None
    free_gpu_memory_fraction: Fraction | None = None
    max_num_batched_tokens: Count = 8192
    max_model_len: Count | None = None
    max_num_seqs: Count | None = None  # None: the assumptions' max_batch_sequences
    cuda_graphs: bool = True
    chunked_prefill: bool | None = None  # None: the release's default (engines.yaml)

    @model_validator(mode="after")
    def _one_fraction(self) -> Engine:
        own = MEMORY_FRACTION_FIELDS[self.name]
        for engine, name in MEMORY_FRACTION_FIELDS.items():
            if name != own and getattr(self, name) is not None:
                raise ValueError(
                    f"{name} is {engine}'s argument; {self.name} takes {own} for its share of "
                    f"memory"
                )
        return self

    @model_validator(mode="after")
    def _whole_prompts_fit_a_step(self) -> Engine:
        """Without chunked prefill a prompt is prefilled in one step, so vLLM refuses a
        ``max_model_len`` longer than the step's token budget (vLLM
        ``SchedulerConfig._verify_args``: "max_num_batched_tokens is smaller than
        max_model_len")."""
        if (
            self.chunked_prefill is False
            and self.max_model_len is not None
            and self.max_num_batched_tokens < self.max_model_len
        ):
            raise ValueError(
                f"max_num_batched_tokens ({self.max_num_batched_tokens:,}) is smaller than "
                f"max_model_len ({self.max_model_len:,}) with chunked_prefill off: a prompt "
                f"is prefilled in one step, so the engine would refuse longer requests; "
                f"raise max_num_batched_tokens, lower max_model_len or turn chunked_prefill on"
            )
        return self

    @property
    def memory_fraction(self) -> float | None:
        """The share of memory the profile gives its engine (None: the release's default)."""
        value: float | None = getattr(self, MEMORY_FRACTION_FIELDS[self.name])
        return value


class Assumptions(Uncertain):
    """Planning assumptions that apply to every candidate."""

    UNCERTAIN: ClassVar[dict[str, float]] = {
        "bandwidth_efficiency": 1.0,
        "compute_efficiency": 1.0,
        "step_overhead": float("inf"),
        "step_overhead_per_sequence": float("inf"),
        "utilisation": 1.0,
        "electricity_usd_per_kwh": float("inf"),
    }

    runtime_overhead: BytesOrZero
    reserve: BytesOrZero
    bandwidth_efficiency: Fraction = 1.0
    compute_efficiency: Fraction = 1.0
    kv_block_tokens: Count = 16
    step_overhead: Seconds = 0.0
    step_overhead_per_sequence: OptionalSeconds = None  # None: the engine release's
    activation_bytes: Positive = 2.0
    tensor_parallel_sizes: list[Count] = Field(default=[1], min_length=1)
    max_rejected_fraction: Annotated[float, Field(strict=True, ge=0, le=1)] = 0.001
    max_batch_sequences: Count = 256
    engine: Engine | None = None
    simulated_requests: Annotated[int, Field(strict=True, ge=0, le=MAX_SIMULATION_STEPS)] = 2000
    seed: CountOrZero = 0
    margin: Fraction = 0.10
    # the error of a latency estimate at 90 % confidence: uncalibrated, and at least when calibrated
    uncalibrated_band: Fraction = 0.30
    calibrated_band_floor: Fraction = 0.05
    # cost
    electricity_usd_per_kwh: Money | None = None
    pue: Annotated[float, Field(strict=True, ge=1)] = 1.0
    utilisation: Fraction = 1.0
    amortisation_months: Count = 36
    devices_per_node: Count = 8
    node_overhead_usd: Money = 0.0
    hosting_usd_per_node_month: Money = 0.0
    # facility limits: peak board power a rack may draw, and the site's peak (× PUE)
    rack_power: OptionalPower = None
    site_power: OptionalPower = None
    # planning over time
    lead_time_months: Annotated[int, Field(strict=True, ge=0, le=60)] = 0
    discount_rate_per_year: Annotated[float, Field(strict=True, ge=0, le=1)] = 0.0
    lease_rate_per_year: Annotated[float, Field(strict=True, ge=0, le=1)] | None = None
    lease_term_months: Annotated[int, Field(strict=True, ge=1, le=240)] | None = Field(
        default=None, validate_default=True
    )
    hours_per_month: Positive = 730.0
    #: the paper the report is laid out for (A4, or US Letter)
    paper: Literal["A4", "Letter"] = "A4"

    @field_validator("lease_term_months")
    @classmethod
    def _lease_in_full(cls, term: int | None, info: ValidationInfo) -> int | None:
        """A lease is priced by its rate and its term together; one without the other would
        drop the lease comparison without a word."""
        rate = info.data.get("lease_rate_per_year")
        if (rate is None) != (term is None):
            given, missing = (
                ("lease_rate_per_year", "lease_term_months")
                if term is None
                else ("lease_term_months", "lease_rate_per_year")
            )
            raise ValueError(
                f"{given} is given without {missing}: a lease is priced by its rate and its "
                f"term together; give both, or neither to leave the lease out"
            )
        return term

    @field_validator("engine")
    @classmethod
    def _engine_batch(cls, engine: Engine | None, info: ValidationInfo) -> Engine | None:
        """vLLM refuses to start when a step's token budget is smaller than the sequences it
        may batch (``max_num_batched_tokens (X) must be greater than or equal to max_num_seqs
        (Y)``: vLLM ``SchedulerConfig._verify_args``), since each running sequence takes at
        least one token of every step."""
        if engine is None or engine.name != "vllm":
            return engine
        own = engine.max_num_seqs is not None
        limit = engine.max_num_seqs if own else info.data.get("max_batch_sequences")
        if limit is not None and engine.max_num_batched_tokens < limit:
            source = "max_num_seqs" if own else "the assumptions' max_batch_sequences"
            raise ValueError(
                f"max_num_batched_tokens ({engine.max_num_batched_tokens:,}) is smaller than "
                f"{source} ({limit:,}): vLLM refuses to start, since every running sequence "
                f"takes at least one token of each step"
            )
        return engine

    @property
    def batch_limit(self) -> int:
        """The most sequences a replica decodes at once: the engine profile's ``max_num_seqs``,
        else ``max_batch_sequences``."""
        if self.engine is not None and self.engine.max_num_seqs is not None:
            return self.engine.max_num_seqs
        return self.max_batch_sequences


class Scenario(Entry):
    """A subset to cross; an omitted list means every entry of that file (an empty one would
    select nothing, and is refused)."""

    hardware: list[Id] | None = Field(default=None, min_length=1)
    models: list[Id] | None = Field(default=None, min_length=1)
    precisions: list[Id] | None = Field(default=None, min_length=1)
    workloads: list[Id] | None = Field(default=None, min_length=1)


class ApiOffer(Entry):
    """A hosted API that serves one model of ``models.yaml``, at its list price per million
    tokens in and out; ``as_of`` is the date the price was read (prices move), ``source`` where,
    and ``max_context_tokens`` the longest request it accepts (prompt + output), if it limits it."""

    model: Id
    input_usd_per_million_tokens: Money
    output_usd_per_million_tokens: Money
    as_of: dt.date
    max_context_tokens: Count | None = None  # the API's limit on prompt + output tokens


class Serve(Record):
    """One line of the deployment plan: ``model`` serves ``workload``."""

    workload: Id
    model: Id


class Deployment(Record):
    """Which model serves which workload (a workload left out is served by its cheapest model),
    and who prepared the plan (for the report's approval block)."""

    prepared_by: Text | None = None
    serve: list[Serve] = Field(default_factory=list)


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


class DeploymentFile(Record):
    deployment: Deployment


class ApiOffersFile(Record):
    api_offers: list[ApiOffer] = Field(min_length=1)


#: The figures of a calibration point that are latencies (the error band is fitted to these).
#: The measured latency and throughput statistics a calibration fits, each against the plan's
#: metric of the same definition (planner.measure.compare.COMPARED).
LATENCY_FIGURES = (
    "itl_s.p50",
    "itl_s.mean",
    "tpot_s.mean",
    "tpot_s.p50",
    "ttft_s.p50",
    "ttft_s.mean",
    "e2e_s.p50",
    "e2e_s.mean",
    "output_throughput",
    "output_throughput.mean",
    "request_throughput",
    "request_throughput.mean",
)

#: An efficiency as fitted: within the bounds a hand-written one has, (0, 1]. A fit past 1
#: says the device moved more bytes (or FLOP) than its datasheet allows, so the measurement or
#: the model's count of bytes is wrong: ``planner calibrate`` refuses it rather than write it.
FittedEfficiency = Fraction


def _engine_series(value: str) -> str:
    if not re.fullmatch(r"[a-z0-9_-]+ [0-9]+\.[0-9]+", value):
        raise ValueError(
            f"expected an engine and its release series, e.g. 'vllm 0.10' (as planner "
            f"calibrate writes it); got {value!r}"
        )
    return value


_Figure = Annotated[str, Field(strict=True, pattern=r"^[a-z0-9_.]+$", max_length=100)]


def _relative_error(estimate: float, measured: float) -> float:
    """estimate ÷ measured − 1 (0 for a measured 0 that is estimated exactly)."""
    if measured == 0:
        return 0.0 if estimate == 0 else float("inf")
    return estimate / measured - 1


class CalibrationPoint(Record):
    """A measured figure a fit used, with the value the fit gives it and the value a fit
    without it predicts (its held-out estimate)."""

    measurement: Id
    figure: _Figure
    # every figure compared is a time, a rate or a size: a measured 0 or less is not a measurement
    measured: Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)]
    fitted: Annotated[float, Field(strict=True, ge=0, allow_inf_nan=False)]
    held_out: Annotated[float, Field(strict=True, allow_inf_nan=False)] | None = None
    # as ``planner calibrate`` prints them; recomputed, never read
    error: Text | None = None
    held_out_error: Text | None = None

    @property
    def error_fraction(self) -> float:
        """fitted ÷ measured − 1 (0 for a measured 0 that is fitted exactly)."""
        return _relative_error(self.fitted, self.measured)

    @property
    def held_out_error_fraction(self) -> float | None:
        """held-out estimate ÷ measured − 1; None where the file gives no held-out estimate."""
        return None if self.held_out is None else _relative_error(self.held_out, self.measured)


class UnusedPoint(Record):
    """A measured figure a fit did not use, and why."""

    measurement: Id
    figure: _Figure
    reason: Text


class Calibration(Record):
    """The figures fitted to measurements of one hardware × engine release series, as
    ``planner calibrate`` writes them, with the points they were fitted to, those they were
    not, and what the points could not tell apart."""

    hardware: Id
    engine: Annotated[str, Field(strict=True, max_length=100), AfterValidator(_engine_series)]
    bandwidth_efficiency: FittedEfficiency | None = None
    step_overhead: OptionalSeconds = None
    compute_efficiency: FittedEfficiency | None = None
    activation_scale: Positive | None = None
    non_torch: OptionalBytes = None
    non_torch_tensor_parallel: OptionalBytes = None
    points: list[CalibrationPoint] = Field(default=[], max_length=10_000)
    unused: list[UnusedPoint] = Field(default=[], max_length=10_000)
    notes: list[Text] = Field(default=[], max_length=100)

    FITTED: ClassVar[tuple[str, ...]] = (
        "bandwidth_efficiency",
        "step_overhead",
        "compute_efficiency",
        "activation_scale",
        "non_torch",
        "non_torch_tensor_parallel",
    )

    @model_validator(mode="after")
    def _fitted_to_points(self) -> Calibration:
        """A calibrated figure is one fitted to measured points: figures without the points
        they were fitted to are assumptions, and belong in assumptions.yaml, where the report
        shows them as assumed."""
        fitted = [name for name in self.FITTED if getattr(self, name) is not None]
        if fitted and not self.points:
            raise ValueError(
                f"gives {', '.join(fitted)} but no measured points they were fitted to; "
                f"planner calibrate writes both, and a figure set by hand belongs in "
                f"assumptions.yaml, where the report shows it as assumed, not calibrated"
            )
        return self

    def latency_points(self) -> list[CalibrationPoint]:
        return [p for p in self.points if p.figure in LATENCY_FIGURES]

    def held_out(self) -> bool:
        """Whether every latency point carries its held-out estimate (the band then comes from
        those; a calibration written before held-out estimates has only in-sample errors)."""
        points = self.latency_points()
        return bool(points) and all(p.held_out is not None for p in points)

    def latency_rms_fraction(self) -> float | None:
        """Root mean square of the latency points' relative errors, held out where every point
        has its held-out estimate, else in-sample (None without a latency point)."""
        points = self.latency_points()
        if not points:
            return None
        held_out = self.held_out()
        errors = [p.held_out_error_fraction if held_out else p.error_fraction for p in points]
        return float(sum(e * e for e in errors if e is not None) / len(errors)) ** 0.5


class CalibrationFile(Record):
    calibration: list[Calibration] = Field(min_length=1, max_length=10_000)


SCHEMAS: dict[str, type[Record]] = {
    "hardware": HardwareFile,
    "models": ModelsFile,
    "precisions": PrecisionsFile,
    "workloads": WorkloadsFile,
    "assumptions": AssumptionsFile,
    "scenarios": ScenariosFile,
    "api_offers": ApiOffersFile,
    "deployment": DeploymentFile,
    "calibration": CalibrationFile,
}


def quantity_fields() -> dict[str, str]:
    """Every field of the catalogs' records that holds a quantity with a unit: its name → its
    kind (``time``, ``bytes``...), read off the field types themselves."""
    found: dict[str, str] = {}
    records = [v for v in globals().values() if isinstance(v, type) and issubclass(v, BaseModel)]
    for record in records:
        for name, info in record.model_fields.items():
            for meta in info.metadata:
                parser = getattr(meta, "func", None)
                if isinstance(parser, _Quantity):
                    found[name] = parser.kind
    return found
