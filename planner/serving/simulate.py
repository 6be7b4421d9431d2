"""Discrete-event serving simulation of ONE inference replica.

Closed-form bounds cannot show queueing, rejection or preemption, so this
module simulates one replica that serves an LLM with continuous batching
under a KV-cache budget.  Everything is in seconds, tokens and bytes.

Model (the decisions a reader must know)
----------------------------------------
*Time advances in scheduler iterations.*  One iteration is:

1. **Scheduling point.**  Arrivals and queue time-outs up to ``now`` are
   processed in time order, then waiting requests are admitted FIFO
   (strict head-of-line: when the head does not fit, nobody behind it is
   admitted).  Preempted requests wait in a resume queue that is served
   before fresh requests.
2. **Prefill step** (only if something was admitted).  All requests
   admitted at this point are prefilled together in *one* step
   (:meth:`StepModel.prefill_batch_s`: compute terms add up, the weights
   are read once).  The prefill emits each request's first token, so
   ``TTFT = preprocess + queue wait + prefill step``; there is no extra
   decode step in TTFT.  Running requests stall during this step (the stall
   shows up in their inter-token gap).  No chunked prefill.
3. **Decode steps.**  Every running request (including the ones just
   prefilled) gains one token per step.  A request with ``O`` output tokens
   therefore needs ``O - 1`` decode steps after its prefill.  The step in
   which a request has generated ``g`` tokens so far writes its ``g``-th
   token to the cache, so its context in that step is ``P + g`` tokens and
   the batch's ``context_tokens_total`` is the sum of ``P + g``.  Several
   decode steps are taken at once (closed-form sums, no per-token Python
   work) until the next thing that could change the schedule: a request
   finishing, the KV budget filling up (``current-length``), an arrival
   that could be admitted, a queue time-out, or a queue head that fits.

*KV accounting.*  A running request that has generated ``g`` tokens holds
``P + g - 1`` cached tokens and needs ``P + g`` for its next decode step.

* ``reserve-max``: admission reserves ``P + max_output_tokens`` and the
  reservation is held until completion; it never preempts.
* ``current-length``: a request is admitted if the cache after its first
  decode step (``P + 1``, or ``P + g + 1`` when resuming by recompute)
  fits next to what the running batch needs for its next step.  Before
  every decode step, while the batch's need exceeds the budget, the most
  recently admitted running request is preempted.  ``recompute``: it goes
  to the front of the queue and later re-prefills ``P + g`` tokens (which
  emits its next token).  ``swap``: its ``P + g - 1`` cached tokens are
  copied to host memory at ``swap_bandwidth_bytes_per_s`` (stalling that
  decode step) and copied back when it is re-admitted (added to the
  prefill step of that scheduling point); no token is emitted by a swap-in.
* A request with ``P + max_output_tokens > kv_budget_tokens`` can never be
  guaranteed to fit and is rejected on arrival under both policies (the
  replica's maximum model length equals its KV budget, as in vLLM).
  Output lengths are clipped to ``[1, max_output_tokens]``, prompts to >= 1.

*Requests, tasks and users.*  A task issues ``requests_per_task`` requests
sequentially; request ``j + 1`` is sent ``tool_time_s`` after the client
received request ``j``.  ``preprocess_s`` delays the request's entry into
the scheduler queue (it does not occupy the accelerator) and is part of
TTFT and end-to-end latency.  ``network_s`` is charged once per request
to the end-to-end latency only (response delivery), not to TTFT.  So
``e2e = server completion + network_s - send time`` and task latency =
last response received - first request sent.  Open-loop arrivals
(``poisson``/``bursty``/``trace``) give task start times.  ``closed``:
each of ``concurrency`` users starts its first task at t = 0 and the next
task as soon as its previous one completes (no think time); a user whose
request was rejected abandons the task and starts a new one after
``reject_backoff_s``.  A rejected request fails its task (remaining
requests of the task are not sent).  ``n_requests`` is rounded up to a
whole number of tasks; for a trace the number of tasks is the trace length.

*Queue limits.*  ``queue_capacity`` counts fresh requests waiting without
room (see ``queued`` below; one that only waits for the step in progress
to end does not take a place); an arrival that finds no room and
``queue_capacity`` requests already waiting is rejected (0: a loss
system).  A fresh request that waits
``queue_timeout_s`` is rejected at that instant.  Preempted requests are
exempt from both.

*Statistics.*  The first ``warmup_fraction`` of tasks (by task index, i.e.
start order) are excluded from every request/task statistic.  Time-based
statistics (throughput, utilisation, concurrency, mean KV) cover the window
from the step boundary at which the first measured request was taken into
the queue to the last completion (the drain at the end is included).
Percentiles use the inverted-CDF definition (the smallest observed value
with at least q of the samples at or below it).

* ``ttft``: first token time - send time (includes preprocess).
* ``itl``: every gap between consecutive tokens of a measured request,
  pooled over all requests and tokens (a request with O tokens contributes
  O - 1 gaps; stalls from prefill steps and preemptions are in the gaps).
  This is token-weighted; ``tpot`` is the per-request mean gap
  ``(last token - first token) / (O - 1)``, request-weighted.
* ``e2e``: completion + network - send time.  ``task``: see above.
* ``wait``: queue entry -> first admission.  Every request waits for the
  step in progress to end; ``queued`` counts the requests that found no
  room on arrival: someone without room waiting ahead, the batch full, or
  their KV need not fitting (judged with the batch as it is at the end of
  the steps during which they arrived) -- plus the ones that timed out.  For a single slot
  this is the M/G/1 "arrival finds the server busy" (= utilisation).
* ``throughput_tokens_per_s``: all tokens emitted in the window / window;
  ``utilisation``: fraction of the window the accelerator runs a step;
  ``mean_concurrency``: time-average of sequences in the running batch.
* ``peak_kv_tokens_used``: max cached tokens (after a decode step);
  ``peak_kv_tokens_reserved``: max allocated tokens (reservations under
  ``reserve-max``, next-step need under ``current-length``).  Both are
  <= ``kv_budget_tokens`` by construction.

Randomness: ``numpy.random.Generator(PCG64(...))`` seeded from
``SeedSequence(seed).spawn(3)`` for arrivals, prompts and outputs, so the
same seed gives identical results and changing one length distribution
does not change the arrival times.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Literal

import numpy as np

from planner.model import latency

__all__ = [
    "Arrivals",
    "Lengths",
    "SimConfig",
    "SimResult",
    "StepModel",
    "simulate",
]

_Z95 = 1.6448536269514722
"""Standard normal quantile at 0.95 [-]."""

_PERCENTILES = (50, 90, 95, 99)

_WAITING, _RUNNING, _DONE, _REJECTED, _PREEMPTED = 1, 2, 3, 4, 5


# --------------------------------------------------------------------------
# Step-time model
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class StepModel:
    """Closed-form (roofline) step times of one replica [s].

    Plain numbers only, so the model is picklable and hashable.  Each step
    is bound by the slower of memory traffic and arithmetic, plus a fixed
    launch overhead.
    """

    weight_bytes: float
    """Bytes read once per step, shared by the whole batch [B]."""
    kv_bytes_per_token: float
    """KV-cache bytes per cached token [B/token]."""
    bandwidth_bytes_per_s: float
    """Achieved memory bandwidth (already x efficiency) [B/s]."""
    flops_per_token: float
    """Dense FLOPs per processed token, ~ 2 x active parameters [FLOP]."""
    compute_flops_per_s: float
    """Achieved compute throughput [FLOP/s]."""
    attention_flops_per_token_sq: float = 0.0
    """Prefill attention coefficient: attention FLOPs = coeff x P^2 [FLOP]."""
    step_overhead_s: float = 0.0
    """Fixed overhead per decode step and per prefill launch [s]."""
    allreduce_s_per_token: float = 0.0
    """Tensor-parallel communication per processed token [s] (0 without tensor parallelism)."""
    prefill_weight_bytes: float | None = None
    """Bytes a prefill reads once [B]: every weight (a prompt's many tokens touch every expert
    of a mixture); None: ``weight_bytes``."""

    def __post_init__(self) -> None:
        if self.bandwidth_bytes_per_s <= 0 or self.compute_flops_per_s <= 0:
            raise ValueError("bandwidth and compute must be positive")
        for name in (
            "weight_bytes",
            "kv_bytes_per_token",
            "flops_per_token",
            "attention_flops_per_token_sq",
            "step_overhead_s",
            "allreduce_s_per_token",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")

    # Every time below is a metric of :mod:`planner.model.latency` called with numbers, so the
    # simulation and the closed form share one physics: the bandwidth passed in is already
    # achieved (efficiency 1), the FLOP per token is 2 × active parameters, and the attention
    # coefficient 2 × layers × heads × head dim (``prefill_flops`` with active = FLOP ÷ 2,
    # layers = coefficient ÷ 2, one head of dimension 1: the same products, exactly).

    def prefill_flops(self, prompt_tokens: float) -> float:
        """Arithmetic of prefilling P tokens [FLOP] (:func:`latency.prefill_flops`)."""
        p = float(prompt_tokens)
        return float(
            latency.prefill_flops(
                self.flops_per_token / 2, p, self.attention_flops_per_token_sq / 2, 1, 1
            )
        )

    def prefill_compute_s(self, prompt_tokens: float) -> float:
        """Arithmetic time of prefilling P tokens [s]: FLOP ÷ achieved compute."""
        return self.prefill_flops(prompt_tokens) / self.compute_flops_per_s

    def prefill_memory_s(self) -> float:
        """Memory time of a prefill launch: the weights are read once [s]
        (:func:`latency.weight_read_s`)."""
        weights = (
            self.weight_bytes if self.prefill_weight_bytes is None else self.prefill_weight_bytes
        )
        return float(latency.weight_read_s(weights, self.bandwidth_bytes_per_s, 1.0))

    def prefill_s(self, prompt_tokens: float) -> float:
        """Prefill time of one prompt of P tokens [s] (:func:`latency.prefill_s`):
        ``max(compute, one weight read) + P × all-reduce + step_overhead_s``."""
        return self.prefill_batch_s([prompt_tokens])

    def prefill_batch_s(self, prompt_tokens: Sequence[float]) -> float:
        """Time of one prefill step over several prompts [s]: :func:`latency.prefill_s` of their
        total arithmetic and tokens (the weights are read once, one overhead); 0 for none."""
        if len(prompt_tokens) == 0:
            return 0.0
        flops = sum(self.prefill_flops(p) for p in prompt_tokens)
        return float(
            latency.prefill_s(
                flops,
                self.compute_flops_per_s,
                self.prefill_memory_s(),
                float(sum(prompt_tokens)),
                self.allreduce_s_per_token,
                self.step_overhead_s,
            )
        )

    def decode_memory_s(self, context_tokens_total: float) -> float:
        """Memory time of one decode step [s] (:func:`latency.decode_memory_s`): the weights
        once for the batch plus every sequence's cache, ``context_tokens_total`` tokens."""
        cache = self.kv_bytes_per_token * float(context_tokens_total)
        return float(
            latency.decode_memory_s(self.weight_bytes, 1, cache, self.bandwidth_bytes_per_s, 1.0)
        )

    def decode_compute_s(self, batch: int) -> float:
        """Arithmetic time of one decode step, one token per sequence [s]
        (:func:`latency.decode_compute_s`)."""
        return float(
            latency.decode_compute_s(self.flops_per_token, batch, self.compute_flops_per_s)
        )

    def decode_step_s(self, batch: int, context_tokens_total: float) -> float:
        """Time of one decode step of ``batch`` sequences [s] (:func:`latency.itl_s`):
        ``max(memory, compute) + batch × all-reduce + step_overhead_s``, with
        ``context_tokens_total`` the cached tokens the batch reads (prompt + tokens so far)."""
        return float(
            latency.itl_s(
                self.decode_memory_s(context_tokens_total),
                self.decode_compute_s(batch),
                self.allreduce_s_per_token,
                batch,
                self.step_overhead_s,
            )
        )

    def decode_overhead_s(self, batch: int) -> float:
        """The part of a decode step that neither reads nor computes: ``itl_s`` with no memory
        or compute time, i.e. batch × all-reduce + step overhead [s]."""
        return float(
            latency.itl_s(0.0, 0.0, self.allreduce_s_per_token, batch, self.step_overhead_s)
        )


