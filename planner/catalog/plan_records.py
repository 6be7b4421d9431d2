"""The records that set up a plan: the assumptions every candidate shares, the serving engine's
profile, scenarios (subsets to cross), hosted API offers to compare with, and the deployment
plan (which model serves which workload).
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from planner.catalog.acceptance import ACCEPTANCE_DEFAULTS
from planner.catalog.fields import (
    BytesOrZero,
    Count,
    CountOrZero,
    Entry,
    Fraction,
    Id,
    Money,
    OptionalPower,
    OptionalSeconds,
    Positive,
    Record,
    Seconds,
    Text,
    Uncertain,
)

#: The most steps one simulation may take (each a step of its Python event loop, some 10⁴ to
#: 10⁵ a second here): every request takes a prefill step at least, so this bounds
#: ``simulated_requests`` too, and a run stays within minutes.
MAX_SIMULATION_STEPS = 300_000

#: Each engine's argument for the share of memory it sizes its KV pool from.
MEMORY_FRACTION_FIELDS = {
    "vllm": "gpu_memory_utilization",
    "sglang": "mem_fraction_static",
    "tensorrt-llm": "free_gpu_memory_fraction",
}


#: The most tokens a speculative step may propose per sequence (engines take a handful; SGLang's
#: EAGLE default is 5 steps, vLLM's examples up to 7).
MAX_PROPOSED_TOKENS = 32


class Speculative(Uncertain):
    """Speculative decoding on the engine: a proposer guesses ``proposed_tokens`` tokens per
    sequence each step and the target model verifies them in one forward pass.

    ``method``: ``draft`` (a smaller model of ``models.yaml``, ``draft_model``), ``eagle`` (an
    EAGLE head: one decoder layer over the target's features, sharing its LM head) or ``mtp``
    (the model's own multi-token-prediction layers, DeepSeek-V3's). For ``eagle`` and ``mtp``,
    ``draft_parameters`` counts the head's own weights (the shared LM head not included) and
    ``draft_layers`` the layers of the target's attention shape it caches (1 for an EAGLE head
    and DeepSeek-V3's MTP module). ``acceptance_rate`` is the share of proposed tokens accepted,
    each independently (else the method's shipped figure, planner/catalog/acceptance.py; a
    draft model has none); ``acceptance_by_workload`` overrides it for the workloads it names.
    ``models`` lists the target models it applies to (a draft or head serves one family; left
    out: every model).
    """

    UNCERTAIN: ClassVar[dict[str, float]] = {"acceptance_rate": 1.0}

    method: Literal["draft", "eagle", "mtp"]
    proposed_tokens: Annotated[int, Field(strict=True, ge=1, le=MAX_PROPOSED_TOKENS)]
    draft_model: Id | None = None
    draft_parameters: Count | None = None
    draft_layers: Count | None = None
    acceptance_rate: Fraction | None = None
    acceptance_by_workload: dict[Id, Fraction] = Field(default_factory=dict)
    models: list[Id] | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _proposer_described(self) -> Speculative:
        """A draft model is named and nothing else; a head or MTP layers give their size."""
        if self.method == "draft":
            if self.draft_model is None:
                raise ValueError(
                    "draft_model: expected an id of models.yaml for method 'draft' (the model "
                    "that proposes the tokens)"
                )
            for name in ("draft_parameters", "draft_layers"):
                if getattr(self, name) is not None:
                    raise ValueError(
                        f"{name}: only for methods 'eagle' and 'mtp'; method 'draft' reads its "
                        f"size from draft_model {self.draft_model!r} in models.yaml"
                    )
            if self.acceptance_rate is None:
                raise ValueError(
                    "acceptance_rate: expected a fraction for method 'draft' (no shipped "
                    "default: a draft model's acceptance depends on the pair and the text; "
                    "measure it, e.g. vLLM's spec_decode acceptance metrics)"
                )
            return self
        if self.draft_model is not None:
            raise ValueError(
                f"draft_model: only for method 'draft'; method {self.method!r} gives "
                f"draft_parameters (its own weights) instead"
            )
        if self.draft_parameters is None:
            raise ValueError(
                f"draft_parameters: expected the parameter count of the {self.method} "
                f"proposer's own weights (e.g. 250000000), the shared LM head not included"
            )
        return self

    @property
    def default_acceptance_rate(self) -> float:
        """The acceptance rate the profile gives, else its method's shipped figure."""
        if self.acceptance_rate is not None:
            return self.acceptance_rate
        return ACCEPTANCE_DEFAULTS[self.method].rate

    def applies_to(self, model: str) -> bool:
        """Whether the target ``model`` is served with speculation."""
        return self.models is None or model in self.models


class Engine(Record):
    """The serving engine whose start-up memory arithmetic sizes the KV pool.

    The engine's arguments of the same names: vLLM's ``gpu_memory_utilization``, SGLang's
    ``mem_fraction_static`` or TensorRT-LLM's ``free_gpu_memory_fraction`` (each only for its
    engine; left out, the release's default), ``max_num_batched_tokens`` (SGLang's
    ``chunked_prefill_size``, TensorRT-LLM's ``max_num_tokens``), ``max_num_seqs`` (else the
    assumptions' ``max_batch_sequences``). Its block size is the assumptions'
    ``kv_block_tokens``; its KV dtype is the precision's. ``prefix_caching``: whether it keeps
    the cache of prompts' prefixes for later requests (vLLM ``enable_prefix_caching``, SGLang's
    radix cache, TensorRT-LLM ``enable_block_reuse``; left out, the release's default), reused
    in whole blocks of ``kv_block_tokens`` (vLLM hashes full blocks only). ``version`` selects
    the engine's measured constants (activation, non-torch and CUDA-graph memory, budget rule)
    from the data file shipped with planner; a release it lacks is planned with the nearest
    series it has, with a warning.
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
    speculative: Speculative | None = None  # None: every step emits one token
    # None: the release's default (engines.yaml); cached in whole kv_block_tokens blocks
    prefix_caching: bool | None = None

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
    # expert parallelism with data-parallel attention: 1 is today's tensor-parallel replica only;
    # a size above 1 also tries that many devices a replica, each holding 1/size of the routed
    # experts and serving sequences of its own, for a mixture-of-experts model whose experts
    # divide by it, within one node or over whole nodes (the all-to-all to the other nodes over
    # the network). The imbalance is SGLang's EP 32 prefill, 59,337 ÷ 50,302 tokens/s a node with
    # perfect balance against DeepSeek-V3's default placement (lmsys.org, 2025-05-05), 1.1796 to
    # two places; the dispatch is DeepEP's FP8 with one FP32 scale per 128 values (1 + 4/128);
    # overlap 1 is DeepSeek-V3's two micro-batches (§3.4), hiding the all-to-all under a decode
    # step's and a prompt's arithmetic; 0 adds it to them
    expert_parallel_sizes: list[Count] = Field(default=[1], min_length=1)
    expert_imbalance: Annotated[float, Field(strict=True, ge=1)] = 1.18
    expert_dispatch_bytes_per_value: Positive = 1 + 4 / 128
    expert_overlap: Annotated[float, Field(strict=True, ge=0, le=1)] = 0.0
    # redundant expert slots of an expert-parallel replica: the load balancer (EPLB) places
    # copies of the busiest experts in them, so each device holds (experts + redundant) ÷ EP
    # experts and EP need only divide that sum (DeepSeek-V3 §3.4; SGLang's EP 72 ran 256 + 32
    # = 288 slots, 4 a device; SGLang --ep-num-redundant-experts, vLLM's eplb-config
    # num_redundant_experts); 0: one copy of each expert
    redundant_experts: Annotated[int, Field(strict=True, ge=0, le=4096)] = 0
    # pipeline parallelism across nodes: 1 is one stage only; a size above 1 also tries a
    # replica of that many nodes of a linked device, tensor parallel within each node and the
    # layers split between the nodes, each token passing them in turn over the network (vLLM's
    # --pipeline-parallel-size; Megatron-LM, Narayanan et al. 2021); tried where the
    # tensor-parallel sizes within a node meet no target (the pruning of larger replicas)
    pipeline_parallel_sizes: list[Count] = Field(default=[1], min_length=1)
    # disaggregated prefill and decode: "aggregated" alone is one pool of replicas doing both;
    # with "disaggregated" every candidate is also tried as a prefill pool and a decode pool of
    # its hardware and layout, each request's KV cache sent from the one to the other over the
    # network (DistServe, OSDI 2024); a device without network_bandwidth sends it at 50 GB/s, one
    # CX7 400 Gb/s card a device (DeepEP's docs, "~50 GB/s maximum bandwidth")
    serving_layouts: list[Literal["aggregated", "disaggregated"]] = Field(
        default=["aggregated"], min_length=1
    )
    # the devices a disaggregated candidate's prefill pool may also run on (ids of
    # hardware.yaml): each is tried beside the pool on the decode pool's own device, the prompts
    # on one device type and the generation on another (compute-rich prefill, bandwidth-rich
    # decode: DistServe, OSDI 2024, §3; Splitwise, ISCA 2024); [] tries the decode pool's own only
    prefill_pool_hardware: list[Id] = Field(default_factory=list)
    # the devices a disaggregated candidate's prefill replicas may also take, beside its decode
    # replicas' own, in its kind of parallelism: an expert-parallel candidate's prefill pool at
    # each expert-parallel size that splits the expert slots and is one node or whole nodes
    # (SGLang's 96 H100s ran prefill at EP 32 beside decode at EP 72; DeepSeek's EP 32 beside
    # EP 144), a tensor-parallel one's at each of these sizes within a node (DistServe, OSDI
    # 2024, §4: each phase its own parallelism); [] keeps the decode replicas' size for both
    prefill_parallel_sizes: list[Count] = Field(default_factory=list)
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
    tokens in and out (``cached_input_usd_per_million_tokens``: input tokens served from its
    prompt cache, where it prices them apart); ``as_of`` is the date the price was read (prices
    move), ``source`` where, and ``max_context_tokens`` the longest request it accepts (prompt +
    output), if it limits it."""

    model: Id
    input_usd_per_million_tokens: Money
    output_usd_per_million_tokens: Money
    # the price of input tokens served from the API's prompt cache (left out: the full price)
    cached_input_usd_per_million_tokens: Money | None = None
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
