"""The inputs of one simulation of a candidate: its step times (the latency metrics at the
replica's batch), its cache budget in tokens, the lengths and arrivals one replica sees out of R,
the queue timeout, and the configurations of a sizing run and of the best case. The decisions
behind each are told in :mod:`planner.serving.sizing`.

A replica of S pipeline stages keeps S micro-batches in flight, each scheduled by a virtual
engine of its own (vLLM's). The simulation runs one of them: 1 ÷ S of the replica's requests and
of its cache, each of its steps a pass through the S stages while the others' micro-batches fill
the stages in between, as its own do (S: :func:`planner.plan.columns.pipeline_stages`). So a
pass's reads and arithmetic take S times a stage's (:func:`step_model` divides the bandwidth and
the compute by S), its fixed time is the engine's once, and each of its sequences costs the
engine's time for S of them and the sends between stages: the pass of
:func:`planner.model.pipeline.pipeline_parallel_itl_s`.

An expert-parallel replica of E devices with data-parallel attention (SGLang's) runs E
schedulers, one a device, each with its own sequences and its own cache, stepping together: every
MoE layer's all-to-all joins their tokens. The simulation runs one of them, a rank: 1 ÷ E of the
replica's requests, the engine's batch limit (a rank's) and one device's whole cache, each step
one device's reads and arithmetic over its own batch (the experts all E batches touch: the step
model's ``data_parallel``), with the all-to-all of the step's tokens added, a fixed part a step
and a part a token (:func:`expert_alltoall_terms`). So at a rank's batch B its decode step is the
closed form's :func:`planner.model.parallel.expert_parallel_itl_s` at a device batch of B. A
rank prefills its own prompts: their attention on its device, their routed experts' arithmetic
spread over every rank (:func:`planner.model.parallel.prefill_compute_flops_per_s`; in a
prefill pool, where every rank prefills, one device's). Disaggregated pools of such replicas
are simulated as pools of ranks: the workload's 1 ÷ E share served by as many prefill ranks
and decode ranks as the pools have replicas, each rank of a pool like the others. An
all-to-all hidden under the arithmetic (``expert_overlap`` above 0) is not stepped: such a
replica is planned in closed form (:func:`planner.model.parallel.expert_alltoall_hidden`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from planner.catalog.datafiles import read_trace
from planner.catalog.engines import (
    DEFAULT_ENGINE,
    caches_prefixes,
    prefills_in_chunks,
    step_overhead_per_sequence,
)
from planner.model.disaggregated import (
    PREFILL_HW,
    PREFILL_SIDE_LAYOUT,
    PREFILL_SIDE_LOOKUPS,
    PREFILL_SIDE_METRICS,
)
from planner.model.metric import metrics
from planner.model.pipeline import stage_send_s
from planner.model.units import is_finite
from planner.plan.columns import EP_KEY, pipeline_stages
from planner.plan.lengths import lengths
from planner.serving.simulate import Arrivals, Lengths, SimConfig, StepModel
from planner.serving.traffic import PrefixLayout

if TYPE_CHECKING:
    from planner.catalog import Assumptions, Catalog, Workload


QUEUE_TIMEOUT_TARGET_MULTIPLE = 3.0
"""Queue timeout ÷ the tightest target a request's wait counts against [-] (see module doc)."""

DEFAULT_QUEUE_TIMEOUT_S = 60.0
"""Queue timeout of a workload with no TTFT, end-to-end or task target [s]."""


#: Why an expert-parallel row is not simulated: the simulation steps each rank with its
#: all-to-all added (see the module docstring).
EXPERT_PARALLEL_CLOSED_FORM = (
    "not simulated: an expert-parallel replica whose all-to-all is hidden under its arithmetic "
    "(expert_overlap above 0) is planned in closed form"
)

DELAY_SPREAD = 0.5
"""Each request's preprocessing and network delays vary by up to this share of the workload's
figures, uniformly [-]. A client's delays vary (tokenisation with the prompt, the network, the
HTTP server); with fixed delays every closed-loop user would come back at the same point of the
replica's step grid and each first token would wait the same part of a step, which is an
artefact of the simulation, not a property of engines."""


