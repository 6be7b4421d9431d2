"""Run folders: results, workbook, report and manifest, written atomically, never overwritten.

A run is assembled in a hidden temporary folder beside its destination and renamed into place
only when every file is written, so an interrupted or failed run leaves no half-written report,
and an existing run folder is replaced only when the caller asks (``force``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import json
import math
import os
import platform
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pydantic_core

from planner import __version__, cleanup
from planner.catalog import Catalog
from planner.deploy import FOLDER as DEPLOY_FOLDER
from planner.deploy import write_deploy
from planner.measure import FOLDER as MEASUREMENTS
from planner.measure import INDEX, load_measurements
from planner.outputs.background import Background
from planner.outputs.folders import (
    CATALOG_COPY,
    MANIFEST,
    foreign_entries,
    listed_contents,
    read_manifest,
)
from planner.outputs.outlook import Outlook, outlook
from planner.plan.export import csv_text, export_table
from planner.plan.sweep import Results
from planner.progress import Progress

RESULTS_CSV = "results.csv"
RESULTS_JSON = "results.json"
FLEET_JSON = "fleet.json"  # the ask's workloads as one shared fleet
DEPLOY = DEPLOY_FOLDER  # launch commands, manifests and measurement kits per line of the ask
WORKBOOK = "plan.xlsx"
REPORT = "report.pdf"
UNCERTAINTY_CSV = "uncertainty.csv"  # a run with draws: the bands per option
_NAME = re.compile(r"[^a-z0-9._-]+")


class RunExists(Exception):
    """The destination folder already holds something and overwriting was not asked for."""


class RunNotWritten(Exception):
    """The file system refused the run folder (read-only, full, no permission): nothing of it
    was left behind and earlier runs are untouched."""

    @classmethod
    def from_os_error(cls, exc: OSError) -> RunNotWritten:
        where = f" ({exc.filename})" if exc.filename else ""
        return cls(
            f"the run folder could not be written: {exc.strerror or exc}{where}; nothing was "
            "left behind and earlier runs are untouched"
        )


def slug(text: str) -> str:
    """A short folder-safe name: lower case, ``[a-z0-9._-]``, at most 60 characters."""
    cleaned = _NAME.sub("-", text.lower()).strip("-.")
    return cleaned[:60] or "run"


def dated_name(root: Path, name: str | None, today: dt.date | None = None) -> Path:
    """``root/YYYY-MM-DD-name``: where a run is written when no ``--out`` is given (numbered by
    :func:`numbered` when taken)."""
    return root / f"{(today or dt.date.today()).isoformat()}-{slug(name or 'run')}"


def numbered(base: Path) -> Iterator[Path]:
    """``base``, then ``base-2``, ``base-3``...: the names a run may take in turn."""
    yield base
    for n in itertools.count(2):
        yield base.with_name(f"{base.name}-{n}")


def default_run_dir(root: Path, name: str | None, today: dt.date | None = None) -> Path:
    """``root/YYYY-MM-DD-name``, with ``-2``, ``-3``... when that run already exists."""
    return next(p for p in numbered(dated_name(root, name, today)) if not p.exists())


def check_destination(destination: Path, *, force: bool) -> None:
    """Refuse, before any work, a destination that exists (unless ``force``) or that ``force``
    may not replace: only a folder :func:`is_run` recognises is ever replaced.

    Raises :class:`RunExists`.
    """
    if not (destination.exists() or destination.is_symlink()):
        return
    if not force:
        raise RunExists(f"{destination} already exists; choose another --out or pass --force")
    if destination.is_symlink() or not destination.is_dir() or read_manifest(destination) is None:
        raise RunExists(
            f"{destination} is not a run folder planner wrote (no manifest.json listing its "
            "files); --force replaces only a planner run, so nothing was changed: choose another "
            "--out"
        )
    foreign = foreign_entries(destination)
    if foreign:
        named = ", ".join(foreign[:3]) + (
            f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        )
        raise RunExists(
            f"{destination} is not a run folder planner wrote alone: it holds what planner did "
            f"not write ({named}); --force replaces only a planner run, so nothing was changed: "
            "choose another --out or move those out"
        )


def probe_destination(destination: Path) -> None:
    """Make sure a run can be written beside ``destination`` (its parent folder made, a staging
    folder created and removed there) before minutes of work; removes stale staging folders.

    Raises :class:`RunNotWritten` naming what the file system refused.
    """
    try:
        destination.parent.mkdir(parents=True, exist_ok=True)
        recover_stale(destination.parent)
        probe = tempfile.mkdtemp(
            prefix=f".{destination.name}{STAGING}{os.getpid()}-", dir=destination.parent
        )
        os.rmdir(probe)
    except OSError as exc:
        raise RunNotWritten.from_os_error(exc) from None


def write_csv(table: pd.DataFrame, path: Path) -> Path:
    """Write :func:`csv_text` of ``table`` to ``path`` (UTF-8)."""
    path.write_text(csv_text(table), encoding="utf-8")
    return path


def _json_value(value: Any) -> Any:
    if value is None or value is pd.NA:
        return None
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        return None if not math.isfinite(value) else float(value)
    return value


def _json_column(column: pd.Series) -> list[Any]:
    """A column's values as JSON has them (:func:`_json_value` of each), converted at once
    where its type allows: numbers in bulk, a missing or infinite number as null."""
    if pd.api.types.is_bool_dtype(column.dtype) and not column.hasnans:
        return [bool(v) for v in column.tolist()]
    if pd.api.types.is_integer_dtype(column.dtype) and not column.hasnans:
        return [int(v) for v in column.tolist()]
    if pd.api.types.is_float_dtype(column.dtype) and isinstance(column.dtype, np.dtype):
        numbers = column.to_numpy()
        found: list[Any] = numbers.tolist()
        for i in np.flatnonzero(~np.isfinite(numbers)):
            found[i] = None
        return found
    return [_json_value(v) for v in column.tolist()]


def write_json(value: Any, path: Path) -> None:
    """``value`` (plain data: dicts, lists, strings, finite numbers, None) as compact UTF-8 JSON
    in ``path``. pydantic-core's serialiser writes the same values as the standard library's
    (each number as its shortest repr) in a third of its time: 0.14 s against 0.44 s for the
    38 MB of the shipped run's results.json."""
    path.write_bytes(pydantic_core.to_json(value) + b"\n")


