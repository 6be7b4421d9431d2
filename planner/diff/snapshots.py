"""Runs as a diff reads them: a run folder on disk (:func:`load_run`, refused with
:class:`NotARun` when it is not one) or a run not yet written (:func:`snapshot`).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from planner import __version__
from planner.catalog import Catalog, CatalogError, load_catalog
from planner.catalog.safefile import FileProblem, read_regular, read_text
from planner.diff.values import is_missing
from planner.model.cost import BUY
from planner.model.metric import metrics
from planner.outputs.runs import CATALOG_COPY, MANIFEST, RESULTS_CSV, csv_text
from planner.plan.lookups import LOOKUPS
from planner.plan.tables import ALL_KEYS, KEYS, TP_KEY


class NotARun(Exception):
    """A folder given as a run is not a run folder (or not one this planner can read)."""


@dataclass(frozen=True)
class RunSnapshot:
    """What a diff needs of one run: its results table, catalogs and manifest facts.

    ``catalog`` is None when the run keeps no ``catalogs/`` copy (or the copy no longer loads);
    ``catalog_note`` then says why, and only the files' SHA-256 (``files``) can be compared.
    ``results_note`` says when ``results.csv`` no longer matches the SHA-256 its manifest
    recorded (its figures were edited after the run). ``streamed``: the run was a streamed
    sweep, whose plan simulated only the leading options of each workload × model.
    """

    label: str
    table: pd.DataFrame
    catalog: Catalog | None
    files: dict[str, str]
    planner_version: str | None = None
    created: str | None = None
    catalog_note: str = ""
    results_note: str = ""
    streamed: bool = False


#: Boolean columns a diff reads.
BOOLEANS = frozenset({"fits", "eligible", "replica_fits", "meets_targets"})


def _normalise(table: pd.DataFrame) -> pd.DataFrame:
    """Booleans as bool (a CSV may hold ``True``/``False`` text), TP sizes as int, and for runs
    written before renting was compared, the cost the ranking reads (``cost_usd``): their
    ``tco_usd``, the cost they were ranked on, and so ``acquisition`` ``buy`` where it is known."""
    out = table.copy()
    for column in BOOLEANS:
        if column in out and out[column].dtype != bool:
            out[column] = [
                bool(v) if isinstance(v, bool) else TRUTH.get(str(v).strip().lower(), False)
                for v in out[column]
            ]
    if "tensor_parallel" in out:
        out["tensor_parallel"] = out["tensor_parallel"].astype(int)
    if "cost_usd" not in out and "tco_usd" in out:  # a run ranked on owning alone
        out["cost_usd"] = out["tco_usd"]
        if "acquisition" not in out:
            out["acquisition"] = out["tco_usd"].map(lambda v: None if is_missing(v) else BUY)
    return out


#: What a results cell reads as missing, outside the key columns.
MISSING = ["", "nan", "NaN", "<NA>"]


def read_results(source: bytes | str) -> pd.DataFrame:
    """A ``results.csv`` as planner wrote it, with the key columns read as text: ids ``1`` and
    ``1.0`` stay distinct and an id is never read as a missing value, whatever it spells."""
    buffer = io.BytesIO(source) if isinstance(source, bytes) else io.BytesIO(source.encode())
    header = pd.read_csv(buffer, nrows=0, encoding="utf-8").columns
    buffer.seek(0)
    return pd.read_csv(
        buffer,
        encoding="utf-8",
        low_memory=False,  # one type per column, read whole
        dtype={k: str for k in KEYS if k in header},
        keep_default_na=False,
        na_values={c: MISSING for c in header if c not in KEYS},
    )


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
    info = _manifest(folder / MANIFEST)
    path = folder / RESULTS_CSV
    try:
        raw = read_regular(path)
        table = read_results(raw)
        recorded = info.get("output_files", {}).get(RESULTS_CSV)
    except FileProblem as exc:
        raise NotARun(f"{path} {exc}") from None
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise NotARun(f"{path} cannot be read as CSV: {exc}") from None
    absent = [k for k in ALL_KEYS if k not in table.columns]
    if absent:
        raise NotARun(
            f"{path} lacks the key column(s) {', '.join(absent)}; expected {', '.join(ALL_KEYS)}"
        )
    _check_columns(path, table)
    catalog: Catalog | None = None
    files: dict[str, str] = info.get("catalog_files", {})
    copy = folder / CATALOG_COPY
    note = _altered(copy, files)  # an altered copy is not compared field by field
    if not note and not copy.is_dir():
        note = f"{folder} keeps no {CATALOG_COPY}/ copy of its catalog files"
    elif not note:
        try:
            catalog = load_catalog(copy)
        except CatalogError as exc:
            first = exc.problems[0] if exc.problems else "unknown problem"
            note = f"{copy} no longer loads ({first})"
    altered = recorded is not None and hashlib.sha256(raw).hexdigest() != recorded
    return RunSnapshot(
        label=str(folder),
        table=_normalise(table),
        catalog=catalog,
        files=files,
        planner_version=info.get("planner_version"),
        created=info.get("created_utc"),
        catalog_note=note,
        streamed="results.parquet" in info.get("files", []),
        results_note=(
            f"altered: {path} no longer matches the SHA-256 recorded in {MANIFEST} when the run "
            "was written; its figures were edited afterwards and are compared as they now are"
            if altered
            else ""
        ),
    )


#: What a run's manifest must hold, where it holds it: the key and the JSON type.
MANIFEST_FIELDS = {
    "planner_version": str,
    "created_utc": str,
    "catalog_files": dict,
    "output_files": dict,
}

SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _manifest(path: Path) -> dict[str, Any]:
    """A run's manifest, checked field by field (:data:`MANIFEST_FIELDS`)."""
    try:
        info = json.loads(read_text(path))
    except FileProblem as exc:
        raise NotARun(f"{path} {exc}") from None
    except json.JSONDecodeError as exc:
        raise NotARun(f"{path} cannot be read as JSON: {exc}") from None
    if not isinstance(info, dict):
        raise NotARun(f"{path} is not a run manifest (expected a JSON object)")
    for key, kind in MANIFEST_FIELDS.items():
        if key in info and not isinstance(info[key], kind):
            raise NotARun(
                f"{path}: field {key!r} should be a JSON {'object' if kind is dict else 'string'}"
                f", got {type(info[key]).__name__}"
            )
    for field in ("catalog_files", "output_files"):
        for name, digest in info.get(field, {}).items():
            if not isinstance(digest, str) or not SHA256.match(digest):
                raise NotARun(
                    f"{path}: field {field!r} entry {name!r} should be a SHA-256 "
                    f"(64 hexadecimal digits), got {str(digest)[:80]!r}"
                )
    return info


