"""Chunked prefill in the serving simulation (:mod:`planner.serving.simulate`): admitted prompts
wait in a prefill queue and every step carries the running batch's decodes plus, oldest first,
chunks of the waiting prompts (as vLLM V1 schedules). These functions are the replica's methods
(``_Replica._queue_prefills``, ``_Replica._mixed``), kept here by what they do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.serving.admission import _NOTHING, _Admission

if TYPE_CHECKING:
    from planner.serving.simulate import _Replica


def queue_prefills(replica: _Replica, admitted: _Admission) -> None:
    """Chunked prefill: what was admitted waits to be prefilled chunk by chunk, holding its
    place in the batch and the cache it will need for its first decode step: its prefill
    tokens and the one it then emits, as admission counted it (swap resumes are copied
    back whole, never queued here)."""
    if not admitted.prefilled:
        return
    for rid, tokens in zip(admitted.prefilled, admitted.prefill_tokens, strict=True):
        replica.prefilling.append([rid, tokens, 0])
        replica.pre_n += 1
        replica.pre_need += tokens + 1
    admitted.prefilled.clear()
    admitted.prefill_tokens.clear()


def mixed(replica: _Replica, now: float, in_window: bool) -> float:
    """One step of chunked prefill: the running batch decodes a token each and the
    prompts waiting are prefilled, oldest first, with the rest of the step's tokens; those
    whose last chunk this was emit their first token. The time after it [s]."""
    cfg, totals = replica.cfg, replica.totals
    assert cfg.chunk_tokens is not None
    stall = 0.0
    if (
        cfg.admission != "reserve-max"
        and replica.sum_base + len(replica.running) * replica.G + replica.pre_need
        > cfg.kv_budget_tokens
    ):
        stall = replica._preempt(now, [])
    B = len(replica.running)
    ctx0 = replica.sum_base + B * replica.G
    left = max(cfg.chunk_tokens - B, 1)  # decodes first; a prompt always moves
    chunks: list[tuple[list[int], int]] = []
    pieces: list[tuple[int, int]] = []  # (done, take) of each chunk
    for entry in replica.prefilling:
        if left <= 0:
            break
        take = min(entry[1] - entry[2], left)
        chunks.append((entry, take))
        pieces.append((entry[2], take))
        left -= take
    t_step = replica.step.mixed_step_s(B, ctx0, pieces)
    if B:
        t_decode = replica.step.decode_step_s(B, ctx0)
        now = replica._decode(
            now,
            _NOTHING,
            0.0,
            replica.run_meas,
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
        if replica._due(t1):
            replica._events_until(t1, (replica.pre_n, replica.pre_need, replica.reserved))
        now = t1
    for entry, take in chunks:
        entry[2] += take
    while replica.prefilling and replica.prefilling[0][2] >= replica.prefilling[0][1]:
        rid, tokens, _ = replica.prefilling.popleft()
        replica.pre_n -= 1
        replica.pre_need -= tokens + 1
        if in_window:
            totals.tokens_window += 1
        replica._prefilled(rid, now)
    return now
