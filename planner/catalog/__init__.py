"""Catalogs: the YAML files that describe hardware, models, precisions, workloads and assumptions.

Loading turns untrusted files into typed, validated records at the edge. Every problem names the
file, the entry (its ``id``, or its position when it has none), the field and the line, and says
what was expected and what arrived; all problems are collected and reported together.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from planner.catalog import records
from planner.catalog.datafiles import DataFileError, read_column, read_factors, read_trace
from planner.catalog.distributions import DistributionError
from planner.catalog.engines import engine_series, known_series, series_of, series_warning
from planner.catalog.problems import (
    EXPECTED_KINDS,
    KIND_ERRORS,
    CatalogError,
    Problem,
    UnknownEntry,
    plain_message,
    shown,
)
from planner.catalog.records import (
    CATALOG_FILES,
    ID_PATTERN,
    MAX_SAMPLES,
    OPTIONAL_FILES,
    SCHEMAS,
    ApiOffer,
    ApiOffersFile,
    Arrival,
    Assumptions,
    AssumptionsFile,
    Bandwidth,
    Bytes,
    BytesOrZero,
    Calibration,
    Compute,
    Count,
    CountOrZero,
    Deployment,
    DeploymentFile,
    Engine,
    Entry,
    Fraction,
    Hardware,
    HardwareFile,
    Id,
    LengthDistribution,
    Lengths,
    MLABlock,
    Model,
    ModelsFile,
    MoEBlock,
    Money,
    OptionalBandwidth,
    OptionalBytes,
    OptionalPower,
    OptionalRate,
    OptionalSeconds,
    Positive,
    Precision,
    PrecisionsFile,
    Price,
    Record,
    Scenario,
    ScenariosFile,
    Seconds,
    Serve,
    SlidingWindowBlock,
    Targets,
    Text,
    Workload,
    WorkloadsFile,
)
from planner.catalog.safefile import FileProblem, read_regular
from planner.catalog.yamlsafe import Document, YamlProblem, load


@dataclass(frozen=True)
class Catalog:
    """A validated catalog folder."""

    folder: Path
    hardware: tuple[Hardware, ...]
    models: tuple[Model, ...]
    precisions: tuple[Precision, ...]
    workloads: tuple[Workload, ...]
    assumptions: Assumptions
    scenarios: tuple[Scenario, ...] = ()
    api_offers: tuple[ApiOffer, ...] = ()
    deployment: tuple[Serve, ...] = ()
    calibration: tuple[Calibration, ...] = ()
    prepared_by: str | None = None
    files: dict[str, str] = field(default_factory=dict)  # file name -> SHA-256
    data_files: tuple[str, ...] = ()  # CSVs the workloads name, relative to the folder
    warnings: tuple[Problem, ...] = ()

    def engine_series(self) -> str:
        """The engine release series the plan is for, as calibrations name it (``vllm 0.11``);
        vLLM's newest series with constants when the assumptions name no engine."""
        return engine_series(self.assumptions.engine)

    def calibrated(self) -> dict[str, Calibration]:
        """The calibration that applies to each calibrated hardware: the one fitted on the
        plan's engine release series (a fit on another release does not carry over)."""
        series = self.engine_series()
        return {c.hardware: c for c in self.calibration if c.engine == series}

    def get(self, kind: str, entry_id: str) -> Any:
        for entry in getattr(self, kind):
            if entry.id == entry_id:
                return entry
        valid = ", ".join(e.id for e in getattr(self, kind))
        raise UnknownEntry(f"no {kind} entry {entry_id!r}; valid: {valid}")


def _entry_label(section: str, data: Any, index: int) -> str:
    try:
        entry_id = data[section][index]["id"]
        if isinstance(entry_id, str):
            return f"{section} '{entry_id}'"
    except (KeyError, IndexError, TypeError):
        pass
    return f"{section}[{index}]"


