"""Benchmark: evaluating a 20,000-candidate plan (run by hand, not a test).

    python benchmarks/bench_sweep.py [--hardware 20 --models 25 --precisions 4 --workloads 10]

Prints the candidate count, the seconds of load and of evaluate (and candidates per second: numpy
runs on one core), of a second evaluate of the same catalog (what a run pays for each chunk of
a large sweep, the metrics' first use paid: tracing their formulas, importing), the same as a
multiple of a yardstick measured in the same run, and the process's peak memory (the yardstick
runs in a child process, so its frame is not counted); with --trace, the peak of Python
allocations in a separate, slower run; with --columns, only those columns are kept (how a scan
of a million candidates should ask for its results).
20 hardware × 25 models × 4 precisions × 10 workloads give about 20,000 candidates; 100 × 100 ×
4 × 25 about 1,000,000.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import tempfile
import time
import tracemalloc
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from planner.catalog import load_catalog
from planner.plan.sweep import evaluate


def synthetic_catalog(
    folder: Path, hardware: int, models: int, precisions: int, workloads: int
) -> None:
    """Write a catalog folder with the given numbers of entries (all numbers invented)."""
    hw = ["hardware:"]
    for i in range(hardware):
        hw.append(
            f"  - id: dev-{i}\n    memory: {40 + 8 * i} GiB\n"
            f"    memory_bandwidth: {1 + i / 10} TB/s\n"
            f"    compute: {{bf16: {300 + 50 * i} TFLOPS, fp8: {600 + 100 * i} TFLOPS}}\n"
            f"    interconnect_bandwidth: 450 GB/s\n    power: {300 + 20 * i} W\n"
            f"    price: {{purchase_usd: {10000 + 1000 * i}, cloud_usd_per_hour: {1 + i / 10}}}"
        )
    ms = ["models:"]
    for i in range(models):
        ms.append(
            f"  - id: model-{i}\n    layers: {16 + 2 * i}\n    hidden_size: {2048 + 256 * i}\n"
            f"    intermediate_size: {8192 + 1024 * i}\n    attention_heads: 32\n    kv_heads: 8\n"
            f"    head_dim: 128\n    vocab_size: 128000"
        )
    ps = ["precisions:"]
    for i in range(precisions):
        bits = (16, 8, 4, 6)[i % 4]
        ps.append(
            f"  - id: p-{i}\n    weight_bits: {bits}\n"
            f"    kv_bytes_per_value: {2 if bits > 8 else 1}\n"
            f"    compute: {'fp8' if bits == 8 else 'bf16'}"
        )
    ws = ["workloads:"]
    for i in range(workloads):
        ws.append(
            f"  - id: w-{i}\n    prompt_tokens: {{mean: {500 * (i + 1)}, p95: {900 * (i + 1)}, "
            f"max: {1024 * (i + 1)}}}\n    max_output_tokens: 1024\n"
            f"    concurrency: {8 * (i + 1)}\n"
            f"    targets: {{itl_p95: 60 ms}}"
        )
    (folder / "hardware.yaml").write_text("\n".join(hw) + "\n")
    (folder / "models.yaml").write_text("\n".join(ms) + "\n")
    (folder / "precisions.yaml").write_text("\n".join(ps) + "\n")
    (folder / "workloads.yaml").write_text("\n".join(ws) + "\n")
    (folder / "assumptions.yaml").write_text(
        "assumptions:\n  runtime_overhead: 3 GiB\n  reserve: 4 GiB\n"
        "  electricity_usd_per_kwh: 0.1\n"
    )


def yardstick(rows: int, columns: int) -> float:
    """Seconds to build a DataFrame of ``rows`` × ``columns`` floats, each column computed by
    one numpy multiply: the least any column-wise evaluation of such a table can cost here."""
    start = time.perf_counter()
    base = np.arange(rows, dtype=float)
    pd.DataFrame({f"c{i}": base * i for i in range(columns)})
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    for name, default in (("hardware", 20), ("models", 25), ("precisions", 4), ("workloads", 10)):
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--trace", action="store_true", help="also trace Python allocations")
    parser.add_argument(
        "--columns",
        default=None,
        help="comma-separated columns to keep (every metric is still evaluated), e.g. "
        "cost_usd,eligible,devices_needed,itl_load_s,status",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        synthetic_catalog(folder, args.hardware, args.models, args.precisions, args.workloads)
        start = time.perf_counter()
        catalog = load_catalog(folder)
        loaded = time.perf_counter()
        keep = args.columns.split(",") if args.columns else None
        results = evaluate(catalog, columns=keep)
        done = time.perf_counter()
        again = evaluate(catalog, columns=keep)  # the first use's costs (tracing, imports) paid
        warm = time.perf_counter() - done
        del again
    rows, columns = results.table.shape
    seconds = done - loaded
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    table = results.table.memory_usage(deep=True).sum() / 2**20
    del results
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        floor = pool.submit(yardstick, rows, columns).result()  # its memory is not ours
    print(f"candidates: {rows:,} rows × {columns} columns")
    print(f"load: {loaded - start:.2f} s, evaluate: {seconds:.2f} s ({rows / seconds:,.0f} per s)")
    print(f"evaluate again, the first use's costs paid: {warm:.2f} s ({rows / warm:,.0f} per s)")
    print(
        f"yardstick (a {rows:,} × {columns} float frame): {floor:.2f} s; evaluate is "
        f"{seconds / floor:.1f} × that"
    )
    print(f"peak RSS of the process: {rss:,.0f} MiB (the table: {table:,.0f} MiB)")
    if args.trace:  # tracing slows Python several-fold: a separate run
        tracemalloc.start()
        evaluate(catalog)
        print(f"peak Python allocations: {tracemalloc.get_traced_memory()[1] / 2**20:,.0f} MiB")
        tracemalloc.stop()


if __name__ == "__main__":
    main()
