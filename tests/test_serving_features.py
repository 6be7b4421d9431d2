"""Prefix caching in the serving simulation, worked by hand: a shared prefix read by every
decoding sequence but held once, a prompt's cached tokens skipped in its prefill (not the
attention over them), each request's cached share in whole blocks."""

from __future__ import annotations

import pytest

from planner.model import latency, speculative
from planner.serving.blockcache import BlockCache
from planner.serving.simulate import Arrivals, Lengths, SimConfig, StepModel, simulate
from planner.serving.speculation import (
    acceptance_rng,
    accepted_tokens,
    itl_floor_s,
    verify_step_s,
)
from planner.serving.traffic import PrefixLayout, request_prefixes

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


# Speculative decoding. A 10 GB dense model read at 1 TB/s (10 ms a step), 2e9 FLOP a token at
# 100 TFLOP/s, 1 kB of cache per token, 1 ms of overhead a step; the proposer reads 1 GB a
# forward (1 ms; its 2e8 FLOP a sequence take 2 µs, its cache is not counted), k = 3 proposals.
SPEC = dict(
    weight_bytes=1e10,
    kv_bytes_per_token=1e3,
    bandwidth_bytes_per_s=1e12,
    flops_per_token=2e9,
    compute_flops_per_s=1e14,
    step_overhead_s=1e-3,
    speculative_tokens=3,
    draft_read_bytes=1e9,
    draft_flops_per_token=2e8,
)


def _spec_config(rate: float, output: int, step: StepModel | None = None) -> SimConfig:
    return SimConfig(
        step=step or StepModel(**SPEC),
        kv_budget_tokens=100_000,
        prompt=Lengths.fixed(1000),
        output=Lengths.fixed(output),
        max_output_tokens=output,
        arrivals=Arrivals.closed(1),
        n_requests=20,
        acceptance_rate=rate,
    )


def _verifying_step_s(context: float, emitted: float) -> float:
    """The closed form's inter-token latency of one sequence verifying k = 3 proposals at
    ``context`` cached tokens, emitting ``emitted`` tokens a step."""
    write = speculative.verify_kv_write_bytes_per_sequence_step(3, 1e3)
    memory = latency.decode_memory_s(1e10, 1, context * 1e3, 1e12, 1.0, write)
    compute = latency.decode_compute_s(2e9, 1, 1e14, 0.0, context * 1e3, 1e12, 1.0, 4)
    draft = speculative.draft_s(3, 1e9, 1, context, 0.0, 2e8, 1e14, 1e12, 1.0)
    return float(latency.itl_s(memory, compute, 0.0, 1, 1e-3, 0.0, draft, 4, emitted))


def test_every_proposal_accepted_emits_four_tokens_a_step():
    """α = 1, 1,000-token prompt, 41 output tokens: the prefill emits the first, then 10 steps
    of 4. Step j reads 1,001 + 4j cached tokens: memory (1e10 + (1,001 + 4j) kB + 3 kB of
    proposed keys and values) ÷ 1 TB/s = 10.001004 ms + 4j ns (the 4 tokens' arithmetic,
    80 µs + the cache read, is shorter), + 3 × 1 ms proposer + 1 ms overhead. The 40 tokens
    take 10 × 14.001004 ms + 4 ns × 45 = 140.01022 ms: TPOT 3.5002555 ms, the closed form's
    verifying step ÷ 4 at the mean context 1,001 + 4 × 4.5 = 1,019 tokens."""
    result = simulate(_spec_config(1.0, 41))
    assert result.tpot_p50_s == pytest.approx(3.5002555e-3, rel=1e-9)
    assert result.tpot_p50_s == pytest.approx(_verifying_step_s(1019, 4), rel=1e-9)
    # each of a burst's 4 tokens counts a quarter of the step; the pooled mean is TPOT
    assert result.itl_mean_s == pytest.approx(3.5002555e-3, rel=1e-9)
    assert result.itl_p50_s == pytest.approx(3.5002555e-3, rel=1e-6)


def test_no_proposal_accepted_emits_one_token_at_the_verifying_step_s_cost():
    """α = 0, 41 output tokens: 40 steps of one token, step j at 1,001 + j cached tokens,
    14.001004 ms + j ns; the mean step, at 1,020.5 tokens, 14.001004 ms + 19.5 ns =
    14.0010235 ms, is the TPOT."""
    result = simulate(_spec_config(0.0, 41))
    assert result.tpot_p50_s == pytest.approx(14.0010235e-3, rel=1e-9)
    assert result.tpot_p50_s == pytest.approx(_verifying_step_s(1020.5, 1), rel=1e-9)


