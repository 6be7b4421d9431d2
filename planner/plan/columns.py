"""The vocabulary of the input tables: the key columns, a sheet column (:class:`Column`), a
lookup from a sheet into the plan (:class:`Lookup`), and the tables themselves
(:class:`InputTables`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

#: Plan columns that identify a candidate; each id names the input sheet it is looked up in.
KEYS: dict[str, str] = {
    "hardware": "Hardware",
    "model": "Models",
    "precision": "Precisions",
    "workload": "Workloads",
}

#: A key that is a number, not an id: the devices one replica spans (tensor parallel size).
TP_KEY = "tensor_parallel"

ALL_KEYS = [*KEYS, TP_KEY]

#: The layout beyond tensor parallelism: the expert-parallel size of a replica whose devices
#: (``tensor_parallel`` of them) each hold a share of the routed experts and serve sequences of
#: their own (data-parallel attention); 1 for a tensor-parallel replica.
EP_KEY = "expert_parallel"

#: Pipeline stages of a replica: its ``tensor_parallel`` devices in that many stages of
#: ``tensor_parallel ÷ stages`` tensor-parallel devices each (a node each), every stage holding
#: its share of the layers, each token passing the stages in turn; 1 for one stage.
PP_KEY = "pipeline_parallel"


def pipeline_stages(row: Any) -> int:
    """The pipeline stages of a row's replica (a results row or any mapping with
    ``pipeline_parallel``): 1 for one stage, or where it has no such column."""
    value = float(row.get(PP_KEY, 1))
    return int(value) if math.isfinite(value) and value > 1 else 1


#: The serving layout: 1 where prompts run on a prefill pool and generation on a decode pool of
#: the candidate's hardware and layout, each request's KV cache sent from one to the other; 0
#: where one pool of replicas does both.
PD_KEY = "disaggregated"

#: The devices of a disaggregated candidate's prefill replica where they differ from its decode
#: replica's (``prefill_parallel_sizes`` assumption), in the candidate's kind of parallelism:
#: its expert-parallel size for an expert-parallel candidate (SGLang's EP 32 prefill beside EP
#: 72 decode), its tensor-parallel size for a tensor-parallel one (DistServe's prefill at TP 4
#: beside decode at TP 2); 0 everywhere else, the prefill pool of the candidate's own layout.
PX_KEY = "prefill_parallel"

#: The layout keys' values for one pool of tensor-parallel replicas, today's layout.
LAYOUT_DEFAULTS = {EP_KEY: 1, PP_KEY: 1, PD_KEY: 0, PX_KEY: 0}

#: The device a disaggregated candidate's prefill pool runs on where that is another device
#: than its own hardware (``prefill_pool_hardware`` assumption); blank everywhere else. A
#: Plan row copied for another device, its ``hardware`` retyped, then prompts on that device.
PF_KEY = "prefill_hardware"

#: The hardware the prompts run on, looked up in the Hardware sheet as ``hardware`` is: the
#: row's :data:`PF_KEY`, else its own hardware (a metric of the keys).
PROMPTS_KEY = "prompts_hardware"

#: The key columns of a plan table: the five of :data:`ALL_KEYS`, the layout (the prefill
#: pool's own expert-parallel size among it) and the prefill pool's hardware.
PLAN_KEYS = [*ALL_KEYS, EP_KEY, PP_KEY, PD_KEY, PX_KEY, PF_KEY]


def prefill_hardware_of(row: Any) -> str:
    """A row's :data:`PF_KEY` (a results row or any mapping): the other device its prefill pool
    runs on, ``""`` where its prompts run on its own hardware (or it has no such column)."""
    value = row.get(PF_KEY) if hasattr(row, "get") else None
    if not isinstance(value, str) or value == str(row["hardware"]):
        return ""
    return value


def prefill_parallel_of(row: Any) -> int:
    """A row's :data:`PX_KEY` where it gives a disaggregated candidate's prefill replicas a
    size of their own (a results row or any mapping), else 0: the candidate's own layout (also
    where it has no such column)."""
    values = [float(row.get(k, d)) for k, d in ((PX_KEY, 0), (PD_KEY, 0), (TP_KEY, 0))]
    size, pools, devices = (v if math.isfinite(v) else 0.0 for v in values)
    return int(size) if pools > 0 and size > 0 and size != devices else 0


#: The candidate id (keys joined by "|") and the sheet of simulated figures looked up by it.
CANDIDATE = "candidate"

SIMULATED = "Simulated"

SHEET_OF_KEY = {**KEYS, PROMPTS_KEY: KEYS["hardware"], CANDIDATE: SIMULATED}

TFLOPS = 1e12


@dataclass(frozen=True)
class Column:
    """One column of an input sheet: header (with its unit), how to read it off a record."""

    name: str
    unit: str
    description: str
    get: Callable[[Any], Any]
    kind: str = "number"  # number | text | bool


def _optional(value: float | None, scale: float) -> float:
    return math.nan if value is None else value / scale


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


@dataclass(frozen=True)
class Lookup:
    """A plan column read from an input sheet by the row's id, times ``scale``.

    When ``column_from`` is set, the sheet column is chosen per row: its name is the value of
    the plan column ``column_from`` followed by ``column`` (e.g. ``bf16`` + ``_tflops``).
    """

    name: str
    key: str
    column: str
    scale: float = 1
    unit: str = ""
    description: str = ""
    kind: str = "number"
    column_from: str | None = None
    fallback_from: str | None = None
    fallback_column: str | None = None  # read where ``column`` is blank

    @property
    def sheet(self) -> str:
        return SHEET_OF_KEY[self.key]


@dataclass(frozen=True)
class InputTables:
    """The input sheets as DataFrames (units as in their headers) and the assumption values."""

    sheets: dict[str, pd.DataFrame]
    columns: dict[str, list[Column]]
    globals: dict[str, float]  # defined name -> value in the sheet's unit


def _frame(entries: tuple[Any, ...], columns: list[Column]) -> pd.DataFrame:
    return pd.DataFrame(
        {c.name: [c.get(e) for e in entries] for c in columns},
        columns=[c.name for c in columns],
    )
