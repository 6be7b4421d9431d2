"""Prefix caching in the serving simulation, worked by hand: a shared prefix read by every
decoding sequence but held once, a prompt's cached tokens skipped in its prefill (not the
attention over them), each request's cached share in whole blocks."""

from __future__ import annotations

import pytest

from planner.serving.simulate import Arrivals, Lengths, SimConfig, StepModel, simulate
from planner.serving.traffic import request_prefixes

# 1 GFLOP-active model (2e9 FLOP per token) at 1 TFLOP/s, 1 MB of weights at 1 TB/s, 1 kB of
# cache per token, attention coefficient 2 x layers x heads x head dim = 1e5 FLOP per token².
BASE = dict(
    weight_bytes=1e6,
    kv_bytes_per_token=1e3,
    bandwidth_bytes_per_s=1e12,
    flops_per_token=2e9,
    compute_flops_per_s=1e12,
    attention_flops_per_token_sq=1e5,
)


def test_a_decoding_sequence_reads_the_shared_prefix_it_does_not_hold():
    """Batch 2, 100 own tokens each, a 1,000-token shared prefix: the step reads
    2 × (100 + 1,000) = 2,200 cached tokens, (1e6 + 2,200 × 1e3) ÷ 1e12 = 3.2 µs; the
    arithmetic, 2 × 2e9 ÷ 1e12 = 4 ms, binds: 4 ms + 2,200 kB ÷ 1 TB/s = 4.0022 ms."""
    step = StepModel(**BASE, shared_prefix_tokens=1000)
    memory, compute = step.decode_terms(2, 200)
    assert memory == pytest.approx(3.2e-6, rel=1e-12)
    assert compute == pytest.approx(4e-3 + 2.2e-6, rel=1e-12)
    assert step.decode_step_s(2, 200) == pytest.approx(4e-3 + 2.2e-6, rel=1e-12)


def test_a_prefill_skips_its_cached_tokens_but_not_the_attention_over_them():
    """A 3,000-token prompt, 2,000 cached: N = 1,000 new tokens, 2e9 × 1,000 + 1e5 ×
    (1,000² + 2 × 1,000 × 2,000) = 2e12 + 5e11 = 2.5e12 FLOP, 2.5 s at 1 TFLOP/s (the 1 µs
    weight read is shorter). Whole: 2e9 × 3,000 + 1e5 × 3,000² = 6.9e12 FLOP, 6.9 s."""
    step = StepModel(**BASE)
    assert step.prefill_s(3000, 2000) == pytest.approx(2.5, rel=1e-12)
    assert step.prefill_s(3000) == pytest.approx(6.9, rel=1e-12)
    # a chunk of the same 1,000 tokens starting after the 2,000 cached: the same arithmetic,
    # and the chunk reads the 2,000 cached tokens' keys and values, 2 MB at 1 TB/s = 2 µs
    assert step.mixed_step_s(0, 0, [(2000, 1000)]) == pytest.approx(2.5 + 2e-6, rel=1e-12)


def _config(step: StepModel, ratio: float, chunk: int | None) -> SimConfig:
    return SimConfig(
        step=step,
        kv_budget_tokens=100_000,
        prompt=Lengths.fixed(3000),
        output=Lengths.fixed(1),
        max_output_tokens=1,
        arrivals=Arrivals.closed(1),
        n_requests=20,
        prefix_hit_ratio=ratio,
        kv_block_tokens=16,
        chunk_tokens=chunk,
    )


@pytest.mark.parametrize("chunk", [None, 8192])
def test_one_user_waits_for_the_uncached_tokens_alone(chunk):
    """One user, 3,000-token prompts of which a 2,000-token prefix is shared and cached (hit
    ratio 2,000 ÷ 3,000, whole blocks of 16: 2,000 = 125 blocks), one output token: each
    TTFT is the 2.5 s prefill above (in chunks, 2 µs more: the chunk reads the cached
    tokens' keys and values); without caching, 6.9 s. Whole prompts or in chunks."""
    cached = simulate(_config(StepModel(**BASE, shared_prefix_tokens=2000), 2000 / 3000, chunk))
    assert cached.ttft_p50_s == pytest.approx(2.5 + (0 if chunk is None else 2e-6), rel=1e-9)
    plain = simulate(_config(StepModel(**BASE), 0.0, chunk))
    assert plain.ttft_p50_s == pytest.approx(6.9, rel=1e-9)


def test_each_request_finds_its_share_in_whole_blocks_and_at_least_the_shared_prefix():
    """Shared prefix 1,000, hit ratio 0.7, blocks of 16. 3,000 tokens: 0.7 × 3,000 = 2,100,
    131 blocks = 2,096 cached, own 2,000 of which 1,096 cached. 1,200 tokens: 840 → 832, below
    the shared 1,000, so 1,000 cached: own 200, none of them cached. 1,000 tokens (no longer
    than the prefix): taken as 1,001, own 1, none cached."""
    cfg = _config(StepModel(**BASE, shared_prefix_tokens=1000), 0.7, None)
    assert request_prefixes(cfg, [3000, 1200, 1000]) == ([2000, 200, 1], [1096, 0, 0])
    off = _config(StepModel(**BASE), 0.0, None)
    assert request_prefixes(off, [3000, 1200]) == ([3000, 1200], [0, 0])
