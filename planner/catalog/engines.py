"""Serving engines' memory constants by release series, read from a sourced data file.

At start-up vLLM measures what a KV pool must leave room for: the weights, the activation peak of
one forward pass over ``max_num_batched_tokens`` tokens, memory allocated outside PyTorch (CUDA
context, NCCL buffers) and, in recent releases, CUDA graphs. Those amounts move between releases,
so each release series has its own constants in ``engines.yaml`` beside this module, each with the
public sources they were read from or fitted to. :func:`constants_for` picks the series of an
:class:`~planner.catalog.records.Engine` profile (``0.10.1`` → ``0.10``).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Annotated

from pydantic import Field

from planner.catalog.records import Bytes, BytesOrZero, Engine, Positive, Record, Text
from planner.catalog.yamlsafe import load

#: The data file of engine constants, shipped with the package.
DATA_FILE = Path(__file__).with_name("engines.yaml")


class EngineSeries(Record):
    """One release series' memory constants (the units say what each is)."""

    activation_scale: Positive
    sampler_bytes_per_logit: Annotated[float, Field(strict=True, ge=0)]
    non_torch: Bytes
    non_torch_tensor_parallel: Bytes
    cuda_graphs: BytesOrZero
    cuda_graphs_in_budget: bool
    chunked_prefill: bool
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


def known_series(name: str) -> list[str]:
    """The series the data file has constants for, for an engine name (none when unknown)."""
    return list(_engines().engines.get(name, {}))


def constants_for(engine: Engine) -> EngineSeries | None:
    """The constants of the engine's release series, or None when the data file lacks it."""
    return _engines().engines.get(engine.name, {}).get(series_of(engine.version))


#: The newest vLLM release series whose constants planner ships.
LATEST_VLLM = "0.11"

#: The engine profile used for the engine's figures when the catalog names none: vLLM's
#: defaults on the newest release series with constants (the budget then stays the planner's).
DEFAULT_ENGINE = Engine(name="vllm", version=LATEST_VLLM)


def prefills_in_chunks(engine: Engine | None) -> bool:
    """Whether the engine prefills prompts in chunks of its ``max_num_batched_tokens`` step
    budget: its profile's ``chunked_prefill``, else its release's default (engines.yaml; the
    default engine when none is named)."""
    chosen = DEFAULT_ENGINE if engine is None else engine
    if chosen.chunked_prefill is not None:
        return chosen.chunked_prefill
    constants = constants_for(chosen)
    return constants is not None and constants.chunked_prefill


def engine_series(engine: Engine | None) -> str:
    """The release series a profile runs, as calibrations name it (``vllm 0.11``); the default
    engine's for none."""
    chosen = DEFAULT_ENGINE if engine is None else engine
    return f"{chosen.name} {series_of(chosen.version)}"
