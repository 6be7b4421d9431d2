"""The plan columns read from the input sheets by id (:data:`LOOKUPS`), each scaled to base
units, exactly as the workbook's Plan reads them with INDEX/MATCH.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from planner.model.calibrated import CALIBRATED_FIGURES
from planner.model.disaggregated import PREFILL_HW, PREFILL_SIDE_LOOKUPS
from planner.model.targets import TARGETS
from planner.model.units import GB, GIB, MIB
from planner.plan.columns import PROMPTS_KEY, TFLOPS, Lookup
from planner.plan.speculative import LOOKUPS as SPECULATIVE_LOOKUPS


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


_UNCALIBRATED = "(blank: not calibrated)"

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
    _lk(
        "network_bytes_per_s",
        "hardware",
        "network_gb_s",
        GB,
        "B/s",
        "scale-out network a device, per direction",
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
    _lk(
        "allreduce_fixed_s",
        "hardware",
        "allreduce_fixed_us",
        1e-6,
        "s",
        "fixed part of one small tensor-parallel all-reduce",
    ),
    _lk(
        "allreduce_per_hop_s",
        "hardware",
        "allreduce_per_hop_us",
        1e-6,
        "s",
        "part of one small tensor-parallel all-reduce per ring hop",
    ),
    _lk(
        "matmul_half_tokens",
        "hardware",
        "matmul_half_tokens",
        1,
        "tokens",
        "tokens at which a weight matrix multiplication reaches half its plateau rate",
    ),
    _lk(
        "matmul_plateau_fraction",
        "hardware",
        "matmul_plateau_fraction",
        1,
        "fraction",
        "share of the dense datasheet rate weight multiplications reach at many tokens",
    ),
    *(
        _lk(
            f.plan, "hardware", f.sheet, f.scale, f.unit, f"{f.description} (blank: not calibrated)"
        )
        for f in CALIBRATED_FIGURES
    ),
    _lk(
        "calibration_rms_fraction",
        "hardware",
        "calibration_rms_fraction",
        1,
        "fraction",
        f"root mean square relative error of the fitted latencies {_UNCALIBRATED}",
    ),
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
    _lk(
        "encoder_parameters",
        "model",
        "encoder_parameters",
        1,
        "",
        "parameters outside the decoder (a vision tower and projector)",
    ),
    _lk("experts", "model", "experts", 1, "", "routed experts per MoE layer"),
    _lk("experts_per_token", "model", "experts_per_token", 1, "", "experts per token"),
    _lk("layers", "model", "layers", 1, "", "decoder layers"),
    _lk("attention_heads", "model", "attention_heads", 1, "", "query heads"),
    _lk("kv_heads", "model", "kv_heads", 1, "", "key/value heads"),
    _lk("head_dim", "model", "head_dim", 1, "", "head dimension"),
    _lk("hidden_size", "model", "hidden_size", 1, "", "model width"),
    _lk("mlp_width", "model", "mlp_width", 1, "", "MLP width a token passes through"),
    _lk("vocab_size", "model", "vocab_size", 1, "", "vocabulary"),
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
    _lk(
        "api_input_usd_per_million_tokens",
        "model",
        "api_input_usd_per_mtok",
        1,
        "USD",
        "hosted API price per million input tokens (api_offers.yaml)",
    ),
    _lk(
        "api_output_usd_per_million_tokens",
        "model",
        "api_output_usd_per_mtok",
        1,
        "USD",
        "hosted API price per million output tokens (api_offers.yaml)",
    ),
    _lk(
        "api_cached_input_usd_per_million_tokens",
        "model",
        "api_cached_input_usd_per_mtok",
        1,
        "USD",
        "hosted API price per million cached input tokens (api_offers.yaml; blank: full price)",
    ),
    _lk(
        "api_max_context_tokens",
        "model",
        "api_max_context_tokens",
        1,
        "tokens",
        "longest request the hosted API accepts (api_offers.yaml)",
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
    _lk(
        "unquantised_bits",
        "precision",
        "unquantised_bits",
        1,
        "bit",
        "bits per weight an experts-only quantisation leaves out (0: none)",
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
        "prompt_tokens_median",
        "workload",
        "prompt_tokens_median",
        1,
        "tokens",
        "median prompt (prompt_tokens_median, else prompt_tokens)",
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
    _lk(
        "shared_prefix_tokens",
        "workload",
        "shared_prefix_tokens",
        1,
        "tokens",
        "tokens every request begins with",
    ),
    _lk(
        "history_prefix_tokens",
        "workload",
        "history_prefix_tokens",
        1,
        "tokens",
        "mean tokens repeating the task's previous request",
    ),
    _lk(
        "document_prefix_tokens",
        "workload",
        "document_prefix_tokens",
        1,
        "tokens",
        "tokens of a document asked several questions",
    ),
    _lk(
        "questions_per_document",
        "workload",
        "questions_per_document",
        1,
        "",
        "questions asked of one document",
    ),
    _lk(
        "measured_prefix_hit_ratio",
        "workload",
        "measured_prefix_hit_ratio",
        1,
        "fraction",
        "measured prefix cache hit ratio (blank: computed)",
    ),
    *(_lk(t.column, "workload", t.column, 1, "s", f"{t.label} p95 target") for t in TARGETS),
    *SPECULATIVE_LOOKUPS,
]

#: The hardware figures of the hardware the prompts run on (the row's ``prompts_hardware``: its
#: own hardware, or its prefill pool's other device), looked up as ``hardware``'s are.
LOOKUPS += [
    replace(
        lk,
        name=PREFILL_HW + lk.name,
        key=PROMPTS_KEY,
        description=f"{lk.description}, of the hardware the prompts run on",
    )
    for lk in LOOKUPS
    if lk.key == "hardware" and lk.name in PREFILL_SIDE_LOOKUPS
]
