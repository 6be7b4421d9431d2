"""Time planner.serving.simulate.simulate() for 10,000 requests with a realistic config.

Run: ``python benchmarks/bench_simulate.py [n_requests]``.  Not a test.

The config: a 7B model at 16 bit (14e9 B of weights, 131,072 B of KV per
token, 14e9 FLOPs per token) on an accelerator with 700e9 B/s and 400e12
FLOP/s achieved, lognormal prompts (mean 1000, p95 3000, max 8000) and
outputs (mean 250, p95 800, max 2048), Poisson arrivals at 5 requests/s.
Each admission/preemption policy is timed with a comfortable KV budget
(200,000 tokens) and a tight one (60,000 tokens: queueing, preemptions), with whole prompts
prefilled in steps of their own and with chunked prefill (8,192 tokens a step, vLLM's default
and the shipped engines'; ``reserve-max`` with chunks runs on the loop of its own,
planner.serving.reserved).
The last lines give the simulation's CPU against a baseline measured in the same run: the same
runs with every step time computed by the step model's plain calls on the general loop
(``reference=True``), in all and for the runs on the reserve-max chunked loop; the ratio, not
the seconds, is the figure to quote on a shared machine. benchmarks/bench_step_table.py does
the same over the simulations sizing runs for a catalog.
"""

from __future__ import annotations

import sys
import time

from planner.serving.simulate import Arrivals, Lengths, SimConfig, StepModel, simulate

STEP = StepModel(
    weight_bytes=14e9,
    kv_bytes_per_token=131_072,
    bandwidth_bytes_per_s=700e9,
    flops_per_token=14e9,
    compute_flops_per_s=400e12,
    attention_flops_per_token_sq=4 * 32 * 4096,
    step_overhead_s=0.002,
)


def config(
    n_requests: int, budget: int, admission: str, preemption: str, chunk: int | None
) -> SimConfig:
    """The benchmark workload for one policy."""
    return SimConfig(
        step=STEP,
        kv_budget_tokens=budget,
        prompt=Lengths.from_summary(1000, 3000, 8000),
        output=Lengths.from_summary(250, 800, 2048),
        max_output_tokens=2048,
        arrivals=Arrivals.poisson(5.0),
        admission=admission,  # type: ignore[arg-type]
        preemption=preemption,  # type: ignore[arg-type]
        n_requests=n_requests,
        seed=0,
        chunk_tokens=chunk,
    )


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    runs = [
        (budget, admission, preemption, chunk)
        for chunk in (None, 8192)
        for budget in (200_000, 60_000)
        for admission, preemption in (
            ("reserve-max", "recompute"),
            ("current-length", "recompute"),
            ("current-length", "swap"),
        )
    ]
    cpu = {"all": [0.0, 0.0], "reserve-max, chunked": [0.0, 0.0]}  # fast, reference [s]
    for budget, admission, preemption, chunk in runs:
        cfg = config(n, budget, admission, preemption, chunk)
        c0 = time.process_time()
        simulate(cfg, reference=True)  # the baseline: every step time by the plain calls
        reference_cpu = time.process_time() - c0
        t0, c0 = time.perf_counter(), time.process_time()
        r = simulate(cfg)
        dt = time.perf_counter() - t0
        fast_cpu = time.process_time() - c0
        kinds = ["all"] + (["reserve-max, chunked"] if chunk and admission == "reserve-max" else [])
        for kind in kinds:
            cpu[kind][0] += fast_cpu
            cpu[kind][1] += reference_cpu
        print(
            f"KV {budget:7,d} {admission:14s} {preemption:9s} chunks {chunk or '-':>5} "
            f"{n} requests in {dt:6.3f} s ({n / dt:,.0f} requests/s, "
            f"{reference_cpu / fast_cpu:.1f}x the reference)  e2e p95 {r.e2e_p95_s:.2f} s, "
            f"ttft p95 {r.ttft_p95_s:.3f} s, itl p95 {r.itl_p95_s * 1e3:.1f} ms, "
            f"batch {r.mean_concurrency:.1f}, preemptions {r.preemptions}, "
            f"queued {r.queued_fraction:.1%}"
        )
    for kind, (fast_cpu, reference_cpu) in cpu.items():
        print(
            f"CPU, {kind}: {fast_cpu:.2f} s, reference (plain step model, general loop) "
            f"{reference_cpu:.2f} s (measured in this run): {reference_cpu / fast_cpu:.2f}x"
        )


if __name__ == "__main__":
    main()
