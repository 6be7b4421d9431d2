"""Tests of the one-replica serving simulation (planner.serving.simulate).

Expected values come from queueing theory or are worked out by hand in the
comments from the StepModel numbers; none is copied from the program's output.

Seed numbers (7B model at 16 bit on a 700 GB/s accelerator): weights 14e9 B,
KV 131,072 B/token, 2 x 7e9 = 14e9 FLOPs/token, 400 TFLOP/s achieved.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.serving.simulate import (
    Arrivals,
    Lengths,
    SimConfig,
    StepModel,
    _Replica,
    simulate,
)
from planner.serving.traffic import request_delays

W = 14e9  # weight bytes
KV = 131_072  # KV bytes per token
BW = 700e9  # achieved bandwidth [B/s]
F = 14e9  # FLOPs per token
C = 400e12  # achieved FLOP/s
ATT = 4 * 32 * 4096  # prefill attention FLOPs per token^2 (4 x layers x d_model)

SEED_STEP = StepModel(
    weight_bytes=W,
    kv_bytes_per_token=KV,
    bandwidth_bytes_per_s=BW,
    flops_per_token=F,
    compute_flops_per_s=C,
    attention_flops_per_token_sq=ATT,
    step_overhead_s=0.001,
)

# No KV traffic, negligible compute: every decode step and every short prefill
# takes exactly W / BW = 0.02 s, whatever the batch.
FLAT_STEP = StepModel(
    weight_bytes=W,
    kv_bytes_per_token=0.0,
    bandwidth_bytes_per_s=BW,
    flops_per_token=F,
    compute_flops_per_s=C,
)
D = 0.02  # [s]

REALISTIC = dict(
    step=SEED_STEP,
    prompt=Lengths.from_summary(800, 2500, 6000),
    output=Lengths.from_summary(200, 600, 1024),
    max_output_tokens=1024,
)


def cfg(**kw) -> SimConfig:
    base = dict(
        step=FLAT_STEP,
        kv_budget_tokens=1_000_000,
        prompt=Lengths.fixed(1),
        output=Lengths.fixed(1),
        max_output_tokens=1,
        arrivals=Arrivals.closed(1),
        n_requests=1,
        warmup_fraction=0.0,
    )
    base.update(kw)
    return SimConfig(**base)


# ---------------------------------------------------------------- StepModel


def test_step_model_decode_by_hand():
    bare = StepModel(W, KV, BW, F, C)
    # 14e9 B / 700e9 B/s = 0.02 s; compute 14e9 / 400e12 = 3.5e-5 s does not bind
    assert bare.decode_step_s(1, 0) == pytest.approx(0.02)
    # batch 16 shares the weight read: 0.02 s + 16 x 1000 tokens x 131072 B / 700e9 B/s
    # = 0.02 s + 2.097152e9 B / 700e9 B/s = 0.02 s + 0.00299593 s
    assert bare.decode_step_s(16, 16_000) == pytest.approx(0.02299593, rel=1e-6)
    # compute binds only at a huge batch: 2000 x 14e9 / 400e12 = 0.07 s > 0.02 s
    assert bare.decode_step_s(2000, 0) == pytest.approx(0.07)
    assert SEED_STEP.decode_step_s(1, 0) == pytest.approx(0.021)  # + 1 ms overhead


def test_step_model_prefill_by_hand():
    # long prompt: 8000 x 14e9 / 400e12 = 0.28 s, attention 8000^2 x 524288 / 400e12
    # = 0.0838861 s; memory 0.02 s -> compute-bound, + 1 ms overhead
    assert SEED_STEP.prefill_s(8000) == pytest.approx(0.28 + 0.08388608 + 0.001)
    # tiny prompt: compute 3.5e-5 s < weight read 0.02 s -> memory-bound
    assert SEED_STEP.prefill_s(1) == pytest.approx(0.02 + 0.001)
    # one prefill step over two prompts: compute adds up, weights read once
    assert SEED_STEP.prefill_batch_s([8000, 1]) == pytest.approx(
        0.28 + 0.08388608 + 1 * 14e9 / 400e12 + 1 * 524288 / 400e12 + 0.001
    )
    assert SEED_STEP.prefill_batch_s([1, 1]) == pytest.approx(0.021)
    assert SEED_STEP.prefill_batch_s([]) == 0.0


# ------------------------------------------------------- hand-checked runs


def _prefill_1000() -> float:
    # 1000 x 14e9 / 400e12 = 0.035 s + 1000^2 x 524288 / 400e12 = 0.00131072 s
    # > 0.02 s weight read -> compute-bound; + 1 ms overhead
    return 0.035 + 0.00131072 + 0.001


def _decode(context: int) -> float:
    # memory-bound (batch 1): (14e9 + 131072 x context) / 700e9 + 1 ms overhead
    return (14e9 + 131_072 * context) / 700e9 + 0.001


def test_single_request_by_hand():
    # P = 1000, O = 5: the prefill emits token 1 (TTFT has no extra decode step);
    # decode steps 1..4 write tokens 1..4, reading 1001..1004 cached tokens
    pre, net = 0.05, 0.03
    r = simulate(
        cfg(
            step=SEED_STEP,
            prompt=Lengths.fixed(1000),
            output=Lengths.fixed(5),
            max_output_tokens=5,
            preprocess_s=pre,
            network_s=net,
        )
    )
    steps = [_decode(1000 + k) for k in (1, 2, 3, 4)]
    ttft = pre + _prefill_1000()
    assert r.ttft_p50_s == pytest.approx(ttft, rel=1e-9)
    assert r.e2e_p50_s == pytest.approx(ttft + sum(steps) + net, rel=1e-9)
    # pooled gaps are the four decode steps; inverted CDF: p50 = 2nd of 4, p99 = 4th
    assert r.itl_p50_s == pytest.approx(steps[1], rel=1e-9)
    assert r.itl_p99_s == pytest.approx(steps[3], rel=1e-9)
    assert r.itl_mean_s == pytest.approx(sum(steps) / 4, rel=1e-9)
    assert r.tpot_p50_s == pytest.approx(sum(steps) / 4, rel=1e-9)
    assert r.wait_mean_s == 0.0
    assert r.queued_count == 0 and r.rejected_count == 0 and r.preemptions == 0
    assert r.peak_kv_tokens_used == 1004
    assert r.peak_kv_tokens_reserved == 1005  # reserve-max: P + max_output_tokens
    # 5 tokens over the busy time (queue entry to completion)
    assert r.throughput_tokens_per_s == pytest.approx(5 / (_prefill_1000() + sum(steps)))
    assert r.utilisation == pytest.approx(1.0)
    # of which the prefill's share
    assert r.prefill_utilisation == pytest.approx(_prefill_1000() / (_prefill_1000() + sum(steps)))


def test_agent_loop_by_hand():
    # one user, one task of 3 requests, 1 s of tool time between them; alone on the
    # replica each request takes the same e2e as in test_single_request_by_hand
    pre, net, tool = 0.05, 0.03, 1.0
    r = simulate(
        cfg(
            step=SEED_STEP,
            prompt=Lengths.fixed(1000),
            output=Lengths.fixed(5),
            max_output_tokens=5,
            preprocess_s=pre,
            network_s=net,
            requests_per_task=3,
            tool_time_s=tool,
            n_requests=3,
        )
    )
    e2e = pre + _prefill_1000() + sum(_decode(1000 + k) for k in (1, 2, 3, 4)) + net
    assert r.n_requests == 3 and r.n_completed == 3 and r.tasks_completed == 1
    assert r.e2e_mean_s == pytest.approx(e2e, rel=1e-9)
    assert r.task_p50_s == pytest.approx(3 * e2e + 2 * tool, rel=1e-9)
    assert r.task_p99_s == pytest.approx(3 * e2e + 2 * tool, rel=1e-9)


def test_prefill_stalls_running_request_by_hand():
    # FLAT_STEP: every decode step 0.02 s; a 1000-token prefill is compute-bound at
    # 1000 x 14e9 / 400e12 = 0.035 s.  A: sent 0, O = 5; B: sent 0.06, O = 3.
    # A: token 1 at 0.035, 2 at 0.055, 3 at 0.075.  B arrives during A's step
    # [0.055, 0.075], is admitted at 0.075 and prefilled until 0.110 (its token 1;
    # A stalls).  Then batch {A, B}: 0.130 (A4, B2), 0.150 (A5, B3).
    r = simulate(
        cfg(
            prompt=Lengths.fixed(1000),
            max_output_tokens=5,
            arrivals=Arrivals.trace([0.0, 0.06], output_tokens=[5, 3]),
        )
    )
    assert sorted(r.samples["ttft_s"]) == pytest.approx([0.035, 0.110 - 0.06])
    assert sorted(r.samples["e2e_s"]) == pytest.approx([0.150 - 0.06, 0.150])
    assert sorted(r.samples["wait_s"]) == pytest.approx([0.0, 0.075 - 0.06])
    # gaps: A 0.02, 0.02, 0.055 (prefill + step), 0.02; B 0.02, 0.02 -> six gaps
    assert r.itl_p50_s == pytest.approx(0.02)
    assert r.itl_p90_s == pytest.approx(0.055)  # ceil(0.9 x 6) = 6th smallest
    assert r.itl_mean_s == pytest.approx((5 * 0.02 + 0.055) / 6)
    assert r.queued_count == 0  # B found room; it only waited for the step boundary


def test_recompute_preemption_by_hand():
    # budget 36 tokens, two requests with P = 10, O = 20 (P + max 20 = 30 fits alone).
    # Every step (prefill or decode) takes 0.02 s.
    # A: sent 0, prefill to 0.02 (g = 1), step to 0.04 (g = 2).  B sent 0.03, admitted
    # at 0.04 (need 12 + 11 = 23 <= 36), prefilled to 0.06.  The batch needs 23 + 2k
    # tokens at decode step k; k = 0..6 fit (35), k = 7 needs 37 > 36.  After 7 steps
    # (0.20; A g = 9, B g = 8) B, the newest, is preempted.  A needs 11 more steps:
    # done at 0.42.  B re-prefills P + g = 18 tokens to 0.44 (token 9) and decodes
    # 11 more steps: done at 0.66, e2e 0.63; its gap across the preemption is 0.24 s.
    # A's gaps: 18 x 0.02 s and one 0.04 s (it stalled during B's prefill).
    r = simulate(
        cfg(
            kv_budget_tokens=36,
            prompt=Lengths.fixed(10),
            output=Lengths.fixed(20),
            max_output_tokens=20,
            admission="current-length",
            arrivals=Arrivals.trace([0.0, 0.03]),
        )
    )
    assert sorted(r.samples["e2e_s"]) == pytest.approx([0.42, 0.63])
    assert r.preemptions == 1 and r.preempted_count == 1 and r.preempted_fraction == 0.5
    assert r.recomputed_tokens == 18
    assert r.peak_kv_tokens_used == 35
    assert r.itl_p99_s == pytest.approx(0.24)
    assert r.itl_p50_s == pytest.approx(0.02)
    assert sorted(r.samples["tpot_s"]) == pytest.approx([0.40 / 19, (0.66 - 0.06) / 19])


def test_swap_preemption_by_hand():
    # the same schedule with swapping: B's 17 cached tokens (P + g - 1) go out and come
    # back; 1000 B/token -> 34,000 B over 25e9 B/s.  The KV term (<= 36 x 1000 B /
    # 700e9 B/s = 5e-8 s per step) and the swap (1.4e-6 s) barely move the times.
    step = StepModel(W, 1000.0, BW, F, C)
    r = simulate(
        cfg(
            step=step,
            kv_budget_tokens=36,
            prompt=Lengths.fixed(10),
            output=Lengths.fixed(20),
            max_output_tokens=20,
            admission="current-length",
            preemption="swap",
            arrivals=Arrivals.trace([0.0, 0.03]),
        )
    )
    assert r.preemptions == 1 and r.recomputed_tokens == 0
    assert r.swap_bytes == pytest.approx(2 * 17 * 1000)
    assert r.swap_time_s == pytest.approx(34_000 / 25e9)
    # B resumes at 0.42 without a prefill and needs 12 more steps: done at 0.66
    assert sorted(r.samples["e2e_s"]) == pytest.approx([0.42, 0.63], abs=1e-5)


# --------------------------------------------------------- queueing theory


@pytest.mark.parametrize("rho, n", [(0.5, 20_000), (0.8, 60_000)])
def test_single_slot_fixed_service_matches_md1(rho, n):
    # max_batch = 1, P = 1, O = 10 under FLAT_STEP: service S = 10 x 0.02 = 0.2 s, fixed.
    # Pollaczek-Khinchine for M/D/1: Wq = rho / (2 mu (1 - rho)).  With this seed and n,
    # seed-to-seed scatter of the estimate is ~1.5 % (rho 0.5) and ~2.5 % (rho 0.8).
    service = 10 * D
    r = simulate(
        cfg(
            output=Lengths.fixed(10),
            max_output_tokens=10,
            max_batch=1,
            arrivals=Arrivals.poisson(rho / service),
            n_requests=n,
            seed=7,
            warmup_fraction=0.1,
        )
    )
    wq = rho / (2 * (1 / service) * (1 - rho))
    assert r.wait_mean_s == pytest.approx(wq, rel=0.05)
    # PASTA: the fraction of arrivals that find the slot busy is rho
    assert r.queued_fraction == pytest.approx(rho, abs=0.02)
    assert r.utilisation == pytest.approx(rho, abs=0.02)
    # one prefill step (0.02 s) of the ten steps each request takes
    assert r.prefill_utilisation == pytest.approx(rho / 10, abs=0.002)


def test_single_slot_exponential_service_matches_mm1():
    # Exponential service without a test hook: P = 1 and every step 0.02 s, so
    # S = prefill + (O - 1) decode steps = 0.02 O with O geometric (mean 200); a
    # geometric with a long mean is the discrete exponential (E[S^2] / 2 E[S]^2 =
    # 1 - p/2 = 0.9975).  M/M/1: Wq = rho / (mu - lambda) = rho E[S] / (1 - rho).
    # Seed-to-seed scatter of the estimate at this n is ~1.8 %.
    rho, mean_out = 0.5, 200
    es = mean_out * D
    r = simulate(
        cfg(
            output=Lengths.geometric(mean_out),
            max_output_tokens=20 * mean_out,  # clips with probability e^-20
            max_batch=1,
            arrivals=Arrivals.poisson(rho / es),
            n_requests=100_000,
            seed=3,
            warmup_fraction=0.1,
        )
    )
    assert r.wait_mean_s == pytest.approx(rho * es / (1 - rho), rel=0.05)


def test_single_slot_waits_follow_lindley_exactly():
    # FIFO single server: W_{i+1} = max(0, W_i + S_i - (a_{i+1} - a_i)) (Lindley),
    # with S_i = 0.02 O_i s.  Arrival times and lengths are drawn here, independently.
    rng = np.random.default_rng(11)
    n = 2000
    times = np.cumsum(rng.exponential(0.8 * 0.02 * 25, n))
    outs = rng.integers(1, 50, n)
    r = simulate(
        cfg(
            max_output_tokens=64,
            max_batch=1,
            arrivals=Arrivals.trace(times.tolist(), output_tokens=outs.tolist()),
        )
    )
    w = np.zeros(n)
    for i in range(1, n):
        w[i] = max(0.0, w[i - 1] + 0.02 * outs[i - 1] - (times[i] - times[i - 1]))
    np.testing.assert_allclose(r.samples["wait_s"], w, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(r.samples["e2e_s"], w + 0.02 * outs, rtol=1e-9)


# ----------------------------------------------------------------- overload

OVER = dict(
    output=Lengths.fixed(10),
    max_output_tokens=10,
    max_batch=1,
    arrivals=Arrivals.poisson(2 / (10 * D)),  # rho = 2
    seed=5,
    warmup_fraction=0.1,
)


def test_overload_without_limits_grows_the_queue():
    # rho = 2, no limits: the server never idles once loaded, so request k starts at
    # ~k S while it arrived at ~k S / 2 and waits ~k S / 2.  Over the measured
    # requests k = 0.1 n .. n the mean wait is ~0.55 n S / 2.
    n = 3000
    r = simulate(cfg(n_requests=n, **OVER))
    assert r.rejected_count == 0
    assert r.wait_mean_s == pytest.approx(0.55 * n * 0.2 / 2, rel=0.05)
    assert r.queued_fraction > 0.99
    waits = r.samples["wait_s"]
    assert waits[-300:].mean() > 5 * waits[:300].mean()


@pytest.mark.parametrize("limit", [{"queue_capacity": 10}, {"queue_timeout_s": 1.0}])
def test_overload_with_queue_limit_rejects(limit):
    # the server stays busy and completes mu requests per second of lambda = 2 mu:
    # rejected fraction -> 1 - 1/rho = 0.5
    r = simulate(cfg(n_requests=6000, **OVER, **limit))
    assert r.rejected_fraction == pytest.approx(0.5, abs=0.03)
    assert r.utilisation > 0.99
    if "queue_timeout_s" in limit:
        assert r.samples["wait_s"].max() <= 1.0 + 1e-9
    else:
        assert r.samples["wait_s"].max() <= 11 * 10 * D + 1e-9  # 10 ahead + 1 in service


def test_no_waiting_room_is_an_erlang_loss_system():
    # queue_capacity = 0 with one slot: an arrival that finds the slot busy is lost.
    # Erlang B with one server (insensitive to the service distribution):
    # loss = a / (1 + a) with offered load a = lambda S; a = 1 -> 0.5
    r = simulate(
        cfg(n_requests=20_000, queue_capacity=0, **{**OVER, "arrivals": Arrivals.poisson(5.0)})
    )
    assert r.rejected_fraction == pytest.approx(0.5, abs=0.015)
    assert r.utilisation == pytest.approx(0.5, abs=0.015)
    assert r.wait_mean_s == 0.0


def test_request_that_can_never_fit_is_rejected_not_stuck():
    for admission in ("reserve-max", "current-length"):
        # P + max_output = 900 + 200 > 1000 tokens of budget
        r = simulate(
            cfg(
                kv_budget_tokens=1000,
                prompt=Lengths.samples([100, 900]),
                output=Lengths.fixed(50),
                max_output_tokens=200,
                admission=admission,
                arrivals=Arrivals.closed(4),
                n_requests=400,
            )
        )
        assert r.n_requests == 400
        assert 0.3 < r.rejected_fraction < 0.7
        assert r.n_completed + r.rejected_count == 400
        assert r.peak_kv_tokens_reserved <= 1000


# ------------------------------------------------------- memory pressure

PRESSURE = dict(
    kv_budget_tokens=40_000,
    arrivals=Arrivals.closed(64),
    n_requests=1500,
    seed=2,
    **REALISTIC,
)


def test_reserve_max_never_preempts_under_pressure():
    r = simulate(SimConfig(admission="reserve-max", **PRESSURE))
    assert r.preemptions == 0 and r.preempted_count == 0 and r.recomputed_tokens == 0
    assert r.queued_fraction > 0.5  # memory, not users, limits the batch
    assert r.peak_kv_tokens_reserved <= 40_000
    assert r.peak_kv_tokens_used <= r.peak_kv_tokens_reserved


@pytest.mark.parametrize("preemption", ["recompute", "swap"])
def test_current_length_preempts_under_pressure(preemption):
    r = simulate(SimConfig(admission="current-length", preemption=preemption, **PRESSURE))
    assert r.preemptions > 0 and r.preempted_count > 0 and r.preempted_fraction > 0
    assert r.peak_kv_tokens_used <= 40_000
    assert r.peak_kv_tokens_reserved <= 40_000
    if preemption == "recompute":
        assert r.recomputed_tokens > 0 and r.swap_bytes == 0
    else:
        assert r.swap_bytes > 0 and r.swap_time_s > 0 and r.recomputed_tokens == 0
    # current-length packs more sequences into the same budget than reserve-max
    rm = simulate(SimConfig(admission="reserve-max", **PRESSURE))
    assert r.mean_concurrency > rm.mean_concurrency


# --------------------------------------------------------------- properties

PROPS = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)


@PROPS
@given(
    prompt=st.integers(1, 2000),
    out=st.integers(1, 300),
    extra=st.integers(1, 200),
    admission=st.sampled_from(["reserve-max", "current-length"]),
    arrivals=st.sampled_from([Arrivals.poisson(5.0), Arrivals.poisson(20.0), Arrivals.closed(16)]),
    max_batch=st.sampled_from([None, 1, 8]),
    budget=st.integers(3000, 40_000),
)
def test_more_output_tokens_never_lower_latency(
    prompt, out, extra, admission, arrivals, max_batch, budget
):
    base = dict(
        step=SEED_STEP,
        kv_budget_tokens=budget,
        prompt=Lengths.fixed(prompt),
        max_output_tokens=600,
        arrivals=arrivals,
        admission=admission,
        max_batch=max_batch,
        n_requests=120,
        seed=1,
    )
    short = simulate(SimConfig(output=Lengths.fixed(out), **base)).to_dict()
    long = simulate(SimConfig(output=Lengths.fixed(out + extra), **base)).to_dict()
    for key in ("e2e_mean_s", "e2e_p50_s", "e2e_p95_s", "e2e_p99_s", "task_p95_s"):
        assert long[key] >= short[key] * (1 - 1e-12), key


@PROPS
@given(
    prompt=st.integers(1, 2000),
    out=st.integers(1, 400),
    users=st.integers(1, 64),
    budget=st.integers(3000, 40_000),
    more=st.integers(1, 40_000),
    admission=st.sampled_from(["reserve-max", "current-length"]),
    preemption=st.sampled_from(["recompute", "swap"]),
)
def test_larger_kv_budget_never_lowers_throughput(
    prompt, out, users, budget, more, admission, preemption
):
    # closed loop with fixed lengths: throughput is the achieved rate
    base = dict(
        step=SEED_STEP,
        prompt=Lengths.fixed(prompt),
        output=Lengths.fixed(out),
        max_output_tokens=1000,
        arrivals=Arrivals.closed(users),
        admission=admission,
        preemption=preemption,
        n_requests=200,
    )
    small = simulate(SimConfig(kv_budget_tokens=budget, **base))
    large = simulate(SimConfig(kv_budget_tokens=budget + more, **base))
    if small.n_completed == 0:  # nothing fits in the small budget
        return
    assert large.throughput_tokens_per_s >= small.throughput_tokens_per_s * (1 - 1e-12)
    assert large.throughput_requests_per_s >= small.throughput_requests_per_s * (1 - 1e-12)
    # concurrency is a time average over a finite run (drain, recompute prefills):
    # allow 1 %
    assert large.mean_concurrency >= small.mean_concurrency * 0.99


# ------------------------------------------------------------ mechanics


def test_same_seed_same_result_other_seed_differs():
    c = SimConfig(
        arrivals=Arrivals.poisson(6.0), kv_budget_tokens=60_000, n_requests=800, **REALISTIC
    )
    a, b = simulate(c), simulate(c)
    assert a == b and a.to_dict() == b.to_dict()
    np.testing.assert_array_equal(a.samples["e2e_s"], b.samples["e2e_s"])
    other = simulate(SimConfig(**{**c.__dict__, "seed": 1}))
    assert other.to_dict() != a.to_dict()


@pytest.mark.parametrize(
    "extra",
    [
        dict(admission="reserve-max", arrivals=Arrivals.poisson(6.0)),
        dict(admission="current-length", arrivals=Arrivals.closed(40)),
        dict(admission="current-length", preemption="swap", arrivals=Arrivals.bursty(6.0, 4.0)),
        dict(arrivals=Arrivals.poisson(20.0), queue_timeout_s=2.0, max_batch=32),
        dict(
            arrivals=Arrivals.closed(8),
            requests_per_task=3,
            tool_time_s=0.5,
            queue_capacity=3,
            network_s=0.05,
            preprocess_s=0.01,
        ),
    ],
)
def test_multi_step_jumps_equal_single_steps(extra):
    # the simulator jumps over many decode steps at once; forcing one step per
    # iteration must give the same per-request latencies
    c = SimConfig(kv_budget_tokens=30_000, n_requests=300, seed=3, **REALISTIC, **extra)
    fast, slow = _Replica(c).run(), _Replica(c, max_jump=1).run()
    for key in ("ttft_s", "e2e_s", "wait_s", "tpot_s", "task_s"):
        np.testing.assert_allclose(fast.samples[key], slow.samples[key], rtol=1e-9)
    for key in (
        "rejected_count",
        "queued_count",
        "preemptions",
        "recomputed_tokens",
        "peak_kv_tokens_used",
    ):
        assert getattr(fast, key) == getattr(slow, key)
    for key in ("itl_p50_s", "itl_p95_s", "itl_p99_s", "itl_mean_s"):
        assert getattr(fast, key) == pytest.approx(getattr(slow, key), rel=1e-9)


def test_to_dict_is_flat_and_named():
    r = simulate(
        SimConfig(
            arrivals=Arrivals.poisson(4.0), kv_budget_tokens=60_000, n_requests=200, **REALISTIC
        )
    )
    d = r.to_dict()
    for key in (
        "ttft_p95_s",
        "itl_p95_s",
        "e2e_p95_s",
        "task_p95_s",
        "throughput_tokens_per_s",
        "throughput_requests_per_s",
        "rejected_fraction",
        "queued_fraction",
        "preempted_fraction",
        "utilisation",
        "peak_kv_tokens_used",
    ):
        assert key in d
    assert all(isinstance(v, (int, float)) for v in d.values())
    assert "samples" not in d


def test_from_summary_matches_mean_and_p95():
    # unclipped (max far out), the fitted lognormal reproduces mean and p95
    x = Lengths.from_summary(250, 800, 10**9).draw(np.random.default_rng(0), 400_000)
    assert x.mean() == pytest.approx(250, rel=0.02)
    assert np.percentile(x, 95) == pytest.approx(800, rel=0.02)
    clipped = Lengths.from_summary(250, 800, 1000).draw(np.random.default_rng(0), 10_000)
    assert clipped.max() == 1000 and clipped.min() >= 1
    assert (Lengths.fixed(7).draw(np.random.default_rng(0), 3) == 7).all()
    assert set(Lengths.samples([3, 5]).draw(np.random.default_rng(0), 100)) == {3, 5}
    with pytest.raises(ValueError):
        Lengths.from_summary(300, 200, 1000)


def test_bursty_arrivals_keep_rate_and_raise_variability():
    t = Arrivals.bursty(10.0, 4.0).start_times_s(np.random.default_rng(0), 200_000)
    gaps = np.diff(t)
    assert gaps.mean() == pytest.approx(0.1, rel=0.02)
    assert gaps.var() / gaps.mean() ** 2 == pytest.approx(4.0, rel=0.05)  # CV^2


def test_warmup_excludes_first_tasks():
    c = cfg(arrivals=Arrivals.poisson(1.0), n_requests=100, warmup_fraction=0.25)
    r = simulate(c)
    assert r.n_requests == 100 and r.n_measured == 75
    assert math.isfinite(r.throughput_tokens_per_s)


@settings(max_examples=300, deadline=None)
@given(
    batch=st.integers(1, 512),
    ctx0=st.integers(0, 2_000_000),
    n_max=st.integers(1, 5000),
    fraction=st.floats(0.0, 1.2),
    kv=st.sampled_from([0.0, 2048.0, 131_072.0]),
    flops=st.sampled_from([1e9, 14e9, 1e13]),
)
def test_steps_to_reach_is_the_smallest_count_that_lasts_the_time(
    batch, ctx0, n_max, fraction, kv, flops
):
    """The closed-form count equals a plain walk over the steps, on both sides of the knee
    where the growing cache read overtakes the arithmetic."""
    from planner.serving.steps import _DecodeRun

    step = dataclasses.replace(SEED_STEP, kv_bytes_per_token=kv, flops_per_token=flops)
    run = _DecodeRun.of(step, batch, ctx0)
    target = fraction * run.total_s(0, n_max)
    walked = n_max
    for k in range(n_max):
        if run.total_s(0, k + 1) >= target:
            walked = k + 1
            break
    assert run.steps_to_reach(target, n_max) == walked


@pytest.mark.parametrize(
    ("lengths", "median"),
    [
        (Lengths.fixed(7), 7.0),
        (Lengths.samples([10, 1, 3, 2]), 2.0),  # inverted CDF: the 2nd of 4 sorted values
        # mean 800, p95 2,500: sigma = 1.644854 - sqrt(1.644854² - 2 ln 3.125) = 0.991651, and
        # the median e^mu = 800 × e^(-sigma²/2) = 800 × 0.611596
        (Lengths.from_summary(800, 2500, 4096), 489.276),
        (Lengths.geometric(4), 3.0),  # P(X ≤ 2) = 0.4375, P(X ≤ 3) = 0.578
        (Lengths.geometric(4, max=2), 2.0),
    ],
)
def test_median_length_by_hand(lengths, median):
    assert lengths.median_tokens() == pytest.approx(median, abs=1e-3)


# ------------------------------------------------------------- chunked prefill


def _chunk(done: int, tokens: int) -> float:
    """Arithmetic time of prefilling ``tokens`` more of a prompt with ``done`` cached [s]:
    linear 14e9 FLOP a token, attention 524,288 × ((done + tokens)² − done²), at 400e12."""
    return (tokens * 14e9 + 524_288 * ((done + tokens) ** 2 - done**2)) / 400e12


def test_a_mixed_step_by_hand():
    """A batch of 4 decoding (4,000 cached tokens) with a 500-token chunk of a prompt of which
    500 are cached: memory (14e9 + 131,072 × 4,500) ÷ 700e9 = 0.0208426 s; arithmetic 4 ×
    14e9 ÷ 400e12 + the chunk's 0.0175 + 0.000983 = 0.018623 s: memory-bound, + 1 ms. A larger
    chunk of 2,000 turns it compute-bound: 0.00014 + 0.07 + 0.0104858, then the 4,500 cached
    tokens read (0.000843 s), + 1 ms."""
    caches = 131_072 * 4_500 / 700e9
    memory = 14e9 / 700e9 + caches
    assert SEED_STEP.mixed_step_s(4, 4_000, [(500, 500)]) == pytest.approx(memory + 0.001)
    compute = 4 * 14e9 / 400e12 + _chunk(500, 2_000) + caches
    assert compute > memory
    assert SEED_STEP.mixed_step_s(4, 4_000, [(500, 2_000)]) == pytest.approx(compute + 0.001)
    # no chunk: a decode step; no batch and a whole prompt: its prefill
    assert SEED_STEP.mixed_step_s(4, 4_000, []) == SEED_STEP.decode_step_s(4, 4_000)
    assert SEED_STEP.mixed_step_s(0, 0, [(0, 8_000)]) == pytest.approx(SEED_STEP.prefill_s(8_000))


def test_a_prompt_is_prefilled_in_chunks_by_hand():
    """P = 1,000 in steps of 400 tokens: chunks of 400, 400 and 200, each reading the weights
    and its cached prefix; all three are memory-bound (the first: 0.014 + 0.00021 s of
    arithmetic against a 0.02 s weight read), so alone a chunked prompt pays three weight reads
    where a whole one pays its arithmetic once. The first token comes with the last chunk;
    then 4 decode steps as unchunked."""

    def step(done: int, tokens: int) -> float:
        memory = (14e9 + 131_072 * done) / 700e9
        return max(memory, _chunk(done, tokens)) + 0.001

    r = simulate(
        cfg(
            step=SEED_STEP,
            prompt=Lengths.fixed(1000),
            output=Lengths.fixed(5),
            max_output_tokens=5,
            chunk_tokens=400,
        )
    )
    ttft = step(0, 400) + step(400, 400) + step(800, 200)
    assert r.ttft_p50_s == pytest.approx(ttft, rel=1e-9)
    steps = [_decode(1000 + k) for k in (1, 2, 3, 4)]
    assert r.e2e_p50_s == pytest.approx(ttft + sum(steps), rel=1e-9)
    # a budget that holds the whole prompt: one step, exactly the unchunked prefill
    whole = simulate(
        cfg(step=SEED_STEP, prompt=Lengths.fixed(1000), output=Lengths.fixed(5),
            max_output_tokens=5, chunk_tokens=8192)
    )  # fmt: skip
    assert whole.ttft_p50_s == pytest.approx(_prefill_1000(), rel=1e-9)


def test_a_running_request_decodes_while_another_prefills_by_hand():
    """Two users with P = 1,000 and O = 3, steps of 600 tokens. Step 1 prefills 600 of A's
    and step 2 A's last 400 with 200 of B's (A emits its first token); from then A decodes
    one token a step beside B's chunks, never stalled by a whole prefill."""
    r = simulate(
        cfg(
            step=SEED_STEP,
            prompt=Lengths.fixed(1000),
            output=Lengths.fixed(3),
            max_output_tokens=3,
            arrivals=Arrivals.closed(2),
            n_requests=2,
            chunk_tokens=600,
        )
    )
    # each step: the larger of the weight read and the arithmetic, then the caches it reads
    memory = 14e9 / 700e9

    def read(cached: int) -> float:
        return 131_072 * cached / 700e9

    s1 = max(memory, _chunk(0, 600)) + 0.001
    # step 2: A's 400 (600 cached) and B's first 200 (none cached)
    s2 = max(memory, _chunk(600, 400) + _chunk(0, 200)) + read(600) + 0.001
    # step 3: A decodes (1,001 cached) beside B's next 599 tokens (200 cached)
    s3 = max(memory, 14e9 / 400e12 + _chunk(200, 599)) + read(1_001 + 200) + 0.001
    ttfts = sorted(r_ for r_ in (r.ttft_p50_s, r.ttft_p99_s))
    assert ttfts[0] == pytest.approx(s1 + s2, rel=1e-9)  # A
    # B's last token of prompt in step 4 (1 left, beside A's last decode)
    s4 = max(memory, 14e9 / 400e12 + _chunk(799, 201)) + read(1_002 + 799) + 0.001
    assert ttfts[1] == pytest.approx(s1 + s2 + s3 + s4, rel=1e-9)