def _altered(copy: Path, files: dict[str, str]) -> str:
    """Why a run's catalog copy no longer matches its manifest ('' when it does or is absent)."""
    changed = []
    for name, digest in files.items():
        path = copy / name
        if "/" in name or name.startswith(".") or not path.is_file():
            continue
        try:
            if hashlib.sha256(read_regular(path)).hexdigest() != digest:
                changed.append(name)
        except FileProblem:
            changed.append(name)
    if not changed:
        return ""
    return (
        f"altered: {copy}/{', '.join(changed)} no longer match the SHA-256 recorded in "
        f"{MANIFEST} when the run was written"
    )


def _numeric_columns() -> set[str]:
    numeric = {m.name for m in metrics().values() if m.kind in ("number", "integer")}
    numeric |= {lk.name for lk in LOOKUPS if lk.kind == "number"}
    return numeric - {TP_KEY}  # checked apart, as a whole number


TRUTH = {"true": True, "false": False, "1": True, "0": False}


def _check_columns(path: Path, table: pd.DataFrame) -> None:
    """Refuse a results table whose cells are not of their column's type: keys filled in, the
    tensor parallel size a whole number, numbers numeric, booleans true or false."""
    for key in KEYS:
        empty = table[key].isna() | (table[key].astype(str).str.strip() == "")
        if empty.any():
            raise NotARun(f"{path}: row {int(empty.argmax()) + 2}, column {key!r} is empty")
    for column in _numeric_columns() & set(table.columns):
        values = table[column]
        if values.dtype.kind in "iuf":
            continue
        numbers = pd.to_numeric(values, errors="coerce")
        bad = numbers.isna() & values.notna()
        if bad.any():
            row = int(bad.argmax())
            raise NotARun(
                f"{path}: row {row + 2}, column {column!r}: expected a number, got "
                f"{str(values.iloc[row])[:80]!r}"
            )
    parallel = pd.to_numeric(table[TP_KEY], errors="coerce")
    whole = parallel.notna() & (parallel >= 1) & (parallel == parallel.round())
    if not whole.all():
        row = int((~whole).argmax())
        raise NotARun(
            f"{path}: row {row + 2}, column {TP_KEY!r}: expected a whole number of devices, got "
            f"{str(table[TP_KEY].iloc[row])[:80]!r}"
        )
    for column in BOOLEANS & set(table.columns):
        values = table[column]
        if values.dtype == bool:
            continue
        known = values.map(lambda v: str(v).strip().lower() in TRUTH or isinstance(v, bool))
        if not known.all():
            row = int((~known).argmax())
            raise NotARun(
                f"{path}: row {row + 2}, column {column!r}: expected true or false, got "
                f"{str(values.iloc[row])[:80]!r}"
            )


def snapshot(catalog: Catalog, table: pd.DataFrame, label: str = "this run") -> RunSnapshot:
    """A run not yet written (``planner run --baseline``), read as its ``results.csv`` will be.

    The table makes the same CSV round trip as :func:`planner.outputs.runs.write_run`'s, so
    comparing a run before it is written and after gives the same diff.
    """
    return RunSnapshot(
        label=label,
        table=_normalise(read_results(csv_text(table))),
        catalog=catalog,
        files=dict(catalog.files),
        planner_version=__version__,
        created=None,
    )