class _DecodeRun:
    """Step times of consecutive decode steps with a fixed batch.

    Step k (k = 0, 1, ...) has context ``ctx0 + batch * k``, so by
    :meth:`StepModel.decode_step_s` its time is ``max(alpha + beta * k, c) + o``
    with alpha = memory time at ctx0 [s], beta = extra KV read per step
    [s/step], c = compute time [s] and o = overhead [s].  A plain slotted
    class because one is built per scheduler iteration.
    """

    __slots__ = ("alpha", "beta", "c", "o")

    def __init__(self, step: StepModel, batch: int, ctx0: float) -> None:
        # the step's own terms, each a metric of the closed form (linear in the context)
        self.alpha = step.decode_memory_s(ctx0)
        self.beta = step.kv_bytes_per_token * batch / step.bandwidth_bytes_per_s
        self.c = step.decode_compute_s(batch)
        self.o = step.decode_overhead_s(batch)

    def step_s(self, k: int) -> float:
        """Duration of step k [s]."""
        return max(self.alpha + self.beta * k, self.c) + self.o

    def _knee(self, k0: int, k1: int) -> int:
        """First k in [k0, k1] at which the memory term reaches the compute term."""
        if self.alpha >= self.c:
            return k0
        if self.beta <= 0.0:
            return k1
        return min(k1, max(k0, math.ceil((self.c - self.alpha) / self.beta)))

    def total_s(self, k0: int, k1: int) -> float:
        """Sum of the durations of steps k0 .. k1-1 [s] (closed form)."""
        if k1 <= k0:
            return 0.0
        ks = self._knee(k0, k1)
        m = k1 - ks
        linear = m * self.alpha + self.beta * (k1 * (k1 - 1) - ks * (ks - 1)) / 2.0
        return (ks - k0) * self.c + linear + (k1 - k0) * self.o

    def pieces(self, k0: int, k1: int) -> list[tuple[float, float, int]]:
        """Steps k0 .. k1-1 as linear pieces ``(first value [s], slope [s/step], count)``."""
        if k1 <= k0:
            return []
        ks = self._knee(k0, k1)
        out: list[tuple[float, float, int]] = []
        if ks > k0:
            out.append((self.c + self.o, 0.0, ks - k0))
        if k1 > ks:
            out.append((self.alpha + self.beta * ks + self.o, self.beta, k1 - ks))
        return out

    def steps_to_reach(self, target_s: float, n_max: int) -> int:
        """Smallest n in [1, n_max] whose first n steps last >= target_s; n_max if none."""
        if n_max <= 1 or self.total_s(0, 1) >= target_s:
            return 1
        if self.total_s(0, n_max) < target_s:
            return n_max
        lo, hi = 1, n_max
        while lo < hi:
            mid = (lo + hi) // 2
            if self.total_s(0, mid) >= target_s:
                hi = mid
            else:
                lo = mid + 1
        return lo


