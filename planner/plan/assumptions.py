"""Planning assumptions that apply to every candidate (:data:`GLOBALS`): each a named cell of the
workbook's Assumptions sheet, in the unit people edit, with its scale to base units.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from planner.catalog.engines import (
    BUDGET_RULES,
    DEFAULT_ENGINE,
    FRACTION_RULES,
    EngineSeries,
    caches_prefixes,
    constants_for,
    memory_fraction,
    prefills_in_chunks,
    step_overhead_per_sequence,
)
from planner.catalog.records import Engine
from planner.model.units import GIB
from planner.plan.columns import _nan, _optional


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


def _engine(a: Any) -> Engine:
    return a.engine if a.engine is not None else DEFAULT_ENGINE


def _speculative_acceptance(engine: Engine) -> float:
    """The engine profile's acceptance rate of proposed tokens (0 without speculation)."""
    spec = engine.speculative
    return 0.0 if spec is None else spec.default_acceptance_rate


def _series(a: Any) -> EngineSeries:
    return constants_for(_engine(a))


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
        "assumed_bandwidth_efficiency",
        "assumed_bandwidth_efficiency",
        1,
        "fraction",
        "share of datasheet memory bandwidth achieved, on hardware not calibrated",
        lambda a: a.bandwidth_efficiency,
    ),
    _g(
        "assumed_compute_efficiency",
        "assumed_compute_efficiency",
        1,
        "fraction",
        "share of datasheet compute achieved, on hardware not calibrated",
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
        "assumed_step_overhead_s",
        "assumed_step_overhead_ms",
        1e-3,
        "ms",
        "fixed time per decode or prefill step (launches, scheduling), on hardware not calibrated",
        lambda a: a.step_overhead * 1e3,
    ),
    _g(
        "step_overhead_per_sequence_s",
        "step_overhead_per_sequence_us",
        1e-6,
        "µs",
        "time per sequence decoding in a step (sampling, input preparation, scheduling)",
        lambda a: step_overhead_per_sequence(a) * 1e6,
    ),
    _g(
        "max_batch_sequences",
        "max_batch_sequences",
        1,
        "sequences",
        "most sequences a replica decodes at once (engine limit: its max_num_seqs)",
        lambda a: a.batch_limit,
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
        "engine_modelled",
        "engine_modelled",
        1,
        "1 = yes",
        "1: the KV budget is the serving engine's pool (assumptions.yaml engine); 0: memory − "
        "weights − runtime overhead − reserve",
        lambda a: 1.0 if a.engine is not None else 0.0,
    ),
    _g(
        "memory_fraction_setting",
        "engine_memory_fraction",
        1,
        "fraction",
        "engine: share of memory it sizes its KV pool from (vLLM gpu_memory_utilization, "
        "SGLang mem_fraction_static, TensorRT-LLM free_gpu_memory_fraction); 0: the engine's "
        "own rule (SGLang's default)",
        lambda a: memory_fraction(_engine(a)),
    ),
    _g(
        "engine_budget_rule",
        "engine_budget_rule",
        1,
        "rule",
        "engine: what its fraction is a share of: 1 the device (vLLM), 2 the memory free "
        "before the weights (SGLang), 3 the memory free after a profiling pass (TensorRT-LLM)",
        lambda a: float(BUDGET_RULES[_series(a).budget]),
    ),
    _g(
        "engine_fraction_rule",
        "engine_fraction_rule",
        1,
        "rule",
        "engine: its default share where the profile gives none: 0 fixed, 1 SGLang's by "
        "tensor-parallel size, 2 SGLang's reservation for activations and graphs",
        lambda a: float(FRACTION_RULES[_series(a).fraction_rule]),
    ),
    _g(
        "max_num_batched_tokens",
        "max_num_batched_tokens",
        1,
        "tokens",
        "engine: tokens in one scheduled batch (its profiling pass)",
        lambda a: _engine(a).max_num_batched_tokens,
    ),
    _g(
        "chunked_prefill",
        "chunked_prefill",
        1,
        "1 = yes",
        "engine: 1 when prompts are prefilled in chunks that share steps with the decodes (vLLM "
        "V1), 0 when each prompt takes steps of its own",
        lambda a: 1.0 if prefills_in_chunks(a.engine) else 0.0,
    ),
    _g(
        "prefix_caching",
        "prefix_caching",
        1,
        "1 = yes",
        "engine: 1 when it keeps prompts' cached blocks for later requests with the same prefix "
        "(vLLM V1, SGLang's radix cache, TensorRT-LLM block reuse), 0 when every prompt is "
        "prefilled whole",
        lambda a: 1.0 if caches_prefixes(a.engine) else 0.0,
    ),
    _g(
        "speculative_acceptance_rate",
        "speculative_acceptance_rate",
        1,
        "fraction",
        "engine: share of speculatively proposed tokens the model accepts, each independently "
        "(the profile's, else its method's published figure; 0: no speculative decoding)",
        lambda a: _speculative_acceptance(_engine(a)),
    ),
    _g(
        "max_model_len_setting",
        "max_model_len",
        1,
        "tokens",
        "engine: longest request accepted (0: the workload's prompt + promised output)",
        lambda a: _engine(a).max_model_len or 0,
    ),
    _g(
        "engine_activation_scale",
        "engine_activation_scale",
        1,
        "ratio",
        "engine release: fitted scale of the activation peak of its profiling pass",
        lambda a: _series(a).activation_scale,
    ),
    _g(
        "sampler_bytes_per_logit",
        "sampler_bytes_per_logit",
        1,
        "B",
        "engine release: sampler bytes per logit in its dummy sampling step",
        lambda a: _series(a).sampler_bytes_per_logit,
    ),
    _g(
        "engine_non_torch_bytes",
        "engine_non_torch_gib",
        GIB,
        "GiB",
        "engine release: memory outside PyTorch per device, one device per replica",
        lambda a: _series(a).non_torch / GIB,
    ),
    _g(
        "engine_non_torch_tp_bytes",
        "engine_non_torch_tp_gib",
        GIB,
        "GiB",
        "engine release: memory outside PyTorch per device under tensor parallelism",
        lambda a: _series(a).non_torch_tensor_parallel / GIB,
    ),
    _g(
        "cuda_graph_bytes",
        "cuda_graph_gib",
        GIB,
        "GiB",
        "engine release: CUDA graph memory per device (0 with graphs off)",
        lambda a: _series(a).cuda_graphs / GIB if _engine(a).cuda_graphs else 0.0,
    ),
    _g(
        "cuda_graphs_in_budget",
        "cuda_graphs_in_budget",
        1,
        "1 = yes",
        "engine release: 1 where CUDA graphs are taken from the KV pool's budget",
        lambda a: 1.0 if _series(a).cuda_graphs_in_budget else 0.0,
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
        "margin_fraction",
        "margin_fraction",
        1,
        "fraction",
        "a recommended option with less headroom than this to a target or in its KV capacity "
        "is flagged",
        lambda a: a.margin,
    ),
    _g(
        "uncalibrated_band_fraction",
        "uncalibrated_band_fraction",
        1,
        "fraction",
        "error of a latency estimate at 90 % confidence on hardware not calibrated (assumed)",
        lambda a: a.uncalibrated_band,
    ),
    _g(
        "calibrated_band_floor_fraction",
        "calibrated_band_floor_fraction",
        1,
        "fraction",
        "least error of a latency estimate at 90 % confidence on calibrated hardware",
        lambda a: a.calibrated_band_floor,
    ),
    _g(
        "rack_power_w",
        "rack_power_kw",
        1e3,
        "kW",
        "peak power a rack may draw (blank: no limit)",
        lambda a: _optional(a.rack_power, 1e3),
    ),
    _g(
        "site_power_w",
        "site_power_kw",
        1e3,
        "kW",
        "peak power the site may draw, PUE included (blank: no limit)",
        lambda a: _optional(a.site_power, 1e3),
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
    _g(
        "expert_imbalance",
        "expert_imbalance",
        1,
        "",
        "expert parallelism: the busiest device's MoE tokens over the mean (SGLang large-scale EP)",
        lambda a: a.expert_imbalance,
    ),
    _g(
        "expert_dispatch_bytes_per_value",
        "expert_dispatch_bytes_per_value",
        1,
        "B",
        "expert parallelism: bytes dispatched per activation value (DeepEP's FP8 with scales)",
        lambda a: a.expert_dispatch_bytes_per_value,
    ),
    _g(
        "expert_overlap",
        "expert_overlap",
        1,
        "",
        "expert parallelism: 1 overlaps the all-to-all with compute (two micro-batches), 0 adds it",
        lambda a: a.expert_overlap,
    ),
    _g(
        "redundant_experts",
        "redundant_experts",
        1,
        "experts",
        "expert parallelism: redundant expert slots of a replica (EPLB), beside one of each expert",
        lambda a: a.redundant_experts,
    ),
]
