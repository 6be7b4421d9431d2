"""The sweep in chunks: the same table whatever the chunk size, in compact columns."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner.catalog import load_catalog
from planner.plan import sweep
from planner.plan.tables import KEYS, TP_KEY
from planner.resources import shipped_catalogs


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(shipped_catalogs())


@pytest.fixture(scope="module")
def whole(catalog):
    """The shipped catalogs evaluated as one chunk."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sweep, "CHUNK_ROWS", 10**9)
        return sweep.evaluate(catalog).table


@pytest.mark.parametrize("rows", [1, 7, 100])
def test_chunks_give_the_table_of_one_chunk(catalog, whole, rows, monkeypatch):
    monkeypatch.setattr(sweep, "CHUNK_ROWS", rows)
    chunked = sweep.evaluate(catalog).table
    pd.testing.assert_frame_equal(chunked, whole)


def test_pruning_drops_parallelism_across_chunks(catalog, whole):
    """Some tensor-parallel sizes are dropped (the shipped catalogs try several), and what stays
    of each combination are its smallest sizes, as if no chunk had cut it."""
    assert len(whole) < len(sweep.candidates(catalog))
    kept = whole.groupby([whole[k].astype(str) for k in KEYS])[TP_KEY].agg(list)
    sizes = sorted(set(catalog.assumptions.tensor_parallel_sizes))
    assert all(tp == sizes[: len(tp)] or tp == sorted(tp) for tp in kept)
    assert kept.map(len).max() > 1


@pytest.mark.parametrize("rows", [1, 2, 3, 5, 64])
def test_a_chunk_never_splits_a_combination(catalog, rows):
    plan = sweep.candidates(catalog)
    bounds = sweep.chunk_bounds(plan, rows)
    assert bounds[0][0] == 0 and bounds[-1][1] == len(plan)
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:], strict=False))
    keys = plan[list(KEYS)].astype(str).to_numpy()
    changes = {0} | {i for i in range(1, len(plan)) if (keys[i] != keys[i - 1]).any()}
    for (start, stop), (after, _) in zip(bounds, bounds[1:], strict=False):
        # each chunk holds at least ``rows`` rows and ends at the first change after that
        assert stop == min(i for i in changes | {len(plan)} if i >= start + rows)
        assert after in changes


def test_repeated_text_is_categorical_in_text_order(whole):
    hardware = whole["hardware"]
    assert isinstance(hardware.dtype, pd.CategoricalDtype)
    assert list(hardware.cat.categories) == sorted(hardware.astype(str).unique())
    ordered = whole.sort_values("hardware", kind="stable")["hardware"].astype(str)
    assert list(ordered) == sorted(hardware.astype(str))
    assert isinstance(whole["status"].dtype, pd.CategoricalDtype)
    assert not isinstance(whole["candidate"].dtype, pd.CategoricalDtype)
    assert whole["candidate"].is_unique


def test_missing_text_stays_missing():
    values = np.array(["b", None, "a", "b", "a", np.nan], dtype=object)
    column = sweep._Column(len(values), object)
    column.put(0, values[:4])
    column.put(4, values[4:])
    out = column.finish(len(values))
    assert list(out.categories) == ["a", "b"]
    assert list(pd.Series(out).isna()) == [False, True, False, False, False, True]
    assert list(pd.Series(out).dropna()) == ["b", "a", "b", "a"]


def test_only_the_columns_asked_for_are_kept(catalog, whole):
    asked = ["ttft_s", "status", "devices_needed"]
    table = sweep.evaluate(catalog, columns=asked).table
    keys = len(sweep.PLAN_KEYS)
    assert list(table.columns[:keys]) == sweep.PLAN_KEYS
    assert set(table.columns[keys:]) == set(asked)
    pd.testing.assert_frame_equal(table, whole[list(table.columns)])
