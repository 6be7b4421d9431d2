"""The report's sections as plain values: which options to show, the sentences, the rows of
its tables and its charts, prepared so that the template does no arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import pandas as pd
from markupsafe import Markup

from planner.catalog import Catalog, Workload
from planner.catalog.engines import step_overhead_per_sequence
from planner.catalog.workloads import length_summary
from planner.model.calibration import latency_band_fraction
from planner.model.targets import TARGETS as LATENCY_TARGETS
from planner.outputs import charts
from planner.outputs.advice import (
    api_sentence,
    break_even_text,
    buy_or_rent_sentence,
    margin_text,
)
from planner.outputs.formatting import binary_decimal, count, duration, finite, memory, usd
from planner.plan.deployment import API, BUY, RENT, Ask, Line, advice
from planner.plan.recommend import GROUP, ORDER, candidate_label, recommendations
from planner.plan.schedule import HOURS, PLANS, GrowthCase, WorkloadSchedule, break_even_hours
from planner.plan.sensitivity import SWING, Bar
from planner.plan.uncertainty import Bands, leading_options

#: Latency targets: label, closed-form estimate column, target column, simulated p95 column.
TARGETS: list[tuple[str, str, str, str]] = [
    (t.label, t.estimate, t.column, t.simulated) for t in LATENCY_TARGETS
]

#: What the estimates leave out, for the risks section.
NOT_MODELLED = [
    "Closed-form latency figures are step-time estimates built on idealised bandwidth and compute "
    "bounds (the roofline model), scaled by the efficiency assumptions, with no queueing. The "
    "serving simulation, where it ran, adds queueing, admission and prefill stalls at the "
    "forecast load; it is a model too. Neither is a measured latency.",
    "No prefix-cache hits are assumed: every sequence reserves its longest prompt plus its "
    "promised maximum output.",
    "Pipeline parallelism, expert parallelism and disaggregated prefill/decode are not modelled; "
    "only tensor parallelism within a replica.",
    "Each engine's scheduler is modelled by its release's defaults (chunked prefill or whole "
    "prompts, the time per decoding sequence); a cost per request (scheduling and "
    "detokenising many short requests) is not, which makes very short requests at full load "
    "look faster than they are.",
    "Speculative decoding, quantised attention kernels and CUDA-graph effects are not modelled.",
    "Network contention between replicas, storage and loading time, and failures or spares are "
    "not modelled.",
    "Allocator fragmentation beyond paging, and activation peaks of long prefills, are covered "
    "only by the runtime overhead and the reserve.",
]


def memory_cell(value: Any) -> Markup:
    """A memory figure for a table cell: GiB (or MiB) with GB (or MB) beneath it."""
    if not finite(value):
        return Markup("n/a")
    binary, decimal = binary_decimal(float(value))
    return Markup(f'{binary}<br><span class="small">{decimal}</span>')


def featured(ranks: pd.DataFrame) -> pd.DataFrame:
    """The options the report shows, with their ``role``, per workload × model.

    The recommended option and the runner-up; where no option is eligible, the one that comes
    closest (a replica holds a sequence; targets met first, then the lowest inter-token latency),
    so that the charts still show what the catalog can do. Input is :func:`recommend.ranked`.
    """
    parts = []
    for _, group in ranks.groupby(GROUP, sort=False):
        top = group[group["rank"].notna()].sort_values("rank").head(2)
        if len(top):
            parts.append(top.assign(role=["recommended", "runner-up"][: len(top)]))
            continue
        fitting = group[group["replica_fits"].astype(bool)]
        if len(fitting):
            closest = fitting.sort_values(["meets_targets", "itl_load_s"], ascending=[False, True])
            parts.append(closest.head(1).assign(role="closest, not eligible"))
    if not parts:
        return ranks.head(0).assign(role=pd.Series(dtype=str))
    return pd.concat(parts)


def short_label(row: pd.Series | dict[str, Any]) -> str:
    """A chart label: ``llama-3.1-8b · h100-sxm-80gb · fp8 · TP 2 (runner-up)``."""
    text = f"{row['model']} · {row['hardware']} · {row['precision']}"
    if int(row["tensor_parallel"]) > 1:
        text += f" · TP {int(row['tensor_parallel'])}"
    if row["role"] != "recommended":
        text += f" ({row['role']})"
    return text


def was_simulated(row: pd.Series | dict[str, Any]) -> bool:
    """Whether the serving simulation sized this option (its p95 figures are in the row)."""
    return bool(row.get("simulated", False))


def targets_met(row: pd.Series | dict[str, Any]) -> list[str]:
    """The latency targets an option is held to, each with the figure that met it.

    The simulated p95 where the serving simulation sized the option (``ITL p95 42.1 ms ≤ 60 ms``),
    else the closed-form estimate (``ITL est. 45.7 ms ≤ 60 ms``).
    """
    simulated = was_simulated(row)
    out = []
    for name, estimate, target, p95 in TARGETS:
        if not finite(row[target]):
            continue
        if simulated and finite(row.get(p95)):
            out.append(f"{name} p95 {duration(row[p95])} ≤ {duration(row[target])}")
        else:
            out.append(f"{name} est. {duration(row[estimate])} ≤ {duration(row[target])}")
    return out


def replicas(row: pd.Series | dict[str, Any]) -> Any:
    """Replicas to provision: the simulation-raised count where the table has it."""
    return row["replicas_planned"] if "replicas_planned" in row else row["replicas_needed"]


def target_text(workload: Workload) -> str:
    """The workload's latency targets in words."""
    targets = workload.targets
    parts = [
        f"{name} p95 ≤ {duration(value)}"
        for name, value in ((t.label, getattr(targets, t.field)) for t in LATENCY_TARGETS)
        if value is not None
    ]
    return ", ".join(parts) if parts else "no latency targets set"


