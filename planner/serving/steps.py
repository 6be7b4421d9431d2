"""Step times of one replica for the serving simulation: :class:`StepModel`, whose every time
is a metric of :mod:`planner.model.latency` called with numbers, and consecutive decode steps of
a fixed batch summed in closed form.

A simulation takes millions of steps, so it uses a :class:`StepTable`: the same model, whose
terms that depend on one integer alone (the weights a batch touches, its multiplications and
overhead, a prompt's arithmetic) are computed once by the same calls and then looked up; only
the terms that grow with the context are computed each step, by the same metrics. The numbers
are the same to the last bit (tests/test_step_table.py); ``simulate(cfg, reference=True)`` runs
on the plain :class:`StepModel`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar, cast

import numpy as np

from planner.model import latency


@dataclass(frozen=True)
class StepModel:
    """Closed-form (roofline) step times of one replica [s].

    Plain numbers only, so the model is picklable and hashable.  Each step
    is bound by the slower of memory traffic and arithmetic, plus a fixed
    launch overhead.
    """

    weight_bytes: float
    """Weight bytes per device, read once per prefill and (less untouched experts) per decode
    step, shared by the whole batch [B]."""
    kv_bytes_per_token: float
    """KV-cache bytes per cached token [B/token]."""
    bandwidth_bytes_per_s: float
    """Achieved memory bandwidth (already x efficiency) [B/s]."""
    flops_per_token: float
    """Dense FLOPs per processed token, ~ 2 x active parameters [FLOP]."""
    compute_flops_per_s: float
    """Achieved compute throughput [FLOP/s]."""
    attention_flops_per_token_sq: float = 0.0
    """Prefill attention coefficient: attention FLOPs = coeff x P^2 [FLOP]."""
    step_overhead_s: float = 0.0
    """Fixed overhead per decode step and per prefill launch [s]."""
    step_overhead_per_sequence_s: float = 0.0
    """The engine's time per sequence decoding in a step [s]."""
    allreduce_s_per_token: float = 0.0
    """Tensor-parallel communication per processed token [s] (0 without tensor parallelism)."""
    routed_expert_bytes: float = 0.0
    """Weight bytes per device of a mixture's routed experts [B] (0: dense)."""
    encoder_bytes: float = 0.0
    """Weight bytes per device outside the decoder (a vision tower), which decode steps do not
    read [B] (0: none)."""
    experts: float = 0.0
    """Routed experts of a mixture (0: dense) [-]."""
    experts_per_token: float = 0.0
    """Experts each token is routed to [-]."""
    padding_s: float = 0.0
    """Time every step's weight multiplications take beyond their tokens' arithmetic [s]
    (:func:`latency.matmul_padding_s`)."""
    shared_prefix_tokens: float = 0.0
    """Tokens of a prefix every sequence shares, held once in the pool (prefix caching,
    :func:`planner.model.prefix.shared_prefix_cached_tokens`) [tokens]: the simulation counts a
    sequence's own tokens, and every decoding sequence reads these besides (0: none)."""
    speculative_tokens: float = 0.0
    """Speculative decoding: tokens proposed per sequence each decode step, k (0: none); a
    step then verifies k + 1 per sequence (:mod:`planner.serving.speculation`)."""
    draft_read_bytes: float = 0.0
    """Weight bytes one proposer forward reads per device [B]
    (:func:`planner.model.speculative.draft_read_bytes_per_forward`)."""
    draft_kv_bytes_per_token: float = 0.0
    """Cache the proposer keeps per token per device [B/token]."""
    draft_flops_per_token: float = 0.0
    """Arithmetic of one proposer forward for one sequence [FLOP]."""
    prefill_compute_flops_per_s: float = 0.0
    """Achieved compute a prompt's arithmetic runs at, where it differs from the decode
    steps' [FLOP/s] (0: the same, :attr:`compute_flops_per_s`): under data-parallel attention a
    prompt's experts are spread over every rank
    (:func:`planner.model.parallel.prefill_compute_flops_per_s`)."""
    data_parallel: float = 1.0
    """Engines whose sequences' tokens reach this one's experts, itself included: the
    data-parallel attention ranks of an expert-parallel replica, which step together (1: its
    own alone) [-]. A decode step reads the experts the ranks' batches together touch."""

    def __post_init__(self) -> None:
        if self.bandwidth_bytes_per_s <= 0 or self.compute_flops_per_s <= 0:
            raise ValueError("bandwidth and compute must be positive")
        if self.data_parallel < 1:
            raise ValueError("data_parallel must be >= 1")
        for name in (
            "weight_bytes",
            "kv_bytes_per_token",
            "flops_per_token",
            "attention_flops_per_token_sq",
            "step_overhead_s",
            "step_overhead_per_sequence_s",
            "allreduce_s_per_token",
            "routed_expert_bytes",
            "encoder_bytes",
            "padding_s",
            "shared_prefix_tokens",
            "speculative_tokens",
            "draft_read_bytes",
            "draft_kv_bytes_per_token",
            "draft_flops_per_token",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0")

    # Every time below is a metric of :mod:`planner.model.latency` called with numbers, so the
    # simulation and the closed form share one physics: the bandwidth passed in is already
    # achieved (efficiency 1), the FLOP per token is 2 × active parameters, and the attention
    # coefficient 2 × layers × heads × head dim (``prefill_flops`` with active = FLOP ÷ 2,
    # layers = coefficient ÷ 2, one head of dimension 1: the same products, exactly).

    def prefill_flops(self, prompt_tokens: float) -> float:
        """Arithmetic of prefilling P tokens [FLOP] (:func:`latency.prefill_flops`)."""
        p = float(prompt_tokens)
        return float(
            latency.prefill_flops(
                self.flops_per_token / 2, p, self.attention_flops_per_token_sq / 2, 1, 1
            )
        )

    def prefill_flops_cached(self, prompt_tokens: float, cached_tokens: float) -> float:
        """Arithmetic of prefilling P tokens of which C are found in the prefix cache [FLOP]
        (:func:`latency.prefill_flops` with hit ratio C ÷ P): the N = P − C new tokens' and
        their attention over the cached ones."""
        p = float(prompt_tokens)
        return float(
            latency.prefill_flops(
                self.flops_per_token / 2,
                p,
                self.attention_flops_per_token_sq / 2,
                1,
                1,
                float(cached_tokens) / p,
            )
        )

    @property
    def prefill_rate(self) -> float:
        """The compute a prompt's arithmetic runs at [FLOP/s]."""
        return self.prefill_compute_flops_per_s or self.compute_flops_per_s

    def prefill_compute_s(self, prompt_tokens: float) -> float:
        """Arithmetic time of prefilling P tokens in one step [s]: FLOP ÷ achieved compute + the
        multiplications' padding."""
        return self.prefill_flops(prompt_tokens) / self.prefill_rate + self.padding_s

    def prefill_memory_s(self) -> float:
        """Memory time of a prefill launch: every weight is read once, a prompt's many tokens
        touching every expert of a mixture [s] (:func:`latency.weight_read_s`)."""
        return float(latency.weight_read_s(self.weight_bytes, self.bandwidth_bytes_per_s, 1.0))

    def prefill_s(self, prompt_tokens: float, cached_tokens: float = 0.0) -> float:
        """Prefill time of one prompt of P tokens, C of them found in the prefix cache [s]
        (:func:`latency.prefill_s` with hit ratio C ÷ P): ``max(compute, one weight read) +
        (P − C) × all-reduce + step_overhead_s``."""
        if cached_tokens:
            return self.prefill_batch_s([prompt_tokens], [cached_tokens])
        return self.prefill_batch_s([prompt_tokens])

    def prefill_batch_s(
        self, prompt_tokens: Sequence[float], cached_tokens: Sequence[float] | None = None
    ) -> float:
        """Time of one prefill step over several prompts [s]: :func:`latency.prefill_s` of their
        total arithmetic and tokens (the weights are read once, one overhead); 0 for none.
        ``cached_tokens``: each prompt's tokens found in the prefix cache (none: 0), whose
        arithmetic is skipped but not the attention over them, and which are not all-reduced
        (the hit ratio passed is the prompts' cached share)."""
        if len(prompt_tokens) == 0:
            return 0.0
        if cached_tokens is not None and any(cached_tokens):
            pairs = zip(prompt_tokens, cached_tokens, strict=True)
            total = float(sum(prompt_tokens))
            return float(
                latency.prefill_s(
                    sum(self.prefill_flops_cached(p, c) for p, c in pairs),
                    self.prefill_rate,
                    self.padding_s,
                    self.prefill_memory_s(),
                    total,
                    self.allreduce_s_per_token,
                    self.step_overhead_s,
                    float(sum(cached_tokens)) / total,
                )
            )
        flops = sum(self.prefill_flops(p) for p in prompt_tokens)
        return float(
            latency.prefill_s(
                flops,
                self.prefill_rate,
                self.padding_s,
                self.prefill_memory_s(),
                float(sum(prompt_tokens)),
                self.allreduce_s_per_token,
                self.step_overhead_s,
            )
        )

    def decode_weight_bytes(self, batch: float) -> float:
        """Weight bytes a decode step of ``batch`` sequences reads [B]: all of a dense model's
        decoder (not its encoder); a mixture's less the experts no token of the batch is routed to
        (:func:`latency.experts_touched_fraction`, :func:`latency.decode_weight_bytes_per_step`),
        at the batch of every rank stepping with it (:attr:`data_parallel` × ``batch``)."""
        decoder = self.weight_bytes - self.encoder_bytes
        if self.routed_expert_bytes <= 0.0:
            return decoder
        group = batch * self.data_parallel if self.data_parallel != 1 else batch
        touched = latency.experts_touched_fraction(self.experts, self.experts_per_token, group)
        return float(
            latency.decode_weight_bytes_per_step(decoder, self.routed_expert_bytes, 1.0, touched, 1)
        )

    def held_tokens(self, batch: float, context_tokens_total: float) -> float:
        """Cached tokens a decode step of ``batch`` sequences reads [tokens]: their own,
        ``context_tokens_total``, and each the shared prefix, ``batch × shared_prefix_tokens``
        (the closed form's mean context per sequence counts both)."""
        return float(context_tokens_total) + batch * self.shared_prefix_tokens

    def decode_memory_s(self, batch: float, context_tokens_total: float) -> float:
        """Memory time of one decode step [s] (:func:`latency.decode_memory_s`): the weights the
        batch touches, once, plus every sequence's cache, ``context_tokens_total`` tokens of its
        own and the shared prefix (:meth:`held_tokens`)."""
        held = self.held_tokens(batch, context_tokens_total)
        return self.read_s(self.decode_weight_bytes(batch), held)

    def read_s(self, weight_bytes: float, context_tokens_total: float) -> float:
        """Time of reading ``weight_bytes`` [B] once and ``context_tokens_total`` cached tokens
        [s] (:func:`latency.decode_memory_s` of one sequence holding them all)."""
        cache = self.kv_bytes_per_token * float(context_tokens_total)
        return float(
            latency.decode_memory_s(weight_bytes, 1, cache, self.bandwidth_bytes_per_s, 1.0)
        )

    def decode_multiply_s(self, batch: float) -> float:
        """Time of a decode step's weight multiplications, one token per sequence, with their
        padding [s] (:func:`latency.decode_compute_s` without its caches)."""
        return latency.decode_compute_s(
            self.flops_per_token, batch, self.compute_flops_per_s, self.padding_s, 0.0, 1.0, 1.0
        )

    def decode_compute_s(self, batch: float, context_tokens_total: float) -> float:
        """Time of one decode step bound by its arithmetic [s]
        (:func:`latency.decode_compute_s`): the multiplications of one token per sequence,
        then the caches' tokens read (:meth:`held_tokens`)."""
        held = self.held_tokens(batch, context_tokens_total)
        return float(self.decode_multiply_s(batch) + self.read_s(0.0, held))

    def decode_terms(self, batch: float, context_tokens_total: float) -> tuple[float, float]:
        """(:meth:`decode_memory_s`, :meth:`decode_compute_s`) of one decode step [s]."""
        return (
            self.decode_memory_s(batch, context_tokens_total),
            self.decode_compute_s(batch, context_tokens_total),
        )

    def decode_step_s(self, batch: float, context_tokens_total: float) -> float:
        """Time of one decode step of ``batch`` sequences [s] (:func:`latency.itl_s`):
        ``max(memory, compute) + batch × (all-reduce + time per sequence) + step_overhead_s``,
        with ``context_tokens_total`` the cached tokens the batch reads (prompt + tokens so
        far)."""
        memory, compute = self.decode_terms(batch, context_tokens_total)
        return float(
            latency.itl_s(
                memory,
                compute,
                self.allreduce_s_per_token,
                batch,
                self.step_overhead_s,
                self.step_overhead_per_sequence_s,
            )
        )

    def mixed_step_s(
        self, batch: float, context_tokens_total: float, chunks: Sequence[tuple[float, float]]
    ) -> float:
        """Time of one step of chunked prefill [s] (:func:`latency.itl_s` over the step's
        tokens): ``batch`` sequences decode one token each, reading ``context_tokens_total``
        cached tokens, while each chunk ``(done, tokens)`` prefills ``tokens`` more of a prompt
        of which ``done`` are cached (counted from the prompt's start: a shared prefix and the
        tokens found in the prefix cache are among them). The weights are read once (all of
        them: a prompt's many tokens touch every expert), each chunk reads its prompt's cache,
        the arithmetic adds up (the multiplications' padding once a step), every token of the
        step is all-reduced and every decoding sequence costs its time per sequence. With no
        chunk it is :meth:`decode_step_s`; with no batch and one whole prompt,
        :meth:`prefill_s`."""
        if not chunks:
            return self.decode_step_s(batch, context_tokens_total)
        cached_chunks: float = 0
        chunked: float = 0
        flops: float = 0
        for done, tokens in chunks:  # one pass; each sum in the chunks' order
            cached_chunks += done
            chunked += tokens
            flops += self.prefill_flops(done + tokens) - self.prefill_flops(done)
        cached = self.held_tokens(batch, context_tokens_total) + cached_chunks
        memory = self.read_s(self.weight_bytes, cached)
        multiply = float(self.decode_multiply_s(batch) + self.read_s(0.0, cached))
        compute = multiply + flops / self.prefill_rate
        step = latency.itl_s(
            memory,
            compute,
            self.allreduce_s_per_token,
            batch,
            self.step_overhead_s,
            self.step_overhead_per_sequence_s,
        )
        return float(step + chunked * self.allreduce_s_per_token)

    def decode_overhead_s(self, batch: float) -> float:
        """The part of a decode step that neither reads nor computes: ``itl_s`` with no memory
        or compute time, i.e. batch × (all-reduce + time per sequence) + step overhead [s]."""
        return float(
            latency.itl_s(
                0.0,
                0.0,
                self.allreduce_s_per_token,
                batch,
                self.step_overhead_s,
                self.step_overhead_per_sequence_s,
            )
        )


class _DecodeRun:
    """Step times of consecutive decode steps with a fixed batch.

    Step k (k = 0, 1, ...) has context ``ctx0 + batch * k``, so by
    :meth:`StepModel.decode_step_s` its time is ``max(alpha, c) + beta * k + o``: alpha the
    memory time at ctx0 [s], c the arithmetic-bound time at ctx0 (its multiplications, then
    the caches) [s], both growing by beta, the extra cache read per step [s/step], and o the
    overhead [s]; ``first`` is step 0's time [s]. A plain slotted class because one is built
    per scheduler iteration (:meth:`of` from the step model, or by :class:`StepTable`).
    """

    __slots__ = ("first", "beta")

    def __init__(self, first: float, beta: float) -> None:
        self.first = first
        self.beta = beta

    @classmethod
    def of(cls, step: StepModel, batch: int, ctx0: float) -> _DecodeRun:
        """The run of ``batch`` sequences from context ``ctx0`` [tokens], from the step's own
        terms, each a metric of the closed form (linear in the context)."""
        if isinstance(step, StepTable):
            return cls(*step.decode_run(batch, ctx0))
        memory, compute = step.decode_terms(batch, ctx0)
        beta = step.kv_bytes_per_token * batch / step.bandwidth_bytes_per_s
        return cls(max(memory, compute) + step.decode_overhead_s(batch), beta)

    def step_s(self, k: int) -> float:
        """Duration of step k [s]."""
        return self.first + self.beta * k

    def total_s(self, k0: int, k1: int) -> float:
        """Sum of the durations of steps k0 .. k1-1 [s] (closed form)."""
        if k1 <= k0:
            return 0.0
        return (k1 - k0) * self.first + self.beta * (k1 * (k1 - 1) - k0 * (k0 - 1)) / 2.0

    def pieces(self, k0: int, k1: int) -> list[tuple[float, float, int]]:
        """Steps k0 .. k1-1 as linear pieces ``(first value [s], slope [s/step], count)``."""
        if k1 <= k0:
            return []
        return [(self.step_s(k0), self.beta, k1 - k0)]

    def steps_to_reach(self, target_s: float, n_max: int) -> int:
        """Smallest n in [1, n_max] whose first n steps last >= target_s; n_max if none
        (:func:`steps_to_reach`)."""
        return steps_to_reach(self.first, self.beta, target_s, n_max)


def steps_to_reach(first: float, beta: float, target_s: float, n_max: int) -> int:
    """Smallest n in [1, n_max] whose first n decode steps, the first of ``first`` [s], each
    ``beta`` [s] longer than the one before, last >= target_s [s]; n_max if none.

    Solved in closed form (the steps grow linearly, so their sum is quadratic in n), then
    checked against the sum of n steps, :meth:`_DecodeRun.total_s` ``(0, n)`` =
    ``n × first + beta × n(n − 1) ÷ 2``, one step either way, so that rounding never changes
    the answer.
    """
    if n_max <= 1 or first + beta * 0 / 2.0 >= target_s:
        return 1
    if n_max * first + beta * (n_max * (n_max - 1)) / 2.0 < target_s:
        return n_max
    # about the n (exact but for rounding): n steps last n × (first − beta ÷ 2) + beta × n² ÷ 2
    a = first - beta / 2
    b = beta / 2
    m = target_s / a if b <= 0 else (-a + math.sqrt(a * a + 4 * b * target_s)) / (2 * b)
    n = math.ceil(m) if math.isfinite(m) else n_max
    n = min(max(n, 1), n_max)
    while n > 1 and (n - 1) * first + beta * ((n - 1) * (n - 2)) / 2.0 >= target_s:
        n -= 1
    while n < n_max and n * first + beta * (n * (n - 1)) / 2.0 < target_s:
        n += 1
    return n


_Method = TypeVar("_Method", bound=Callable[..., float])
_REMEMBERED = ("decode_weight_bytes", "decode_multiply_s", "decode_overhead_s", "prefill_flops")


class _Memo(dict[float, float]):
    """A function of one number, computed once per number and looked up after (``memo[x]``)."""

    __slots__ = ("compute",)

    def __init__(self, compute: Callable[[float], float]) -> None:
        super().__init__()
        self.compute = compute

    def __missing__(self, value: float) -> float:
        result = self[value] = self.compute(value)
        return result


def _remembered(compute: _Method) -> _Method:
    """The step model's method ``compute`` of one number, computed once per number (and step
    table) and looked up after."""
    slot = f"_memo_{compute.__name__}"

    def remembered(self: StepModel, value: float) -> float:
        memo: _Memo = self.__dict__[slot]
        return memo[value]

    remembered.__name__ = compute.__name__
    remembered.__doc__ = f":meth:`StepModel.{compute.__name__}`, computed once per input."
    return cast(_Method, remembered)


class StepTable(StepModel):
    """A :class:`StepModel` whose terms that depend on one integer alone (the batch, a prompt's
    tokens) are computed once, by the same calls, and looked up after: every step time is
    the same number to the last bit, without a step paying for the formula layer's scalar
    and array handling each time. The simulation asks one per step model
    (:func:`step_table`); the plain :class:`StepModel` stays the reference.
    """

    # not fields: the class is not a dataclass of its own, so these are plain attributes
    _prefill_memory: float
    _last: tuple[tuple[float, float], tuple[float, float]]
    _by_batch: tuple[list[float], list[float], list[float], list[float]]
    _memo_prefill_flops: _Memo

    decode_weight_bytes = _remembered(StepModel.decode_weight_bytes)
    decode_multiply_s = _remembered(StepModel.decode_multiply_s)
    decode_overhead_s = _remembered(StepModel.decode_overhead_s)
    prefill_flops = _remembered(StepModel.prefill_flops)

    def __post_init__(self) -> None:
        super().__post_init__()
        # frozen: the memos are set past the dataclass's guard
        for name in _REMEMBERED:
            compute = functools.partial(getattr(StepModel, name), self)
            object.__setattr__(self, f"_memo_{name}", _Memo(compute))
        object.__setattr__(self, "_prefill_memory", super().prefill_memory_s())
        object.__setattr__(self, "_last", ((-1, -1), (0.0, 0.0)))
        object.__setattr__(self, "_by_batch", ([], [], [], []))

    def batch_terms(self, batch: int) -> tuple[list[float], list[float], list[float], list[float]]:
        """The decode terms of one batch size alone, as arrays indexed by the batch (0 to at
        least ``batch``): weight bytes read (:meth:`decode_weight_bytes`), multiplications
        (:meth:`decode_multiply_s`), overhead (:meth:`decode_overhead_s`) and a step's growth
        in time from its batch's cache, ``kv_bytes_per_token × batch ÷ bandwidth`` [B, s, s,
        s/step]. Each entry is the scalar call's value; the arrays grow, doubling, as larger
        batches are reached."""
        arrays = self._by_batch
        size = len(arrays[0])
        if batch >= size:
            weights, multiply, overhead, beta = arrays
            for b in range(size, max(batch + 1, 2 * size)):
                weights.append(StepModel.decode_weight_bytes(self, b))
                multiply.append(StepModel.decode_multiply_s(self, b))
                overhead.append(StepModel.decode_overhead_s(self, b))
                beta.append(self.kv_bytes_per_token * b / self.bandwidth_bytes_per_s)
        return arrays

    def decode_first_s(self, batch: int, context_tokens_total: float) -> float:
        """One decode step's time as :class:`_DecodeRun` reads it from the step model,
        ``max(memory, compute) + overhead``, from the batch's arrays [s]: the memory and
        compute terms are :meth:`StepModel.read_s`'s sum with one cache read, and the same
        number to the last bit."""
        return self.decode_run(batch, context_tokens_total)[0]

    def mixed_times(
        self, batch: int, context_tokens_total: int, chunks: Sequence[tuple[int, int]]
    ) -> tuple[float, float, float]:
        """A step of chunked prefill as the simulation takes it [s]: the step itself
        (:meth:`StepModel.mixed_step_s`), the decode step of its batch alone
        (:meth:`StepModel.decode_step_s`) and that step's time as :class:`_DecodeRun` reads it
        (:meth:`decode_first_s`). Each from the batch's arrays and the prompts' remembered
        arithmetic, in the plain calls' order of operations: the same numbers to the last bit.
        ``chunks`` must not be empty."""
        weights, multiply, overhead, _ = self._by_batch
        if batch >= len(weights):
            self.batch_terms(batch)
        kv, bandwidth = self.kv_bytes_per_token, self.bandwidth_bytes_per_s
        prefill_flops = self._memo_prefill_flops
        flops: float = 0
        cached_chunks = chunked = 0
        for done, tokens in chunks:  # one pass; each sum in the chunks' order
            cached_chunks += done
            chunked += tokens
            flops += prefill_flops[done + tokens] - prefill_flops[done]
        held = float(context_tokens_total) + batch * self.shared_prefix_tokens  # held_tokens
        cache = kv * held
        memory = (weights[batch] + cache) / bandwidth  # read_s, decode_memory_s of one sequence
        compute = multiply[batch] + cache / bandwidth
        slower = memory if memory >= compute else compute
        per_token = self.allreduce_s_per_token
        per_sequence = batch * (per_token + self.step_overhead_per_sequence_s)
        decode = slower + per_sequence + self.step_overhead_s  # latency.itl_s
        first = slower + overhead[batch]
        cache = kv * float(held + cached_chunks)
        memory = (self.weight_bytes + cache) / bandwidth
        compute = multiply[batch] + cache / bandwidth + flops / self.prefill_rate
        slower = memory if memory >= compute else compute
        step = slower + per_sequence + self.step_overhead_s + chunked * per_token
        return step, decode, first

    def decode_run(self, batch: int, context_tokens_total: float) -> tuple[float, float]:
        """(:meth:`decode_first_s`, :meth:`decode_beta`) of a run of decode steps [s, s/step]."""
        weights, multiply, overhead, beta = self._by_batch
        if batch >= len(weights):
            self.batch_terms(batch)
        held = float(context_tokens_total) + batch * self.shared_prefix_tokens  # held_tokens
        cache = self.kv_bytes_per_token * held
        bandwidth = self.bandwidth_bytes_per_s
        memory = (weights[batch] + cache) / bandwidth
        compute = multiply[batch] + cache / bandwidth
        return (memory if memory >= compute else compute) + overhead[batch], beta[batch]

    def decode_beta(self, batch: int) -> float:
        """The growth of a decode step's time per step of ``batch`` sequences [s/step]."""
        return self.batch_terms(batch)[3][batch]

    def decode_terms(self, batch: float, context_tokens_total: float) -> tuple[float, float]:
        """:meth:`StepModel.decode_terms`, remembered for the last batch and context (a step
        of chunked prefill asks for them twice)."""
        key = (batch, context_tokens_total)
        last = self._last  # read once: another thread may replace it
        if key != last[0]:
            last = (key, super().decode_terms(*key))
            object.__setattr__(self, "_last", last)
        return last[1]

    def remember_prefill_flops(self, prompt_tokens: Sequence[int]) -> None:
        """Remember :meth:`prefill_flops` of each of these prompt lengths [tokens], computed in
        one call of the same metric over an array (numpy's arithmetic is the scalar's, element
        by element: the same numbers to the last bit)."""
        memo = self._memo_prefill_flops
        tokens = [p for p in set(prompt_tokens) if p not in memo]
        if not tokens:
            return
        p = np.asarray(tokens, dtype=float)
        flops = latency.prefill_flops(
            self.flops_per_token / 2, p, self.attention_flops_per_token_sq / 2, 1, 1
        )
        memo.update(zip(tokens, np.asarray(flops, dtype=float).tolist(), strict=True))

    def prefill_memory_s(self) -> float:
        """:meth:`StepModel.prefill_memory_s`, computed once."""
        return self._prefill_memory


def mixed_and_decode_s(
    step: StepModel, batch: int, context_tokens_total: int, chunks: Sequence[tuple[int, int]]
) -> tuple[float, float]:
    """(:meth:`StepModel.mixed_step_s`, :meth:`StepModel.decode_step_s`) of a step of chunked
    prefill [s]: from a :class:`StepTable`'s arrays (the same numbers to the last bit), else by
    the plain calls; the decode step 0 without a batch."""
    if isinstance(step, StepTable) and chunks:
        mixed, decode, _ = step.mixed_times(batch, context_tokens_total, chunks)
        return mixed, decode
    mixed = step.mixed_step_s(batch, context_tokens_total, chunks)
    return mixed, step.decode_step_s(batch, context_tokens_total) if batch else 0.0


@functools.lru_cache(maxsize=64)
def step_table(step: StepModel) -> StepTable:
    """The :class:`StepTable` of ``step`` (one per step model, so that the runs of one
    candidate share what it has computed)."""
    return StepTable(**{f.name: getattr(step, f.name) for f in dataclasses.fields(step)})
