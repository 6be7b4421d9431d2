"""Measurements taken in: what an engine, a benchmark or ``nvidia-smi`` reported, tied to the
hardware, model, precision and engine it was taken on.

A catalog folder may hold ``measurements/index.yaml``, listing each measurement file with what it
was measured on::

    measurements:
      - id: h100-llama-8b-startup
        file: h100-llama-8b.log
        format: vllm-log          # vllm-log, vllm-bench, perf-export, vllm-metrics or nvidia-smi
        hardware: h100-sxm-80gb
        model: llama-3.1-8b
        precision: bf16
        tensor_parallel: 1        # the engine's sizes: tensor_parallel_size,
        pipeline_parallel: 1      # pipeline_parallel_size (stages, a node each)
        engine: {name: vllm, version: 0.10.1, gpu_memory_utilization: 0.9}
        source: https://github.com/vllm-project/vllm/issues/...

:func:`load_measurements` validates the index against the catalog and parses every file; any
problem names the file, the entry, the field or line, and what was expected. A file that
contradicts its own entry (a log printing another tensor-parallel size or engine release, a
device of another memory size, a benchmark of another concurrency or other request lengths) is
refused: its figures would be held against a candidate it was not measured on. A release the
engine data has no constants for is planned with the nearest series it has, with a warning
(:func:`measurement_warnings`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationError

from planner.catalog import Catalog, CatalogError, Problem
from planner.catalog.engines import DEFAULT_ENGINE, series_of, series_warning
from planner.catalog.fields import Count, Entry, Id, Record
from planner.catalog.plan_records import Engine
from planner.catalog.reading import duplicate_ids
from planner.catalog.safefile import FileProblem, read_text
from planner.catalog.validation import problems_from_validation
from planner.catalog.yamlsafe import Document, YamlProblem, load
from planner.measure.benchmarks import (
    FormatError,
    figure_lines,
    parse_nvidia_smi,
    parse_perf_export,
    parse_vllm_bench,
)
from planner.measure.errors import MeasurementFileError
from planner.measure.prometheus import parse_vllm_metrics
from planner.measure.vllm_log import LogError, Setting, log_settings, parse_vllm_log, summarise
from planner.model.units import GIB

#: The folder, inside a catalog folder, that holds measurements, and its index.
FOLDER = "measurements"
INDEX = "index.yaml"

Format = Literal["vllm-log", "vllm-bench", "perf-export", "vllm-metrics", "nvidia-smi"]

#: Formats whose figures depend on the traffic: they need the concurrency they were run at.
TRAFFIC_FORMATS = ("vllm-bench", "perf-export")

#: How far a device's memory, as a measurement reports it, may lie from the catalog's
#: (``usable_memory``, else ``memory``) before it is another device: drivers report a little
#: less than the datasheet (79.19 GiB of an 80 GB H100's HBM3; 80 GB is 74.5 GiB).
MEMORY_TOLERANCE = 0.10

#: How far a benchmark's mean request lengths (its token totals ÷ requests completed) may lie
#: from those its entry states: random datasets vary lengths around the setting by a few %.
LENGTH_TOLERANCE = 0.10

__all__ = [
    "FOLDER",
    "INDEX",
    "FormatError",
    "LogError",
    "Measurement",
    "MeasurementEntry",
    "MeasurementFileError",
    "load_measurements",
    "measurement_warnings",
    "read_index",
]


class MeasurementEntry(Entry):
    """One measurement file and what it was measured on."""

    file: Annotated[str, Field(strict=True, pattern=r"^[A-Za-z0-9._/-]+$", max_length=200)]
    format: Format
    hardware: Id
    model: Id
    precision: Id
    #: The engine's tensor-parallel size (``tensor_parallel_size``: one stage's devices).
    tensor_parallel: Count = 1
    #: The engine's pipeline stages (``pipeline_parallel_size``), a node each: the replica spans
    #: tensor_parallel × pipeline_parallel devices.
    pipeline_parallel: Count = 1
    engine: Engine | None = None
    #: Requests in flight during a benchmark (vllm-bench gives its own max_concurrency).
    concurrency: Count | None = None
    prompt_tokens: Count | None = None
    output_tokens: Count | None = None
    #: The workload whose traffic it served: a prefix-cache hit ratio measured is that
    #: workload's (``planner calibrate`` says what to set in workloads.yaml).
    workload: Id | None = None


class MeasurementsFile(Record):
    measurements: list[MeasurementEntry] = Field(min_length=1, max_length=10_000)


@dataclass(frozen=True)
class Measurement:
    """A parsed measurement: its entry, its figures in base units (bytes, seconds, tokens),
    the line of each figure where the format has lines, and what a reader must know about it
    (a release planned with another series' constants)."""

    entry: MeasurementEntry
    figures: dict[str, float]
    lines: dict[str, int]
    warnings: tuple[Problem, ...] = ()


@dataclass(frozen=True)
class Parsed:
    """What a file gives: figures, the line of each, and how the engine says it was started."""

    figures: dict[str, float]
    lines: dict[str, int]
    settings: dict[str, Setting]


def _log(text: str) -> Parsed:
    first = summarise(parse_vllm_log(text))
    return Parsed(
        {k: f.value for k, f in first.items()},
        {k: f.line for k, f in first.items()},
        log_settings(text),
    )


def _json(format: str, parse: Callable[[str], dict[str, float]]) -> Callable[[str], Parsed]:
    def read(text: str) -> Parsed:
        figures = parse(text)
        return Parsed(figures, figure_lines(format, text, figures), {})

    return read


PARSERS: dict[str, Callable[[str], Parsed]] = {
    "vllm-log": _log,
    "vllm-bench": _json("vllm-bench", parse_vllm_bench),
    "perf-export": _json("perf-export", parse_perf_export),
    "vllm-metrics": lambda text: Parsed(parse_vllm_metrics(text), {}, {}),
    "nvidia-smi": lambda text: Parsed(parse_nvidia_smi(text), {}, {}),
}


def _read(folder: Path, entry: MeasurementEntry) -> str:
    """The text of a measurement file, which must be a regular file inside ``folder``."""
    path = folder / entry.file
    resolved = path.resolve()
    if not resolved.is_relative_to(folder.resolve()) or ".." in entry.file.split("/"):
        raise ValueError("the file must lie inside the measurements folder (no '..', no link out)")
    return read_text(resolved)


def _index(index: Path) -> tuple[Document, MeasurementsFile]:
    """The index, validated: a :class:`CatalogError` names each entry and field that is wrong
    (unknown fields, missing ones, duplicate ids), in the catalog files' own words."""
    display = str(index)
    try:
        doc = load(read_text(index))
    except FileProblem as exc:
        raise CatalogError([Problem(display, str(exc))]) from None
    except YamlProblem as exc:
        raise CatalogError([Problem(display, exc.message, line=exc.line)]) from None
    if doc.data is None:
        raise CatalogError([Problem(display, "the file is empty (expected measurements: [...])")])
    try:
        parsed = MeasurementsFile.model_validate(doc.data)
    except ValidationError as exc:
        problems = problems_from_validation(display, doc, MeasurementsFile, exc)
        raise CatalogError(_relabelled(problems)) from None
    duplicates = duplicate_ids(display, doc, "measurements")
    if duplicates:
        raise CatalogError(_relabelled(duplicates))
    return doc, parsed


def _relabelled(problems: Iterable[Problem]) -> list[Problem]:
    """The catalog's labels (``measurements 'x'``) as this index names an entry."""
    return [
        replace(p, entry=p.entry.replace("measurements", "measurement", 1)) if p.entry else p
        for p in problems
    ]


def read_index(index: Path) -> list[MeasurementEntry]:
    """The entries of a ``measurements/index.yaml``, validated but their files not read;
    :class:`~planner.catalog.CatalogError` names each problem."""
    return list(_index(index)[1].measurements)


def load_measurements(catalog: Catalog) -> tuple[Measurement, ...]:
    """Every measurement listed in the catalog's ``measurements/index.yaml`` (none without it).

    Raises :class:`~planner.catalog.CatalogError` listing every problem: an invalid index, a
    duplicate id, an entry naming hardware, a model or a precision the catalog lacks, a file
    that is missing, outside the folder, not in its format, holding a figure no run could
    give, or contradicting its entry.
    """
    folder = catalog.folder / FOLDER
    index = folder / INDEX
    if not index.is_file():
        return ()
    display = str(index)
    doc, parsed = _index(index)
    known = {
        "hardware": {h.id for h in catalog.hardware},
        "model": {m.id for m in catalog.models},
        "precision": {p.id for p in catalog.precisions},
        "workload": {w.id for w in catalog.workloads},
    }
    problems = []
    out = []
    for i, entry in enumerate(parsed.measurements):
        where = f"measurement '{entry.id}'"
        missing = False
        for field, ids in known.items():
            value = getattr(entry, field)
            if value not in ids and (field != "workload" or value is not None):
                line = doc.line_of(("measurements", i, field))
                message = f"no {field} {value!r} in the catalog; known: {', '.join(sorted(ids))}"
                problems.append(Problem(display, message, line=line, entry=where, field=field))
                missing = True
        try:
            text = _read(folder, entry)
        except ValueError as exc:  # the file the entry names cannot be read: say where it is named
            line = doc.line_of(("measurements", i, "file"))
            problems.append(
                Problem(display, f"{entry.file}: {exc}", line=line, entry=where, field="file")
            )
            continue
        file = str(folder / entry.file)
        try:
            read = PARSERS[entry.format](text)
        except MeasurementFileError as exc:
            message = f"{exc} (format {entry.format})"
            problems.append(Problem(file, message, line=exc.line, entry=where, field=exc.field))
            continue
        if missing:
            continue
        found = _contradictions(catalog, entry, read)
        problems.extend(
            Problem(file, message, line=line, entry=where, field=field)
            for message, field, line in found
        )
        warning = series_warning(entry.engine) if entry.engine is not None else None
        warnings: tuple[Problem, ...] = ()
        if warning is not None:
            line = doc.line_of(("measurements", i, "engine", "version"))
            warnings = (Problem(display, warning, line=line, entry=where, field="engine.version"),)
        out.append(Measurement(entry, read.figures, read.lines, warnings))
    if problems:
        raise CatalogError(problems)
    return tuple(out)


def measurement_warnings(measurements: Iterable[Measurement]) -> list[Problem]:
    """What a reader must know about the measurements, in their order: each release planned
    with another series' constants."""
    return [warning for m in measurements for warning in m.warnings]


Found = tuple[str, str, "int | None"]


def _contradictions(catalog: Catalog, entry: MeasurementEntry, read: Parsed) -> list[Found]:
    """Where a file says it was measured otherwise than its entry does: (message, field,
    line) for each."""
    found: list[Found] = []
    engine = entry.engine or catalog.assumptions.engine or DEFAULT_ENGINE
    settings, figures = read.settings, read.figures
    if entry.format == "vllm-log" and engine.name != "vllm":
        found.append((f"a vLLM start-up log, but its entry's engine is {engine.name}", "", None))
    for setting, field, size in (
        ("tensor_parallel_size", "tensor_parallel", entry.tensor_parallel),
        ("pipeline_parallel_size", "pipeline_parallel", entry.pipeline_parallel),
    ):
        started = settings.get(setting)
        if started is not None and int(started.text) != size:
            found.append(
                (
                    f"the engine was started with {setting}={started.text}, but the index says "
                    f"{field} {size}: its figures are per device of another layout; correct "
                    f"{field} in index.yaml",
                    setting,
                    started.line,
                )
            )
    version = settings.get("version")
    if version is not None and series_of(version.text) != series_of(engine.version):
        given = "the index says" if entry.engine else "its entry gives no engine, so the plan's"
        found.append(
            (
                f"the log was written by vLLM {version.text}, but {given} {engine.name} "
                f"{engine.version}: each release sizes memory by its own constants; give "
                f"engine: {{name: vllm, version: '{version.text}'}} in index.yaml",
                "version",
                version.line,
            )
        )
    found.extend(_device(catalog, entry, read))
    if entry.format in TRAFFIC_FORMATS:
        found.extend(_traffic(entry, figures, read.lines))
    return found


def _device(catalog: Catalog, entry: MeasurementEntry, read: Parsed) -> list[Found]:
    """A device memory the file reports that is not the entry's hardware's."""
    hardware = catalog.get("hardware", entry.hardware)
    expected = hardware.usable_memory or hardware.memory
    found: list[Found] = []
    for name in ("total_memory_bytes", "memory_total_bytes"):
        reported = read.figures.get(name)
        if reported is None or abs(reported / expected - 1) <= MEMORY_TOLERANCE:
            continue
        found.append(
            (
                f"the device reports {reported / GIB:,.2f} GiB, but hardware {hardware.id} has "
                f"{expected / GIB:,.2f} GiB (more than {MEMORY_TOLERANCE:.0%} apart): was it "
                f"measured on another device? correct hardware in index.yaml",
                name,
                read.lines.get(name),
            )
        )
    return found


def _traffic(
    entry: MeasurementEntry, figures: dict[str, float], lines: dict[str, int]
) -> list[Found]:
    """A benchmark without the concurrency it ran at, or whose concurrency or mean request
    lengths contradict its entry's."""
    found: list[Found] = []
    measured = figures.get("max_concurrency")
    if entry.concurrency is None and measured is None:
        found.append(
            (
                "the benchmark does not say how many requests were in flight: give concurrency "
                "in its entry in index.yaml (the estimate it is held against depends on it)",
                "concurrency",
                None,
            )
        )
    elif entry.concurrency is not None and measured is not None:
        if measured != entry.concurrency:
            found.append(
                (
                    f"the benchmark ran at max_concurrency {measured:g}, but the index says "
                    f"concurrency {entry.concurrency}; correct one of them",
                    "max_concurrency",
                    lines.get("max_concurrency"),
                )
            )
    completed = figures.get("completed")
    lengths = (("prompt_tokens", "total_input_tokens"), ("output_tokens", "total_output_tokens"))
    for key, total in lengths:
        stated = getattr(entry, key)
        if stated is None or not completed or total not in figures:
            continue
        mean = figures[total] / completed
        if abs(mean / stated - 1) > LENGTH_TOLERANCE:
            found.append(
                (
                    f"the benchmark's requests averaged {mean:,.0f} {key.split('_')[0]} tokens "
                    f"({total} ÷ completed), but the index says {key} {stated:,}: state the "
                    f"mean measured",
                    total,
                    lines.get(total),
                )
            )
    return found
