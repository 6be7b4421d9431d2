"""What a simulation run reports (:class:`SimResult`) and the statistics it is computed with:
percentiles, time-weighted segment quantiles and means, seeded random streams.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

import numpy as np

_PERCENTILES = (50, 90, 95, 99)


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
    prefill_utilisation: float
    mean_concurrency: float
    mean_kv_tokens: float
    peak_kv_tokens_used: int
    peak_kv_tokens_reserved: int
    kv_budget_tokens: int
    duration_s: float
    prefix_hit_ratio: float = 0.0
    """Share of the measured admitted requests' prompt tokens found in the prefix cache [-]."""
    samples: dict[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)
    """Raw per-request arrays of the measured requests (ttft_s, e2e_s, wait_s, tpot_s, task_s)."""

    def to_dict(self) -> dict[str, float | int]:
        """Flat scalar metrics, e.g. ``ttft_p95_s``, ``rejected_fraction``."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "samples"}


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
    """Independent PCG64 generators for arrivals, prompt lengths, output lengths and the
    requests' delays (a child of a seed sequence does not change as more are spawned)."""
    return [np.random.Generator(np.random.PCG64(s)) for s in np.random.SeedSequence(seed).spawn(4)]


WAITING, RUNNING, DONE, REJECTED, PREEMPTED = 1, 2, 3, 4, 5
"""A request's status in :attr:`Records.status` (0: not yet issued)."""


class Records:
    """What a run writes down about each request and task, kept as one list per field (the
    event loop touches one field of many requests at a time; numpy reads the lists at the end).

    Times are in seconds (NaN: did not happen); the requests of task ``t`` are ``t × rpt`` to
    ``t × rpt + rpt - 1``, and the statistics leave out requests below ``warm_rid``.
    """

    __slots__ = (
        "admit_t",
        "completions_in_window",
        "done_t",
        "enq_t",
        "first_t",
        "gen",
        "issued",
        "last_completion",
        "last_t",
        "n_tasks",
        "network",
        "output",
        "preempted",
        "preprocess",
        "prompt",
        "queued",
        "rpt",
        "send_t",
        "status",
        "t_window",
        "task_done",
        "task_send",
        "warm_rid",
        "window_open",
    )

    def __init__(
        self,
        prompt: list[int],
        output: list[int],
        n_tasks: int,
        rpt: int,
        warm: int,
        preprocess: list[float],
        network: list[float],
    ):
        n = len(prompt)
        nan = math.nan
        self.prompt, self.output = prompt, output
        self.preprocess, self.network = preprocess, network  # each request's delays [s]
        self.n_tasks, self.rpt, self.warm_rid = n_tasks, rpt, warm
        self.send_t = [nan] * n
        self.enq_t = [nan] * n
        self.admit_t = [nan] * n
        self.first_t = [nan] * n
        self.done_t = [nan] * n
        self.last_t = [0.0] * n  # its latest token
        self.gen = [0] * n  # tokens generated (up to its latest leave of the batch)
        self.status = [0] * n
        self.queued = [False] * n
        self.preempted = [0] * n
        self.task_send = [nan] * n_tasks
        self.task_done = [nan] * n_tasks
        self.issued = 0
        self.window_open = False
        self.t_window = math.nan
        self.completions_in_window = 0
        self.last_completion = math.nan


@dataclass(slots=True)
class Totals:
    """What a run adds up over its measuring window, and its peaks and counts."""

    busy: float = 0.0
    """Time the accelerator runs a step [s]."""
    prefill_busy: float = 0.0
    """Time the accelerator runs a prefill step [s]."""
    conc_area: float = 0.0
    """Running sequences × time [s]."""
    kv_area: float = 0.0
    """Cached tokens × time [token·s]."""
    tokens_window: int = 0
    peak_used: int = 0
    peak_reserved: int = 0
    preemptions: int = 0
    recomputed: int = 0
    swap_bytes: float = 0.0
    swap_time: float = 0.0
    segments: list[tuple[float, float, int, int]] = field(default_factory=list)
    """Inter-token gaps as segments: first gap [s], slope [s/step], gaps, requests each counts."""


