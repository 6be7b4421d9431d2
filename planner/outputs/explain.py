"""The arithmetic of one candidate, step by step, each figure from the one before.

Each step is a metric: its formula over names, the same formula over this candidate's numbers
(rendered from the one definition, so the text cannot disagree with the result), and the result
with GB and GiB side by side for memory.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, cast

from planner.catalog import Catalog
from planner.model.metric import Metric
from planner.outputs.formatting import duration, exact_binary, memory
from planner.plan.sweep import Results, evaluate_subset
from planner.plan.tables import GLOBALS

_OPERATORS = {
    "*": " × ",
    "/": " ÷ ",
    "+": " + ",
    "-": " − ",
    "<=": " ≤ ",
    ">=": " ≥ ",
    "<>": " ≠ ",
    ">": " > ",
    "<": " < ",
    "=": " = ",
}
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
_SPLIT = re.compile(r"(<=|>=|<>|[*/+<>=-])")


def _number(value: Any) -> str:
    if isinstance(value, (bool, str)) or value is None:
        return str(value)
    value = float(value)
    if math.isnan(value):
        return "n/a"
    if (value.is_integer() or abs(value) >= 1e6) and abs(value) < 1e15:
        text = f"{value:,.0f}"
    elif value != 0 and not 1e-4 <= abs(value) < 1e15:
        mantissa, exponent = f"{value:.6g}".split("e")
        text = f"{mantissa}·10{str(int(exponent)).translate(_SUPERSCRIPT)}"
    else:
        text = f"{value:,.6g}"
    # thousands separated by thin spaces: commas separate function arguments in formulas
    text = text.replace(",", "\u2009")
    return f"({text})" if value < 0 else text


def _pretty(formula: str) -> str:
    parts = _SPLIT.split(formula.replace(",", ", "))
    return "".join(_OPERATORS.get(p, p) for p in parts)


def _with_unit(m: Metric, value: Any) -> str:
    if m.kind in ("bool", "text"):
        return str(value)
    if m.unit == "B":
        exact = exact_binary(value) if value > 0 else ""
        text = f"{_number(value)} B = {memory(value)}"
        return text + (f" = {exact}" if exact.endswith(("KiB", "MiB")) else "")
    if m.unit == "s":
        return f"{_number(value)} s = {duration(value)}"
    return f"{_number(value)} {m.unit}".rstrip()


def explain_row(results: Results, row: int = 0) -> str:
    """The step-by-step arithmetic of row ``row`` of ``results``."""
    record = results.table.iloc[row]
    values = cast("dict[str, Any]", record.to_dict())  # the results columns are named by strings
    for g in GLOBALS:
        values[g.name] = results.inputs.globals[g.cell] * g.scale
    lines = [
        f"Candidate: hardware {record['hardware']} · model {record['model']} · "
        f"precision {record['precision']} · workload {record['workload']}",
        "",
        "Assumptions: "
        + ", ".join(f"{g.cell} = {_number(results.inputs.globals[g.cell])}" for g in GLOBALS),
        "",
    ]
    for m in results.metrics:
        if m.restates:
            continue  # unit restatements: already shown beside their base figure
        names = _pretty(m.formula_text())
        numbers = _pretty(m.expression().render(lambda n: _number(values[n])))
        lines.append(f"{m.name}: {m.description}")
        if m.kind == "text":
            lines.append(f"  = {values[m.name]}")
        else:
            lines.append(f"  {names}")
            lines.append(f"  = {numbers}")
            lines.append(f"  = {_with_unit(m, values[m.name])}")
        lines.append("")
    lines.append(
        "Bounds are idealised: weight_read_s and compute_bound_s are lower bounds from datasheet "
        "rates, not measured latency. A load that fits proves only that the initial allocation "
        "fits; validate with measured peak memory under representative load."
    )
    return "\n".join(lines)


def simulation_text(catalog: Catalog, results: Results) -> str:
    """Size the candidate by simulation and say what it needs, or what binds."""
    from planner.serving.sizing import size_candidate

    row = results.table.iloc[0]
    if not row["replica_fits"]:
        return "Simulation: not run, no maximum-length sequence fits a replica."
    # A results row (a Series) reads its values by column name, the way the Mapping does.
    sim = size_candidate(catalog, cast("Mapping[str, Any]", row))
    lines = [
        "Simulation (discrete-event, "
        f"{catalog.assumptions.simulated_requests:,} requests per run):",
        f"  {sim['sim_reason']}",
    ]
    at = sim["sim_replicas_simulated"]
    where_ = "one request at a time" if at != at else f"{int(at)} replica(s)"
    lines.append(
        f"  at {where_}: TTFT p95 {duration(sim['ttft_p95_s'])}, "
        f"ITL p95 {duration(sim['itl_p95_s'])}, e2e p95 {duration(sim['e2e_p95_s'])}, "
        f"task p95 {duration(sim['task_p95_s'])}, rejected {sim['rejected_fraction']:.2%}, "
        f"queued {sim['queued_fraction']:.1%}"
    )
    return "\n".join(lines)


def explain(
    catalog: Catalog,
    hardware: str,
    model: str,
    precision: str,
    workload: str,
    simulate: bool = True,
) -> str:
    """Explain one candidate named by its four ids (each must exist in ``catalog``)."""
    for kind, entry_id in (
        ("hardware", hardware),
        ("models", model),
        ("precisions", precision),
        ("workloads", workload),
    ):
        catalog.get(kind, entry_id)
    results = evaluate_subset(catalog, hardware, model, precision, workload)
    text = explain_row(results, 0)
    if simulate and catalog.assumptions.simulated_requests > 0:
        text += "\n\n" + simulation_text(catalog, results)
    return text
