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
from collections.abc import Callable

import numpy as np

from planner.serving.statistics import (
    _PERCENTILES,
    SimResult,
    _mean,
    _percentiles,
    _rngs,
    _segment_mean,
    _segment_quantiles,
)
from planner.serving.steps import StepModel, _DecodeRun
from planner.serving.traffic import Arrivals, Lengths, SimConfig

__all__ = [
    "Arrivals",
    "Lengths",
    "SimConfig",
    "SimResult",
    "StepModel",
    "simulate",
]

_WAITING, _RUNNING, _DONE, _REJECTED, _PREEMPTED = 1, 2, 3, 4, 5


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
