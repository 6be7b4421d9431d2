"""One plan, three executors: the simulation's units give the same table in this process, on a
local process pool and on a Dask LocalCluster of two workers."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from planner.catalog import load_catalog
from planner.cli import main
from planner.executor import Dask, ExecutorUnavailable, InProcess, ProcessPool, executor, kept
from planner.plan.selection import select_candidates
from planner.plan.sweep import evaluate
from planner.serving.sizing import simulate_rows

SEED = Path(__file__).resolve().parent.parent / "catalogs" / "examples" / "seed"


@pytest.fixture(scope="module")
def chosen() -> tuple[object, pd.DataFrame]:
    catalog = load_catalog(SEED)
    rows = select_candidates(evaluate(catalog).table, 3).sort_index()
    assert len(rows) >= 2  # several units, so the pools really spread them
    return catalog, rows


def test_the_same_plan_on_every_executor_gives_the_same_table(chosen) -> None:
    pytest.importorskip("dask.distributed")
    catalog, rows = chosen
    alone = simulate_rows(catalog, rows, InProcess(), n_requests=400)
    pooled = simulate_rows(catalog, rows, ProcessPool(2), n_requests=400)
    dask = simulate_rows(catalog, rows, Dask(workers=2), n_requests=400)
    pd.testing.assert_frame_equal(alone, pooled)
    pd.testing.assert_frame_equal(alone, dask)
    assert alone["sim_replicas_needed"].notna().all()


@pytest.mark.parametrize(
    ("workers", "scheduler", "kind"),
    [
        (1, None, InProcess),
        (4, None, ProcessPool),
        (2, "local", Dask),
        (2, "tcp://10.0.0.1:8786", Dask),
    ],
)
def test_the_executor_a_run_asks_for(workers: int, scheduler: str | None, kind: type) -> None:
    chosen = executor(workers, scheduler)
    assert isinstance(chosen, kind)
    if isinstance(chosen, Dask):
        assert chosen.address == (None if scheduler == "local" else scheduler)


def test_an_unreachable_scheduler_is_a_clear_error(tmp_path: Path) -> None:
    pytest.importorskip("dask.distributed")
    result = CliRunner().invoke(
        main,
        [
            "run",
            "--catalogs",
            str(SEED),
            "--out",
            str(tmp_path / "run"),
            "--scheduler",
            "tcp://127.0.0.1:9",
        ],
    )
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in result.output
    assert not (tmp_path / "run").exists()


def test_the_error_type_names_what_is_missing() -> None:
    assert issubclass(ExecutorUnavailable, RuntimeError)


def test_the_progress_says_how_many_workers_share_a_stage() -> None:
    import io

    from rich.console import Console

    from planner.outputs.terminal import progress_display

    shown = io.StringIO()
    console = Console(file=shown, force_terminal=True, width=100)
    with progress_display(console, workers=2) as progress:
        progress("simulating", 3, 10)
        progress("writing results.csv", 1, 5)
    text = shown.getvalue()
    assert "simulating on 2 workers" in text
    assert "writing the run folder" in text and "writing the run folder on" not in text


def _freeze_count(shared: object, item: int) -> tuple[int, int]:
    import gc
    import os

    return os.getpid(), gc.get_freeze_count()


def test_pool_workers_start_with_the_run_s_objects_frozen() -> None:
    """Forked with the run's objects frozen: the workers' collector leaves them (and the pages
    they share with the run) alone; the run's collector is as before once the pool is made."""
    import gc
    import os

    seen = list(ProcessPool(2).map(_freeze_count, None, [1, 2, 3, 4]))
    assert all(pid != os.getpid() and frozen > 1000 for pid, frozen in seen)
    assert gc.get_freeze_count() == 0


def _pid(shared: object, item: int) -> int:
    import os
    import time

    time.sleep(0.2)  # long enough that each worker takes a unit
    return os.getpid()


def test_a_kept_pool_runs_each_map_of_one_input_on_the_same_workers() -> None:
    """Inside ``kept`` the workers started by the first map run the maps after it (of the same
    shared input), and are shut down on leaving; a map of another input starts its own."""
    import os

    pool, shared = ProcessPool(2), object()
    with kept(pool):
        first = set(pool.map(_pid, shared, [1, 2, 3, 4]))
        again = set(pool.map(_pid, shared, [1, 2]))
        other = set(pool.map(_pid, object(), [1, 2]))
    later = set(pool.map(_pid, shared, [1, 2]))
    assert os.getpid() not in first and again <= first
    assert not other & first and not later & (first | other)
    assert list(kept(InProcess()).__enter__().map(_pid, shared, [1])) == [os.getpid()]
