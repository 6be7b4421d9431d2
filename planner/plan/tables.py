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
from typing import Any

import pandas as pd

from planner.catalog import ApiOffer, Catalog, Hardware, Model, Precision, Workload
from planner.catalog.interconnects import collective_latency
from planner.catalog.matmul import matmul_curve
from planner.catalog.records import Calibration
from planner.catalog.workloads import arrival_rate, length_summary
from planner.model.calibrated import CALIBRATED_FIGURES
from planner.model.parallel import CX7_400G_BYTES_PER_S
from planner.model.targets import TARGETS
from planner.model.units import GB, GIB, MIB
from planner.plan import speculative
from planner.plan.assumptions import GLOBALS, Global
from planner.plan.columns import (
    ALL_KEYS,
    CANDIDATE,
    KEYS,
    SHEET_OF_KEY,
    SIMULATED,
    TFLOPS,
    TP_KEY,
    Column,
    InputTables,
    Lookup,
    _frame,
    _nan,
    _optional,
)
from planner.plan.lengths import median_prompt_tokens
from planner.plan.lookups import LOOKUPS
from planner.plan.simulated import (
    SIM_LOOKUPS,
    SIMULATED_COLUMNS,
    SIMULATED_FORMULA_COLUMNS,
    SIMULATION_INPUTS,
    record_simulation_inputs,
    simulated_sheet,
    simulation_input_column,
)


def _compute_tflops(fmt: str) -> Callable[[Hardware], float]:
    """Reads the dense ``fmt`` compute rate off a hardware record, in TFLOPS (NaN: not stated)."""
    return lambda h: _optional(h.compute.get(fmt), TFLOPS)


def _hardware_columns(
    formats: list[str], default_devices_per_node: int, calibrated: dict[str, Calibration]
) -> list[Column]:
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
        Column(
            "network_gb_s",
            "GB/s",
            "scale-out network a device, per direction (blank in the catalog: one 400 Gb/s "
            "card a device, 50 GB/s)",
            lambda h: (h.network_bandwidth or CX7_400G_BYTES_PER_S) / GB,
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
        Column(
            "allreduce_fixed_us",
            "µs",
            "fixed part of one tensor-parallel all-reduce of small messages, by interconnect",
            lambda h: collective_latency(h.interconnect).fixed_s * 1e6,
        ),
        Column(
            "allreduce_per_hop_us",
            "µs",
            "part of one tensor-parallel all-reduce per ring hop, by interconnect",
            lambda h: collective_latency(h.interconnect).per_hop_s * 1e6,
        ),
        Column(
            "matmul_half_tokens",
            "tokens",
            "tokens at which a weight matrix multiplication reaches half its plateau rate "
            "(the entry's, else its family's)",
            lambda h: float(
                matmul_curve(h.family).half_tokens
                if h.matmul_half_tokens is None
                else h.matmul_half_tokens
            ),
        ),
        Column(
            "matmul_plateau_fraction",
            "fraction",
            "share of the dense datasheet rate weight multiplications reach at many tokens, by "
            "family",
            lambda h: matmul_curve(h.family).plateau_fraction,
        ),
        *_calibration_columns(calibrated),
        Column("source", "", "where the numbers come from", lambda h: h.source or "", "text"),
    ]
    return cols


def _calibrated(
    calibrated: dict[str, Calibration], figure: str, scale: float
) -> Callable[[Hardware], float]:
    """Reads a fitted figure off the hardware's calibration (NaN: not calibrated, or not fitted)."""
    return lambda h: _optional(getattr(calibrated.get(h.id), figure, None), scale)


def _rms(calibrated: dict[str, Calibration]) -> Callable[[Hardware], float]:
    def read(h: Hardware) -> float:
        fit = calibrated.get(h.id)
        return _optional(None if fit is None else fit.latency_rms_fraction(), 1.0)

    return read