def _plural(n: Any, word: str) -> str:
    return f"{count(n)} {word}{'' if finite(n) and float(n) == 1 else 's'}"


def _option_words(row: pd.Series, catalog: Catalog) -> str:
    """An option in words: ``Llama 3.1 70B on 4 devices × NVIDIA B200 (1 node; 2 replicas of
    tensor parallel 2 at nvfp4)``."""
    hardware = catalog.get("hardware", row["hardware"]).label
    model = catalog.get("models", row["model"]).label
    return (
        f"{model} on {_plural(row['devices_needed'], 'device')} × {hardware} "
        f"({_plural(row['nodes_needed'], 'node')}; {_plural(replicas(row), 'replica')}"
        f" of tensor parallel {int(row['tensor_parallel'])} at {row['precision']})"
    )


def summary_sentence(
    workload: Workload,
    winners: pd.DataFrame,
    catalog: Catalog,
    why: list[str],
    line: Line | None = None,
    reason: str | None = None,
) -> str:
    """The recommendation for a workload in a few sentences: the option, buy or rent, the API.

    With the ask's ``line`` for the workload, the sentences speak of the line's option (the
    model deployment.yaml names, where it names one) and give the cheapest other model only as
    an alternative; where the ask leaves the workload unserved, ``reason`` (the ask's) says why.
    """
    if line is None and reason:
        verb = "Nothing qualifies for" if winners.empty else "Nothing in the ask serves"
        return f"{verb} {workload.label}: {reason}."
    if winners.empty and line is None:
        reasons = "; ".join(why) if why else "no candidate was evaluated"
        return f"Nothing qualifies for {workload.label}: {reasons}."
    ordered = winners.sort_values(ORDER, kind="stable")
    best = line.row if line is not None else ordered.iloc[0]  # else the cheapest model's winner
    months = catalog.assumptions.amortisation_months
    targets = targets_met(best)
    verb = {API: "call the API rather than deploy", RENT: "rent", BUY: "buy"}[advice(best)]
    if line is not None and line.chosen_by == "deployment.yaml":
        opening = f"For {workload.label}, deployment.yaml names {_option_words(best, catalog)}"
    else:
        opening = (
            f"For {workload.label}, the cheapest qualifying option is "
            f"{_option_words(best, catalog)}"
        )
    others = ordered[ordered["model"] != best["model"]]
    alternative = ""
    if line is not None and line.chosen_by == "deployment.yaml" and len(others):
        cheapest = others.iloc[0]
        cheaper = float(cheapest["cost_usd"]) < float(best["cost_usd"])
        alternative = (
            f"The cheapest other qualifying model, an alternative deployment.yaml does not name, "
            f"is {_option_words(cheapest, catalog)} at {usd(cheapest['cost_usd'])} USD over "
            f"{months} months against {usd(best['cost_usd'])} USD"
            + (" (cheaper)." if cheaper else ".")
        )
    return (
        f"{opening}: {verb}. "
        + buy_or_rent_sentence(best, months)
        + api_sentence(best, catalog)
        + (f"It meets {', '.join(targets)}" if targets else "The workload sets no latency target")
        + (
            ", sized by the serving simulation."
            if was_simulated(best)
            else "; sized in closed form (not simulated)."
        )
        + (f" {alternative}" if alternative else "")
    )


def _option_row(row: pd.Series, catalog: Catalog) -> dict[str, Any]:
    """One recommended or runner-up option as the summary and cost tables show it."""
    model = catalog.get("models", row["model"])
    months = catalog.assumptions.amortisation_months
    return {
        "model": row["model"],
        "model_label": model.label,
        "revision": model.revision or "",
        "role": row.get("role", "recommended"),
        "option": candidate_label(row),
        "hardware": row["hardware"],
        "hardware_label": catalog.get("hardware", row["hardware"]).label,
        "devices": count(row["devices_needed"]),
        "nodes": count(row["nodes_needed"]),
        "replicas": count(replicas(row)),
        "sizing": "simulated" if was_simulated(row) else "closed form",
        "capital": usd(row["capital_usd"]),
        "opex": usd(row["opex_usd_per_month"]),
        "tco": usd(row["tco_usd"]),
        "decision": advice(row),
        "margin": margin_text(row, catalog.assumptions.margin),
        "cost": usd(row["cost_usd"]),
        "rent": usd(row["rent_usd"]),
        "api": usd(row["api_usd"]) if finite(row.get("api_usd")) else "no price",
        "owned": usd(row["owned_usd_per_month"]),
        "cloud": usd(row["cloud_usd_per_month"]),
        "break_even": break_even_text(row, months, short=True),
        "per_million": f"{row['owned_usd_per_million_tokens']:,.2f}"
        if finite(row["owned_usd_per_million_tokens"])
        else "n/a",
        "targets": targets_met(row),
    }


