"""The report's sections on each workload as plain values: which options to show, the
sentences, the rows of its tables and its charts, and how its candidates fared, prepared so that
the template does no arithmetic. The decision part is :mod:`planner.outputs.decision`, what the
plan rests on :mod:`planner.outputs.basis`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
from markupsafe import Markup

from planner.catalog import Catalog, Workload
from planner.catalog.workloads import length_summary
from planner.model.targets import TARGETS as LATENCY_TARGETS
from planner.model.units import is_finite
from planner.outputs import charts
from planner.outputs.advice import (
    api_sentence,
    break_even_text,
    buy_or_rent_sentence,
    margin_text,
)
from planner.outputs.formatting import binary_decimal, count, duration, memory, usd
from planner.plan.columns import LAYOUT_DEFAULTS, PP_KEY
from planner.plan.deployment import API, BUY, RENT, Ask, Line, advice
from planner.plan.labels import option_label, prefill_device, replicas_in_words, short_label
from planner.plan.recommend import GROUP, ORDER, recommendations
from planner.plan.selection import closest

#: Latency targets: label, closed-form estimate column, target column, simulated p95 column.
TARGETS: list[tuple[str, str, str, str]] = [
    (t.label, t.estimate, t.column, t.simulated) for t in LATENCY_TARGETS
]


def memory_cell(value: Any) -> Markup:
    """A memory figure for a table cell: GiB (or MiB) with GB (or MB) beneath it."""
    if not is_finite(value):
        return Markup("n/a")
    binary, decimal = binary_decimal(float(value))
    return Markup(f'{binary}<br><span class="small">{decimal}</span>')


#: The role of an option shown for a workload × model where none is eligible.
CLOSEST = "closest, not eligible"


def featured(ranks: pd.DataFrame) -> pd.DataFrame:
    """The options the report shows, with their ``role``, per workload × model, in plan order.

    The recommended option and the runner-up; where no option is eligible, the one that comes
    closest (:func:`planner.plan.selection.closest`, the rule the simulation's choice follows
    too), so that the charts still show what the catalog can do. Input is
    :func:`recommend.ranked`.
    """
    rank = ranks["rank"].astype("Float64").fillna(0).to_numpy(dtype=float)
    served = pd.Series(rank > 0, index=ranks.index)
    served = served.groupby([ranks[g] for g in GROUP], sort=False).transform("any")
    leading = (rank >= 1) & (rank <= 2)
    top = ranks[leading].assign(role=np.where(rank[leading] == 1, "recommended", "runner-up"))
    near = closest(ranks[~served.to_numpy(dtype=bool)]).assign(role=CLOSEST)
    shown = pd.concat([top, near]) if len(near) else top
    group = ranks.groupby(GROUP, sort=False).ngroup().loc[shown.index].to_numpy()
    place = np.where(shown["role"].to_numpy() == "runner-up", 1, 0)
    return shown.iloc[np.lexsort((place, group))]


def chart_label(row: pd.Series | dict[str, Any]) -> str:
    """An option in a chart or table of one workload: the long form without the workload,
    with its role unless recommended: ``llama-3.1-8b: 4 × h100-sxm-80gb (TP 2) · fp8
    (runner-up)``."""
    text = option_label(row, workload=False)
    return text if row["role"] == "recommended" else f"{text} ({row['role']})"


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
        if not is_finite(row[target]):
            continue
        if simulated and is_finite(row.get(p95)):
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
    return f"{count(n)} {word}{'' if is_finite(n) and float(n) == 1 else 's'}"


def _option_words(row: pd.Series, catalog: Catalog) -> str:
    """An option in words: ``Llama 3.1 70B on 4 devices × NVIDIA B200 (1 node; 2 replicas of
    tensor parallel 2 at nvfp4)`` (:func:`planner.plan.labels.replicas_in_words`); with the
    prompts on another device, ``on 2 devices × AMD Instinct MI300X and 6 × NVIDIA B200``."""
    hardware = catalog.get("hardware", row["hardware"]).label
    model = catalog.get("models", row["model"]).label
    other, prompts = prefill_device(row), row.get("separate_prefill_devices", 0)
    if other is not None:
        hardware += f" and {count(prompts)} × {catalog.get('hardware', other).label}"
    return (
        f"{model} on {_plural(row['devices_needed'] - prompts, 'device')} × {hardware} "
        f"({_plural(row['nodes_needed'], 'node')}; {replicas_in_words(row, replicas(row))}"
        f" at {row['precision']})"
    )


def summary_sentence(
    workload: Workload,
    winners: pd.DataFrame,
    catalog: Catalog,
    why: list[str],
    line: Line | None = None,
    reason: str | None = None,
    ranks: pd.DataFrame | None = None,
) -> str:
    """The recommendation for a workload in a few sentences: the option, buy or rent, the API.
    Where the option is another layout than one pool of tensor-parallel replicas, the best such
    pool of the same model from ``ranks`` is given beside it (:func:`_plain_alternative`).

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
        + _plain_alternative(best, ranks, catalog)
    )


