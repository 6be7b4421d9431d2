"""How long plan.xlsx takes to write for a large plan, and how much memory it needs.

A synthetic catalog of 20 hardware × 25 models × 4 precisions × 10 workloads crosses into 20,000
candidates in 250 workload × model groups (the Summary recommends one option per group; about half
the candidates are priced, so each group has options to rank). The script evaluates it, writes
the workbook, and prints the seconds and the peak memory of each step. Not a test: run it by hand
on the machine you care about::

    python benchmarks/bench_workbook.py [--hardware 20 --models 25 --precisions 4 --workloads 10]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planner.catalog import Assumptions, Catalog, Hardware, Model, Precision, Workload
from planner.outputs.workbook import recommendation_groups, write_workbook
from planner.plan.sweep import evaluate

FORMATS = ("bf16", "fp8", "int8", "fp4")


def synthetic_catalog(hardware: int, models: int, precisions: int, workloads: int) -> Catalog:
    """A catalog with the given number of entries of each kind (invented numbers).

    Every device has a rate for every format, so every combination is a candidate; every other
    device has no price and no interconnect, which exercises the ``#N/A`` paths. With an
    electricity rate the priced devices' options have a cost, so the recommendation has work.
    """
    devices = tuple(
        Hardware(
            id=f"hw-{i:03d}",
            name=f"Device {i}",
            memory=f"{16 + 8 * i} GiB",
            memory_bandwidth=f"{700 + 150 * i} GB/s",
            compute={f: f"{100 * (i + 1) * (k + 1)} TFLOPS" for k, f in enumerate(FORMATS)},
            interconnect_bandwidth=None if i % 2 else "450 GB/s",
            power="700 W",
            price={} if i % 2 else {"purchase_usd": 20000.0 + 1000 * i, "cloud_usd_per_hour": 2.5},
            source="synthetic",
        )
        for i in range(hardware)
    )
    model_list = tuple(
        Model(
            id=f"model-{i:03d}",
            name=f"Model {i}",
            parameters=1_000_000_000 * (i + 1),
            layers=16 + i,
            kv_heads=8,
            head_dim=128,
            source="synthetic",
        )
        for i in range(models)
    )
    precision_list = tuple(
        Precision(
            id=f"prec-{i}",
            weight_bytes_per_param=2 / (1 + i),
            kv_bytes_per_value=2,
            compute=FORMATS[i % len(FORMATS)],
        )
        for i in range(precisions)
    )
    workload_list = tuple(
        Workload(
            id=f"work-{i:02d}",
            prompt_tokens=1024 * (i + 1),
            max_output_tokens=512,
            concurrency=4 * (i + 1),
        )
        for i in range(workloads)
    )
    return Catalog(
        folder=Path("synthetic"),
        hardware=devices,
        models=model_list,
        precisions=precision_list,
        workloads=workload_list,
        assumptions=Assumptions(
            runtime_overhead="2 GiB", reserve="2 GiB", electricity_usd_per_kwh=0.12
        ),
    )


def measured(label: str, func: Callable[[], Any], trace: bool = False) -> Any:
    """Run ``func`` and print its wall time, and with ``trace`` the peak of Python allocations
    during it (tracemalloc slows Python several times: time and memory are separate runs)."""
    if trace:
        tracemalloc.start()
    start = time.perf_counter()
    result = func()
    seconds = time.perf_counter() - start
    line = f"{label:<24} {seconds:7.2f} s"
    if trace:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        line += f"   peak Python allocations {peak / 2**20:7.1f} MiB (traced run, slower)"
    print(line)
    return result


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def catalog_arguments(description: str | None) -> argparse.ArgumentParser:
    """A parser with the synthetic catalog's sizes (see :func:`synthetic_catalog`)."""
    parser = argparse.ArgumentParser(description=(description or "").split("\n\n")[0])
    parser.add_argument("--hardware", type=int, default=20)
    parser.add_argument("--models", type=int, default=25)
    parser.add_argument("--precisions", type=int, default=4)
    parser.add_argument("--workloads", type=int, default=10)
    return parser


def catalog_of(args: argparse.Namespace) -> Catalog:
    return synthetic_catalog(args.hardware, args.models, args.precisions, args.workloads)


def main() -> None:
    parser = catalog_arguments(__doc__)
    parser.add_argument("--trace", action="store_true", help="also measure Python allocations")
    parser.add_argument("--keep", type=Path, help="write the workbook here (kept)")
    args = parser.parse_args()
    catalog = catalog_of(args)
    results = measured("evaluate", lambda: evaluate(catalog))
    rows, cols = results.table.shape
    groups = recommendation_groups(results.table)
    print(f"plan: {rows:,} rows × {cols} columns; peak RSS so far {peak_rss_mib():.0f} MiB")
    print(
        f"summary: {len(groups)} groups, {sum(1 for g in groups if g.best)} with an eligible option"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.keep or Path(tmp) / "plan.xlsx")
        measured("write_workbook", lambda: write_workbook(results, path))
        print(f"file size                {path.stat().st_size / 2**20:7.1f} MiB")
        print(f"peak RSS of the process  {peak_rss_mib():7.0f} MiB")
        if args.trace:
            measured("write_workbook", lambda: write_workbook(results, path), trace=True)


if __name__ == "__main__":
    main()
