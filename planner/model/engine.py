"""The serving engine's memory: the figures an engine prints at start-up, predicted before the
hardware.

Each engine sizes its KV pool from a share of memory, but a share of a different amount:

* vLLM (``Worker.determine_available_memory``): ``gpu_memory_utilization`` × the memory the
  driver reports, less the weights as loaded, the activation peak of a profiling pass over
  ``max_num_batched_tokens`` tokens, the memory allocated outside PyTorch and, in the releases
  that count them there, CUDA graphs.
* SGLang (``profile_max_num_token``): what is free after the weights load less
  (1 − ``mem_fraction_static``) × what was free before them, that is ``mem_fraction_static`` ×
  (memory − memory outside PyTorch) − weights; activations and graphs use the rest.
* TensorRT-LLM (``KvCacheCreator``): ``free_gpu_memory_fraction`` × what is free after a
  profiling pass: memory less weights, activations, memory outside PyTorch and graphs.

The pool is then cut into blocks of ``block_size`` tokens over every attention layer. The
constants that move between releases come from :mod:`planner.catalog.engines`, with their
sources.

With no engine profile in the catalog ``engine_modelled`` is 0 and the planner's own budget
(memory − weights − runtime overhead − reserve) stands.
"""

from __future__ import annotations

from typing import Any

from planner.model.expr import floor, is_missing, is_number, maximum, minimum, where
from planner.model.metric import derived, metric
from planner.model.units import GIB, MIB

VLLM_MEMORY = "vLLM Worker.determine_available_memory (docs: gpu_memory_utilization)"
SGLANG_MEMORY = (
    "SGLang model_runner profile_max_num_token; server_args mem_fraction_static defaults"
)
TRTLLM_MEMORY = "TensorRT-LLM KvCacheCreator (free_gpu_memory_fraction)"
VLLM_BLOCKS = "vLLM kv_cache_utils: blocks = pool ÷ (block size × bytes per token)"
VLLM_CHECK = "vLLM kv_cache_utils check_enough_kv_cache_memory (vLLM PR #2163, issue #16118)"

#: The budget rules' numbers (planner.catalog.engines.BUDGET_RULES).
SGLANG_RULE, TRTLLM_RULE = 2, 3


@metric("sequences", source=SGLANG_MEMORY, group="memory")
def sglang_graph_batch(memory_bytes: Any, tensor_parallel: Any) -> Any:
    """SGLang's largest decode CUDA-graph batch by default (``cuda_graph_max_bs``): 8 under
    20 GiB of memory; under 35 GiB 48, or 160 at TP ≥ 4; under 60 GiB 32 or 160; under 160 GiB
    256 or 512; else 512 [sequences]."""
    mib = memory_bytes / MIB
    wide = tensor_parallel >= 4
    return where(
        mib < 20 * 1024,
        8,
        where(
            mib < 35 * 1024,
            where(wide, 160, 48),
            where(
                mib < 60 * 1024,
                where(wide, 160, 32),
                where(mib < 160 * 1024, where(wide, 512, 256), 512),
            ),
        ),
    )


@metric("MiB", source=SGLANG_MEMORY, group="memory")
def sglang_reserved_mib(
    memory_bytes: Any, tensor_parallel: Any, max_num_batched_tokens: Any, sglang_graph_batch: Any
) -> Any:
    """What SGLang's default share leaves for activations and graphs [MiB]: 512 + 1.5 ×
    max(chunk, 2,048) + TP ÷ 8 × 1,024 + 2 × the largest graph batch, at least 10 GiB on a
    device of more than 60 GiB. 80 GiB at TP 1, 8,192-token chunks: 13,440 MiB."""
    reserved = (
        512
        + 1.5 * maximum(max_num_batched_tokens, 2048)
        + tensor_parallel / 8 * 1024
        + 2 * sglang_graph_batch
    )
    return where(memory_bytes / MIB > 60 * 1024, maximum(reserved, 10 * 1024), reserved)


@metric("fraction", source=SGLANG_MEMORY, group="memory")
def engine_memory_fraction(
    memory_fraction_setting: Any,
    engine_fraction_rule: Any,
    memory_bytes: Any,
    tensor_parallel: Any,
    sglang_reserved_mib: Any,
) -> Any:
    """The share of memory the engine sizes its pool from: the profile's (or its release's
    fixed default), else SGLang's own default [fraction].

    SGLang to 0.4: 0.88 at TP 1, 0.87 at 2, 0.85 at 4, 0.81 at 8, 0.79 at 16. From 0.5:
    (memory − reserved) ÷ memory, in MiB (not rounded to three places as SGLang does: within
    0.0005). An 80 GiB H100 at TP 1 with 8,192-token chunks: (81,920 − 13,440) ÷ 81,920 = 0.836.
    """
    tp = tensor_parallel
    by_tp = where(
        tp >= 16, 0.79, where(tp >= 8, 0.81, where(tp >= 4, 0.85, where(tp >= 2, 0.87, 0.88)))
    )
    mib = memory_bytes / MIB
    default = where(engine_fraction_rule == 1, by_tp, (mib - sglang_reserved_mib) / mib)
    return where(memory_fraction_setting > 0, memory_fraction_setting, default)


