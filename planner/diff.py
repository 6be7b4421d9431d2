"""What changed between two runs: the catalogs that went in and the plan that came out.

A run folder (:mod:`planner.outputs.runs`) holds ``results.csv``, ``manifest.json`` and, from the
runs that keep one, ``catalogs/``: a verbatim copy of the catalog files it was made from. Comparing
two runs reports

- **inputs**: catalog entries added, removed and changed, field by field (``price.purchase_usd``,
  ``memory_bandwidth``), from the validated records of both ``catalogs/`` copies; where a run has
  no copy, only which catalog files changed, from the SHA-256 in the manifests;
- **outputs**: the recommendation of each workload × model (:func:`planner.plan.recommend
  .recommendations`), candidates that newly fit or stop fitting (``fits``), become eligible or
  stop being eligible (``eligible``), the cost of candidates present in both runs (``tco_usd``,
  ``devices_needed``), and candidates added or removed.

The diff computes no metric: it reads both runs' results as written and compares them. Every
change is one :class:`Change` with a ``kind`` from :data:`KINDS`, a ``key`` naming what changed
and, where it applies, a ``field`` with the old and new values in base units (bytes, B/s, FLOP/s,
W, s, USD). Keys are ids joined by ``/`` (ids never contain one):

- ``hardware/h100-sxm-80gb``: a catalog entry (``hardware``, ``model``, ``precision``,
  ``workload``, ``scenario``); ``assumptions``; ``file/NAME`` for a catalog file compared by its
  SHA-256 (a workload's CSV, or every file when a run keeps no ``catalogs/`` copy);
- ``chat/llama-3.1-8b``: a recommendation, ``workload/model``;
- ``h100-sxm-80gb/llama-3.1-8b/fp8/chat/1``: a candidate,
  ``hardware/model/precision/workload/tensor_parallel``.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pandas as pd

from planner import __version__
from planner.catalog import Catalog, CatalogError, load_catalog
from planner.model.units import GB, TB
from planner.outputs.formatting import duration, memory
from planner.outputs.runs import CATALOG_COPY, MANIFEST, RESULTS_CSV, export_table
from planner.plan.recommend import recommendations
from planner.plan.tables import ALL_KEYS

#: Every ``kind`` of change, in the order the text and the CSV list them.
KINDS: dict[str, str] = {
    "input_added": "catalog entry (or file) added",
    "input_removed": "catalog entry (or file) removed",
    "input_changed": "a field of a catalog entry (or a file's SHA-256) changed",
    "recommendation_added": "a workload × model only the new run plans",
    "recommendation_removed": "a workload × model only the old run plans",
    "recommendation_changed": "a field of the recommended option changed",
    "newly_fits": "a candidate that did not fit now fits (fits: False → True)",
    "stops_fitting": "a candidate that fit no longer fits (fits: True → False)",
    "newly_eligible": "a candidate may now be recommended (eligible: False → True)",
    "stops_eligible": "a candidate may no longer be recommended (eligible: True → False)",
    "cost_changed": "tco_usd or devices_needed of a candidate present in both runs changed",
    "candidate_added": "a candidate only the new run evaluates",
    "candidate_removed": "a candidate only the old run evaluates",
}

#: Catalog sections compared entry by entry: Catalog attribute → singular name used in keys.
SECTIONS: dict[str, str] = {
    "hardware": "hardware",
    "models": "model",
    "precisions": "precision",
    "workloads": "workload",
    "scenarios": "scenario",
}

#: Base unit of catalog fields, by the last part of the field path (values are in base units).
FIELD_UNITS: dict[str, str] = {
    "memory": "B",
    "usable_memory": "B",
    "runtime_overhead": "B",
    "reserve": "B",
    "state_per_sequence": "B",
    "memory_bandwidth": "B/s",
    "interconnect_bandwidth": "B/s",
    "power": "W",
    "step_overhead": "s",
    "tool_time": "s",
    "preprocess_time": "s",
    "network_time": "s",
    "rate": "1/s",
    "purchase_usd": "USD",
    "node_overhead_usd": "USD",
    "cloud_usd_per_hour": "USD/h",
    "electricity_usd_per_kwh": "USD/kWh",
    "hosting_usd_per_node_month": "USD/month",
}

#: Base unit of fields under a nested block, by the first part of the path.
BLOCK_UNITS: dict[str, str] = {"compute": "FLOP/s", "targets": "s"}

#: The recommended option's fields compared between runs.
WINNER_FIELDS = ("hardware", "precision", "tensor_parallel", "devices_needed", "tco_usd")

#: Relative tolerance below which two numbers count as equal (CSV round trips are exact; this
#: only absorbs float noise, never a real change).
REL_TOL = 1e-9


class NotARun(Exception):
    """A folder given as a run is not a run folder (or not one this planner can read)."""


# Values: equality and formatting ------------------------------------------------------------------


def _missing(value: Any) -> bool:
    if value is None or value is pd.NA:
        return True
    return isinstance(value, float) and math.isnan(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or _missing(value):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _plain(value: Any) -> Any:
    """A numpy/pandas scalar as a Python value; missing as None."""
    if _missing(value):
        return None
    if hasattr(value, "item") and not isinstance(value, (list, dict, str)):
        return value.item()
    return value


def same(old: Any, new: Any) -> bool:
    """Whether two values are equal: missing equals missing, numbers within :data:`REL_TOL`."""
    if _missing(old) or _missing(new):
        return _missing(old) and _missing(new)
    a, b = _number(old), _number(new)
    if a is not None and b is not None and not isinstance(old, str):
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=0.0)
    return bool(old == new)


def delta(old: Any, new: Any) -> float | None:
    """``new - old`` when both are numbers, else None."""
    a, b = _number(old), _number(new)
    return None if a is None or b is None or isinstance(old, str) else b - a


def _sig(value: float) -> str:
    return f"{value:,.4g}" if abs(value) < 1e15 else f"{value:.4g}"


def format_value(value: Any, unit: str = "") -> str:
    """A value for people, in the unit people read: GB with GiB, TB/s, TFLOPS, ms, USD."""
    if _missing(value):
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {format_value(v)}" for k, v in value.items()) + "}"
    number = _number(value)
    if number is None or isinstance(value, str):
        return str(value)
    if unit == "B":
        return memory(number)
    if unit == "B/s":
        return f"{_sig(number / TB)} TB/s" if abs(number) >= TB else f"{_sig(number / GB)} GB/s"
    if unit == "FLOP/s":
        return f"{_sig(number / 1e12)} TFLOPS"
    if unit == "s":
        return duration(number)
    if unit == "1/s":
        return f"{_sig(number)} /s"
    if unit.startswith("USD"):
        rest = unit[3:]
        money = f"{number:,.0f}" if abs(number) >= 1000 else f"{number:,.2f}"
        return f"{money} USD{rest}"
    if unit == "devices":
        return f"{number:,.0f}"
    if float(number).is_integer() and abs(number) < 2**53:
        return f"{int(number):,}"
    return f"{number:,.6g}"


def format_delta(old: Any, new: Any, unit: str = "") -> str:
    """The signed difference, with the percentage of ``old`` where it is not zero (``-50.0%``);
    empty unless both are numbers."""
    d = delta(old, new)
    if d is None:
        return ""
    text = ("+" if d >= 0 else "") + format_value(d, unit)
    base = _number(old)
    if not base:
        return text
    percent = d / abs(base) * 100
    share = f"{percent:+.1f}%" if abs(percent) >= 0.1 or percent == 0 else f"{percent:+.1g}%"
    return f"{text}, {share}"


def format_change(old: Any, new: Any, unit: str = "") -> str:
    """``old → new``, with the difference in brackets where both are numbers."""
    text = f"{format_value(old, unit)} → {format_value(new, unit)}"
    extra = format_delta(old, new, unit)
    return f"{text} ({extra})" if extra else text


# Changes ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One difference between two runs (one row of ``diff.csv``).

    ``old`` and ``new`` are in base units (``unit``); None means absent or not set. ``note`` adds
    context people need: a new entry's name, why a candidate stopped fitting.
    """

    kind: str
    key: str
    field: str = ""
    old: Any = None
    new: Any = None
    unit: str = ""
    note: str = ""

    @property
    def delta(self) -> float | None:
        return delta(self.old, self.new)

    def row(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "key": self.key,
            "field": self.field,
            "old": self.old,
            "new": self.new,
            "delta": self.delta,
            "unit": self.unit,
            "note": self.note,
        }


