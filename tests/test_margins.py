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


# -- the top of the latency band -------------------------------------------------------------


@pytest.mark.parametrize(
    ("planned", "calls", "tool", "band", "upper"),
    [
        (8.0, 3, 1.0, 0.30, 9.8),  # 6 s of model time × 1.3 + 2 s of tools
        (10.0, 1, 5.0, 0.30, 13.0),  # one call: no tool time between calls
        (8.0, 3, 1.0, 0.0, 8.0),  # no band: as planned
    ],
)
def test_task_upper_widens_the_model_time_only(planned, calls, tool, band, upper):
    from planner.model.calibration import task_upper_s

    assert task_upper_s(planned, calls, tool, band) == pytest.approx(upper)


@pytest.mark.parametrize(
    ("task_upper", "task_target", "meets"),
    [
        (9.8, 10.0, True),
        (9.8, 9.5, False),  # met as planned (8 s), missed at the top of the band
        (9.8, math.nan, True),  # no task target
    ],
)
def test_a_task_target_missed_at_the_band_is_caught(task_upper, task_target, meets):
    """Every other latency is well within its target: the task target alone decides."""
    from planner.model.calibration import meets_targets_upper

    assert (
        bool(meets_targets_upper(True, 0.5, 1.0, 0.02, 0.05, 3.0, 10.0, task_upper, task_target))
        is meets
    )
