"""Time planner.serving.simulate.simulate() for 10,000 requests with a realistic config.

Run: ``python benchmarks/bench_simulate.py [n_requests]``.  Not a test.

The config: a 7B model at 16 bit (14e9 B of weights, 131,072 B of KV per
token, 14e9 FLOPs per token) on an accelerator with 700e9 B/s and 400e12
FLOP/s achieved, lognormal prompts (mean 1000, p95 3000, max 8000) and
outputs (mean 250, p95 800, max 2048), Poisson arrivals at 5 requests/s.
Each admission/preemption policy is timed with a comfortable KV budget
(200,000 tokens) and a tight one (60,000 tokens: queueing, preemptions).
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
    for budget, admission, preemption in runs:
        cfg = config(n, budget, admission, preemption)
        t0 = time.perf_counter()
        r = simulate(cfg)
        dt = time.perf_counter() - t0
        print(
            f"KV {budget:7,d} {admission:14s} {preemption:9s} {n} requests in {dt:6.3f} s "
            f"({n / dt:,.0f} requests/s)  e2e p95 {r.e2e_p95_s:.2f} s, "
            f"ttft p95 {r.ttft_p95_s:.3f} s, itl p95 {r.itl_p95_s * 1e3:.1f} ms, "
            f"{r.throughput_tokens_per_s:,.0f} tok/s, batch {r.mean_concurrency:.1f}, "
            f"preemptions {r.preemptions}, queued {r.queued_fraction:.1%}"
        )


if __name__ == "__main__":
    main()