@metric("B", source=f"{VLLM_MEMORY}; {SGLANG_MEMORY}; {TRTLLM_MEMORY}", group="memory")
def engine_memory_bytes(
    memory_bytes: Any,
    engine_memory_fraction: Any,
    engine_budget_rule: Any,
    weight_bytes_per_device: Any,
    activation_peak_bytes: Any,
    non_torch_bytes: Any,
    cuda_graph_bytes: Any,
) -> Any:
    """The engine's share of one device: its fraction × what it takes a share of [B]: the
    memory the driver reports (vLLM: 0.9 × 79.19 GiB = 71.27 GiB on an H100 SXM); that less
    the memory outside PyTorch, free before the weights load (SGLang); that less weights,
    activation peak, memory outside PyTorch and graphs, free after a profiling pass
    (TensorRT-LLM)."""
    before_weights = memory_bytes - non_torch_bytes
    after_profile = before_weights - weight_bytes_per_device - activation_peak_bytes
    after_profile = after_profile - cuda_graph_bytes
    base = where(
        engine_budget_rule == TRTLLM_RULE,
        after_profile,
        where(engine_budget_rule == SGLANG_RULE, before_weights, memory_bytes),
    )
    return engine_memory_fraction * base


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
    few hidden-width tensors (input, residual, norm, attention output: 4 × hidden), times the
    release's fitted ``activation_scale``. The dummy sampling step that follows, over the
    whole vocabulary for min(``max_num_seqs``, T) sequences, peaks after the forward pass's
    activations are freed: the peak is the larger of the two. Llama 3.1 8B, 8,192 tokens, 256
    sequences at 38 B a logit: max(0.91 GiB, 1.16 GiB) = 1.16 GiB.
    """
    per_token = 3 * mlp_width / tensor_parallel + 4 * hidden_size
    forward = max_num_batched_tokens * activation_bytes * per_token * activation_scale
    sampler = minimum(max_batch_sequences, max_num_batched_tokens) * vocab_size
    return maximum(forward, sampler * sampler_bytes_per_logit)


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


@metric("B", source=f"{VLLM_MEMORY}; {SGLANG_MEMORY}; {TRTLLM_MEMORY}", group="memory")
def kv_pool_bytes(
    engine_memory_bytes: Any,
    engine_budget_rule: Any,
    weight_bytes_per_device: Any,
    activation_peak_bytes: Any,
    non_torch_bytes: Any,
    cuda_graph_bytes: Any,
    cuda_graphs_in_budget: Any,
) -> Any:
    """The engine's KV cache per device: its share less what the share still holds [B].

    vLLM: less weights, activation peak, non-torch memory and, where the release counts them
    in the budget, CUDA graphs: 0.9 × 79.19 GiB − 14.99 GiB − 1.19 GiB − 0.19 GiB =
    54.90 GiB. SGLang: less the weights. TensorRT-LLM: the share itself. Negative when nothing
    is left (the engine refuses to start).
    """
    graphs = where(cuda_graphs_in_budget > 0, cuda_graph_bytes, 0)
    vllm = weight_bytes_per_device + activation_peak_bytes + non_torch_bytes + graphs
    held = where(
        engine_budget_rule == TRTLLM_RULE,
        0,
        where(engine_budget_rule == SGLANG_RULE, weight_bytes_per_device, vllm),
    )
    return engine_memory_bytes - held


@metric("tokens", source=VLLM_BLOCKS, group="memory")
def kv_pool_tokens(
    kv_pool_bytes: Any,
    kv_bytes_per_token: Any,
    kv_bytes_per_token_windowed: Any,
    kv_block_tokens: Any,
) -> Any:
    """Tokens the pool holds, as the engine prints it (``GPU KV cache size``): whole blocks of
    ``block_size`` tokens over every attention layer, windowed ones included [tokens].

    54.90 GiB at 128 KiB per token in blocks of 16: 449,728 tokens. A pool of a whole number
    of blocks stays whole whatever order a spreadsheet sums it in (a part in 10⁹ is forgiven).
    """
    per_block = kv_block_tokens * (kv_bytes_per_token + kv_bytes_per_token_windowed)
    return floor(maximum(kv_pool_bytes, 0) / per_block + 1e-9) * kv_block_tokens


@metric("tokens", source="vLLM engine argument max_model_len", group="memory")
def engine_max_model_len(max_model_len_setting: Any, tokens_per_sequence: Any) -> Any:
    """The longest request the engine accepts: the profile's ``max_model_len``, else the
    workload's longest prompt + promised output [tokens]."""
    return where(max_model_len_setting > 0, max_model_len_setting, tokens_per_sequence)


VLLM_LENGTH = "vLLM serving: a request past max_model_len is refused"


@metric("", source=VLLM_LENGTH, kind="bool", group="memory")
def engine_accepts_requests(engine_max_model_len: Any, tokens_per_sequence: Any) -> Any:
    """Whether the engine accepts the workload's longest request: its prompt and promised
    output within ``max_model_len`` (vLLM answers a longer one with an error, "This model's
    maximum context length is ... tokens")."""
    return engine_max_model_len >= tokens_per_sequence


@metric("", source=f"{VLLM_CHECK}", kind="bool", group="memory")
def engine_starts(engine_modelled: Any, kv_pool_tokens: Any, engine_max_model_len: Any) -> Any:
    """Whether the engine starts: its pool holds one request of ``max_model_len`` tokens (vLLM
    refuses to start otherwise: "To serve at least one request with the model's max seq len
    (X), (Y GiB KV cache is needed, which is larger than the available KV cache memory").
    Without an engine profile, or where the architecture leaves the engine's pool unknown, the
    planner's own budget decides (``max_sequences``).

    The pool's tokens count every attention layer, so a model with sliding-window layers is
    held to a little more than the engine asks of it."""
    modelled = (engine_modelled > 0) & is_number(kv_pool_tokens)
    return where(modelled, kv_pool_tokens >= engine_max_model_len, True)


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