# --------------------------------------------------------------------------
# Workload description
# --------------------------------------------------------------------------


def _lognormal_sigma(mean: float, p95: float) -> float:
    """Log-space sigma of a lognormal with the given mean and 95th percentile [-].

    From ``ln mean = mu + sigma^2/2`` and ``ln p95 = mu + z sigma``:
    ``sigma^2/2 - z sigma + ln(p95/mean) = 0``; the smaller root is taken.  If
    p95/mean exceeds what a lognormal can reach (``exp(z^2/2)`` ~ 3.87) the
    closest value, ``sigma = z``, is used.
    """
    r = math.log(p95 / mean)
    disc = _Z95 * _Z95 - 2.0 * r
    if disc <= 0.0:
        return _Z95
    return _Z95 - math.sqrt(disc)


@dataclass(frozen=True)
class Lengths:
    """A distribution of token counts (prompt or output lengths).

    Build it with :meth:`fixed`, :meth:`samples` (empirical, drawn uniformly
    with replacement), :meth:`from_summary` (lognormal fitted to mean and p95,
    clipped at max) or :meth:`geometric` (memoryless, mean given).
    """

    kind: Literal["fixed", "samples", "lognormal", "geometric"]
    value: int = 0
    values: tuple[int, ...] = ()
    mu: float = 0.0
    sigma: float = 0.0
    mean_tokens: float = 0.0
    max_tokens: int | None = None

    @classmethod
    def fixed(cls, n: int) -> Lengths:
        """Always n tokens."""
        if n < 1:
            raise ValueError("length must be >= 1")
        return cls(kind="fixed", value=int(n))

    @classmethod
    def samples(cls, values: Sequence[int]) -> Lengths:
        """Empirical distribution: draws uniformly, with replacement, from ``values``."""
        vals = tuple(int(v) for v in values)
        if not vals or min(vals) < 1:
            raise ValueError("need at least one sample, all >= 1")
        return cls(kind="samples", values=vals)

    @classmethod
    def from_summary(cls, mean: float, p95: float, max: int) -> Lengths:
        """Lognormal with the given (unclipped) mean and p95, clipped at ``max``.

        ``sigma`` from :func:`_lognormal_sigma`, ``mu = ln(mean) - sigma^2/2``.
        Draws are rounded to integers and clipped to ``[1, max]``, so the
        realised mean is slightly below ``mean`` when ``max`` cuts the tail.
        """
        if not 0 < mean <= p95 <= max:
            raise ValueError("need 0 < mean <= p95 <= max")
        sigma = _lognormal_sigma(mean, p95)
        mu = math.log(mean) - sigma * sigma / 2.0
        return cls(kind="lognormal", mu=mu, sigma=sigma, max_tokens=int(max))

    @classmethod
    def geometric(cls, mean: float, max: int | None = None) -> Lengths:
        """Geometric on {1, 2, ...} with the given mean (p = 1/mean), optional clip.

        The discrete analogue of an exponential; with a constant step time it
        makes service times (nearly) exponential.
        """
        if mean < 1:
            raise ValueError("mean must be >= 1")
        return cls(kind="geometric", mean_tokens=float(mean), max_tokens=max)

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n token counts (int64, >= 1)."""
        if self.kind == "fixed":
            out = np.full(n, self.value, dtype=np.int64)
        elif self.kind == "samples":
            out = rng.choice(np.asarray(self.values, dtype=np.int64), size=n)
        elif self.kind == "lognormal":
            out = np.rint(rng.lognormal(self.mu, self.sigma, size=n)).astype(np.int64)
        else:
            out = rng.geometric(1.0 / self.mean_tokens, size=n).astype(np.int64)
        hi = self.max_tokens if self.max_tokens is not None else np.iinfo(np.int64).max
        return np.clip(out, 1, hi)


@dataclass(frozen=True)
class Arrivals:
    """How requests arrive: closed loop, Poisson, bursty or a trace.

    ``bursty``: renewal process with gamma inter-arrival times of mean
    ``1/rate_per_s`` and squared coefficient of variation ``burst_factor``
    (shape ``1/burst_factor``); ``burst_factor = 1`` is Poisson, larger is
    burstier.  For ``trace`` the times are task start times [s] (sorted
    here); optional per-request lengths are in task-major order and must
    have ``len(times_s) * requests_per_task`` entries.
    """

    kind: Literal["closed", "poisson", "bursty", "trace"]
    concurrency: int = 0
    rate_per_s: float = 0.0
    burst_factor: float = 1.0
    times_s: tuple[float, ...] = ()
    prompt_tokens: tuple[int, ...] | None = None
    output_tokens: tuple[int, ...] | None = None

    @classmethod
    def closed(cls, concurrency: int) -> Arrivals:
        """``concurrency`` users, each sending the next task when the previous completes."""
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        return cls(kind="closed", concurrency=int(concurrency))

    @classmethod
    def poisson(cls, rate_per_s: float) -> Arrivals:
        """Poisson task arrivals at ``rate_per_s`` [1/s]."""
        if rate_per_s <= 0:
            raise ValueError("rate must be positive")
        return cls(kind="poisson", rate_per_s=float(rate_per_s))

    @classmethod
    def bursty(cls, rate_per_s: float, burst_factor: float) -> Arrivals:
        """Gamma-renewal arrivals at ``rate_per_s`` [1/s] with CV^2 = ``burst_factor``."""
        if rate_per_s <= 0 or burst_factor <= 0:
            raise ValueError("rate and burst_factor must be positive")
        return cls(kind="bursty", rate_per_s=float(rate_per_s), burst_factor=float(burst_factor))

    @classmethod
    def trace(
        cls,
        times_s: Sequence[float],
        prompt_tokens: Sequence[int] | None = None,
        output_tokens: Sequence[int] | None = None,
    ) -> Arrivals:
        """Replay task start times [s], optionally with per-request lengths."""
        if len(times_s) == 0:
            raise ValueError("empty trace")
        return cls(
            kind="trace",
            times_s=tuple(float(t) for t in times_s),
            prompt_tokens=None if prompt_tokens is None else tuple(int(p) for p in prompt_tokens),
            output_tokens=None if output_tokens is None else tuple(int(o) for o in output_tokens),
        )

    def start_times_s(self, rng: np.random.Generator, n_tasks: int) -> np.ndarray:
        """Task start times of an open-loop process [s], sorted (not for ``closed``)."""
        if self.kind == "poisson":
            return np.cumsum(rng.exponential(1.0 / self.rate_per_s, size=n_tasks))
        if self.kind == "bursty":
            shape = 1.0 / self.burst_factor
            scale = self.burst_factor / self.rate_per_s
            return np.cumsum(rng.gamma(shape, scale, size=n_tasks))
        if self.kind == "trace":
            return np.sort(np.asarray(self.times_s, dtype=float), kind="stable")
        raise ValueError("closed-loop arrivals have no start times")


@dataclass(frozen=True)
class SimConfig:
    """Everything one simulation run needs (see the module docstring for semantics)."""

    step: StepModel
    kv_budget_tokens: int
    prompt: Lengths
    output: Lengths
    max_output_tokens: int
    arrivals: Arrivals
    admission: Literal["reserve-max", "current-length"] = "reserve-max"
    preemption: Literal["recompute", "swap"] = "recompute"
    max_batch: int | None = None
    queue_capacity: int | None = None
    queue_timeout_s: float | None = None
    requests_per_task: int = 1
    tool_time_s: float = 0.0
    preprocess_s: float = 0.0
    network_s: float = 0.0
    n_requests: int = 10_000
    seed: int = 0
    warmup_fraction: float = 0.1
    swap_bandwidth_bytes_per_s: float = 25e9
    """Host<->device copy bandwidth for swap preemption [B/s] (~PCIe 4.0 x16)."""
    reject_backoff_s: float = 1.0
    """Closed loop: pause of a user after a rejection before its next task [s]."""

    def __post_init__(self) -> None:
        if self.kv_budget_tokens < 1 or self.max_output_tokens < 1:
            raise ValueError("kv_budget_tokens and max_output_tokens must be >= 1")
        if self.admission not in ("reserve-max", "current-length"):
            raise ValueError(f"unknown admission {self.admission!r}")
        if self.preemption not in ("recompute", "swap"):
            raise ValueError(f"unknown preemption {self.preemption!r}")
        if self.max_batch is not None and self.max_batch < 1:
            raise ValueError("max_batch must be >= 1")
        if self.queue_capacity is not None and self.queue_capacity < 0:
            raise ValueError("queue_capacity must be >= 0")
        if self.requests_per_task < 1 or self.n_requests < 1:
            raise ValueError("requests_per_task and n_requests must be >= 1")
        if not 0.0 <= self.warmup_fraction < 1.0:
            raise ValueError("warmup_fraction must be in [0, 1)")
        if self.arrivals.kind == "closed" and self.reject_backoff_s <= 0:
            raise ValueError("reject_backoff_s must be positive")
        if min(self.tool_time_s, self.preprocess_s, self.network_s) < 0:
            raise ValueError("times must be >= 0")
        if self.swap_bandwidth_bytes_per_s <= 0:
            raise ValueError("swap bandwidth must be positive")


@dataclass(frozen=True)
class SimResult:
    """Outcome of one run.  Latencies in seconds; statistics after warm-up."""

    n_requests: int
    n_measured: int
    n_completed: int
    ttft_p50_s: float
    ttft_p90_s: float
    ttft_p95_s: float
    ttft_p99_s: float
    ttft_mean_s: float
    itl_p50_s: float
    itl_p90_s: float
    itl_p95_s: float
    itl_p99_s: float
    itl_mean_s: float
    tpot_p50_s: float
    tpot_p90_s: float
    tpot_p95_s: float
    tpot_p99_s: float
    e2e_p50_s: float
    e2e_p90_s: float
    e2e_p95_s: float
    e2e_p99_s: float
    e2e_mean_s: float
    task_p50_s: float
    task_p90_s: float
    task_p95_s: float
    task_p99_s: float
    task_mean_s: float
    wait_mean_s: float
    wait_p95_s: float
    throughput_tokens_per_s: float
    throughput_requests_per_s: float
    queued_count: int
    queued_fraction: float
    rejected_count: int
    rejected_fraction: float
    preempted_count: int
    preempted_fraction: float
    preemptions: int
    recomputed_tokens: int
    swap_bytes: float
    swap_time_s: float
    tasks_completed: int
    tasks_failed: int
    utilisation: float
    mean_concurrency: float
    mean_kv_tokens: float
    peak_kv_tokens_used: int
    peak_kv_tokens_reserved: int
    kv_budget_tokens: int
    duration_s: float
    samples: dict[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)
    """Raw per-request arrays of the measured requests (ttft_s, e2e_s, wait_s, tpot_s, task_s)."""

    def to_dict(self) -> dict[str, float | int]:
        """Flat scalar metrics, e.g. ``ttft_p95_s``, ``rejected_fraction``."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "samples"}


