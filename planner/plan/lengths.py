"""A workload's token lengths as distributions: what the serving simulation draws, and the
median prompt the plan's prefill at load is sized on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.catalog.workloads import samples_of
from planner.model.lengths import Lengths

if TYPE_CHECKING:
    from planner.catalog import Catalog, LengthDistribution, Workload


def lengths(catalog: Catalog, value: int | LengthDistribution | None, default: int) -> Lengths:
    """A workload length (fixed, summary, samples or CSV column) as a simulation distribution."""
    if value is None:
        return Lengths.fixed(default)
    if isinstance(value, int):
        return Lengths.fixed(value)
    samples = samples_of(catalog, value)
    if samples is not None:
        return Lengths.samples(samples.tolist())
    return Lengths.from_summary(float(value.mean or 0), float(value.p95 or 0), int(value.max or 0))


def median_prompt_tokens(catalog: Catalog, workload: Workload) -> float:
    """The median prompt the simulation draws for ``workload`` [tokens]."""
    return lengths(catalog, workload.prompt_tokens, workload.max_output_tokens).median_tokens()
