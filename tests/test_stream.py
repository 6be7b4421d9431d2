"""A streamed sweep: every row written as its block is done, the same rows as a whole
evaluation, and the leading options the plan's own ranking picks from the whole table."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from openpyxl import load_workbook

from planner.catalog import load_catalog
from planner.cli import main
from planner.executor import InProcess, ProcessPool
from planner.plan import recommend
from planner.plan.candidates import candidate_codes, candidates
from planner.plan.columns import ALL_KEYS
from planner.plan.stream import blocks, settle, stream
from planner.plan.sweep import evaluate
from planner.resources import shipped_catalogs

pytest.importorskip("pyarrow")

SEED = Path(__file__).resolve().parent.parent / "catalogs" / "examples" / "seed"


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
    _leaders_in_every_file(out)  # simulated leaders: one answer in every file


def test_without_full_csv_the_csv_holds_the_leading_options(whole, tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["run", "--out", str(out), "--stream-above", "0", "--workers", "1"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    leaders = pd.read_csv(out / "results.csv")
    assert 0 < len(leaders) < len(whole) == len(pd.read_parquet(out / "results.parquet"))


def _leaders_in_every_file(out: Path) -> None:
    """Every candidate the workbook and the report show (results.json's rows, the plan they
    render) has the same devices and cost in results.csv, results.parquet and plan.xlsx."""
    shown = pd.DataFrame(json.loads((out / "results.json").read_text())["rows"])
    assert len(shown)
    csv = pd.read_csv(out / "results.csv", low_memory=False)
    parquet = pd.read_parquet(out / "results.parquet")
    sheet = pd.read_excel(out / "plan.xlsx", sheet_name="Plan").dropna(subset=["hardware"])
    for name, other in (("csv", csv), ("parquet", parquet), ("workbook", sheet)):
        both = shown.merge(other, on=ALL_KEYS, suffixes=("", f"_{name}"), validate="1:1")
        assert len(both) == len(shown), name
        for column in ("devices_needed", "cost_usd"):
            ours, theirs = both[column].astype(float), both[f"{column}_{name}"].astype(float)
            close = (ours - theirs).abs() <= 1e-6 * ours.abs().clip(lower=1)
            same = close | (ours.isna() & theirs.isna())
            assert same.all(), (name, column, both.loc[~same, ALL_KEYS].head())


PRICED = "    price: {cloud_usd_per_hour: 1.00}\n    source:"


def test_a_streamed_run_gives_one_answer_per_candidate_in_every_file(tmp_path: Path) -> None:
    """The seed catalog with a price (so its options can win and are simulated), streamed
    with every row in results.csv: the workbook's rows agree with both full files."""
    cats = tmp_path / "cats"
    shutil.copytree(SEED, cats)
    text = (cats / "hardware.yaml").read_text()
    (cats / "hardware.yaml").write_text(text.replace("    source:", PRICED, 1))
    out = tmp_path / "run"
    args = ["run", "--catalogs", str(cats), "--out", str(out), "--stream-above", "0",
            "--full-csv", "--workers", "1"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    _leaders_in_every_file(out)


def test_settle_writes_the_planned_rows_over_the_streamed_ones(tmp_path: Path) -> None:
    """A leader the simulation sized at 3 devices (3 × 1 USD/h × 730 h × 36 months = 78,840
    USD) where the closed form said 1: after :func:`settle` the Parquet part and the CSV say 3
    and 78,840 for it, every other row is as streamed, and the CSV parts are joined."""
    cats = tmp_path / "cats"
    shutil.copytree(SEED, cats)
    text = (cats / "hardware.yaml").read_text()
    (cats / "hardware.yaml").write_text(text.replace("    source:", PRICED, 1))
    catalog = load_catalog(cats)
    parquet, csv = tmp_path / "r.parquet", tmp_path / "r.csv"
    found = stream(catalog, parquet, csv=csv, join_csv=False)
    planned = evaluate(catalog, rows=found.leaders)
    leader = planned.table["workload"].astype(str) == "seed-4k"
    assert leader.sum() == 1
    planned.table.loc[leader, "devices_needed"] = 3.0
    planned.table.loc[leader, "cost_usd"] = 3 * 1.00 * 730 * 36
    before = pd.concat(pd.read_parquet(part) for part in sorted(parquet.glob("*.parquet")))
    before = before.reset_index(drop=True)
    assert settle(parquet, planned, csv=csv) == len(planned.table)
    for after in (pd.read_parquet(parquet), pd.read_csv(csv)):
        assert len(after) == len(before) == 4
        mine = after["workload"].astype(str) == "seed-4k"
        mine &= after["model"].astype(str) == "invented-4gib"
        assert after.loc[mine, "devices_needed"].tolist() == [3]
        assert after.loc[mine, "cost_usd"].tolist() == [78_840]
        pd.testing.assert_series_equal(
            after.loc[~mine, "cost_usd"].reset_index(drop=True).astype(float),
            before.loc[~mine.to_numpy(), "cost_usd"].reset_index(drop=True).astype(float),
        )
    assert sorted(p.suffix for p in parquet.iterdir()) == [".parquet"]  # CSV parts joined