def test_under_chunked_prefill_the_time_per_token_rises_with_the_arrival_rate():
    """Others' prompts share each step, so the mean time per output token grows with the
    rate (the median gap, a step with no chunk in it, moves far less)."""

    def tpot(rate: float) -> tuple[float, float]:
        r = simulate(
            SimConfig(
                **REALISTIC,
                kv_budget_tokens=200_000,
                arrivals=Arrivals.poisson(rate),
                n_requests=600,
                chunk_tokens=2048,
            )
        )
        return r.itl_mean_s, r.itl_p50_s

    low, high = tpot(0.5), tpot(4.0)
    assert high[0] > low[0] * 1.2


def _returning_users(spread: float) -> SimConfig:
    """Eight closed-loop users of one-token prompts and 50-token outputs on 20 ms steps, whose
    next request reaches the replica 3 ms (preprocessing) + 4 ms (network) after a completion,
    which is at a step boundary."""
    return cfg(
        prompt=Lengths.fixed(1),
        output=Lengths.fixed(50),
        max_output_tokens=50,
        arrivals=Arrivals.closed(8),
        n_requests=4000,
        preprocess_s=0.003,
        network_s=0.004,
        chunk_tokens=2048,
        delay_spread=spread,
    )


def test_fixed_delays_keep_closed_loop_users_in_lockstep():
    """With fixed delays, eight users who start together finish together and come back
    together 7 ms later to an idle replica: none ever waits for a step (TTFT 3 + 20 ms, end to
    end 3 + 1,000 + 4 ms) and the replica idles 7 ms in every 1,007: a lockstep no engine
    shows, which spreading the delays breaks."""
    r = simulate(_returning_users(0.0))
    assert r.wait_mean_s == 0.0 and r.wait_p95_s == 0.0
    assert r.ttft_p95_s == pytest.approx(0.023) and r.e2e_mean_s == pytest.approx(1.007)
    assert r.utilisation == pytest.approx(1.0 / 1.007, rel=1e-3)


