"""Latency at the forecast load with prefix caching and speculative decoding: the open-loop batch
counts a verifying step and the tokens it emits, a chunked prompt prefills only its uncached
tokens; with both features off the figures are the plain ones, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from planner.model.expr import maximum, where
from planner.model.load import (
    SPECULATION_OFF,
    chunked_prefill_s,
    first_token_chunks,
    open_loop_batch_bound,
)

#: The seed's 7B model at 700 GB/s and 400 TFLOP/s, 4,096 cached tokens of 128 KiB per sequence,
#: 2 requests/s on one replica, 257 output tokens, 0.1 s TTFT and prefill stall, no overheads
#: (tests/test_load.py works its plain batch: 27.5950 sequences).
OPEN_LOOP = dict(
    decode_batch=np.array([64.0]),
    forecast_requests_per_s=np.array([2.0]),
    decode_pool_replicas=np.array([1.0]),
    decode_entry_s=np.array([0.1]),
    output_tokens_mean=np.array([257.0]),
    prefill_stall_s=np.array([0.1]),
    network_s=np.array([0.0]),
    decode_weight_bytes_per_step=np.array([14e9]),
    kv_read_bytes_per_sequence_step=np.array([4096.0 * 131_072]),
    memory_bandwidth_bytes_per_s=np.array([700e9]),
    bandwidth_efficiency=1.0,
    decode_flops_per_token=np.array([14e9]),
    matmul_padding_s=0.0,
    achieved_compute_flops_per_s=np.array([400e12]),
    allreduce_s_per_token=np.array([0.0]),
    step_overhead_s=0.0,
    step_overhead_per_sequence_s=0.0,
)


def test_a_speculative_open_loop_batch_by_hand() -> None:
    """k = 3 proposals emitting E = 2 tokens a step: 256 ÷ 2 = 128 steps after the first token,
    each verifying 4 positions per sequence and writing 3 × 131,072 = 393,216 B more of cache.
    The proposer reads 0.7 GB a forward (1 ms at 700 GB/s; 3 ms a step) and 4,096 B of its own
    cache per token over the 4,096-token context, and does 1e9 FLOP a sequence a forward.

    Memory line of the target with the proposer's memory line: intercept 128 × (20 ms + 3 ms) =
    2.944 s; slope 0.1 (stall) + 128 × 536,870,912 ÷ 700e9 = 0.0981707 (cache) + 128 × 393,216
    ÷ 700e9 = 0.0000719 (writes) + 128 × 3 × 16,777,216 ÷ 700e9 = 0.0092035 (draft cache) =
    0.2074461 s a sequence: B = (1 + 2 × 2.944) ÷ (1 − 2 × 0.2074461) = 11.77219. The other
    three pairings give less: compute line (128 × 4 × 14e9 ÷ 400e12 = 0.01792 s a sequence
    more, no intercept) with the proposer's memory line 3.21799, memory line with the
    proposer's arithmetic (128 × 3e9 ÷ 400e12 = 0.00096 s a sequence) 10.17296, both
    arithmetic 1.76710. Plain, the batch is 27.5950: requests done sooner keep fewer in flight.
    """
    speculative = dict(
        verify_tokens_per_sequence=np.array([4.0]),
        speculative_tokens_per_step=np.array([2.0]),
        verify_kv_write_bytes_per_sequence_step=np.array([3 * 131_072.0]),
        speculative_tokens=np.array([3.0]),
        draft_read_bytes_per_forward=np.array([0.7e9]),
        mean_context_tokens=np.array([4096.0]),
        draft_kv_bytes_per_token=np.array([4096.0]),
        draft_flops_per_token=np.array([1e9]),
    )
    batch = open_loop_batch_bound(**OPEN_LOOP, **speculative)[0]
    assert batch == pytest.approx(11.77219, abs=1e-5)
    # Little's law holds there: 1 + rate × e2e(B), the step worked out again at B
    memory = (14e9 + batch * (4096 * 131_072 + 3 * 131_072)) / 700e9
    compute = batch * 4 * 14e9 / 400e12 + batch * 4096 * 131_072 / 700e9
    draft = 3 * max((0.7e9 + batch * 4096 * 4096) / 700e9, batch * 1e9 / 400e12)
    e2e = 0.1 + 256 / 2 * (max(memory, compute) + draft) + (batch - 1) * 0.1
    assert 1 + 2 * e2e == pytest.approx(batch, rel=1e-12)


def _plain_bound(args: dict[str, np.ndarray]) -> np.ndarray:
    """The plain open-loop bound written out again from its two lines in B (the formula before
    speculation): e2e = TTFT − stall + network + (n − 1) × (overhead + weights ÷ bandwidth) +
    B × (stall + (n − 1) × (all-reduce + per sequence + cache ÷ bandwidth)), the compute line
    with FLOP ÷ compute + padding in place of the weights."""
    a = args
    rate = a["forecast_requests_per_s"] / a["decode_pool_replicas"]
    steps = a["output_tokens_mean"] - 1
    bandwidth = a["memory_bandwidth_bytes_per_s"] * a["bandwidth_efficiency"]
    base = (
        a["decode_entry_s"] - a["prefill_stall_s"] + a["network_s"] + steps * a["step_overhead_s"]
    )
    per = a["allreduce_s_per_token"] + a["step_overhead_per_sequence_s"]
    per_batch = a["prefill_stall_s"] + steps * per
    caches = steps * a["kv_read_bytes_per_sequence_step"] / bandwidth

    def point(intercept: np.ndarray, slope: np.ndarray) -> np.ndarray:
        room = 1 - rate * slope
        return where(room > 0, (1 + rate * intercept) / where(room > 0, room, 1), a["decode_batch"])

    memory = point(base + steps * a["decode_weight_bytes_per_step"] / bandwidth, per_batch + caches)
    multiply = steps * a["decode_flops_per_token"] / a["achieved_compute_flops_per_s"]
    compute = point(base + steps * a["matmul_padding_s"], per_batch + multiply + caches)
    return maximum(memory, compute)


def test_with_both_features_off_the_load_figures_are_the_plain_ones_exactly() -> None:
    """Across 200 random replicas (rates, models, overheads, TP all-reduce), speculation off
    (k = 0: one position, one token, no proposer) and no prefix hit give the plain formulas'
    figures to the last bit."""
    rng = np.random.default_rng(7)
    n = 200
    args = dict(
        decode_batch=rng.integers(1, 256, n).astype(float),
        forecast_requests_per_s=rng.uniform(0.01, 20, n),
        decode_pool_replicas=rng.integers(1, 8, n).astype(float),
        decode_entry_s=rng.uniform(0.01, 2, n),
        output_tokens_mean=rng.uniform(2, 2000, n),
        prefill_stall_s=rng.uniform(0, 0.5, n),
        network_s=rng.uniform(0, 0.1, n),
        decode_weight_bytes_per_step=rng.uniform(1e9, 400e9, n),
        kv_read_bytes_per_sequence_step=rng.uniform(1e6, 2e9, n),
        memory_bandwidth_bytes_per_s=rng.uniform(1e12, 8e12, n),
        bandwidth_efficiency=rng.uniform(0.5, 0.95, n),
        decode_flops_per_token=rng.uniform(1e9, 1e12, n),
        matmul_padding_s=rng.uniform(0, 1e-3, n),
        achieved_compute_flops_per_s=rng.uniform(1e14, 4e15, n),
        allreduce_s_per_token=rng.uniform(0, 1e-5, n),
        step_overhead_s=rng.uniform(0, 5e-3, n),
        step_overhead_per_sequence_s=rng.uniform(0, 5e-5, n),
    )
    off = {name: np.full(n, value, dtype=float) for name, value in SPECULATION_OFF.items()}
    got = open_loop_batch_bound(**args, **off)
    assert np.array_equal(got, _plain_bound(args))
    assert np.array_equal(got, open_loop_batch_bound(**args))
    # the chunks and the chunked prefill with no hit and one position a sequence
    prompt = rng.uniform(1, 30_000, n)
    budget = rng.integers(256, 16_384, n).astype(float)
    room = np.maximum(budget - (args["decode_batch"] - 1), 1)
    plain_chunks = np.maximum(np.ceil(prompt / room), 1)
    chunks = first_token_chunks(prompt, budget, args["decode_batch"], np.zeros(n), np.ones(n))
    assert np.array_equal(chunks, plain_chunks)


CHUNKED = dict(
    load_decode_memory_s=0.020,
    weight_read_s=0.018,
    decode_flops_per_token=1.4e10,
    matmul_padding_s=0.0,
    achieved_compute_flops_per_s=1e15,
    prompt_tokens_median=5000,
    allreduce_s_per_token=1e-6,
    step_overhead_s=0.002,
    step_overhead_per_sequence_s=0.0,
    kv_read_bytes_per_sequence_step=2e9 / 9,
    memory_bandwidth_bytes_per_s=1e12,
    bandwidth_efficiency=1.0,
)


@pytest.mark.parametrize(
    ("hit", "verify", "chunks"),
    [
        (0.0, 1, 3),  # 5,000 ÷ (2,048 − 8) = 2.45: the plain figure
        (0.2, 1, 2),  # 4,000 uncached ÷ 2,040 = 1.96
        (0.2, 4, 2),  # 4,000 ÷ (2,048 − 8 × 4 verified positions = 2,016) = 1.98
        (0.6, 4, 1),  # 2,000 ÷ 2,016
        (0.0, 4, 3),  # 5,000 ÷ 2,016 = 2.48
    ],
)
def test_a_chunked_prompt_spends_the_budget_on_its_uncached_tokens(hit, verify, chunks) -> None:
    """A 5,000-token median prompt, a budget of 2,048 tokens a step, 8 others decoding."""
    assert first_token_chunks(5000, 2048, 9, hit, verify) == chunks


def test_chunked_prefill_with_a_cache_hit_and_speculation_by_hand() -> None:
    """The 5,000-token median prompt a fifth cached: 4,000 tokens prefilled (8e13 FLOP given)
    in 2 steps with 8 others verifying 4 positions each. A step: the others' 8 × 4 × 1.4e10 =
    4.48e11 FLOP + half the prompt's 4e13 = 40.448 ms, then their caches 8 × 2e9 ÷ 9 ÷ 1e12 =
    1.777778 ms: 42.225778 ms (more than the 20 ms read); + 8 × 4 × 1 µs of all-reduce +
    2 ms overhead + the proposer's 3 ms = 47.257778 ms. Two steps, 94.515556 ms, and the
    4,000 uncached tokens' all-reduce, 4 ms: 98.515556 ms."""
    got = chunked_prefill_s(
        first_token_chunks=2,
        load_batch=9,
        median_prefill_flops=8e13,
        median_prefix_hit_ratio=0.2,
        verify_tokens_per_sequence=4,
        load_draft_s=0.003,
        **CHUNKED,
    )
    assert got == pytest.approx(0.098515556, abs=1e-9)


def test_a_lone_cached_prompt_takes_its_no_load_prefill() -> None:
    """Alone (load batch 1) the prompt's single step reads the weights (18 ms) under its
    8e13 FLOP (80 ms), proposes nothing, and all-reduces its 4,000 uncached tokens (4 ms):
    80 + 2 + 4 = 86 ms, the no-load prefill max(80, 18) + 5,000 × 0.8 × 1 µs + 2 ms."""
    got = chunked_prefill_s(
        first_token_chunks=1,
        load_batch=1,
        median_prefill_flops=8e13,
        median_prefix_hit_ratio=0.2,
        verify_tokens_per_sequence=4,
        load_draft_s=0.003,
        **CHUNKED,
    )
    assert got == pytest.approx(0.086, abs=1e-12)