def test_accepted_proposals_follow_the_closed_form_mean():
    """k = 3, α = 0.7: accepted j = 0..3 with probabilities 0.3, 0.21, 0.147, 0.343, mean
    0.7 + 0.49 + 0.343 = 1.533, so 2.533 tokens a step; E[j²] = 0.21 + 4 × 0.147 + 9 × 0.343
    = 3.885, variance 3.885 − 1.533² = 1.5349, standard deviation 1.239. Over 100,000
    sequences the mean's standard error is 1.239 ÷ 316.2 = 0.0039; 4 of them, 0.016, is
    exceeded by chance once in about 16,000 seeds."""
    draws = accepted_tokens(acceptance_rng(7), 0.7, 3, 100_000)
    assert set(draws) == {0, 1, 2, 3}
    assert 1 + sum(draws) / len(draws) == pytest.approx(2.533, abs=0.016)


def test_a_run_at_acceptance_0_7_emits_2_533_tokens_a_step():
    """α = 0.7, 2,001 output tokens, 20 requests (18 measured): about 2,000 ÷ 2.533 = 790
    steps a request, 14,200 measured. The pooled ITL is the time ÷ the tokens, the verifying
    step (its context grows by 2.5 ns a step, under 0.03 % of 14 ms over a request) ÷ the
    tokens per step, whose standard error over 14,200 steps is 1.239 ÷ 119 = 0.0104, 0.41 %
    of 2.533; a request's last step, cut to the tokens it has left, loses under 1.5 tokens
    of 2,000 (0.08 %). 2 % holds the three with room."""
    result = simulate(_spec_config(0.7, 2001))
    step = _verifying_step_s(1000 + 1000, 1)
    assert result.itl_mean_s == pytest.approx(step / 2.533, rel=0.02)
    assert result.tpot_p50_s == pytest.approx(step / 2.533, rel=0.02)


def test_without_proposals_the_run_keeps_its_random_streams():
    """k = 0 leaves the fast loop and the one-token steps as they were: the same run with the
    speculative fields at their defaults, and with an acceptance rate that nothing reads."""
    plain = dict(SPEC, speculative_tokens=0, draft_read_bytes=0.0, draft_flops_per_token=0.0)
    a = simulate(_spec_config(0.0, 41, StepModel(**plain)))
    b = simulate(_spec_config(0.7, 41, StepModel(**plain)))
    assert a.to_dict() == b.to_dict()


def test_a_verifying_step_of_a_mixture_touches_the_experts_of_its_k_plus_1_tokens():
    """The model above as a mixture: 8 GB of its 10 GB in 8 routed experts, 2 a token, 1 µs of
    all-reduce a token. One sequence verifying k = 3 runs 4 tokens, which miss an expert with
    probability 0.75⁴ = 0.31640625: 8 GB × 0.31640625 = 2.53125 GB unread, 7.46875 GB read,
    7.46875 ms; + 1,000 cached tokens and 3 proposed positions, 1.003 µs; + 4 tokens'
    all-reduce, 4 µs; + 3 ms proposer + 1 ms overhead = 11.473753 ms. Its floor, one cached
    token, ÷ the 4 tokens every proposal accepted emits: (7.46875 ms + 4 ns + 4 µs + 4 ms) ÷ 4
    = 11.472754 ms ÷ 4 = 2.8681885 ms."""
    step = StepModel(
        **SPEC, routed_expert_bytes=8e9, experts=8, experts_per_token=2, allreduce_s_per_token=1e-6
    )
    assert verify_step_s(step, 1, 1000) == pytest.approx(11.473753e-3, rel=1e-12)
    assert itl_floor_s(step) == pytest.approx(2.8681885e-3, rel=1e-12)


# Prefix caching by a least-recently-used cache of blocks.


def _agent(users: int, budget: int) -> SimConfig:
    """4 agent tasks of 5 calls, each call a 13,000-token prompt re-sending 12,000 tokens of its
    task's history from the second call on, 100 output tokens, blocks of 16."""
    return SimConfig(
        step=StepModel(**BASE),
        kv_budget_tokens=budget,
        prompt=Lengths.fixed(13_000),
        output=Lengths.fixed(100),
        max_output_tokens=100,
        arrivals=Arrivals.closed(users),
        n_requests=20,
        warmup_fraction=0.0,
        requests_per_task=5,
        kv_block_tokens=16,
        prefix_cache=PrefixLayout(history_tokens=12_000),
    )


