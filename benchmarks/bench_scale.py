"""Benchmark: the documented scale limits plan (run by hand, not a test).

    python benchmarks/bench_scale.py [--entries 10000] [--samples 1000000]

Writes two catalogs beside the seed example: one with ``--entries`` hardware entries, one whose
first workload's prompt lengths are ``--samples`` samples. For each it prints the seconds to load
(validate) it and to evaluate every candidate, and the same as a multiple of the seed catalog's,
measured in the same run, with the process's peak memory. ``planner run`` on the same folders
adds the simulation and the run folder (a 10,000-entry catalog: about 3 minutes and 2.7 GB on a
2-core machine).
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import tempfile
import time
from pathlib import Path

from planner.catalog import load_catalog
from planner.plan.sweep import evaluate

SEED = Path(__file__).resolve().parent.parent / "catalogs" / "examples" / "seed"


def many_entries(folder: Path, entries: int) -> None:
    lines = ["hardware:"]
    for i in range(entries):
        lines.append(
            f"  - {{id: dev-{i}, memory: {16 + i % 64} GiB, memory_bandwidth: {700 + i} GB/s, "
            f"compute: {{bf16: 100 TFLOPS}}, power: 300 W, "
            f"price: {{purchase_usd: {10000 + i}.0, cloud_usd_per_hour: {1 + i / 10000}}}}}"
        )
    (folder / "hardware.yaml").write_text("\n".join(lines) + "\n")


def many_samples(folder: Path, samples: int) -> None:
    rng = random.Random(0)
    values = ", ".join(str(rng.randint(100, 3000)) for _ in range(samples))
    path = folder / "workloads.yaml"
    text = path.read_text()
    path.write_text(
        text.replace("prompt_tokens: 3072", f"prompt_tokens: {{samples: [{values}]}}", 1)
    )


def timed(folder: Path) -> tuple[float, float, int]:
    start = time.perf_counter()
    catalog = load_catalog(folder)
    loaded = time.perf_counter()
    table = evaluate(catalog).table
    return loaded - start, time.perf_counter() - loaded, len(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base_load, base_eval, base_n = timed(SEED)
        print(f"seed: {base_n} candidates, load {base_load:.3f} s, evaluate {base_eval:.3f} s")
        for name, build, size in (
            ("entries", many_entries, args.entries),
            ("samples", many_samples, args.samples),
        ):
            folder = Path(tmp) / name
            shutil.copytree(SEED, folder)
            build(folder, size)
            load_s, eval_s, n = timed(folder)
            print(
                f"{size:,} {name}: {n:,} candidates, load {load_s:.2f} s "
                f"({load_s / base_load:,.0f}× the seed), evaluate {eval_s:.2f} s "
                f"({eval_s / base_eval:,.0f}× the seed)"
            )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory {peak:,.0f} MiB")


if __name__ == "__main__":
    main()
