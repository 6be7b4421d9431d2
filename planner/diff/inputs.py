"""What changed in the inputs: catalog entries field by field, catalog files and data files by
their hashes.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import BaseModel

from planner.catalog import Catalog
from planner.diff.changes import Change
from planner.diff.values import BLOCK_UNITS, FIELD_UNITS, SECTIONS, same


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


def dump(record: BaseModel) -> dict[str, Any]:
    """A record's fields as the catalog gives them, with each distribution described beside its
    central value (``bandwidth_efficiency_distribution: triangular 0.6 / 0.8 / 0.9``), so that a
    changed range shows even where its central value stays."""
    out = record.model_dump()
    _describe_distributions(record, out)
    return out


def _describe_distributions(record: BaseModel, out: dict[str, Any]) -> None:
    for name, distribution in getattr(record, "uncertain", {}).items():
        out[f"{name}_distribution"] = distribution.describe()
    for name in type(record).model_fields:
        value = getattr(record, name)
        if isinstance(value, BaseModel) and isinstance(out.get(name), dict):
            _describe_distributions(value, out[name])


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
            for path, a, b in field_changes(dump(before[entry_id]), dump(entry)):
                changes.append(Change("input_changed", key, path, a, b, field_unit(path)))
        for entry_id, entry in before.items():
            if entry_id not in after:
                changes.append(
                    Change("input_removed", f"{singular}/{entry_id}", "", entry.label, None)
                )
    dumps = dump(old.assumptions), dump(new.assumptions)
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
