"""The simulation's fast paths give the reference's numbers to the last bit.

``simulate(cfg)`` runs ``reserve-max`` admission with chunked prefill on a loop of its own
(planner.serving.reserved) and everything else on the general loop with the step table's
looked-up step times; ``simulate(cfg, reference=True)`` runs the general loop with every step
time computed by the step model's plain calls. Over a table of configurations (open and closed
loop, chunked prefill on and off, time-outs, agent loops with tool time, queue limits, a tight
cache with rejections and preemptions, one-token answers, a trace), every field of the result
and every per-request sample must be equal: floats compared as their bits, NaN equal to NaN.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.serving.reserved import simulate_reserved_chunked
from planner.serving.simulate import Arrivals, Lengths, SimConfig, SimResult, StepModel, simulate
from planner.serving.steps import step_table

REQUESTS = 400

DENSE = StepModel(
    weight_bytes=16e9,
    kv_bytes_per_token=131_072,
    bandwidth_bytes_per_s=3.3e12,
    flops_per_token=16e9,
    compute_flops_per_s=7e14,
    attention_flops_per_token_sq=2 * 32 * 32 * 128,
    step_overhead_s=0.003,
    step_overhead_per_sequence_s=3e-5,
    padding_s=2e-4,
)

MIXTURE = StepModel(
    weight_bytes=60e9,
    kv_bytes_per_token=65_536,
    bandwidth_bytes_per_s=3.2e12,
    flops_per_token=6e9,
    compute_flops_per_s=4e14,
    attention_flops_per_token_sq=2 * 48 * 32 * 128,
    step_overhead_s=0.002,
    step_overhead_per_sequence_s=2e-5,
    allreduce_s_per_token=1e-6,
    routed_expert_bytes=55e9,
    encoder_bytes=1e9,
    experts=128,
    experts_per_token=8,
)


def _config(**fields: object) -> SimConfig:
    base: dict[str, object] = dict(
        step=DENSE,
        kv_budget_tokens=120_000,
        prompt=Lengths.from_summary(900, 3000, 7000),
        output=Lengths.from_summary(180, 600, 1024),
        max_output_tokens=1024,
        arrivals=Arrivals.poisson(12.0),
        n_requests=REQUESTS,
        max_batch=64,
        chunk_tokens=2048,
        seed=3,
        delay_spread=0.5,
        preprocess_s=0.01,
        network_s=0.02,
    )
    return SimConfig(**{**base, **fields})  # type: ignore[arg-type]


#: name -> fields that differ from :func:`_config`'s
CASES: dict[str, dict[str, object]] = {
    "open loop": {},
    "open loop, a mixture": dict(step=MIXTURE),
    "open loop, chunks of 512": dict(chunk_tokens=512),
    "open loop, chunks smaller than the batch": dict(chunk_tokens=16, max_batch=48),
    "open loop, whole prompts": dict(chunk_tokens=None),
    "bursty with a queue of 3": dict(
        arrivals=Arrivals.bursty(25.0, 6.0), queue_capacity=3, kv_budget_tokens=60_000
    ),
    "a loss system": dict(queue_capacity=0, arrivals=Arrivals.poisson(25.0)),
    "overload with time-outs": dict(arrivals=Arrivals.poisson(60.0), queue_timeout_s=0.5),
    "closed loop": dict(arrivals=Arrivals.closed(40)),
    "closed loop, no batch limit, time-outs": dict(
        arrivals=Arrivals.closed(96), max_batch=None, queue_timeout_s=1.0
    ),
    "closed loop, time-outs and rejections": dict(
        arrivals=Arrivals.closed(200), queue_timeout_s=0.2, reject_backoff_s=0.3
    ),
    "agent loop": dict(
        arrivals=Arrivals.closed(12), requests_per_task=4, tool_time_s=0.4, preprocess_s=0.05
    ),
    "agent loop, open": dict(arrivals=Arrivals.poisson(3.0), requests_per_task=3, tool_time_s=1),
    "tight cache: waits and rejections": dict(
        kv_budget_tokens=9_000, max_output_tokens=2048, output=Lengths.from_summary(300, 900, 2048)
    ),
    "one-token answers": dict(output=Lengths.fixed(1), max_output_tokens=1),
    "short prompts and answers, no delays": dict(
        prompt=Lengths.fixed(3),
        output=Lengths.from_summary(4, 12, 40),
        max_output_tokens=40,
        preprocess_s=0.0,
        network_s=0.0,
        delay_spread=0.0,
    ),
    "no warm-up": dict(warmup_fraction=0.0),
    "a trace": dict(
        arrivals=Arrivals.trace(
            [0.05 * i + (0.3 if i % 7 == 0 else 0.0) for i in range(150)],
            prompt_tokens=[200 + 37 * i for i in range(150)],
        ),
    ),
    "current length, recompute": dict(admission="current-length", kv_budget_tokens=30_000),
    "current length, swap": dict(
        admission="current-length", preemption="swap", kv_budget_tokens=20_000
    ),
    "current length, whole prompts": dict(
        admission="current-length", chunk_tokens=None, kv_budget_tokens=30_000
    ),
}


def _bits(value: object) -> object:
    """A field as something == compares bit for bit (NaN equal to NaN, -0.0 apart from 0.0)."""
    return float(value).hex() if isinstance(value, float) else value


def _assert_equal(fast: SimResult, reference: SimResult) -> None:
    for field in dataclasses.fields(fast):
        a, b = getattr(fast, field.name), getattr(reference, field.name)
        if field.name == "samples":
            assert a.keys() == b.keys()
            for name in a:
                assert a[name].tobytes() == b[name].tobytes(), name
        else:
            assert _bits(a) == _bits(b), f"{field.name}: {a!r} != {b!r}"


@pytest.mark.parametrize("fields", CASES.values(), ids=CASES.keys())
def test_every_figure_is_the_references(fields):
    cfg = _config(**fields)
    _assert_equal(simulate(cfg), simulate(cfg, reference=True))


#: The cases of reserve-max admission (the default) with chunked prefill.
RESERVED_CHUNKED = [
    name
    for name, fields in CASES.items()
    if "admission" not in fields and fields.get("chunk_tokens", 1) is not None
]


@pytest.mark.parametrize("name", RESERVED_CHUNKED)
def test_the_reserved_loop_is_the_references(name):
    """Run directly, the loop of reserve-max admission with chunked prefill gives the
    reference's figures."""
    cfg = _config(**CASES[name])
    result = simulate_reserved_chunked(cfg, step_table(cfg.step))
    _assert_equal(result, simulate(cfg, reference=True))


