"""Benchmark: the run's independent units of work on 1 and 2 workers (run by hand, not a test).

    python benchmarks/bench_workers.py [--draws 200] [--requests 2000]

Two kinds of unit go through the executor: the simulation of each leading candidate (the
shipped catalogs' first selection, ``--requests`` simulated requests each) and Monte Carlo
draws of the whole plan (the shipped catalogs with triangular bandwidth and compute
efficiencies). Each is timed on one process (the baseline, measured in the same run) and on a
pool of 2; the speed-up is the ratio. Results are identical on both (each unit carries its
seed). This machine has 2 cores: more workers on a bigger machine are not measured here.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planner.catalog import load_catalog
from planner.executor import InProcess, ProcessPool
from planner.plan.selection import select_candidates
from planner.plan.sweep import evaluate
from planner.plan.uncertainty import monte_carlo
from planner.resources import shipped_catalogs
from planner.serving.sizing import simulate_rows


def timed(func: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = func()
    return time.perf_counter() - start, result


def uncertain_catalog(folder: Path) -> Path:
    shutil.copytree(shipped_catalogs(), folder, dirs_exist_ok=True)
    path = folder / "assumptions.yaml"
    text = path.read_text()
    for name, spread in (
        ("bandwidth_efficiency: 0.8", "{low: 0.6, mode: 0.8, high: 0.9}"),
        ("compute_efficiency: 0.5", "{low: 0.35, mode: 0.5, high: 0.6}"),
    ):
        text = text.replace(name, f"{name.split(':')[0]}: {spread}")
    path.write_text(text)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    catalog = load_catalog(shipped_catalogs())
    rows = select_candidates(evaluate(catalog).table, 3).sort_index()
    one, alone = timed(lambda: simulate_rows(catalog, rows, InProcess(), n_requests=args.requests))
    two, pooled = timed(
        lambda: simulate_rows(catalog, rows, ProcessPool(2), n_requests=args.requests)
    )
    assert alone.equals(pooled)
    print(f"simulation of {len(rows)} candidates × {args.requests:,} requests:")
    print(f"  1 worker {one:6.1f} s (baseline); 2 workers {two:6.1f} s: speed-up {one / two:.2f} ×")
    with tempfile.TemporaryDirectory() as tmp:
        uncertain = load_catalog(uncertain_catalog(Path(tmp)))
        one, alone = timed(lambda: monte_carlo(uncertain, args.draws, InProcess()))
        two, pooled = timed(lambda: monte_carlo(uncertain, args.draws, ProcessPool(2)))
    assert alone.options.equals(pooled.options)
    print(f"Monte Carlo, {args.draws} draws of the whole plan ({len(alone.options):,} options):")
    print(f"  1 worker {one:6.1f} s (baseline); 2 workers {two:6.1f} s: speed-up {one / two:.2f} ×")


if __name__ == "__main__":
    main()
