"""Each measured figure beside planner's estimate for the same device, model, precision and
engine settings, with the error.

The estimate is the plan's own metric, evaluated for a one-candidate catalog set up as the
measurement was taken: its tensor-parallel size, its engine profile (else the catalog's, else the
engine defaults), and a closed-loop workload of its concurrency and lengths.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Sequence
from dataclasses import replace

import pandas as pd

from planner.catalog import Catalog, CatalogError, Problem, Workload
from planner.catalog.calibration_records import LATENCY_FIGURES, FittedEfficiency
from planner.catalog.engines import DEFAULT_ENGINE
from planner.catalog.plan_records import Engine
from planner.measure import FOLDER, Measurement, load_measurements
from planner.measure.benchmarks import file_key
from planner.plan.assumptions import GLOBALS
from planner.plan.columns import ALL_KEYS, PP_KEY
from planner.plan.sweep import evaluate_plan

#: Measured figure → (the metric estimating it, unit, words).
COMPARED: dict[str, tuple[str, str, str]] = {
    "total_memory_bytes": ("memory_bytes", "B", "device memory the driver reports"),
    "weights_bytes": ("weight_bytes_per_device", "B", "weights as loaded, per device"),
    "activation_peak_bytes": ("activation_peak_bytes", "B", "activation peak of profiling"),
    "non_torch_bytes": ("non_torch_bytes", "B", "memory outside PyTorch"),
    "cuda_graph_bytes": ("cuda_graph_bytes", "B", "CUDA graphs"),
    "kv_pool_bytes": ("kv_pool_bytes", "B", "KV cache pool"),
    "kv_pool_tokens": ("kv_pool_tokens", "tokens", "KV cache pool, tokens"),
    "max_concurrency": ("engine_max_concurrency", "requests", "requests of max_model_len"),
    "ttft_s.p50": ("ttft_load_s", "s", "median time to first token"),
    "ttft_s.mean": ("ttft_load_s", "s", "mean time to first token"),
    # a median gap is one typical decode step; a mean gap or TPOT spreads others' prefills
    "itl_s.p50": ("itl_load_s", "s", "median inter-token latency (one typical step)"),
    "itl_s.mean": ("tpot_load_s", "s", "mean inter-token latency (stalls included)"),
    "tpot_s.mean": ("tpot_load_s", "s", "mean time per output token, first excluded"),
    "tpot_s.p50": ("tpot_load_s", "s", "median time per output token, first excluded"),
    "e2e_s.p50": ("e2e_load_s", "s", "median end-to-end latency"),
    "e2e_s.mean": ("e2e_load_s", "s", "mean end-to-end latency"),
    "output_throughput": (
        "load_output_tokens_per_s_per_replica",
        "tokens/s",
        "output tokens per second of the engine",
    ),
    "request_throughput": (
        "load_requests_per_s_per_replica",
        "requests/s",
        "requests per second of the engine",
    ),
    "output_throughput.mean": (
        "load_output_tokens_per_s_per_replica",
        "tokens/s",
        "output tokens per second of the engine",
    ),
    "request_throughput.mean": (
        "load_requests_per_s_per_replica",
        "requests/s",
        "requests per second of the engine",
    ),
}

COLUMNS = [
    "measurement",
    "format",
    "hardware",
    "model",
    "precision",
    "tensor_parallel",
    "engine",
    "figure",
    "what",
    "unit",
    "measured",
    "estimated",
    "error_fraction",
    "source",
]


def engine_as_measured(catalog: Catalog, measurement: Measurement) -> Engine:
    """The engine as measured: the entry's profile (with the log's max_model_len and
    utilisation where it states them), else the catalog's, else the defaults."""
    engine = measurement.entry.engine or catalog.assumptions.engine or DEFAULT_ENGINE
    figures = measurement.figures
    update: dict[str, object] = {}
    if engine.max_model_len is None and "max_model_len" in figures:
        update["max_model_len"] = int(figures["max_model_len"])
    if "gpu_memory_utilization" in figures and measurement.entry.engine is None:
        update["gpu_memory_utilization"] = figures["gpu_memory_utilization"]
    return engine.model_copy(update=update) if update else engine


