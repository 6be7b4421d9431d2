"""Sizing by simulation: the fewest replicas that meet every latency target.

The closed form (:mod:`planner.model.capacity`) sizes a fleet from steady-state averages. This
module asks the serving simulation (:mod:`planner.serving.simulate`, one replica) instead: for a
candidate row of the results table, what is the smallest number of replicas R whose *most loaded*
replica meets every p95 latency target of the workload (``ttft_p95``, ``itl_p95``, ``e2e_p95``,
``task_p95``) at the forecast load, with rejected requests at most
``assumptions.max_rejected_fraction``?

Decisions a reader must know
----------------------------
*One replica stands for the fleet.*  Replicas share nothing, so the fleet is as good as its most
loaded replica.  Closed loop: the ``concurrency`` users are spread over R replicas and the
simulated one gets ``⌈users ÷ R⌉`` of them.  Poisson arrivals: a random split of a Poisson
stream is Poisson, so one replica sees rate ÷ R.  Bursty arrivals: rate ÷ R with the *same* burst
factor (bursts are traffic surges that hit every replica at once; thinning would smooth them
away, which is not conservative).  Trace: tasks go round-robin in arrival order and the simulated
replica gets tasks 0, R, 2R, ... (the most: ⌈n ÷ R⌉); a row's ``prompt_tokens``/``output_tokens``
apply to every request of its task.  The trace length, not ``simulated_requests``, sets the
number of tasks.

*Step times are the closed form's own metrics* (:func:`step_model`): the simulation's
:class:`StepModel` calls the metric functions of :mod:`planner.model.latency` with numbers
(``itl_s`` for a decode step, ``prefill_s`` for a prefill step over its prompts' total
arithmetic and tokens), so a change to those formulas changes the simulation too, and at the
row's batch and mean context a decode step is exactly ``itl_s`` and a prefill of the mean prompt
exactly ``prefill_s``. From the row: weight bytes per device, all read by a prefill (a prompt's
many tokens touch every expert) and by a dense model's decode step; a mixture of experts' decode
step reads the share of routed experts that the step's own batch touches, so it grows with the
batch as it runs;
cache bytes read per cached token such that a batch at the mean context reads exactly
``kv_read_bytes_per_sequence_step`` per sequence (sliding windows and fixed state are therefore
charged as at the mean context), achieved bandwidth and compute, the prefill attention of
:func:`planner.model.latency.prefill_flops`, the tensor-parallel all-reduce per token (charged
once: ``batch × a`` per decode step, ``P × a`` per prefill) and the step overhead.
With speculative decoding a decode step is the verifying step (:mod:`planner.serving.speculation`),
and ``itl_s`` is it ÷ the tokens a step emits, as the simulated ITL counts a burst's tokens.

*Cache budget in tokens* (:func:`kv_budget_tokens`): ``⌊kv_budget_bytes ÷ (kv_bytes_per_sequence
÷ tokens_per_sequence)⌋``: every token is charged what a maximum-length sequence pays per token,
including paging waste, sliding-window layers and fixed state, so that exactly ``max_sequences``
maximum-length sequences fit, as in the closed form.  Shorter sequences are charged at the same
rate (a sliding-window model's short sequences are then charged slightly less than they hold).
The engine's batch limit ``max_batch_sequences`` caps the batch.

*Queue timeout* (:func:`queue_timeout_s`): a request still waiting for admission after
``QUEUE_TIMEOUT_TARGET_MULTIPLE`` (3) × the tightest target that its wait counts against (TTFT,
else end-to-end, else task) is given up by its client and counts as rejected; without any such
target, after ``DEFAULT_QUEUE_TIMEOUT_S`` (60 s, a common proxy timeout).  Why 3: when waits have
an exponential tail their p99.9 is about 2.3 × their p95, so with a timeout at 3 × the target
the p95 target binds before the 0.1 % rejection ceiling does, and the ceiling acts as the guard
against overload (an overloaded open-loop replica rejects more and more; without a timeout an
overload would only show as latency, which a workload without targets never checks).  The queue
itself is unbounded.

*Search* (:func:`size_candidate`). First a memory check (a maximum-length request must fit the
cache), then the *best case*: one user on the replica, one request at a time, which is what any
replica count tends to as R grows (closed loop: R = users). A target missed even there cannot be met
by adding replicas; the reason names the bound (bandwidth- or compute-bound decode step, compute- or
bandwidth-bound prefill, tool time, preprocessing). The best case is simulated first where a floor
already misses its target (the no-load TTFT; a decode step of one sequence); where the closed
form's count misses, a short one (:data:`HINT_REQUESTS`) guides the search, and the whole best
case decides where the short one misses a target or no count up to the limit meets them (a count
that meets the targets proves the best case would). The search
(:mod:`planner.serving.search`) starts at the closed-form ``replicas_needed`` and ends on a count
that meets the targets next to one below it that misses; between, it tries where the line through
the runs nearest the targets (the best case among them) says each run's worst p95 over its target
reaches 1, and bisects where that stops halving the interval (up to ``max_replicas``; closed loop:
up to the number of users, where the best case is reached). This assumes that more replicas never
raise a p95. Every simulation uses the same seed, so two replica counts see the same lengths (common
random numbers) and open-loop arrival times that are rescaled copies of each other; still, near the
unloaded floor a p95 wobbles by a few per cent as the replica's users change (the tests allow 10 %),
so at a target's edge a count below the one found may meet it too.

*Which rows* (:func:`planner.plan.selection.select_candidates`): simulating all ~1,100 rows of the
shipped catalogs is too slow, so per workload × model the ``per_group`` cheapest
closed-form-eligible rows (by ``cost_usd``, then ``devices_needed``) are simulated; when none is
eligible, the ``per_group`` closest ones (a replica holds a maximum-length sequence; fewest
closed-form targets missed; then cost). A row that the closed form ranks fourth may be cheaper once
simulated: raise ``per_group`` to check.

*What to expect.*  Where the engine prefills whole prompts (:mod:`planner.serving.simulate`;
with chunked prefill the stall is spread over steps of ``max_num_batched_tokens``), a prefill
stalls every running sequence, and the stall is an inter-token gap.  With many users and
short answers a sizeable share of the gaps holds a stall, so the simulated ITL p95 can be several
times the closed-form ``itl_s`` (its p50 stays close) and the simulation then asks for more replicas
than the closed form; the reason of a met row says what the count below missed.

Everything is deterministic: the same catalog, rows and seed give the same table.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from planner.executor import Executor, as_executor
from planner.model.disaggregated import prefill_pool_device_offset as offset
from planner.model.simulated import SIMULATED_FIGURES
from planner.plan.columns import EP_KEY, PD_KEY, PF_KEY, PP_KEY, PX_KEY, prefill_hardware_of
from planner.plan.selection import select_candidates, simulable
from planner.plan.tables import ALL_KEYS
from planner.progress import Progress
from planner.serving import pools
from planner.serving.configs import (
    DEFAULT_QUEUE_TIMEOUT_S,
    QUEUE_TIMEOUT_TARGET_MULTIPLE,
    _finite,
    best_case_config,
    kv_budget_tokens,
    on_prefill_hardware,
    queue_timeout_s,
    sim_config,
    step_model,
)
from planner.serving.reasons import bound_of, not_simulated, prefill_steps
from planner.serving.search import Miss, fewest, floors_missed, miss_ratio_of, misses
from planner.serving.simulate import SimConfig, SimResult, simulate

if TYPE_CHECKING:
    from planner.catalog import Catalog, Workload
    from planner.plan.sweep import Results

__all__ = [
    "DEFAULT_MAX_REPLICAS",
    "DEFAULT_QUEUE_TIMEOUT_S",
    "QUEUE_TIMEOUT_TARGET_MULTIPLE",
    "Miss",
    "SIZED_KEYS",
    "SIZING_COLUMNS",
    "best_case_config",
    "kv_budget_tokens",
    "misses",
    "prefill_steps",
    "queue_timeout_s",
    "sim_config",
    "simulate_candidates",
    "size_candidate",
    "step_model",
]

HINT_REQUESTS = 200
"""Requests of the short best case that guides the search where the closed form's count
misses: its worst p95 over its target places the line the next count is read from, and only
where it misses a target is the whole best case run to decide [requests]. Measured on the
shipped catalogs: the same counts found, 0.7 s of the simulation's 5.9 s of CPU saved."""