@dataclass(frozen=True)
class RecommendationChange:
    """The recommended option of one workload × model in each run.

    ``old``/``new`` hold :data:`WINNER_FIELDS` (None where no option is eligible); ``*_why``
    says why none is, and ``*_present`` whether the run plans that workload × model at all.
    """

    workload: str
    model: str
    old: dict[str, Any] | None
    new: dict[str, Any] | None
    old_present: bool = True
    new_present: bool = True
    old_why: str = ""
    new_why: str = ""

    @property
    def key(self) -> str:
        return f"{self.workload}/{self.model}"

    @property
    def winner_changed(self) -> bool:
        """Whether a different option wins (not only its cost)."""
        pick = ("hardware", "precision", "tensor_parallel")
        if self.old is None or self.new is None:
            return (self.old is None) != (self.new is None)
        return any(not same(self.old[k], self.new[k]) for k in pick)

    def describe(self, side: str) -> str:
        """The option of one side (``old`` or ``new``) for people: ``1 × beta (TP 1) · bf16,
        TCO 16,314 USD``, or why there is none."""
        present = self.old_present if side == "old" else self.new_present
        pick = self.old if side == "old" else self.new
        why = self.old_why if side == "old" else self.new_why
        if not present:
            return "not planned in this run"
        if pick is None:
            return f"no eligible option ({why})" if why else "no eligible option"
        devices = _number(pick["devices_needed"])
        count = f"{devices:,.0f}" if devices is not None else "?"
        return (
            f"{count} × {pick['hardware']} (TP {int(pick['tensor_parallel'])}) · "
            f"{pick['precision']}, TCO {format_value(pick['tco_usd'], 'USD')}"
        )

    def changes(self) -> list[Change]:
        if not self.old_present:
            return [Change("recommendation_added", self.key, "", None, self.describe("new"))]
        if not self.new_present:
            return [Change("recommendation_removed", self.key, "", self.describe("old"), None)]
        units = {"tco_usd": "USD", "devices_needed": "devices"}
        rows = []
        for name in WINNER_FIELDS:
            old = self.old[name] if self.old else None
            new = self.new[name] if self.new else None
            if not same(old, new):
                note = self.new_why if self.new is None else ""
                rows.append(
                    Change(
                        "recommendation_changed",
                        self.key,
                        name,
                        old,
                        new,
                        units.get(name, ""),
                        note,
                    )
                )
        return rows


