"""The serving engine's memory: the figures vLLM prints at start-up, predicted before the hardware.

vLLM (``Worker.determine_available_memory``) gives the KV cache what is left of its share of the
device after one profiling forward pass: ``gpu_memory_utilization`` × the memory the driver
reports, less the weights as loaded, the activation peak of a batch of
``max_num_batched_tokens`` tokens, the memory allocated outside PyTorch (CUDA context, NCCL
buffers under tensor parallelism) and, in the releases that count them there, CUDA graphs. The
pool is then cut into blocks of ``block_size`` tokens over every attention layer. The constants
that move between releases come from :mod:`planner.catalog.engines`, with their sources.

With no engine profile in the catalog ``engine_modelled`` is 0 and the planner's own budget
(memory − weights − runtime overhead − reserve) stands.
"""

from __future__ import annotations

from typing import Any

from planner.model.expr import floor, is_missing, maximum, minimum, where
from planner.model.metric import derived, metric
from planner.model.units import GIB

VLLM_MEMORY = "vLLM Worker.determine_available_memory (docs: gpu_memory_utilization)"
VLLM_BLOCKS = "vLLM kv_cache_utils: blocks = pool ÷ (block size × bytes per token)"


@metric("B", source=VLLM_MEMORY, group="memory")
def engine_memory_bytes(memory_bytes: Any, gpu_memory_utilization: Any) -> Any:
    """The engine's share of one device: ``gpu_memory_utilization`` × the memory the driver
    reports [B]. 0.9 × 79.19 GiB = 71.27 GiB on an H100 SXM."""
    return gpu_memory_utilization * memory_bytes


@metric("B", source=f"{VLLM_MEMORY}: profile_run over max_num_batched_tokens", group="memory")
def activation_peak_bytes(
    max_num_batched_tokens: Any,
    activation_bytes: Any,
    mlp_width: Any,
    hidden_size: Any,
    tensor_parallel: Any,
    vocab_size: Any,
    max_batch_sequences: Any,
    activation_scale: Any,
    sampler_bytes_per_logit: Any,
) -> Any:
    """Activation peak of the engine's profiling pass, per device [B].

    A batch of T = ``max_num_batched_tokens`` tokens peaks inside an MLP: the gate-and-up output
    (2 × width), the activated product (width), per device under tensor parallelism, beside a
    few hidden-width tensors (input, residual, norm, attention output: 4 × hidden). Times the
    release's fitted ``activation_scale``, plus the sampler's logits for the
    min(``max_num_seqs``, T) sequences of the dummy sampling step over the whole vocabulary.
    """
    per_token = 3 * mlp_width / tensor_parallel + 4 * hidden_size
    forward = max_num_batched_tokens * activation_bytes * per_token * activation_scale
    sampler = minimum(max_batch_sequences, max_num_batched_tokens) * vocab_size
    return forward + sampler * sampler_bytes_per_logit


@metric("B", source=f"{VLLM_MEMORY}: non_torch_memory", group="memory")
def non_torch_bytes(
    tensor_parallel: Any,
    engine_non_torch_bytes: Any,
    engine_non_torch_tp_bytes: Any,
    calibrated_non_torch_bytes: Any,
    calibrated_non_torch_tp_bytes: Any,
) -> Any:
    """Memory the engine allocates outside PyTorch per device: CUDA context and, under tensor
    parallelism, NCCL and custom all-reduce buffers [B]. As measured on this hardware where it
    is calibrated, else the engine release's constant."""
    single = where(
        is_missing(calibrated_non_torch_bytes), engine_non_torch_bytes, calibrated_non_torch_bytes
    )
    parallel = where(
        is_missing(calibrated_non_torch_tp_bytes),
        engine_non_torch_tp_bytes,
        calibrated_non_torch_tp_bytes,
    )
    return where(tensor_parallel > 1, parallel, single)


@metric("B", source=VLLM_MEMORY, group="memory")
def kv_pool_bytes(
    engine_memory_bytes: Any,
    weight_bytes_per_device: Any,
    activation_peak_bytes: Any,
    non_torch_bytes: Any,
    cuda_graph_bytes: Any,
    cuda_graphs_in_budget: Any,
) -> Any:
    """The engine's KV cache per device: its share less weights, activation peak, non-torch
    memory and, where the release counts them in the budget, CUDA graphs [B].

    0.9 × 79.19 GiB − 14.99 GiB − 1.19 GiB − 0.19 GiB = 54.90 GiB. Negative when nothing is
    left (the engine refuses to start).
    """
    graphs = where(cuda_graphs_in_budget > 0, cuda_graph_bytes, 0)
    return (
        engine_memory_bytes
        - weight_bytes_per_device
        - activation_peak_bytes
        - non_torch_bytes
        - graphs
    )


@metric("tokens", source=VLLM_BLOCKS, group="memory")
def kv_pool_tokens(
    kv_pool_bytes: Any,
    kv_bytes_per_token: Any,
    kv_bytes_per_token_windowed: Any,
    kv_block_tokens: Any,
) -> Any:
    """Tokens the pool holds, as the engine prints it (``GPU KV cache size``): whole blocks of
    ``block_size`` tokens over every attention layer, windowed ones included [tokens].

    54.90 GiB at 128 KiB per token in blocks of 16: 449,728 tokens.
    """
    per_block = kv_block_tokens * (kv_bytes_per_token + kv_bytes_per_token_windowed)
    return floor(maximum(kv_pool_bytes, 0) / per_block) * kv_block_tokens


@metric("tokens", source="vLLM engine argument max_model_len", group="memory")
def engine_max_model_len(max_model_len_setting: Any, tokens_per_sequence: Any) -> Any:
    """The longest request the engine accepts: the profile's ``max_model_len``, else the
    workload's longest prompt + promised output [tokens]."""
    return where(max_model_len_setting > 0, max_model_len_setting, tokens_per_sequence)


@metric("requests", source=f"{VLLM_BLOCKS}: Maximum concurrency", group="memory")
def engine_max_concurrency(kv_pool_tokens: Any, engine_max_model_len: Any) -> Any:
    """Requests of ``max_model_len`` tokens the pool holds at once, as the engine prints it:
    pool tokens ÷ max_model_len [requests]."""
    return kv_pool_tokens / engine_max_model_len


for _name, _of in (
    ("engine_memory_gib", "engine_memory_bytes"),
    ("activation_peak_gib", "activation_peak_bytes"),
    ("non_torch_gib", "non_torch_bytes"),
    ("kv_pool_gib", "kv_pool_bytes"),
):
    derived(_name, _of, lambda value: value / GIB, "GiB", f"{_of} in GiB", group="memory")
