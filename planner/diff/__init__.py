"""What changed between two runs: the catalogs that went in and the plan that came out.

A run folder (:mod:`planner.outputs.runs`) holds ``results.csv``, ``manifest.json`` and, from the
runs that keep one, ``catalogs/``: a verbatim copy of the catalog files it was made from. Comparing
two runs reports

- **inputs**: catalog entries added, removed and changed, field by field (``price.purchase_usd``,
  ``memory_bandwidth``), from the validated records of both ``catalogs/`` copies; where a run has
  no copy, only which catalog files changed, from the SHA-256 in the manifests;
- **outputs**: the recommendation of each workload × model
  (:func:`planner.plan.recommend.recommendations`), candidates that newly fit or stop fitting
  (``fits``), become eligible or stop being eligible (``eligible``), the cost of candidates
  present in both runs (``cost_usd``, the cost the ranking compares: owning or renting over the
  period, whichever is cheaper; ``devices_needed``), and candidates added or removed.

One module per part: :mod:`.snapshots` (reading runs), :mod:`.inputs` and :mod:`.outputs` (what
changed in each), :mod:`.changes` (the records of a change), :mod:`.values` (equality and text of
values); this module compares two runs (:func:`compare`) and words the result (:class:`RunDiff`).

The diff computes no metric: it reads both runs' results as written and compares them. Every
change is one :class:`Change` with a ``kind`` from :data:`KINDS`, a ``key`` naming what changed
and, where it applies, a ``field`` with the old and new values in base units (bytes, B/s, FLOP/s,
W, s, USD). Keys are ids joined by ``/`` (an id from an earlier run that holds a ``/`` has it
written ``%2F``, and a ``%`` ``%25``: :func:`planner.diff.changes.key_part`):

- ``hardware/h100-sxm-80gb``: a catalog entry (``hardware``, ``model``, ``precision``,
  ``workload``, ``scenario``); ``assumptions``; ``file/NAME`` for a catalog file compared by its
  SHA-256 (a workload's CSV, or every file when a run keeps no ``catalogs/`` copy);
- ``chat/llama-3.1-8b``: a recommendation, ``workload/model``;
- ``h100-sxm-80gb/llama-3.1-8b/fp8/chat/1``: a candidate,
  ``hardware/model/precision/workload/tensor_parallel``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from planner.catalog import Catalog
from planner.diff.changes import Change, RecommendationChange
from planner.diff.inputs import catalog_changes, data_file_changes, field_unit, file_changes
from planner.diff.outputs import candidate_changes, candidate_label, recommendation_changes
from planner.diff.snapshots import NotARun, RunSnapshot, load_run, snapshot
from planner.diff.values import (
    KINDS,
    SECTIONS,
    delta,
    format_change,
    format_delta,
    format_value,
    same,
)
from planner.outputs.runs import write_csv
from planner.plan.recommend import COST


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _head(items: list[Any], limit: int | None) -> list[Any]:
    return items if limit is None else items[:limit]


def _more(total: int, limit: int | None, what: str) -> list[str]:
    if limit is None or total <= limit:
        return []
    return [f"  ... and {total - limit} more {what} (all are in diff.csv)"]


def _cost_delta(rec: RecommendationChange) -> str:
    """The change of the cost the ranking compares, `` (-5,000 USD, -23.5%)``; empty when none."""
    old = rec.old[COST] if rec.old else None
    new = rec.new[COST] if rec.new else None
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
        "cost change": _cost_delta(rec).strip(" ()"),
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
        """Cost changes by candidate: largest change of the cost the ranking compares first,
        then those costed in one run only (they also appear among the fit and eligibility
        changes)."""
        by_key: dict[str, dict[str, Change]] = {}
        for c in self.of_kind("cost_changed"):
            by_key.setdefault(c.key, {})[c.field] = c

        def order(item: tuple[str, dict[str, Change]]) -> tuple[bool, float]:
            cost = item[1].get(COST)
            d = cost.delta if cost else 0.0
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
            for name, label in ((COST, "cost"), ("devices_needed", "devices")):
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
        """Write :meth:`to_frame` as CSV to ``path``, its text inert in a spreadsheet
        (:func:`planner.outputs.runs.write_csv`)."""
        return write_csv(self.to_frame(), Path(path))

    def sections(self, limit: int | None = None) -> list[tuple[str, list[dict[str, str]]]]:
        """Titled groups of rows for the report, every value formatted for people.

        Only groups with rows are returned: an empty list means no changes (notes, when there are
        any, come last as their own group). Cost changes (of the cost the ranking compares) come
        largest first. With ``limit``, a group keeps its first ``limit`` rows and its title says
        how many there are.
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
            cost = fields.get(COST)
            devices = fields.get("devices_needed")
            notes = {c.note for c in fields.values() if c.note}
            rows.append(
                {
                    "candidate": candidate_label(key),
                    "cost was": format_value(cost.old, "USD") if cost else "unchanged",
                    "cost now": format_value(cost.new, "USD") if cost else "unchanged",
                    "cost change": format_delta(cost.old, cost.new, "USD") if cost else "",
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
    inputs, field_level, notes = _input_changes(old, new)
    notes += _run_notes(old, new)
    recs, plans, rec_notes = _recommendations(old, new)
    return RunDiff(
        old=_run_line(old),
        new=_run_line(new),
        old_version=old.planner_version,
        new_version=new.planner_version,
        inputs=inputs,
        recommendations=recs,
        candidates=candidate_changes(old.table, new.table),
        notes=notes + rec_notes,
        plans_compared=plans,
        field_level=field_level,
    )


def _input_changes(old: RunSnapshot, new: RunSnapshot) -> tuple[list[Change], bool, list[str]]:
    """The catalog changes between two runs, whether they are field by field (both runs keep
    their catalogs) or by file digest, and the notes on them."""
    notes: list[str] = []
    if old.catalog is None or new.catalog is None:
        why = "; ".join(n for n in (old.catalog_note, new.catalog_note) if n)
        notes.append(
            f"field-level catalog diff unavailable: {why}. Compared the catalog files' SHA-256 "
            "from the manifests instead."
        )
        return file_changes(old.files, new.files), False, notes
    inputs = catalog_changes(old.catalog, new.catalog)
    inputs += data_file_changes(old.catalog, new.catalog)
    changed_files = {c.key.split("/", 1)[1] for c in file_changes(old.files, new.files)}
    touched = {c.key.split("/", 1)[0] for c in inputs}
    singular = {f"{s}.yaml": n for s, n in SECTIONS.items()} | {"assumptions.yaml": "assumptions"}
    quiet = sorted(f for f in changed_files if singular.get(f) not in touched)
    if quiet:
        verb = "differs" if len(quiet) == 1 else "differ"
        notes.append(
            f"{', '.join(quiet)} {verb} in bytes but not in any field "
            "(comments, layout or the order of entries)"
        )
    return inputs, True, notes


def _run_notes(old: RunSnapshot, new: RunSnapshot) -> list[str]:
    """Notes on how the runs were made: their results files, a streamed sweep, the versions."""
    notes = [n for n in (old.results_note, new.results_note) if n]
    if old.streamed != new.streamed:
        which = old if old.streamed else new
        notes.append(
            f"{which.label} is a streamed sweep: it simulated only the leading options of each "
            "workload × model and its results.csv may hold only those, so its recommendations "
            "and candidates can differ from a run of the same catalogs held whole"
        )
    if old.planner_version != new.planner_version:
        notes.append(
            f"the runs were made by different planner versions ({old.planner_version} → "
            f"{new.planner_version}): outputs may differ without any input change"
        )
    return notes


def _recommendations(
    old: RunSnapshot, new: RunSnapshot
) -> tuple[list[RecommendationChange], int, list[str]]:
    """The recommendations that changed, how many workload × model plans were compared, and
    why they were not compared where a run's results lack what they need."""
    needed = {"eligible", "status", COST, "devices_needed"}
    lacking = sorted(needed - set(old.table.columns) | needed - set(new.table.columns))
    if lacking:
        return (
            [],
            0,
            [f"recommendations not compared: a run's results.csv lacks {', '.join(lacking)}"],
        )
    recs: list[RecommendationChange] = []
    notes: list[str] = []
    try:
        recs = recommendation_changes(old.table, new.table)
    except KeyError as exc:
        notes.append(f"recommendations not compared: a run's results.csv lacks {exc}")
    groups = {tuple(g) for g in new.table[["workload", "model"]].drop_duplicates().to_numpy()}
    groups |= {tuple(g) for g in old.table[["workload", "model"]].drop_duplicates().to_numpy()}
    return recs, len(groups), notes


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


#: What the CLI, the pipeline, the report and the tests use.
__all__ = [
    "KINDS",
    "Change",
    "NotARun",
    "RecommendationChange",
    "RunDiff",
    "RunSnapshot",
    "candidate_changes",
    "catalog_changes",
    "compare",
    "data_file_changes",
    "diff_against",
    "diff_runs",
    "field_unit",
    "file_changes",
    "format_change",
    "format_delta",
    "format_value",
    "load_run",
    "recommendation_changes",
    "same",
    "snapshot",
]
