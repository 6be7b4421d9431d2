"""Admission in the serving simulation (:mod:`planner.serving.simulate`): which waiting requests a
scheduling point admits (FIFO with head-of-line blocking, preempted requests first), whether an
arrival finds room, and whether the queue's head would be admitted at the next step boundary.
The rules are the module docstring's of :mod:`planner.serving.simulate`; these functions are
the replica's methods (``_Replica._admit`` and the like), kept here by what they do.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from planner.serving.simulate import _Replica


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


def has_room(replica: _Replica, rid: int, t: float) -> bool:
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


def admit(replica: _Replica, now: float) -> _Admission:
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
            out.prefilled.append(rid)
            out.prefill_tokens.append(p)
        if reserve_max:
            replica.reserved += p + cfg.max_output_tokens
            totals.peak_reserved = max(totals.peak_reserved, replica.reserved)
    replica.blocked = bool(fresh or resume)
    replica.ahead = [0, 0, 0]
    return out


def head_fits(replica: _Replica, rid: int, from_resume: bool, max_batch: float, need: int) -> bool:
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