DEFAULT_MAX_REPLICAS = 256
"""Open loop: the search gives up beyond this many replicas [replicas]."""

POOL_SEARCH_MULTIPLE = 4
"""Disaggregated pools: the search gives up beyond this many times the closed form's decode
pool (and 16 replicas at least) [-]."""


#: The key columns of :func:`simulate_candidates`: the candidate's five, its expert-parallel
#: size, its pipeline stages, its serving layout (1: disaggregated pools), its prefill pool's
#: own expert-parallel size and the hardware its prompts run on.
SIZED_KEYS = [*ALL_KEYS, EP_KEY, PP_KEY, PD_KEY, PX_KEY, PF_KEY]


def _keys(row: Mapping[str, Any]) -> dict[str, Any]:
    """A sized row's key columns (EP 1, one stage and one pool where the results table has no
    layout column)."""
    layout = {
        EP_KEY: int(row.get(EP_KEY, 1)),
        PP_KEY: int(row.get(PP_KEY, 1)),
        PD_KEY: int(row.get(PD_KEY, 0)),
        PX_KEY: int(row.get(PX_KEY, 0)),
        PF_KEY: prefill_hardware_of(row),
    }
    return {**{k: row[k] for k in ALL_KEYS}, **layout}


#: Columns of :func:`simulate_candidates` after the key columns (units in the names).
SIZING_COLUMNS = [
    "sim_replicas_needed",
    "sim_devices_needed",
    "meets_targets_sim",
    "sim_bound",
    "sim_reason",
    "sim_replicas_simulated",
    "sim_prefill_pool_replicas",
    *(f.name for f in SIMULATED_FIGURES),
    "sim_requests",
    "sim_runs",
]


