"""References between a catalog's files: every id one file names must be an entry of the file
it names (a precision's compute format, an API offer's model, a deployment line's workload and
model, a calibration's hardware, a scenario's lists).
"""

from __future__ import annotations

from pathlib import Path

from planner.catalog.calibration_records import Calibration
from planner.catalog.fields import Record
from planner.catalog.problems import Problem
from planner.catalog.reading import display_path, problem_at
from planner.catalog.yamlsafe import Document

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
            problems.append(problem_at(folder, docs, "api_offers", i, offer.id, "model", message))
        elif offer.model in seen:
            message = (
                f"model {offer.model!r} already has the offer {seen[offer.model]!r}: keep the "
                "one to compare with (the plan compares one API price per model)"
            )
            problems.append(problem_at(folder, docs, "api_offers", i, offer.id, "model", message))
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
        display_path(folder, "deployment"),
        message,
        line=docs["deployment"].line_of(("deployment", "serve", index, field)),
        entry=f"deployment line {index + 1} (workload {workload!r})",
        field=field,
    )


def calibrations(parsed: dict[str, Record]) -> list[Calibration]:
    return list(getattr(parsed.get("calibration"), "calibration", []))


def _calibration(
    folder: Path, parsed: dict[str, Record], docs: dict[str, Document]
) -> list[Problem]:
    """A calibration of hardware the catalog lacks, or two of the same hardware and engine."""
    problems = []
    hardware = {h.id for h in parsed["hardware"].hardware}  # type: ignore[attr-defined]
    display = display_path(folder, "calibration")
    seen: dict[tuple[str, str], int] = {}
    for i, fit in enumerate(calibrations(parsed)):
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


def _speculative(
    folder: Path, parsed: dict[str, Record], docs: dict[str, Document]
) -> list[Problem]:
    """The engine's speculative setting names a draft model, targets or workloads the catalog
    lacks."""
    engine = parsed["assumptions"].assumptions.engine  # type: ignore[attr-defined]
    speculative = None if engine is None else engine.speculative
    if speculative is None:
        return []
    valid = {
        section: [e.id for e in getattr(parsed[section], section)]
        for section in ("models", "workloads")
    }
    wanted: list[tuple[str, str, tuple[str | int, ...]]] = []
    if speculative.draft_model is not None:
        wanted.append(("models", speculative.draft_model, ("draft_model",)))
    wanted += [("models", m, ("models", i)) for i, m in enumerate(speculative.models or [])]
    wanted += [
        ("workloads", w, ("acceptance_by_workload", w)) for w in speculative.acceptance_by_workload
    ]
    problems = []
    for section, ref, path in wanted:
        if ref not in valid[section]:
            problems.append(
                Problem(
                    display_path(folder, "assumptions"),
                    f"no {section} entry {ref!r} in {section}.yaml; expected one of: "
                    f"{', '.join(valid[section])}",
                    line=docs["assumptions"].line_of(
                        ("assumptions", "engine", "speculative", *path)
                    ),
                    entry="assumptions engine.speculative",
                    field=str(path[0]),
                )
            )
    return problems


def _prefill_pool_hardware(
    folder: Path, parsed: dict[str, Record], docs: dict[str, Document]
) -> list[Problem]:
    """Devices the prefill pools may run on that hardware.yaml lacks."""
    assumptions = parsed["assumptions"].assumptions  # type: ignore[attr-defined]
    valid = [h.id for h in parsed["hardware"].hardware]  # type: ignore[attr-defined]
    return [
        Problem(
            display_path(folder, "assumptions"),
            f"no hardware entry {ref!r} in hardware.yaml; expected one of: {', '.join(valid)}",
            line=docs["assumptions"].line_of(("assumptions", "prefill_pool_hardware", i)),
            entry="assumptions",
            field="prefill_pool_hardware",
        )
        for i, ref in enumerate(assumptions.prefill_pool_hardware)
        if ref not in valid
    ]


def dangling_references(
    folder: Path, parsed: dict[str, Record], docs: dict[str, Document]
) -> list[Problem]:
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
            problems.append(problem_at(folder, docs, "precisions", i, p.id, "compute", message))
        elif fallback_missing:
            message = (
                f"compute_fallback {p.compute_fallback!r} is not given by any hardware ({given})"
            )
            problems.append(
                problem_at(folder, docs, "precisions", i, p.id, "compute_fallback", message)
            )
    problems.extend(_offers(folder, parsed, docs))
    problems.extend(_deployment(folder, parsed, docs))
    problems.extend(_calibration(folder, parsed, docs))
    problems.extend(_speculative(folder, parsed, docs))
    problems.extend(_prefill_pool_hardware(folder, parsed, docs))
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
                        problem_at(
                            folder, docs, "scenarios", i, scenario.id, section, message, section, j
                        )
                    )
    return problems
