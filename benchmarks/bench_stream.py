"""Benchmark: a streamed sweep of a million and ten million candidates (run by hand, not a test).

    python benchmarks/bench_stream.py [--sizes 1000000,10000000] [--workers 1,2]

For each size, a synthetic catalog (``bench_sweep.synthetic_catalog``: 100 devices × 100 models
× 4 precisions × W workloads) is streamed to results.parquet in a child process, once per
worker count: candidates per second, the child's peak memory, the file's size, and the speed-up
of the workers over one. The yardstick, measured in the same run on the same machine: a whole
(held) evaluation of a 20,000-candidate catalog, in candidates per second and peak memory; a
streamed sweep should keep its rate and its memory whatever its size. On this 2-core machine
only 1 and 2 workers can be measured; more workers on a bigger machine are not measured here.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import shutil
import tempfile
import time
from pathlib import Path

from bench_sweep import synthetic_catalog

from planner.catalog import load_catalog
from planner.executor import ProcessPool
from planner.plan.stream import stream
from planner.plan.sweep import candidates, evaluate

MODELS, HARDWARE, PRECISIONS = 100, 100, 4


def _held(folder: str, queue: multiprocessing.Queue) -> None:
    catalog = load_catalog(Path(folder))
    start = time.perf_counter()
    rows = len(evaluate(catalog).table)
    seconds = time.perf_counter() - start
    n = len(candidates(catalog))
    queue.put((n, rows, seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


def _streamed(folder: str, workers: int, queue: multiprocessing.Queue) -> None:
    catalog = load_catalog(Path(folder))
    target = Path(folder) / "results.parquet"
    start = time.perf_counter()
    found = stream(catalog, target, ProcessPool(workers))
    seconds = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    written = sum(part.stat().st_size for part in target.iterdir())
    queue.put((found.candidates, found.rows, seconds, max(rss, children), written))


def _child(target, *args):  # noqa: ANN001, ANN202
    queue: multiprocessing.Queue = multiprocessing.Queue()
    process = multiprocessing.get_context("fork").Process(target=target, args=(*args, queue))
    process.start()
    result = queue.get()
    process.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000000,10000000")
    parser.add_argument("--workers", default="1,2")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "yardstick"
        base.mkdir()
        synthetic_catalog(base, 20, 25, 4, 10)
        n, rows, seconds, rss = _child(_held, str(base))
        yard_rate, yard_rss = n / seconds, rss
        print(f"yardstick: whole evaluation of {n:,} candidates ({rows:,} rows) in {seconds:.2f} s")
        print(f"  {yard_rate:,.0f} candidates/s, peak memory {rss:,.0f} MiB")
        for size in (int(s) for s in args.sizes.split(",")):
            folder = Path(tmp) / f"size-{size}"
            folder.mkdir()
            workloads = max(1, round(size / (MODELS * HARDWARE * PRECISIONS)))
            synthetic_catalog(folder, HARDWARE, MODELS, PRECISIONS, workloads)
            one = None
            for workers in (int(w) for w in args.workers.split(",")):
                n, rows, seconds, rss, size_b = _child(_streamed, str(folder), workers)
                rate = n / seconds
                one = one or seconds
                print(
                    f"{n:>12,} candidates, {workers} worker(s): {seconds:7.1f} s, {rate:9,.0f}/s "
                    f"({rate / yard_rate:4.2f} × the yardstick's rate), peak {rss:6,.0f} MiB "
                    f"({rss / yard_rss:.1f} × the yardstick's), "
                    f"{rows:,} rows, parquet {size_b / 2**20:,.0f} MiB, "
                    f"speed-up {one / seconds:.2f} ×"
                )
                shutil.rmtree(folder / "results.parquet")


if __name__ == "__main__":
    main()
