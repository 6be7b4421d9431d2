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
   shows up in their inter-token gap).  With ``chunk_tokens`` (chunked
   prefill, as vLLM V1 schedules) there is no prefill step: admitted prompts
   wait in a prefill queue, and every step carries the running batch's
   decodes plus, oldest first, chunks of the waiting prompts up to
   ``chunk_tokens`` tokens in all (:meth:`StepModel.mixed_step_s`); a prompt
   emits its first token with its last chunk, and while prompts wait the
   decode steps are taken one at a time.
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
   With speculative decoding each step verifies k proposals and a request
   gains 1 + those it accepts, one step at a time (:mod:`.speculation`).

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
to the end-to-end latency only (response delivery), not to TTFT.  Each
request draws its own two delays uniformly within ± ``delay_spread`` of
those means (the means exactly at 0), so closed-loop users do not come
back in lockstep.  So ``e2e = server completion + the request's network
time - send time`` and task latency =
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
  ``prefill_utilisation``: the part of it spent prefilling, the load of the
  queue a fresh request's first token waits in (its M/G/1 utilisation);
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
from collections.abc import Callable

from planner.serving.admission import (
    _NOTHING,
    _Admission,
    _ReplicaState,
    admit,
    has_room,
    head_fits,
    queue_prefills,
)
from planner.serving.blockcache import fit, keep
from planner.serving.reserved import simulate_reserved_chunked
from planner.serving.speculation import verify
from planner.serving.statistics import (
    PREEMPTED,
    RUNNING,
    WAITING,
    SimResult,
    summarise,
)
from planner.serving.steps import StepModel, _DecodeRun, mixed_and_decode_s, step_table
from planner.serving.traffic import (
    Arrivals,
    Lengths,
    SimConfig,
)

__all__ = [
    "Arrivals",
    "Lengths",
    "SimConfig",
    "SimResult",
    "StepModel",
    "simulate",
]