def _summary_rows(
    recs: pd.DataFrame, winners: pd.DataFrame, catalog: Catalog
) -> list[dict[str, Any]]:
    """One row per model: its recommendation, or why nothing qualifies."""
    rows = []
    by_model = {r["model"]: r for _, r in winners.iterrows()}
    ordered = recs.sort_values(ORDER[0], na_position="last", kind="stable")
    for _, rec in ordered.iterrows():
        if rec["model"] in by_model:
            rows.append(_option_row(by_model[rec["model"]], catalog) | {"none": None})
        else:
            model = catalog.get("models", rec["model"])
            rows.append(
                {
                    "model": rec["model"],
                    "model_label": model.label,
                    "revision": model.revision or "",
                    "none": f"nothing qualifies among {_plural(rec['options'], 'option')}: "
                    f"{rec['why_none']}",
                }
            )
    return rows


def workload_record(catalog: Catalog, workload: Workload, rows: pd.DataFrame) -> list[list[str]]:
    """The workload's shape, as a performance record starts: lengths, load, agent loop, targets."""
    prompt = length_summary(catalog, workload, "prompt")
    output = length_summary(catalog, workload, "output")
    record = [
        ["Description", workload.description or workload.label],
        ["Prompt tokens (mean / p95 / max)", " / ".join(count(v) for v in prompt)],
        ["Output tokens (mean / p95 / max)", " / ".join(count(v) for v in output)],
        ["Promised maximum output", f"{count(workload.max_output_tokens)} tokens"],
        [
            "Tokens reserved per sequence",
            f"{count(rows['tokens_per_sequence'].iloc[0])} (longest prompt + promised output)",
        ],
    ]
    if workload.concurrency is not None:
        record.append(["Load", f"{count(workload.concurrency)} concurrent users (closed loop)"])
    elif workload.arrival is not None:
        a = workload.arrival
        text = f"open loop, {a.pattern} arrivals"
        if a.rate is not None:
            text += f" at {a.rate:,.3g} tasks/s"
        if a.burst_factor > 1:
            text += f", bursts × {a.burst_factor:g}"
        if a.file:
            text += f", trace {a.file}"
        record.append(["Load", text])
    record += [
        [
            "Agent loop",
            f"{_plural(workload.requests_per_task, 'model call')} per task, "
            f"{duration(workload.tool_time)} of tool time between calls",
        ],
        [
            "Preprocessing / network",
            f"{duration(workload.preprocess_time)} / {duration(workload.network_time)}",
        ],
        ["Latency targets", target_text(workload)],
        ["Admission policy", ADMISSION.get(workload.admission, workload.admission)],
        [
            "Evaluated on",
            f"{rows['model'].nunique()} models × {rows['precision'].nunique()} precisions × "
            f"{rows['hardware'].nunique()} devices: {len(rows):,} candidates",
        ],
        ["Source", workload.source or "not given"],
    ]
    return record


ADMISSION = {
    "reserve-max": "reserve-max: each admitted request reserves its promised maximum, so it can "
    "always complete",
    "current-length": "current-length: admitted on the current prompt length; a request may fail "
    "or be preempted midway through generation",
}


def _memory_rows(
    shown: pd.DataFrame, segments: pd.DataFrame, labels: list[str]
) -> list[dict[str, str]]:
    return [
        {
            "label": label,
            "weights": memory_cell(seg["weights"]),
            "runtime": memory_cell(seg["runtime"]),
            "reserve": memory_cell(seg["reserve"]),
            "kv": memory_cell(seg["kv"]),
            "batch": count(row["decode_batch"]),
            "per_sequence": f"{float(row['kv_mib_per_sequence']):,.2f} MiB",  # the metric
            "free": memory_cell(seg["free"]),
            "total": memory_cell(seg["total"]),
        }
        for label, (_, row), (_, seg) in zip(
            labels, shown.iterrows(), segments.iterrows(), strict=True
        )
    ]


def _percent(value: Any) -> str:
    return f"{float(value):.1%}" if finite(value) else "n/a"


def simulation_rows(shown: pd.DataFrame) -> list[dict[str, str]]:
    """What the serving simulation found for each shown option (empty when none was simulated)."""
    if "simulated" not in shown or not shown["simulated"].astype(bool).any():
        return []
    rows = []
    for _, row in shown.iterrows():
        simulated = was_simulated(row)
        rows.append(
            {
                "label": short_label(row),
                "replicas": f"{count(row['replicas_needed'])} → "
                f"{count(row.get('sim_replicas_needed')) if simulated else 'not simulated'}",
                **{
                    name: duration(row.get(p95)) if simulated else "–"
                    for name, _, _, p95 in TARGETS
                },
                "rejected": _percent(row.get("rejected_fraction")) if simulated else "–",
                "verdict": str(row.get("sim_reason") or "") if simulated else "",
            }
        )
    return rows


def _memory_part(
    catalog: Catalog, shown: pd.DataFrame, main: pd.DataFrame, key: str
) -> dict[str, Any]:
    """The memory chart (every shown option) and table (recommended ones) of a workload."""
    a = catalog.assumptions
    segments = charts.memory_segments(shown, a.runtime_overhead, a.reserve)
    labels = [short_label(r) for _, r in shown.iterrows()]
    main_labels = [short_label(r) for _, r in main.iterrows()]
    return {
        "memory_svg": Markup(charts.memory_breakdown(labels, segments, key)),
        "memory_rows": _memory_rows(main, segments.loc[main.index], main_labels),
    }


def _concurrency_part(catalog: Catalog, main: pd.DataFrame, key: str) -> Markup:
    """Concurrency against tokens per sequence for each distinct recommended configuration."""
    a = catalog.assumptions
    distinct = main.drop_duplicates(["model", "hardware", "precision", "tensor_parallel"])
    first = main.iloc[0]
    return Markup(
        charts.concurrency_chart(
            distinct,
            [short_label(r) for _, r in distinct.iterrows()],
            a.kv_block_tokens,
            float(first["tokens_per_sequence"]),
            float(first["concurrency"]),
            float(a.batch_limit),
            key,
        )
    )