def test_the_cases_reach_what_they_name():
    """The table holds runs that queue, time out, reject, preempt and swap, so that equality
    covers those paths."""
    results = {name: simulate(_config(**fields)) for name, fields in CASES.items()}
    assert results["a loss system"].rejected_count > 0
    assert results["overload with time-outs"].rejected_count > 0
    assert results["closed loop, time-outs and rejections"].rejected_count > 0
    assert results["bursty with a queue of 3"].queued_count > 0
    assert results["bursty with a queue of 3"].rejected_count > 0
    assert results["tight cache: waits and rejections"].rejected_count > 0
    assert results["current length, recompute"].preemptions > 0
    assert results["current length, swap"].swap_bytes > 0
    assert results["agent loop"].tasks_completed > 0
    assert results["one-token answers"].n_completed > 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    closed=st.booleans(),
    load=st.floats(0.5, 80.0),
    budget=st.integers(2_000, 80_000),
    chunk=st.sampled_from([1, 7, 64, 512, 4096, None]),
    max_batch=st.sampled_from([1, 2, 8, 64, None]),
    capacity=st.sampled_from([None, 0, 2]),
    timeout=st.sampled_from([None, 0.05, 2.0]),
    rpt=st.integers(1, 3),
    output_max=st.sampled_from([1, 16, 600]),
    spread=st.sampled_from([0.0, 0.5]),
    warmup=st.sampled_from([0.0, 0.3]),
    seed=st.integers(0, 3),
)
def test_random_runs_are_the_references(
    closed, load, budget, chunk, max_batch, capacity, timeout, rpt, output_max, spread, warmup, seed
):
    arrivals = Arrivals.closed(max(1, int(load))) if closed else Arrivals.poisson(load)
    cfg = _config(
        arrivals=arrivals,
        kv_budget_tokens=budget,
        prompt=Lengths.from_summary(400, 1500, 3000),
        output=Lengths.from_summary(max(1, output_max // 3), max(1, output_max // 2), output_max),
        max_output_tokens=output_max,
        chunk_tokens=chunk,
        max_batch=max_batch,
        queue_capacity=capacity,
        queue_timeout_s=timeout,
        requests_per_task=rpt,
        tool_time_s=0.1 * (rpt - 1),
        delay_spread=spread,
        warmup_fraction=warmup,
        n_requests=60,
        seed=seed,
    )
    _assert_equal(simulate(cfg), simulate(cfg, reference=True))
