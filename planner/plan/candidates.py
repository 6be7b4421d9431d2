"""The candidates of a plan: every hardware × model × precision × workload × tensor-parallel
size that can run (the union of the scenarios' cross products where ``scenarios.yaml`` names
them), kept as small integer codes, and why the combinations left out are left out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from planner.catalog import Catalog, Hardware, Model, Precision
from planner.model.nodes import sits_on_nodes
from planner.plan.columns import EP_KEY, PD_KEY, PF_KEY, PLAN_KEYS, PP_KEY, PX_KEY, TP_KEY


def compute_format_for(hardware: Hardware, precision: Precision) -> str | None:
    """The compute format a precision runs at on a device: its own, else its fallback, else None."""
    for fmt in (precision.compute, precision.compute_fallback):
        if fmt is not None and fmt in hardware.compute:
            return fmt
    return None


def applies(model: Model, precision: Precision) -> bool:
    """Whether a precision can store a model: one that quantises experts only needs experts."""
    return precision.quantised == "all" or model.moe is not None


def skipped_pairs(catalog: Catalog) -> list[str]:
    """Why some combinations are not evaluated at all (no compute rate, no interconnect, a
    quantisation of experts for a model without them)."""
    notes = [
        f"{m.id} × {p.id}: the precision quantises experts and the model has none"
        for m in catalog.models
        for p in catalog.precisions
        if not applies(m, p)
    ]
    for h in catalog.hardware:
        for p in catalog.precisions:
            if compute_format_for(h, p) is None:
                formats = p.compute + (f" or {p.compute_fallback}" if p.compute_fallback else "")
                notes.append(f"{h.id} × {p.id}: the device has no {formats} compute rate")
        if h.interconnect_bandwidth is None and any(
            t > 1 for t in catalog.assumptions.tensor_parallel_sizes
        ):
            notes.append(f"{h.id}: no interconnect_bandwidth, so no tensor parallelism was tried")
    return notes


@dataclass(frozen=True)
class Candidates:
    """Every combination to evaluate as codes: one row per candidate of (workload, model,
    precision, hardware, devices a replica) positions into ``ids`` and ``sizes``, and its
    expert-parallel size itself (1: a tensor-parallel replica), its pipeline stages (1: one),
    its serving layout (0: one pool, 1: a prefill pool and a decode pool), its prefill
    replicas' own size (0: the candidate's) and the hardware its prompts run on (a
    position into ``ids["hardware"]``: its own but for a prefill pool on another device), in
    plan order. Ten small integers a candidate, so that millions of them fit where their ids
    as text would not; :meth:`table` gives a slice as the table of ids."""

    codes: np.ndarray
    ids: dict[str, np.ndarray]
    sizes: np.ndarray

    def __len__(self) -> int:
        return len(self.codes)

    def table(self, start: int = 0, stop: int | None = None) -> pd.DataFrame:
        """Rows ``start`` to ``stop`` − 1 as the table of ids (:func:`candidates`)."""
        rows = self.codes[start:stop]
        return pd.DataFrame(
            {
                "hardware": self.ids["hardware"][rows[:, 3]],
                "model": self.ids["model"][rows[:, 1]],
                "precision": self.ids["precision"][rows[:, 2]],
                "workload": self.ids["workload"][rows[:, 0]],
                TP_KEY: self.sizes[rows[:, 4]],
                EP_KEY: rows[:, 5].astype(np.int64),
                PP_KEY: rows[:, 6].astype(np.int64),
                PD_KEY: rows[:, 7].astype(np.int64),
                PX_KEY: rows[:, 8].astype(np.int64),
                PF_KEY: np.where(rows[:, 9] == rows[:, 3], "", self.ids["hardware"][rows[:, 9]]),
            },
            columns=PLAN_KEYS,
        )


def _catalog_ids(catalog: Catalog) -> dict[str, list[str]]:
    """The ids of each kind of entry, in catalog order."""
    return {
        "hardware": [h.id for h in catalog.hardware],
        "model": [m.id for m in catalog.models],
        "precision": [p.id for p in catalog.precisions],
        "workload": [w.id for w in catalog.workloads],
    }


def _scenario_ids(catalog: Catalog, all_ids: dict[str, list[str]]) -> list[dict[str, list[str]]]:
    """The ids each scenario crosses (a list it leaves out: every entry); without scenarios,
    every entry."""
    return [
        {
            "hardware": s.hardware or all_ids["hardware"],
            "model": s.models or all_ids["model"],
            "precision": s.precisions or all_ids["precision"],
            "workload": s.workloads or all_ids["workload"],
        }
        for s in catalog.scenarios
    ] or [all_ids]


@dataclass(frozen=True)
class _Allowed:
    """Which pairs can run, by position: ``runs[hardware, precision]`` (a compute rate),
    ``stores[model, precision]`` (:func:`applies`) and ``linked[hardware]`` (an interconnect,
    needed above one device a replica), with the ``sizes`` of a replica (devices)."""

    runs: np.ndarray
    stores: np.ndarray
    linked: np.ndarray
    sizes: np.ndarray
    tensor: np.ndarray  # positions in ``sizes`` of the tensor-parallel sizes
    experts: np.ndarray  # expert-parallel sizes, 1 first
    splits: np.ndarray  # splits[model, e]: the model's expert slots divide by experts[e]
    nodes: np.ndarray  # devices per node of each hardware
    stages: np.ndarray  # pipeline stages above 1 to try, a node of the hardware each
    pools: np.ndarray  # 0: aggregated; 1: disaggregated prefill and decode pools as well
    prefill: np.ndarray  # hardware a prefill pool may also run on (positions)
    prefill_sizes: np.ndarray  # devices a prefill replica may also take
    prefill_splits: np.ndarray  # prefill_splits[model, e]: its slots divide by prefill_sizes[e]

    @classmethod
    def of(cls, catalog: Catalog) -> _Allowed:
        hardware, precisions, a = catalog.hardware, catalog.precisions, catalog.assumptions
        runs = [compute_format_for(h, p) is not None for h in hardware for p in precisions]
        stores = [applies(m, p) for m in catalog.models for p in precisions]
        experts = np.array(sorted({1, *a.expert_parallel_sizes}), np.int64)
        nodes = np.array([h.devices_per_node or a.devices_per_node for h in hardware])
        stages = np.array(sorted({*a.pipeline_parallel_sizes} - {1}), np.int64)
        spans = {int(n * s) for n in nodes for s in stages}
        sizes = np.array(sorted({*a.tensor_parallel_sizes, *experts[1:], *spans}), np.int64)
        prefill_sizes = np.array(sorted(set(a.prefill_parallel_sizes)), np.int64)
        return cls(
            runs=np.array(runs, dtype=bool).reshape(len(hardware), -1),
            stores=np.array(stores, dtype=bool).reshape(len(catalog.models), -1),
            linked=np.array([h.interconnect_bandwidth is not None for h in hardware], bool),
            sizes=sizes,
            tensor=np.flatnonzero(np.isin(sizes, a.tensor_parallel_sizes)).astype(np.int32),
            experts=experts,
            splits=_splits(catalog, experts),
            nodes=nodes,
            stages=stages,
            pools=np.array(sorted({LAYOUT_CODES[x] for x in a.serving_layouts}), np.int32),
            prefill=np.array(
                [i for i, h in enumerate(hardware) if h.id in a.prefill_pool_hardware], np.int32
            ),
            prefill_sizes=prefill_sizes,
            prefill_splits=_splits(catalog, prefill_sizes),
        )

    def codes(self, workload: int, models: np.ndarray, precisions: np.ndarray,
              hardware: np.ndarray) -> np.ndarray:  # fmt: skip
        """The rows of one workload's cross product that can run, as codes: every
        tensor-parallel size, then (after each combination's) every expert-parallel size above 1
        whose replica is one node of a linked device or whole nodes of one (:meth:`spans`) and
        splits the model's expert slots (its routed experts and the redundant ones);
        each of them as the serving layouts ask (aggregated, then disaggregated); then, one pool
        only, each pipeline of more than one stage, a node of a linked device a stage. Each
        prompts on its own hardware; a disaggregated one also with its prefill pool on each
        device of :attr:`prefill` that can run it (:meth:`_mixed`), and each disaggregated one
        of one stage also with its prefill replicas of each other size of :attr:`prefill_sizes`
        its layout allows (:meth:`_prefill_layouts`)."""
        rows = self._layouts(workload, models, precisions, hardware)
        rows = np.column_stack([rows, 1 + 0 * rows[:, 0]])
        rows = np.concatenate([np.column_stack([rows, 0 * rows[:, 0] + d]) for d in self.pools])
        rows = np.concatenate([rows, self._pipelines(workload, models, precisions, hardware)])
        rows = np.column_stack([rows, 0 * rows[:, 0], rows[:, 3]])
        rows = np.concatenate([rows, self._mixed(rows)])
        rows = np.concatenate([rows, self._prefill_layouts(rows)])
        return rows[_plan_order(rows)]

    def spans(self, devices: np.ndarray, hardware: np.ndarray | int) -> np.ndarray:
        """Whether an expert-parallel replica of ``devices`` devices can be laid out on nodes of
        ``hardware``: within one node, or over whole nodes (every node's devices one rank each,
        as SGLang's EP 32 over 4 × 8 H100 and DeepSeek's over 18 nodes), never part of a node
        shared with another replica."""
        return sits_on_nodes(devices, self.nodes[hardware])

    def _mixed(self, rows: np.ndarray) -> np.ndarray:
        """The disaggregated rows of ``rows`` again with their prefill pool on each other device
        of :attr:`prefill` that runs the precision and holds the replica's layout (linked
        devices above one a replica; an expert-parallel replica in whole nodes of it)."""
        pools = rows[rows[:, 7] == 1]
        found = []
        for p in self.prefill:
            size, experts = self.sizes[pools[:, 4]], pools[:, 5]
            keep = (pools[:, 3] != p) & self.runs[p, pools[:, 2]]
            keep &= (size <= 1) | self.linked[p]
            keep &= (experts <= 1) | self.spans(experts, p)
            found.append(np.column_stack([pools[keep, :9], np.full(int(keep.sum()), p)]))
        return np.concatenate(found).astype(rows.dtype) if found else rows[:0]

    def _prefill_layouts(self, rows: np.ndarray) -> np.ndarray:
        """The disaggregated rows of one stage of ``rows`` again with their prefill replicas of
        each other size of :attr:`prefill_sizes`: of an expert-parallel candidate, an
        expert-parallel size above 1 that splits the model's expert slots and is one node or
        whole nodes of the device the prompts run on (:meth:`spans`); of a tensor-parallel one,
        a tensor-parallel size within one node of that device, a linked one above 1 device."""
        pools = rows[(rows[:, 7] == 1) & (rows[:, 6] == 1)]
        expert, devices, prompts = pools[:, 5] > 1, self.sizes[pools[:, 4]], pools[:, 9]
        found = []
        for e, size in enumerate(self.prefill_sizes):
            sized = np.full(len(pools), size)
            fits_ep = (size > 1) & self.prefill_splits[pools[:, 1], e] & self.spans(sized, prompts)
            fits_tp = (size <= self.nodes[prompts]) & ((size <= 1) | self.linked[prompts])
            keep = (devices != size) & np.where(expert, fits_ep, fits_tp)
            mine = pools[keep].copy()
            mine[:, 8] = size
            found.append(mine)
        return np.concatenate(found).astype(rows.dtype) if found else rows[:0]

    def _pipelines(self, workload: int, models: np.ndarray, precisions: np.ndarray,
                   hardware: np.ndarray) -> np.ndarray:  # fmt: skip
        """The pipeline rows of :meth:`codes`, eight codes each: a replica of ``stages`` nodes
        of a device, tensor parallel within each node (linked devices where a node holds more
        than one), one pool."""
        grid = np.meshgrid(models, precisions, hardware, self.stages, indexing="ij")
        m, p, h, s = (a.ravel() for a in grid)
        keep = self.runs[h, p] & self.stores[m, p] & (self.linked[h] | (self.nodes[h] == 1))
        t = np.searchsorted(self.sizes, self.nodes[h] * s).astype(np.int32)
        w = np.full(int(keep.sum()), workload, dtype=np.int32)
        stages = s[keep].astype(np.int32)
        return np.stack([w, m[keep], p[keep], h[keep], t[keep], 1 + 0 * w, stages, 0 * w], axis=1)

    def _layouts(self, workload: int, models: np.ndarray, precisions: np.ndarray,
                 hardware: np.ndarray) -> np.ndarray:  # fmt: skip
        """The tensor- and expert-parallel rows of :meth:`codes`, six codes each."""
        m, p, h, t = np.meshgrid(models, precisions, hardware, self.tensor, indexing="ij")
        m, p, h, t = (a.ravel() for a in (m, p, h, t))
        keep = self.runs[h, p] & self.stores[m, p] & ((self.sizes[t] <= 1) | self.linked[h])
        w = np.full(int(keep.sum()), workload, dtype=np.int32)
        rows = np.stack([w, m[keep], p[keep], h[keep], t[keep], 1 + 0 * w], axis=1)
        if len(self.experts) == 1:
            return rows
        e = np.arange(1, len(self.experts), dtype=np.int32)
        grid = np.meshgrid(models, precisions, hardware, e, indexing="ij")
        m, p, h, e = (a.ravel() for a in grid)
        size = self.experts[e]
        keep = self.runs[h, p] & self.stores[m, p] & self.linked[h] & self.splits[m, e]
        keep &= self.spans(size, h)
        t = np.searchsorted(self.sizes, size).astype(np.int32)
        w = np.full(int(keep.sum()), workload, dtype=np.int32)
        layouts = np.stack([w, m[keep], p[keep], h[keep], t[keep], size[keep]], axis=1)
        return np.concatenate([rows, layouts])


def _splits(catalog: Catalog, sizes: np.ndarray) -> np.ndarray:
    """``[model, e]``: whether expert-parallel size ``sizes[e]`` divides the model's expert
    slots, its routed experts and the redundant ones (never for a model without experts)."""
    extra = catalog.assumptions.redundant_experts
    slots = [None if m.moe is None else m.moe.experts + extra for m in catalog.models]
    found = [[n is not None and n % e == 0 for e in sizes] for n in slots]
    return np.array(found, dtype=bool).reshape(len(catalog.models), len(sizes))


#: The serving layouts' codes: one pool, or a prefill pool and a decode pool.
LAYOUT_CODES = {"aggregated": 0, "disaggregated": 1}


def _plan_order(rows: np.ndarray) -> np.ndarray:
    """The order of candidate codes: by workload, model, precision and hardware, then each
    combination's layouts: aggregated before disaggregated, tensor-parallel sizes before
    expert-parallel ones, smaller before larger, one stage before a pipeline of as many
    devices, a prefill pool on the decode pool's own device before one on another (in catalog
    order), a prefill pool of the candidate's own layout before one of another size (smaller
    before larger)."""
    other = rows[:, 9] != rows[:, 3]
    keys = (
        rows[:, 8], rows[:, 9], other, rows[:, 6], rows[:, 4], rows[:, 5], rows[:, 7],
        *rows[:, 3::-1].T,
    )  # fmt: skip
    return np.lexsort(keys)


def candidate_codes(catalog: Catalog) -> Candidates:
    """Every combination to evaluate, as :class:`Candidates` codes (see :func:`candidates`).

    Built a workload at a time, so the cross product is never held wider than one workload's.
    """
    all_ids = _catalog_ids(catalog)
    position = {k: {v: i for i, v in enumerate(ids)} for k, ids in all_ids.items()}
    allowed = _Allowed.of(catalog)
    chosen = _scenario_ids(catalog, all_ids)
    codes = []
    for lists in chosen:
        m_, p_, h_ = (
            np.array([position[k][v] for v in lists[k]], dtype=np.int32)
            for k in ("model", "precision", "hardware")
        )
        for workload in lists["workload"]:
            codes.append(allowed.codes(position["workload"][workload], m_, p_, h_))
    rows = np.concatenate(codes) if codes else np.zeros((0, 10), dtype=np.int32)
    if chosen != [all_ids]:  # the union of the scenarios, in catalog order, each row once
        rows = np.unique(rows, axis=0)
        rows = rows[_plan_order(rows)]
    ids = {k: np.array(all_ids[k], dtype=object) for k in all_ids}
    return Candidates(rows, ids, allowed.sizes)


def candidates(catalog: Catalog) -> pd.DataFrame:
    """Every combination to evaluate, as a table of ids.

    With ``scenarios.yaml``, the union of each scenario's cross product (a list left out means
    every entry); without it, every hardware × model × precision × workload. Rows are ordered by
    workload, model, precision, then hardware, so that a workload's options sit together.
    A device without the precision's compute format (or its fallback) is left out; so are
    tensor-parallel sizes above 1 on a device without an interconnect figure, and precisions
    that quantise experts for models without them.
    """
    return candidate_codes(catalog).table()