def _charts(
    catalog: Catalog, workload: Workload, shown: pd.DataFrame, winners: pd.DataFrame, index: int
) -> dict[str, Any]:
    """The charts and their tables for one workload (``None`` where there is nothing to plot).

    Memory shows every featured option; concurrency, latency and the simulation table the one
    per model (recommended, or closest). Costs are a table (the cost rows), not a chart.
    """
    out: dict[str, Any] = {
        "memory_svg": None,
        "memory_rows": [],
        "concurrency_svg": None,
        "latency_svg": None,
        "simulation": [],
    }
    if shown.empty:
        return out
    main = shown[shown["role"] != "runner-up"]
    out.update(_memory_part(catalog, shown, main, f"w{index}m"))
    out["concurrency_svg"] = _concurrency_part(catalog, main, f"w{index}c")
    panels = ["itl_load_s", "ttft_load_s", "e2e_load_s"]
    panels += ["task_load_s"] if workload.requests_per_task > 1 else []
    labels = [short_label(r) for _, r in main.iterrows()]
    out["latency_svg"] = Markup(charts.latency_chart(main, labels, panels, f"w{index}l"))
    out["simulation"] = simulation_rows(main)
    return out


#: Models the appendix shows per workload: the cheapest eligible ones, each with its best option
#: (and runner-up in the memory chart), and the ask's own model where it is not among them; the
#: rest are in results.csv and the workbook.
LEADING_MODELS = 5


def leading(recs: pd.DataFrame, winners: pd.DataFrame, line: Line | None) -> list[str]:
    """The models a workload's appendix shows (:data:`LEADING_MODELS` of them at most, the
    ask's model added): those with an eligible option, cheapest first (``recs``:
    :func:`recommendations` of the workload; ``winners``: its recommended options)."""
    eligible = set(winners["model"])
    ordered = recs.sort_values(ORDER[0], na_position="last", kind="stable")
    models = [m for m in ordered["model"] if m in eligible][:LEADING_MODELS]
    if line is not None and line.model not in models:
        models.append(line.model)
    return models


def workload_sections(
    catalog: Catalog, table: pd.DataFrame, ranks: pd.DataFrame, plan: Ask | None = None
) -> list[dict[str, Any]]:
    """Everything the report shows about each workload, in catalog order: the sentence of the
    ask's line (``plan``), and the tables and charts of its leading models (:func:`leading`)."""
    recs = recommendations(table)
    shown_all = featured(ranks)
    lines = {line.workload: line for line in plan.lines} if plan is not None else {}
    reasons = plan.reasons if plan is not None else {}
    items = []
    for index, workload in enumerate(catalog.workloads):
        rows = table[table["workload"] == workload.id]
        if rows.empty:
            continue
        shown = shown_all[shown_all["workload"] == workload.id]
        winners = shown[shown["role"] == "recommended"]
        recs_w = recs[recs["workload"] == workload.id]
        why = [
            f"{r['model']}: {r['why_none']}"
            for _, r in recs_w.iterrows()
            if r["model"] not in set(winners["model"])
        ]
        line = lines.get(workload.id)
        models = leading(recs_w, winners, line)
        shown = shown[shown["role"] != "runner-up"]  # each model's best option only
        if models:  # the leading models' options; else the closest options of a few models
            shown = shown[shown["model"].isin(models)]
        else:
            shown = shown[shown["model"].isin(list(dict.fromkeys(shown["model"]))[:LEADING_MODELS])]
        summary = _summary_rows(recs_w, winners, catalog)
        listed = [r for r in summary if r["none"] is None and r["model"] in models]
        unqualified = [r for r in summary if r["none"] is not None]
        items.append(
            {
                "workload": workload,
                "anchor": f"w{index}",
                "sentence": summary_sentence(
                    workload, winners, catalog, why, line, reasons.get(workload.id)
                ),
                "targets": target_text(workload),
                "summary": listed + unqualified[:LEADING_MODELS],
                "more": {
                    "eligible": len(set(winners["model"]) - set(models)),
                    "unqualified": max(0, len(unqualified) - LEADING_MODELS),
                },
                "record": workload_record(catalog, workload, rows),
                "cost_rows": [
                    _option_row(r, catalog)
                    for _, r in shown[shown["role"] != "closest, not eligible"].iterrows()
                ],
                "n_candidates": len(rows),
                "n_eligible": int(rows["eligible"].astype(bool).sum()),
                **_charts(catalog, workload, shown, shown[shown["role"] == "recommended"], index),
            }
        )
    return items


def lost_table(ranks: pd.DataFrame, workloads: Iterable[Workload]) -> dict[str, Any]:
    """How many candidates of each workload won, lost on cost, or failed memory or latency.

    Input is :func:`recommend.ranked`: the recommended option has rank 1, other eligible options
    lost on cost, and the rest carry the ``status`` that ruled them out.
    """
    rank = ranks["rank"]
    verdict = ranks["status"].astype(object).where(rank.isna(), "eligible: more expensive")
    verdict = verdict.where(~rank.eq(1).fillna(False).astype(bool), "recommended")
    ids = [w.id for w in workloads if (ranks["workload"] == w.id).any()]
    counts = pd.crosstab(verdict, ranks["workload"]).reindex(columns=ids, fill_value=0)
    return {
        "workloads": ids,
        "rows": [(reason, [int(v) for v in values]) for reason, values in counts.iterrows()],
    }