def column_definitions(results: Results) -> list[dict[str, Any]]:
    """Each results column in table order: unit, meaning, and its formula or origin."""
    defined: dict[str, dict[str, Any]] = {
        k: {"name": k, "unit": "", "description": f"{k} (key)"} for k in results.key_columns
    }
    for lk in results.lookups:
        defined[lk.name] = {
            "name": lk.name,
            "unit": lk.unit,
            "description": lk.description,
            "lookup": f"{lk.sheet} sheet, by {lk.key}",
        }
    for m in results.metrics:
        defined[m.name] = {
            "name": m.name,
            "unit": m.unit,
            "description": m.description,
            "formula": m.formula_text(),
            "source": m.source,
        }
    return [defined[c] for c in results.table.columns]


def results_json(results: Results) -> dict[str, Any]:
    """Machine-readable results: column definitions (unit, meaning, formula) and the rows."""
    table = export_table(results.table)
    values = [_json_column(table[name]) for name in table.columns]
    names = [str(name) for name in table.columns]
    rows = [dict(zip(names, row, strict=True)) for row in zip(*values, strict=True)]
    return {
        "planner_version": __version__,
        "columns": column_definitions(results),
        "rows": rows,
    }


def fleet_json(derived: Outlook) -> dict[str, Any]:
    """The shared fleet of the run (:attr:`Outlook.fleet`) as plain data, beside the ask's own
    cost over the period; or why there is none."""
    fleet = derived.fleet
    if isinstance(fleet, str):
        return {"planner_version": __version__, "fleet": None, "why": fleet}
    found: dict[str, Any] = {
        "planner_version": __version__,
        "ask_usd": derived.plan.total("period_usd"),
        "fleet": fleet.to_json(),
    }
    if derived.fleet_later is not None:
        month, later = derived.fleet_later
        shown = {"why": later} if isinstance(later, str) else later.to_json()
        found["at_forecast_end"] = {"month": month, "fleet": shown}
    if derived.fleet_months is not None:
        found["schedule"] = derived.fleet_months.to_json()
    return found


def manifest(
    catalog: Catalog, results: Results, name: str | None, extra: tuple[str, ...] = ()
) -> dict[str, Any]:
    """What a run was made from: version, time, catalog files with their SHA-256, row counts."""
    return {
        "planner_version": __version__,
        "name": name,
        "created_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "catalog_folder": str(catalog.folder),
        "catalog_files": dict(sorted(catalog.files.items())),
        "counts": {
            "hardware": len(catalog.hardware),
            "models": len(catalog.models),
            "precisions": len(catalog.precisions),
            "workloads": len(catalog.workloads),
            "candidates": len(results.table),
            "fitting": int(results.table["fits"].sum()) if "fits" in results.table else None,
        },
        "files": [
            RESULTS_CSV,
            RESULTS_JSON,
            WORKBOOK,
            REPORT,
            MANIFEST,
            CATALOG_COPY + "/",
            DEPLOY + "/",
            *extra,
        ],
    }


