"""Time planner.serving.simulate.simulate() for 10,000 requests with a realistic config.

Run: ``python benchmarks/bench_simulate.py [n_requests]``.  Not a test.

The config: a 7B model at 16 bit (14e9 B of weights, 131,072 B of KV per
token, 14e9 FLOPs per token) on an accelerator with 700e9 B/s and 400e12
FLOP/s achieved, lognormal prompts (mean 1000, p95 3000, max 8000) and
outputs (mean 250, p95 800, max 2048), Poisson arrivals at 5 requests/s.
Each admission/preemption policy is timed with a comfortable KV budget
(200,000 tokens) and a tight one (60,000 tokens: queueing, preemptions).
The last line gives the simulation's CPU against a baseline measured in the same run: the same
runs with every step time computed by the step model's plain calls (``reference=True``); the
ratio, not the seconds, is the figure to quote on a shared machine.
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


def config(n_requests: int, budget: int, admission: str, preemption: str) -> SimConfig:
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
    )


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    runs = [
        (budget, admission, preemption)
        for budget in (200_000, 60_000)
        for admission, preemption in (
            ("reserve-max", "recompute"),
            ("current-length", "recompute"),
            ("current-length", "swap"),
        )
    ]
    fast_cpu = reference_cpu = 0.0
    for budget, admission, preemption in runs:
        cfg = config(n, budget, admission, preemption)
        c0 = time.process_time()
        simulate(cfg, reference=True)  # the baseline: every step time by the plain calls
        reference_cpu += time.process_time() - c0
        t0, c0 = time.perf_counter(), time.process_time()
        r = simulate(cfg)
        dt = time.perf_counter() - t0
        fast_cpu += time.process_time() - c0
        print(
            f"KV {budget:7,d} {admission:14s} {preemption:9s} {n} requests in {dt:6.3f} s "
            f"({n / dt:,.0f} requests/s)  e2e p95 {r.e2e_p95_s:.2f} s, "
            f"ttft p95 {r.ttft_p95_s:.3f} s, itl p95 {r.itl_p95_s * 1e3:.1f} ms, "
            f"{r.throughput_tokens_per_s:,.0f} tok/s, batch {r.mean_concurrency:.1f}, "
            f"preemptions {r.preemptions}, queued {r.queued_fraction:.1%}"
        )
    print(
        f"CPU: step table {fast_cpu:.2f} s, plain step model {reference_cpu:.2f} s "
        f"(measured in this run): {reference_cpu / fast_cpu:.2f}x"
    )


if __name__ == "__main__":
    main()
