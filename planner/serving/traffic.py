"""What the simulation serves: token lengths (:class:`Lengths`), arrivals (:class:`Arrivals`:
closed loop, Poisson, bursty, trace) and a run's configuration (:class:`SimConfig`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from planner.model.lengths import Lengths
from planner.serving.statistics import _rngs
from planner.serving.steps import StepModel


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
    entry_delays_s: tuple[float, ...] | None = None
    """A trace's own delay of each request between its sending and its reaching the scheduler
    queue [s], in the order of ``times_s``, instead of the run's preprocessing time: for a
    decode pool, the prefill pool's queue, prefill and cache transfer
    (:mod:`planner.serving.pools`)."""

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
        entry_delays_s: Sequence[float] | None = None,
    ) -> Arrivals:
        """Replay task start times [s], optionally with per-request lengths and, for tasks of
        one request, each request's delay before the queue [s]."""
        if len(times_s) == 0:
            raise ValueError("empty trace")
        if entry_delays_s is not None and len(entry_delays_s) != len(times_s):
            raise ValueError("a trace's entry delays need one per task")
        if entry_delays_s is not None and not all(d >= 0 for d in entry_delays_s):
            raise ValueError("entry delays must be >= 0")
        return cls(
            kind="trace",
            times_s=tuple(float(t) for t in times_s),
            prompt_tokens=None if prompt_tokens is None else tuple(int(p) for p in prompt_tokens),
            output_tokens=None if output_tokens is None else tuple(int(o) for o in output_tokens),
            entry_delays_s=None if entry_delays_s is None else tuple(map(float, entry_delays_s)),
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
class PrefixLayout:
    """What a workload's prompts share beyond the shared prefix, for the simulation's
    least-recently-used prefix cache (:mod:`planner.serving.blockcache`) [tokens]: the history
    each call of a task after its first re-sends (the workload's ``history_tokens`` is the mean
    over all its calls), and a document asked ``questions_per_document`` questions, each a
    request of its own."""

    history_tokens: int = 0
    document_tokens: int = 0
    questions_per_document: int = 1

    def __post_init__(self) -> None:
        if min(self.history_tokens, self.document_tokens) < 0 or self.questions_per_document < 1:
            raise ValueError("prefix tokens must be >= 0 and questions_per_document >= 1")


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
    delay_spread: float = 0.0
    """How much each request's preprocessing and network delays vary: each is drawn uniformly
    within ± this share of its mean [-] (0: every request's are the means)."""
    chunk_tokens: int | None = None
    """Chunked prefill: the tokens one step may carry (the engine's max_num_batched_tokens),
    decodes first, prompts in chunks with the rest; None: each admission's prompts are
    prefilled whole in a step of their own."""
    prefix_hit_ratio: float = 0.0
    """Prefix caching: the planned share of a prompt found in the cache
    (:func:`planner.model.prefix.prefix_hit_ratio`) [-]; each request finds that share of its
    own prompt, in whole ``kv_block_tokens`` blocks (0: every prompt prefilled whole)."""
    kv_block_tokens: int = 1
    """Tokens per cache block, the prefix cache's granularity [tokens]."""
    prefix_cache: PrefixLayout | None = None
    """Prefix caching by a least-recently-used cache of blocks: a request's cached tokens are
    what the replica's cache holds of its prompt at admission (:mod:`planner.serving.blockcache`),
    ``prefix_hit_ratio`` unused; None: each request finds the planned hit ratio."""
    acceptance_rate: float = 0.0
    """Speculative decoding: the share of proposed tokens accepted, each independently
    (:func:`planner.model.speculative.acceptance_rate`) [-]; the proposals per step are the
    step model's ``speculative_tokens`` (:mod:`planner.serving.speculation`)."""

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
        _check_requests(self.arrivals, self.requests_per_task, self.n_requests)
        if not 0.0 <= self.warmup_fraction < 1.0:
            raise ValueError("warmup_fraction must be in [0, 1)")
        if self.arrivals.kind == "closed" and self.reject_backoff_s <= 0:
            raise ValueError("reject_backoff_s must be positive")
        if min(self.tool_time_s, self.preprocess_s, self.network_s) < 0:
            raise ValueError("times must be >= 0")
        if self.swap_bandwidth_bytes_per_s <= 0:
            raise ValueError("swap bandwidth must be positive")
        if self.chunk_tokens is not None and self.chunk_tokens < 1:
            raise ValueError("chunk_tokens must be >= 1")
        _check_features(self.prefix_hit_ratio, self.kv_block_tokens, self.acceptance_rate)
        if not 0.0 <= self.delay_spread <= 1.0:
            raise ValueError("delay_spread must be in [0, 1]")


def _check_requests(arrivals: Arrivals, requests_per_task: int, n_requests: int) -> None:
    """At least one request a task and one in all, and a trace's entry delays only for tasks of
    one request (each delay is a request's), else ValueError."""
    if requests_per_task < 1 or n_requests < 1:
        raise ValueError("requests_per_task and n_requests must be >= 1")
    if arrivals.entry_delays_s is not None and requests_per_task != 1:
        raise ValueError("a trace's entry delays need tasks of one request")


def _check_features(ratio: float, block_tokens: int, acceptance: float) -> None:
    """A hit ratio in [0, 1], whole blocks of at least one token and an acceptance rate in
    [0, 1], else ValueError."""
    if not 0.0 <= ratio <= 1.0 or block_tokens < 1:
        raise ValueError("prefix_hit_ratio must be in [0, 1], kv_block_tokens >= 1")
    if not 0.0 <= acceptance <= 1.0:
        raise ValueError("acceptance_rate must be in [0, 1]")


def request_delays(cfg: SimConfig, n: int) -> tuple[list[float], list[float]]:
    """Each of ``n`` requests' preprocessing and network delays [s]: the means, each times a
    uniform draw in [1 − spread, 1 + spread] (the means exactly when the spread is 0); a trace
    that gives each request's entry delay takes it for the preprocessing."""
    spread = cfg.delay_spread
    if spread == 0.0:
        preprocess, network = [cfg.preprocess_s] * n, [cfg.network_s] * n
    else:
        draws = _rngs(cfg.seed)[3].uniform(1 - spread, 1 + spread, size=(2, n))
        preprocess, network = (
            (draws[0] * cfg.preprocess_s).tolist(),
            (draws[1] * cfg.network_s).tolist(),
        )
    given = cfg.arrivals.entry_delays_s
    if given is not None:  # in the trace's order, as its tasks are sent
        order = np.argsort(np.asarray(cfg.arrivals.times_s, dtype=float), kind="stable")
        preprocess = np.asarray(given, dtype=float)[order].tolist()
    return preprocess, network


def request_lengths(cfg: SimConfig) -> tuple[list[int], list[int], int]:
    """Prompt and output lengths of every request of a run [tokens] (prompts at least 1, outputs
    clipped to ``[1, max_output_tokens]``; a trace's own lengths where it gives them), and the
    number of tasks."""
    rng_prompt, rng_output = _rngs(cfg.seed)[1:3]
    arr, rpt = cfg.arrivals, cfg.requests_per_task
    n_tasks = len(arr.times_s) if arr.kind == "trace" else -(-cfg.n_requests // rpt)
    n = n_tasks * rpt
    prompt = cfg.prompt.draw(rng_prompt, n)
    output = cfg.output.draw(rng_output, n)
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
    clipped = np.clip(output, 1, cfg.max_output_tokens)
    return np.maximum(prompt, 1).tolist(), clipped.tolist(), n_tasks


def request_prefixes(cfg: SimConfig, prompt: list[int]) -> tuple[list[int], list[int]]:
    """Each request's own prompt tokens and the part of them found in the prefix cache
    [tokens], from its whole prompt of P tokens: S = the step model's shared prefix (held once
    by the pool, so not the request's own; a prompt is at least S + 1 tokens), and C the whole
    blocks of min(hit ratio × P, P − 1), at least S, as
    :func:`planner.model.prefix.prefix_hit_ratio_expected` takes the mean prompt's. Own: P − S;
    own cached: C − S. With no shared prefix and no hit ratio, the prompts and zeros; with a
    least-recently-used cache (``prefix_cache``), zeros, each set at the request's admission."""
    shared = int(cfg.step.shared_prefix_tokens)
    ratio, block = cfg.prefix_hit_ratio, cfg.kv_block_tokens
    if shared == 0 and (ratio == 0.0 or cfg.prefix_cache is not None):
        return prompt, [0] * len(prompt)
    if cfg.prefix_cache is not None:  # the cache says at admission
        return [max(p, shared + 1) - shared for p in prompt], [0] * len(prompt)
    own, cached = [], []
    for p in prompt:
        whole = max(p, shared + 1)
        hit = math.floor(max(min(ratio * whole, whole - 1), 0) / block) * block
        own.append(whole - shared)
        cached.append(max(hit, shared) - shared)
    return own, cached