#: planner.serving.sizing imports the test under this name; it is :func:`is_finite` (a
#: known, finite number), not a second rule.
_finite = is_finite


def users_per_replica(concurrency: int, replicas: int) -> int:
    """Closed loop: users on the most loaded of R replicas, ⌈users ÷ R⌉ [users]."""
    return -(-int(concurrency) // int(replicas))


def data_parallel_ranks(row: Mapping[str, Any]) -> int:
    """The schedulers of a row's expert-parallel replica, one a device (E), else 1."""
    value = float(row.get(EP_KEY, 1))
    return int(value) if math.isfinite(value) and value > 1 else 1


def virtual_engines(row: Mapping[str, Any]) -> int:
    """The schedulers a replica of the row runs, among which its requests are shared: a
    pipeline's micro-batches' or an expert-parallel replica's ranks' (1: one)."""
    return pipeline_stages(row) * data_parallel_ranks(row)


def expert_alltoall_terms(row: Mapping[str, Any], assumptions: Assumptions) -> tuple[float, float]:
    """A rank's all-to-all in a step of an expert-parallel row, (the part every step pays, the
    part each of the step's tokens adds) [s, s/token]: :func:`planner.model.parallel.
    expert_alltoall_s_per_step` at no token (the collectives' latency) and the row's
    ``expert_alltoall_s_per_token``. (0, 0) at EP 1."""
    if data_parallel_ranks(row) == 1:
        return 0.0, 0.0
    formula = metrics()["expert_alltoall_s_per_step"]
    given = {
        "expert_dispatch_bytes_per_value": assumptions.expert_dispatch_bytes_per_value,
        "activation_bytes": assumptions.activation_bytes,
        "expert_imbalance": assumptions.expert_imbalance,
    }

    def at(tokens: float) -> float:
        inputs = given | {"device_batch": tokens}
        return float(formula.func(*(inputs[i] if i in inputs else row[i] for i in formula.inputs)))

    return at(0.0), float(row["expert_alltoall_s_per_token"])


def _per_sequence_s(row: Mapping[str, Any], assumptions: Assumptions) -> float:
    """The time each sequence of a virtual engine's pass costs beyond reads and arithmetic [s]:
    the engine's for the S micro-batches' sequences, S × its time per sequence, and the S − 1
    sends of its activations between stages (:func:`planner.model.pipeline.stage_send_s` of
    one sequence)."""
    own = step_overhead_per_sequence(assumptions)
    s = pipeline_stages(row)
    if s == 1:
        return own
    hidden, network = float(row["hidden_size"]), float(row["network_bytes_per_s"])
    send = float(stage_send_s(1, hidden, assumptions.activation_bytes, network))
    return s * own + (s - 1) * send


def step_model(row: Mapping[str, Any], assumptions: Assumptions) -> StepModel:
    """The simulation's step times for one results row (one virtual engine of a pipeline's,
    one rank of an expert-parallel replica's).

    See :mod:`planner.serving.sizing` for what each field takes from the row. At any batch B
    and context, ``decode_step_s(B, B × mean_context_tokens)`` is the closed form's ``itl_s`` at
    that batch (a mixture reading the experts B sequences touch); with speculative decoding
    :func:`planner.serving.speculation.verify_step_s` ÷ the tokens a step emits is. Of a
    pipeline's virtual engine at B sequences, it is the closed form's pass at a micro-batch of B;
    of an expert-parallel rank, the closed form's step at a device batch of B.
    """
    s = pipeline_stages(row)
    ranks = data_parallel_ranks(row)
    # per device: the device's share of them, as decode_weight_bytes_per_step takes it
    routed = (
        float(row["routed_expert_parameters"])
        * float(row["weight_bytes_per_param"])
        * float(row["routed_share_per_device"])
    )
    allreduce = float(row["allreduce_s_per_token"])
    allreduce = allreduce if math.isfinite(allreduce) else 0.0
    compute = float(row["achieved_compute_flops_per_s"]) / s
    overhead = float(row["step_overhead_s"])
    prefill = 0.0
    if ranks > 1:  # a rank: one device's arithmetic, the all-to-all of its tokens added
        compute = float(row["device_compute_flops_per_s"])
        prefill = float(row["prefill_compute_flops_per_s"])
        fixed, per_token = expert_alltoall_terms(row, assumptions)
        overhead, allreduce = overhead + fixed, allreduce + per_token
    return StepModel(
        weight_bytes=float(row["weight_bytes_per_device"]),
        encoder_bytes=float(row["weight_bytes_per_device"])
        - float(row["decoder_weight_bytes_per_device"]),
        kv_bytes_per_token=float(row["kv_read_bytes_per_sequence_step"])
        / float(row["mean_context_tokens"]),
        bandwidth_bytes_per_s=float(row["memory_bandwidth_bytes_per_s"])
        * float(row["bandwidth_efficiency"])
        / s,
        flops_per_token=float(row["decode_flops_per_token"]),
        compute_flops_per_s=compute,
        attention_flops_per_token_sq=2.0
        * float(row["layers"])
        * float(row["attention_heads"])
        * float(row["head_dim"]),
        step_overhead_s=overhead,
        step_overhead_per_sequence_s=_per_sequence_s(row, assumptions),
        allreduce_s_per_token=allreduce,
        routed_expert_bytes=routed,
        experts=float(row["experts"]),
        experts_per_token=float(row["experts_per_token"]),
        padding_s=float(row["matmul_padding_s"]) * s,
        shared_prefix_tokens=_shared_prefix_tokens(row),
        speculative_tokens=_row_figure(row, "speculative_tokens"),
        draft_read_bytes=_row_figure(row, "draft_read_bytes_per_forward"),
        draft_kv_bytes_per_token=_row_figure(row, "draft_kv_bytes_per_token"),
        draft_flops_per_token=_row_figure(row, "draft_flops_per_token"),
        data_parallel=float(ranks),
        prefill_compute_flops_per_s=prefill,
    )


def on_prefill_hardware(row: Mapping[str, Any]) -> dict[str, Any]:
    """The row as the hardware and layout its prompts run on see it: each hardware figure,
    layout key and metric of a prompt's time over them
    (:data:`~planner.model.disaggregated.PREFILL_SIDE_LOOKUPS`, ``PREFILL_SIDE_LAYOUT`` and
    ``PREFILL_SIDE_METRICS``) replaced by its ``prefill_hw_`` value, the same where the prompts
    run on the row's own. :func:`step_model` of it gives a prefill pool's step times on its own
    device and expert-parallel size."""
    names = (*PREFILL_SIDE_LOOKUPS, *PREFILL_SIDE_LAYOUT, *PREFILL_SIDE_METRICS)
    view = dict(row)
    view.update({n: row[PREFILL_HW + n] for n in names if PREFILL_HW + n in row})
    return view


def _row_figure(row: Mapping[str, Any], column: str) -> float:
    """A non-negative figure of the row, 0 where it has none (speculative decoding's: 0 where
    the candidate is served without it)."""
    value = float(row.get(column, 0.0))
    return value if _finite(value) and value > 0 else 0.0


def _shared_prefix_tokens(row: Mapping[str, Any]) -> float:
    """The shared prefix's cached tokens, held once per replica [tokens] (0 where the row has
    none: prefix caching off or no shared prefix)."""
    tokens = float(row.get("shared_prefix_cached_tokens", 0.0))
    return tokens if _finite(tokens) and tokens > 0 else 0.0


def prefix_hit_ratio(row: Mapping[str, Any]) -> float:
    """The planned share of a prompt found in the prefix cache [-] (0 where the row has none)."""
    ratio = float(row.get("prefix_hit_ratio", 0.0))
    return ratio if _finite(ratio) and ratio > 0 else 0.0


def chunk_tokens(assumptions: Assumptions) -> int | None:
    """The tokens one simulated step may carry when the engine prefills in chunks (its
    ``max_num_batched_tokens``), else None: whole prompts in steps of their own. An engine's
    ``chunked_prefill`` overrides its release's default (engines.yaml)."""
    engine = assumptions.engine if assumptions.engine is not None else DEFAULT_ENGINE
    return engine.max_num_batched_tokens if prefills_in_chunks(engine) else None


def kv_budget_tokens(row: Mapping[str, Any]) -> int:
    """Cache tokens one replica holds for its sequences' own tokens: (budget − the shared
    prefix, held once) ÷ (bytes of a maximum-length sequence's own part per token), the
    sequence's own part being (KV per sequence − shared prefix) over (tokens per sequence − the
    shared prefix's cached tokens) (:func:`planner.model.memory.max_sequences`).

    Zero when the weights leave no room. ``⌊result ÷ (tokens_per_sequence − shared cached
    tokens)⌋ = max_sequences``; with no shared prefix, budget ÷ KV bytes per token.
    """
    shared_bytes = float(row.get("shared_prefix_kv_bytes", 0.0))
    if not (_finite(shared_bytes) and shared_bytes > 0):
        shared_bytes = 0.0
    budget = float(row["kv_budget_bytes"]) - shared_bytes
    own_tokens = float(row["tokens_per_sequence"]) - _shared_prefix_tokens(row)
    per_token = (float(row["kv_bytes_per_sequence"]) - shared_bytes) / own_tokens
    if not budget > 0 or not per_token > 0:
        return 0
    # the tiny slack keeps floor() from losing a whole token to rounding
    return int(math.floor(budget / per_token * (1 + 1e-12)))


def queue_timeout_s(workload: Workload) -> float:
    """How long a request may wait for admission before its client gives up [s].

    ``QUEUE_TIMEOUT_TARGET_MULTIPLE`` × the tightest of the TTFT, end-to-end and task p95 targets
    that are set; ``DEFAULT_QUEUE_TIMEOUT_S`` when none is.
    """
    t = workload.targets
    bounds = [v for v in (t.ttft_p95, t.e2e_p95, t.task_p95) if v is not None]
    if not bounds:
        return DEFAULT_QUEUE_TIMEOUT_S
    return QUEUE_TIMEOUT_TARGET_MULTIPLE * min(bounds)


def _trace(catalog: Catalog, workload: Workload) -> pd.DataFrame:
    """The workload's arrival trace, read from inside the catalog folder (or DataFileError)."""
    if workload.arrival is None or workload.arrival.file is None:
        raise ValueError(f"workload {workload.id!r} has no arrival trace")
    return read_trace(catalog.folder, workload.arrival.file)


def _tokens(frame: pd.DataFrame, column: str) -> np.ndarray | None:
    """A trace's token column as integers (None when the trace has no such column)."""
    if column not in frame.columns:
        return None
    return np.round(pd.to_numeric(frame[column]).to_numpy()).astype(np.int64)


def _trace_arrivals(catalog: Catalog, workload: Workload, replicas: int) -> Arrivals:
    """The simulated replica's share of a trace: tasks 0, R, 2R, ... with their lengths."""
    share = _trace(catalog, workload).iloc[::replicas]
    lengths = {}
    for column in ("prompt_tokens", "output_tokens"):
        values = _tokens(share, column)
        lengths[column] = (
            None if values is None else np.repeat(values, workload.requests_per_task).tolist()
        )
    return Arrivals.trace(share["arrival_s"].to_numpy(dtype=float).tolist(), **lengths)


def _assemble(
    catalog: Catalog,
    workload: Workload,
    row: Mapping[str, Any],
    arrivals: Arrivals,
    n_requests: int | None,
    seed: int | None,
    prompt: Lengths | None = None,
) -> SimConfig:
    a = catalog.assumptions
    return SimConfig(
        step=step_model(row, a),
        kv_budget_tokens=max(1, kv_budget_tokens(row) // pipeline_stages(row)),
        prompt=prompt or lengths(catalog, workload.prompt_tokens, workload.max_output_tokens),
        output=lengths(catalog, workload.output_tokens, workload.max_output_tokens),
        max_output_tokens=workload.max_output_tokens,
        arrivals=arrivals,
        admission=workload.admission,
        preemption="recompute",
        max_batch=a.batch_limit,
        queue_timeout_s=queue_timeout_s(workload),
        requests_per_task=workload.requests_per_task,
        tool_time_s=workload.tool_time,
        preprocess_s=workload.preprocess_time,
        network_s=workload.network_time,
        delay_spread=DELAY_SPREAD,
        n_requests=max(1, a.simulated_requests if n_requests is None else n_requests),
        seed=a.seed if seed is None else seed,
        chunk_tokens=chunk_tokens(a),
        prefix_hit_ratio=prefix_hit_ratio(row),
        kv_block_tokens=_block_tokens(row, a),
        acceptance_rate=min(_row_figure(row, "acceptance_rate"), 1.0),
        prefix_cache=prefix_layout(workload, caches_prefixes(a.engine)),
    )


def prefix_layout(workload: Workload, caching: bool) -> PrefixLayout | None:
    """What the simulation's least-recently-used prefix cache keeps for the workload: its
    history and documents, where the engine caches prefixes (``caching``) and the workload's
    prefix has either and no measured hit ratio (a measured ratio is planned with as it is);
    else None, and each request finds the planned hit ratio."""
    prefix = workload.prefix
    if prefix is None or prefix.measured_hit_ratio is not None:
        return None
    if not caching or not (prefix.history_tokens > 0 or prefix.document_tokens > 0):
        return None
    # the workload's figure is a mean over a task's calls, its first re-sending none
    calls = workload.requests_per_task
    history = prefix.history_tokens * calls / (calls - 1) if calls > 1 else 0
    return PrefixLayout(
        history_tokens=round(history),
        document_tokens=int(prefix.document_tokens),
        questions_per_document=int(prefix.questions_per_document),
    )


def _block_tokens(row: Mapping[str, Any], assumptions: Assumptions) -> int:
    """The cache's block size [tokens]: the row's, else the assumptions'."""
    block = float(row.get("kv_block_tokens", math.nan))
    if _finite(block) and block >= 1:
        return int(block)
    return max(1, int(assumptions.kv_block_tokens))


def sim_config(
    catalog: Catalog,
    workload: Workload,
    row: Mapping[str, Any],
    replicas: int,
    n_requests: int | None = None,
    seed: int | None = None,
) -> SimConfig:
    """The simulation of the most loaded of ``replicas`` replicas serving ``workload`` (of one
    scheduler of a pipeline's or an expert-parallel replica's, :func:`virtual_engines`).

    ``n_requests`` and ``seed`` default to ``simulated_requests`` and ``seed`` of the catalog's
    assumptions. Arrivals per replica, cache budget, step times and queue timeout as the module
    docstring says; admission from the workload, recompute on preemption.
    """
    if replicas < 1:
        raise ValueError("replicas must be >= 1")
    replicas *= virtual_engines(row)  # a replica's schedulers share its requests
    arrival = workload.arrival
    if arrival is None:
        arrivals = Arrivals.closed(users_per_replica(workload.concurrency or 1, replicas))
    elif arrival.pattern == "trace":
        arrivals = _trace_arrivals(catalog, workload, replicas)
    elif arrival.pattern == "bursty":
        arrivals = Arrivals.bursty(float(arrival.rate or 0) / replicas, arrival.burst_factor)
    else:
        arrivals = Arrivals.poisson(float(arrival.rate or 0) / replicas)
    return _assemble(catalog, workload, row, arrivals, n_requests, seed)


def best_case_config(
    catalog: Catalog,
    workload: Workload,
    row: Mapping[str, Any],
    n_requests: int | None = None,
    seed: int | None = None,
) -> SimConfig:
    """One user running the workload's tasks back to back: no other request on the replica.

    What any replica count tends to as R grows; a trace's own prompt lengths are drawn from.
    """
    prompt = None
    if workload.arrival is not None and workload.arrival.pattern == "trace":
        prompts = _tokens(_trace(catalog, workload), "prompt_tokens")
        if prompts is not None:
            prompt = Lengths.samples(prompts.tolist())
    return _assemble(catalog, workload, row, Arrivals.closed(1), n_requests, seed, prompt=prompt)