def simulation_summary(ranks: pd.DataFrame) -> dict[str, int]:
    """How far the serving simulation reached: candidates simulated, raised, recommended."""
    none = pd.Series(False, index=ranks.index)
    simulated = ranks["simulated"].astype(bool) if "simulated" in ranks else none
    winners = ranks["rank"].eq(1).fillna(False).astype(bool)
    raised = (
        simulated & (ranks["replicas_planned"] > ranks["replicas_needed"])
        if "replicas_planned" in ranks
        else simulated
    )
    return {
        "simulated": int(simulated.sum()),
        "raised": int(raised.sum()),
        "recommended": int(winners.sum()),
        "recommended_simulated": int((winners & simulated).sum()),
        "recommended_closed_form": int((winners & ~simulated).sum()),
    }


def assumption_rows(catalog: Catalog) -> list[tuple[str, str]]:
    """The planning assumptions with their values, in words."""
    a = catalog.assumptions
    rows = [
        ("Runtime overhead per device", memory(a.runtime_overhead)),
        ("Reserve per device (uncertainty, transient peaks)", memory(a.reserve)),
        ("Achieved share of datasheet bandwidth", f"{a.bandwidth_efficiency:.0%}"),
        ("Achieved share of dense datasheet compute", f"{a.compute_efficiency:.0%}"),
        ("KV-cache block (paged allocation)", f"{a.kv_block_tokens} tokens"),
        ("Fixed overhead per step", duration(a.step_overhead)),
        ("Time per decoding sequence per step", duration(step_overhead_per_sequence(a))),
        ("Tensor-parallel sizes tried", ", ".join(str(t) for t in a.tensor_parallel_sizes)),
        ("Engine batch limit", f"{a.batch_limit} sequences"),
        (
            "Electricity",
            "not given"
            if a.electricity_usd_per_kwh is None
            else f"{a.electricity_usd_per_kwh:g} USD/kWh",
        ),
        ("PUE × utilisation", f"{a.pue:g} × {a.utilisation:.0%} of board power"),
        ("Amortisation", f"{a.amortisation_months} months, {a.hours_per_month:g} h a month"),
        (
            "Per node",
            f"{usd(a.node_overhead_usd)} USD capital, "
            f"{usd(a.hosting_usd_per_node_month)} USD a month hosting",
        ),
    ]
    return rows


def policy_lines(catalog: Catalog) -> list[str]:
    """The reserve, admission and paging policies the plan assumes, in words."""
    a = catalog.assumptions
    loose = [w.id for w in catalog.workloads if w.admission == "current-length"]
    admission = (
        "Admission: every workload reserves each request's promised maximum (reserve-max), so an "
        "admitted request can always complete."
        if not loose
        else f"Admission: {', '.join(loose)} admit on the current length; their requests may fail "
        "or be preempted midway through generation. The others reserve the maximum."
    )
    paging = (
        "Paging: the cache is allocated token by token (a block of 1), the simplest accounting; "
        "real engines allocate in blocks and lose part of the last one."
        if a.kv_block_tokens == 1
        else f"Paging: the cache is allocated in blocks of {a.kv_block_tokens} tokens (paged "
        "attention); each sequence is charged its rounding up to whole blocks "
        "(kv_paging_waste_bytes)."
    )
    return [
        f"Reserve: {memory(a.reserve)} of every device is held back for uncertainty and transient "
        f"peaks and never planned for cache, beside {memory(a.runtime_overhead)} of runtime "
        "overhead. Validate both against measured peak memory.",
        admission,
        paging,
    ]


def price_gaps(catalog: Catalog) -> list[str]:
    """Hardware whose purchase or rental price is missing (never costed as zero)."""
    gaps = []
    for h in catalog.hardware:
        missing = [
            what
            for what, value in (
                ("purchase price", h.price.purchase_usd),
                ("rental price", h.price.cloud_usd_per_hour),
                ("board power", h.power),
            )
            if value is None
        ]
        if missing:
            gaps.append(f"{h.id}: no {', no '.join(missing)}")
    return gaps


def sources(
    catalog: Catalog, hardware: list[Any] | None = None, models: list[Any] | None = None
) -> list[tuple[str, list[Any]]]:
    """Each catalog file's entries, for the appendix of sources: the ``hardware`` and ``models``
    the report shows where given (the rest are in their catalog files), every precision and
    workload."""
    return [
        ("Hardware", list(catalog.hardware if hardware is None else hardware)),
        ("Models", list(catalog.models if models is None else models)),
        ("Precisions", list(catalog.precisions)),
        ("Workloads", list(catalog.workloads)),
    ]


def _measured_value(value: float, unit: str) -> str:
    """A measured or estimated figure in the unit people read it in."""
    if unit == "B":
        return binary_decimal(value)[0]
    if unit == "s":
        return duration(value)
    if unit == "requests":
        return f"{value:,.2f}×"
    return count(value)


def measured_rows(table: pd.DataFrame) -> list[dict[str, Any]]:
    """The measured figures beside their estimates (``table``:
    :func:`planner.measure.compare.comparison`), one group per measurement, for the report (none
    without measurements)."""
    groups = []
    for measurement, rows in table.groupby("measurement", sort=False):
        first = rows.iloc[0]
        parallel = f" × {first['tensor_parallel']}" if first["tensor_parallel"] > 1 else ""
        option = f"{first['model']} · {first['precision']} on {first['hardware']}{parallel}"
        figures = [
            {
                "what": row["what"],
                "measured": _measured_value(row["measured"], row["unit"]),
                "estimated": _measured_value(row["estimated"], row["unit"]),
                "error": f"{row['error_fraction']:+.1%}"
                if finite(row["error_fraction"])
                else "n/a",
            }
            for _, row in rows.iterrows()
        ]
        groups.append(
            {
                "measurement": measurement,
                "option": f"{option} ({first['engine']})",
                "source": first["source"],
                "figures": figures,
            }
        )
    return groups


