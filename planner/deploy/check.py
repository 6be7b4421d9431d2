"""Whether a measurement was taken with the plan's settings: ``planner measure check``.

Each entry of a ``measurements/index.yaml`` is held against the pools of a run's
``deploy/settings.json`` that run its model on its hardware (the workload's, where the entry
names one): every setting the entry states (precision, tensor-parallel size, engine and release
series, memory fraction, ``max_num_seqs``, ``max_num_batched_tokens``, ``max_model_len``,
chunked prefill, prefix caching, CUDA graphs) is compared with the plan's, and those it does not
state are listed as unconfirmed. A measurement that differs is not the plan's configuration: its
figures say what those other settings did, and comparing them with the plan's line as if they
were its own would mislead, so the check names each difference and the measurement is left out
of that comparison. (``planner run`` and ``planner calibrate`` still hold each measurement
against an estimate at its own settings, which is a fair comparison of the arithmetic.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from planner.catalog.engines import series_of
from planner.deploy.kit import MEMORY_KEYS
from planner.measure import MeasurementEntry

if TYPE_CHECKING:
    from planner.catalog import Catalog
    from planner.measure import Measurement
    from planner.plan.deployment import Line

__all__ = ["Difference", "Verdict", "apart", "check"]

#: Engine settings compared: the entry's engine field, the plan's settings key.
ENGINE_SETTINGS = {
    "max_num_seqs": "max_num_seqs",
    "max_num_batched_tokens": "max_num_batched_tokens",
    "max_model_len": "max_model_len",
    "chunked_prefill": "chunked_prefill",
    "prefix_caching": "prefix_caching",
    "cuda_graphs": "cuda_graphs",
}


@dataclass(frozen=True)
class Difference:
    """A setting the measurement was taken with that is not the plan's."""

    setting: str
    planned: Any
    measured: Any

    def text(self) -> str:
        return f"{self.setting} {self.measured} (planned {self.planned})"


@dataclass(frozen=True)
class Verdict:
    """What one measurement entry is to the plan: the pool it measures (None: no pool of the
    plan runs its model on its hardware), its differences and the settings it leaves unsaid."""

    measurement: str
    pool: str | None
    differences: tuple[Difference, ...] = ()
    unstated: tuple[str, ...] = field(default=())

    @property
    def matches(self) -> bool:
        return self.pool is not None and not self.differences

    def text(self) -> str:
        if self.pool is None:
            return (
                f"{self.measurement}: no line of the plan runs its model on its hardware; "
                "left out of the comparison with the plan"
            )
        if self.differences:
            said = "; ".join(d.text() for d in self.differences)
            return (
                f"{self.measurement}: not the plan's settings for {self.pool}: {said}; "
                "left out of the comparison with the plan"
            )
        text = f"{self.measurement}: the plan's settings for {self.pool}"
        if self.unstated:
            text += f" (not stated, so not confirmed: {', '.join(self.unstated)})"
        return text


def _compare(entry: MeasurementEntry, pool: Mapping[str, Any]) -> Verdict:
    differences, unstated = [], []
    for name, planned, measured in (
        ("precision", pool["precision"], entry.precision),
        ("tensor_parallel", pool["tensor_parallel"], entry.tensor_parallel),
    ):
        if planned != measured:
            differences.append(Difference(name, planned, measured))
    engine = entry.engine
    if engine is None:
        unstated = ["engine", "engine settings"]
        return Verdict(entry.id, pool["line"], tuple(differences), tuple(unstated))
    given = engine.model_fields_set
    if engine.name != pool["engine"]:
        differences.append(Difference("engine", pool["engine"], engine.name))
    elif series_of(engine.version) != series_of(pool["engine_version"]):
        differences.append(Difference("release", pool["engine_version"], engine.version))
    key = MEMORY_KEYS[pool["engine"]]
    if key in given:
        measured = getattr(engine, key)
        if measured is None or abs(float(measured) - float(pool["memory_fraction"])) > 5e-3:
            differences.append(Difference(key, pool["memory_fraction"], measured))
    else:
        unstated.append(key)
    for field_name, settings_key in ENGINE_SETTINGS.items():
        if field_name not in given:
            unstated.append(field_name)
            continue
        measured = getattr(engine, field_name)
        if measured != pool[settings_key]:
            differences.append(Difference(field_name, pool[settings_key], measured))
    return Verdict(entry.id, pool["line"], tuple(differences), tuple(unstated))


def check(entries: Sequence[MeasurementEntry], pools: Sequence[Mapping[str, Any]]) -> list[Verdict]:
    """Each entry against the plan's pools (``deploy/settings.json``): the verdict for the pool
    of its hardware and model (and workload, where it names one) it differs least from."""
    verdicts = []
    for entry in entries:
        mine = [
            p
            for p in pools
            if p["hardware"] == entry.hardware
            and p["model"] == entry.model
            and entry.workload in (None, p["workload"])
        ]
        if not mine:
            verdicts.append(Verdict(entry.id, None))
            continue
        verdicts.append(min((_compare(entry, p) for p in mine), key=lambda v: len(v.differences)))
    return verdicts


def apart(
    catalog: Catalog, lines: Iterable[Line], measurements: Iterable[Measurement]
) -> tuple[Verdict, ...]:
    """The measurements of a plan line's model on its hardware that were not taken with the
    line's settings, each with its differences."""
    from planner.deploy import line_settings

    pools = [s.to_dict() for s in line_settings(catalog, lines)]
    verdicts = check([m.entry for m in measurements], pools)
    return tuple(v for v in verdicts if v.pool is not None and not v.matches)
