"""Disaggregated prefill and decode, simulated: a prefill pool, a transfer queue per prefill
replica, and a decode pool.

The whole workload's requests (at the workload's rate, not one replica's share) go round-robin
to the prefill pool's replicas in the order they are sent. A prefill replica takes the prompts
waiting for it first come first served, in steps of at most the engine's
``max_num_batched_tokens`` (a long prompt in chunks over several steps, others' prompts with its
last chunk; without chunked prefill, every waiting prompt whole in one step), each step timed by
the one-pool simulation's step model with no sequence decoding
(:meth:`~planner.serving.steps.StepModel.mixed_step_s`), tokens found in the prefix cache
skipped. A prefilled prompt's cache then leaves its prefill replica over that replica's network
link, one request after another: :func:`planner.model.disaggregated.request_kv_transfer_s` of
its own prompt's bytes (:func:`~planner.model.disaggregated.request_kv_transfer_bytes`), a
request waiting while the link sends an earlier one.

Requests go round-robin to the decode pool's replicas, also in the order they are sent (a
router chooses both replicas when the request arrives, as vLLM's and SGLang's proxies do). The
first decode replica is simulated by the one-pool simulation (:func:`planner.serving.simulate.
simulate`) replaying its requests: each is sent when the client sent it and reaches the decode
replica's queue once its cache has arrived, so its preprocessing, prefill wait, prefill and
transfer are its delay before the queue; its prompt arrives cached but for its last token, whose
one-token chunk computes the first generated token from the transferred cache. So the time to
first token adds up the preprocessing, the prefill queue and step, the transfer queue and
transfer, the decode replica's admission wait and one step; the inter-token gaps are the decode
replica's alone (it never stops for a whole prompt); the end to end and rejections are the
decode replica's with those delays in them.

The run holds as many requests as the decode replica simulated would get in a one-pool run:
``n_requests`` × the decode replicas, so that one decode replica measures as many as one
aggregated replica does. The prefill replicas' busy share is the run's prefill utilisation; the
share of prompt tokens they found cached is its prefix hit ratio.

Left out: a prefill replica's first token is not returned before the transfer (the decode
replica emits it); a decode replica does not refuse a transfer when it is full (the request
waits in its queue, the cache held elsewhere); closed loops and tasks of several requests,
whose next request waits on the previous one's answer through both pools, are not simulated
(:func:`simulable_pools`).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from planner.model.disaggregated import request_kv_transfer_bytes, request_kv_transfer_s
from planner.serving.simulate import SimConfig, SimResult, simulate
from planner.serving.statistics import _rngs
from planner.serving.steps import StepModel
from planner.serving.traffic import Arrivals, request_delays, request_lengths, request_prefixes

__all__ = [
    "PrefillRun",
    "fewest_pools",
    "pool_sizes",
    "prefill_pool",
    "simulable_pools",
    "simulate_pools",
    "transfer_s",
]


@dataclass(frozen=True)
class PrefillRun:
    """What the prefill pool did with a run's requests."""

    done_s: np.ndarray
    """When each request's prompt was prefilled [s], in the requests' order."""
    ready_s: np.ndarray
    """When each request's cache reached the decode pool [s]."""
    utilisation: float
    """Share of the time its replicas ran a step, from the first request's arrival to the last
    cache sent [-]."""
    hit_ratio: float
    """Share of prompt tokens found in the prefix cache, the shared prefix counted [-]."""


def simulable_pools(workload_closed: bool, requests_per_task: int) -> str | None:
    """Why a disaggregated candidate's pools cannot be simulated (its reason in words), else
    None: a closed loop or a task of several requests sends a request only when an earlier
    one's answer came back through both pools, which a replay of send times cannot follow."""
    if workload_closed:
        return (
            "not simulated: a closed loop's next request waits for the previous answer through "
            "both pools, which the pools' simulation does not follow; planned in closed form"
        )
    if requests_per_task > 1:
        return (
            "not simulated: a task's next request waits for the previous answer through both "
            "pools, which the pools' simulation does not follow; planned in closed form"
        )
    return None


