"""Speculative decoding in the serving simulation, by the closed form's rule
(:mod:`planner.model.speculative`).

A decode step with k proposals per sequence is a verifying step: it reads the weights the
batch's B × (k + 1) tokens touch and every sequence's cache, writes the k proposed positions'
keys and values (:func:`speculative.verify_kv_write_bytes_per_sequence_step`), multiplies and
all-reduces k + 1 tokens per sequence, and waits for the proposer's k forwards
(:func:`speculative.draft_s`); its time is :func:`latency.itl_s` with k + 1 verified tokens and
1 token per step, i.e. the step itself. Each sequence then gains 1 + its accepted proposals:
the leading successes of k independent draws each accepted with probability α, capped at the
tokens it has left to emit (one geometric draw per sequence, the same distribution).

The draws come from a generator of their own (a child of the run's seed the arrival, length and
delay generators never use), so a run without speculation keeps its random streams bit for bit.
Sequences no longer advance in step, so the simulation takes one step at a time
(:func:`verify`), on :class:`planner.serving.simulate._Replica`'s loop.

*What the inter-token latency is.* A verifying step delivers a sequence's tokens in one burst.
The simulation counts a burst of m tokens after a gap of t seconds as m gaps of t ÷ m: the time
per output token, token-weighted, so the pooled mean gap is the time ÷ the tokens, which is the
closed form's ``itl_s`` (the verifying step ÷ the tokens a step emits), and the ITL percentiles
and the targets they meet are in the same unit with and without speculation. The gap between
bursts, one verifying step, is longer by the burst's size; it is not what the ITL figures say.
The percentiles still see the bursts: a burst of one token (the first proposal rejected, a
share 1 − α of the steps) is a whole step, and those tokens are (1 − α) ÷ the tokens a step
emits of all, 0.3 ÷ 2.533 = 12 % at k = 3 and α = 0.7, so the p95 is then a whole verifying
step while the mean is the closed form's ``itl_s``; TPOT (a request's mean) stays near the
mean.

*Chunked prefill.* A step that carries prompt chunks beside the verifying batch takes the
verifying step plus what the chunks add to a plain step (:meth:`StepModel.mixed_step_s` less
:meth:`StepModel.decode_step_s`), and the batch's k + 1 tokens a sequence come out of the
step's token budget first.

*What the pool holds.* A sequence's accepted tokens join its cache at the step's end; the k
proposed positions written during the step are not reserved beforehand (an engine's lookahead
slots), a difference of k tokens per sequence.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any

import numpy as np

from planner.model import latency, speculative
from planner.serving.blockcache import fit

if TYPE_CHECKING:
    from planner.serving.steps import StepModel


def verify_step_s(step: StepModel, batch: float, context_tokens_total: float) -> float:
    """Time of one verifying step of ``batch`` sequences reading ``context_tokens_total``
    cached tokens of their own (and each the shared prefix) [s]: :func:`latency.itl_s` of the
    step's memory (weights touched by B × (k + 1) tokens, the caches, the k proposed positions'
    writes), arithmetic (k + 1 tokens per sequence, then the caches), all-reduce of k + 1 tokens
    per sequence, overheads and the proposer's :func:`speculative.draft_s` at the batch, over
    1 token (the step itself)."""
    k = step.speculative_tokens
    verified = speculative.verify_tokens_per_sequence(k)
    kv = step.kv_bytes_per_token
    held = step.held_tokens(batch, context_tokens_total)
    per_sequence_read = kv * held / batch
    decoder = step.weight_bytes - step.encoder_bytes
    weights = decoder
    if step.routed_expert_bytes > 0.0:
        touched = latency.experts_touched_fraction(
            step.experts, step.experts_per_token, batch, verified
        )
        weights = latency.decode_weight_bytes_per_step(
            decoder, step.routed_expert_bytes, 1.0, touched, 1
        )
    bandwidth = step.bandwidth_bytes_per_s
    write = speculative.verify_kv_write_bytes_per_sequence_step(k, kv)
    memory = latency.decode_memory_s(weights, batch, per_sequence_read, bandwidth, 1.0, write)
    compute = latency.decode_compute_s(
        step.flops_per_token,
        batch,
        step.compute_flops_per_s,
        step.padding_s,
        per_sequence_read,
        bandwidth,
        1.0,
        verified,
    )
    draft = speculative.draft_s(
        k,
        step.draft_read_bytes,
        batch,
        held / batch,
        step.draft_kv_bytes_per_token,
        step.draft_flops_per_token,
        step.compute_flops_per_s,
        bandwidth,
        1.0,
    )
    return float(
        latency.itl_s(
            memory,
            compute,
            step.allreduce_s_per_token,
            batch,
            step.step_overhead_s,
            step.step_overhead_per_sequence_s,
            draft,
            verified,
            1,
        )
    )


def itl_floor_s(step: StepModel) -> float:
    """The shortest inter-token latency a replica can give [s]: a decode step of one sequence
    with one cached token, and with speculation its verifying step ÷ the k + 1 tokens it emits
    when every proposal is accepted."""
    if not step.speculative_tokens:
        return step.decode_step_s(1, 1)
    return verify_step_s(step, 1, 1) / float(
        speculative.verify_tokens_per_sequence(step.speculative_tokens)
    )


def acceptance_rng(seed: int) -> np.random.Generator:
    """The generator of a run's acceptance draws: the fifth child of its seed sequence (the
    first four are the arrivals', prompts', outputs' and delays', :func:`statistics._rngs`)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed).spawn(5)[4]))


