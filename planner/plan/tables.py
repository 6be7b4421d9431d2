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

from planner.catalog import Catalog, Hardware, Model, Precision, Workload
from planner.catalog.workloads import arrival_rate, length_summary
from planner.model.units import GB, GIB, MIB

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

#: The candidate id (keys joined by "|") and the sheet of simulated figures looked up by it.
CANDIDATE = "candidate"
SIMULATED = "Simulated"
SHEET_OF_KEY = {**KEYS, CANDIDATE: SIMULATED}

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


def _compute_tflops(fmt: str) -> Callable[[Hardware], float]:
    """Reads the dense ``fmt`` compute rate off a hardware record, in TFLOPS (NaN: not stated)."""
    return lambda h: _optional(h.compute.get(fmt), TFLOPS)


def _hardware_columns(formats: list[str], default_devices_per_node: int) -> list[Column]:
    cols = [
        Column("id", "", "catalog id", lambda h: h.id, "text"),
        Column("name", "", "name", lambda h: h.label, "text"),
        Column(
            "memory_gib", "GiB", "device memory as the vendor states it", lambda h: h.memory / GIB
        ),
        Column(
            "usable_memory_gib",
            "GiB",
            "memory usable for planning, where known to differ (blank: memory_gib)",
            lambda h: _optional(h.usable_memory, GIB),
        ),
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
                _compute_tflops(fmt),
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
        Column(
            "devices_per_node",
            "devices",
            "devices per server node",
            lambda h: h.devices_per_node or default_devices_per_node,
        ),
        Column("source", "", "where the numbers come from", lambda h: h.source or "", "text"),
    ]
    return cols


MODEL_COLUMNS = [
    Column("id", "", "catalog id", lambda m: m.id, "text"),
    Column("name", "", "name", lambda m: m.label, "text"),
    Column("revision", "", "model revision", lambda m: m.revision or "", "text"),
    Column("parameters", "", "total parameters (given, or derived)", lambda m: m.parameter_count),
    Column(
        "active_parameters",
        "",
        "parameters used per token (MoE: routed in part)",
        lambda m: m.active_parameter_count,
    ),
    Column(
        "embedding_parameters",
        "",
        "embeddings + untied LM head",
        lambda m: m.embedding_parameter_count,
    ),
    Column(
        "routed_expert_parameters",
        "",
        "all routed experts (MoE)",
        lambda m: m.routed_expert_parameter_count,
    ),
    Column(
        "experts",
        "",
        "routed experts per MoE layer (0: dense)",
        lambda m: m.moe.experts if m.moe else 0,
    ),
    Column(
        "experts_per_token",
        "",
        "experts each token is routed to",
        lambda m: m.moe.experts_per_token if m.moe else 0,
    ),
    Column("layers", "", "decoder layers", lambda m: m.layers),
    Column("attention_heads", "", "query heads", lambda m: m.attention_heads or m.kv_heads),
    Column("kv_heads", "", "key/value heads per layer", lambda m: m.kv_heads),
    Column("head_dim", "", "dimension per head", lambda m: m.head_dim),
    Column(
        "hidden_size",
        "",
        "model width",
        lambda m: m.hidden_size or (m.attention_heads or m.kv_heads) * m.head_dim,
    ),
    Column("windowed_layers", "", "sliding-window layers", lambda m: m.windowed_layers),
    Column(
        "window_tokens",
        "tokens",
        "sliding window",
        lambda m: m.sliding_window.window if m.sliding_window else 0,
    ),
    Column(
        "mla_kv_dim",
        "",
        "MLA: kv_lora_rank + rope dim cached per layer (0: none)",
        lambda m: m.mla_kv_dim,
    ),
    Column(
        "cacheless_layers",
        "",
        "layers with no KV cache (state-space, linear)",
        lambda m: m.cacheless_layers,
    ),
    Column(
        "state_mib_per_sequence",
        "MiB",
        "fixed state per sequence of cacheless layers",
        lambda m: m.state_per_sequence / MIB,
    ),
    Column("source", "", "where the numbers come from", lambda m: m.source or "", "text"),
]