# --------------------------------------------------------------------------
# Statistics helpers
# --------------------------------------------------------------------------


def _percentiles(x: np.ndarray) -> list[float]:
    """p50/p90/p95/p99 of x (inverted CDF) [same unit as x]; NaN if empty."""
    if x.size == 0:
        return [math.nan] * len(_PERCENTILES)
    return [float(v) for v in np.percentile(x, _PERCENTILES, method="inverted_cdf")]


def _mean(x: np.ndarray) -> float:
    """Arithmetic mean; NaN if empty."""
    return float(x.mean()) if x.size else math.nan


def _segment_quantiles(
    start: np.ndarray, slope: np.ndarray, count: np.ndarray, weight: np.ndarray, qs: Sequence[float]
) -> list[float]:
    """Weighted inverted-CDF quantiles of values ``start + slope * k`` (k < count).

    Each segment stands for ``count`` values, each repeated ``weight`` times.
    Constant segments are collapsed into point masses; the quantile is found
    by bisection on the value with the count of values <= v in closed form,
    to a relative precision of 1e-12.
    """
    w_tot = weight * count
    total = float(w_tot.sum())
    if total <= 0.0:
        return [math.nan] * len(qs)
    const = slope <= 0.0
    pv = start[const]
    order = np.argsort(pv, kind="stable")
    pv = pv[order]
    pcum = np.cumsum(w_tot[const][order])
    ls, lb, ln, lw = start[~const], slope[~const], count[~const], weight[~const]

    def cdf(v: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(pv, v, side="right")
        acc = np.where(idx > 0, pcum[np.maximum(idx - 1, 0)] if pcum.size else 0.0, 0.0)
        if ls.size:
            k = np.floor((v[:, None] - ls[None, :]) / lb[None, :]) + 1.0
            acc = acc + (np.clip(k, 0.0, ln[None, :]) * lw[None, :]).sum(axis=1)
        return acc

    lo_v = float(start.min())
    hi_v = float((start + slope * (count - 1)).max())
    target = np.asarray(qs, dtype=float) * total
    lo = np.full(len(qs), lo_v)
    hi = np.full(len(qs), hi_v)
    # values below lo_v do not exist: F(lo_v) >= target means the answer is lo_v
    done = cdf(lo) >= target
    hi[done] = lo_v
    for _ in range(200):
        if np.all(hi - lo <= 1e-12 * np.maximum(np.abs(hi), 1e-300)):
            break
        mid = (lo + hi) / 2.0
        ok = cdf(mid) >= target
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
    return [float(v) for v in hi]


def _segment_mean(
    start: np.ndarray, slope: np.ndarray, count: np.ndarray, weight: np.ndarray
) -> float:
    """Weighted mean of the values ``start + slope * k`` (k < count) [same unit]; NaN if none.

    A segment sums to ``count * start + slope * count * (count - 1) / 2``.
    """
    total = float((weight * count).sum())
    if total <= 0.0:
        return math.nan
    sums = count * start + slope * count * (count - 1) / 2.0
    return float((weight * sums).sum()) / total


def _rngs(seed: int) -> list[np.random.Generator]:
    """Independent PCG64 generators for arrivals, prompt and output lengths."""
    return [np.random.Generator(np.random.PCG64(s)) for s in np.random.SeedSequence(seed).spawn(3)]


# --------------------------------------------------------------------------
# The simulator
# --------------------------------------------------------------------------


class _Replica:
    """State of one run; use :func:`simulate`."""

    def __init__(self, cfg: SimConfig, max_jump: int | None = None) -> None:
        self.cfg = cfg
        self.max_jump = max_jump  # tests only: cap on decode steps per iteration
        rng_arrivals, rng_prompt, rng_output = _rngs(cfg.seed)
        arr = cfg.arrivals
        rpt = cfg.requests_per_task
        if arr.kind == "trace":
            n_tasks = len(arr.times_s)
        else:
            n_tasks = -(-cfg.n_requests // rpt)
        n = n_tasks * rpt
        prompt = cfg.prompt.draw(rng_prompt, n)
        output = cfg.output.draw(rng_output, n)
        self.task_times: list[float] = []
        if arr.kind != "closed":
            self.task_times = arr.start_times_s(rng_arrivals, n_tasks).tolist()
        if arr.kind == "trace":
            order = np.argsort(np.asarray(arr.times_s, dtype=float), kind="stable")
            req_order = (order[:, None] * rpt + np.arange(rpt)[None, :]).ravel()
            for given, name in ((arr.prompt_tokens, "prompt"), (arr.output_tokens, "output")):
                if given is None:
                    continue
                if len(given) != n:
                    raise ValueError(
                        f"trace {name}_tokens needs {n} entries (tasks x requests_per_task)"
                    )
                vals = np.asarray(given, dtype=np.int64)[req_order]
                if name == "prompt":
                    prompt = vals
                else:
                    output = vals
        self.prompt: list[int] = np.maximum(prompt, 1).tolist()
        self.output: list[int] = np.clip(output, 1, cfg.max_output_tokens).tolist()
        self.n_tasks = n_tasks
        self.n = n
        self.rpt = rpt
        self.warm_rid = int(math.floor(cfg.warmup_fraction * n_tasks)) * rpt
        nan = math.nan
        self.send_t = [nan] * n
        self.enq_t = [nan] * n
        self.admit_t = [nan] * n
        self.first_t = [nan] * n
        self.done_t = [nan] * n
        self.last_t = [0.0] * n
        self.gen = [0] * n
        self.g_join = [0] * n
        self.G_join = [0] * n
        self.fin_G = [-1] * n
        self.status = [0] * n
        self.queued = [False] * n
        self.preempted = [0] * n
        self.task_send = [nan] * n_tasks
        self.task_done = [nan] * n_tasks
        self.next_task = 0
        self.seq = 0
        self.heap: list[tuple[float, int, int]] = []
        self.fresh: deque[int] = deque()
        self.resume: deque[int] = deque()
        self.issued = 0
        # for the "queued" flag: replica state while arrivals happen, what arrivals
        # not yet admitted but with room will take, and whether a blocked request waits
        self.room = (0, 0, 0)  # (running sequences, KV need [tokens], reserved [tokens])
        self.ahead = [0, 0, 0]
        self.blocked = False
        self.need_at: Callable[[float], int] | None = None
        self.window_open = False
        self.t_window = math.nan
        self.completions_in_window = 0
        self.last_completion = math.nan

    # -- request life cycle --------------------------------------------------

    def _issue(self, rid: int, t_send: float) -> None:
        """Send request rid at t_send; it reaches the queue after preprocessing."""
        self.send_t[rid] = t_send
        self.issued += 1
        self.seq += 1
        heapq.heappush(self.heap, (t_send + self.cfg.preprocess_s, self.seq, rid))

    def _start_task(self, t: float) -> None:
        """Start the next task (if any remain) at time t [s]."""
        if self.next_task >= self.n_tasks:
            return
        tid = self.next_task
        self.next_task += 1
        self.task_send[tid] = t
        self._issue(tid * self.rpt, t)

    def _reject(self, rid: int, t: float) -> None:
        """Reject rid at time t; its task fails."""
        self.status[rid] = _REJECTED
        if self.cfg.arrivals.kind == "closed":
            self._start_task(t + self.cfg.reject_backoff_s)

    def _complete(self, rid: int, t: float) -> None:
        """Server finished rid at t; schedule its task's next request or next task."""
        self.status[rid] = _DONE
        self.done_t[rid] = t
        self.last_completion = t
        if self.window_open:
            self.completions_in_window += 1
        t_recv = t + self.cfg.network_s
        if (rid + 1) % self.rpt:
            self._issue(rid + 1, t_recv + self.cfg.tool_time_s)
        else:
            self.task_done[rid // self.rpt] = t_recv
            if self.cfg.arrivals.kind == "closed":
                self._start_task(t_recv)

    def _arrive(self, rid: int, t: float, now: float) -> None:
        """rid enters the scheduler at t (processed at the scheduling point ``now``)."""
        cfg = self.cfg
        if not self.window_open and rid >= self.warm_rid:
            self.window_open = True
            self.t_window = now
        if self.prompt[rid] + cfg.max_output_tokens > cfg.kv_budget_tokens:
            self._reject(rid, t)
            return
        room = self._has_room(rid, t)
        if not room and cfg.queue_capacity is not None:
            waiting = len(self.fresh) - self.ahead[0]  # those with room do not count
            if waiting >= cfg.queue_capacity:
                self._reject(rid, t)
                return
        self.enq_t[rid] = t
        self.status[rid] = _WAITING
        self.queued[rid] = not room
        if room:
            a_batch, a_need, a_reserved = self.ahead
            p = self.prompt[rid]
            self.ahead = [a_batch + 1, a_need + p + 1, a_reserved + p + cfg.max_output_tokens]
        else:
            self.blocked = True
        self.fresh.append(rid)

    def _has_room(self, rid: int, t: float) -> bool:
        """Could rid, arriving at t, be admitted at the next step boundary?

        Uses the replica state in ``self.room`` (the KV need at that boundary
        from ``self.need_at`` during a multi-step jump) plus what earlier
        arrivals that had room will take (``self.ahead``).  False if a request
        that had no room waits ahead of it, the batch is full or its KV need
        does not fit (same rules as admission).
        """
        if self.blocked or self.resume:  # preempted requests wait ahead of everyone
            return False
        cfg = self.cfg
        batch, need, reserved = self.room
        if self.need_at is not None:
            need = self.need_at(t)
        a_batch, a_need, a_reserved = self.ahead
        p = self.prompt[rid]
        fits = cfg.max_batch is None or batch + a_batch < cfg.max_batch
        if cfg.admission == "reserve-max":
            total = reserved + a_reserved + p + cfg.max_output_tokens
            fits = fits and total <= cfg.kv_budget_tokens
        else:
            fits = fits and need + a_need + p + 1 <= cfg.kv_budget_tokens
        return fits

    def _process_until(
        self,
        now: float,
        room: tuple[int, int, int],
        need_at: Callable[[float], int] | None = None,
    ) -> None:
        """Handle arrivals and queue time-outs with time <= now, in time order.

        ``room`` is the replica state (batch, KV need [tokens], reservations
        [tokens]) that held while these events happened, ``need_at`` the KV
        need at the first step boundary after a time when it changes during
        a jump; they decide whether an arrival has room.
        """
        self.room = room
        self.need_at = need_at
        heap, fresh, enq = self.heap, self.fresh, self.enq_t
        timeout = self.cfg.queue_timeout_s
        while True:
            ta = heap[0][0] if heap else math.inf
            td = enq[fresh[0]] + timeout if (timeout is not None and fresh) else math.inf
            if ta > now and td > now:
                return
            if td <= ta:
                rid = fresh.popleft()
                self.queued[rid] = True
                self._reject(rid, td)
            else:
                _, _, rid = heapq.heappop(heap)
                self._arrive(rid, ta, now)

    # -- main loop -----------------------------------------------------------

    def run(self) -> SimResult:
        """Run the event loop to the last completion (see the module docstring)."""
        cfg = self.cfg
        step = cfg.step
        budget = cfg.kv_budget_tokens
        max_out = cfg.max_output_tokens
        reserve_max = cfg.admission == "reserve-max"
        swap = cfg.preemption == "swap"
        max_batch = cfg.max_batch if cfg.max_batch is not None else math.inf
        timeout = cfg.queue_timeout_s
        kv_b = step.kv_bytes_per_token
        swap_bw = cfg.swap_bandwidth_bytes_per_s
        prompt, output = self.prompt, self.output
        gen, g_join, G_join, fin_G = self.gen, self.g_join, self.G_join, self.fin_G
        status, last_t = self.status, self.last_t
        warm_rid = self.warm_rid
        fresh, resume, heap = self.fresh, self.resume, self.heap

        if cfg.arrivals.kind == "closed":
            for _ in range(min(cfg.arrivals.concurrency, self.n_tasks)):
                self._start_task(0.0)
        else:
            for t in self.task_times:
                self._start_task(t)

        running: dict[int, None] = {}  # insertion order = admission order
        fin_heap: list[tuple[int, int]] = []
        G = 0  # decode steps taken so far (global clock of the running batch)
        sum_base = 0  # sum over running of P + g_join - G_join; need = sum_base + B*G
        reserved = 0
        run_meas = 0
        now = 0.0
        # ITL segments: value_k = start + slope*k, k < count, each with weight
        segs: list[tuple[float, float, int, int]] = []
        seg = segs.append
        busy = conc_area = kv_area = 0.0
        tokens_window = 0
        peak_used = peak_reserved = 0
        preemptions = recomputed = 0
        swap_bytes = swap_time = 0.0

        def join(rid: int) -> None:
            nonlocal sum_base, run_meas
            running[rid] = None
            g_join[rid] = gen[rid]
            G_join[rid] = G
            sum_base += prompt[rid] + gen[rid] - G
            fin_G[rid] = G + output[rid] - gen[rid]
            heapq.heappush(fin_heap, (fin_G[rid], rid))
            status[rid] = _RUNNING
            if rid >= warm_rid:
                run_meas += 1

        def leave(rid: int) -> None:
            nonlocal sum_base, run_meas
            del running[rid]
            gen[rid] = g_join[rid] + G - G_join[rid]
            sum_base -= prompt[rid] + g_join[rid] - G_join[rid]
            fin_G[rid] = -1
            if rid >= warm_rid:
                run_meas -= 1

        while True:
            if (heap and heap[0][0] <= now) or (fresh and timeout is not None):
                self._process_until(now, (len(running), sum_base + len(running) * G, reserved))
            if not running and not fresh and not resume:
                if not heap:
                    break
                now = max(now, heap[0][0])
                continue
            in_window = self.window_open

            # ---- admission (FIFO, head-of-line blocking) ----
            prefill_tokens: list[int] = []
            prefilled: list[int] = []
            swapped_in: list[int] = []
            pending_need = 0
            n_admit = 0
            B_now = len(running)
            need_now = sum_base + B_now * G
            while True:
                if resume:
                    rid, from_resume = resume[0], True
                elif fresh:
                    rid, from_resume = fresh[0], False
                else:
                    break
                if B_now + n_admit + 1 > max_batch:
                    break
                p = prompt[rid]
                if reserve_max:
                    if reserved + p + max_out > budget:
                        break
                else:
                    g_next = gen[rid] + (0 if (from_resume and swap) else 1)
                    if need_now + pending_need + p + g_next > budget:
                        break
                    pending_need += p + g_next
                if from_resume:
                    resume.popleft()
                    if swap:
                        swapped_in.append(rid)
                    else:
                        prefilled.append(rid)
                        prefill_tokens.append(p + gen[rid])
                        recomputed += p + gen[rid]
                else:
                    fresh.popleft()
                    self.admit_t[rid] = now
                    prefilled.append(rid)
                    prefill_tokens.append(p)
                if reserve_max:
                    reserved += p + max_out
                    peak_reserved = max(peak_reserved, reserved)
                n_admit += 1
            self.blocked = bool(fresh or resume)
            self.ahead = [0, 0, 0]

            # ---- prefill step ----
            t_prefill = 0.0
            old_meas = run_meas
            if n_admit:
                swap_in_bytes = 0.0
                for r in swapped_in:
                    swap_in_bytes += kv_b * (prompt[r] + gen[r] - 1)
                t_swap = swap_in_bytes / swap_bw
                t_prefill = step.prefill_batch_s(prefill_tokens) + t_swap
                swap_bytes += swap_in_bytes
                swap_time += t_swap
                t1 = now + t_prefill
                if in_window:
                    busy += t_prefill
                    conc_area += (B_now + n_admit) * t_prefill
                    tokens_window += len(prefilled)
                # arrivals during the prefill step saw the batch including the new requests
                if (heap and heap[0][0] <= t1) or (fresh and timeout is not None):
                    self._process_until(t1, (B_now + n_admit, need_now + pending_need, reserved))
                for rid in prefilled:
                    g = gen[rid]
                    if g == 0:
                        self.first_t[rid] = t1
                    elif rid >= warm_rid:  # recompute resume: the gap since its last token
                        seg((t1 - last_t[rid], 0.0, 1, 1))
                    gen[rid] = g + 1
                    last_t[rid] = t1
                    if g + 1 >= output[rid]:
                        if reserve_max:
                            reserved -= prompt[rid] + max_out
                        self._complete(rid, t1)
                    else:
                        join(rid)
                for rid in swapped_in:
                    join(rid)
                now = t1
            new_meas = run_meas - old_meas
            for r in swapped_in:
                new_meas -= r >= warm_rid

            # ---- decode steps ----
            if not running:
                continue
            stall = 0.0
            if not reserve_max:
                B = len(running)
                while sum_base + B * G > budget:
                    victim = next(reversed(running))
                    leave(victim)
                    B -= 1
                    preemptions += 1
                    self.preempted[victim] += 1
                    status[victim] = _PREEMPTED
                    if victim not in swapped_in:
                        last_t[victim] = now
                    resume.appendleft(victim)
                    if swap:
                        b = kv_b * (prompt[victim] + gen[victim] - 1)
                        swap_bytes += b
                        stall += b / swap_bw
                swap_time += stall
            B = len(running)
            ctx0 = sum_base + B * G
            run = _DecodeRun(step, B, ctx0)
            while fin_G[fin_heap[0][1]] != fin_heap[0][0]:
                heapq.heappop(fin_heap)  # stale entry of a preempted request
            n_max = fin_heap[0][0] - G
            if not reserve_max:
                n_max = min(n_max, (budget - ctx0) // B + 1)
            if self.max_jump is not None:
                n_max = min(n_max, self.max_jump)
            stop_t = math.inf
            if fresh or resume:
                head = resume[0] if resume else fresh[0]
                if self._head_fits(head, bool(resume), running, reserved, ctx0, max_batch):
                    n_max = 1
                elif timeout is not None and fresh:
                    stop_t = self.enq_t[fresh[0]] + timeout
            elif heap and B < max_batch:
                stop_t = heap[0][0]
            if stop_t < math.inf and n_max > 1:
                n = run.steps_to_reach(stop_t - now - stall, n_max)
            else:
                n = n_max
            t0 = stall + run.step_s(0)
            total = stall + run.total_s(0, n)

            # ITL: first step (gaps differ after a prefill stall), then the rest
            if n_admit:
                if old_meas > 0:
                    seg((t_prefill + t0, 0.0, 1, old_meas))
                if new_meas > 0:
                    seg((t0, 0.0, 1, new_meas))
                for rid in swapped_in:
                    if rid >= warm_rid and rid in running:
                        seg((now + t0 - last_t[rid], 0.0, 1, 1))
            elif run_meas > 0:
                seg((t0, 0.0, 1, run_meas))
            if run_meas > 0:
                for a, b_, c_ in run.pieces(1, n):
                    seg((a, b_, c_, run_meas))

            peak_used = max(peak_used, ctx0 + B * (n - 1))
            if not reserve_max:
                peak_reserved = peak_used
            if in_window:
                busy += total
                conc_area += B * total
                kv_area += (ctx0 + B * (n - 1) / 2.0) * total
                tokens_window += B * n
            now += total
            G += n
            # arrivals during these steps saw the batch before its completions
            if (heap and heap[0][0] <= now) or (fresh and timeout is not None):
                t_steps = now - total + stall

                def need_at(t: float, run=run, t_steps=t_steps, ctx0=ctx0, B=B, n=n) -> int:
                    return ctx0 + B * run.steps_to_reach(t - t_steps, n)

                self._process_until(now, (B, ctx0 + B * n, reserved), need_at)
            while fin_heap and fin_heap[0][0] <= G:
                fg, rid = heapq.heappop(fin_heap)
                if fin_G[rid] != fg:
                    continue
                leave(rid)
                last_t[rid] = now
                if reserve_max:
                    reserved -= prompt[rid] + max_out
                self._complete(rid, now)

        return self._result(
            np.asarray(segs, dtype=float).reshape(-1, 4),
            busy=busy,
            conc_area=conc_area,
            kv_area=kv_area,
            tokens_window=tokens_window,
            peak_used=peak_used,
            peak_reserved=peak_reserved,
            preemptions=preemptions,
            recomputed=recomputed,
            swap_bytes=swap_bytes,
            swap_time=swap_time,
        )

    def _head_fits(
        self,
        rid: int,
        from_resume: bool,
        running: dict[int, None],
        reserved: int,
        need: int,
        max_batch: float,
    ) -> bool:
        """Would the queue head be admitted at the next step boundary? (nothing else changes)."""
        cfg = self.cfg
        if len(running) + 1 > max_batch:
            return False
        p = self.prompt[rid]
        if cfg.admission == "reserve-max":
            return reserved + p + cfg.max_output_tokens <= cfg.kv_budget_tokens
        # after one more decode step every running request needs one more token
        g_next = self.gen[rid] + (0 if (from_resume and cfg.preemption == "swap") else 1)
        return need + len(running) + p + g_next <= cfg.kv_budget_tokens

    def _result(
        self,
        segs: np.ndarray,
        *,
        busy: float,
        conc_area: float,
        kv_area: float,
        tokens_window: int,
        peak_used: int,
        peak_reserved: int,
        preemptions: int,
        recomputed: int,
        swap_bytes: float,
        swap_time: float,
    ) -> SimResult:
        """Turn the per-request records into a :class:`SimResult`.

        ``segs`` rows are ITL segments: first gap [s], slope [s/step], number of
        gaps, number of measured requests that each gap counts for.
        """
        cfg = self.cfg
        w = self.warm_rid
        status = np.asarray(self.status[w:])
        issued = ~np.isnan(np.asarray(self.send_t[w:]))
        n_measured = int(issued.sum())
        done = status == _DONE
        send = np.asarray(self.send_t[w:])[done]
        first = np.asarray(self.first_t[w:])[done]
        fin = np.asarray(self.done_t[w:])[done]
        out = np.asarray(self.output[w:])[done]
        admit = np.asarray(self.admit_t[w:])
        enq = np.asarray(self.enq_t[w:])
        admitted = ~np.isnan(admit)
        ttft = first - send
        e2e = fin + cfg.network_s - send
        multi = out > 1
        tpot = (fin[multi] - first[multi]) / (out[multi] - 1)
        wait = (admit - enq)[admitted]
        t_send = np.asarray(self.task_send[w // self.rpt :])
        t_done = np.asarray(self.task_done[w // self.rpt :])
        ok = ~np.isnan(t_done)
        task = t_done[ok] - t_send[ok]
        rejected = int((status == _REJECTED).sum())
        queued = int(np.asarray(self.queued[w:])[issued].sum())
        preempted = int((np.asarray(self.preempted[w:]) > 0).sum())
        qs = [p / 100 for p in _PERCENTILES]
        itl = _segment_quantiles(segs[:, 0], segs[:, 1], segs[:, 2], segs[:, 3], qs)
        itl_mean = _segment_mean(segs[:, 0], segs[:, 1], segs[:, 2], segs[:, 3])
        duration = (
            self.last_completion - self.t_window
            if self.window_open and not math.isnan(self.last_completion)
            else 0.0
        )

        def per_s(x: float) -> float:
            return x / duration if duration > 0 else math.nan

        def frac(k: int) -> float:
            return k / n_measured if n_measured else math.nan

        tt, ee = _percentiles(ttft), _percentiles(e2e)
        tp, tk = _percentiles(tpot), _percentiles(task)
        wait_p95 = _percentiles(wait)[2]
        return SimResult(
            n_requests=self.issued,
            n_measured=n_measured,
            n_completed=int(done.sum()),
            ttft_p50_s=tt[0],
            ttft_p90_s=tt[1],
            ttft_p95_s=tt[2],
            ttft_p99_s=tt[3],
            ttft_mean_s=_mean(ttft),
            itl_p50_s=itl[0],
            itl_p90_s=itl[1],
            itl_p95_s=itl[2],
            itl_p99_s=itl[3],
            itl_mean_s=itl_mean,
            tpot_p50_s=tp[0],
            tpot_p90_s=tp[1],
            tpot_p95_s=tp[2],
            tpot_p99_s=tp[3],
            e2e_p50_s=ee[0],
            e2e_p90_s=ee[1],
            e2e_p95_s=ee[2],
            e2e_p99_s=ee[3],
            e2e_mean_s=_mean(e2e),
            task_p50_s=tk[0],
            task_p90_s=tk[1],
            task_p95_s=tk[2],
            task_p99_s=tk[3],
            task_mean_s=_mean(task),
            wait_mean_s=_mean(wait),
            wait_p95_s=wait_p95,
            throughput_tokens_per_s=per_s(tokens_window),
            throughput_requests_per_s=per_s(self.completions_in_window),
            queued_count=queued,
            queued_fraction=frac(queued),
            rejected_count=rejected,
            rejected_fraction=frac(rejected),
            preempted_count=preempted,
            preempted_fraction=frac(preempted),
            preemptions=preemptions,
            recomputed_tokens=recomputed,
            swap_bytes=swap_bytes,
            swap_time_s=swap_time,
            tasks_completed=int(ok.sum()),
            tasks_failed=int((~ok & ~np.isnan(t_send)).sum()),
            utilisation=per_s(busy),
            mean_concurrency=per_s(conc_area),
            mean_kv_tokens=per_s(kv_area),
            peak_kv_tokens_used=int(peak_used),
            peak_kv_tokens_reserved=int(peak_reserved),
            kv_budget_tokens=cfg.kv_budget_tokens,
            duration_s=duration,
            samples={"ttft_s": ttft, "e2e_s": e2e, "wait_s": wait, "tpot_s": tpot, "task_s": task},
        )


def simulate(cfg: SimConfig) -> SimResult:
    """Simulate one replica serving ``cfg``'s workload; see the module docstring."""
    return _Replica(cfg).run()
