"""The clients' side of a simulated replica (:mod:`planner.serving.simulate`): tasks started,
requests sent after their preprocessing, rejected and completed, and what each of these writes
down. Both of the simulation's loops (:class:`planner.serving.simulate._Replica` and
:class:`planner.serving.reserved._ReservedChunked`) are clients of this kind.
"""

from __future__ import annotations

import heapq
import math

from planner.serving.statistics import DONE, REJECTED, Records, Totals, _rngs
from planner.serving.traffic import SimConfig, request_delays, request_lengths, request_prefixes


class _Clients:
    """The requests of one run and the clients sending them: their lengths and delays
    (:class:`Records`), the tasks' start times (open loop), and the heap of requests on their
    way to the scheduler queue, ``(time it reaches the queue [s], sequence, request)``."""

    __slots__ = (
        "cached",
        "cfg",
        "closed",
        "heap",
        "next_task",
        "rec",
        "seq",
        "task_times",
        "totals",
    )

    def __init__(self, cfg: SimConfig) -> None:
        self.cfg = cfg
        prompt, output, n_tasks = request_lengths(cfg)
        # a request's own prompt tokens (the shared prefix is the pool's) and, of them, the
        # ones found in the prefix cache, which its prefill starts after
        prompt, self.cached = request_prefixes(cfg, prompt)
        rpt = cfg.requests_per_task
        warm = int(math.floor(cfg.warmup_fraction * n_tasks)) * rpt
        self.rec = Records(prompt, output, n_tasks, rpt, warm, *request_delays(cfg, len(prompt)))
        self.closed = cfg.arrivals.kind == "closed"
        self.task_times: list[float] = []
        if not self.closed:
            self.task_times = cfg.arrivals.start_times_s(_rngs(cfg.seed)[0], n_tasks).tolist()
        self.next_task = 0
        self.seq = 0
        self.heap: list[tuple[float, int, int]] = []
        self.totals = Totals()

    def hit_ratio(self) -> float:
        """Share of the measured admitted requests' prompt tokens found in the prefix cache,
        the shared prefix counted in both [-] (0 with none admitted)."""
        rec, shared = self.rec, int(self.cfg.step.shared_prefix_tokens)
        found = total = 0
        for rid in range(rec.warm_rid, len(rec.prompt)):
            if rec.admit_t[rid] == rec.admit_t[rid]:  # admitted (not NaN)
                found += shared + self.cached[rid]
                total += shared + rec.prompt[rid]
        return found / total if total else 0.0

    def _start_all(self) -> None:
        """Start the first tasks: every user's at t = 0 (closed loop), else every task's."""
        if self.closed:
            for _ in range(min(self.cfg.arrivals.concurrency, self.rec.n_tasks)):
                self._start_task(0.0)
        else:
            for t in self.task_times:
                self._start_task(t)

    def _issue(self, rid: int, t_send: float) -> None:
        """Send request rid at t_send; it reaches the queue after preprocessing."""
        rec = self.rec
        rec.send_t[rid] = t_send
        rec.issued += 1
        self.seq += 1
        heapq.heappush(self.heap, (t_send + rec.preprocess[rid], self.seq, rid))

    def _start_task(self, t: float) -> None:
        """Start the next task (if any remain) at time t [s]."""
        if self.next_task >= self.rec.n_tasks:
            return
        tid = self.next_task
        self.next_task += 1
        self.rec.task_send[tid] = t
        self._issue(tid * self.rec.rpt, t)

    def _reject(self, rid: int, t: float) -> None:
        """Reject rid at time t; its task fails."""
        self.rec.status[rid] = REJECTED
        if self.closed:
            self._start_task(t + self.cfg.reject_backoff_s)

    def _respond(self, rid: int, t: float) -> None:
        """The server finished rid at t: the client receives it after the network, then sends
        its task's next request after the tool time, or ends the task (closed loop: and starts
        its next)."""
        rec = self.rec
        rec.status[rid] = DONE
        rec.done_t[rid] = t
        rec.last_completion = t
        if rec.window_open:
            rec.completions_in_window += 1
        t_recv = t + rec.network[rid]
        if (rid + 1) % rec.rpt:
            self._issue(rid + 1, t_recv + self.cfg.tool_time_s)
        else:
            rec.task_done[rid // rec.rpt] = t_recv
            if self.closed:
                self._start_task(t_recv)
