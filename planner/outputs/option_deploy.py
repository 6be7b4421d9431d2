"""The launch files of any option a run evaluated (``planner deploy``): the run's own catalogs
and the option's results row, laid out as a run's ``deploy/`` lays out a line of the ask
(:mod:`planner.deploy`)."""

from __future__ import annotations

import json
from pathlib import Path

from planner.catalog import load_catalog
from planner.deploy import deploy_files
from planner.model.cost import BUY
from planner.outputs.folders import CATALOG_COPY
from planner.outputs.runs import RESULTS_JSON
from planner.plan.deployment import Line

__all__ = ["OptionNotFound", "option_files"]


class OptionNotFound(LookupError):
    """A run holds no candidate of the id asked for (or is no run at all); says which."""


def option_files(run: Path, candidate: str) -> dict[str, str]:
    """The files of ``deploy/`` for one evaluated option of a run folder, by its candidate id
    (``hardware|model|precision|workload|tensor_parallel``, as ``results.csv`` gives it): the
    run's own catalogs and the option's results row, as for a line of the ask."""
    results = run / RESULTS_JSON
    if not results.is_file():
        raise OptionNotFound(f"{run} holds no {RESULTS_JSON}: not a run folder")
    rows = json.loads(results.read_text(encoding="utf-8")).get("rows", [])
    found = [r for r in rows if isinstance(r, dict) and r.get("candidate") == candidate]
    if not found:
        raise OptionNotFound(f"{run} has no candidate {candidate!r} (see its results.csv)")
    catalog = load_catalog(run / CATALOG_COPY)
    row = found[0]
    line = Line(str(row["workload"]), str(row["model"]), row, BUY, "planner deploy")  # type: ignore[arg-type]
    return deploy_files(catalog, [line])
