"""The step table's arrays over batch sizes (planner.serving.steps.StepTable.batch_terms) hold
the step model's own scalar values, exactly: each entry ``==`` the scalar call at that batch,
and every decode step read from them ``==`` the step model's, over a table of candidates (dense
and mixture, with and without tensor parallelism, per-sequence overhead and padding, the seed
catalog's leading rows)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from planner.catalog import load_catalog
from planner.plan.selection import select_candidates
from planner.plan.sweep import evaluate
from planner.serving.configs import step_model
from planner.serving.steps import StepModel, StepTable, _DecodeRun

REPO = Path(__file__).resolve().parent.parent

DENSE = StepModel(
    weight_bytes=14e9,
    kv_bytes_per_token=131_072,
    bandwidth_bytes_per_s=700e9,
    flops_per_token=14e9,
    compute_flops_per_s=400e12,
    attention_flops_per_token_sq=4 * 32 * 4096,
    step_overhead_s=0.002,
)
MOE = dataclasses.replace(
    DENSE,
    weight_bytes=60e9,
    kv_bytes_per_token=65_536,
    bandwidth_bytes_per_s=3.2e12,
    flops_per_token=6e9,
    routed_expert_bytes=55e9,
    encoder_bytes=1e9,
    experts=128,
    experts_per_token=8,
    step_overhead_per_sequence_s=2e-5,
    allreduce_s_per_token=1e-6,
    padding_s=3e-4,
)
COMPUTE_BOUND = dataclasses.replace(DENSE, compute_flops_per_s=1e12, padding_s=1e-3)
TENSOR_PARALLEL = dataclasses.replace(DENSE, allreduce_s_per_token=3e-6, bandwidth_bytes_per_s=3e12)


def _seed_steps() -> list[StepModel]:
    catalog = load_catalog(REPO / "catalogs" / "examples" / "seed")
    chosen = select_candidates(evaluate(catalog).table, 1).head(4)
    return [step_model(row, catalog.assumptions) for _, row in chosen.iterrows()]


CANDIDATES = [DENSE, MOE, COMPUTE_BOUND, TENSOR_PARALLEL, *_seed_steps()]
BATCHES = [0, 1, 2, 3, 7, 8, 64, 255, 256, 1023]
CONTEXTS = [0, 1, 17, 4096, 123_457, 3_000_001]


def _table(step: StepModel) -> StepTable:
    """A fresh table (not the shared cache), so each test fills its arrays itself."""
    return StepTable(**{f.name: getattr(step, f.name) for f in dataclasses.fields(step)})


@pytest.mark.parametrize("step", CANDIDATES, ids=range(len(CANDIDATES)))
def test_batch_arrays_hold_the_scalar_values(step):
    table = _table(step)
    weights, multiply, overhead, beta = table.batch_terms(max(BATCHES))
    assert len(weights) > max(BATCHES)
    for b in range(len(weights)):
        assert weights[b] == step.decode_weight_bytes(b)
        assert multiply[b] == step.decode_multiply_s(b)
        assert overhead[b] == step.decode_overhead_s(b)
        assert beta[b] == step.kv_bytes_per_token * b / step.bandwidth_bytes_per_s


@pytest.mark.parametrize("step", CANDIDATES, ids=range(len(CANDIDATES)))
def test_decode_steps_from_the_arrays_are_the_step_models(step):
    table = _table(step)
    for batch in BATCHES[1:]:
        for ctx in CONTEXTS:
            memory, compute = step.decode_terms(batch, ctx)
            want = max(memory, compute) + step.decode_overhead_s(batch)
            assert table.decode_first_s(batch, ctx) == want
            run, ref = _DecodeRun.of(table, batch, ctx), _DecodeRun.of(step, batch, ctx)
            assert (run.first, run.beta) == (ref.first, ref.beta)
            assert run.total_s(0, 9) == ref.total_s(0, 9)


def test_arrays_grow_as_larger_batches_are_reached():
    table = _table(MOE)
    assert len(table.batch_terms(3)[0]) == 4
    assert len(table.batch_terms(5)[0]) == 8  # doubling
    assert table.batch_terms(5)[0][5] == MOE.decode_weight_bytes(5)
