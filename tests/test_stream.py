"""A streamed sweep: every row written as its block is done, the same rows as a whole
evaluation, and the leading options the plan's own ranking picks from the whole table."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from openpyxl import load_workbook

from planner.catalog import load_catalog
from planner.cli import main
from planner.executor import InProcess, ProcessPool
from planner.plan import recommend
from planner.plan.columns import ALL_KEYS
from planner.plan.stream import blocks, stream
from planner.plan.sweep import candidate_codes, candidates, evaluate
from planner.resources import shipped_catalogs

pytest.importorskip("pyarrow")


@pytest.fixture(scope="module")
def whole() -> pd.DataFrame:
    return evaluate(load_catalog(shipped_catalogs())).table


def _plain(table: pd.DataFrame) -> pd.DataFrame:
    return table[ALL_KEYS].astype(str).reset_index(drop=True)


@pytest.mark.parametrize("executor", [InProcess(), ProcessPool(2)], ids=["in-process", "pool"])
def test_the_stream_writes_the_rows_of_a_whole_evaluation(whole, executor, tmp_path) -> None:
    catalog = load_catalog(shipped_catalogs())
    units = blocks(candidate_codes(catalog), 400)
    assert len(units) > 5  # many blocks, some combinations' sizes at their edges
    found = stream(catalog, tmp_path / "r.parquet", executor, keep=3, block_rows=400)
    written = pd.read_parquet(tmp_path / "r.parquet")
    assert list(written.columns) == list(whole.columns)
    pd.testing.assert_frame_equal(_plain(written), _plain(whole))
    for column in ("itl_s", "ttft_s", "devices_needed", "cost_usd"):
        assert written[column].to_numpy() == pytest.approx(
            whole[column].to_numpy(dtype=float), nan_ok=True
        )
    assert (found.candidates, found.rows) == (len(candidates(catalog)), len(whole))
    assert found.eligible == int(whole["eligible"].sum())


def test_the_leaders_are_the_whole_rankings_first_options(whole, tmp_path) -> None:
    catalog = load_catalog(shipped_catalogs())
    found = stream(catalog, tmp_path / "r.parquet", keep=3, block_rows=400)
    ranks = recommend.rank(whole)["rank"]
    expected = whole[(ranks >= 1) & (ranks <= 3)]
    pd.testing.assert_frame_equal(_plain(found.leaders), _plain(expected))


def test_a_streamed_run_holds_every_row_and_says_what_it_shows(whole, tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["run", "--out", str(out), "--stream-above", "0", "--full-csv", "--workers", "1"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "candidates were evaluated" in result.output
    parquet = pd.read_parquet(out / "results.parquet")
    full = pd.read_csv(out / "results.csv", keep_default_na=False)
    assert len(parquet) == len(full) == len(whole)
    manifest = json.loads((out / "manifest.json").read_text())
    assert "results.parquet" in manifest["files"] and manifest["files"].count("results.csv") == 1
    (note,) = manifest["notes"]
    assert f"{len(candidates(load_catalog(shipped_catalogs()))):,} candidates" in note
    notes = load_workbook(out / "plan.xlsx", read_only=True)["Notes"]
    assert note in [c for row in notes.iter_rows(values_only=True) for c in row]


def test_without_full_csv_the_csv_holds_the_leading_options(whole, tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["run", "--out", str(out), "--stream-above", "0", "--workers", "1"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    leaders = pd.read_csv(out / "results.csv")
    assert 0 < len(leaders) < len(whole) == len(pd.read_parquet(out / "results.parquet"))