def summarise(
    r: Records, t: Totals, kv_budget_tokens: int, prefix_hit_ratio: float = 0.0
) -> SimResult:
    """The :class:`SimResult` of a finished run (the prefix hit ratio it saw, as counted by
    :meth:`planner.serving.clients._Clients.hit_ratio`)."""
    w = r.warm_rid
    status = np.asarray(r.status[w:])
    issued = ~np.isnan(np.asarray(r.send_t[w:]))
    n_measured = int(issued.sum())
    done = status == DONE
    send = np.asarray(r.send_t[w:])[done]
    first = np.asarray(r.first_t[w:])[done]
    fin = np.asarray(r.done_t[w:])[done]
    out = np.asarray(r.output[w:])[done]
    admit = np.asarray(r.admit_t[w:])
    enq = np.asarray(r.enq_t[w:])
    admitted = ~np.isnan(admit)
    ttft = first - send
    e2e = fin + np.asarray(r.network[w:])[done] - send
    multi = out > 1
    tpot = (fin[multi] - first[multi]) / (out[multi] - 1)
    wait = (admit - enq)[admitted]
    t_send = np.asarray(r.task_send[w // r.rpt :])
    t_done = np.asarray(r.task_done[w // r.rpt :])
    ok = ~np.isnan(t_done)
    task = t_done[ok] - t_send[ok]
    rejected = int((status == REJECTED).sum())
    queued = int(np.asarray(r.queued[w:])[issued].sum())
    preempted = int((np.asarray(r.preempted[w:]) > 0).sum())
    flat = itertools.chain.from_iterable(t.segments)
    segs = np.fromiter(flat, dtype=float, count=4 * len(t.segments)).reshape(-1, 4)
    itl = _segment_quantiles(
        segs[:, 0], segs[:, 1], segs[:, 2], segs[:, 3], [p / 100 for p in _PERCENTILES]
    )
    itl_mean = _segment_mean(segs[:, 0], segs[:, 1], segs[:, 2], segs[:, 3])
    duration = (
        r.last_completion - r.t_window
        if r.window_open and not math.isnan(r.last_completion)
        else 0.0
    )

    def per_s(x: float) -> float:
        return x / duration if duration > 0 else math.nan

    def frac(k: int) -> float:
        return k / n_measured if n_measured else math.nan

    tt, ee = _percentiles(ttft), _percentiles(e2e)
    tp, tk = _percentiles(tpot), _percentiles(task)
    return SimResult(
        n_requests=r.issued,
        n_measured=n_measured,
        n_completed=int(done.sum()),
        **_named("ttft", tt, _mean(ttft)),
        **_named("itl", itl, itl_mean),
        **_named("tpot", tp, None),
        **_named("e2e", ee, _mean(e2e)),
        **_named("task", tk, _mean(task)),
        wait_mean_s=_mean(wait),
        wait_p95_s=_percentiles(wait)[2],
        throughput_tokens_per_s=per_s(t.tokens_window),
        throughput_requests_per_s=per_s(r.completions_in_window),
        queued_count=queued,
        queued_fraction=frac(queued),
        rejected_count=rejected,
        rejected_fraction=frac(rejected),
        preempted_count=preempted,
        preempted_fraction=frac(preempted),
        preemptions=t.preemptions,
        recomputed_tokens=t.recomputed,
        swap_bytes=t.swap_bytes,
        swap_time_s=t.swap_time,
        tasks_completed=int(ok.sum()),
        tasks_failed=int((~ok & ~np.isnan(t_send)).sum()),
        utilisation=per_s(t.busy),
        prefill_utilisation=per_s(t.prefill_busy),
        mean_concurrency=per_s(t.conc_area),
        mean_kv_tokens=per_s(t.kv_area),
        peak_kv_tokens_used=int(t.peak_used),
        peak_kv_tokens_reserved=int(t.peak_reserved),
        kv_budget_tokens=kv_budget_tokens,
        duration_s=duration,
        prefix_hit_ratio=prefix_hit_ratio,
        samples={"ttft_s": ttft, "e2e_s": e2e, "wait_s": wait, "tpot_s": tpot, "task_s": task},
    )


def _named(name: str, percentiles: list[float], mean: float | None) -> dict[str, float]:
    """``{name}_p50_s`` … ``{name}_p99_s`` (and ``{name}_mean_s`` when given)."""
    out = {f"{name}_p{p}_s": v for p, v in zip(_PERCENTILES, percentiles, strict=True)}
    return out if mean is None else {**out, f"{name}_mean_s": mean}
