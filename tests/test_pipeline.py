"""The run as one story (planner.pipeline): its stages in order, refusals before any work."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner import pipeline
from planner.catalog import load_catalog
from planner.diff import NotARun
from planner.outputs import runs
from planner.outputs.runs import RunExists
from planner.plan.sweep import evaluate


def _no_planning(*args, **kwargs):
    raise AssertionError("planned although the run was refused")


def test_an_existing_destination_is_refused_before_any_work(seed_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "plan", _no_planning)
    (tmp_path / "run").mkdir()
    with pytest.raises(RunExists, match="already exists"):
        pipeline.run(load_catalog(seed_dir), tmp_path / "run")


def test_a_baseline_that_is_not_a_run_is_refused_before_any_work(seed_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "plan", _no_planning)
    (tmp_path / "not-a-run").mkdir()
    with pytest.raises(NotARun):
        pipeline.run(load_catalog(seed_dir), tmp_path / "run", baseline=tmp_path / "not-a-run")
    assert not (tmp_path / "run").exists()


def test_without_simulated_requests_the_plan_is_the_evaluation(seed_copy: Path):
    text = (seed_copy / "assumptions.yaml").read_text()
    (seed_copy / "assumptions.yaml").write_text(text + "  simulated_requests: 0\n")
    catalog = load_catalog(seed_copy)
    planned, evaluated = pipeline.plan(catalog, processes=1).table, evaluate(catalog).table
    assert planned.equals(evaluated) and not planned["simulated"].any()


def test_a_run_writes_its_folder_and_compares_with_its_baseline(seed_dir, tmp_path):
    catalog = load_catalog(seed_dir)
    first = pipeline.run(catalog, tmp_path / "first", processes=1)
    second = pipeline.run(catalog, tmp_path / "second", baseline=first.folder, processes=1)
    assert first.baseline is None and (first.folder / "results.csv").exists()
    assert second.baseline is not None and (second.folder / "diff.csv").exists()
    assert second.results.table.equals(first.results.table)  # the same catalog, the same plan


def test_a_run_tells_its_progress_stage_by_stage(seed_dir, tmp_path):
    seen: list[tuple[str, int, int]] = []
    pipeline.run(
        load_catalog(seed_dir),
        tmp_path / "run",
        processes=1,
        progress=lambda stage, done, total: seen.append((stage, done, total)),
    )
    stages = list(dict.fromkeys(stage for stage, _, _ in seen))
    assert stages[:2] == ["evaluating", "simulating"]
    files = (runs.RESULTS_CSV, runs.CATALOG_COPY, runs.RESULTS_JSON, runs.FLEET_JSON,
             runs.DEPLOY, runs.WORKBOOK, runs.REPORT)  # fmt: skip
    assert [s for s in stages if s.startswith("writing")] == [f"writing {f}" for f in files]
    simulating = [(d, t) for s, d, t in seen if s == "simulating"]
    assert simulating[0][0] == 0 and all(d <= t for d, t in simulating)
    assert simulating[-1][0] == simulating[-1][1]  # every chosen candidate sized
