"""Time planner.serving.sizing.simulate_candidates() on a catalog folder (default: the shipped
catalogs).

Run: ``python benchmarks/bench_sizing.py [catalog folder] [processes] [per_group]``.  Not a test.

Prints the time to load and evaluate the catalog, then the wall-clock and CPU time (this process
and its worker processes) of sizing the selected candidates (``per_group`` per workload × model)
with the given number of processes, the number of simulations run, and how the simulated replica
counts compare with the closed form.
"""

from __future__ import annotations

import os
import resource
import sys
import time

import pandas as pd

from planner.catalog import load_catalog
from planner.plan.selection import select_candidates
from planner.plan.sweep import evaluate
from planner.serving.sizing import simulate_candidates


def main() -> None:
    folder = sys.argv[1] if len(sys.argv) > 1 else "catalogs"
    processes = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    per_group = int(sys.argv[3]) if len(sys.argv) > 3 else 3

    t0 = time.perf_counter()
    catalog = load_catalog(folder)
    results = evaluate(catalog)
    t1 = time.perf_counter()
    table = results.table
    chosen = select_candidates(table, per_group)
    print(f"catalog {folder}: {len(table)} rows, load + evaluate {t1 - t0:.2f} s")
    print(
        f"simulating {len(chosen)} candidates ({per_group} per workload x model), "
        f"{catalog.assumptions.simulated_requests} requests per run, {processes} process(es), "
        f"{os.cpu_count()} CPUs"
    )

    def cpu() -> float:
        """CPU seconds of this process and its finished children (the worker processes)."""
        own = resource.getrusage(resource.RUSAGE_SELF)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    c0 = cpu()
    t2 = time.perf_counter()
    sized = simulate_candidates(catalog, results, per_group=per_group, processes=processes)
    t3 = time.perf_counter()
    c1 = cpu()
    runs = int(sized["sim_runs"].sum())
    print(
        f"sizing: {t3 - t2:.2f} s wall, {c1 - c0:.2f} s CPU (with workers), {runs} simulations, "
        f"{(c1 - c0) / max(runs, 1) * 1000:.0f} ms CPU per simulation"
    )

    merged = sized.merge(
        table[["hardware", "model", "precision", "workload", "tensor_parallel", "replicas_needed"]],
        on=["hardware", "model", "precision", "workload", "tensor_parallel"],
    )
    met = merged[merged["meets_targets_sim"]]
    more = (met["sim_replicas_needed"] > met["replicas_needed"]).sum()
    fewer = (met["sim_replicas_needed"] < met["replicas_needed"]).sum()
    print(
        f"met by simulation: {len(met)} of {len(sized)}; simulation needs more replicas than the "
        f"closed form for {more}, fewer for {fewer}, as many for {len(met) - more - fewer}"
    )
    bounds = sized.loc[~sized["meets_targets_sim"], "sim_bound"].value_counts()
    if len(bounds):
        print("not met, by bound: " + ", ".join(f"{k} {v}" for k, v in bounds.items()))
    with pd.option_context("display.width", 200, "display.max_colwidth", 70):
        cols = ["workload", "model", "hardware", "precision", "tensor_parallel"]
        print(
            merged[
                [
                    *cols,
                    "replicas_needed",
                    "sim_replicas_needed",
                    "ttft_p95_s",
                    "itl_p95_s",
                    "sim_reason",
                ]
            ].to_string(index=False, float_format=lambda v: f"{v:.3f}")
        )


if __name__ == "__main__":
    main()