def _calibration_columns(calibrated: dict[str, Calibration]) -> list[Column]:
    """The figures ``calibration.yaml`` fitted for each hardware on the plan's engine release;
    blank where the hardware is not calibrated (the assumptions apply)."""
    return [
        *(
            Column(f.sheet, f.sheet_unit, f"fitted to measurements (blank: {f.field} assumed)",
                   _calibrated(calibrated, f.field, f.scale))
            for f in CALIBRATED_FIGURES
        ),
        Column(
            "calibration_rms_fraction",
            "fraction",
            "root mean square relative error of the latencies, each predicted by a fit "
            "without it (held out; in-sample for a file without held-out estimates; blank: "
            "none)",
            _rms(calibrated),
        ),
    ]  # fmt: skip


MODEL_COLUMNS = [
    Column("id", "", "catalog id", lambda m: m.id, "text"),
    Column("name", "", "name", lambda m: m.label, "text"),
    Column("revision", "", "model revision", lambda m: m.revision or "", "text"),
    Column(
        "parameters",
        "",
        "total parameters, encoder included (given, or derived)",
        lambda m: m.parameter_count,
    ),
    Column(
        "active_parameters",
        "",
        "decoder parameters used per generated token (MoE: routed in part)",
        lambda m: m.active_parameter_count,
    ),
    Column(
        "encoder_parameters",
        "",
        "outside the decoder: vision tower and projector (loaded, not run per token)",
        lambda m: m.encoder_parameters,
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
    Column(
        "mlp_width",
        "",
        "MLP width a token passes through (MoE: its experts and shared experts; blank: unknown)",
        lambda m: _nan(m.mlp_width),
    ),
    Column("vocab_size", "", "vocabulary (blank: unknown)", lambda m: _nan(m.vocab_size)),
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
        "unquantised_bits",
        "bit",
        "bits per weight left out of an experts-only quantisation (0: every weight quantised)",
        lambda p: p.unquantised_bits if p.quantised == "experts" else 0,
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


def workload_columns(
    summaries: Callable[[Any, str], tuple[float, float, float]],
    rate: Callable[[Any], float],
    median_prompt: Callable[[Any], float],
) -> list[Column]:
    """Workload sheet columns; ``summaries(workload, 'prompt'|'output')`` gives mean, p95, max,
    ``rate(workload)`` the forecast arrivals per second and ``median_prompt(workload)`` the
    median prompt the simulation draws."""
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
            "prompt_tokens_median",
            "tokens",
            "median prompt (blank: every prompt is prompt_tokens long)",
            lambda w: math.nan if isinstance(w.prompt_tokens, int) else median_prompt(w),
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
        *_prefix_columns(),
        *(Column(t.column, "s", f"target: p95 {t.meaning}", _target(t.field)) for t in TARGETS),
        Column("admission", "", "admission policy", lambda w: w.admission, "text"),
        Column("source", "", "where the numbers come from", lambda w: w.source or "", "text"),
    ]


def _prefix(field: str, default: float) -> Callable[[Workload], float]:
    """Reads a field of a workload's ``prefix`` (``default`` where it gives none)."""

    def get(w: Workload) -> float:
        value = None if w.prefix is None else getattr(w.prefix, field)
        return default if value is None else float(value)

    return get


def _prefix_columns() -> list[Column]:
    """The Workloads sheet's columns of what its prompts share (workloads.yaml ``prefix``)."""
    return [
        Column(
            "shared_prefix_tokens",
            "tokens",
            "tokens every request begins with, the same for all (system prompt, tools)",
            _prefix("shared_tokens", 0.0),
        ),
        Column(
            "history_prefix_tokens",
            "tokens",
            "mean tokens of a prompt that repeat its task's previous request (history)",
            _prefix("history_tokens", 0.0),
        ),
        Column(
            "document_prefix_tokens",
            "tokens",
            "tokens of a document asked several questions",
            _prefix("document_tokens", 0.0),
        ),
        Column(
            "questions_per_document",
            "",
            "requests asking questions of one document (the first prefills it)",
            _prefix("questions_per_document", 1.0),
        ),
        Column(
            "measured_prefix_hit_ratio",
            "fraction",
            "share of prompt tokens the engine's prefix cache served, as measured (blank: "
            "computed from the prefix)",
            _prefix("measured_hit_ratio", math.nan),
        ),
    ]


def _target(field: str) -> Callable[[Workload], float]:
    """Reads a p95 latency target off a workload record (NaN: none set) [s]."""
    return lambda w: _nan(getattr(w.targets, field))


def compute_formats(catalog: Catalog) -> list[str]:
    """Compute formats given by any hardware, in first-seen order."""
    seen: dict[str, None] = {}
    for h in catalog.hardware:
        for fmt in h.compute:
            seen.setdefault(fmt)
    return list(seen)


def api_columns(offer_of: Callable[[Model], ApiOffer | None]) -> list[Column]:
    """The Models sheet's API price columns: each model's offer in ``api_offers.yaml`` (empty
    where none is catalogued, so that no comparison is made with a price nobody gave)."""

    def price(field: str) -> Callable[[Model], float]:
        def get(m: Model) -> float:
            offer = offer_of(m)
            value = None if offer is None else getattr(offer, field)
            return math.nan if value is None else float(value)

        return get

    def offer_text(m: Model) -> str:
        offer = offer_of(m)
        return "" if offer is None else f"{offer.label}, list price as of {offer.as_of}"

    return [
        Column(
            "api_input_usd_per_mtok",
            "USD",
            "hosted API price per million input tokens",
            price("input_usd_per_million_tokens"),
        ),
        Column(
            "api_output_usd_per_mtok",
            "USD",
            "hosted API price per million output tokens",
            price("output_usd_per_million_tokens"),
        ),
        Column(
            "api_cached_input_usd_per_mtok",
            "USD",
            "hosted API price per million input tokens served from its prompt cache (empty: "
            "the full input price)",
            price("cached_input_usd_per_million_tokens"),
        ),
        Column(
            "api_max_context_tokens",
            "tokens",
            "longest request the API accepts (empty: no limit given)",
            price("max_context_tokens"),
        ),
        Column("api_offer", "", "the API offer compared with", offer_text, "text"),
    ]


def input_tables(catalog: Catalog, simulated: pd.DataFrame | None = None) -> InputTables:
    """Build the input sheets from a validated catalog and, when given, simulated figures."""
    columns = {
        "Hardware": _hardware_columns(
            compute_formats(catalog), catalog.assumptions.devices_per_node, catalog.calibrated()
        ),
        "Models": MODEL_COLUMNS
        + api_columns(lambda m: {o.model: o for o in catalog.api_offers}.get(m.id))
        + speculative.model_columns(catalog),
        "Precisions": PRECISION_COLUMNS,
        "Workloads": workload_columns(
            lambda w, which: length_summary(catalog, w, which),
            lambda w: arrival_rate(catalog, w),
            lambda w: median_prompt_tokens(catalog, w),
        )
        + speculative.workload_columns(catalog),
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


#: The input tables' public names, from this module and the ones it is built of.
__all__ = [
    "ALL_KEYS",
    "CANDIDATE",
    "Column",
    "GLOBALS",
    "Global",
    "InputTables",
    "KEYS",
    "LOOKUPS",
    "Lookup",
    "MODEL_COLUMNS",
    "PRECISION_COLUMNS",
    "SHEET_OF_KEY",
    "SIMULATED",
    "SIMULATED_COLUMNS",
    "SIMULATED_FORMULA_COLUMNS",
    "SIMULATION_INPUTS",
    "SIM_LOOKUPS",
    "TFLOPS",
    "TP_KEY",
    "api_columns",
    "compute_formats",
    "input_tables",
    "record_simulation_inputs",
    "simulated_sheet",
    "simulation_input_column",
    "workload_columns",
]
