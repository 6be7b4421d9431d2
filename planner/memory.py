"""Memory metrics: weight payload, KV cache, the per-device budget and safe concurrency.

Sources are paragraphs of the seed text (``shared/seed``), numbered from 1 at its first paragraph:
¶3 weight payload and GB vs GiB, ¶4 headroom for concurrent requests, ¶5 the KV-cache formula,
¶6 its worked example, ¶9 the memory budget and the promised maximum tokens.
"""

from __future__ import annotations

from typing import Any

from .expr import floor, maximum, where
from .metric import derived, metric
from .units import GB, GIB, MIB

SEED = "seed"


@metric("B", source=f"{SEED} ¶3", kind="integer", group="memory")
def weight_bytes(parameters: Any, weight_bytes_per_param: Any) -> Any:
    """Weight payload: parameter count × storage bytes per parameter [B].

    Seed ¶3: 7e9 parameters at 2 bytes is a 14,000,000,000-byte payload, about 13.04 GiB.
    Quantisation scales, runtime buffers and allocator overhead are not in this figure; they are
    in ``runtime_overhead_bytes``.
    """
    return parameters * weight_bytes_per_param


@metric("B", source=f"{SEED} ¶5-6", kind="integer", group="memory")
def kv_bytes_per_token(layers: Any, kv_heads: Any, head_dim: Any, kv_bytes_per_value: Any) -> Any:
    """KV-cache bytes for one cached token: 2 × layers × KV heads × head dim × bytes per value [B].

    The 2 counts keys and values. KV heads, not query heads: grouped-query attention shares keys
    and values across query heads. Seed ¶6: 32 layers, 8 KV heads, head dim 128 and 2-byte values
    give 131,072 B (128 KiB) per token.
    """
    return 2 * layers * kv_heads * head_dim * kv_bytes_per_value


@metric("tokens", source=f"{SEED} ¶6, ¶9", kind="integer", group="memory")
def tokens_per_sequence(prompt_tokens: Any, max_output_tokens: Any) -> Any:
    """Tokens a sequence may hold: prompt + the promised maximum output [tokens].

    Reserving the promised maximum, not the current length, is what guarantees that an admitted
    request can complete (seed ¶9).
    """
    return prompt_tokens + max_output_tokens


@metric("B", source=f"{SEED} ¶6", kind="integer", group="memory")
def kv_bytes_per_sequence(kv_bytes_per_token: Any, tokens_per_sequence: Any) -> Any:
    """KV-cache bytes reserved for one sequence at its maximum length [B].

    Seed ¶6: 4,096 tokens at 128 KiB per token need 512 MiB.
    """
    return kv_bytes_per_token * tokens_per_sequence


@metric("B", source=f"{SEED} ¶9", group="memory")
def kv_budget_bytes(
    memory_bytes: Any, weight_bytes: Any, runtime_overhead_bytes: Any, reserve_bytes: Any
) -> Any:
    """Memory left for the KV cache: device memory − weights − runtime overhead − reserve [B].

    Seed ¶9: 16 GiB − 4 GiB weights − 2 GiB runtime − 2 GiB reserve leaves 8 GiB. Negative when
    the weights alone do not fit.
    """
    return memory_bytes - weight_bytes - runtime_overhead_bytes - reserve_bytes


@metric("sequences", source=f"{SEED} ¶9", kind="integer", group="memory")
def max_sequences(kv_budget_bytes: Any, kv_bytes_per_sequence: Any) -> Any:
    """Concurrent sequences whose maximum-length cache fits the budget: ⌊budget ÷ per sequence⌋.

    Zero when the budget is negative. Seed ¶9: 8 GiB ÷ 512 MiB = 16; with 1,024 more output tokens
    per sequence (5,120 tokens, 640 MiB) it is 12.
    """
    return maximum(0, floor(kv_budget_bytes / kv_bytes_per_sequence))


@metric("B", source=f"{SEED} ¶6", group="memory")
def kv_bytes_at_concurrency(concurrency: Any, kv_bytes_per_sequence: Any) -> Any:
    """KV cache the workload's concurrency needs at maximum length [B].

    Seed ¶6: sixteen 4,096-token sequences need 8 GiB.
    """
    return concurrency * kv_bytes_per_sequence


@metric("", source=f"{SEED} ¶4, ¶9", kind="bool", group="memory")
def fits(concurrency: Any, max_sequences: Any) -> Any:
    """Whether the workload's concurrency fits with every sequence at its promised maximum.

    Loading the weights is not enough (seed ¶4): the cache for the promised context and output
    of every concurrent request must fit as well.
    """
    return concurrency <= max_sequences


@metric("", source=f"{SEED} ¶4, ¶9", kind="text", group="memory")
def fit_reason(weight_bytes: Any, memory_bytes: Any, max_sequences: Any, fits: Any) -> Any:
    """Why a candidate fits or not, in words."""
    return where(
        fits,
        "fits",
        where(
            weight_bytes > memory_bytes,
            "weights exceed device memory",
            where(
                max_sequences < 1,
                "no room for one maximum-length sequence",
                "concurrency exceeds KV capacity",
            ),
        ),
    )


@metric("B", source=f"{SEED} ¶9", group="memory")
def memory_headroom_bytes(kv_budget_bytes: Any, kv_bytes_at_concurrency: Any) -> Any:
    """KV budget left after the workload's concurrency at maximum length [B]; negative if short."""
    return kv_budget_bytes - kv_bytes_at_concurrency


def _per(size: float) -> Any:
    return lambda value: value / size


for _name, _of, _size, _unit in (
    ("memory_gib", "memory_bytes", GIB, "GiB"),
    ("weight_gb", "weight_bytes", GB, "GB"),
    ("weight_gib", "weight_bytes", GIB, "GiB"),
    ("kv_mib_per_sequence", "kv_bytes_per_sequence", MIB, "MiB"),
    ("kv_budget_gib", "kv_budget_bytes", GIB, "GiB"),
    ("kv_gib_at_concurrency", "kv_bytes_at_concurrency", GIB, "GiB"),
):
    derived(_name, _of, _per(_size), _unit, f"{_of} in {_unit}", group="memory")
