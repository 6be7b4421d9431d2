"""Measurements taken in: what an engine, a benchmark or ``nvidia-smi`` reported, tied to the
hardware, model, precision and engine it was taken on.

A catalog folder may hold ``measurements/index.yaml``, listing each measurement file with what it
was measured on::

    measurements:
      - id: h100-llama-8b-startup
        file: h100-llama-8b.log
        format: vllm-log          # vllm-log, vllm-bench, perf-export or nvidia-smi
        hardware: h100-sxm-80gb
        model: llama-3.1-8b
        precision: bf16
        tensor_parallel: 1
        engine: {name: vllm, version: 0.10.1, gpu_memory_utilization: 0.9}
        source: https://github.com/vllm-project/vllm/issues/...

:func:`load_measurements` validates the index against the catalog and parses every file; any
problem names the file, the entry, the field or line, and what was expected.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationError

from planner.catalog import Catalog, CatalogError, Problem
from planner.catalog.records import Count, Engine, Entry, Id, Record
from planner.catalog.safefile import FileProblem, read_text
from planner.catalog.yamlsafe import YamlProblem, load
from planner.measure.benchmarks import (
    FormatError,
    parse_nvidia_smi,
    parse_perf_export,
    parse_vllm_bench,
)
from planner.measure.vllm_log import LogError, parse_vllm_log, summarise

#: The folder, inside a catalog folder, that holds measurements, and its index.
FOLDER = "measurements"
INDEX = "index.yaml"

Format = Literal["vllm-log", "vllm-bench", "perf-export", "nvidia-smi"]


class MeasurementEntry(Entry):
    """One measurement file and what it was measured on."""

    file: Annotated[str, Field(strict=True, pattern=r"^[A-Za-z0-9._/-]+$", max_length=200)]
    format: Format
    hardware: Id
    model: Id
    precision: Id
    tensor_parallel: Count = 1
    engine: Engine | None = None
    #: Requests in flight during a benchmark (vllm-bench gives its own max_concurrency).
    concurrency: Count | None = None
    prompt_tokens: Count | None = None
    output_tokens: Count | None = None


class MeasurementsFile(Record):
    measurements: list[MeasurementEntry] = Field(min_length=1)


@dataclass(frozen=True)
class Measurement:
    """A parsed measurement: its entry and its figures in base units (bytes, seconds, tokens)."""

    entry: MeasurementEntry
    figures: dict[str, float]
    lines: dict[str, int]


def _log(text: str) -> tuple[dict[str, float], dict[str, int]]:
    first = summarise(parse_vllm_log(text))
    return {k: f.value for k, f in first.items()}, {k: f.line for k, f in first.items()}


def _flat(parse: Callable[[str], dict[str, float]]) -> Callable[[str], tuple[dict, dict]]:
    return lambda text: (parse(text), {})


PARSERS: dict[str, Callable[[str], tuple[dict[str, float], dict[str, int]]]] = {
    "vllm-log": _log,
    "vllm-bench": _flat(parse_vllm_bench),
    "perf-export": _flat(parse_perf_export),
    "nvidia-smi": _flat(parse_nvidia_smi),
}


def _read(folder: Path, entry: MeasurementEntry) -> str:
    """The text of a measurement file, which must be a regular file inside ``folder``."""
    path = folder / entry.file
    resolved = path.resolve()
    if not resolved.is_relative_to(folder.resolve()) or ".." in entry.file.split("/"):
        raise ValueError("the file must lie inside the measurements folder (no '..', no link out)")
    return read_text(resolved)


def load_measurements(catalog: Catalog) -> tuple[Measurement, ...]:
    """Every measurement listed in the catalog's ``measurements/index.yaml`` (none without it).

    Raises :class:`~planner.catalog.CatalogError` listing every problem: an invalid index, an
    entry naming hardware, a model or a precision the catalog lacks, a file that is missing,
    outside the folder or not in its format.
    """
    folder = catalog.folder / FOLDER
    index = folder / INDEX
    if not index.is_file():
        return ()
    display = str(index)
    try:
        doc = load(read_text(index))
        parsed = MeasurementsFile.model_validate(doc.data)
    except FileProblem as exc:
        raise CatalogError([Problem(display, str(exc))]) from None
    except YamlProblem as exc:
        raise CatalogError([Problem(display, exc.message, line=exc.line)]) from None
    except ValidationError as exc:
        raise CatalogError(
            [
                Problem(
                    display,
                    error["msg"],
                    line=doc.line_of(tuple(error["loc"])),
                    field=".".join(str(p) for p in error["loc"][2:]) or None,
                    entry=_entry_of(doc.data, error["loc"]),
                )
                for error in exc.errors()
            ]
        ) from None
    known = {
        "hardware": {h.id for h in catalog.hardware},
        "model": {m.id for m in catalog.models},
        "precision": {p.id for p in catalog.precisions},
    }
    problems = []
    out = []
    for i, entry in enumerate(parsed.measurements):
        where = f"measurement '{entry.id}'"
        for field, ids in known.items():
            value = getattr(entry, field)
            if value not in ids:
                line = doc.line_of(("measurements", i, field))
                message = f"no {field} {value!r} in the catalog; known: {', '.join(sorted(ids))}"
                problems.append(Problem(display, message, line=line, entry=where, field=field))
        try:
            text = _read(folder, entry)
        except ValueError as exc:  # the file the entry names cannot be read: say where it is named
            line = doc.line_of(("measurements", i, "file"))
            problems.append(
                Problem(display, f"{entry.file}: {exc}", line=line, entry=where, field="file")
            )
            continue
        try:
            figures, lines = PARSERS[entry.format](text)
        except (ValueError, LogError, FormatError) as exc:
            file = str(folder / entry.file)
            problems.append(Problem(file, f"{exc} (format {entry.format})", entry=where))
            continue
        out.append(Measurement(entry, figures, lines))
    if problems:
        raise CatalogError(problems)
    return tuple(out)


def _entry_of(data: object, loc: tuple[int | str, ...]) -> str | None:
    """``measurement 'id'`` for an error located inside one entry of the index."""
    if len(loc) < 2 or not isinstance(data, dict):
        return None
    items = data.get("measurements")
    if not isinstance(items, list) or not isinstance(loc[1], int) or loc[1] >= len(items):
        return None
    item = items[loc[1]]
    ident = item.get("id") if isinstance(item, dict) else None
    return f"measurement '{ident}'" if ident else f"measurement #{loc[1] + 1}"