def accepted_tokens(rng: np.random.Generator, rate: float, k: int, n: int) -> list[int]:
    """Accepted proposals of ``n`` sequences in one step [tokens]: each the leading successes
    of k draws accepted with probability ``rate``, P(j) = rate^j × (1 − rate) for j < k and
    rate^k for k; drawn as min(geometric(1 − rate) − 1, k). No draw at rate 0 or 1."""
    if rate <= 0.0:
        return [0] * n
    if rate >= 1.0:
        return [k] * n
    return np.minimum(rng.geometric(1.0 - rate, n) - 1, k).tolist()


def verify(
    rep: Any,
    now: float,
    swapped_in: list[int],
    in_window: bool,
    extra_s: float | None,
) -> float:
    """One verifying step of the running batch of ``rep``, a
    :class:`planner.serving.simulate._Replica` (which imports this module); ``swapped_in``:
    the requests swapped back in before it; ``extra_s``: the step is that much longer (the
    prompts chunked into it). Each sequence gains 1 + its accepted tokens and the gaps since
    each measured sequence's last token are counted per token (module docstring). The time
    after it [s]."""
    cfg, rec, totals = rep.cfg, rep.rec, rep.totals
    stall = 0.0
    B = len(rep.running)
    if cfg.admission != "reserve-max" and rep.sum_base + B * rep.G + rep.pre_need > (
        cfg.kv_budget_tokens
    ):
        stall = rep._preempt(now, swapped_in)
        B = len(rep.running)
    if B == 0:
        return now + stall
    ctx0 = rep.sum_base + B * rep.G
    total = stall + verify_step_s(rep.step, B, ctx0) + (extra_s or 0.0)
    t1 = now + total
    G = rep.G + 1
    k = int(rep.step.speculative_tokens)
    assert rep.spec_rng is not None
    draws = accepted_tokens(rep.spec_rng, cfg.acceptance_rate, k, B)
    fin_G, g_join, last_t, warm = rep.fin_G, rep.g_join, rec.last_t, rec.warm_rid
    bursts: dict[tuple[float, int], int] = {}
    emitted = 0
    for rid, draw in zip(rep.running, draws, strict=True):
        extra = min(draw, fin_G[rid] - G)  # no more than it has left after this step's token
        if extra > 0:
            g_join[rid] += extra
            rep.sum_base += extra
            fin_G[rid] -= extra
            heapq.heappush(rep.fin_heap, (fin_G[rid], rid))
        emitted += 1 + extra
        if rid >= warm:
            key = (t1 - last_t[rid], 1 + extra)
            bursts[key] = bursts.get(key, 0) + 1
        last_t[rid] = t1
    seg = totals.segments.append
    for (gap, m), count in bursts.items():
        seg((gap / m, 0.0, 1, count * m))  # m tokens, each gap ÷ m after the one before
    totals.peak_used = max(totals.peak_used, ctx0)
    if cfg.admission != "reserve-max":
        totals.peak_reserved = totals.peak_used
    if in_window:
        totals.busy += total
        totals.conc_area += B * total
        totals.kv_area += ctx0 * total
        totals.tokens_window += emitted
    rep.G = G
    if rep._due(t1):
        room = (B + rep.pre_n, rep.sum_base + B * G + rep.pre_need, rep.reserved)
        rep._events_until(t1, room)
    if rep.lru is not None:  # the batch's grown cache takes room from the prefix cache
        fit(rep)
    fin_heap = rep.fin_heap
    while fin_heap and fin_heap[0][0] <= G:
        fg, rid = heapq.heappop(fin_heap)
        if fin_G[rid] != fg:
            continue
        rep._leave(rid)
        last_t[rid] = t1
        rep._complete(rid, t1)
    return t1