def _plain_alternative(best: pd.Series, ranks: pd.DataFrame | None, catalog: Catalog) -> str:
    """For an expert-parallel, pipeline or disaggregated option, the best eligible option of the
    same workload and model served by one pool of tensor-parallel replicas (within a node), with
    both costs; "" for an option that is such a pool, or without ``ranks``."""
    layouts = {k: best.get(k, v) for k, v in LAYOUT_DEFAULTS.items()}
    if ranks is None or layouts == LAYOUT_DEFAULTS:
        return ""
    same = ranks[(ranks["workload"] == best["workload"]) & (ranks["model"] == best["model"])]
    one_pool = pd.Series(True, index=same.index)
    for key, value in LAYOUT_DEFAULTS.items():
        if key in same:
            one_pool &= pd.to_numeric(same[key]) == value
    plain = same[one_pool & same["eligible"].astype(bool)].sort_values(ORDER, kind="stable")
    stages = float(best.get(PP_KEY, 1)) > 1
    if plain.empty:
        if stages:
            return (
                " No replica within one node of this model qualifies, so its replicas span nodes."
            )
        return " No pool of tensor-parallel replicas of this model qualifies."
    alt = plain.iloc[0]
    kind = "A replica within one node" if stages else "One pool of tensor-parallel replicas"
    return (
        f" {kind}, the best such option, would be "
        f"{_option_words(alt, catalog)} at {usd(alt['cost_usd'])} USD over "
        f"{catalog.assumptions.amortisation_months} months against {usd(best['cost_usd'])} USD."
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
        "option": short_label(row),
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
        "api": usd(row["api_usd"]) if is_finite(row.get("api_usd")) else "no price",
        "owned": usd(row["owned_usd_per_month"]),
        "cloud": usd(row["cloud_usd_per_month"]),
        "break_even": break_even_text(row, months, short=True),
        "per_million": f"{row['owned_usd_per_million_tokens']:,.2f}"
        if is_finite(row["owned_usd_per_million_tokens"])
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


def _positive(row: pd.Series, column: str) -> bool:
    return is_finite(row.get(column)) and float(row[column]) > 0


def engine_features(row: pd.Series) -> str:
    """What prefix caching and speculative decoding do for an option, in words (empty where
    neither applies): the planned hit ratio (``prefix_hit_ratio``) and the prompt tokens still
    prefilled (``prefill_tokens_mean``), the shared prefix's cache held once
    (``shared_prefix_kv_bytes``), the tokens a step emits per sequence
    (``speculative_tokens_per_step``) and the speed-up (``speculative_speedup``)."""
    parts = []
    if _positive(row, "prefix_hit_ratio"):
        parts.append(
            f"{float(row['prefix_hit_ratio']):.0%} of prompt tokens cached, "
            f"{count(row['prefill_tokens_mean'])} of {count(row['prompt_tokens_mean'])} "
            "prefilled"
        )
    if _positive(row, "shared_prefix_kv_bytes"):
        parts.append(
            f"shared prefix's KV {memory(row['shared_prefix_kv_bytes'])} a device, held once"
        )
    if _positive(row, "speculative_tokens"):
        parts.append(
            f"speculating, {float(row['speculative_tokens_per_step']):.2f} tokens a step per "
            f"sequence, {float(row['speculative_speedup']):.2f}× the plain decode's speed"
        )
    return "; ".join(parts)


def _percent(value: Any) -> str:
    return f"{float(value):.1%}" if is_finite(value) else "n/a"


def simulation_rows(shown: pd.DataFrame) -> list[dict[str, str]]:
    """What the serving simulation found for each shown option (empty when none was simulated)."""
    if "simulated" not in shown or not shown["simulated"].astype(bool).any():
        return []
    rows = []
    for _, row in shown.iterrows():
        simulated = was_simulated(row)
        rows.append(
            {
                "label": chart_label(row),
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
    labels = [chart_label(r) for _, r in shown.iterrows()]
    main_labels = [chart_label(r) for _, r in main.iterrows()]
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
            [chart_label(r) for _, r in distinct.iterrows()],
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
        "features": [],
    }
    if shown.empty:
        return out
    main = shown[shown["role"] != "runner-up"]
    out.update(_memory_part(catalog, shown, main, f"w{index}m"))
    out["concurrency_svg"] = _concurrency_part(catalog, main, f"w{index}c")
    panels = ["itl_load_s", "ttft_load_s", "e2e_load_s"]
    panels += ["task_load_s"] if workload.requests_per_task > 1 else []
    labels = [chart_label(r) for _, r in main.iterrows()]
    out["latency_svg"] = Markup(charts.latency_chart(main, labels, panels, f"w{index}l"))
    out["simulation"] = simulation_rows(main)
    out["features"] = [
        (label, text)
        for label, (_, row) in zip(labels, main.iterrows(), strict=True)
        if (text := engine_features(row))
    ]
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
    catalog: Catalog,
    table: pd.DataFrame,
    ranks: pd.DataFrame,
    plan: Ask | None = None,
    recs: pd.DataFrame | None = None,
) -> list[dict[str, Any]]:
    """Everything the report shows about each workload, in catalog order: the sentence of the
    ask's line (``plan``), and the tables and charts of its leading models (:func:`leading`);
    ``recs`` is :func:`recommendations` of ``table`` where the caller has it."""
    recs = recommendations(table) if recs is None else recs
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
                    workload, winners, catalog, why, line, reasons.get(workload.id), ranks
                ),
                "targets": target_text(workload),
                "summary": listed + unqualified[:LEADING_MODELS],
                "more": {
                    "eligible": len(set(winners["model"]) - set(models)),
                    "unqualified": max(0, len(unqualified) - LEADING_MODELS),
                },
                "record": workload_record(catalog, workload, rows),
                "cost_rows": [
                    _option_row(r, catalog) for _, r in shown[shown["role"] != CLOSEST].iterrows()
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
