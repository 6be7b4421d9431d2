"""The registries of targets and calibrated figures name what the records hold: every list of
them elsewhere derives from the registry, and the records that declare them field by field
agree with it."""

from __future__ import annotations

from dataclasses import fields

from planner.catalog.records import Calibration, Targets
from planner.model.calibrated import CALIBRATED_FIGURES
from planner.model.metric import metrics
from planner.model.targets import TARGETS
from planner.serving.statistics import SimResult


def test_the_workload_record_holds_one_field_per_target_in_order():
    assert list(Targets.model_fields) == [t.field for t in TARGETS]


def test_each_target_names_a_simulated_p95_and_a_closed_form_check():
    simulated = {f.name for f in fields(SimResult)}
    registry = metrics()
    for t in TARGETS:
        assert t.simulated in simulated
        assert registry[t.meets].inputs == (t.estimate, t.column)
        assert t.upper in registry


def test_the_target_metrics_read_every_target_in_order():
    registry = metrics()
    assert registry["meets_targets"].inputs[1:] == tuple(t.meets for t in TARGETS)
    assert registry["target_miss_reason"].inputs[4:] == tuple(t.meets for t in TARGETS)
    assert registry["meets_targets_upper"].inputs == (
        "meets_targets_planned",
        "ttft_upper_s",
        "ttft_p95_target_s",
        "itl_upper_s",
        "itl_p95_target_s",
        "e2e_upper_s",
        "e2e_p95_target_s",
        "task_upper_s",
        "task_p95_target_s",
    )


def test_the_calibration_record_fits_the_registered_figures():
    assert set(Calibration.FITTED) == {f.field for f in CALIBRATED_FIGURES}
    for f in CALIBRATED_FIGURES:
        assert f.field in Calibration.model_fields
        assert f.plan in {i for m in metrics().values() for i in m.inputs}