def test_an_agent_finds_its_history_when_the_pool_holds_it():
    """One agent, a pool of 100,000 tokens: its first call prefills 13,000 tokens, 2e9 ×
    13,000 + 1e5 × 13,000² = 4.29e13 FLOP, 42.9 s at 1 TFLOP/s; each later call finds the
    12,000 (750 blocks) its previous call left and prefills 1,000, 2e9 × 1,000 + 1e5 ×
    (1,000² + 2 × 1,000 × 12,000) = 4.5e12 FLOP, 4.5 s; alone, its TTFT is its prefill. It
    finds 4 × 12,000 of 5 × 13,000 prompt tokens: 48 ÷ 65 = 0.73846."""
    result = simulate(_agent(1, 100_000))
    ttft = result.samples["ttft_s"]
    assert ttft[0] == pytest.approx(42.9, rel=1e-9)
    assert ttft[4] == pytest.approx(4.5, rel=1e-9)  # the fifth call
    assert result.ttft_p50_s == pytest.approx(4.5, rel=1e-9)
    assert result.prefix_hit_ratio == pytest.approx(48 / 65, rel=1e-12)


def test_an_agent_prefills_its_history_again_once_the_pool_evicts_it():
    """Two agents, a pool of 13,110 tokens: each call reserves 13,000 + 100, so one runs at a
    time, and while it runs the pool has 10 tokens beside it, less than a block: the other's
    history, kept when its call ended, is evicted when this one is admitted. The two agents'
    calls alternate to the end (two tasks each), so every call prefills all 13,000 tokens
    (42.9 s; the first one waits for nobody) and none is found. With a pool of 100,000 both
    histories stay: 48 ÷ 65 again."""
    result = simulate(_agent(2, 13_110))
    assert result.prefix_hit_ratio == 0.0
    assert min(result.samples["ttft_s"]) == pytest.approx(42.9, rel=1e-9)
    assert result.samples["ttft_s"][4] >= 42.9  # the fifth call, after a wait
    assert simulate(_agent(2, 100_000)).prefix_hit_ratio == pytest.approx(48 / 65, rel=1e-12)


def test_the_block_cache_evicts_the_least_recently_used_last_blocks_first():
    """Blocks of 16: a (160 tokens) then b (64); finding a makes b the least recently used;
    room for 200 evicts 24 tokens, 2 whole blocks (32) of b's end, leaving b 32; room for 100
    then takes b and 5 blocks of a (to 96 left, 80 + 0)."""
    cache = BlockCache(16)
    cache.put(("task", 1), 170)  # 10 blocks, the partial one not kept
    cache.put(("task", 2), 64)
    assert cache.find(("task", 1), 1000) == 160
    cache.fit(200)
    assert dict(cache.entries) == {("task", 2): 32, ("task", 1): 160}
    cache.fit(100)
    assert dict(cache.entries) == {("task", 1): 96}
    assert cache.take(("task", 1)) == 96 and cache.total == 0


@pytest.mark.parametrize("chunk", [None, 16_384])
def test_a_document_s_second_question_finds_it(chunk):
    """One user, 9,000-token prompts of which 8,000 are a document asked 2 questions (blocks of
    16: 500 whole blocks). The first question prefills 9,000 tokens, 2e9 × 9,000 + 1e5 × 9,000²
    = 2.61e13 FLOP, 26.1 s; the second finds the document and prefills 1,000, 2e9 × 1,000 + 1e5
    × (1,000² + 2 × 1,000 × 8,000) = 3.7e12 FLOP, 3.7 s (in one chunk, 8 µs more: it reads the
    8,000 cached tokens' 8 MB). 10 documents: 10 × 8,000 of 20 × 9,000 tokens found, 4 ÷ 9."""
    cfg = SimConfig(
        step=StepModel(**BASE),
        kv_budget_tokens=100_000,
        prompt=Lengths.fixed(9000),
        output=Lengths.fixed(1),
        max_output_tokens=1,
        arrivals=Arrivals.closed(1),
        n_requests=20,
        warmup_fraction=0.0,
        kv_block_tokens=16,
        chunk_tokens=chunk,
        prefix_cache=PrefixLayout(document_tokens=8000, questions_per_document=2),
    )
    result = simulate(cfg)
    ttft = result.samples["ttft_s"]
    assert ttft[0] == pytest.approx(26.1, rel=1e-9)
    assert ttft[1] == pytest.approx(3.7 + (0 if chunk is None else 8e-6), rel=1e-9)
    assert ttft[2] == pytest.approx(26.1, rel=1e-9)
    assert result.prefix_hit_ratio == pytest.approx(4 / 9, rel=1e-12)