def transfer_s(
    prompt_tokens: Sequence[int], kv_bytes_per_token: float, network_bytes_per_s: float
) -> np.ndarray:
    """Each request's cache transfer from its prefill replica to its decode replica [s]:
    :func:`~planner.model.disaggregated.request_kv_transfer_s` of its own prompt's bytes."""
    tokens = np.asarray(prompt_tokens, dtype=float)
    moved = request_kv_transfer_bytes(tokens, kv_bytes_per_token)
    return np.asarray(request_kv_transfer_s(1, moved, network_bytes_per_s), dtype=float)


def _chunked_step(step: StepModel, queue: deque[list[Any]], chunk: int) -> tuple[float, list[int]]:
    """One prefill-only step of at most ``chunk`` tokens from the head of ``queue`` (entries
    ``[request, tokens done, tokens left]``): its time [s] and the requests it finishes."""
    budget, chunks, finished = chunk, [], []
    for entry in queue:
        take = min(entry[2], budget)
        chunks.append((float(entry[1]), float(take)))
        entry[1] += take
        entry[2] -= take
        budget -= take
        if entry[2] == 0:
            finished.append(entry[0])
        if budget == 0:
            break
    for _ in finished:
        queue.popleft()  # first come first served: the finished ones lead the queue
    return step.mixed_step_s(0, 0.0, chunks), finished


def _whole_step(step: StepModel, queue: deque[list[Any]]) -> tuple[float, list[int]]:
    """One prefill step of every waiting prompt whole: its time [s] and the requests in it."""
    starts = [float(e[1]) for e in queue]
    prompts = [float(e[1] + e[2]) for e in queue]
    finished = [int(e[0]) for e in queue]
    queue.clear()
    cached = starts if any(starts) else None
    return step.prefill_batch_s(prompts, cached), finished


def prefill_pool(
    step: StepModel,
    entry_s: Sequence[float] | np.ndarray,
    own_tokens: Sequence[int],
    cached_tokens: Sequence[int],
    chunk: int | None,
    replicas: int,
    transfer: Sequence[float] | np.ndarray,
) -> PrefillRun:
    """Run the prefill pool: request ``i`` reaches prefill replica ``i mod replicas`` at
    ``entry_s[i]`` [s] with ``own_tokens[i]`` prompt tokens beyond the step model's shared
    prefix, ``cached_tokens[i]`` of them found in the prefix cache; its cache then takes
    ``transfer[i]`` seconds on its replica's link (see the module docstring)."""
    if replicas < 1:
        raise ValueError("a prefill pool needs at least one replica")
    entry = np.asarray(entry_s, dtype=float)
    n = len(entry)
    shared = int(step.shared_prefix_tokens)
    done, ready = np.full(n, math.nan), np.full(n, math.nan)
    busy = 0.0
    for replica in range(replicas):
        mine = np.arange(replica, n, replicas)
        mine = mine[np.argsort(entry[mine], kind="stable")]
        queue: deque[list[Any]] = deque()
        t, k, link = 0.0, 0, 0.0
        while k < len(mine) or queue:
            if not queue:
                t = max(t, float(entry[mine[k]]))
            while k < len(mine) and entry[mine[k]] <= t:
                rid = int(mine[k])
                start = shared + int(cached_tokens[rid])
                queue.append([rid, start, int(own_tokens[rid]) - int(cached_tokens[rid])])
                k += 1
            if chunk is None:
                step_s, finished = _whole_step(step, queue)
            else:
                step_s, finished = _chunked_step(step, queue, chunk)
            t += step_s
            busy += step_s
            for rid in finished:
                done[rid] = t
                link = max(link, t) + float(transfer[rid])
                ready[rid] = link
    span = float(np.nanmax(ready) - entry.min()) if n else 0.0
    own, found = np.asarray(own_tokens, dtype=float), np.asarray(cached_tokens, dtype=float)
    total = float((shared + own).sum())
    return PrefillRun(
        done_s=done,
        ready_s=ready,
        utilisation=busy / (replicas * span) if span > 0 else 0.0,
        hit_ratio=float((shared + found).sum()) / total if total else 0.0,
    )


