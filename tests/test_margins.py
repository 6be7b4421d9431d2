"""Margins to targets and KV capacity, against values worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.model.margins import (
    itl_planned_s,
    kv_spare_fraction,
    latency_headroom,
    sequences_per_replica,
    tight_margin,
    ttft_headroom,
)

nan = math.nan


@pytest.mark.parametrize(
    ("simulated", "p95", "closed", "planned"),
    [
        (True, 0.045, 0.031, 0.045),  # simulated: its p95
        (False, nan, 0.031, 0.031),  # not simulated: the closed form
        (True, nan, 0.031, 0.031),  # simulated but no figure (the best case missed): closed form
    ],
)
def test_the_planned_figure_is_the_simulated_p95_where_there_is_one(
    simulated, p95, closed, planned
):
    assert itl_planned_s(np.array([simulated]), np.array([p95]), np.array([closed]))[0] == planned


@pytest.mark.parametrize(
    ("planned", "target", "headroom"),
    [(0.045, 0.05, 0.1), (0.05, 0.05, 0.0), (0.06, 0.05, -0.2), (0.045, nan, nan)],
)
def test_headroom_is_the_share_of_the_target_left(planned, target, headroom):
    value = ttft_headroom(np.array([planned]), np.array([target]))[0]
    assert (math.isnan(value) and math.isnan(headroom)) or value == pytest.approx(headroom)


def test_the_least_headroom_skips_targets_not_set():
    h = latency_headroom(
        np.array([0.3, nan]), np.array([nan, nan]), np.array([0.1, nan]), np.array([nan, nan])
    )
    assert h[0] == pytest.approx(0.1) and math.isnan(h[1])


def test_kv_spare_at_the_forecast_load_by_hand():
    # 40 users on 3 replicas: 13.33 each of 16 sequences, 1 − 13.33/16 = 16.7 % spare;
    # open loop: 10 requests in flight on 2 replicas, 5 of 8: 37.5 % spare
    seqs = sequences_per_replica(np.array([40.0, 0.0]), np.array([nan, 10.0]), np.array([3, 2]))
    assert seqs == pytest.approx([40 / 3, 5.0])
    spare = kv_spare_fraction(seqs, np.array([16, 8]))
    assert spare == pytest.approx([1 - 40 / 48, 0.375])
    assert np.isnan(sequences_per_replica(np.array([4.0]), np.array([nan]), np.array([nan])))[0]


@pytest.mark.parametrize(
    ("headroom", "spare", "tight"),
    [(0.05, 0.5, True), (0.5, 0.05, True), (0.5, 0.5, False), (nan, nan, False), (0.1, 0.1, False)],
)
def test_a_margin_below_the_assumption_is_tight(headroom, spare, tight):
    assert bool(tight_margin(np.array([headroom]), np.array([spare]), 0.10)[0]) is tight
