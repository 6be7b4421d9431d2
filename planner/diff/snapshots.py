"""Runs as a diff reads them: a run folder on disk (:func:`load_run`, refused with
:class:`NotARun` when it is not one) or a run not yet written (:func:`snapshot`).
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from planner import __version__
from planner.catalog import Catalog, CatalogError, load_catalog
from planner.outputs.runs import CATALOG_COPY, MANIFEST, RESULTS_CSV, export_table
from planner.plan.tables import ALL_KEYS


class NotARun(Exception):
    """A folder given as a run is not a run folder (or not one this planner can read)."""


@dataclass(frozen=True)
class RunSnapshot:
    """What a diff needs of one run: its results table, catalogs and manifest facts.

    ``catalog`` is None when the run keeps no ``catalogs/`` copy (or the copy no longer loads);
    ``catalog_note`` then says why, and only the files' SHA-256 (``files``) can be compared.
    """

    label: str
    table: pd.DataFrame
    catalog: Catalog | None
    files: dict[str, str]
    planner_version: str | None = None
    created: str | None = None
    catalog_note: str = ""


def _normalise(table: pd.DataFrame) -> pd.DataFrame:
    """Booleans as bool (a CSV may hold ``True``/``False`` text), TP sizes as int, and the cost
    the ranking reads (``cost_usd``) for runs written before renting was compared: their
    ``tco_usd``, the cost they were ranked on."""
    out = table.copy()
    for column in ("fits", "eligible", "replica_fits", "meets_targets"):
        if column in out and out[column].dtype != bool:
            truth = {"true": True, "false": False, "1": True, "0": False}
            out[column] = [
                bool(v) if isinstance(v, bool) else truth.get(str(v).strip().lower(), False)
                for v in out[column]
            ]
    if "tensor_parallel" in out:
        out["tensor_parallel"] = out["tensor_parallel"].astype(int)
    if "cost_usd" not in out and "tco_usd" in out:  # a run ranked on owning alone
        out["cost_usd"] = out["tco_usd"]
    return out


def load_run(folder: str | Path) -> RunSnapshot:
    """Read a run folder for comparison.

    Raises :class:`NotARun` when ``folder`` is missing, is not a folder, or lacks
    ``results.csv`` or ``manifest.json`` (or they cannot be read).
    """
    folder = Path(folder)
    expected = f"a run folder holds {RESULTS_CSV} and {MANIFEST} (made by `planner run`)"
    if not folder.exists():
        raise NotARun(f"{folder} does not exist; {expected}")
    if not folder.is_dir():
        raise NotARun(f"{folder} is not a folder; {expected}")
    missing = [name for name in (RESULTS_CSV, MANIFEST) if not (folder / name).is_file()]
    if missing:
        raise NotARun(f"{folder} is not a run folder: no {' or '.join(missing)}; {expected}")
    try:
        info = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NotARun(f"{folder}/{MANIFEST} cannot be read as JSON: {exc}") from None
    if not isinstance(info, dict):
        raise NotARun(f"{folder}/{MANIFEST} is not a run manifest (expected a JSON object)")
    try:
        table = pd.read_csv(folder / RESULTS_CSV)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise NotARun(f"{folder}/{RESULTS_CSV} cannot be read as CSV: {exc}") from None
    absent = [k for k in ALL_KEYS if k not in table.columns]
    if absent:
        raise NotARun(
            f"{folder}/{RESULTS_CSV} lacks the key column(s) {', '.join(absent)}; "
            f"expected {', '.join(ALL_KEYS)}"
        )
    catalog: Catalog | None = None
    note = ""
    copy = folder / CATALOG_COPY
    if copy.is_dir():
        try:
            catalog = load_catalog(copy)
        except CatalogError as exc:
            first = exc.problems[0] if exc.problems else "unknown problem"
            note = f"{copy} no longer loads ({first})"
    else:
        note = f"{folder} keeps no {CATALOG_COPY}/ copy of its catalog files"
    files = info.get("catalog_files")
    return RunSnapshot(
        label=str(folder),
        table=_normalise(table),
        catalog=catalog,
        files=dict(files) if isinstance(files, dict) else {},
        planner_version=info.get("planner_version"),
        created=info.get("created_utc"),
        catalog_note=note,
    )


def snapshot(catalog: Catalog, table: pd.DataFrame, label: str = "this run") -> RunSnapshot:
    """A run not yet written (``planner run --baseline``), read as its ``results.csv`` will be.

    The table makes the same CSV round trip as :func:`planner.outputs.runs.write_run`'s, so
    comparing a run before it is written and after gives the same diff.
    """
    text = export_table(table).to_csv(index=False)
    return RunSnapshot(
        label=label,
        table=_normalise(pd.read_csv(io.StringIO(text))),
        catalog=catalog,
        files=dict(catalog.files),
        planner_version=__version__,
        created=None,
    )
