"""Admission in the serving simulation (:mod:`planner.serving.simulate`): the replica's state
(:class:`_ReplicaState`), which waiting requests a scheduling point admits (FIFO with
head-of-line blocking, preempted requests first) and queues for chunked prefill, whether an
arrival finds room, and whether the queue's head would be admitted at the next step boundary.
The rules are the module docstring's of :mod:`planner.serving.simulate`; these functions are
the replica's methods (``_Replica._admit`` and the like), kept here by what they do.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable

from planner.serving.blockcache import BlockCache, fit, lookup
from planner.serving.clients import _Clients
from planner.serving.speculation import acceptance_rng
from planner.serving.steps import StepModel, step_table
from planner.serving.traffic import SimConfig


class _ReplicaState(_Clients):
    """The state of one run of :class:`planner.serving.simulate._Replica`: its queues, its
    running batch on the decode clock ``G``, its reservations and what arrivals find."""

    def __init__(
        self, cfg: SimConfig, max_jump: int | None = None, reference: bool = False
    ) -> None:
        super().__init__(cfg)
        self.max_jump = max_jump  # tests only: cap on decode steps per iteration
        # step times: looked up where they depend on integers alone, or (reference) computed
        # each time by the step model's plain calls; the same numbers either way
        self.step: StepModel = cfg.step if reference else step_table(cfg.step)
        n = len(self.rec.prompt)
        self.g_join = [0] * n
        self.G_join = [0] * n
        self.fin_G = [-1] * n
        self.fresh: deque[int] = deque()
        self.resume: deque[int] = deque()
        # the running batch (insertion order = admission order) and its decode clock
        self.running: dict[int, None] = {}
        self.fin_heap: list[tuple[int, int]] = []  # (clock at which it finishes, rid)
        self.G = 0
        self.sum_base = 0  # sum over running of P + g_join - G_join; need = sum_base + B*G
        self.reserved = 0  # reserve-max: tokens promised to the running batch
        self.run_meas = 0  # running requests that are measured (not warm-up)
        # for the "queued" flag: replica state while arrivals happen, what arrivals
        # not yet admitted but with room will take, and whether a blocked request waits
        self.room = (0, 0, 0)  # (running sequences, KV need [tokens], reserved [tokens])
        self.ahead = [0, 0, 0]
        self.blocked = False
        self.need_at: Callable[[float], int] | None = None
        # chunked prefill: admitted requests still prefilling, [rid, tokens, done], and the
        # sequences and next-step KV need [tokens] they hold (0 without chunking)
        self.prefilling: deque[list[int]] = deque()
        self.pre_n = 0
        self.pre_need = 0
        # speculative decoding: the acceptance draws' own generator (None without speculation)
        self.spec_rng = acceptance_rng(cfg.seed) if cfg.step.speculative_tokens > 0 else None
        self.verified = int(cfg.step.speculative_tokens) + 1  # tokens a sequence runs a step
        # prefix caching by a least-recently-used cache of blocks (None: the planned ratio)
        self.lru = BlockCache(cfg.kv_block_tokens) if cfg.prefix_cache is not None else None


class _Admission:
    """What one scheduling point admits: requests to prefill (fresh, or resumed by recompute)
    with the tokens each prefills, requests swapped back in, and the KV they add [tokens]."""

    __slots__ = ("need", "prefill_tokens", "prefilled", "swapped_in")

    def __init__(self) -> None:
        self.prefilled: list[int] = []
        self.prefill_tokens: list[int] = []
        self.swapped_in: list[int] = []
        self.need = 0


_NOTHING = _Admission()
"""What a scheduling point with nobody waiting admits (never changed)."""


def has_room(replica: _ReplicaState, rid: int, t: float) -> bool:
    """Could rid, arriving at t, be admitted at the next step boundary?

    Uses the replica state in ``replica.room`` (the KV need at that boundary
    from ``replica.need_at`` during a multi-step jump) plus what earlier
    arrivals that had room will take (``replica.ahead``).  False if a request
    that had no room waits ahead of it, the batch is full or its KV need
    does not fit (same rules as admission).
    """
    if replica.blocked or replica.resume:  # preempted requests wait ahead of everyone
        return False
    cfg = replica.cfg
    batch, need, reserved = replica.room
    if replica.need_at is not None:
        need = replica.need_at(t)
    a_batch, a_need, a_reserved = replica.ahead
    p = replica.rec.prompt[rid]
    fits = cfg.max_batch is None or batch + a_batch < cfg.max_batch
    if cfg.admission == "reserve-max":
        total = reserved + a_reserved + p + cfg.max_output_tokens
        fits = fits and total <= cfg.kv_budget_tokens
    else:
        fits = fits and need + a_need + p + 1 <= cfg.kv_budget_tokens
    return fits


def admit(replica: _ReplicaState, now: float) -> _Admission:
    """Admit waiting requests FIFO with head-of-line blocking, preempted ones first."""
    cfg, rec, totals = replica.cfg, replica.rec, replica.totals
    reserve_max = cfg.admission == "reserve-max"
    swap = cfg.preemption == "swap"
    max_batch = cfg.max_batch if cfg.max_batch is not None else math.inf
    fresh, resume = replica.fresh, replica.resume
    if not fresh and not resume:  # nothing waits (most steps): nothing to admit
        replica.blocked = False
        replica.ahead = [0, 0, 0]
        return _NOTHING
    out = _Admission()
    batch = len(replica.running) + replica.pre_n
    need_now = replica.sum_base + len(replica.running) * replica.G + replica.pre_need
    while resume or fresh:
        from_resume = bool(resume)
        rid = resume[0] if from_resume else fresh[0]
        batch += 1
        if batch > max_batch:
            break
        p = rec.prompt[rid]
        if reserve_max:
            if replica.reserved + p + cfg.max_output_tokens > cfg.kv_budget_tokens:
                break
        else:
            g_next = rec.gen[rid] + (0 if (from_resume and swap) else 1)
            if need_now + out.need + p + g_next > cfg.kv_budget_tokens:
                break
            out.need += p + g_next
        if from_resume:
            resume.popleft()
            if swap:
                out.swapped_in.append(rid)
            else:
                out.prefilled.append(rid)
                out.prefill_tokens.append(p + rec.gen[rid])
                totals.recomputed += p + rec.gen[rid]
        else:
            fresh.popleft()
            rec.admit_t[rid] = now
            if replica.lru is not None:  # what the cache holds of its prompt now
                replica.cached[rid] = lookup(replica, rid)
            out.prefilled.append(rid)
            out.prefill_tokens.append(p)
        if reserve_max:
            replica.reserved += p + cfg.max_output_tokens
            totals.peak_reserved = max(totals.peak_reserved, replica.reserved)
    replica.blocked = bool(fresh or resume)
    replica.ahead = [0, 0, 0]
    if replica.lru is not None:  # the admitted take room from the cache
        fit(replica)
    return out


def head_fits(
    replica: _ReplicaState, rid: int, from_resume: bool, max_batch: float, need: int
) -> bool:
    """Would the queue head be admitted at the next step boundary? (nothing else changes;
    ``need`` is the batch's KV need now)."""
    cfg = replica.cfg
    if len(replica.running) + replica.pre_n + 1 > max_batch:
        return False
    p = replica.rec.prompt[rid]
    if cfg.admission == "reserve-max":
        return replica.reserved + p + cfg.max_output_tokens <= cfg.kv_budget_tokens
    # after one more decode step every running request needs one more token
    g_next = replica.rec.gen[rid] + (0 if (from_resume and cfg.preemption == "swap") else 1)
    return need + replica.pre_need + len(replica.running) + p + g_next <= cfg.kv_budget_tokens


def queue_prefills(replica: _ReplicaState, admitted: _Admission) -> None:
    """Chunked prefill: what was admitted waits to be prefilled chunk by chunk, holding its
    place in the batch and the cache it will need for its first decode step: its prefill
    tokens and the one it then emits, as admission counted it (swap resumes are copied
    back whole, never queued here)."""
    if not admitted.prefilled:
        return
    for rid, tokens in zip(admitted.prefilled, admitted.prefill_tokens, strict=True):
        # its tokens found in the prefix cache count as prefilled already
        replica.prefilling.append([rid, tokens, replica.cached[rid]])
        replica.pre_n += 1
        replica.pre_need += tokens + 1
    admitted.prefilled.clear()
    admitted.prefill_tokens.clear()