# Runs ---------------------------------------------------------------------------------------------


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
    """Booleans as bool (a CSV may hold ``True``/``False`` text) and TP sizes as int."""
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


# Inputs -------------------------------------------------------------------------------------------


def field_unit(path: str) -> str:
    """The base unit of a catalog field from its dotted path (``compute.bf16`` → FLOP/s)."""
    parts = path.split(".")
    if len(parts) > 1 and parts[0] in BLOCK_UNITS:
        return BLOCK_UNITS[parts[0]]
    return FIELD_UNITS.get(parts[-1], "")


def field_changes(old: Any, new: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """``(dotted path, old, new)`` for every leaf that differs between two record dumps.

    Nested mappings are compared key by key (a key on one side only reads as None on the other);
    anything else, lists included, is compared whole.
    """
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in [*old, *(k for k in new if k not in old)]:
            sub = f"{path}.{key}" if path else str(key)
            out.extend(field_changes(old.get(key), new.get(key), sub))
        return out
    if isinstance(old, (list, tuple)) and isinstance(new, (list, tuple)):
        equal = len(old) == len(new) and all(same(a, b) for a, b in zip(old, new, strict=True))
        return [] if equal else [(path, old, new)]
    return [] if same(old, new) else [(path, old, new)]


def _entries(catalog: Catalog, section: str) -> dict[str, Any]:
    return {entry.id: entry for entry in getattr(catalog, section)}


def catalog_changes(old: Catalog, new: Catalog) -> list[Change]:
    """Entries added, removed and changed (one :class:`Change` per changed field)."""
    changes: list[Change] = []
    for section, singular in SECTIONS.items():
        before, after = _entries(old, section), _entries(new, section)
        for entry_id, entry in after.items():
            key = f"{singular}/{entry_id}"
            if entry_id not in before:
                changes.append(Change("input_added", key, "", None, entry.label))
                continue
            old_dump = before[entry_id].model_dump()
            for path, a, b in field_changes(old_dump, entry.model_dump()):
                changes.append(Change("input_changed", key, path, a, b, field_unit(path)))
        for entry_id, entry in before.items():
            if entry_id not in after:
                changes.append(
                    Change("input_removed", f"{singular}/{entry_id}", "", entry.label, None)
                )
    dumps = old.assumptions.model_dump(), new.assumptions.model_dump()
    for path, a, b in field_changes(*dumps):
        changes.append(Change("input_changed", "assumptions", path, a, b, field_unit(path)))
    return changes


def file_changes(old: dict[str, str], new: dict[str, str]) -> list[Change]:
    """Catalog files added, removed or changed, by their SHA-256 (from the manifests)."""
    changes = []
    for name in sorted(set(old) | set(new)):
        key = f"file/{name}"
        if name not in old:
            changes.append(Change("input_added", key, "sha256", None, new[name]))
        elif name not in new:
            changes.append(Change("input_removed", key, "sha256", old[name], None))
        elif old[name] != new[name]:
            changes.append(Change("input_changed", key, "sha256", old[name], new[name]))
    return changes


def _data_hashes(catalog: Catalog) -> dict[str, str]:
    hashes = {}
    for relative in catalog.data_files:
        try:
            hashes[relative] = hashlib.sha256((catalog.folder / relative).read_bytes()).hexdigest()
        except OSError:
            hashes[relative] = "unreadable"
    return hashes


def data_file_changes(old: Catalog, new: Catalog) -> list[Change]:
    """The CSV files workloads read (lengths, arrival traces), by SHA-256; rows are not diffed."""
    return file_changes(_data_hashes(old), _data_hashes(new))


# Outputs ------------------------------------------------------------------------------------------


def _winners(table: pd.DataFrame) -> dict[tuple[str, str], tuple[dict[str, Any] | None, str]]:
    if table.empty:
        return {}
    picks = recommendations(table)
    out: dict[tuple[str, str], tuple[dict[str, Any] | None, str]] = {}
    for _, row in picks.iterrows():
        winner = None
        if not _missing(row["hardware"]):
            winner = {k: _plain(row[k]) for k in WINNER_FIELDS}
        why = row.get("why_none", "")
        out[(row["workload"], row["model"])] = (winner, "" if _missing(why) else str(why))
    return out


def recommendation_changes(old: pd.DataFrame, new: pd.DataFrame) -> list[RecommendationChange]:
    """Each workload × model whose recommended option (or its cost) differs between runs: those
    with another option first, then those whose option only costs differently."""
    before, after = _winners(old), _winners(new)
    changes = []
    for group in [*after, *(g for g in before if g not in after)]:
        old_pick, old_why = before.get(group, (None, ""))
        new_pick, new_why = after.get(group, (None, ""))
        change = RecommendationChange(
            group[0],
            group[1],
            old_pick,
            new_pick,
            old_present=group in before,
            new_present=group in after,
            old_why=old_why,
            new_why=new_why,
        )
        if change.changes():
            changes.append(change)
    return sorted(changes, key=lambda c: not c.winner_changed)


#: The results columns compared candidate by candidate (and those that explain a change).
COMPARED = ("fits", "eligible", "tco_usd", "devices_needed", "status", "fit_reason")


def candidate_keys(table: pd.DataFrame) -> list[str]:
    """``hardware/model/precision/workload/tensor_parallel`` for every row."""
    return ["/".join(map(str, row)) for row in table[ALL_KEYS].itertuples(index=False)]


def candidate_label(key: str) -> str:
    """A candidate key for people: ``chat × llama-3.1-8b: h100-sxm-80gb (TP 1) · fp8``."""
    hardware, model, precision, workload, tp = key.split("/")
    return f"{workload} × {model}: {hardware} (TP {tp}) · {precision}"


def _records(table: pd.DataFrame) -> dict[str, dict[str, Any]]:
    columns = [c for c in COMPARED if c in table.columns]
    # The results columns are named by strings, so each record is keyed by them.
    records = cast("list[dict[str, Any]]", table[columns].to_dict(orient="records"))
    return dict(zip(candidate_keys(table), records, strict=True))


def _status(row: dict[str, Any]) -> str:
    """Why a candidate can or cannot be recommended (``eligible``, ``memory: ...``)."""
    for column in ("status", "fit_reason"):
        if not _missing(row.get(column)):
            return str(row[column])
    return ""


def _why(row: dict[str, Any]) -> str:
    """Why a candidate is not eligible; empty when it is."""
    status = _status(row)
    return "" if status == "eligible" else status


def candidate_changes(old: pd.DataFrame, new: pd.DataFrame) -> list[Change]:
    """Candidates added or removed; for those in both, fit, eligibility and cost changes."""
    before, after = _records(old), _records(new)
    changes: list[Change] = []
    flips = (
        ("fits", "newly_fits", "stops_fitting", "fit_reason"),
        ("eligible", "newly_eligible", "stops_eligible", "status"),
    )
    costs = (("tco_usd", "USD"), ("devices_needed", "devices"))
    for key, row in after.items():
        prior = before.get(key)
        if prior is None:
            changes.append(Change("candidate_added", key, note=_status(row)))
            continue
        for column, up, down, reason in flips:
            if column in row and column in prior and bool(prior[column]) != bool(row[column]):
                now = bool(row[column])
                note = "" if now or _missing(row.get(reason)) else str(row[reason])
                changes.append(Change(up if now else down, key, column, not now, now, note=note))
        for column, unit in costs:
            if column in row and column in prior and not same(prior[column], row[column]):
                old_value, new_value = _plain(prior[column]), _plain(row[column])
                note = ""
                if new_value is None:
                    note = _why(row)
                elif old_value is None:
                    note = f"before: {_why(prior)}"
                changes.append(
                    Change("cost_changed", key, column, old_value, new_value, unit, note)
                )
    for key, row in before.items():
        if key not in after:
            changes.append(Change("candidate_removed", key, note=_status(row)))
    return changes


# The diff -----------------------------------------------------------------------------------------


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _head(items: list[Any], limit: int | None) -> list[Any]:
    return items if limit is None else items[:limit]


def _more(total: int, limit: int | None, what: str) -> list[str]:
    if limit is None or total <= limit:
        return []
    return [f"  ... and {total - limit} more {what} (all are in diff.csv)"]


def _cost_delta(rec: RecommendationChange) -> str:
    old = rec.old["tco_usd"] if rec.old else None
    new = rec.new["tco_usd"] if rec.new else None
    if same(old, new) or delta(old, new) is None:
        return ""
    return f" ({format_delta(old, new, 'USD')})"


def _input_row(c: Change) -> dict[str, str]:
    return {
        "entry": c.key.replace("/", " ", 1),
        "change": {"input_added": "added", "input_removed": "removed"}.get(c.kind, "changed"),
        "field": c.field,
        "old": "" if c.kind == "input_added" else format_value(c.old, c.unit),
        "new": "" if c.kind == "input_removed" else format_value(c.new, c.unit),
        "delta": format_delta(c.old, c.new, c.unit),
    }


def _recommendation_row(rec: RecommendationChange) -> dict[str, str]:
    return {
        "workload": rec.workload,
        "model": rec.model,
        "change": "option" if rec.winner_changed else "cost only",
        "was": rec.describe("old"),
        "now": rec.describe("new"),
        "TCO change": _cost_delta(rec).strip(" ()"),
    }


@dataclass
class RunDiff:
    """Everything that changed between two runs, and how to show it.

    ``inputs`` and ``candidates`` are :class:`Change` rows; ``recommendations`` one
    :class:`RecommendationChange` per workload × model that differs; ``notes`` say what could not
    be compared and why (no ``catalogs/`` copy, another planner version).
    """

    old: str
    new: str
    old_version: str | None
    new_version: str | None
    inputs: list[Change] = field(default_factory=list)
    recommendations: list[RecommendationChange] = field(default_factory=list)
    candidates: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    plans_compared: int = 0
    field_level: bool = True

    @property
    def changed(self) -> bool:
        """Whether anything differs (notes alone are not changes)."""
        return bool(self.inputs or self.recommendations or self.candidates)

    def changes(self) -> list[Change]:
        """Every change, in :data:`KINDS` order (stable within a kind)."""
        rows = [*self.inputs]
        for rec in self.recommendations:
            rows.extend(rec.changes())
        rows.extend(self.candidates)
        order = {kind: i for i, kind in enumerate(KINDS)}
        return sorted(rows, key=lambda c: order[c.kind])

    def of_kind(self, *kinds: str) -> list[Change]:
        return [c for c in self.changes() if c.kind in kinds]

    def _cost_groups(self) -> list[tuple[str, dict[str, Change]]]:
        """Cost changes by candidate: largest TCO change first, then those costed in one run
        only (they also appear among the fit and eligibility changes)."""
        by_key: dict[str, dict[str, Change]] = {}
        for c in self.of_kind("cost_changed"):
            by_key.setdefault(c.key, {})[c.field] = c

        def order(item: tuple[str, dict[str, Change]]) -> tuple[bool, float]:
            tco = item[1].get("tco_usd")
            d = tco.delta if tco else 0.0
            return (d is None, -abs(d or 0.0))

        return sorted(by_key.items(), key=order)

    # terminal ----------------------------------------------------------------------------------

    def summary(self) -> str:
        """One line: how many inputs, recommendations and candidates changed."""
        if not self.changed:
            return "No changes: inputs and outputs are the same."
        entries = len({c.key for c in self.inputs})
        what = ("catalog entry", "catalog entries") if self.field_level else ("file", "files")
        winners = sum(r.winner_changed for r in self.recommendations)
        parts = [
            f"{entries} {what[entries != 1]} changed",
            f"{winners} of {self.plans_compared} recommendations changed option",
            f"{len(self.recommendations) - winners} changed cost only",
            f"{len(self.of_kind('newly_fits'))} candidates newly fit",
            f"{len(self.of_kind('stops_fitting'))} stop fitting",
            f"{len(self._cost_groups())} changed cost",
        ]
        return "; ".join(parts) + "."

    def to_text(self, limit: int | None = 20) -> str:
        """The diff for the terminal; each list shows at most ``limit`` rows (None: all)."""
        lines = ["Comparing runs", f"  old: {self.old}", f"  new: {self.new}", ""]
        if not self.changed:
            lines.append("No changes: inputs and outputs are the same.")
        else:
            lines.append(self.summary())
            lines += self._input_lines(limit)
            lines += self._recommendation_lines(limit)
            lines += self._candidate_lines(limit)
        if self.notes:
            lines += ["", "Notes:"] + [f"  - {n}" for n in self.notes]
        return "\n".join(lines) + "\n"

    def _input_lines(self, limit: int | None) -> list[str]:
        if not self.inputs:
            return ["", "Inputs: no catalog changes."]
        what = "Inputs (catalog entries, field by field):"
        if not self.field_level:
            what = "Inputs (catalog files by SHA-256; field-level diff unavailable):"
        lines = ["", what]
        by_key: dict[str, list[Change]] = {}
        for change in self.inputs:
            by_key.setdefault(change.key, []).append(change)
        for key, group in _head(list(by_key.items()), limit):
            name = key.replace("/", " ", 1)
            first = group[0]
            if first.kind == "input_added":
                label = f" ({first.new})" if not first.field and first.new else ""
                lines.append(f"  + {name} added{label}")
            elif first.kind == "input_removed":
                label = f" ({first.old})" if not first.field and first.old else ""
                lines.append(f"  - {name} removed{label}")
            else:
                lines.append(f"  ~ {name}")
                for c in group:
                    lines.append(f"      {c.field}: {format_change(c.old, c.new, c.unit)}")
        return lines + _more(len(by_key), limit, "entries")

    def _recommendation_lines(self, limit: int | None) -> list[str]:
        if not self.recommendations:
            return ["", f"Recommendations: none of {self.plans_compared} changed."]
        lines: list[str] = []
        moved = [r for r in self.recommendations if r.winner_changed]
        costed = [r for r in self.recommendations if not r.winner_changed]
        if moved:
            lines += ["", f"Recommendations that changed option ({len(moved)}):"]
            for rec in _head(moved, limit):
                lines.append(f"  {rec.workload} × {rec.model}:")
                lines.append(f"      was: {rec.describe('old')}")
                lines.append(f"      now: {rec.describe('new')}{_cost_delta(rec)}")
            lines += _more(len(moved), limit, "recommendations")
        if costed:
            lines += ["", f"Recommendations with the same option at a new cost ({len(costed)}):"]
            for rec in _head(costed, limit):
                lines.append(
                    f"  {rec.workload} × {rec.model}: {rec.describe('new')}{_cost_delta(rec)}"
                )
            lines += _more(len(costed), limit, "recommendations")
        return lines

    def _candidate_lines(self, limit: int | None) -> list[str]:
        lines: list[str] = []
        titles = {
            "newly_fits": "Candidates that newly fit",
            "stops_fitting": "Candidates that stop fitting",
            "newly_eligible": "Candidates newly eligible",
            "stops_eligible": "Candidates no longer eligible",
            "cost_changed": "",
            "candidate_added": "Candidates added",
            "candidate_removed": "Candidates removed",
        }
        marks = {"newly_fits": "+", "newly_eligible": "+", "candidate_added": "+"}
        for kind, title in titles.items():
            if kind == "cost_changed":
                lines += self._cost_lines(limit)
                continue
            rows = self.of_kind(kind)
            if not rows:
                continue
            lines += ["", f"{title} ({len(rows)}):"]
            for c in _head(rows, limit):
                note = f" ({c.note})" if c.note else ""
                lines.append(f"  {marks.get(kind, '-')} {candidate_label(c.key)}{note}")
            lines += _more(len(rows), limit, "candidates")
        return lines

    def _cost_lines(self, limit: int | None) -> list[str]:
        groups = self._cost_groups()
        if not groups:
            return []
        shown = "" if limit is None or len(groups) <= limit else f"; the {limit} largest shown"
        lines = ["", f"Cost changes ({_count(len(groups), 'candidate')}{shown}):"]
        for key, fields in _head(groups, limit):
            parts = []
            for name, label in (("tco_usd", "TCO"), ("devices_needed", "devices")):
                if name in fields:
                    c = fields[name]
                    parts.append(f"{label} {format_change(c.old, c.new, c.unit)}")
            notes = {c.note for c in fields.values() if c.note}
            why = f" ({'; '.join(sorted(notes))})" if notes else ""
            lines.append(f"  {candidate_label(key)}: {'; '.join(parts)}{why}")
        return lines + _more(len(groups), limit, "candidates")

    # files and report --------------------------------------------------------------------------

    def to_frame(self) -> pd.DataFrame:
        """One row per change (``diff.csv``): kind, key, field, old, new, delta, unit, note.

        Values are in base units (``unit``); an empty table (with these columns) means no change.
        """
        columns = ["kind", "key", "field", "old", "new", "delta", "unit", "note"]
        return pd.DataFrame([c.row() for c in self.changes()], columns=columns)

    def write_csv(self, path: str | Path) -> Path:
        """Write :meth:`to_frame` as CSV to ``path``."""
        path = Path(path)
        self.to_frame().to_csv(path, index=False)
        return path

    def sections(self, limit: int | None = None) -> list[tuple[str, list[dict[str, str]]]]:
        """Titled groups of rows for the report, every value formatted for people.

        Only groups with rows are returned: an empty list means no changes (notes, when there are
        any, come last as their own group). Cost changes come largest TCO change first. With
        ``limit``, a group keeps its first ``limit`` rows and its title says how many there are.
        """
        groups: list[tuple[str, list[dict[str, str]]]] = []
        title = "Catalog changes" if self.field_level else "Catalog files changed"
        groups.append((title, [_input_row(c) for c in self.inputs]))
        groups.append(
            ("Recommendation changes", [_recommendation_row(r) for r in self.recommendations])
        )
        flips = ("newly_fits", "stops_fitting", "newly_eligible", "stops_eligible")
        groups.append(
            (
                "Fit and eligibility changes",
                [
                    {
                        "candidate": candidate_label(c.key),
                        "change": c.kind.replace("_", " "),
                        "why": c.note,
                    }
                    for c in self.of_kind(*flips)
                ],
            )
        )
        groups.append(("Cost changes", self._cost_rows()))
        for kind, name in (
            ("candidate_added", "Candidates added"),
            ("candidate_removed", "Candidates removed"),
        ):
            rows = [
                {"candidate": candidate_label(c.key), "status": c.note} for c in self.of_kind(kind)
            ]
            groups.append((name, rows))
        out = []
        for name, rows in groups:
            if not rows:
                continue
            if limit is not None and len(rows) > limit:
                which = "largest" if name == "Cost changes" else "first"
                name = f"{name} ({which} {limit} of {len(rows)})"
                rows = rows[:limit]
            out.append((name, rows))
        if self.notes:
            out.append(("Notes", [{"note": n} for n in self.notes]))
        return out

    def _cost_rows(self) -> list[dict[str, str]]:
        rows = []
        for key, fields in self._cost_groups():
            tco = fields.get("tco_usd")
            devices = fields.get("devices_needed")
            notes = {c.note for c in fields.values() if c.note}
            rows.append(
                {
                    "candidate": candidate_label(key),
                    "TCO was": format_value(tco.old, "USD") if tco else "unchanged",
                    "TCO now": format_value(tco.new, "USD") if tco else "unchanged",
                    "TCO change": format_delta(tco.old, tco.new, "USD") if tco else "",
                    "devices": (
                        f"{format_value(devices.old, 'devices')} → "
                        f"{format_value(devices.new, 'devices')}"
                        if devices
                        else "unchanged"
                    ),
                    "why": "; ".join(sorted(notes)),
                }
            )
        return rows


def _run_line(snap: RunSnapshot) -> str:
    facts = [f"planner {snap.planner_version or '?'}"]
    if snap.created:
        facts.append(f"created {snap.created}")
    return f"{snap.label} ({', '.join(facts)})"


def compare(old: RunSnapshot, new: RunSnapshot) -> RunDiff:
    """The diff between two runs already read (:func:`load_run`, :func:`snapshot`)."""
    notes: list[str] = []
    if old.catalog is not None and new.catalog is not None:
        inputs = catalog_changes(old.catalog, new.catalog)
        inputs += data_file_changes(old.catalog, new.catalog)
        field_level = True
        changed_files = {c.key.split("/", 1)[1] for c in file_changes(old.files, new.files)}
        touched = {c.key.split("/", 1)[0] for c in inputs}
        singular = {f"{s}.yaml": n for s, n in SECTIONS.items()} | {
            "assumptions.yaml": "assumptions"
        }
        quiet = sorted(f for f in changed_files if singular.get(f) not in touched)
        if quiet:
            verb = "differs" if len(quiet) == 1 else "differ"
            notes.append(
                f"{', '.join(quiet)} {verb} in bytes but not in any field "
                "(comments, layout or the order of entries)"
            )
    else:
        inputs = file_changes(old.files, new.files)
        field_level = False
        why = "; ".join(n for n in (old.catalog_note, new.catalog_note) if n)
        notes.append(
            f"field-level catalog diff unavailable: {why}. Compared the catalog files' SHA-256 "
            "from the manifests instead."
        )
    if old.planner_version != new.planner_version:
        notes.append(
            f"the runs were made by different planner versions ({old.planner_version} → "
            f"{new.planner_version}): outputs may differ without any input change"
        )
    recs: list[RecommendationChange] = []
    plans = 0
    needed = {"eligible", "status", "tco_usd", "devices_needed"}
    lacking = sorted(needed - set(old.table.columns) | needed - set(new.table.columns))
    if lacking:
        notes.append(
            f"recommendations not compared: a run's results.csv lacks {', '.join(lacking)}"
        )
    else:
        try:
            recs = recommendation_changes(old.table, new.table)
        except KeyError as exc:
            notes.append(f"recommendations not compared: a run's results.csv lacks {exc}")
        groups = {tuple(g) for g in new.table[["workload", "model"]].drop_duplicates().to_numpy()}
        groups |= {tuple(g) for g in old.table[["workload", "model"]].drop_duplicates().to_numpy()}
        plans = len(groups)
    return RunDiff(
        old=_run_line(old),
        new=_run_line(new),
        old_version=old.planner_version,
        new_version=new.planner_version,
        inputs=inputs,
        recommendations=recs,
        candidates=candidate_changes(old.table, new.table),
        notes=notes,
        plans_compared=plans,
        field_level=field_level,
    )


def diff_runs(old: str | Path, new: str | Path) -> RunDiff:
    """What changed from run folder ``old`` to run folder ``new``.

    Raises :class:`NotARun` when either folder is not a run folder.
    """
    return compare(load_run(old), load_run(new))


def diff_against(
    old: str | Path, catalog: Catalog, table: pd.DataFrame, label: str = "this run"
) -> RunDiff:
    """What changed from run folder ``old`` to a run not yet written (``run --baseline OLD``).

    Raises :class:`NotARun` when ``old`` is not a run folder.
    """
    return compare(load_run(old), snapshot(catalog, table, label))