def output_hashes(folder: Path) -> dict[str, str]:
    """The SHA-256 of each file a run folder holds at its top level (the manifest aside), which
    ``planner diff`` checks to say when a run was altered after it was written."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file() and p.name != MANIFEST
    }


Writer = Callable[[Path], Any]


def copy_catalogs(catalog: Catalog, destination: Path) -> None:
    """Copy the catalog files a run was made from (verbatim), with the measurements it was held
    against, so later runs can be diffed."""
    destination.mkdir()
    for name in catalog.files:
        shutil.copy2(catalog.folder / name, destination / name)
    for relative in catalog.data_files:
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(catalog.folder / relative, target)
    measured = load_measurements(catalog)  # validated before the run: only listed files travel
    if measured:
        folder = destination / MEASUREMENTS
        folder.mkdir()
        for name in [INDEX, *(m.entry.file for m in measured)]:
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(catalog.folder / MEASUREMENTS / name, target)


#: What names a run's staging folder, beside its destination: ``.NAME.staging-PID-XXXX``.
STAGING = ".staging-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


#: The suffix of the folder a forced run moves the run it replaces to, for the moment between
#: its two renames.
REPLACED = "old"


def scratch_folder(destination: Path) -> Path:
    """A hidden folder beside ``destination`` for files a run writes before its run folder (a
    streamed sweep's results), removed if the run is stopped, or by the next run if killed."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{destination.name}{STAGING}{os.getpid()}-scratch-"
    try:
        scratch = Path(tempfile.mkdtemp(prefix=prefix, dir=destination.parent))
    except OSError as exc:
        raise RunNotWritten.from_os_error(exc) from None
    cleanup.register(scratch)
    return scratch


def remove_scratch(scratch: Path) -> None:
    """Remove a :func:`scratch_folder` and what is left in it."""
    shutil.rmtree(scratch, ignore_errors=True)
    cleanup.release(scratch)


def recover_stale(folder: Path) -> list[Path]:
    """Clean up after runs killed in ``folder`` (their process is gone): remove their staging
    folders, but put back a run that a forced run had moved aside and not yet replaced, so a
    kill between the two renames never loses both runs. Returns what was removed or restored."""
    touched = []
    for path in sorted(folder.glob(f".*{STAGING}*")):
        head, tail = path.name.split(STAGING, 1)
        pid_text, _, suffix = tail.partition("-")
        if not (path.is_dir() and not path.is_symlink() and pid_text.isdigit()):
            continue
        if _alive(int(pid_text)):
            continue
        original = folder / head.removeprefix(".")
        if suffix == REPLACED and not (original.exists() or original.is_symlink()):
            os.rename(path, original)
        else:
            shutil.rmtree(path, ignore_errors=True)
        touched.append(path)
    return touched


def _publish(staging: Path, destination: Path) -> None:
    """Move the finished staging folder to ``destination``, refusing to replace a run another
    process finished there meanwhile."""
    try:
        os.rename(staging, destination)  # fails when destination is a non-empty folder
    except OSError as exc:
        if destination.exists():
            raise RunExists(
                f"{destination} was written by another run meanwhile; choose another --out"
            ) from None
        raise exc


def _publish_numbered(staging: Path, destination: Path) -> Path:
    """:func:`_publish` at the first of :func:`numbered` names no other run has taken."""
    for candidate in numbered(destination):
        if candidate.exists() or candidate.is_symlink():
            continue
        try:
            _publish(staging, candidate)
        except RunExists:
            continue
        return candidate
    raise AssertionError("unreachable")  # pragma: no cover


def _replace(staging: Path, destination: Path) -> None:
    """Put the finished staging folder in place of the run at ``destination`` (checked by
    :func:`check_destination`): the old run is moved aside, the new one renamed in, the old one
    removed; killed between the renames, :func:`recover_stale` puts the old run back."""
    check_destination(destination, force=True)
    old = destination.with_name(f".{destination.name}{STAGING}{os.getpid()}-{REPLACED}")
    os.rename(destination, old)
    try:
        os.rename(staging, destination)
    except OSError:
        os.rename(old, destination)
        raise
    shutil.rmtree(old, ignore_errors=True)


def write_run(
    catalog: Catalog,
    results: Results,
    destination: Path,
    *,
    name: str | None = None,
    force: bool = False,
    number: bool = False,
    extra_writers: Mapping[str, Writer] | None = None,
    baseline: Any = None,
    progress: Progress | None = None,
    bands: Any = None,
    derived: Outlook | None = None,
) -> Path:
    """Write a complete run folder at ``destination`` atomically; returns where it went.

    Raises :class:`RunExists` when ``destination`` exists and ``force`` is false (or another
    run finished there meanwhile), or is not a planner run (:func:`check_destination`);
    ``number`` instead takes the next free ``-2``, ``-3``... name, so two runs started together
    both land. :class:`RunNotWritten` when the file system refuses the
    folder (read-only, full), leaving nothing behind. The workbook and
    report are rendered by :mod:`planner.outputs.workbook` and :mod:`planner.outputs.report`
    (the report in a forked child while the other files are written,
    :mod:`planner.outputs.background`);
    ``extra_writers`` maps further file names to functions that write them. ``baseline`` (a
    :class:`planner.diff.RunDiff`) adds a comparison section to the report; ``bands``
    (:class:`planner.plan.uncertainty.Bands`) the Uncertainty sheet and section; ``derived``
    is what the writers show beyond the table (:class:`Outlook`, with its bands) where the
    caller computed it, else it is computed here. ``progress`` is told of each file as it is
    written (stage ``"writing"``).
    """
    from planner.outputs.report import write_report  # imported here: WeasyPrint is slow to import
    from planner.outputs.workbook import write_workbook

    destination = Path(destination)
    if not number:
        check_destination(destination, force=force)
    derived = derived or outlook(catalog, results.table, bands)
    try:
        destination.parent.mkdir(parents=True, exist_ok=True)
        recover_stale(destination.parent)
        prefix = f".{destination.name}{STAGING}{os.getpid()}-"
        staging = Path(tempfile.mkdtemp(prefix=prefix, dir=destination.parent))
    except OSError as exc:
        raise RunNotWritten.from_os_error(exc) from None
    cleanup.register(staging)
    steps: list[tuple[str, Writer]] = [
        (RESULTS_CSV, lambda path: write_csv(results.table, path)),
        (CATALOG_COPY, lambda path: copy_catalogs(catalog, path)),
        (RESULTS_JSON, lambda path: write_json(results_json(results), path)),
        (FLEET_JSON, lambda path: write_json(fleet_json(derived), path)),
        (DEPLOY, lambda path: write_deploy(catalog, derived.plan.lines, path)),
        (
            WORKBOOK,
            lambda path: write_workbook(
                results,
                path,
                measured=derived.measured,
                schedules=derived.schedules,
                sensitivity=derived.tornado,
                growth=derived.growth,
                uncertainty=derived.bands,
                ranks=derived.order,
                fleet=derived.fleet,
                fleet_months=derived.fleet_months,
            ),
        ),
        *(extra_writers or {}).items(),
    ]
    # the PDF is WeasyPrint's for seconds of one core: a forked child writes it meanwhile
    report = Background(
        lambda path: write_report(
            catalog,
            results,
            path,
            baseline=baseline,
            derived=derived,
            paper=catalog.assumptions.paper,
        ),
        staging / REPORT,
    )
    try:
        report.start()
        for done, (file_name, writer) in enumerate(steps):
            if progress is not None:
                progress(f"writing {file_name}", done, len(steps) + 1)
            writer(staging / file_name)
        if progress is not None:
            progress(f"writing {REPORT}", len(steps), len(steps) + 1)
        report.wait()
        extra = tuple(name for name in extra_writers or {} if name != RESULTS_CSV)  # listed
        info = manifest(catalog, results, name, extra)
        if derived.bands:
            info["draws"] = derived.bands.draws
        if results.notes:
            info["notes"] = list(results.notes)
        info["output_files"] = output_hashes(staging)
        info["contents"] = listed_contents(staging)
        (staging / MANIFEST).write_text(json.dumps(info, indent=2) + "\n")
        os.chmod(staging, 0o755)
        if number:
            destination = _publish_numbered(staging, destination)
        elif force and (destination.exists() or destination.is_symlink()):
            _replace(staging, destination)
        else:
            _publish(staging, destination)
    except OSError as exc:
        report.stop()
        shutil.rmtree(staging, ignore_errors=True)
        raise RunNotWritten.from_os_error(exc) from None
    except BaseException:
        report.stop()
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        cleanup.release(staging)
    return destination
