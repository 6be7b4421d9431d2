"""The simulation's fast step times (planner.serving.steps.StepTable) are the step model's own
numbers to the last bit: every SimResult field of a run with them equals, exactly (not
approximately), the field of the same run computing each step by the step model's plain calls.

Configurations: the seed catalog's and the shipped catalog's leading candidates (dense and
mixture of experts, closed and open loop), each with whole-prompt and chunked prefill, and
hand-made ones for what the catalogs do not reach (swap, current-length admission, a tight
cache, queue limits, tasks with tool time).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.catalog import load_catalog
from planner.plan.selection import select_candidates
from planner.plan.sweep import evaluate
from planner.serving.configs import sim_config
from planner.serving.simulate import Arrivals, Lengths, SimConfig, StepModel, simulate
from planner.serving.steps import StepTable, _DecodeRun, step_table

REPO = Path(__file__).resolve().parent.parent
REQUESTS = 300  # per run: enough for preemptions, queueing and every step kind

MOE_STEP = StepModel(
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
    padding_s=3e-4,
)


def bits(value: object) -> object:
    """A field as something == compares bit for bit (NaN equal to NaN, -0.0 apart from 0.0)."""
    return float(value).hex() if isinstance(value, float) else value


def assert_identical(cfg: SimConfig) -> None:
    """Every field, and every per-request sample, the same number to the last bit."""
    fast, reference = simulate(cfg), simulate(cfg, reference=True)
    for field in dataclasses.fields(fast):
        a, b = getattr(fast, field.name), getattr(reference, field.name)
        if field.name == "samples":
            assert a.keys() == b.keys()
            for name in a:
                assert a[name].tobytes() == b[name].tobytes(), name
        else:
            assert bits(a) == bits(b), f"{field.name}: {a!r} != {b!r}"


def with_prefill(cfg: SimConfig) -> list[SimConfig]:
    """cfg with whole-prompt prefill and with chunks of 512 and 2,048 tokens."""
    return [dataclasses.replace(cfg, chunk_tokens=c) for c in (None, 512, 2048)]


def leading(folder: Path, replicas: tuple[int, ...] = ()) -> list[SimConfig]:
    """The simulations of a catalog's leading candidate per workload, of a dense model and of
    a mixture, at the closed form's replica count and at ``replicas``."""
    catalog = load_catalog(folder)
    chosen = select_candidates(evaluate(catalog).table, 1)
    chosen = chosen.groupby(["workload", chosen["experts"] > 0], sort=False).head(1)
    out = []
    for _, row in chosen.iterrows():
        workload = catalog.get("workloads", row["workload"])
        for r in {int(row["replicas_needed"]), *replicas}:
            out += with_prefill(sim_config(catalog, workload, row.to_dict(), r, REQUESTS))
    return out


SEED_CONFIGS = leading(REPO / "catalogs" / "examples" / "seed", (1, 4))
SHIPPED_CONFIGS = leading(REPO / "catalogs")


def test_the_catalogs_reach_every_kind_of_run():
    """The shipped candidates hold a mixture and a dense model, closed and open loop."""
    shipped = SHIPPED_CONFIGS
    assert any(c.step.experts > 0 for c in shipped) and any(c.step.experts == 0 for c in shipped)
    kinds = {c.arrivals.kind for c in shipped}
    assert "closed" in kinds and kinds - {"closed"}


@pytest.mark.parametrize("cfg", SEED_CONFIGS, ids=lambda c: f"seed-{c.chunk_tokens}")
def test_seed_catalog_runs_are_identical(cfg):
    assert_identical(cfg)


@pytest.mark.parametrize("cfg", SHIPPED_CONFIGS, ids=lambda c: f"shipped-{c.chunk_tokens}")
def test_shipped_catalog_runs_are_identical(cfg):
    assert_identical(cfg)


def _made(step: StepModel, **fields: object) -> SimConfig:
    base: dict[str, object] = dict(
        step=step,
        kv_budget_tokens=60_000,
        prompt=Lengths.from_summary(800, 2500, 6000),
        output=Lengths.from_summary(200, 600, 1024),
        max_output_tokens=1024,
        arrivals=Arrivals.poisson(8.0),
        n_requests=REQUESTS,
        max_batch=64,
    )
    return SimConfig(**{**base, **fields})  # type: ignore[arg-type]


HAND_MADE = [
    dict(admission="current-length", preemption="recompute"),
    dict(admission="current-length", preemption="swap", kv_budget_tokens=20_000),
    dict(arrivals=Arrivals.closed(48), queue_timeout_s=5.0, max_batch=None),
    dict(arrivals=Arrivals.bursty(6.0, 4.0), queue_capacity=3),
    dict(
        arrivals=Arrivals.closed(12),
        requests_per_task=3,
        tool_time_s=0.5,
        preprocess_s=0.05,
        network_s=0.02,
        delay_spread=0.5,
    ),
]


@pytest.mark.parametrize("step", [MOE_STEP, dataclasses.replace(MOE_STEP, experts=0.0)])
@pytest.mark.parametrize("fields", HAND_MADE)
def test_hand_made_runs_are_identical(step, fields):
    for cfg in with_prefill(_made(step, **fields)):
        assert_identical(cfg)


@settings(max_examples=200, deadline=None)
@given(
    batch=st.integers(0, 600),
    ctx=st.integers(0, 3_000_000),
    chunks=st.lists(st.tuples(st.integers(0, 50_000), st.integers(1, 8192)), max_size=4),
    moe=st.booleans(),
)
def test_every_step_time_is_the_step_models(batch, ctx, chunks, moe):
    step = MOE_STEP if moe else dataclasses.replace(MOE_STEP, experts=0.0, routed_expert_bytes=0)
    table = step_table(step)
    assert isinstance(table, StepTable) and step_table(step) is table
    for _ in range(2):  # computed, then looked up
        assert table.decode_step_s(batch, ctx).hex() == step.decode_step_s(batch, ctx).hex()
        got, want = table.mixed_step_s(batch, ctx, chunks), step.mixed_step_s(batch, ctx, chunks)
        assert got.hex() == want.hex()
        tokens = [t for _, t in chunks]
        assert table.prefill_batch_s(tokens).hex() == step.prefill_batch_s(tokens).hex()
        if batch:
            run, ref = _DecodeRun.of(table, batch, ctx), _DecodeRun.of(step, batch, ctx)
            assert (run.first, run.beta) == (ref.first, ref.beta)
        if chunks:  # a chunked step's three times at once, as the reserve-max loop takes them
            times = table.mixed_times(batch, ctx, chunks)
            first = _DecodeRun.of(step, batch, ctx).first if batch else times[2]
            assert [t.hex() for t in times] == [
                want.hex(),
                step.decode_step_s(batch, ctx).hex(),
                first.hex(),
            ]
    assert not math.isnan(table.decode_step_s(batch, ctx))


@settings(max_examples=50, deadline=None)
@given(tokens=st.lists(st.integers(0, 400_000), min_size=1, max_size=50))
def test_prefill_arithmetic_over_an_array_is_the_scalar_calls(tokens):
    """Remembered from one call over an array, each prompt's arithmetic is the scalar call's."""
    table = StepTable(**{f.name: getattr(MOE_STEP, f.name) for f in dataclasses.fields(MOE_STEP)})
    table.remember_prefill_flops(tokens)
    for p in tokens:
        assert table.prefill_flops(p).hex() == MOE_STEP.prefill_flops(p).hex()
