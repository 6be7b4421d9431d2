"""The serving simulation's loop for its most common runs: admission that reserves each request's
maximum length (``reserve-max``) with chunked prefill. It takes the steps
:class:`planner.serving.simulate._Replica` takes, in the same order and with the same step times
(the :class:`StepTable`'s), so every figure it reports is the same number to the last bit
(tests/test_simulate_equal.py); it only does less work per step to get there.

Under ``reserve-max`` nothing is ever preempted, so this loop keeps no resume queue, no swaps and
no request's tokens so far (a request leaves the batch only when it completes, having joined it
with its first token), and no KV need of the batch: admission and the room an arrival finds are
decided by the reservations alone. The running batch is a count, with the sum of its requests'
base contexts, and a heap of the decode clock at which each completes; the loop's own state is in
local variables, and what happens once a request (an arrival, a completion) in methods.
"""

from __future__ import annotations

import heapq
import math
from collections import deque

from planner.serving.clients import _Clients
from planner.serving.statistics import WAITING, SimResult, summarise
from planner.serving.steps import StepTable, steps_to_reach
from planner.serving.traffic import SimConfig

#: The end of a heap: later than anything (a completion's decode clock, an arrival's time).
_NEVER = 1 << 62


class _ReservedChunked(_Clients):
    """State of one run; use :func:`simulate_reserved_chunked`. The heaps of arrivals and of
    completions each end with an entry that never comes (``math.inf``, :data:`_NEVER`), so the
    loop reads their heads without asking whether they are empty."""

    __slots__ = (
        "ahead_n",
        "ahead_reserved",
        "blocked",
        "chunk",
        "fin_heap",
        "fresh",
        "joined",
        "max_batch",
        "shared",
        "table",
        "timeout",
    )

    def __init__(self, cfg: SimConfig, table: StepTable) -> None:
        super().__init__(cfg)
        self.table = table
        self.chunk: int = cfg.chunk_tokens  # type: ignore[assignment]
        shared = int(table.shared_prefix_tokens)  # a chunk's done counts from the prompt's start
        self.shared = shared
        table.remember_prefill_flops([shared + p for p in self.rec.prompt])
        self.max_batch = cfg.max_batch if cfg.max_batch is not None else math.inf
        self.timeout = cfg.queue_timeout_s if cfg.queue_timeout_s is not None else math.inf
        self.fresh: deque[int] = deque()
        self.heap.append((math.inf, 0, -1))
        self.fin_heap: list[tuple[int, int]] = [(_NEVER, -1)]  # (clock when it completes, rid)
        self.joined = [0] * len(self.rec.prompt)  # decode clock at which it joined the batch
        # an arrival's room: whether one without room waits, and what those with room will take
        self.blocked = False
        self.ahead_n = 0
        self.ahead_reserved = 0

    def _events(self, now: float, batch: int, reserved: int) -> None:
        """Arrivals and queue time-outs up to ``now``, in time order (``batch`` sequences and
        ``reserved`` tokens held while they happened): an arrival is rejected when it can never
        fit or finds the queue full, else it waits, with room (it would be admitted at the next
        step boundary) or not."""
        cfg, rec, heap, fresh = self.cfg, self.rec, self.heap, self.fresh
        enq, timeout, budget = rec.enq_t, self.timeout, cfg.kv_budget_tokens
        reserve, max_batch, capacity = cfg.max_output_tokens, self.max_batch, cfg.queue_capacity
        while True:
            ta = heap[0][0]
            td = enq[fresh[0]] + timeout if fresh else math.inf
            if ta > now and td > now:
                return
            if td <= ta:
                rid = fresh.popleft()
                rec.queued[rid] = True
                self._reject(rid, td)
                continue
            rid = heapq.heappop(heap)[2]
            if not rec.window_open and rid >= rec.warm_rid:
                rec.window_open = True
                rec.t_window = now
            p = rec.prompt[rid]
            if p + reserve > budget:
                self._reject(rid, ta)
                continue
            room = (
                not self.blocked
                and batch + self.ahead_n < max_batch
                and reserved + self.ahead_reserved + p + reserve <= budget
            )
            if not room and capacity is not None and len(fresh) - self.ahead_n >= capacity:
                self._reject(rid, ta)
                continue
            enq[rid] = ta
            rec.status[rid] = WAITING
            rec.queued[rid] = not room
            if room:
                self.ahead_n += 1
                self.ahead_reserved += p + reserve
            else:
                self.blocked = True
            fresh.append(rid)

    def _admit(self, now: float, batch: int, reserved: int, pre: deque[list[int]]) -> int:
        """Admit waiting requests FIFO with head-of-line blocking into the prefill queue
        ``pre``, ``[rid, prompt tokens, tokens prefilled]``; the tokens reserved after [tokens]."""
        cfg, rec, totals = self.cfg, self.rec, self.totals
        fresh, budget, reserve = self.fresh, cfg.kv_budget_tokens, cfg.max_output_tokens
        max_batch = self.max_batch
        while fresh:
            rid = fresh[0]
            batch += 1
            p = rec.prompt[rid]
            if batch > max_batch or reserved + p + reserve > budget:
                break
            fresh.popleft()
            rec.admit_t[rid] = now
            pre.append([rid, p, self.cached[rid]])  # its cached tokens count as prefilled
            reserved += p + reserve
            if reserved > totals.peak_reserved:
                totals.peak_reserved = reserved
        self.blocked = bool(fresh)
        return reserved

    def _mixed(
        self, now: float, in_window: bool, pre: deque[list[int]], batch: int, ctx0: int, meas: int
    ) -> float:
        """One step of chunked prefill: the running batch (``batch`` sequences holding ``ctx0``
        tokens, ``meas`` of them measured) decodes a token each and the prompts waiting are
        prefilled, oldest first, with the rest of the step's tokens. The time after it [s]."""
        left = self.chunk - batch
        if left < 1:
            left = 1  # decodes first; a prompt always moves
        pieces = []  # (done, take) of each chunk
        shared = self.shared
        for entry in pre:
            if left <= 0:
                break
            take = entry[1] - entry[2]
            if take > left:
                take = left
            pieces.append((shared + entry[2], take))
            entry[2] += take
            left -= take
        totals = self.totals
        if not batch:
            t_step = self.table.mixed_times(0, ctx0, pieces)[0]
            if in_window:
                totals.busy += t_step
                totals.prefill_busy += t_step
            return now + t_step
        t_step, t_decode, first = self.table.mixed_times(batch, ctx0, pieces)
        total = first + (t_step - t_decode)
        if meas > 0:
            totals.segments.append((total, 0.0, 1, meas))
        if ctx0 > totals.peak_used:
            totals.peak_used = ctx0
        if in_window:
            totals.busy += total
            totals.conc_area += batch * total
            totals.kv_area += (ctx0 + batch * 0 / 2.0) * total
            totals.tokens_window += batch
            totals.prefill_busy += t_step - t_decode
        return now + total

    def _jump(
        self, now: float, in_window: bool, n: int, batch: int, ctx0: int, meas: int, reserved: int
    ) -> tuple[float, int]:
        """Decode steps of the running batch, up to ``n`` at once: up to the next thing that
        could change the schedule (an admission or time-out of the queue's head, an arrival;
        ``n`` ends at the next completion). ``reserved``: the tokens reserved [tokens]; the
        rest as :meth:`_mixed`'s. The time after them [s] and the steps taken."""
        cfg, fresh = self.cfg, self.fresh
        first, beta = self.table.decode_run(batch, ctx0)
        if fresh:
            p = self.rec.prompt[fresh[0]]
            if (
                batch < self.max_batch
                and reserved + p + cfg.max_output_tokens <= cfg.kv_budget_tokens
            ):
                n = 1
            elif n > 1:
                n = steps_to_reach(first, beta, self.rec.enq_t[fresh[0]] + self.timeout - now, n)
        elif n > 1 and batch < self.max_batch:
            n = steps_to_reach(first, beta, self.heap[0][0] - now, n)
        total = n * first + beta * (n * (n - 1)) / 2.0  # _DecodeRun.total_s(0, n)
        totals = self.totals
        if meas > 0:
            totals.segments.append((first, 0.0, 1, meas))
            if n > 1:
                totals.segments.append((first + beta, beta, n - 1, meas))
        used = ctx0 + batch * (n - 1)
        if used > totals.peak_used:
            totals.peak_used = used
        if in_window:
            totals.busy += total
            totals.conc_area += batch * total
            totals.kv_area += (ctx0 + batch * (n - 1) / 2.0) * total
            totals.tokens_window += batch * n
        return now + total, n

    def _leave_and_join(
        self,
        now: float,
        clock: int,
        in_window: bool,
        pre: deque[list[int]],
        state: tuple[int, int, int, int],
    ) -> tuple[int, int, int, int]:
        """After a step ending at ``now`` (decode clock ``clock``) and the arrivals during it:
        the running requests whose last token it was leave, then the prompts whose last chunk
        it was emit their first token and join the batch (or complete). ``state``: (batch, sum
        of its base contexts, reserved tokens, measured running), before and after."""
        batch, sum_base, reserved, meas = state
        rec, fin_heap, joined = self.rec, self.fin_heap, self.joined
        prompt, output, warm = rec.prompt, rec.output, rec.warm_rid
        reserve = self.cfg.max_output_tokens
        while fin_heap[0][0] <= clock:
            rid = heapq.heappop(fin_heap)[1]
            batch -= 1
            sum_base -= prompt[rid] + 1 - joined[rid]
            if rid >= warm:
                meas -= 1
            reserved -= prompt[rid] + reserve
            self._respond(rid, now)
        while pre and pre[0][2] >= pre[0][1]:
            rid = pre.popleft()[0]
            if in_window:
                self.totals.tokens_window += 1
            rec.first_t[rid] = now
            if output[rid] <= 1:
                reserved -= prompt[rid] + reserve
                self._respond(rid, now)
                continue
            batch += 1
            sum_base += prompt[rid] + 1 - clock
            joined[rid] = clock
            heapq.heappush(fin_heap, (clock + output[rid] - 1, rid))
            if rid >= warm:
                meas += 1
        return batch, sum_base, reserved, meas

    def run(self) -> SimResult:
        """Run the event loop to the last completion (the steps of ``_Replica.run``)."""
        self._start_all()
        cfg, rec, heap, fresh, fin_heap = self.cfg, self.rec, self.heap, self.fresh, self.fin_heap
        timeout, enq = self.timeout, rec.enq_t
        pre: deque[list[int]] = deque()  # admitted, prefilling: [rid, prompt tokens, done]
        batch = clock = sum_base = reserved = meas = 0
        now = 0.0
        while True:
            if heap[0][0] <= now or (fresh and enq[fresh[0]] + timeout <= now):
                self._events(now, batch + len(pre), reserved)
            if not batch and not fresh and not pre:
                if len(heap) == 1:
                    break
                now = max(now, heap[0][0])
                continue
            in_window = rec.window_open
            if fresh:
                reserved = self._admit(now, batch + len(pre), reserved, pre)
            else:
                self.blocked = False
            self.ahead_n = self.ahead_reserved = 0
            if pre:
                now = self._mixed(now, in_window, pre, batch, sum_base + batch * clock, meas)
                clock += 1 if batch else 0
            elif batch:
                ctx0 = sum_base + batch * clock
                now, n = self._jump(
                    now, in_window, fin_heap[0][0] - clock, batch, ctx0, meas, reserved
                )
                clock += n
            else:
                continue
            # the arrivals and time-outs during the step saw the batch as it was
            if heap[0][0] <= now or (fresh and enq[fresh[0]] + timeout <= now):
                self._events(now, batch + len(pre), reserved)
            if fin_heap[0][0] <= clock or (pre and pre[0][2] >= pre[0][1]):
                state = (batch, sum_base, reserved, meas)
                batch, sum_base, reserved, meas = self._leave_and_join(
                    now, clock, in_window, pre, state
                )
        return summarise(rec, self.totals, cfg.kv_budget_tokens, self.hit_ratio())


def simulate_reserved_chunked(cfg: SimConfig, table: StepTable) -> SimResult:
    """Simulate ``cfg`` (``reserve-max`` admission, chunked prefill) with the step times of
    ``table``: :func:`planner.serving.simulate.simulate`'s result, to the last bit."""
    return _ReservedChunked(cfg, table).run()
