"""Time the serving simulation's two paths on the simulations that sizing runs for a catalog
(default: the shipped catalogs): step times looked up (the default) and computed by the step
model's plain calls each time (``simulate(cfg, reference=True)``).

Run: ``python benchmarks/bench_step_table.py [catalog folder] [per_group] [max simulations]``.
Not a test.

First sizes the selected candidates (``per_group`` per workload x model) in this process and
keeps every simulation configuration it runs; then simulates each configuration with both
paths, one after the other, checks that every result field is the same number to the last bit,
and prints the CPU time of each path and their ratio. The machine may be shared: the ratio,
measured in one run with the paths interleaved, is the figure to quote, not the seconds.
"""

from __future__ import annotations

import sys
import time

from planner.catalog import load_catalog
from planner.plan.selection import select_candidates
from planner.plan.sweep import evaluate
from planner.serving import sizing
from planner.serving.simulate import SimConfig, SimResult, simulate
from planner.serving.sizing import size_candidate


def configs(folder: str, per_group: int) -> tuple[list[SimConfig], int]:
    """Every simulation sizing runs for the catalog's candidates, and the runs it counted."""
    catalog = load_catalog(folder)
    chosen = select_candidates(evaluate(catalog).table, per_group).sort_index()
    seen: list[SimConfig] = []

    def recording(cfg: SimConfig) -> SimResult:
        seen.append(cfg)
        return simulate(cfg)

    sizing.simulate = recording  # type: ignore[assignment]  (this script only)
    runs = 0
    for _, row in chosen.iterrows():
        runs += int(size_candidate(catalog, row.to_dict())["sim_runs"])
    return seen, runs


def same(a: SimResult, b: SimResult) -> bool:
    """Every field and every per-request sample equal, bit for bit."""
    if a.samples.keys() != b.samples.keys():
        return False
    if any(a.samples[k].tobytes() != b.samples[k].tobytes() for k in a.samples):
        return False
    x, y = a.to_dict(), b.to_dict()
    return all(
        float(x[k]).hex() == float(y[k]).hex() if isinstance(x[k], float) else x[k] == y[k]
        for k in x
    )


def main() -> None:
    folder = sys.argv[1] if len(sys.argv) > 1 else "catalogs"
    per_group = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    limit = int(sys.argv[3]) if len(sys.argv) > 3 else None
    t0 = time.process_time()
    cfgs, runs = configs(folder, per_group)
    print(f"{folder}: sizing ran {runs} simulations in {time.process_time() - t0:.1f} s CPU")
    cfgs = cfgs[:limit]
    fast = reference = 0.0
    for i, cfg in enumerate(cfgs):
        order = (True, False) if i % 2 else (False, True)  # alternate which path goes first
        results = {}
        for ref in order:
            c0 = time.process_time()
            results[ref] = simulate(cfg, reference=ref)
            dt = time.process_time() - c0
            if ref:
                reference += dt
            else:
                fast += dt
        if not same(results[True], results[False]):
            raise SystemExit(f"simulation {i}: the two paths differ")
    print(
        f"{len(cfgs)} simulations, results identical: reference {reference:.1f} s CPU, "
        f"fast {fast:.1f} s CPU, {reference / fast:.2f}x faster"
    )


if __name__ == "__main__":
    main()