def calibration_lines(catalog: Catalog) -> list[str]:
    """What ``calibration.yaml`` changes, one sentence per fit: the figures used in place of the
    assumptions and the band of the latency estimates, or why a fit is not used."""
    applied = catalog.calibrated()
    a = catalog.assumptions
    lines = []
    for fit in catalog.calibration:
        if applied.get(fit.hardware) is not fit:
            lines.append(
                f"{fit.hardware}: fitted on {fit.engine}, not on the plan's "
                f"{catalog.engine_series()}; not used, so its estimates stay uncalibrated."
            )
            continue
        figures = [
            f"{label} {text}"
            for label, value, text in (
                ("bandwidth efficiency", fit.bandwidth_efficiency, f"{fit.bandwidth_efficiency}"),
                ("compute efficiency", fit.compute_efficiency, f"{fit.compute_efficiency}"),
                ("step overhead", fit.step_overhead, duration(fit.step_overhead or 0.0)),
                ("activation scale", fit.activation_scale, f"{fit.activation_scale}"),
                ("non-torch memory", fit.non_torch, memory(fit.non_torch or 0.0)),
                (
                    "non-torch memory under TP",
                    fit.non_torch_tensor_parallel,
                    memory(fit.non_torch_tensor_parallel or 0.0),
                ),
            )
            if value is not None
        ]
        rms = fit.latency_rms_fraction()
        if fit.bandwidth_efficiency is None:
            band = f"latency stays uncalibrated (+{a.uncalibrated_band:.0%} at 90%)"
        else:
            band = f"{len(fit.latency_points())} latency points"
            if rms is not None and fit.held_out():
                band += f", held-out root mean square error {rms:.1%}"
            elif rms is not None:
                band += (
                    f", in-sample root mean square error {rms:.1%} (no held-out estimates: "
                    f"run planner calibrate again)"
                )
            fraction = latency_band_fraction(
                True, math.nan if rms is None else rms, a.calibrated_band_floor, 0.0
            )
            band += f": latency +{float(fraction):.0%} at 90%"
        lines.append(f"{fit.hardware} on {fit.engine}: {', '.join(figures) or 'nothing'}; {band}.")
    return lines


def schedule_sections(
    found_all: list[WorkloadSchedule], growth: list[list[GrowthCase]] | None = None
) -> list[dict[str, Any]]:
    """Per workload with a forecast (:func:`planner.plan.schedule.schedules`): its nodes month
    by month, the orders, what each way of paying costs over the horizon (cash, book value
    left, net, net present value) and, with ``growth`` (its :func:`growth_cases`), the peak
    and the cheapest way of paying with the growth lowered and raised."""
    out = []
    for index, found in enumerate(found_all):
        cases = growth[index] if growth else []
        forecast = found.workload.forecast
        assert forecast is not None
        chosen = found.plans["schedule"]
        step = 3 if len(found.nodes) > 12 else 1
        months = sorted({*range(0, len(found.nodes), step), len(found.nodes) - 1})
        cumulative = chosen.cumulative_usd()
        rows = [
            {
                "month": m,
                "traffic": f"{found.factors[m]:.2f}×",
                "replicas": count(found.replicas[m]),
                "needed": count(found.nodes[m]),
                "base": count(found.base_nodes[m]),
                "owned": count(chosen.owned[m]),
                "rented": count(chosen.rented[m]),
                "cash": usd(chosen.cash_usd[m]),
                "cumulative": usd(cumulative[m]),
            }
            for m in months
        ]
        lead = found.lead_time_months
        orders = [
            f"month {m}: order {count(n)} node{'s' if n != 1 else ''} (in service from month "
            f"{m + lead})"
            for m, n in chosen.orders
        ]
        payback = found.payback_month()
        costs = found.costs
        break_even = break_even_hours(costs)
        quietest = min(found.profile)
        out.append(
            {
                "workload": found.workload,
                "option": candidate_label(found.line.row),
                "growth": (
                    f"{forecast.growth_per_month:+.1%} a month for {len(found.nodes)} months"
                    if forecast.growth_per_month is not None
                    else f"as forecast month by month for {len(found.nodes)} months"
                ),
                "spare": forecast.spare_nodes,
                "per_node": (
                    f"A node holds {count(found.node_devices)} "
                    f"device{'s' if found.node_devices != 1 else ''} and costs "
                    f"{usd(costs.owned_usd_per_month)} a month owned "
                    f"({usd(costs.capital_usd)} over {costs.amortisation_months} months, plus "
                    f"{usd(costs.running_usd_per_month)} to run) against "
                    f"{usd(costs.rent_usd_per_month)} rented"
                ),
                "plan": chosen.name,
                "today": count(found.nodes[0]),
                "peak": count(max(found.nodes)),
                "cash": usd(chosen.total_usd),
                "net": usd(chosen.net_usd),
                "rent_cash": usd(found.plans["rent"].total_usd),
                "profile": (
                    None
                    if forecast.daily_profile is None
                    else f"Traffic follows a daily profile: the forecast's rate is the busiest "
                    f"hour's, the quietest hour carries {quietest:.0%} of it. "
                ),
                "break_even": (
                    "Owning a node never costs less than renting it, even all day."
                    if break_even >= HOURS
                    else f"A node is worth owning when it is busy more than {break_even:.1f} "
                    "hours a day (owning a month costs that share of a day's rent); the hours "
                    "above the owned nodes are rented by the hour."
                ),
                "orders": orders,
                "rows": rows,
                "plans": [
                    {
                        "name": found.plans[key].name,
                        "cash": usd(found.plans[key].total_usd),
                        "residual": usd(found.plans[key].residual_usd),
                        "net": usd(found.plans[key].net_usd),
                        "npv": usd(found.npv_usd(key)),
                    }
                    for key in PLANS
                    if key in found.plans
                ],
                "payback": payback_words(found, payback),
                "svg": Markup(
                    charts.schedule_chart(found.nodes, chosen.owned, chosen.rented, f"s{index}s")
                ),
                "growth_cases": [
                    {
                        "case": "as forecast"
                        if case.scale == 1
                        else f"growth {'+' if case.scale > 1 else '−'}{abs(case.scale - 1):.0%}",
                        "peak": count(case.peak_nodes),
                        "npv": usd(case.npv_usd["schedule"]),
                        "cheapest": found.plans[case.cheapest].name,
                    }
                    for case in cases
                ],
            }
        )
    return out