def simulate_pools(
    cfg: SimConfig,
    prefill_replicas: int,
    decode_replicas: int,
    kv_bytes_per_token: float,
    network_bytes_per_s: float,
    prefill_step: StepModel | None = None,
) -> SimResult:
    """Simulate a disaggregated deployment serving ``cfg``'s workload at its whole rate: the
    prefill pool, the transfers, and one of ``decode_replicas`` decode replicas (see the module
    docstring). ``cfg`` is one-pool simulation's configuration at one replica (the workload's
    open-loop arrivals, tasks of one request); ``kv_bytes_per_token`` is what one device of a
    prefill replica sends its decode counterpart per prompt token [B] and
    ``network_bytes_per_s`` its link [B/s]; ``prefill_step`` the prefill replicas' step times
    where they run on another device than the decode pool's (:func:`planner.serving.configs.
    on_prefill_hardware`; none: ``cfg``'s). The result is the decode replica's, with the
    prefill pool's utilisation and prefix hit ratio."""
    if cfg.arrivals.kind == "closed" or cfg.requests_per_task != 1:
        raise ValueError("the pools' simulation needs open-loop tasks of one request")
    if decode_replicas < 1:
        raise ValueError("a decode pool needs at least one replica")
    whole = replace(cfg, n_requests=cfg.n_requests * decode_replicas)
    prompt, output, n_tasks = request_lengths(whole)
    own, cached = request_prefixes(whole, prompt)
    preprocess, _ = request_delays(whole, len(prompt))
    send = whole.arrivals.start_times_s(_rngs(whole.seed)[0], n_tasks)
    entry = send + np.asarray(preprocess)
    pool = prefill_pool(
        whole.step if prefill_step is None else prefill_step,
        entry,
        own,
        cached,
        whole.chunk_tokens,
        prefill_replicas,
        transfer_s(prompt, kv_bytes_per_token, network_bytes_per_s),
    )
    mine = np.arange(0, len(prompt), decode_replicas)
    trace = Arrivals.trace(
        send[mine].tolist(),
        prompt_tokens=[prompt[i] for i in mine],
        output_tokens=[output[i] for i in mine],
        entry_delays_s=(pool.ready_s[mine] - send[mine]).tolist(),
    )
    decode = replace(
        cfg,
        arrivals=trace,
        n_requests=len(mine),
        prefix_hit_ratio=1.0,  # the prompt's cache arrives: only its last token is computed
        kv_block_tokens=1,
        prefix_cache=None,
    )
    result = simulate(decode)
    return replace(result, prefill_utilisation=pool.utilisation, prefix_hit_ratio=pool.hit_ratio)


#: Simulates a count of one pool's replicas: (targets met, miss ratio).
Trial = Callable[[int], tuple[bool, float]]


def fewest_pools(
    simulate_at: Callable[[int, int], tuple[bool, float]],
    fewest: Callable[[Trial, int, int], int | None],
    prefill: int,
    decode: int,
    upper: int,
) -> tuple[int, int] | None:
    """The pools' sizes to plan, ``(prefill replicas, decode replicas)``, at least the closed
    form's ``prefill`` and ``decode``, or None when no decode pool up to ``upper`` replicas
    meets the targets with an ample prefill pool.

    ``simulate_at(p, d)`` simulates ``p`` prefill and ``d`` decode replicas (targets met, miss
    ratio); ``fewest(trial, start, upper)`` is the one-pool search
    (:func:`planner.serving.search.fewest`) for the fewest count meeting the targets (None:
    none up to ``upper``). A coordinate search: first the fewest decode replicas with an ample
    prefill pool (twice the closed form's and one more, where prompts seldom wait), then the fewest
    prefill replicas with those decode replicas; each pool is then raised to the closed form's
    where that is more, as a one-pool plan raises the simulated count to the closed form's. The
    sizes meet every target together; the search does not try trading one pool's replicas for
    the other's."""
    ample = 2 * prefill + 1
    d = fewest(lambda count: simulate_at(ample, count), decode, upper)
    if d is None:
        return None
    d = max(d, decode)
    p = fewest(lambda count: simulate_at(count, d), prefill, ample)
    return max(p if p is not None else ample, prefill), d


def pool_sizes(row: Mapping[str, Any]) -> tuple[int, int]:
    """The closed form's prefill and decode replicas of a disaggregated row (at least one each)."""
    prefill = int(max(float(row["prefill_pool_replicas"]), 1))
    decode = int(max(float(row["replicas_needed"]) - prefill, 1))
    return prefill, decode