def _figures(result: SimResult | None) -> dict[str, float]:
    """The simulated figures of one run (all NaN for none)."""
    if result is None:
        return {f.name: math.nan for f in SIMULATED_FIGURES}
    values = result.to_dict()
    return {f.name: float(values[f.field]) for f in SIMULATED_FIGURES}


def size_candidate(
    catalog: Catalog,
    row: Mapping[str, Any],
    max_replicas: int = DEFAULT_MAX_REPLICAS,
    n_requests: int | None = None,
    seed: int | None = None,
) -> dict[str, Any]:
    """The fewest replicas of one results row that meet every target, by simulation.

    Returns a flat dict (the :data:`SIZING_COLUMNS`): ``sim_replicas_needed`` (NaN when no count
    up to the limit serves), ``sim_devices_needed`` (× tensor parallel), ``meets_targets_sim``,
    ``sim_bound`` (``""`` when met; else ``memory``, ``engine``, ``simulation size``,
    ``bandwidth``, ``compute``, ``chunked prefill``, ``queueing``, ``tool time``,
    ``preprocessing`` or ``layout``), ``sim_reason`` in words, the simulated figures at
    ``sim_replicas_simulated`` replicas (NaN: the best case, one request at a time), the
    requests measured in that run (``sim_requests``) and the simulations run (``sim_runs``).
    See the module docstring for the search.
    """
    workload = catalog.get("workloads", row["workload"])
    a = catalog.assumptions
    ceiling = a.max_rejected_fraction
    tp = int(row["tensor_parallel"])
    out: dict[str, Any] = {
        "sim_replicas_needed": math.nan,
        "sim_devices_needed": math.nan,
        "meets_targets_sim": False,
        "sim_bound": "",
        "sim_reason": "",
        "sim_replicas_simulated": math.nan,
        "sim_prefill_pool_replicas": 0,
        **_figures(None),
        "sim_requests": 0,
        "sim_runs": 0,
    }

    refused = not_simulated(catalog, workload, row, n_requests)
    if refused is not None:
        out.update(sim_bound=refused[0], sim_reason=refused[1])
        return out

    if float(row.get("disaggregated", 0)) > 0:
        out.update(_size_pools(catalog, workload, row, max_replicas, n_requests, seed))
        return out
    runs: dict[SimConfig, SimResult] = {}

    def run(cfg: SimConfig) -> SimResult:
        if cfg not in runs:
            runs[cfg] = simulate(cfg)
        return runs[cfg]

    def record(result: SimResult, replicas: float) -> None:
        out.update(_figures(result))
        out["sim_replicas_simulated"] = replicas
        out["sim_requests"] = int(result.n_measured)

    def hopeless() -> bool:
        """Does the best case miss a target? (then no replica count meets it; says why)"""
        best_cfg = best_case_config(catalog, workload, row, n_requests, seed)
        best = run(best_cfg)
        best_misses = misses(best, workload, ceiling)
        if best_misses:
            record(best, math.nan)
            explained = [(m, *bound_of(m, best_cfg, catalog, workload, best)) for m in best_misses]
            out["sim_bound"] = explained[0][1]
            out["sim_reason"] = "; ".join(
                f"{m.text()} at any replica count: {why}" for m, _, why in explained
            )
            out["sim_runs"] = len(runs)
        return bool(best_misses)

    closed = workload.arrival is None
    users = int(workload.concurrency or 1) if closed else None
    upper = users if users is not None else int(max_replicas)
    start = row["replicas_needed"]
    start = min(int(start) if _finite(start) and start >= 1 else 1, upper)
    at: dict[int, tuple[list[Miss], SimResult]] = {}

    def met(replicas: int) -> bool:
        if replicas not in at:
            result = run(sim_config(catalog, workload, row, replicas, n_requests, seed))
            at[replicas] = (misses(result, workload, ceiling), result)
        return not at[replicas][0]

    def simulate_at(replicas: int) -> tuple[bool, float]:
        served = met(replicas)
        return served, miss_ratio_of(at[replicas][1], workload, ceiling)

    # the best case first where a floor already misses (the no-load TTFT, or a decode step of
    # one sequence with one cached token, per token); where the closed form's count misses, a
    # short one guides the search, and the whole one is run where even the short one misses a
    # target or no count up to the limit meets them
    if floors_missed(row, a) and hopeless():
        return out
    whole = best_case_config(catalog, workload, row, n_requests, seed)
    best = runs.get(whole)
    if best is None and not met(start):
        hint = min(HINT_REQUESTS, whole.n_requests)
        best = run(best_case_config(catalog, workload, row, hint, seed))
        if misses(best, workload, ceiling) and hopeless():
            return out
        best = runs.get(whole, best)
    lo, hi = fewest(
        simulate_at,
        start,
        upper,
        users,
        None if best is None else miss_ratio_of(best, workload, ceiling),
    )
    if hi is None:
        if hopeless():  # not even one request at a time meets the targets
            return out
        record(at[upper][1], upper)
        out.update(
            sim_bound="queueing",
            sim_reason=f"queueing: {_texts(at, upper)} with {upper} replicas (the search limit), "
            "although one request at a time meets every target",
            sim_runs=len(runs),
        )
        return out
    record(at[hi][1], hi)
    reason = f"meets targets with {hi} replica{'s' if hi > 1 else ''}"
    reason += f" ({hi * tp} devices)" if tp > 1 else ""
    if hi - 1 in at:
        reason += f"; with {hi - 1}: {_texts(at, hi - 1)}"
    out.update(
        sim_replicas_needed=hi,
        sim_devices_needed=hi * tp,
        meets_targets_sim=True,
        sim_reason=reason,
        sim_runs=len(runs),
    )
    return out


