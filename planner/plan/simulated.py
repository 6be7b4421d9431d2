"""The Simulated sheet: the serving simulation's figures per candidate, the Plan values each was
simulated with, and the lookups that bring the figures into the plan.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd

from planner.model.simulated import SIMULATED_FIGURES, SimulatedFigure
from planner.model.targets import TARGETS
from planner.plan.columns import CANDIDATE, SIMULATED, Column, InputTables, Lookup, _frame


def _figure(figure: SimulatedFigure) -> Callable[[Any], Any]:
    """Reads a simulated figure off a row of the sizing table (NaN where an optional one is
    missing)."""
    if figure.optional:
        return lambda r: r.get(figure.name, float("nan"))
    return lambda r: r[figure.name]


#: Figures from the serving simulation (:mod:`planner.serving.sizing`), one row per simulated
#: candidate.
SIMULATED_COLUMNS = [
    Column(
        "id",
        "",
        "candidate id (hardware|model|precision|workload|tensor_parallel)",
        lambda r: r["candidate"],
        "text",
    ),
    Column(
        "sim_replicas_needed",
        "replicas",
        "fewest replicas meeting every p95 target and the rejection ceiling (empty: none found)",
        lambda r: r["sim_replicas_needed"],
    ),
    Column(
        "sim_prefill_pool_replicas",
        "replicas",
        "of them, a disaggregated candidate's prefill pool, simulated with its decode pool "
        "(0 for one pool)",
        lambda r: r.get("sim_prefill_pool_replicas", 0.0),
    ),
    Column(
        "sim_meets_targets",
        "",
        "1 when the simulation met every target, else 0",
        lambda r: float(bool(r["meets_targets_sim"])),
    ),
    *(Column(f.name, f.unit, f.description, _figure(f)) for f in SIMULATED_FIGURES),
    Column(
        "sim_bound",
        "",
        "what binds when the targets are missed: memory, bandwidth, compute, queueing, ...",
        lambda r: r.get("sim_bound", ""),
        "text",
    ),
    Column(
        "sim_replicas_simulated",
        "replicas",
        "replicas in the run the percentiles come from (empty: one request at a time)",
        lambda r: r.get("sim_replicas_simulated", float("nan")),
    ),
    Column(
        "sim_reason", "", "the simulation's verdict in words", lambda r: r["sim_reason"], "text"
    ),
    Column(
        "sim_inputs_unchanged",
        "",
        "1 while every input the simulation read still has the value it was simulated with, "
        "else 0 (a formula over the Plan)",
        lambda r: 1.0,
    ),
    Column(
        "changed_input",
        "",
        "the first Plan column whose value differs from the one simulated (a formula)",
        lambda r: "",
        "text",
    ),
    Column(
        "plan_row",
        "",
        "the candidate's row on the Plan sheet (a formula)",
        lambda r: math.nan,
    ),
]

#: Plan columns whose values the serving simulation read, directly or through the step times:
#: memory and weights (the KV budget), the cache shape, bandwidth and its efficiency (the weight
#: read), compute and its efficiency, the interconnect, the step times, the lengths, the load
#: and the targets. None of them depends on a simulated figure.
SIMULATION_INPUTS = (
    "kv_budget_bytes",
    "kv_bytes_per_sequence",
    "weight_read_s",
    "achieved_compute_flops_per_s",
    "allreduce_s_per_token",
    "itl_s",
    "prefill_s",
    "prompt_tokens",
    "prompt_tokens_mean",
    "max_output_tokens",
    "output_tokens_mean",
    "concurrency",
    "arrival_rate_per_s",
    "requests_per_task",
    "tool_time_s",
    *(t.column for t in TARGETS),
)


def simulation_input_column(name: str) -> str:
    """The Simulated sheet's column that records the value Plan column ``name`` had when the
    candidate was simulated."""
    return f"sim_input_{name}"


#: Columns of the Simulated sheet that the workbook computes with formulas over the Plan.
SIMULATED_FORMULA_COLUMNS = ("sim_inputs_unchanged", "changed_input", "plan_row")

SIM_LOOKUPS = [
    Lookup(c.name, CANDIDATE, c.name, 1, c.unit, c.description, kind=c.kind)
    for c in SIMULATED_COLUMNS[1:]
    if c.name not in SIMULATED_FORMULA_COLUMNS[1:]
]


def simulated_sheet(simulated: pd.DataFrame | None) -> pd.DataFrame:
    """The Simulated sheet from :func:`planner.serving.sizing.simulate_candidates`' table (or
    empty)."""
    if simulated is None or simulated.empty:
        return pd.DataFrame(
            {
                c.name: pd.Series(dtype=object if c.kind == "text" else float)
                for c in SIMULATED_COLUMNS
            }
        )
    return _frame(tuple(row for _, row in simulated.iterrows()), SIMULATED_COLUMNS)


def record_simulation_inputs(inputs: InputTables, table: pd.DataFrame) -> None:
    """Add to the Simulated sheet the value of every :data:`SIMULATION_INPUTS` column for each
    simulated candidate, read from ``table`` (the evaluated plan: the simulation read the same
    values, since none of these columns depends on a simulated figure)."""
    sheet = inputs.sheets[SIMULATED]
    present = [n for n in SIMULATION_INPUTS if n in table]
    rows = (  # no candidate simulated: no row to find
        table.iloc[:0]
        if sheet.empty
        else table.drop_duplicates(CANDIDATE).set_index(CANDIDATE).reindex(sheet["id"])
    )
    found = {simulation_input_column(n): rows[n].to_numpy(dtype=float) for n in present}
    added = pd.DataFrame(found, index=sheet.index)  # one frame, not a column at a time
    inputs.sheets[SIMULATED] = pd.concat(
        [sheet.drop(columns=list(found), errors="ignore"), added], axis=1
    )
    inputs.columns[SIMULATED] = SIMULATED_COLUMNS + [
        Column(
            simulation_input_column(name),
            "",
            f"{name} when the candidate was simulated (compared with the Plan's)",
            lambda r: math.nan,
        )
        for name in present
    ]