def payback_words(found: WorkloadSchedule, payback: int | None) -> str:
    """The schedule against renting every node, in two sentences: whether the cash paid catches
    up with renting's within the horizon (``payback``: :meth:`WorkloadSchedule.payback_month`),
    and the net comparison, with the book value of the owned nodes at the end counted."""
    schedule, rent = found.plans["schedule"], found.plans["rent"]
    if payback is not None:
        cash = f"In cash, buying pays for itself against renting from month {payback} on."
    elif schedule.total_usd > rent.total_usd:
        cash = (
            f"In cash paid within the horizon, buying does not catch up with renting: "
            f"{usd(schedule.total_usd)} USD against {usd(rent.total_usd)} USD."
        )
    else:
        cash = (
            f"In cash, the schedule pays no more than renting: {usd(schedule.total_usd)} USD "
            f"against {usd(rent.total_usd)} USD."
        )
    if schedule.residual_usd <= 0:
        return cash
    net = (
        f"With the owned nodes' book value at the end counted ({usd(schedule.residual_usd)} "
        f"USD), the schedule nets {usd(schedule.net_usd)} USD against renting's "
        f"{usd(rent.net_usd)} USD"
    )
    if schedule.net_usd < rent.net_usd:
        net += f": {usd(rent.net_usd - schedule.net_usd)} USD less."
    elif schedule.net_usd > rent.net_usd:
        net += f": {usd(schedule.net_usd - rent.net_usd)} USD more."
    else:
        net += ": the same."
    return f"{cash} {net}"


def tornado_section(result: tuple[float, float, list[Bar]]) -> dict[str, Any]:
    """The ask's cost over the period under ±:data:`SWING` of each uncertain input
    (:func:`planner.plan.sensitivity.tornado`), as a chart and a table, with the inputs that
    change a line of the ask."""
    base_usd, base_devices, bars = result
    flips = {"lowered": f"−{SWING:.0%}", "raised": f"+{SWING:.0%}"}
    return {
        "swing": f"{SWING:.0%}",
        "base": usd(base_usd),
        "base_devices": count(base_devices),
        "svg": Markup(charts.tornado_chart(base_usd, bars, SWING, "tornado")) if bars else "",
        "rows": [
            {
                "input": bar.label,
                "low": usd(bar.low_usd),
                "high": usd(bar.high_usd),
                "devices": f"{count(bar.low_devices)} / {count(bar.high_devices)}",
                "flips": ", ".join(flips[f] for f in bar.flips) or "no",
            }
            for bar in bars
        ],
    }


def bill_of_materials(catalog: Catalog, plan: Ask) -> list[dict[str, Any]]:
    """What the ask installs, per line bought or rented: devices, nodes, spare nodes (N+k of
    a forecast), racks at the rack power limit, a node's and the option's peak power."""
    rows = []
    for line in plan.lines:
        if line.advice == API:
            continue
        row = line.row
        forecast = catalog.get("workloads", line.workload).forecast
        racks = row.get("racks_needed", math.nan)
        spares = forecast.spare_nodes if forecast else 0
        rows.append(
            {
                "workload": catalog.get("workloads", line.workload).label,
                "option": candidate_label(row),
                "advice": line.advice,
                "devices": count(line.devices),
                "nodes": count(line.nodes),
                "spares": count(spares),
                "node_down": node_down(line.nodes, spares),
                "racks": count(racks) if finite(racks) else "no limit",
                "node_kw": _kw(row.get("node_power_w", math.nan) / 1000),
                "peak_kw": _kw(row.get("facility_peak_kw", math.nan)),
            }
        )
    return rows


