"""Benchmark: a forked child's garbage collector, as the run sets it, against Python's defaults
(run by hand, not a test).

    python benchmarks/bench_child_gc.py [--repeat 4]

Plans the shipped catalogs once (two simulation workers, forked as :mod:`planner.executor`
forks them), then writes the report ``--repeat`` times in forked children, alternating two
ways: Python's defaults (the parent's objects not frozen, the youngest generation collected
every 700 allocations), and the run's (:class:`planner.outputs.background.Forked`: the parent's
objects frozen before the fork, the child collecting every
:data:`~planner.outputs.background.CHILD_GC_ALLOCATIONS`). Prints each child's CPU seconds and
minor page faults (pages the child copied from the parent), and the ratio of the medians. The
simulation's workers are timed the same way: ``plan`` with two workers, its CPU time and page
faults with the parent's objects frozen at the fork and without.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from planner.catalog import load_catalog
from planner.outputs.background import CHILD_GC_ALLOCATIONS
from planner.outputs.outlook import outlook
from planner.outputs.report import write_report
from planner.pipeline import plan
from planner.resources import shipped_catalogs


def in_child(work: Callable[[], None], frozen: bool, allocations: int) -> tuple[float, int]:
    """CPU seconds and minor page faults of ``work`` in a forked child."""
    read, write = os.pipe()
    if frozen:
        gc.freeze()
    pid = os.fork()
    if pid == 0:  # the child
        gc.set_threshold(allocations, *gc.get_threshold()[1:])
        start = time.process_time()
        work()
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        os.write(write, f"{time.process_time() - start} {faults}".encode())
        os._exit(0)
    gc.unfreeze()
    os.waitpid(pid, 0)
    cpu, faults = os.read(read, 100).decode().split()
    os.close(read)
    os.close(write)
    return float(cpu), int(faults)


def children_cpu_s() -> tuple[float, int]:
    """CPU seconds and minor page faults of this process and its waited-for children."""
    me, them = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return (
        me.ru_utime + me.ru_stime + them.ru_utime + them.ru_stime,
        me.ru_minflt + them.ru_minflt,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=4)
    args = parser.parse_args()
    catalog = load_catalog(shipped_catalogs())
    results = plan(catalog, processes=2)
    derived = outlook(catalog, results.table)
    scratch = Path(tempfile.mkdtemp(prefix="bench-child-gc-"))

    def report() -> None:
        write_report(catalog, results, scratch / "report.pdf", derived=derived)

    ways = {"Python's defaults": (False, 700), "the run's": (True, CHILD_GC_ALLOCATIONS)}
    seen: dict[str, list[tuple[float, int]]] = {name: [] for name in ways}
    for _ in range(args.repeat):
        for name, (frozen, allocations) in ways.items():
            seen[name].append(in_child(report, frozen, allocations))
    print("the report in a forked child   CPU s (each)                      minor faults")
    medians = {}
    for name, runs in seen.items():
        medians[name] = statistics.median(cpu for cpu, _ in runs)
        each = ", ".join(f"{cpu:.2f}" for cpu, _ in runs)
        print(f"  {name:<28} {medians[name]:5.2f} ({each})   {runs[0][1]:>9,}")
    ratio = medians["the run's"] / medians["Python's defaults"]
    print(f"  the run's ÷ defaults: {ratio:.2f}")

    planned: dict[str, list[tuple[float, int]]] = {"Python's defaults": [], "the run's": []}
    for _ in range(args.repeat):
        for name, runs in planned.items():
            original = gc.freeze
            if name != "the run's":
                gc.freeze = lambda: None  # type: ignore[assignment]  # the executor's call
            try:
                cpu0, faults0 = children_cpu_s()
                plan(catalog, processes=2)
                cpu1, faults1 = children_cpu_s()
            finally:
                gc.freeze = original  # type: ignore[assignment]
            runs.append((cpu1 - cpu0, faults1 - faults0))
    print("plan() with two simulation workers, CPU s (each)             minor faults")
    for name, runs in planned.items():
        each = ", ".join(f"{cpu:.2f}" for cpu, _ in runs)
        print(f"  {name:<28} {statistics.median(c for c, _ in runs):5.2f} ({each})   "
              f"{runs[0][1]:>9,}")  # fmt: skip


if __name__ == "__main__":
    main()