def _workload(measurement: Measurement, engine: Engine) -> Workload:
    """A closed-loop workload of the measurement's concurrency and request lengths."""
    entry = measurement.entry
    figures = measurement.figures
    concurrency = entry.concurrency or int(figures.get("max_concurrency", 1) or 1)
    if entry.format == "vllm-log":
        concurrency = 1  # start-up figures do not depend on the traffic
    length = engine.max_model_len or 4096
    output = entry.output_tokens or max(1, min(256, length // 4))
    prompt = entry.prompt_tokens or max(1, length - output)
    return Workload(
        id="measured",
        prompt_tokens=prompt,
        output_tokens=output,
        max_output_tokens=output,
        concurrency=max(1, concurrency),
    )


def estimate_rows(catalog: Catalog, measurements: Sequence[Measurement]) -> list[pd.Series]:
    """The plan's metrics for the candidates the measurements were taken on, each as it was
    set up, in their order; measurements run on the same engine profile are evaluated in one
    pass (a fit evaluates its points many times)."""
    groups: dict[str, list[int]] = {}
    engines = [engine_as_measured(catalog, m) for m in measurements]
    for i, engine in enumerate(engines):
        groups.setdefault(engine.model_dump_json(), []).append(i)
    rows: list[pd.Series | None] = [None] * len(measurements)
    for members in groups.values():
        engine = engines[members[0]]
        entries = [measurements[i].entry for i in members]
        workloads = tuple(
            _workload(measurements[i], engine).model_copy(update={"id": f"measured-{n}"})
            for n, i in enumerate(members)
        )
        assumptions = catalog.assumptions.model_copy(
            update={
                "engine": engine,
                "tensor_parallel_sizes": sorted({e.tensor_parallel for e in entries}),
            }
        )
        sub = replace(
            catalog,
            hardware=tuple(
                catalog.get("hardware", h) for h in dict.fromkeys(e.hardware for e in entries)
            ),
            models=tuple(catalog.get("models", m) for m in dict.fromkeys(e.model for e in entries)),
            precisions=tuple(
                catalog.get("precisions", p) for p in dict.fromkeys(e.precision for e in entries)
            ),
            workloads=workloads,
            assumptions=assumptions,
            scenarios=(),
            deployment=(),
        )
        plan = pd.DataFrame(
            [
                (e.hardware, e.model, e.precision, w.id, e.tensor_parallel * e.pipeline_parallel)
                for e, w in zip(entries, workloads, strict=True)
            ],
            columns=ALL_KEYS,
        )
        plan[PP_KEY] = [e.pipeline_parallel for e in entries]  # the replica's stages
        table = evaluate_plan(sub, plan).table
        assumed = pd.Series({g.name: g.get(assumptions) * g.scale for g in GLOBALS})
        extra = assumed[~assumed.index.isin(table.columns)]
        for n, i in enumerate(members):
            row = table.iloc[n].copy()
            row["workload"] = "measured"
            rows[i] = pd.concat([row, extra])
    return [row for row in rows if row is not None]


def estimate_row(catalog: Catalog, measurement: Measurement) -> pd.Series:
    """The plan's metrics for the candidate a measurement was taken on, as it was set up."""
    return estimate_rows(catalog, [measurement])[0]


def measured_figures(catalog: Catalog, measurement: Measurement) -> dict[str, float]:
    """The figures a measurement gives, with a V0 log's block count as tokens (blocks × the
    block size, the assumptions' ``kv_block_tokens``)."""
    figures = dict(measurement.figures)
    if "gpu_blocks" in figures and "kv_pool_tokens" not in figures:
        figures["kv_pool_tokens"] = figures["gpu_blocks"] * catalog.assumptions.kv_block_tokens
    return figures


def comparison(catalog: Catalog, measurements: tuple[Measurement, ...]) -> pd.DataFrame:
    """One row per measured figure planner estimates: measured, estimated and the error
    (estimated ÷ measured − 1), in base units."""
    rows = []
    for measurement in measurements:
        entry = measurement.entry
        estimates = estimate_row(catalog, measurement)
        engine = engine_as_measured(catalog, measurement)
        for figure, value in measured_figures(catalog, measurement).items():
            if figure not in COMPARED:
                continue
            metric, unit, what = COMPARED[figure]
            estimated = float(estimates[metric])
            error = estimated / value - 1 if value and math.isfinite(estimated) else math.nan
            rows.append(
                {
                    "measurement": entry.id,
                    "format": entry.format,
                    "hardware": entry.hardware,
                    "model": entry.model,
                    "precision": entry.precision,
                    "tensor_parallel": entry.tensor_parallel,
                    "engine": f"{engine.name} {engine.version}",
                    "figure": figure,
                    "what": what,
                    "unit": unit,
                    "measured": value,
                    "estimated": estimated,
                    "error_fraction": error,
                    "source": entry.source or "",
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)


def _most(annotation: typing.Any) -> float:
    """The largest value a record's field type takes (its ``le`` or ``lt``), inf where none."""
    for info in typing.get_args(annotation)[1:]:
        for rule in getattr(info, "metadata", []):
            for name in ("le", "lt"):
                if getattr(rule, name, None) is not None:
                    return float(getattr(rule, name))
    return math.inf


#: The largest efficiency the calibration file takes (records.FittedEfficiency: 1, the
#: datasheet's full rate).
MOST_EFFICIENCY = _most(FittedEfficiency)

#: The most favourable figures a calibration may give: the datasheet's full bandwidth and
#: compute, no fixed time per step (the time per decoding sequence, which no calibration
#: fits, stays the engine release's).
FASTEST = {
    "bandwidth_efficiency": MOST_EFFICIENCY,
    "compute_efficiency": MOST_EFFICIENCY,
    "step_overhead": 0.0,
}


def slowness(figure: str, measured: float, estimate: float) -> float:
    """How many times slower an estimate is than what was measured (a rate's ratio inverted):
    above 1, the plan is slower than the measurement."""
    rate = "/s" in COMPARED[figure][1]
    return measured / estimate if rate else estimate / measured


def shown(figure: str, value: float) -> str:
    """A measured or estimated figure as a reader reads it: a time in ms, a rate per second."""
    unit = COMPARED[figure][1]
    if unit == "s":
        return f"{value * 1e3:,.3g} ms"
    return f"{value:,.0f} {unit}" if abs(value) >= 100 else f"{value:,.3g} {unit}"


def users(measurement: Measurement) -> str:
    """The requests in flight a measurement was taken at, in words."""
    count = measurement.entry.concurrency or int(measurement.figures.get("max_concurrency", 1))
    return f"{count:,} user{'s' if count != 1 else ''}"


def faster_than_possible(
    catalog: Catalog, measurements: Sequence[Measurement], tolerance: float
) -> list[Problem]:
    """A problem for each latency or throughput figure faster, by more than ``tolerance``, than
    the plan allows its candidate at :data:`FASTEST`: no calibration could reach it, so the
    measurement contradicts the model (or its entry names another candidate)."""
    timed = [m for m in measurements if any(f in LATENCY_FIGURES for f in m.figures)]
    if not timed:
        return []
    # an earlier calibration's figures would stand in for these: set it aside
    assumptions = catalog.assumptions.model_copy(update=FASTEST)
    fastest = replace(catalog, calibration=(), assumptions=assumptions)
    problems = []
    for measurement, row in zip(timed, estimate_rows(fastest, timed), strict=True):
        for figure, value in measured_figures(catalog, measurement).items():
            if figure not in LATENCY_FIGURES or value <= 0:
                continue
            estimate = float(row[COMPARED[figure][0]])
            if not math.isfinite(estimate) or slowness(figure, value, estimate) <= 1 + tolerance:
                continue
            problems.append(
                Problem(
                    str(catalog.folder / FOLDER / measurement.entry.file),
                    f"its {COMPARED[figure][2].split(' (')[0]}, {shown(figure, value)}, at "
                    f"{users(measurement)} is faster than the device allows: at the datasheet's "
                    f"full bandwidth and compute, with no fixed time per step, the plan needs "
                    f"{shown(figure, estimate)} for the bytes a step reads and its arithmetic; "
                    f"no calibration can reach it. Check the entry's hardware, model, "
                    f"precision, tensor_parallel and concurrency (speculative decoding or "
                    f"prefix caching, which planner does not model, also do this), or remove "
                    f"it from index.yaml",
                    line=measurement.lines.get(figure),
                    entry=f"measurement '{measurement.entry.id}'",
                    field=file_key(measurement.entry.format, figure),
                )
            )
    return problems


def checked_measurements(catalog: Catalog) -> tuple[Measurement, ...]:
    """The catalog's measurements (:func:`planner.measure.load_measurements`), each figure also
    held against what the device can do at all (:func:`faster_than_possible`): what ``planner
    check`` accepts. Raises :class:`~planner.catalog.CatalogError`."""
    measurements = load_measurements(catalog)
    tolerance = catalog.assumptions.calibrated_band_floor
    problems = faster_than_possible(catalog, measurements, tolerance)
    if problems:
        raise CatalogError(problems)
    return measurements
