"""Input tables: the catalogs as the editable sheets of the workbook, and the lookups into them.

The input sheets are the single place where catalog numbers live once loaded: the batch planner
reads its inputs from these tables exactly as the workbook's ``Plan`` sheet reads them from the
sheets (by id, then scaled to base units), so both start from the same stored numbers. Values are
stored in units people edit (GiB, GB/s, TFLOPS); each :class:`Lookup` says how a sheet column
becomes a base-unit plan column.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .catalog import Catalog, Hardware, Model, Precision, Workload
from .units import GB, GIB

#: Plan columns that identify a candidate; each names the input sheet its id is looked up in.
KEYS: dict[str, str] = {
    "hardware": "Hardware",
    "model": "Models",
    "precision": "Precisions",
    "workload": "Workloads",
}

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


def _hardware_columns(formats: list[str]) -> list[Column]:
    cols = [
        Column("id", "", "catalog id", lambda h: h.id, "text"),
        Column("name", "", "name", lambda h: h.label, "text"),
        Column("memory_gib", "GiB", "device memory", lambda h: h.memory / GIB),
        Column(
            "memory_bandwidth_gb_s",
            "GB/s",
            "memory bandwidth (datasheet)",
            lambda h: h.memory_bandwidth / GB,
        ),
    ]
    for fmt in formats:
        cols.append(
            Column(
                f"{fmt}_tflops",
                "TFLOPS",
                f"dense {fmt} compute (datasheet)",
                lambda h, fmt=fmt: _optional(h.compute.get(fmt), TFLOPS),
            )
        )
    cols += [
        Column(
            "interconnect_gb_s",
            "GB/s",
            "interconnect bandwidth per direction",
            lambda h: _optional(h.interconnect_bandwidth, GB),
        ),
        Column("power_w", "W", "board power", lambda h: _optional(h.power, 1.0)),
        Column(
            "purchase_usd",
            "USD",
            "purchase price per device",
            lambda h: _optional(h.price.purchase_usd, 1.0),
        ),
        Column(
            "cloud_usd_per_hour",
            "USD/h",
            "rental price per device-hour",
            lambda h: _optional(h.price.cloud_usd_per_hour, 1.0),
        ),
        Column("source", "", "where the numbers come from", lambda h: h.source or "", "text"),
    ]
    return cols


MODEL_COLUMNS = [
    Column("id", "", "catalog id", lambda m: m.id, "text"),
    Column("name", "", "name", lambda m: m.label, "text"),
    Column("revision", "", "model revision", lambda m: m.revision or "", "text"),
    Column("parameters", "", "total parameters (given, or derived)", lambda m: m.parameter_count),
    Column("layers", "", "decoder layers", lambda m: m.layers),
    Column("kv_heads", "", "key/value heads per layer", lambda m: m.kv_heads),
    Column("head_dim", "", "dimension per head", lambda m: m.head_dim),
    Column("source", "", "where the numbers come from", lambda m: m.source or "", "text"),
]

PRECISION_COLUMNS = [
    Column("id", "", "catalog id", lambda p: p.id, "text"),
    Column("name", "", "name", lambda p: p.label, "text"),
    Column(
        "weight_bytes_per_param", "B", "stored bytes per weight", lambda p: p.weight_bytes_per_param
    ),
    Column(
        "kv_bytes_per_value", "B", "stored bytes per cached value", lambda p: p.kv_bytes_per_value
    ),
    Column("compute", "", "compute format whose rate applies", lambda p: p.compute, "text"),
    Column("source", "", "where the numbers come from", lambda p: p.source or "", "text"),
]

WORKLOAD_COLUMNS = [
    Column("id", "", "catalog id", lambda w: w.id, "text"),
    Column("name", "", "name", lambda w: w.label, "text"),
    Column("prompt_tokens", "tokens", "prompt length", lambda w: w.prompt_tokens),
    Column("max_output_tokens", "tokens", "promised maximum output", lambda w: w.max_output_tokens),
    Column("concurrency", "requests", "concurrent requests to serve", lambda w: w.concurrency),
    Column("source", "", "where the numbers come from", lambda w: w.source or "", "text"),
]


@dataclass(frozen=True)
class Global:
    """An assumption: one named cell on the ``Assumptions`` sheet, scaled to base units."""

    name: str  # base-unit name the metrics use
    cell: str  # defined name of the cell, with its unit
    scale: float
    unit: str
    description: str
    get: Callable[[Any], float]


GLOBALS = [
    Global(
        "runtime_overhead_bytes",
        "runtime_overhead_gib",
        GIB,
        "GiB",
        "per device: runtime buffers, graphs, allocator",
        lambda a: a.runtime_overhead / GIB,
    ),
    Global(
        "reserve_bytes",
        "reserve_gib",
        GIB,
        "GiB",
        "per device: held back for uncertainty and transient peaks",
        lambda a: a.reserve / GIB,
    ),
    Global(
        "bandwidth_efficiency",
        "bandwidth_efficiency",
        1,
        "fraction",
        "share of datasheet memory bandwidth achieved",
        lambda a: a.bandwidth_efficiency,
    ),
    Global(
        "compute_efficiency",
        "compute_efficiency",
        1,
        "fraction",
        "share of datasheet compute achieved",
        lambda a: a.compute_efficiency,
    ),
]


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

    @property
    def sheet(self) -> str:
        return KEYS[self.key]


LOOKUPS = [
    Lookup("memory_bytes", "hardware", "memory_gib", GIB, "B", "device memory"),
    Lookup(
        "memory_bandwidth_bytes_per_s",
        "hardware",
        "memory_bandwidth_gb_s",
        GB,
        "B/s",
        "datasheet memory bandwidth",
    ),
    Lookup("parameters", "model", "parameters", 1, "", "total parameters"),
    Lookup("layers", "model", "layers", 1, "", "decoder layers"),
    Lookup("kv_heads", "model", "kv_heads", 1, "", "key/value heads"),
    Lookup("head_dim", "model", "head_dim", 1, "", "head dimension"),
    Lookup(
        "weight_bytes_per_param", "precision", "weight_bytes_per_param", 1, "B", "bytes per weight"
    ),
    Lookup(
        "kv_bytes_per_value", "precision", "kv_bytes_per_value", 1, "B", "bytes per cached value"
    ),
    Lookup("compute_format", "precision", "compute", 1, "", "compute format", kind="text"),
    Lookup(
        "compute_flops_per_s",
        "hardware",
        "_tflops",
        TFLOPS,
        "FLOP/s",
        "datasheet dense compute for the precision's format",
        column_from="compute_format",
    ),
    Lookup("prompt_tokens", "workload", "prompt_tokens", 1, "tokens", "prompt tokens"),
    Lookup(
        "max_output_tokens", "workload", "max_output_tokens", 1, "tokens", "maximum output tokens"
    ),
    Lookup("concurrency", "workload", "concurrency", 1, "requests", "concurrent requests"),
]


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


def compute_formats(catalog: Catalog) -> list[str]:
    """Compute formats given by any hardware, in first-seen order."""
    seen: dict[str, None] = {}
    for h in catalog.hardware:
        for fmt in h.compute:
            seen.setdefault(fmt)
    return list(seen)


def input_tables(catalog: Catalog) -> InputTables:
    """Build the input sheets from a validated catalog."""
    columns = {
        "Hardware": _hardware_columns(compute_formats(catalog)),
        "Models": MODEL_COLUMNS,
        "Precisions": PRECISION_COLUMNS,
        "Workloads": WORKLOAD_COLUMNS,
    }
    records: dict[
        str, tuple[Hardware, ...] | tuple[Model, ...] | tuple[Precision, ...] | tuple[Workload, ...]
    ] = {
        "Hardware": catalog.hardware,
        "Models": catalog.models,
        "Precisions": catalog.precisions,
        "Workloads": catalog.workloads,
    }
    sheets = {name: _frame(records[name], cols) for name, cols in columns.items()}
    values = {g.cell: g.get(catalog.assumptions) for g in GLOBALS}
    return InputTables(sheets=sheets, columns=columns, globals=values)
