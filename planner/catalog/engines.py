"""Serving engines' memory constants by release series, read from a sourced data file.

At start-up vLLM measures what a KV pool must leave room for: the weights, the activation peak of
one forward pass over ``max_num_batched_tokens`` tokens, memory allocated outside PyTorch (CUDA
context, NCCL buffers) and, in recent releases, CUDA graphs. Those amounts move between releases,
so each release series has its own constants in ``engines.yaml`` beside this module, each with the
public sources they were read from or fitted to, and the rule its engine sizes its pool by (vLLM,
SGLang and TensorRT-LLM each take their fraction of a different amount). :func:`constants_for`
picks the series of an :class:`~planner.catalog.records.Engine` profile (``0.10.1`` → ``0.10``),
or the nearest listed one, which :func:`series_warning` then says.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from planner.catalog.fields import BytesOrZero, Fraction, Positive, Record, Seconds, Text
from planner.catalog.plan_records import Assumptions, Engine
from planner.catalog.yamlsafe import load

#: The data file of engine constants, shipped with the package.
DATA_FILE = Path(__file__).with_name("engines.yaml")


#: What each engine's memory fraction is a share of, as the number the Assumptions sheet holds.
BUDGET_RULES = {"device": 1, "free-before-weights": 2, "free-after-profile": 3}

#: How the share is chosen when the profile gives none, as the Assumptions sheet's number.
FRACTION_RULES = {"fixed": 0, "sglang-tp": 1, "sglang-reserve": 2}


class EngineSeries(Record):
    """One release series' memory constants and budget rule (the units say what each is)."""

    budget: Literal["device", "free-before-weights", "free-after-profile"]
    memory_fraction: Fraction | None = None
    fraction_rule: Literal["fixed", "sglang-tp", "sglang-reserve"] = "fixed"
    activation_scale: Positive
    sampler_bytes_per_logit: Annotated[float, Field(strict=True, ge=0)]
    non_torch: BytesOrZero
    non_torch_tensor_parallel: BytesOrZero
    cuda_graphs: BytesOrZero
    cuda_graphs_in_budget: bool
    chunked_prefill: bool
    prefix_caching: bool
    step_overhead_per_sequence: Seconds
    sources: Annotated[list[Text], Field(min_length=1)]


class EnginesFile(Record):
    """Every engine's series, by engine name and then series (``"0.10"``)."""

    engines: dict[str, dict[str, EngineSeries]]


@cache
def _engines() -> EnginesFile:
    return EnginesFile.model_validate(load(DATA_FILE.read_text(encoding="utf-8")).data)


def series_of(version: str) -> str:
    """The release series of a version: its first two numbers (``0.10.1`` → ``0.10``)."""
    return ".".join(version.split(".")[:2])


def _number(series: str) -> tuple[int, ...]:
    return tuple(int(part) for part in series.split("."))


def known_series(name: str) -> list[str]:
    """The series the data file has constants for, for an engine name (none when unknown),
    oldest first."""
    return sorted(_engines().engines.get(name, {}), key=_number)


def nearest_series(name: str, version: str) -> str:
    """The listed series of ``name`` nearest to ``version``'s: its own where listed; else of
    the listed series just below and just above it, the one of its own major release nearer
    in minor number (the older on a tie, or where neither shares its major); past either end
    of the list, the end."""
    known = known_series(name)
    wanted = _number(series_of(version))
    below = [s for s in known if _number(s) <= wanted]
    above = [s for s in known if _number(s) > wanted]
    if not below or not above:
        return (below or above)[-1 if below else 0]
    lower, upper = below[-1], above[0]
    if _number(lower) == wanted:
        return lower
    same = [s for s in (lower, upper) if _number(s)[0] == wanted[0]]
    if len(same) == 2:
        return min(same, key=lambda s: (abs(_number(s)[1] - wanted[1]), _number(s)))
    return same[0] if same else lower


def constants_for(engine: Engine) -> EngineSeries:
    """The constants of the engine's release series, or of the nearest listed one."""
    return _engines().engines[engine.name][nearest_series(engine.name, engine.version)]


def is_listed(engine: Engine) -> bool:
    """Whether the data file has the engine's own release series."""
    return series_of(engine.version) in known_series(engine.name)


def series_warning(engine: Engine) -> str | None:
    """What a reader must know when the engine's release has no constants of its own: which
    series it is planned with (None when it has its own)."""
    if is_listed(engine):
        return None
    used = nearest_series(engine.name, engine.version)
    return (
        f"{engine.name} {engine.version} has no memory constants of its own: planned with "
        f"those of {engine.name} {used}, the nearest known series (known: "
        f"{', '.join(known_series(engine.name))}); check the pool against a start-up log"
    )


#: The newest vLLM release series whose constants planner ships.
LATEST_VLLM = known_series("vllm")[-1]

#: The engine profile used for the engine's figures when the catalog names none: vLLM's
#: defaults on the newest release series with constants (the budget then stays the planner's).
DEFAULT_ENGINE = Engine(name="vllm", version=LATEST_VLLM)


def memory_fraction(engine: Engine) -> float:
    """The share of memory the engine sizes its pool from, as the profile gives it, else its
    release's fixed default; 0 where the engine computes its own (SGLang's default rules,
    :func:`planner.model.engine.engine_memory_fraction`)."""
    if engine.memory_fraction is not None:
        return engine.memory_fraction
    constants = constants_for(engine)
    return 0.0 if constants.memory_fraction is None else constants.memory_fraction


def step_overhead_per_sequence(assumptions: Assumptions) -> float:
    """The time per sequence decoding in a step [s]: the assumptions', else the engine
    release's (engines.yaml; the default engine's when the catalog names none)."""
    if assumptions.step_overhead_per_sequence is not None:
        return assumptions.step_overhead_per_sequence
    engine = DEFAULT_ENGINE if assumptions.engine is None else assumptions.engine
    return constants_for(engine).step_overhead_per_sequence


def prefills_in_chunks(engine: Engine | None) -> bool:
    """Whether the engine prefills prompts in chunks of its ``max_num_batched_tokens`` step
    budget: its profile's ``chunked_prefill``, else its release's default (engines.yaml; the
    default engine when none is named)."""
    chosen = DEFAULT_ENGINE if engine is None else engine
    if chosen.chunked_prefill is not None:
        return chosen.chunked_prefill
    return constants_for(chosen).chunked_prefill


def caches_prefixes(engine: Engine | None) -> bool:
    """Whether the engine keeps prompts' cached blocks for later requests with the same prefix:
    its profile's ``prefix_caching``, else its release's default (engines.yaml; the default
    engine when none is named)."""
    chosen = DEFAULT_ENGINE if engine is None else engine
    if chosen.prefix_caching is not None:
        return chosen.prefix_caching
    return constants_for(chosen).prefix_caching


def engine_series(engine: Engine | None) -> str:
    """The release series a profile runs, as calibrations name it (``vllm 0.11``); the default
    engine's for none."""
    chosen = DEFAULT_ENGINE if engine is None else engine
    return f"{chosen.name} {series_of(chosen.version)}"