def test_spread_delays_by_hand():
    """Preprocessing uniform on [1.5, 4.5] ms and network on [2, 6] ms (± 50 %): a request
    arrives D = its preprocessing + the previous one's network after a step boundary, 3.5 to
    10.5 ms, and waits 20 − D: 13 ms on average as before, but spread. D's lowest 5 % lie
    where x²/(2 × 3 × 4) = 0.05 above 3.5 ms (the corner of the sum of two uniforms):
    x = 1.0954 ms, so the 95th-percentile wait is 20 − 4.5954 = 15.405 ms. End to end is
    preprocessing + wait + 1 s + own network = 1.02 s + own network − the previous one's:
    1.02 s on average. Each delay stays within its bounds and has its mean."""
    config = _returning_users(0.5)
    r = simulate(config)
    assert r.wait_mean_s == pytest.approx(0.013, abs=0.0002)
    assert r.wait_p95_s == pytest.approx(0.015405, abs=0.0002)
    assert r.e2e_mean_s == pytest.approx(1.020, abs=0.0002)
    pre, net = (np.asarray(d) for d in request_delays(config, 20_000))
    assert pre.min() >= 0.0015 and pre.max() <= 0.0045 and net.min() >= 0.002
    assert net.max() <= 0.006
    assert pre.mean() == pytest.approx(0.003, rel=0.01)
    assert net.mean() == pytest.approx(0.004, rel=0.01)
    # the seed decides the delays, and a spread of 0 is the means exactly
    assert request_delays(config, 5) == request_delays(config, 5)
    assert request_delays(_returning_users(0.0), 2) == ([0.003] * 2, [0.004] * 2)