def _size_pools(
    catalog: Catalog,
    workload: Workload,
    row: Mapping[str, Any],
    max_replicas: int,
    n_requests: int | None,
    seed: int | None,
) -> dict[str, Any]:
    """The sizing columns of a disaggregated row: its prefill and decode pools simulated
    together (:func:`planner.serving.pools.fewest_pools`), the figures those of the run at the
    sizes planned."""
    ceiling = catalog.assumptions.max_rejected_fraction
    cfg = sim_config(catalog, workload, row, 1, n_requests, seed)
    prefill_step = step_model(on_prefill_hardware(row), catalog.assumptions)
    kv_bytes, link = float(row["kv_bytes_per_token"]), float(row["pools_link_bytes_per_s"])
    at: dict[tuple[int, int], tuple[list[Miss], SimResult]] = {}

    def judged(p: int, d: int) -> tuple[list[Miss], SimResult]:
        if (p, d) not in at:
            result = pools.simulate_pools(cfg, p, d, kv_bytes, link, prefill_step)
            at[p, d] = (misses(result, workload, ceiling), result)
        return at[p, d]

    def simulate_at(p: int, d: int) -> tuple[bool, float]:
        missed, result = judged(p, d)
        return not missed, miss_ratio_of(result, workload, ceiling)

    def least(at_count: Callable[[int], tuple[bool, float]], start: int, upper: int) -> int | None:
        return fewest(at_count, min(start, upper), upper, None)[1]

    missed = floors_missed(row, catalog.assumptions)
    if missed:
        label, floor, target, bound = missed[0]
        return {
            "sim_bound": bound,
            "sim_reason": f"{label} {floor:.3f} s with no queue > {target:.3f} s target at "
            "any replica count",
        }
    prefill, decode = pools.pool_sizes(row)
    tp, prefill_tp = int(row["tensor_parallel"]), int(row.get("prefill_hw_tensor_parallel", 0))
    # each decode replica tried adds the prefill pool's requests of one more (pools.simulate_pools):
    # the search stops at a multiple of the closed form's pool, where it would be far off
    limit = min(max_replicas, max(POOL_SEARCH_MULTIPLE * decode, 16))
    sizes = pools.fewest_pools(simulate_at, least, prefill, decode, limit)
    if sizes is None:
        worst = at[2 * prefill + 1, limit]
        return {
            **_figures(worst[1]),
            "sim_bound": "queueing",
            "sim_reason": f"queueing: {'; '.join(m.text() for m in worst[0])} with "
            f"{limit} decode replicas (the search limit) and {2 * prefill + 1} prefill",
            "sim_replicas_simulated": limit,
            "sim_requests": int(worst[1].n_measured),
            "sim_runs": len(at),
        }
    p, d = sizes
    result, total = judged(p, d)[1], p + d
    devices = total * tp + offset(p, prefill_tp or tp, tp)  # each pool at its replica size
    return {
        **_figures(result),
        "sim_replicas_needed": total,
        "sim_devices_needed": devices,
        "sim_prefill_pool_replicas": p,
        "meets_targets_sim": not judged(p, d)[0],
        "sim_reason": f"meets targets with {p} prefill + {d} decode replicas"
        + (f" ({devices} devices)" if tp > 1 else ""),
        "sim_replicas_simulated": total,
        "sim_requests": int(result.n_measured),
        "sim_runs": len(at),
    }