def risk_lines(catalog: Catalog, plan: Ask, measured: int) -> list[str]:
    """The ask's margins and risks in plain words, for the decision part: per line, what is
    tight, how far its latency may be off and whether the top of that band misses a target,
    how it was sized and what one node down leaves; then what every figure rests on
    (``measured``: how many measurements the catalog holds)."""
    out = []
    a = catalog.assumptions
    for line in plan.lines:
        label = catalog.get("workloads", line.workload).label
        row = line.row
        words = []
        margin = margin_text(row, a.margin)
        if margin:
            words.append(margin)
        if line.advice == API:
            words.append("served by the hosted API: no devices, the provider's latency")
            out.append(f"{label} ({line.model}): " + "; ".join(words) + ".")
            continue
        band = float(row["latency_band_fraction"])
        basis = "calibrated on measurements" if bool(row["latency_calibrated"]) else "assumed"
        if bool(row["meets_targets_upper"]):
            words.append(f"latency may be {band:.0%} slower ({basis}) and still meets its targets")
        else:
            words.append(f"latency {band:.0%} slower ({basis}) would miss a target")
        if line.devices_upper > line.devices:
            words.append(
                f"{count(line.devices_upper)} devices rather than {count(line.devices)} at "
                "the top of that band"
            )
        words.append(
            "sized by the serving simulation"
            if was_simulated(row)
            else "sized in closed form only, with no queueing: a floor"
        )
        forecast = catalog.get("workloads", line.workload).forecast
        spares = forecast.spare_nodes if forecast else 0
        down = node_down(line.nodes, spares)
        words.append(
            "with a node down the targets hold"
            if down == "targets hold"
            else f"with a node down: {down}"
        )
        out.append(f"{label} ({line.model}): " + "; ".join(words) + ".")
    out.append(
        f"Every figure is an estimate from datasheets and assumptions; {count(measured)} "
        f"measurement{'s' if measured != 1 else ''} of a device "
        f"{'is' if measured == 1 else 'are'} in the catalog (see What to measure next)."
        if measured
        else "Every figure is an estimate from datasheets and assumptions: no measurement of a "
        "device is in the catalog. Measure before buying (see What to measure next)."
    )
    return out


def node_down(nodes: float, spares: int) -> str:
    """What one node down leaves of a line: the targets hold with spare nodes (N+k, k ≥ 1);
    else the service is gone (one node) or short of the capacity it was sized for."""
    if spares >= 1:
        return "targets hold"
    if nodes <= 1:
        return "no service"
    return f"short: {count(nodes - 1)} of {count(nodes)} nodes"


def _kw(value: float) -> str:
    return f"{value:,.1f}" if finite(value) else "n/a"


def uncertainty_section(bands: Bands | None, plan: Ask) -> dict[str, Any] | None:
    """The plan over draws of its uncertain inputs (:mod:`planner.plan.uncertainty`): for each
    line of the ask, the bands of its model's winning devices and cost, and the options that
    were the cheapest in at least one draw in ten; None without draws."""
    if bands is None:
        return None
    purchases = bands.purchases
    if not {"workload", "model"} <= set(purchases.columns):  # no draw had a winner at all
        purchases = pd.DataFrame(columns=["workload", "model"])
    purchases = purchases.set_index(["workload", "model"])
    options = leading_options(bands, least_share=0.1)
    lines: list[dict[str, Any]] = []
    for line in plan.lines:
        if (line.workload, line.model) not in purchases.index:  # the line won in no draw
            lines.append(
                {
                    "workload": line.workload,
                    "model": line.model,
                    "served": f"{0:.0%}",
                    "devices": "none",
                    "cost": "none",
                    "options": [],
                }
            )
            continue
        p: Any = purchases.loc[(line.workload, line.model)]
        chosen = options[(options["workload"] == line.workload) & (options["model"] == line.model)]
        lines.append(
            {
                "workload": line.workload,
                "model": line.model,
                "served": f"{p['served_share']:.0%}",
                "devices": " / ".join(count(p[f"devices_needed_p{q}"]) for q in (10, 50, 90)),
                "cost": " / ".join(usd(p[f"cost_usd_p{q}"]) for q in (10, 50, 90)),
                "options": [
                    {
                        "option": f"{o['hardware']}, {o['precision']}, TP {o['tensor_parallel']}",
                        "cheapest": f"{o['cheapest_share']:.0%}",
                        "meets": f"{o['meets_share']:.0%}",
                        "devices": " / ".join(
                            count(o[f"devices_needed_p{q}"]) for q in (10, 50, 90)
                        ),
                        "itl": f"{duration(o['itl_load_s_p50'])} / {duration(o['itl_load_s_p90'])}",
                    }
                    for o in chosen.to_dict("records")
                ],
            }
        )
    for shown in lines:
        shown["p90"] = _p90_words(bands, shown["workload"], shown["model"])
    return {
        "draws": count(bands.draws),
        "inputs": [(i.label, i.distribution.describe()) for i in bands.inputs],
        "lines": lines,
    }


def _devices(value: Any) -> str:
    """A device count in words: ``1 device``, ``4 devices``."""
    return f"{count(value)} device{'' if count(value) == '1' else 's'}"


def _p90_words(bands: Bands, workload: str, model: str) -> str:
    """The line's winner at the draw of its P90 cost, as the simulation sized it, in words."""
    simulated = bands.simulated
    if simulated is None or simulated.empty:
        return ""
    mine = simulated[(simulated["workload"] == workload) & (simulated["model"] == model)]
    if mine.empty:
        return ""
    r = mine.iloc[0]
    met = "meets every target" if bool(r["meets_targets_sim"]) else "misses a target"
    return (
        f"At the draw of its P90 cost (draw {int(r['draw'])}), {r['hardware']}, {r['precision']}, "
        f"TP {int(r['tensor_parallel'])}: {_devices(r['devices_needed'])} in closed form; "
        f"simulated under that draw's inputs, {_devices(r['sim_devices_needed'])}, p95 TTFT "
        f"{duration(r['ttft_p95_s'])}, p95 ITL {duration(r['itl_p95_s'])}: {met}"
    )