PRECISION_COLUMNS = [
    Column("id", "", "catalog id", lambda p: p.id, "text"),
    Column("name", "", "name", lambda p: p.label, "text"),
    Column("weight_bits", "bit", "stored bits per quantised weight", lambda p: p.bits),
    Column(
        "group_size",
        "",
        "weights per quantisation group (0: no groups)",
        lambda p: p.group_size or 0,
    ),
    Column("scale_bits", "bit", "bits of scale/zero per group", lambda p: p.scale_bits),
    Column(
        "embedding_bits",
        "bit",
        "bits per weight of embeddings and LM head",
        lambda p: p.embedding_bits_or_default,
    ),
    Column(
        "kv_bytes_per_value", "B", "stored bytes per cached value", lambda p: p.kv_bytes_per_value
    ),
    Column("compute", "", "compute format whose rate applies", lambda p: p.compute, "text"),
    Column(
        "compute_fallback",
        "",
        "format used where the device lacks the first",
        lambda p: p.compute_fallback or "",
        "text",
    ),
    Column("source", "", "where the numbers come from", lambda p: p.source or "", "text"),
]


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


def workload_columns(
    summaries: Callable[[Any, str], tuple[float, float, float]], rate: Callable[[Any], float]
) -> list[Column]:
    """Workload sheet columns; ``summaries(workload, 'prompt'|'output')`` gives mean, p95, max
    and ``rate(workload)`` the forecast arrivals per second."""
    return [
        Column("id", "", "catalog id", lambda w: w.id, "text"),
        Column("name", "", "name", lambda w: w.label, "text"),
        Column(
            "prompt_tokens",
            "tokens",
            "longest prompt (reserved)",
            lambda w: summaries(w, "prompt")[2],
        ),
        Column(
            "prompt_tokens_mean",
            "tokens",
            "mean prompt (blank: every prompt is prompt_tokens long)",
            lambda w: math.nan if isinstance(w.prompt_tokens, int) else summaries(w, "prompt")[0],
        ),
        Column(
            "prompt_tokens_p95",
            "tokens",
            "95th-percentile prompt",
            lambda w: summaries(w, "prompt")[1],
        ),
        Column(
            "max_output_tokens", "tokens", "promised maximum output", lambda w: w.max_output_tokens
        ),
        Column(
            "output_tokens_mean",
            "tokens",
            "mean generated output (blank: every answer is max_output_tokens long)",
            lambda w: math.nan if w.output_tokens is None else summaries(w, "output")[0],
        ),
        Column(
            "output_tokens_p95",
            "tokens",
            "95th-percentile output",
            lambda w: summaries(w, "output")[1],
        ),
        Column(
            "concurrency",
            "requests",
            "closed loop: concurrent users (0: open loop)",
            lambda w: w.concurrency or 0,
        ),
        Column(
            "arrival_rate_per_s",
            "1/s",
            "open loop: forecast task arrivals (0: closed loop)",
            rate,
        ),
        Column(
            "requests_per_task",
            "",
            "model calls per task (agent loops)",
            lambda w: w.requests_per_task,
        ),
        Column("tool_time_s", "s", "tool time between calls of a task", lambda w: w.tool_time),
        Column("preprocess_s", "s", "preprocessing before prefill", lambda w: w.preprocess_time),
        Column("network_s", "s", "serialisation and network delivery", lambda w: w.network_time),
        Column(
            "ttft_p95_target_s",
            "s",
            "target: p95 time to first token",
            lambda w: _nan(w.targets.ttft_p95),
        ),
        Column(
            "itl_p95_target_s",
            "s",
            "target: p95 inter-token latency",
            lambda w: _nan(w.targets.itl_p95),
        ),
        Column(
            "e2e_p95_target_s",
            "s",
            "target: p95 end-to-end latency",
            lambda w: _nan(w.targets.e2e_p95),
        ),
        Column(
            "task_p95_target_s", "s", "target: p95 task latency", lambda w: _nan(w.targets.task_p95)
        ),
        Column("admission", "", "admission policy", lambda w: w.admission, "text"),
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


def _g(
    name: str, cell: str, scale: float, unit: str, description: str, get: Callable[[Any], float]
) -> Global:
    return Global(name, cell, scale, unit, description, get)


GLOBALS = [
    _g(
        "runtime_overhead_bytes",
        "runtime_overhead_gib",
        GIB,
        "GiB",
        "per device: runtime buffers, graphs, allocator",
        lambda a: a.runtime_overhead / GIB,
    ),
    _g(
        "reserve_bytes",
        "reserve_gib",
        GIB,
        "GiB",
        "per device: held back for uncertainty and transient peaks",
        lambda a: a.reserve / GIB,
    ),
    _g(
        "bandwidth_efficiency",
        "bandwidth_efficiency",
        1,
        "fraction",
        "share of datasheet memory bandwidth achieved",
        lambda a: a.bandwidth_efficiency,
    ),
    _g(
        "compute_efficiency",
        "compute_efficiency",
        1,
        "fraction",
        "share of datasheet compute achieved",
        lambda a: a.compute_efficiency,
    ),
    _g(
        "kv_block_tokens",
        "kv_block_tokens",
        1,
        "tokens",
        "KV cache allocation block (paged attention); 1 = no paging waste",
        lambda a: a.kv_block_tokens,
    ),
    _g(
        "step_overhead_s",
        "step_overhead_ms",
        1e-3,
        "ms",
        "fixed time per decode or prefill step (launches, scheduling)",
        lambda a: a.step_overhead * 1e3,
    ),
    _g(
        "max_batch_sequences",
        "max_batch_sequences",
        1,
        "sequences",
        "most sequences a replica decodes at once (engine limit)",
        lambda a: a.max_batch_sequences,
    ),
    _g(
        "activation_bytes",
        "activation_bytes",
        1,
        "B",
        "bytes per activation value exchanged by tensor-parallel all-reduce",
        lambda a: a.activation_bytes,
    ),
    _g(
        "max_rejected_fraction",
        "max_rejected_fraction",
        1,
        "fraction",
        "ceiling on rejected requests when sizing",
        lambda a: a.max_rejected_fraction,
    ),
    _g(
        "electricity_usd_per_kwh",
        "electricity_usd_per_kwh",
        1,
        "USD/kWh",
        "electricity price",
        lambda a: _nan(a.electricity_usd_per_kwh),
    ),
    _g("pue", "pue", 1, "ratio", "power usage effectiveness of the data centre", lambda a: a.pue),
    _g(
        "utilisation",
        "utilisation",
        1,
        "fraction",
        "average share of board power drawn",
        lambda a: a.utilisation,
    ),
    _g(
        "amortisation_months",
        "amortisation_months",
        1,
        "months",
        "period over which purchases are written off",
        lambda a: a.amortisation_months,
    ),
    _g(
        "node_overhead_usd",
        "node_overhead_usd",
        1,
        "USD",
        "capital cost per server node beyond its devices",
        lambda a: a.node_overhead_usd,
    ),
    _g(
        "hosting_usd_per_node_month",
        "hosting_usd_per_node_month",
        1,
        "USD/month",
        "hosting (space, network, support) per node",
        lambda a: a.hosting_usd_per_node_month,
    ),
    _g(
        "hours_per_month",
        "hours_per_month",
        1,
        "h",
        "hours in a month",
        lambda a: a.hours_per_month,
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
    fallback_from: str | None = None
    fallback_column: str | None = None  # read where ``column`` is blank

    @property
    def sheet(self) -> str:
        return SHEET_OF_KEY[self.key]


def _lk(
    name: str,
    key: str,
    column: str,
    scale: float = 1,
    unit: str = "",
    description: str = "",
    **kw: Any,
) -> Lookup:
    return Lookup(name, key, column, scale, unit, description, **kw)


LOOKUPS = [
    _lk(
        "memory_bytes",
        "hardware",
        "usable_memory_gib",
        GIB,
        "B",
        "device memory usable for planning (usable_memory_gib, else memory_gib)",
        fallback_column="memory_gib",
    ),
    _lk(
        "memory_bandwidth_bytes_per_s",
        "hardware",
        "memory_bandwidth_gb_s",
        GB,
        "B/s",
        "datasheet memory bandwidth",
    ),
    _lk(
        "interconnect_bytes_per_s",
        "hardware",
        "interconnect_gb_s",
        GB,
        "B/s",
        "interconnect bandwidth per direction",
    ),
    _lk("power_w", "hardware", "power_w", 1, "W", "board power"),
    _lk("purchase_usd", "hardware", "purchase_usd", 1, "USD", "purchase price per device"),
    _lk(
        "cloud_usd_per_hour",
        "hardware",
        "cloud_usd_per_hour",
        1,
        "USD/h",
        "rental price per device-hour",
    ),
    _lk("devices_per_node", "hardware", "devices_per_node", 1, "devices", "devices per node"),
    _lk("parameters", "model", "parameters", 1, "", "total parameters"),
    _lk("active_parameters", "model", "active_parameters", 1, "", "parameters used per token"),
    _lk(
        "embedding_parameters",
        "model",
        "embedding_parameters",
        1,
        "",
        "embeddings + untied LM head",
    ),
    _lk(
        "routed_expert_parameters", "model", "routed_expert_parameters", 1, "", "all routed experts"
    ),
    _lk("experts", "model", "experts", 1, "", "routed experts per MoE layer"),
    _lk("experts_per_token", "model", "experts_per_token", 1, "", "experts per token"),
    _lk("layers", "model", "layers", 1, "", "decoder layers"),
    _lk("attention_heads", "model", "attention_heads", 1, "", "query heads"),
    _lk("kv_heads", "model", "kv_heads", 1, "", "key/value heads"),
    _lk("head_dim", "model", "head_dim", 1, "", "head dimension"),
    _lk("hidden_size", "model", "hidden_size", 1, "", "model width"),
    _lk("windowed_layers", "model", "windowed_layers", 1, "", "sliding-window layers"),
    _lk("window_tokens", "model", "window_tokens", 1, "tokens", "sliding window"),
    _lk("mla_kv_dim", "model", "mla_kv_dim", 1, "", "MLA values per token per layer"),
    _lk("cacheless_layers", "model", "cacheless_layers", 1, "", "layers without KV cache"),
    _lk(
        "state_bytes_per_sequence",
        "model",
        "state_mib_per_sequence",
        MIB,
        "B",
        "fixed state per sequence",
    ),
    _lk("weight_bits", "precision", "weight_bits", 1, "bit", "bits per quantised weight"),
    _lk("group_size", "precision", "group_size", 1, "", "weights per quantisation group"),
    _lk("scale_bits", "precision", "scale_bits", 1, "bit", "scale bits per group"),
    _lk(
        "embedding_bits",
        "precision",
        "embedding_bits",
        1,
        "bit",
        "bits per embedding/LM-head weight",
    ),
    _lk("kv_bytes_per_value", "precision", "kv_bytes_per_value", 1, "B", "bytes per cached value"),
    _lk("compute_format", "precision", "compute", 1, "", "compute format", kind="text"),
    _lk(
        "compute_fallback",
        "precision",
        "compute_fallback",
        1,
        "",
        "fallback compute format",
        kind="text",
    ),
    _lk(
        "compute_flops_per_s",
        "hardware",
        "_tflops",
        TFLOPS,
        "FLOP/s",
        "datasheet dense compute for the precision's format (or its fallback)",
        column_from="compute_format",
        fallback_from="compute_fallback",
    ),
    _lk("prompt_tokens", "workload", "prompt_tokens", 1, "tokens", "longest prompt (reserved)"),
    _lk(
        "prompt_tokens_mean",
        "workload",
        "prompt_tokens_mean",
        1,
        "tokens",
        "mean prompt (prompt_tokens_mean, else prompt_tokens)",
        fallback_column="prompt_tokens",
    ),
    _lk(
        "max_output_tokens", "workload", "max_output_tokens", 1, "tokens", "promised maximum output"
    ),
    _lk(
        "output_tokens_mean",
        "workload",
        "output_tokens_mean",
        1,
        "tokens",
        "mean output (output_tokens_mean, else max_output_tokens)",
        fallback_column="max_output_tokens",
    ),
    _lk("concurrency", "workload", "concurrency", 1, "requests", "concurrent users (0: open loop)"),
    _lk(
        "arrival_rate_per_s",
        "workload",
        "arrival_rate_per_s",
        1,
        "1/s",
        "forecast task arrival rate",
    ),
    _lk("requests_per_task", "workload", "requests_per_task", 1, "", "model calls per task"),
    _lk("tool_time_s", "workload", "tool_time_s", 1, "s", "tool time between calls"),
    _lk("preprocess_s", "workload", "preprocess_s", 1, "s", "preprocessing time"),
    _lk("network_s", "workload", "network_s", 1, "s", "network and serialisation time"),
    _lk("ttft_p95_target_s", "workload", "ttft_p95_target_s", 1, "s", "TTFT p95 target"),
    _lk("itl_p95_target_s", "workload", "itl_p95_target_s", 1, "s", "ITL p95 target"),
    _lk("e2e_p95_target_s", "workload", "e2e_p95_target_s", 1, "s", "end-to-end p95 target"),
    _lk("task_p95_target_s", "workload", "task_p95_target_s", 1, "s", "task p95 target"),
]


#: Figures from the serving simulation (:mod:`planner.serving.sizing`), one row per simulated
#: candidate.
SIMULATED_COLUMNS = [
    Column(
        "id",
        "",
        "candidate id (hardware|model|precision|workload|tensor_parallel)",
        lambda r: r["candidate"],
        "text",
    ),
    Column(
        "sim_replicas_needed",
        "replicas",
        "fewest replicas meeting every p95 target and the rejection ceiling (empty: none found)",
        lambda r: r["sim_replicas_needed"],
    ),
    Column(
        "sim_meets_targets",
        "",
        "1 when the simulation met every target, else 0",
        lambda r: float(bool(r["meets_targets_sim"])),
    ),
    Column("ttft_p50_s", "s", "simulated median time to first token", lambda r: r["ttft_p50_s"]),
    Column("ttft_p95_s", "s", "simulated p95 time to first token", lambda r: r["ttft_p95_s"]),
    Column("ttft_p99_s", "s", "simulated p99 time to first token", lambda r: r["ttft_p99_s"]),
    Column("itl_p50_s", "s", "simulated median inter-token latency", lambda r: r["itl_p50_s"]),
    Column("itl_p95_s", "s", "simulated p95 inter-token latency", lambda r: r["itl_p95_s"]),
    Column("itl_p99_s", "s", "simulated p99 inter-token latency", lambda r: r["itl_p99_s"]),
    Column("e2e_p50_s", "s", "simulated median end-to-end latency", lambda r: r["e2e_p50_s"]),
    Column("e2e_p95_s", "s", "simulated p95 end-to-end latency", lambda r: r["e2e_p95_s"]),
    Column("e2e_p99_s", "s", "simulated p99 end-to-end latency", lambda r: r["e2e_p99_s"]),
    Column("task_p95_s", "s", "simulated p95 task latency", lambda r: r["task_p95_s"]),
    Column(
        "sim_throughput_tokens_per_s",
        "tokens/s",
        "simulated output tokens per second per replica",
        lambda r: r["sim_throughput_tokens_per_s"],
    ),
    Column(
        "queued_fraction",
        "fraction",
        "share of requests that waited for admission",
        lambda r: r["queued_fraction"],
    ),
    Column(
        "rejected_fraction",
        "fraction",
        "share of requests rejected (queue full, timeout, never fits)",
        lambda r: r["rejected_fraction"],
    ),
    Column(
        "preempted_fraction",
        "fraction",
        "share of requests preempted at least once",
        lambda r: r["preempted_fraction"],
    ),
    Column(
        "sim_bound",
        "",
        "what binds when the targets are missed: memory, bandwidth, compute, queueing, ...",
        lambda r: r.get("sim_bound", ""),
        "text",
    ),
    Column(
        "sim_replicas_simulated",
        "replicas",
        "replicas in the run the percentiles come from (empty: one request at a time)",
        lambda r: r.get("sim_replicas_simulated", float("nan")),
    ),
    Column(
        "sim_reason", "", "the simulation's verdict in words", lambda r: r["sim_reason"], "text"
    ),
    Column(
        "sim_inputs_unchanged",
        "",
        "1 while every input the simulation read still has the value it was simulated with, "
        "else 0 (a formula over the Plan)",
        lambda r: 1.0,
    ),
    Column(
        "changed_input",
        "",
        "the first Plan column whose value differs from the one simulated (a formula)",
        lambda r: "",
        "text",
    ),
    Column(
        "plan_row",
        "",
        "the candidate's row on the Plan sheet (a formula)",
        lambda r: math.nan,
    ),
]

#: Plan columns whose values the serving simulation read, directly or through the step times:
#: memory and weights (the KV budget), the cache shape, bandwidth and its efficiency (the weight
#: read), compute and its efficiency, the interconnect, the step times, the lengths, the load
#: and the targets. None of them depends on a simulated figure.
SIMULATION_INPUTS = (
    "kv_budget_bytes",
    "kv_bytes_per_sequence",
    "weight_read_s",
    "achieved_compute_flops_per_s",
    "allreduce_s_per_token",
    "itl_s",
    "prefill_s",
    "prompt_tokens",
    "prompt_tokens_mean",
    "max_output_tokens",
    "output_tokens_mean",
    "concurrency",
    "arrival_rate_per_s",
    "requests_per_task",
    "tool_time_s",
    "ttft_p95_target_s",
    "itl_p95_target_s",
    "e2e_p95_target_s",
    "task_p95_target_s",
)


def simulation_input_column(name: str) -> str:
    """The Simulated sheet's column that records the value Plan column ``name`` had when the
    candidate was simulated."""
    return f"sim_input_{name}"


#: Columns of the Simulated sheet that the workbook computes with formulas over the Plan.
SIMULATED_FORMULA_COLUMNS = ("sim_inputs_unchanged", "changed_input", "plan_row")

SIM_LOOKUPS = [
    Lookup(c.name, CANDIDATE, c.name, 1, c.unit, c.description, kind=c.kind)
    for c in SIMULATED_COLUMNS[1:]
    if c.name not in SIMULATED_FORMULA_COLUMNS[1:]
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


def simulated_sheet(simulated: pd.DataFrame | None) -> pd.DataFrame:
    """The Simulated sheet from :func:`planner.serving.sizing.simulate_candidates`' table (or
    empty)."""
    if simulated is None or simulated.empty:
        return pd.DataFrame(
            {
                c.name: pd.Series(dtype=object if c.kind == "text" else float)
                for c in SIMULATED_COLUMNS
            }
        )
    return _frame(tuple(row for _, row in simulated.iterrows()), SIMULATED_COLUMNS)


def input_tables(catalog: Catalog, simulated: pd.DataFrame | None = None) -> InputTables:
    """Build the input sheets from a validated catalog and, when given, simulated figures."""
    columns = {
        "Hardware": _hardware_columns(
            compute_formats(catalog), catalog.assumptions.devices_per_node
        ),
        "Models": MODEL_COLUMNS,
        "Precisions": PRECISION_COLUMNS,
        "Workloads": workload_columns(
            lambda w, which: length_summary(catalog, w, which), lambda w: arrival_rate(catalog, w)
        ),
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
    sheets[SIMULATED] = simulated_sheet(simulated)
    columns[SIMULATED] = SIMULATED_COLUMNS
    values = {g.cell: g.get(catalog.assumptions) for g in GLOBALS}
    return InputTables(sheets=sheets, columns=columns, globals=values)


def record_simulation_inputs(inputs: InputTables, table: pd.DataFrame) -> None:
    """Add to the Simulated sheet the value of every :data:`SIMULATION_INPUTS` column for each
    simulated candidate, read from ``table`` (the evaluated plan: the simulation read the same
    values, since none of these columns depends on a simulated figure)."""
    sheet = inputs.sheets[SIMULATED]
    present = [n for n in SIMULATION_INPUTS if n in table]
    rows = table.drop_duplicates(CANDIDATE).set_index(CANDIDATE).reindex(sheet["id"])
    for name in present:
        sheet[simulation_input_column(name)] = rows[name].to_numpy(dtype=float)
    inputs.columns[SIMULATED] = SIMULATED_COLUMNS + [
        Column(
            simulation_input_column(name),
            "",
            f"{name} when the candidate was simulated (compared with the Plan's)",
            lambda r: math.nan,
        )
        for name in present
    ]
