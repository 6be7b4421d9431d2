"""What the plan rests on, in words, for the report: the planning assumptions and policies,
the prices the catalogs lack, the catalog entries shown with their sources, the measurements
beside their estimates, what calibration.yaml changes, and what the estimates leave out.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from planner.catalog import Catalog
from planner.catalog.engines import step_overhead_per_sequence
from planner.model.calibration import latency_band_fraction
from planner.model.units import is_finite
from planner.outputs.formatting import binary_decimal, count, duration, memory, usd
from planner.plan.labels import option_label

#: What the estimates leave out, for the risks section.
NOT_MODELLED = [
    "Closed-form latency figures are step-time estimates built on idealised bandwidth and compute "
    "bounds (the roofline model), scaled by the efficiency assumptions, with no queueing. The "
    "serving simulation, where it ran, adds queueing, admission and prefill stalls at the "
    "forecast load; it is a model too. Neither is a measured latency.",
    "Prefix caching is modelled where the engine keeps prefixes and a workload says what its "
    "prompts share: the hit ratio is worked out from that description in whole cache blocks "
    "(a system prompt held once per replica, a document asked several questions, a task's "
    "re-sent history kept while the pool's idle room holds it, by Che's approximation of an "
    "LRU cache with requests at random), or is the workload's measured ratio where it gives "
    "one. Cached tokens skip the prefill's arithmetic, not its attention; the shared prefix's "
    "cache is held once. The ratio is an assumption until measured (vLLM's prefix-cache hit "
    "counters, planner calibrate). The simulation keeps a task's history and a document in "
    "an LRU cache of blocks beside the running sequences, and plans with the same ratio "
    "where a workload shares only a system prompt or gives a measured ratio; it reserves "
    "no room for speculative proposals. Every sequence still reserves its own longest prompt "
    "past the prefix plus its promised maximum output.",
    "Expert parallelism, pipelines across nodes and disaggregated prefill/decode are tried "
    "where the assumptions ask for them. An expert-parallel replica is simulated as one of its "
    "devices' schedulers (data-parallel attention: its own sequences and prompts, a prompt's "
    "routed experts spread over every device, the all-to-all of each step's tokens added), in "
    "disaggregated pools as pools of such schedulers; a pipeline as one of its micro-batches' "
    "schedulers. An all-to-all hidden under the arithmetic (expert_overlap above 0) is "
    "planned in closed form. Disaggregated pools are simulated together (a prefill pool, a "
    "transfer queue per prefill replica, a decode pool) for open-loop workloads of one "
    "request a task, else planned in closed form.",
    "Each engine's scheduler is modelled by its release's defaults (chunked prefill or whole "
    "prompts, the time per decoding sequence); a cost per request (scheduling and "
    "detokenising many short requests) is not, which makes very short requests at full load "
    "look faster than they are.",
    "Speculative decoding is modelled where the engine profile speculates: a step verifies the "
    "k proposed tokens and emits 1 + α + … + α^k per sequence, α the acceptance rate taken as "
    "independent from one proposed token to the next; the proposer's weights, cache and "
    "forwards count in memory and time. α is the profile's, else its method's published rate "
    "(EAGLE-1 measured in vLLM, DeepSeek-V3's multi-token prediction), an assumption until "
    "the engine's acceptance counters are measured; how it varies with the text is not "
    "modelled.",
    "Quantised attention kernels and CUDA graphs' effect on step time are not modelled.",
    "Network contention between replicas, storage and loading time, and failures or spares are "
    "not modelled.",
    "Allocator fragmentation beyond paging, and activation peaks of long prefills, are covered "
    "only by the runtime overhead and the reserve.",
]


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
        option = option_label(first, workload=False)  # no device count: one replica measured
        figures = [
            {
                "what": row["what"],
                "measured": _measured_value(row["measured"], row["unit"]),
                "estimated": _measured_value(row["estimated"], row["unit"]),
                "error": f"{row['error_fraction']:+.1%}"
                if is_finite(row["error_fraction"])
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
