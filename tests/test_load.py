"""Latency at the forecast load: the batch a replica runs, and the full-batch formulas over it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.model.load import load_batch
from planner.model.metric import metrics

nan = math.nan


@pytest.mark.parametrize(
    ("decode_batch", "in_flight", "replicas", "batch"),
    [
        (16, 20.0, 3, 20 / 3),  # open loop: 2 requests/s × 10 s in flight over 3 replicas
        (16, 40.0, 3, 40 / 3),  # closed loop, no tool time: 40 users over 3 replicas
        (16, 0.5, 1, 1.0),  # at least one sequence
        (16, 100.0, 2, 16.0),  # at most the full batch
        (0, 3.0, nan, 0.0),  # nothing fits: no replica planned, the full (empty) batch
    ],
)
def test_load_batch_by_hand(decode_batch, in_flight, replicas, batch):
    value = load_batch(np.array([decode_batch]), np.array([in_flight]), np.array([replicas]))
    assert value[0] == pytest.approx(batch)


def test_the_load_figures_are_the_full_batch_formulas_over_the_load_batch():
    """One physics: itl_load_s is itl_s's own function, reading the load batch's step terms."""
    registry = metrics()
    itl, itl_load = registry["itl_s"], registry["itl_load_s"]
    assert itl_load.func is itl.func
    assert itl_load.inputs == (
        "load_decode_memory_s",
        "load_decode_compute_s",
        "allreduce_s_per_token",
        "load_batch",
        "step_overhead_s",
    )
    assert registry["e2e_load_s"].func is registry["e2e_s"].func
    assert "itl_load_s" in registry["e2e_load_s"].inputs
    assert registry["meets_itl_target"].inputs[0] == "itl_load_s"
    # a batch of 4 at 4,096 tokens each reads 14 GB of weights and 4 × 4,096 × 128 KiB of cache
    # at 700 GB/s: (14e9 + 2,147,483,648) ÷ 700e9 = 23.07 ms
    memory = registry["load_decode_memory_s"].func(14e9, 4, 4096 * 131_072, 700e9, 1.0)
    assert memory == pytest.approx((14e9 + 2_147_483_648) / 700e9, rel=1e-12)
