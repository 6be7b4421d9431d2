"""The settings a line of the ask was planned with, as an engine must be started to match it.

One :class:`LaunchSettings` per line (and per pool of a disaggregated line) gathers what the
plan assumed of the engine, each from the one place the plan took it: parallel sizes, the
replicas and devices from the line's results row; the memory fraction the pool was sized from
(``engine_memory_fraction``), the longest sequence (``engine_max_model_len``); the batch limits,
chunked prefill, prefix caching and speculative decoding from the engine profile
(``assumptions.yaml`` ``engine``, else its release's defaults); the weights' and the cache's
formats from the precision. The launch commands (:mod:`planner.deploy.engines`), the manifests
(:mod:`planner.deploy.manifests`), the measurement kit (:mod:`planner.deploy.kit`) and
``planner measure check`` (:mod:`planner.deploy.check`) all read these settings, so what is
started, what is measured and what is compared are the plan's.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from planner.catalog.engines import DEFAULT_ENGINE, caches_prefixes, constants_for
from planner.model.nodes import nodes_spanned
from planner.plan.columns import prefill_parallel_of
from planner.plan.labels import line_pools, prefill_device

if TYPE_CHECKING:
    import pandas as pd

    from planner.catalog import Catalog
    from planner.catalog.components import Hardware, Model, Precision

__all__ = [
    "LaunchSettings",
    "device_resource",
    "launch_settings",
    "model_repository",
]

#: A Hugging Face repository named in a model's ``source``: ``huggingface.co/ORG/NAME``.
_REPOSITORY = re.compile(r"huggingface\.co/([A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*)")

#: A git commit, the only revision an engine's ``--revision`` pins exactly.
_COMMIT = re.compile(r"^[0-9a-f]{7,40}$")

#: The Kubernetes extended resource each device family's plugin advertises (NVIDIA's, AMD's
#: and Intel Gaudi's device plugins).
RESOURCES = {
    "hopper": "nvidia.com/gpu",
    "blackwell": "nvidia.com/gpu",
    "ampere": "nvidia.com/gpu",
    "ada": "nvidia.com/gpu",
    "cdna3": "amd.com/gpu",
    "gaudi3": "habana.ai/gaudi",
}

#: The node label a manifest selects its devices by; the nodes must carry it.
NODE_LABEL = "planner.io/hardware"


@dataclass(frozen=True)
class LaunchSettings:
    """What one pool of a line must be started with to be the plan's (see the module
    docstring). Counts are whole numbers; ``memory_fraction`` is the engine's own flag's value
    (vLLM ``gpu_memory_utilization``, SGLang ``mem_fraction_static``, TensorRT-LLM
    ``free_gpu_memory_fraction``)."""

    line: str
    """The line's name in file names: its workload id, with ``-prefill`` or ``-decode`` for a
    pool of a disaggregated line."""
    workload: str
    model: str
    model_repository: str | None
    """The Hugging Face repository the model's source names, where the engine can load it in
    the planned precision (BF16, or FP8 quantised on loading); None where the checkpoint must
    be one quantised ahead of time, or no repository is named: the user gives it."""
    checkpoint: str
    """What the model to load must be, in words (for the scripts' and manifests' notes)."""
    revision: str | None
    """A commit of that repository to pin (None: the catalog's revision is not a commit)."""
    hardware: str
    precision: str
    engine: str
    engine_version: str
    tensor_parallel: int
    """Devices of one tensor-parallel group: the replica's, or one pipeline stage's."""
    expert_parallel: int
    pipeline_parallel: int
    """Pipeline stages of a replica, a node each (1: one)."""
    role: str
    """``both`` for one pool of replicas; ``prefill`` or ``decode`` for a disaggregated pool."""
    replicas: int
    devices_per_replica: int
    device_resource: str
    memory_fraction: float
    max_num_seqs: int
    max_num_batched_tokens: int
    max_model_len: int
    quantization: str | None
    """What the weights are: None for the checkpoint's own format (BF16, or a checkpoint
    quantised ahead of time), ``fp8`` for FP8 quantised when the engine loads it."""
    kv_cache_dtype: str
    """``auto`` (the weights' type) or ``fp8``."""
    prefix_caching: bool
    chunked_prefill: bool
    cuda_graphs: bool
    """Whether decode steps replay captured CUDA graphs (off: the engine runs eagerly)."""
    speculative_method: str | None
    speculative_tokens: int
    draft_model: str | None
    planned_batch: int
    """Sequences a replica runs at the forecast: the batch its measurement should load it with."""
    prompt_tokens: int
    output_tokens: int
    """The workload's mean lengths, for the measurement's requests [tokens]."""
    long_prompt_tokens: int = 0
    """A second prompt length to measure, the longest the plan reserves (within the longest
    sequence less the output), where it is at least twice the mean: two lengths tell a prompt's
    arithmetic from a step's fixed time [tokens]; 0: none."""
    nodes_per_replica: int = 1
    """Nodes one replica spans: its pipeline stages, a node each, or its devices over a node's
    (an expert-parallel replica larger than a node); 1: one node."""
    redundant_experts: int = 0
    """Redundant expert slots of an expert-parallel replica, which the engine's load balancer
    (EPLB) fills with copies of its busiest experts (0: none)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def model_repository(model: Model) -> str | None:
    """The Hugging Face repository named in the model's ``source``, or None."""
    found = _REPOSITORY.search(model.source or "")
    return found.group(1) if found else None


def device_resource(hardware: Hardware) -> str:
    """The device plugin's resource name for the hardware (NVIDIA's where no family is given)."""
    return RESOURCES.get(hardware.family or "", "nvidia.com/gpu")


def _quantization(precision: Precision) -> str | None:
    """FP8 weights (FP8 arithmetic) are quantised by the engine from a BF16 checkpoint; other
    formats come as checkpoints quantised ahead of time, whose config the engine reads."""
    return "fp8" if precision.compute == "fp8" and precision.weight_bits == 8 else None


def _on_load(precision: Precision) -> bool:
    """Whether the engine loads the planned precision from the model's own (16-bit) checkpoint:
    16-bit weights, or FP8 quantised as it loads them."""
    return (precision.weight_bits or 16) >= 16 or _quantization(precision) is not None


def _whole(value: Any, fallback: int = 0) -> int:
    number = float(value) if value is not None else math.nan
    return int(round(number)) if math.isfinite(number) else fallback


def launch_settings(catalog: Catalog, row: pd.Series | dict[str, Any]) -> list[LaunchSettings]:
    """The settings of a line's results row: one pool of replicas, or a disaggregated line's
    prefill pool and decode pool."""
    engine = catalog.assumptions.engine or DEFAULT_ENGINE
    constants = constants_for(engine)
    model = catalog.get("models", str(row["model"]))
    precision = catalog.get("precisions", str(row["precision"]))
    hardware = catalog.get("hardware", str(row["hardware"]))
    workload = catalog.get("workloads", str(row["workload"]))
    pp = _whole(row.get("pipeline_parallel", 1), 1)
    devices = _whole(row["tensor_parallel"], 1)
    tp = devices // pp
    ep = _whole(row.get("expert_parallel", 1), 1)
    speculative = engine.speculative
    replicas = _whole(row["replicas_planned"], 0)
    prefill = _whole(row.get("prefill_pool_planned", row.get("prefill_pool_replicas", 0)))
    revision = model.revision if model.revision and _COMMIT.match(model.revision) else None
    on_load = _on_load(precision)
    repository = model_repository(model) if on_load else None
    checkpoint = (
        f"{model.label} ({repository or 'its checkpoint'})"
        if on_load
        else f"a checkpoint of {model.label} quantised as {precision.label}"
    )
    common: dict[str, Any] = {
        "workload": workload.id,
        "model": model.id,
        "model_repository": repository,
        "checkpoint": checkpoint,
        "revision": revision,
        "hardware": hardware.id,
        "precision": precision.id,
        "engine": engine.name,
        "engine_version": engine.version,
        "tensor_parallel": tp,
        "expert_parallel": ep,
        "redundant_experts": catalog.assumptions.redundant_experts if ep > 1 else 0,
        "pipeline_parallel": pp,
        "devices_per_replica": max(devices, ep),
        "device_resource": device_resource(hardware),
        "memory_fraction": round(float(row["engine_memory_fraction"]), 4),
        "max_num_seqs": engine.max_num_seqs or catalog.assumptions.max_batch_sequences,
        "max_num_batched_tokens": engine.max_num_batched_tokens,
        "max_model_len": _whole(row["engine_max_model_len"]),
        "quantization": _quantization(precision),
        "kv_cache_dtype": "fp8" if precision.kv_bytes_per_value == 1 else "auto",
        "prefix_caching": caches_prefixes(engine),
        "cuda_graphs": engine.cuda_graphs,
        "chunked_prefill": constants.chunked_prefill
        if engine.chunked_prefill is None
        else engine.chunked_prefill,
        "speculative_method": speculative.method if speculative else None,
        "speculative_tokens": speculative.proposed_tokens if speculative else 0,
        "draft_model": speculative.draft_model if speculative else None,
        "planned_batch": max(_whole(row.get("load_batch"), 1), 1),
        "prompt_tokens": max(_whole(row.get("prompt_tokens_mean"), 1), 1),
        "output_tokens": max(_whole(row.get("output_tokens_mean"), 1), 1),
    }
    common["long_prompt_tokens"] = _second_length(row, common)
    common["nodes_per_replica"] = nodes_spanned(
        common["devices_per_replica"], hardware.devices_per_node, pp
    )
    counts = {"both": replicas, "prefill": prefill, "decode": replicas - prefill}
    devices_of = {role: common for _, role in line_pools(row)}
    prompts = hardware
    if (other := prefill_device(row)) is not None:  # the prompts on another device
        prompts = catalog.get("hardware", other)
        devices_of["prefill"] = common | {
            "hardware": prompts.id,
            "device_resource": device_resource(prompts),
            "nodes_per_replica": nodes_spanned(
                common["devices_per_replica"], prompts.devices_per_node, pp
            ),
        }
    if own := prefill_parallel_of(row):  # prefill replicas of their own size, of its kind
        devices_of["prefill"] = devices_of["prefill"] | {
            "tensor_parallel": own,
            "expert_parallel": own if ep > 1 else 1,
            "devices_per_replica": own,
            "nodes_per_replica": nodes_spanned(own, prompts.devices_per_node, pp),
        }
    return [
        LaunchSettings(line=name, role=role, replicas=counts[role], **devices_of[role])
        for name, role in line_pools(row)
    ]


def _second_length(row: pd.Series | dict[str, Any], common: dict[str, Any]) -> int:
    longest = min(
        _whole(row.get("prompt_tokens"), 0), common["max_model_len"] - common["output_tokens"]
    )
    return longest if longest >= 2 * common["prompt_tokens"] else 0
