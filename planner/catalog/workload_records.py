"""The records of a workload: its token lengths (a count, a summary, samples or a CSV column),
its arrivals, its latency targets and the forecast of its traffic over the planning horizon.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field, model_validator

from planner.catalog.fields import (
    MAX_SAMPLES,
    Count,
    CountOrZero,
    Entry,
    Fraction,
    OptionalRate,
    OptionalSeconds,
    Positive,
    Record,
    Seconds,
    Text,
    Uncertain,
    printable,
)


class LengthDistribution(Record):
    """Token lengths as a summary (mean, p95, max), a list of samples, or a CSV column."""

    mean: Positive | None = None
    p95: Positive | None = None
    max: Count | None = None
    samples: list[Count] | None = Field(default=None, min_length=1, max_length=MAX_SAMPLES)
    file: Annotated[str, Field(strict=True, pattern=r"^[A-Za-z0-9._/-]+\.csv$")] | None = None
    column: Annotated[str, Field(strict=True, max_length=100), AfterValidator(printable)] | None = (
        None
    )

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
    column: Annotated[str, Field(max_length=100), AfterValidator(printable)] | None = None
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


class Prefix(Uncertain):
    """What a workload's prompts share, that an engine with prefix caching need not prefill
    again. Each is a mean over the workload's requests, in tokens:

    - ``shared_tokens``: the tokens every request begins with, the same for all (a system
      prompt, tool definitions, few-shot examples);
    - ``history_tokens``: the tokens of a request's prompt that repeat its own task's previous
      request, its prompt and answer (an agent's trace, a conversation's earlier turns), the
      first request of a task counted with none; needs ``requests_per_task`` > 1;
    - ``document_tokens`` and ``questions_per_document``: one document asked that many
      questions, each a request of its own; the first prefills it, the others find it cached;
    - ``measured_hit_ratio``: the share of prompt tokens the engine's cache served, as measured
      (vLLM's ``prefix_cache_hits`` ÷ ``prefix_cache_queries``, a benchmark's cached-token
      count); given, it is planned with instead of the ratio computed from the others.

    The pieces are taken as one prefix in that order (shared, document, history); an engine
    caches it in whole blocks of the assumptions' ``kv_block_tokens``. ``measured_hit_ratio``
    may be a distribution, which ``planner run --draws`` samples.
    """

    UNCERTAIN: ClassVar[dict[str, float]] = {"measured_hit_ratio": 1.0}

    shared_tokens: CountOrZero = 0
    history_tokens: CountOrZero = 0
    document_tokens: CountOrZero = 0
    questions_per_document: Count = 1
    measured_hit_ratio: Annotated[float, Field(strict=True, ge=0, le=1)] | None = None

    @model_validator(mode="after")
    def _document_asked(self) -> Prefix:
        if self.document_tokens > 0 and self.questions_per_document < 2:
            raise ValueError(
                f"document_tokens ({self.document_tokens:,}) is given with "
                f"questions_per_document {self.questions_per_document}: a document asked one "
                f"question is never found cached; give the questions asked of each document "
                f"(2 or more), or leave document_tokens out"
            )
        return self

    @property
    def tokens(self) -> int:
        """The prefix's tokens: shared + document + history [tokens]."""
        return self.shared_tokens + self.document_tokens + self.history_tokens


def mean_prompt(lengths: Lengths) -> float | None:
    """The mean prompt where the record itself says it (a count, a summary, samples); None for
    a CSV column, read only when the catalog loads its files [tokens]."""
    if isinstance(lengths, int):
        return float(lengths)
    if lengths.mean is not None:
        return float(lengths.mean)
    if lengths.samples is not None:
        return sum(lengths.samples) / len(lengths.samples)
    return None


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
    prefix: Prefix | None = None
    #: prompts longer than this may be served apart from the others, on devices of their own
    #: (the shared fleet weighs both ways: one pool for the whole mix, or a pool per length)
    long_prompt_tokens: Count | None = None

    @model_validator(mode="after")
    def _routable(self) -> Workload:
        """Routing by length splits an open-loop stream of single requests by prompt."""
        if self.long_prompt_tokens is None:
            return self
        if self.arrival is None or self.arrival.pattern == "trace" or self.requests_per_task > 1:
            raise ValueError(
                "long_prompt_tokens routes each request by its prompt's length: it needs an "
                "arrival rate (poisson or bursty) and one request per task; leave it out for "
                "a closed loop, a trace or an agent"
            )
        return self

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

    @model_validator(mode="after")
    def _prefix_fits(self) -> Workload:
        """A prefix is part of the prompt: it must fit within the mean prompt, and history
        needs a task of several requests."""
        if self.prefix is None:
            return self
        if self.prefix.history_tokens > 0 and self.requests_per_task < 2:
            raise ValueError(
                f"prefix.history_tokens ({self.prefix.history_tokens:,}) repeats a task's "
                f"previous request, but requests_per_task is {self.requests_per_task}: give "
                f"the requests each task (or conversation) sends, or leave history_tokens out"
            )
        prompt = mean_prompt(self.prompt_tokens)
        if prompt is not None and self.prefix.tokens > prompt:
            raise ValueError(
                f"prefix: shared_tokens + document_tokens + history_tokens is "
                f"{self.prefix.tokens:,} tokens, more than the mean prompt ({prompt:,g} "
                f"tokens) they are part of"
            )
        return self