class _Replica(_ReplicaState):
    """One run; use :func:`simulate`.

    The running batch is kept on a decode clock ``G`` (decode steps taken so far): a request
    that joined at clock ``G_join`` with ``g_join`` tokens has ``g_join + G - G_join`` tokens
    now, so the batch's KV need for its next decode step is ``sum_base + batch × G`` [tokens]
    without touching every request. The loop runs once per scheduling point, so it calls as
    few functions as it can: state is read inline rather than through properties.
    """

    # -- request life cycle --------------------------------------------------

    def _complete(self, rid: int, t: float) -> None:
        """Server finished rid at t; its reservation is freed and its client answered."""
        if self.cfg.admission == "reserve-max":
            self.reserved -= self.rec.prompt[rid] + self.cfg.max_output_tokens
        if self.lru is not None:  # its blocks stay cached for what asks them next
            keep(self, rid)
        self._respond(rid, t)

    def _arrive(self, rid: int, t: float, now: float) -> None:
        """rid enters the scheduler at t (processed at the scheduling point ``now``)."""
        cfg, rec = self.cfg, self.rec
        if not rec.window_open and rid >= rec.warm_rid:
            rec.window_open = True
            rec.t_window = now
        if rec.prompt[rid] + cfg.max_output_tokens > cfg.kv_budget_tokens:
            self._reject(rid, t)
            return
        room = self._has_room(rid, t)
        if not room and cfg.queue_capacity is not None:
            waiting = len(self.fresh) - self.ahead[0]  # those with room do not count
            if waiting >= cfg.queue_capacity:
                self._reject(rid, t)
                return
        rec.enq_t[rid] = t
        rec.status[rid] = WAITING
        rec.queued[rid] = not room
        if room:
            a_batch, a_need, a_reserved = self.ahead
            p = rec.prompt[rid]
            self.ahead = [a_batch + 1, a_need + p + 1, a_reserved + p + cfg.max_output_tokens]
        else:
            self.blocked = True
        self.fresh.append(rid)

    _has_room = has_room
    _admit = admit
    _head_fits = head_fits
    _queue_prefills = queue_prefills

    def _due(self, now: float) -> bool:
        """Is an arrival or a queue time-out due at or before ``now``? (else
        :meth:`_events_until` would do nothing)"""
        heap, fresh, timeout = self.heap, self.fresh, self.cfg.queue_timeout_s
        return bool(heap and heap[0][0] <= now) or bool(
            fresh and timeout is not None and self.rec.enq_t[fresh[0]] + timeout <= now
        )

    def _events_until(
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
        heap, fresh, enq = self.heap, self.fresh, self.rec.enq_t
        timeout = self.cfg.queue_timeout_s
        self.room = room
        self.need_at = need_at
        while True:
            ta = heap[0][0] if heap else math.inf
            td = enq[fresh[0]] + timeout if (timeout is not None and fresh) else math.inf
            if ta > now and td > now:
                return
            if td <= ta:
                rid = fresh.popleft()
                self.rec.queued[rid] = True
                self._reject(rid, td)
            else:
                _, _, rid = heapq.heappop(heap)
                self._arrive(rid, ta, now)

    # -- the running batch ---------------------------------------------------

    def _join(self, rid: int) -> None:
        rec = self.rec
        self.running[rid] = None
        self.g_join[rid] = rec.gen[rid]
        self.G_join[rid] = self.G
        self.sum_base += rec.prompt[rid] + rec.gen[rid] - self.G
        self.fin_G[rid] = self.G + rec.output[rid] - rec.gen[rid]
        heapq.heappush(self.fin_heap, (self.fin_G[rid], rid))
        rec.status[rid] = RUNNING
        if rid >= rec.warm_rid:
            self.run_meas += 1

    def _leave(self, rid: int) -> None:
        rec = self.rec
        del self.running[rid]
        rec.gen[rid] = self.g_join[rid] + self.G - self.G_join[rid]
        self.sum_base -= rec.prompt[rid] + self.g_join[rid] - self.G_join[rid]
        self.fin_G[rid] = -1
        if rid >= rec.warm_rid:
            self.run_meas -= 1

    # -- main loop -----------------------------------------------------------

    def run(self) -> SimResult:
        """Run the event loop to the last completion (see the module docstring)."""
        self._start_all()
        now = 0.0
        heap, fresh, resume, running = self.heap, self.fresh, self.resume, self.running
        while True:
            if self._due(now):  # arrivals or time-outs
                need = self.sum_base + len(running) * self.G + self.pre_need
                self._events_until(now, (len(running) + self.pre_n, need, self.reserved))
            if not running and not fresh and not resume and not self.prefilling:
                if not heap:
                    break
                now = max(now, heap[0][0])
                continue
            in_window = self.rec.window_open
            admitted = self._admit(now)
            if self.cfg.chunk_tokens is not None:
                self._queue_prefills(admitted)
                if self.prefilling:
                    if admitted.swapped_in:
                        now += self._prefill(now, admitted, in_window)
                    now = self._mixed(now, in_window)
                    continue
            old_meas = self.run_meas
            t_prefill = 0.0
            if admitted.prefilled or admitted.swapped_in:
                t_prefill = self._prefill(now, admitted, in_window)
            now += t_prefill
            new_meas = self.run_meas - old_meas
            if admitted.swapped_in:
                new_meas -= sum(r >= self.rec.warm_rid for r in admitted.swapped_in)
            if running:
                now = self._decode(now, admitted, t_prefill, old_meas, new_meas, in_window)
        return summarise(self.rec, self.totals, self.cfg.kv_budget_tokens, self.hit_ratio())

    def _prefill(self, now: float, admitted: _Admission, in_window: bool) -> float:
        """One prefill step for what was admitted at ``now`` (swap-ins copied back with it):
        each prefilled request emits a token and joins the batch or completes. Its length [s]."""
        cfg, rec, totals = self.cfg, self.rec, self.totals
        kv_b = cfg.step.kv_bytes_per_token
        swap_in_bytes = 0.0
        for r in admitted.swapped_in:
            swap_in_bytes += kv_b * (rec.prompt[r] + rec.gen[r] - 1)
        t_swap = swap_in_bytes / cfg.swap_bandwidth_bytes_per_s
        t_prefill = self._prefill_s(admitted) + t_swap
        totals.swap_bytes += swap_in_bytes
        totals.swap_time += t_swap
        t1 = now + t_prefill
        batch = len(self.running) + len(admitted.prefilled) + len(admitted.swapped_in)
        if in_window:
            totals.busy += t_prefill
            totals.prefill_busy += t_prefill
            totals.conc_area += batch * t_prefill
            totals.tokens_window += len(admitted.prefilled)
        # arrivals during the prefill step saw the batch including the new requests
        if self._due(t1):
            need = self.sum_base + len(self.running) * self.G + admitted.need
            self._events_until(t1, (batch, need, self.reserved))
        for rid in admitted.prefilled:
            self._prefilled(rid, t1)
        for rid in admitted.swapped_in:
            self._join(rid)
        return t_prefill

    def _prefill_s(self, admitted: _Admission) -> float:
        """The prefill step's own time for what was admitted [s]: each prompt from its start
        (the shared prefix the step model counts added to its own tokens), skipping the
        tokens found in the prefix cache."""
        shared = int(self.step.shared_prefix_tokens)
        tokens = admitted.prefill_tokens
        if not shared and not any(self.cached[r] for r in admitted.prefilled):
            return self.step.prefill_batch_s(tokens)
        prompts = [shared + t for t in tokens]
        cached = [shared + self.cached[r] for r in admitted.prefilled]
        return self.step.prefill_batch_s(prompts, cached)

    def _prefilled(self, rid: int, t: float) -> None:
        """rid's prompt (or, resumed by recompute, its prompt and tokens so far) is prefilled
        at t: it emits a token, then joins the batch or completes."""
        rec = self.rec
        g = rec.gen[rid]
        if g == 0:
            rec.first_t[rid] = t
        elif rid >= rec.warm_rid:  # recompute resume: the gap since its last token
            self.totals.segments.append((t - rec.last_t[rid], 0.0, 1, 1))
        rec.gen[rid] = g + 1
        rec.last_t[rid] = t
        if g + 1 >= rec.output[rid]:
            self._complete(rid, t)
        else:
            self._join(rid)

    def _mixed(self, now: float, in_window: bool) -> float:
        """One step of chunked prefill: the running batch decodes a token each and the
        prompts waiting are prefilled, oldest first, with the rest of the step's tokens; those
        whose last chunk this was emit their first token. The time after it [s]."""
        cfg, totals = self.cfg, self.totals
        assert cfg.chunk_tokens is not None
        stall = 0.0
        if (
            cfg.admission != "reserve-max"
            and self.sum_base + len(self.running) * self.G + self.pre_need > cfg.kv_budget_tokens
        ):
            stall = self._preempt(now, [])
        B = len(self.running)
        ctx0 = self.sum_base + B * self.G
        # decodes first (k + 1 tokens each when verifying proposals); a prompt always moves
        left = max(cfg.chunk_tokens - B * self.verified, 1)
        chunks: list[tuple[list[int], int]] = []
        pieces: list[tuple[int, int]] = []  # (done, take) of each chunk
        shared = int(self.step.shared_prefix_tokens)  # done from the prompt's start
        for entry in self.prefilling:
            if left <= 0:
                break
            take = min(entry[1] - entry[2], left)
            chunks.append((entry, take))
            pieces.append((shared + entry[2], take))
            left -= take
        t_step, t_decode = mixed_and_decode_s(self.step, B, ctx0, pieces)
        if B:
            now = self._decode(
                now,
                _NOTHING,
                0.0,
                self.run_meas,
                0,
                in_window,
                extra_s=stall + t_step - t_decode,
            )
            if in_window:
                totals.prefill_busy += t_step - t_decode
        else:
            t1 = now + t_step
            if in_window:
                totals.busy += t_step
                totals.prefill_busy += t_step
            if self._due(t1):
                self._events_until(t1, (self.pre_n, self.pre_need, self.reserved))
            now = t1
        for entry, take in chunks:
            entry[2] += take
        while self.prefilling and self.prefilling[0][2] >= self.prefilling[0][1]:
            rid, tokens, _ = self.prefilling.popleft()
            self.pre_n -= 1
            self.pre_need -= tokens + 1
            if in_window:
                totals.tokens_window += 1
            self._prefilled(rid, now)
        return now

    def _preempt(self, now: float, swapped_in: list[int]) -> float:
        """current-length: preempt the latest admitted until the batch's next step fits the
        cache. The stall of swapping them out [s]."""
        cfg, rec, totals = self.cfg, self.rec, self.totals
        swap = cfg.preemption == "swap"
        stall = 0.0
        while (
            self.running
            and self.sum_base + len(self.running) * self.G + self.pre_need > cfg.kv_budget_tokens
        ):
            victim = next(reversed(self.running))
            self._leave(victim)
            totals.preemptions += 1
            rec.preempted[victim] += 1
            rec.status[victim] = PREEMPTED
            if victim not in swapped_in:
                rec.last_t[victim] = now
            self.resume.appendleft(victim)
            if swap:
                b = cfg.step.kv_bytes_per_token * (rec.prompt[victim] + rec.gen[victim] - 1)
                totals.swap_bytes += b
                stall += b / cfg.swap_bandwidth_bytes_per_s
        totals.swap_time += stall
        return stall

    def _steps(self, now: float, stall: float, run: _DecodeRun, ctx0: int) -> int:
        """How many decode steps to take at once: up to the next thing that could change the
        schedule (a completion, the cache filling up, an admission, a time-out, an arrival);
        ``ctx0`` is the batch's KV need now."""
        cfg = self.cfg
        B = len(self.running)
        fin_heap, fin_G = self.fin_heap, self.fin_G
        while fin_G[fin_heap[0][1]] != fin_heap[0][0]:
            heapq.heappop(fin_heap)  # stale entry of a preempted request
        n_max = fin_heap[0][0] - self.G
        if cfg.admission != "reserve-max":
            n_max = min(n_max, (cfg.kv_budget_tokens - ctx0) // B + 1)
        if self.max_jump is not None:
            n_max = min(n_max, self.max_jump)
        max_batch = cfg.max_batch if cfg.max_batch is not None else math.inf
        stop_t = math.inf
        if self.fresh or self.resume:
            head = self.resume[0] if self.resume else self.fresh[0]
            if self._head_fits(head, bool(self.resume), max_batch, ctx0):
                n_max = 1
            elif cfg.queue_timeout_s is not None and self.fresh:
                stop_t = self.rec.enq_t[self.fresh[0]] + cfg.queue_timeout_s
        elif self.heap and B < max_batch:
            stop_t = self.heap[0][0]
        if stop_t < math.inf and n_max > 1:
            return run.steps_to_reach(stop_t - now - stall, n_max)
        return n_max

    def _first_gaps(
        self,
        now: float,
        t0: float,
        admitted: _Admission,
        t_prefill: float,
        old_meas: int,
        new_meas: int,
    ) -> None:
        """The gaps of a decode step of ``t0`` [s] right after a prefill of ``t_prefill`` [s]:
        the measured requests that ran before it waited for both, those it prefilled for the
        step alone, and a request swapped back in since its last token before the swap."""
        seg, rec = self.totals.segments.append, self.rec
        if old_meas > 0:
            seg((t_prefill + t0, 0.0, 1, old_meas))
        if new_meas > 0:
            seg((t0, 0.0, 1, new_meas))
        for rid in admitted.swapped_in:
            if rid >= rec.warm_rid and rid in self.running:
                seg((now + t0 - rec.last_t[rid], 0.0, 1, 1))

    def _decode(
        self,
        now: float,
        admitted: _Admission,
        t_prefill: float,
        old_meas: int,
        new_meas: int,
        in_window: bool,
        extra_s: float | None = None,
    ) -> float:
        """Decode steps of the running batch, several at once; the time after them [s].
        ``extra_s``: one step only, that much longer (the prompts chunked into it)."""
        if self.spec_rng is not None:  # speculative decoding: one verifying step
            return verify(self, now, admitted.swapped_in, in_window, extra_s)
        cfg, rec, totals = self.cfg, self.rec, self.totals
        seg = totals.segments.append
        B = len(self.running)
        ctx0 = self.sum_base + B * self.G
        stall = 0.0
        if cfg.admission != "reserve-max" and ctx0 + self.pre_need > cfg.kv_budget_tokens:
            stall = self._preempt(now, admitted.swapped_in)
            B = len(self.running)
        ctx0 = self.sum_base + B * self.G
        run = _DecodeRun.of(self.step, B, ctx0)
        n = 1 if extra_s is not None else self._steps(now, stall, run, ctx0)
        t0 = stall + run.step_s(0) + (extra_s or 0.0)
        total = stall + run.total_s(0, n) + (extra_s or 0.0)
        # ITL: first step (gaps differ after a prefill stall), then the rest
        if admitted.prefilled or admitted.swapped_in:
            self._first_gaps(now, t0, admitted, t_prefill, old_meas, new_meas)
        elif self.run_meas > 0:
            seg((t0, 0.0, 1, self.run_meas))
        if self.run_meas > 0 and n > 1:
            for a, b_, c_ in run.pieces(1, n):
                seg((a, b_, c_, self.run_meas))
        totals.peak_used = max(totals.peak_used, ctx0 + B * (n - 1))
        if cfg.admission != "reserve-max":
            totals.peak_reserved = totals.peak_used
        if in_window:
            totals.busy += total
            totals.conc_area += B * total
            totals.kv_area += (ctx0 + B * (n - 1) / 2.0) * total
            totals.tokens_window += B * n
        now += total
        self.G += n
        # arrivals during these steps saw the batch before its completions
        if self._due(now):
            t_steps = now - total + stall

            def need_at(t: float) -> int:
                return ctx0 + B * run.steps_to_reach(t - t_steps, n) + self.pre_need

            room = (B + self.pre_n, ctx0 + B * n + self.pre_need, self.reserved)
            self._events_until(now, room, need_at)
        if self.lru is not None:  # the batch's grown cache takes room from the prefix cache
            fit(self)
        fin_heap = self.fin_heap
        while fin_heap and fin_heap[0][0] <= self.G:
            fg, rid = heapq.heappop(fin_heap)
            if self.fin_G[rid] != fg:
                continue
            self._leave(rid)
            rec.last_t[rid] = now
            self._complete(rid, now)
        return now


def simulate(cfg: SimConfig, reference: bool = False) -> SimResult:
    """Simulate one replica serving ``cfg``'s workload; see the module docstring.

    ``reserve-max`` admission with chunked prefill (the shipped engines' and most runs') runs
    on a loop of its own (:mod:`planner.serving.reserved`), everything else on
    :class:`_Replica`, both with step times looked up where they depend on integers alone.
    Speculative decoding (the step model's ``speculative_tokens`` > 0) always runs on
    :class:`_Replica`, one verifying step at a time (:mod:`planner.serving.speculation`):
    its sequences advance by different counts of tokens, which the fast loop's shared clock
    cannot follow; so does prefix caching by a least-recently-used cache of blocks
    (:mod:`planner.serving.blockcache`).
    ``reference``: run :class:`_Replica` with every step time computed by the step model's
    plain calls; the result is the same to the last bit (a check for tests and benchmarks,
    tests/test_simulate_equal.py)."""
    if (
        not reference
        and cfg.chunk_tokens is not None
        and cfg.admission == "reserve-max"
        and not cfg.step.speculative_tokens
        and cfg.prefix_cache is None
    ):
        return simulate_reserved_chunked(cfg, step_table(cfg.step))
    return _Replica(cfg, reference=reference).run()
