"""What a diff reports: one changed input or output (:class:`Change`), and a recommendation that
moved (:class:`RecommendationChange`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from planner.diff.values import (
    WINNER_FIELDS,
    as_number,
    delta,
    format_value,
    is_missing,
    same,
)
from planner.plan.labels import short_label
from planner.plan.recommend import COST


def key_part(value: Any) -> str:
    """An id as one part of a key: ``/`` (and ``%``, which marks the escape) percent-escaped, so
    an id from an earlier run that holds a ``/`` never splits a key or collides with another."""
    return str(value).replace("%", "%25").replace("/", "%2F")


def key_parts(key: str) -> list[str]:
    """The ids a key joins, escapes undone (the inverse of ``"/".join(map(key_part, ids))``)."""
    return [part.replace("%2F", "/").replace("%25", "%") for part in key.split("/")]


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

    ``old``/``new`` hold :data:`WINNER_FIELDS` and :data:`~planner.diff.values.WINNER_SHOWN`
    (None where no option is eligible); ``*_why`` says why none is, and ``*_present`` whether
    the run plans that workload × model at all.
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
        return f"{key_part(self.workload)}/{key_part(self.model)}"

    @property
    def winner_changed(self) -> bool:
        """Whether a different option wins (not only its cost)."""
        pick = ("hardware", "precision", "tensor_parallel")
        if self.old is None or self.new is None:
            return (self.old is None) != (self.new is None)
        return any(not same(self.old[k], self.new[k]) for k in pick)

    def describe(self, side: str) -> str:
        """The option of one side (``old`` or ``new``) for people, with how to get its devices and
        the cost the ranking compares: ``1 × beta (TP 1) · bf16 to buy, cost 16,314 USD``, or why
        there is none."""
        present = self.old_present if side == "old" else self.new_present
        pick = self.old if side == "old" else self.new
        why = self.old_why if side == "old" else self.new_why
        if not present:
            return "not planned in this run"
        if pick is None:
            return f"no eligible option ({why})" if why else "no eligible option"
        devices = as_number(pick["devices_needed"])
        option = {
            "hardware": pick["hardware"],
            "precision": pick["precision"],
            "tensor_parallel": pick["tensor_parallel"],
            "devices_needed": math.nan if devices is None else devices,
        }
        how = pick.get("acquisition")
        way = "" if is_missing(how) or not how else f" to {how}"
        return f"{short_label(option)}{way}, cost {format_value(pick[COST], 'USD')}"

    def changes(self) -> list[Change]:
        if not self.old_present:
            return [Change("recommendation_added", self.key, "", None, self.describe("new"))]
        if not self.new_present:
            return [Change("recommendation_removed", self.key, "", self.describe("old"), None)]
        units = {COST: "USD", "devices_needed": "devices"}
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