def validation_message(error: ErrorDetails, model: type[BaseModel] | None = None) -> str:
    """One validation error in planner's words (:func:`plain_message`), with what only the
    catalog knows: the fields a record allows, what an id may hold, where long samples go."""
    kind = error["type"]
    if kind == "extra_forbidden":
        allowed = ", ".join(n for n in (model.model_fields if model else ()) if n != "uncertain")
        return f"unknown field; expected one of: {allowed}"
    message = plain_message(error)
    if kind == "too_long" and error["loc"] and error["loc"][-1] == "samples":
        return (
            f"{message}: at most {MAX_SAMPLES:,} samples are written inline; put a longer list "
            "in a CSV file beside the catalog ({file: lengths.csv, column: tokens}), which has "
            "no count limit"
        )
    if kind == "string_pattern_mismatch" and (error.get("ctx") or {}).get("pattern") == ID_PATTERN:
        return (
            f"{message}: an id is lower-case letters, digits, '.', '_' and '-', starting with a "
            "letter or digit"
        )
    return message


def _model_at(schema: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The record class that owns the last field of ``loc`` (for listing its valid fields)."""
    current: Any = schema
    owner = schema
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        info = getattr(current, "model_fields", {}).get(part)
        if info is None:
            return owner
        annotation = info.annotation
        for candidate in _walk_types(annotation):
            if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                current = owner = candidate
                break
    return owner


def _walk_types(annotation: Any) -> Iterable[Any]:
    yield annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        yield from _walk_types(arg)


def _branch_tag(part: Any) -> bool:
    """A part of an error's location that names a validator or a branch of a union
    (``function-after[...]``, ``constrained-int``), not a field: field names have no ``-``."""
    return isinstance(part, str) and ("-" in part or part.startswith("function"))


def _first_tag(loc: tuple[Any, ...]) -> int | None:
    return next((i for i, part in enumerate(loc) if _branch_tag(part)), None)


def _kind_only(error: ErrorDetails, depth: int) -> bool:
    """An error of a union's branch that says only that the value is not of the branch's
    kind (a number where a mapping is, a mapping where a number is), at the branch itself."""
    return error["type"] in KIND_ERRORS and len(error["loc"]) == depth + 1


def _expected_kind(error: ErrorDetails) -> str:
    """What a union branch expected, in words: a record's mapping names its fields."""
    ctx = error.get("ctx") or {}
    record = getattr(records, str(ctx.get("class_name")), None)
    if error["type"] == "model_type" and isinstance(record, type):
        names = [n for n in getattr(record, "model_fields", {}) if n != "uncertain"]
        return f"a mapping of {', '.join(names)}"
    if error["type"] == "literal_error":
        return f"one of {ctx.get('expected')}"
    return EXPECTED_KINDS.get(error["type"], "another value")


def _union_errors(errors: list[ErrorDetails]) -> list[ErrorDetails]:
    """The errors worth showing of a value that no branch of a union accepts: those of the
    branches the value was meant for (a mapping's own faults, a number's bound), and when it
    suits no branch at all, one error saying every kind that would have been accepted."""
    groups: dict[tuple[Any, ...], list[ErrorDetails]] = {}
    for error in errors:
        tag = _first_tag(error["loc"])
        if tag is not None:
            groups.setdefault(tuple(error["loc"][:tag]), []).append(error)
    dropped: set[int] = set()
    combined: dict[int, ErrorDetails] = {}
    for prefix, members in groups.items():
        depth = len(prefix)
        branches = {e["loc"][depth] for e in members}
        if len(branches) < 2:
            continue
        mismatched = {
            b
            for b in branches
            if all(_kind_only(e, depth) for e in members if e["loc"][depth] == b)
        }
        if mismatched != branches:
            dropped |= {id(e) for e in members if e["loc"][depth] in mismatched}
            continue
        kinds = " or ".join(dict.fromkeys(_expected_kind(e) for e in members))
        first = members[0]
        ctx = {"error": ValueError(f"expected {kinds}, got {shown(first.get('input'))}")}
        combined[id(first)] = ErrorDetails(
            type="value_error", loc=prefix, msg="", input=first.get("input"), ctx=ctx
        )
        dropped |= {id(e) for e in members}
    out = []
    for error in errors:
        if id(error) in combined:
            out.append(combined[id(error)])
        elif id(error) not in dropped:
            out.append(error)
    return out


def _distribution_fault(
    error: ErrorDetails, schema: type[BaseModel], loc: tuple[Any, ...]
) -> tuple[str, tuple[Any, ...], str] | None:
    """A distribution's fault, for an error a record raised about one of its uncertain fields
    (the record names the field first, ``mode: ...`` follows): the field, the location down to
    the key of the distribution at fault, and the message."""
    if error["type"] != "value_error":
        return None
    raised = (error.get("ctx") or {}).get("error")
    cause = getattr(raised, "__context__", None)
    if not isinstance(cause, DistributionError):
        return None
    name = str(raised).split(": ", 1)[0]
    record = _model_at(schema, (*loc, name))
    if record is None or name not in record.model_fields:
        return None
    return name, (*loc, name, *cause.key), cause.message


def _located(
    errors: list[ErrorDetails], schema: type[BaseModel], prefix: tuple[Any, ...] = ()
) -> list[tuple[tuple[Any, ...], str]]:
    """Each error's location (from the file's top) and message in planner's words.

    A record stops at the first distribution it cannot read, so its other fields go unread:
    the record is read again without that field, until every fault is found.
    """
    found = []
    for error in _union_errors(errors):
        loc = prefix + tuple(p for p in error["loc"] if not _branch_tag(p))
        fault = _distribution_fault(error, schema, loc)
        if fault is None:
            found.append((loc, validation_message(error, _model_at(schema, loc))))
            continue
        name, where, message = fault
        found.append((where, message))
        record = _model_at(schema, (*loc, name))
        data = error.get("input")
        if record is None or not isinstance(data, dict):
            continue
        rest = {k: v for k, v in data.items() if k != name}
        try:
            record.model_validate(rest)
        except ValidationError as again:
            others = [e for e in again.errors() if e["loc"] != (name,)]
            found.extend(_located(others, schema, loc))
    return found


def _problems_from_validation(
    name: str, doc: Document, schema: type[BaseModel], exc: ValidationError
) -> list[Problem]:
    problems = []
    for loc, message in _located(exc.errors(), schema):
        entry = None
        field_path: list[str] = []
        if len(loc) >= 2 and isinstance(loc[1], int):
            entry = _entry_label(str(loc[0]), doc.data, loc[1])
            field_path = [str(p) for p in loc[2:]]
        elif loc:
            field_path = [str(p) for p in loc]
        problems.append(
            Problem(
                file=name,
                message=message,
                line=doc.line_of(loc),
                entry=entry,
                field=".".join(field_path) or None,
            )
        )
    return problems


def _read(path: Path, display: str) -> tuple[Document | None, str | None, list[Problem]]:
    try:
        raw = read_regular(path)
    except FileProblem as exc:
        return None, None, [Problem(display, str(exc))]
    digest = hashlib.sha256(raw).hexdigest()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, digest, [Problem(display, "is not UTF-8 text")]
    try:
        doc = load(text)
    except YamlProblem as exc:
        return None, digest, [Problem(display, exc.message, line=exc.line)]
    except ValueError as exc:  # a date YAML recognises that no calendar has (2024-13-45)
        line, value = _bad_date(text)
        message = f"{value!r} is written as a date but is not one ({exc})" if value else str(exc)
        return None, digest, [Problem(display, f"invalid YAML: {message}", line=line)]
    if doc.data is None:
        return None, digest, [Problem(display, "the file is empty")]
    return doc, digest, []


def _bad_date(text: str) -> tuple[int | None, str | None]:
    """The line and text of the first scalar YAML reads as a date (``2024-13-45``) that is no
    date; (None, None) when there is none."""
    import yaml

    stack = [yaml.compose(text, Loader=yaml.SafeLoader)]
    while stack:
        node = stack.pop(0)
        if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":timestamp"):
            try:
                yaml.SafeLoader("").construct_yaml_timestamp(node)
            except ValueError:
                return node.start_mark.line + 1, node.value
        elif isinstance(node, yaml.MappingNode):
            stack.extend(v for pair in node.value for v in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return None, None


def _duplicates(name: str, doc: Document, section: str) -> list[Problem]:
    seen: dict[str, int] = {}
    problems = []
    for i, item in enumerate(doc.data.get(section) or []):
        entry_id = item.get("id") if isinstance(item, dict) else None
        if not isinstance(entry_id, str):
            continue
        if entry_id in seen:
            problems.append(
                Problem(
                    name,
                    f"duplicate id {entry_id!r} (first used by entry {seen[entry_id]})",
                    line=doc.line_of((section, i, "id")),
                    entry=f"{section} '{entry_id}'",
                    field="id",
                )
            )
        else:
            seen[entry_id] = i
    return problems


def _display(folder: Path, stem: str) -> str:
    return str(folder / f"{stem}.yaml")


def _at(
    folder: Path,
    docs: dict[str, Document],
    section: str,
    index: int,
    entry_id: str,
    field: str,
    message: str,
    *path: str | int,
) -> Problem:
    """A problem with entry ``index`` of ``section``, at ``field`` (or the deeper ``path``)."""
    where = path or tuple(field.split("."))
    return Problem(
        _display(folder, section),
        message,
        line=docs[section].line_of((section, index, *where)),
        entry=f"{section} '{entry_id}'",
        field=field,
    )


def load_catalog(folder: str | Path) -> Catalog:
    """Load and validate every catalog file in ``folder``.

    Raises :class:`CatalogError` listing every problem found in every file.
    """
    folder = Path(folder)
    problems: list[Problem] = []
    if not folder.is_dir():
        raise CatalogError([Problem(str(folder), "is not a catalog folder")])
    parsed: dict[str, Record] = {}
    docs: dict[str, Document] = {}
    files: dict[str, str] = {}
    for stem in CATALOG_FILES + OPTIONAL_FILES:
        path = folder / f"{stem}.yaml"
        display = _display(folder, stem)
        if not path.exists():
            if stem in CATALOG_FILES:
                problems.append(Problem(display, "the file is missing"))
            continue
        doc, digest, file_problems = _read(path, display)
        if digest:
            files[path.name] = digest
        problems.extend(file_problems)
        if doc is None:
            continue
        if not isinstance(doc.data, dict):
            problems.append(
                Problem(display, f"expected a mapping with the key '{stem}'", line=doc.line_of(()))
            )
            continue
        docs[stem] = doc
        schema = SCHEMAS[stem]
        if stem in doc.data and isinstance(doc.data[stem], list):
            problems.extend(_duplicates(display, doc, stem))
        try:
            parsed[stem] = schema.model_validate(doc.data)
        except ValidationError as exc:
            problems.extend(_problems_from_validation(display, doc, schema, exc))
    if not problems:
        problems.extend(_dangling(folder, parsed, docs))
    data_files: list[str] = []
    if not problems:
        problems.extend(_workload_files(folder, parsed, docs, data_files))
    if problems:
        raise CatalogError(problems)
    scenarios = getattr(parsed.get("scenarios"), "scenarios", [])
    offers = getattr(parsed.get("api_offers"), "api_offers", [])
    plan = getattr(parsed.get("deployment"), "deployment", Deployment())
    calibration = getattr(parsed.get("calibration"), "calibration", [])
    return Catalog(
        folder=folder,
        hardware=tuple(parsed["hardware"].hardware),  # type: ignore[attr-defined]
        models=tuple(parsed["models"].models),  # type: ignore[attr-defined]
        precisions=tuple(parsed["precisions"].precisions),  # type: ignore[attr-defined]
        workloads=tuple(parsed["workloads"].workloads),  # type: ignore[attr-defined]
        assumptions=parsed["assumptions"].assumptions,  # type: ignore[attr-defined]
        scenarios=tuple(scenarios),
        api_offers=tuple(offers),
        deployment=tuple(plan.serve),
        calibration=tuple(calibration),
        prepared_by=plan.prepared_by,
        files=files,
        data_files=tuple(dict.fromkeys(data_files)),
        warnings=tuple(
            _parameter_warnings(folder, parsed, docs)
            + _engine_warnings(folder, parsed, docs)
            + _calibration_warnings(folder, parsed, docs)
            + _free_warnings(folder, parsed, docs)
        ),
    )


#: Why a price of zero is worth a warning: it is accepted, and it decides the plan.
FREE = (
    "a price of 0 makes it free, so it wins every comparison of cost it enters; give the "
    "price paid, or leave the field out where it is not known"
)


def _free_warnings(
    folder: Path, parsed: dict[str, Record], docs: dict[str, Document]
) -> list[Problem]:
    """Prices given as zero: a device, a rental, a hosted API or electricity that costs
    nothing is accepted (a gift is possible) but changes the answer, so it is said."""
    warnings = []
    for i, device in enumerate(parsed["hardware"].hardware):  # type: ignore[attr-defined]
        for name in ("purchase_usd", "cloud_usd_per_hour"):
            if device.price is not None and getattr(device.price, name) == 0:
                warnings.append(_at(folder, docs, "hardware", i, device.id, f"price.{name}", FREE))
    if "api_offers" in parsed:
        for i, offer in enumerate(parsed["api_offers"].api_offers):  # type: ignore[attr-defined]
            for name in ("input_usd_per_million_tokens", "output_usd_per_million_tokens"):
                if getattr(offer, name) == 0:
                    warnings.append(_at(folder, docs, "api_offers", i, offer.id, name, FREE))
    assumptions = parsed["assumptions"].assumptions  # type: ignore[attr-defined]
    if assumptions.electricity_usd_per_kwh == 0:
        warnings.append(
            Problem(
                _display(folder, "assumptions"),
                FREE,
                line=docs["assumptions"].line_of(("assumptions", "electricity_usd_per_kwh")),
                entry="assumptions",
                field="electricity_usd_per_kwh",
            )
        )
    return warnings


#: Largest relative difference tolerated between a published and a derived parameter count.
PARAMETER_TOLERANCE = 0.01


def _parameter_warnings(
    folder: Path, parsed: dict[str, Record], docs: dict[str, Document]
) -> list[Problem]:
    """A published ``parameters`` that differs by more than 1 % from the architecture's count
    plus ``encoder_parameters``."""
    warnings = []
    for i, model in enumerate(parsed["models"].models):  # type: ignore[attr-defined]
        derived = model.derived_parameters()
        if model.parameters is None or derived is None:
            continue
        total = derived.total + model.encoder_parameters
        gap = (total - model.parameters) / model.parameters
        if abs(gap) > PARAMETER_TOLERANCE:
            encoder = (
                f" (decoder {derived.total:,} + encoder {model.encoder_parameters:,})"
                if model.encoder_parameters
                else ""
            )
            message = (
                f"the architecture gives {total:,} parameters{encoder}, {gap:+.1%} from the "
                f"published {model.parameters:,}; the published total is used"
            )
            warnings.append(_at(folder, docs, "models", i, model.id, "parameters", message))
    return warnings


def _workload_files(
    folder: Path, parsed: dict[str, Record], docs: dict[str, Document], used: list[str]
) -> list[Problem]:
    """CSV files named by workloads must exist inside the folder and hold what is asked."""

    problems = []
    for i, w in enumerate(parsed["workloads"].workloads):  # type: ignore[attr-defined]
        checks: list[tuple[str, Any]] = []
        for key in ("prompt_tokens", "output_tokens"):
            dist = getattr(w, key)
            if isinstance(dist, LengthDistribution) and dist.file is not None:
                checks.append((f"{key}.file", lambda d=dist: read_column(folder, d.file, d.column)))
                used.append(dist.file)
        if w.arrival is not None and w.arrival.file is not None:
            checks.append(("arrival.file", lambda a=w.arrival: read_trace(folder, a.file)))
            used.append(w.arrival.file)
        forecast = w.forecast
        if forecast is not None and forecast.file is not None and forecast.column is not None:
            checks.append(
                (
                    "forecast.file",
                    lambda f=forecast: read_factors(folder, f.file, f.column),
                )
            )
            used.append(forecast.file)
        for field_name, check in checks:
            try:
                values = check()
            except DataFileError as exc:
                problems.append(_at(folder, docs, "workloads", i, w.id, field_name, str(exc)))
                continue
            if field_name == "forecast.file" and values.max() > MAX_TRAFFIC_FACTOR:
                message = (
                    f"{forecast.file} column {forecast.column!r} reaches {values.max():.4g} × "
                    f"today's traffic, past the {MAX_TRAFFIC_FACTOR:,.0f} × a forecast may reach"
                )
                problems.append(_at(folder, docs, "workloads", i, w.id, field_name, message))
            if field_name == "output_tokens.file" and values.max() > w.max_output_tokens:
                message = (
                    f"output lengths reach {values.max()}, above max_output_tokens "
                    f"({w.max_output_tokens})"
                )
                problems.append(_at(folder, docs, "workloads", i, w.id, "output_tokens", message))
        growth = _growth_past_bound(w)
        if growth is not None:
            problems.append(
                _at(folder, docs, "workloads", i, w.id, "forecast.growth_per_month", growth)
            )
        out = w.output_tokens
        if (
            isinstance(out, int)
            and out > w.max_output_tokens
            or (
                isinstance(out, LengthDistribution)
                and out.max is not None
                and out.max > w.max_output_tokens
            )
        ):
            message = f"output_tokens exceed max_output_tokens ({w.max_output_tokens})"
            problems.append(_at(folder, docs, "workloads", i, w.id, "output_tokens", message))
    return problems


#: Most a forecast may multiply today's traffic by, in any month: a month's factor in a table
#: may be no more (records.TrafficFactor), and growth compounded over the months no more either.
MAX_TRAFFIC_FACTOR = 1e6


def _growth_past_bound(workload: Workload) -> str | None:
    """Why a forecast's compound growth is refused: (1 + growth)^(months − 1), its last month's
    traffic as a multiple of today's, past :data:`MAX_TRAFFIC_FACTOR` (a load that grows so far
    is surely a slip, and its schedule would count nodes past any purchase); None when within."""
    forecast = workload.forecast
    if forecast is None or not forecast.growth_per_month or forecast.months is None:
        return None
    growth, last = forecast.growth_per_month, forecast.months - 1
    if growth <= 0 or last * math.log10(1 + growth) <= math.log10(MAX_TRAFFIC_FACTOR):
        return None
    exponent = last * math.log10(1 + growth)
    return (
        f"{growth:.0%} a month over {forecast.months} months multiplies today's traffic by "
        f"(1 + {growth:g})^{last} ≈ 10^{exponent:.0f} by the last month, past the "
        f"{MAX_TRAFFIC_FACTOR:,.0f} × a forecast may reach: give fewer months, a smaller growth, "
        "or the factors month by month"
    )


#: The lists a scenario may restrict; each is named like the catalog file it refers to.
SCENARIO_SECTIONS = ("hardware", "models", "precisions", "workloads")


def _offers(folder: Path, parsed: dict[str, Record], docs: dict[str, Document]) -> list[Problem]:
    """API offers that name no model, or a second offer for a model (the plan compares one)."""
    if "api_offers" not in parsed:
        return []
    models = [m.id for m in parsed["models"].models]  # type: ignore[attr-defined]
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for i, offer in enumerate(parsed["api_offers"].api_offers):  # type: ignore[attr-defined]
        if offer.model not in models:
            message = f"no models entry {offer.model!r} in models.yaml; valid: {', '.join(models)}"
            problems.append(_at(folder, docs, "api_offers", i, offer.id, "model", message))
        elif offer.model in seen:
            message = (
                f"model {offer.model!r} already has the offer {seen[offer.model]!r}: keep the "
                "one to compare with (the plan compares one API price per model)"
            )
            problems.append(_at(folder, docs, "api_offers", i, offer.id, "model", message))
        seen.setdefault(offer.model, offer.id)
    return problems


def _deployment(
    folder: Path, parsed: dict[str, Record], docs: dict[str, Document]
) -> list[Problem]:
    """Deployment lines that name no workload or model, or a workload twice."""
    if "deployment" not in parsed:
        return []
    valid = {
        section: [e.id for e in getattr(parsed[section], section)]
        for section in ("workloads", "models")
    }
    problems: list[Problem] = []
    seen: set[str] = set()
    lines = parsed["deployment"].deployment.serve  # type: ignore[attr-defined]
    for i, line in enumerate(lines):
        for section, ref, name in (
            ("workloads", line.workload, "workload"),
            ("models", line.model, "model"),
        ):
            if ref not in valid[section]:
                message = (
                    f"no {section} entry {ref!r} in {section}.yaml; valid: "
                    f"{', '.join(valid[section])}"
                )
                problems.append(_serve_problem(folder, docs, i, line.workload, name, message))
        if line.workload in seen:
            message = f"workload {line.workload!r} is served twice: keep one line for it"
            problems.append(_serve_problem(folder, docs, i, line.workload, "workload", message))
        seen.add(line.workload)
    return problems


def _serve_problem(
    folder: Path, docs: dict[str, Document], index: int, workload: str, field: str, message: str
) -> Problem:
    return Problem(
        _display(folder, "deployment"),
        message,
        line=docs["deployment"].line_of(("deployment", "serve", index, field)),
        entry=f"deployment line {index + 1} (workload {workload!r})",
        field=field,
    )


def _engine_warnings(
    folder: Path, parsed: dict[str, Record], docs: dict[str, Document]
) -> list[Problem]:
    """An engine profile whose release series planner has no constants for: it is planned with
    the nearest known series, which the warning names."""
    engine = parsed["assumptions"].assumptions.engine  # type: ignore[attr-defined]
    message = None if engine is None else series_warning(engine)
    if message is None:
        return []
    return [
        Problem(
            _display(folder, "assumptions"),
            message,
            line=docs["assumptions"].line_of(("assumptions", "engine", "version")),
            entry="assumptions",
            field="engine.version",
        )
    ]


#: The engine series of a plan whose assumptions name no engine (vLLM's newest with constants).
DEFAULT_ENGINE_SERIES = f"vllm {known_series('vllm')[-1]}"


def _calibrations(parsed: dict[str, Record]) -> list[Calibration]:
    return list(getattr(parsed.get("calibration"), "calibration", []))


def _calibration(
    folder: Path, parsed: dict[str, Record], docs: dict[str, Document]
) -> list[Problem]:
    """A calibration of hardware the catalog lacks, or two of the same hardware and engine."""
    problems = []
    hardware = {h.id for h in parsed["hardware"].hardware}  # type: ignore[attr-defined]
    display = _display(folder, "calibration")
    seen: dict[tuple[str, str], int] = {}
    for i, fit in enumerate(_calibrations(parsed)):
        entry = f"calibration[{i}]"
        if fit.hardware not in hardware:
            problems.append(
                Problem(
                    display,
                    f"no hardware entry {fit.hardware!r} in hardware.yaml",
                    line=docs["calibration"].line_of(("calibration", i, "hardware")),
                    entry=entry,
                    field="hardware",
                )
            )
        key = (fit.hardware, fit.engine)
        if key in seen:
            problems.append(
                Problem(
                    display,
                    f"a second calibration of {fit.hardware} on {fit.engine} (the first is "
                    f"calibration[{seen[key]}]); keep one",
                    line=docs["calibration"].line_of(("calibration", i, "engine")),
                    entry=entry,
                    field="engine",
                )
            )
        seen.setdefault(key, i)
    return problems


def _calibration_warnings(
    folder: Path, parsed: dict[str, Record], docs: dict[str, Document]
) -> list[Problem]:
    """A calibration fitted on another engine release than the plan's: it is not applied."""
    engine = parsed["assumptions"].assumptions.engine  # type: ignore[attr-defined]
    series = (
        DEFAULT_ENGINE_SERIES if engine is None else f"{engine.name} {series_of(engine.version)}"
    )
    return [
        Problem(
            _display(folder, "calibration"),
            f"fitted on {fit.engine}, not on the plan's {series}: not applied, so "
            f"{fit.hardware} stays uncalibrated",
            line=docs["calibration"].line_of(("calibration", i, "engine")),
            entry=f"calibration[{i}]",
            field="engine",
        )
        for i, fit in enumerate(_calibrations(parsed))
        if fit.engine != series
    ]


def _dangling(folder: Path, parsed: dict[str, Record], docs: dict[str, Document]) -> list[Problem]:
    """References between files that name no entry."""
    problems = []
    hardware = parsed["hardware"].hardware  # type: ignore[attr-defined]
    formats = sorted({k for h in hardware for k in h.compute})
    given = f"hardware gives: {', '.join(formats)}"
    for i, p in enumerate(parsed["precisions"].precisions):  # type: ignore[attr-defined]
        # A precision runs where its own format or else its fallback is given (the plan looks up
        # the fallback's rate on hardware without the format), so it needs one of the two; a
        # fallback that names no hardware's format is a dangling reference either way.
        fallback_missing = p.compute_fallback is not None and p.compute_fallback not in formats
        if p.compute not in formats and (p.compute_fallback is None or fallback_missing):
            message = f"compute format {p.compute!r} is not given by any hardware ({given})"
            if fallback_missing:
                message = (
                    f"neither compute format {p.compute!r} nor its compute_fallback "
                    f"{p.compute_fallback!r} is given by any hardware ({given})"
                )
            problems.append(_at(folder, docs, "precisions", i, p.id, "compute", message))
        elif fallback_missing:
            message = (
                f"compute_fallback {p.compute_fallback!r} is not given by any hardware ({given})"
            )
            problems.append(_at(folder, docs, "precisions", i, p.id, "compute_fallback", message))
    problems.extend(_offers(folder, parsed, docs))
    problems.extend(_deployment(folder, parsed, docs))
    problems.extend(_calibration(folder, parsed, docs))
    if "scenarios" not in parsed:
        return problems
    for i, scenario in enumerate(parsed["scenarios"].scenarios):  # type: ignore[attr-defined]
        for section in SCENARIO_SECTIONS:
            wanted = getattr(scenario, section)
            if wanted is None:
                continue
            valid = [e.id for e in getattr(parsed[section], section)]
            for j, ref in enumerate(wanted):
                if ref not in valid:
                    message = (
                        f"no {section} entry {ref!r} in {section}.yaml; valid: {', '.join(valid)}"
                    )
                    problems.append(
                        _at(folder, docs, "scenarios", i, scenario.id, section, message, section, j)
                    )
    return problems


#: The catalog package's public names: the records, the problems and the loaded catalog.
__all__ = [
    "ApiOffer",
    "ApiOffersFile",
    "Deployment",
    "Engine",
    "DeploymentFile",
    "Arrival",
    "Assumptions",
    "AssumptionsFile",
    "Bandwidth",
    "Bytes",
    "BytesOrZero",
    "CATALOG_FILES",
    "Catalog",
    "CatalogError",
    "Compute",
    "Count",
    "CountOrZero",
    "Entry",
    "Fraction",
    "Hardware",
    "HardwareFile",
    "ID_PATTERN",
    "Id",
    "LengthDistribution",
    "Lengths",
    "MLABlock",
    "MoEBlock",
    "Model",
    "ModelsFile",
    "Money",
    "OPTIONAL_FILES",
    "OptionalBandwidth",
    "OptionalBytes",
    "OptionalPower",
    "OptionalRate",
    "OptionalSeconds",
    "Positive",
    "Precision",
    "PrecisionsFile",
    "Price",
    "Problem",
    "Record",
    "SCHEMAS",
    "Scenario",
    "ScenariosFile",
    "Serve",
    "Seconds",
    "SlidingWindowBlock",
    "Targets",
    "Text",
    "UnknownEntry",
    "Workload",
    "WorkloadsFile",
    "load_catalog",
    "validation_message",
]