def _texts(at: Mapping[int, tuple[list[Miss], SimResult]], replicas: int) -> str:
    """The targets the run at ``replicas`` missed, in words."""
    return "; ".join(m.text() for m in at[replicas][0])


def _sized(catalog: Catalog, job: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
    """One unit of the simulation's work: a candidate sized (its own seed: the same result in
    any process)."""
    row, options = job
    return size_candidate(catalog, row, **options)


def simulate_candidates(
    catalog: Catalog,
    results: Results | pd.DataFrame,
    per_group: int = 3,
    processes: int | Executor = 2,
    max_replicas: int = DEFAULT_MAX_REPLICAS,
    n_requests: int | None = None,
) -> pd.DataFrame:
    """Size the selected candidates (:func:`~planner.plan.selection.select_candidates`) by
    simulation.

    One row per simulated candidate: the key columns (:data:`SIZED_KEYS`: hardware, model,
    precision, workload, tensor_parallel, disaggregated) then :data:`SIZING_COLUMNS`, in the
    results table's order. ``processes`` > 1 spreads candidates over that many worker processes
    (or give an :class:`Executor`); the table is the same either way.
    ``simulated_requests: 0`` in the assumptions turns the simulation off (an empty table).
    """
    table = results if isinstance(results, pd.DataFrame) else results.table
    if n_requests is None and catalog.assumptions.simulated_requests == 0:
        return pd.DataFrame(columns=[*SIZED_KEYS, *SIZING_COLUMNS])
    chosen = select_candidates(table, per_group).sort_index()
    return simulate_rows(catalog, chosen, processes, max_replicas, n_requests)


def simulate_rows(
    catalog: Catalog,
    chosen: pd.DataFrame,
    processes: int | Executor = 2,
    max_replicas: int = DEFAULT_MAX_REPLICAS,
    n_requests: int | None = None,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Size the given results rows by simulation: the key columns then :data:`SIZING_COLUMNS`.
    ``processes`` is the number of local worker processes, or an :class:`Executor` (in
    process, a process pool, Dask); the table is the same whichever runs it. ``progress`` is
    told of each row sized (stage ``"simulating"``). Rows the simulation cannot size
    (:func:`~planner.plan.selection.simulable`: an expert-parallel layout, disaggregated pools
    under a closed loop) are left out: they are planned in closed form (:func:`size_candidate`
    says so of one)."""
    columns = [*SIZED_KEYS, *SIZING_COLUMNS]
    chosen = chosen[simulable(chosen)]
    # The results columns are named by strings, so each row's dict is keyed by them.
    rows = [cast("dict[str, Any]", r.to_dict()) for _, r in chosen.iterrows()]
    options: dict[str, Any] = {"max_replicas": max_replicas, "n_requests": n_requests}
    jobs = [(r, options) for r in rows]
    sized: list[dict[str, Any]] = []

    def tell() -> None:
        if progress is not None:
            progress("simulating", len(sized), len(jobs))

    tell()
    runner = as_executor(processes)
    for result in runner.map(_sized, catalog, jobs):
        sized.append(result)
        tell()
    frame = pd.DataFrame(
        [{**_keys(r), **s} for r, s in zip(rows, sized, strict=True)],
        columns=columns,
    )
    frame["meets_targets_sim"] = frame["meets_targets_sim"].astype(bool)
    return frame
