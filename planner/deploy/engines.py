"""The command that starts an engine with a pool's settings, for vLLM, SGLang and TensorRT-LLM.

Each command is a list of arguments (never a shell string), so a catalog's text cannot become
shell syntax; :func:`shell_line` quotes it for the scripts. Every flag it writes is one the
engine's own argument parser defines: the tests parse every generated command against the
option lists of the engines' parsers kept in ``tests/fixtures/engines`` (printed from vLLM
0.33.0's and SGLang 0.5.23's wheels; TensorRT-LLM's read from its ``serve.py``, which no
installable wheel carries) and read each setting back. vLLM's ``--no-enable-prefix-caching``
and ``--no-enable-chunked-prefill`` are the spellings its releases from the 0.6 series to
today all accept.

Settings an engine takes only in a file are written to that file (TensorRT-LLM's
``--extra_llm_api_options`` YAML: block reuse, the cache's type, attention data parallelism,
speculative decoding), and the command names it.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from planner.deploy.settings import LaunchSettings

__all__ = [
    "IMAGES",
    "MODEL",
    "OPTIONS_FILE",
    "PORT",
    "Launch",
    "launch",
    "shell_line",
    "shell_word",
]

#: The port every engine serves its OpenAI-compatible API on.
PORT = 8000

#: TensorRT-LLM's options file, beside the command (the manifest mounts it from a ConfigMap).
OPTIONS_FILE = "extra-llm-api-options.yaml"

#: Each engine's container image, tagged with the release the plan assumed.
IMAGES = {
    "vllm": "vllm/vllm-openai:v{version}",
    "sglang": "lmsysorg/sglang:v{version}",
    "tensorrt-llm": "nvcr.io/nvidia/tensorrt-llm/release:{version}",
}


@dataclass(frozen=True)
class Launch:
    """A pool's engine command: its arguments (the model first after the command words for
    vLLM and TensorRT-LLM), the extra options file TensorRT-LLM reads (None for the others)
    and notes on what the command cannot carry."""

    argv: tuple[str, ...]
    options_file: dict[str, Any] | None
    notes: tuple[str, ...]


#: The model to load, a variable: the scripts set it (the model's repository unless the user
#: gives another, :attr:`LaunchSettings.model_repository`), the manifests write it out.
MODEL = "${MODEL}"


def _model(settings: LaunchSettings) -> str:
    return MODEL


def _vllm(s: LaunchSettings) -> Launch:
    argv = ["vllm", "serve", _model(s), "--host", "0.0.0.0", "--port", str(PORT)]
    argv += ["--served-model-name", s.model]
    if s.revision:
        argv += ["--revision", s.revision]
    if s.expert_parallel > 1:  # experts spread, attention data parallel
        argv += ["--tensor-parallel-size", "1", "--data-parallel-size", str(s.expert_parallel)]
        argv += ["--enable-expert-parallel"]
        if s.redundant_experts:  # EPLB places copies of the busiest experts in the spare slots
            balance = {"num_redundant_experts": s.redundant_experts}
            argv += ["--enable-eplb", "--eplb-config", json.dumps(balance, sort_keys=True)]
    else:
        argv += ["--tensor-parallel-size", str(s.tensor_parallel)]
    if s.pipeline_parallel > 1:  # a node a stage, over Ray (vLLM's multi-node serving)
        argv += ["--pipeline-parallel-size", str(s.pipeline_parallel)]
    argv += ["--gpu-memory-utilization", f"{s.memory_fraction:g}"]
    argv += ["--max-num-seqs", str(s.max_num_seqs)]
    argv += ["--max-num-batched-tokens", str(s.max_num_batched_tokens)]
    argv += ["--max-model-len", str(s.max_model_len)]
    if s.quantization:
        argv += ["--quantization", s.quantization]
    argv += ["--kv-cache-dtype", s.kv_cache_dtype]
    argv += ["--enable-prefix-caching" if s.prefix_caching else "--no-enable-prefix-caching"]
    argv += ["--enable-chunked-prefill" if s.chunked_prefill else "--no-enable-chunked-prefill"]
    if not s.cuda_graphs:
        argv += ["--enforce-eager"]
    if s.speculative_method:
        config: dict[str, Any] = {
            "method": {"draft": "draft_model", "eagle": "eagle", "mtp": "mtp"}[
                s.speculative_method
            ],
            "num_speculative_tokens": s.speculative_tokens,
        }
        if s.draft_model:
            config["model"] = s.draft_model
        argv += ["--speculative-config", json.dumps(config, sort_keys=True)]
    if s.role != "both":
        connector = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
        argv += ["--kv-transfer-config", json.dumps(connector, sort_keys=True)]
    return Launch(tuple(argv), None, ())


def _sglang(s: LaunchSettings) -> Launch:
    argv = ["python3", "-m", "sglang.launch_server", "--model-path", _model(s)]
    argv += ["--host", "0.0.0.0", "--port", str(PORT), "--served-model-name", s.model]
    if s.revision:
        argv += ["--revision", s.revision]
    if s.expert_parallel > 1:
        ep = str(s.expert_parallel)
        argv += ["--tp-size", ep, "--ep-size", ep, "--dp-size", ep, "--enable-dp-attention"]
        if s.redundant_experts:
            argv += ["--ep-num-redundant-experts", str(s.redundant_experts), "--enable-eplb"]
    else:
        argv += ["--tp-size", str(s.tensor_parallel)]
    if s.pipeline_parallel > 1:
        argv += ["--pp-size", str(s.pipeline_parallel)]
    argv += ["--mem-fraction-static", f"{s.memory_fraction:g}"]
    argv += ["--max-running-requests", str(s.max_num_seqs)]
    argv += ["--chunked-prefill-size", str(s.max_num_batched_tokens if s.chunked_prefill else -1)]
    argv += ["--context-length", str(s.max_model_len)]
    if s.quantization:
        argv += ["--quantization", s.quantization]
    argv += ["--kv-cache-dtype", "fp8_e4m3" if s.kv_cache_dtype == "fp8" else "auto"]
    if not s.prefix_caching:
        argv += ["--disable-radix-cache"]
    if not s.cuda_graphs:
        argv += ["--disable-cuda-graph"]
    notes = []
    if s.speculative_method:
        algorithm = {"draft": "STANDALONE", "eagle": "EAGLE", "mtp": "EAGLE"}[s.speculative_method]
        argv += ["--speculative-algorithm", algorithm]
        argv += ["--speculative-num-steps", str(s.speculative_tokens)]
        argv += ["--speculative-eagle-topk", "1"]
        argv += ["--speculative-num-draft-tokens", str(s.speculative_tokens + 1)]
        if s.draft_model:
            argv += ["--speculative-draft-model-path", s.draft_model]
        if s.speculative_method == "mtp":
            notes.append("SGLang runs a model's MTP layers as its EAGLE draft")
    if s.role != "both":
        argv += ["--disaggregation-mode", s.role]
    return Launch(tuple(argv), None, tuple(notes))


def _tensorrt(s: LaunchSettings) -> Launch:
    argv = ["trtllm-serve", _model(s), "--backend", "pytorch"]
    argv += ["--host", "0.0.0.0", "--port", str(PORT)]
    parallel = max(s.tensor_parallel, s.expert_parallel)
    argv += ["--tp_size", str(parallel)]
    if s.expert_parallel > 1:
        argv += ["--ep_size", str(s.expert_parallel)]
    if s.pipeline_parallel > 1:
        argv += ["--pp_size", str(s.pipeline_parallel)]
    argv += ["--max_batch_size", str(s.max_num_seqs)]
    argv += ["--max_num_tokens", str(s.max_num_batched_tokens)]
    argv += ["--max_seq_len", str(s.max_model_len)]
    argv += ["--kv_cache_free_gpu_memory_fraction", f"{s.memory_fraction:g}"]
    options: dict[str, Any] = {
        "kv_cache_config": {
            "enable_block_reuse": s.prefix_caching,
            "dtype": s.kv_cache_dtype,
        },
        "enable_chunked_prefill": s.chunked_prefill,
    }
    if not s.cuda_graphs:
        options["cuda_graph_config"] = None  # no graphs: every step runs eagerly
    if s.expert_parallel > 1:
        options["enable_attention_dp"] = True
    if s.speculative_method:
        kind = {"draft": "Draft_Target", "eagle": "Eagle", "mtp": "MTP"}[s.speculative_method]
        spec: dict[str, Any] = {"decoding_type": kind}
        if kind == "MTP":
            spec["num_nextn_predict_layers"] = s.speculative_tokens
        else:
            spec["max_draft_len"] = s.speculative_tokens
        if s.draft_model:
            spec["speculative_model_dir"] = s.draft_model
        options["speculative_config"] = spec
    argv += ["--extra_llm_api_options", OPTIONS_FILE]
    notes = ["the model must be a checkpoint in the precision planned: TensorRT-LLM reads it"]
    if s.role != "both":
        notes.append(
            "disaggregated pools are started by trtllm-serve disaggregated with a configuration "
            "of both pools, which is not written: start each pool with this command and its role"
        )
    if s.redundant_experts:
        notes.append(
            f"the {s.redundant_experts} redundant expert slots planned are set in TensorRT-LLM's "
            "MoE load balancer configuration, which is not written"
        )
    return Launch(tuple(argv), options, tuple(notes))


_BUILDERS = {"vllm": _vllm, "sglang": _sglang, "tensorrt-llm": _tensorrt}


def launch(settings: LaunchSettings) -> Launch:
    """The engine command that starts one replica of a pool with its settings; a replica of
    several nodes says that it spans them."""
    found = _BUILDERS[settings.engine](settings)
    nodes = settings.nodes_per_replica
    if nodes <= 1:
        return found
    each = settings.devices_per_replica // nodes
    stages = ", one pipeline stage each" if settings.pipeline_parallel > 1 else ""
    spans = (
        f"a replica spans {nodes} nodes of {each} devices{stages}: start the engine's "
        "multi-node launch over them (a Ray cluster for vLLM, --nnodes and --node-rank for "
        "SGLang, mpirun for TensorRT-LLM); one pod does not hold it"
    )
    return replace(found, notes=(*found.notes, spans))


#: The shell variables a command may name, each filled by the script's shell: the model to
#: load, the measurements folder, the time stamp of the run. Nothing else is expanded.
VARIABLES = re.compile(r"(\$\{(?:MODEL|OUT|STAMP)\})")


def shell_word(argument: str) -> str:
    """One argument as one shell word: every part quoted as it is, but the variables of
    :data:`VARIABLES`, which the shell fills (in double quotes: one word whatever they hold)."""
    parts = VARIABLES.split(argument)
    word = "".join(f'"{p}"' if VARIABLES.fullmatch(p) else shlex.quote(p) for p in parts if p)
    return word or "''"


def shell_line(argv: Sequence[str]) -> str:
    """The command quoted for a POSIX shell, each argument one word (:func:`shell_word`)."""
    return " ".join(shell_word(a) for a in argv)
