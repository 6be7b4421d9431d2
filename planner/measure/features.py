"""The engine features' figures a measurement gives directly: a prefix cache's hit ratio for the
workload it served, and speculative decoding's acceptance rate.

No fit is needed: vLLM counts both (its log's metrics lines, :func:`~planner.measure.vllm_log.
serving_figures`; its ``/metrics`` counters, :mod:`planner.measure.prometheus`). The hit ratio
becomes the workload's ``prefix.measured_hit_ratio``, which the plan then uses instead of the
ratio it computes. vLLM reports speculation as a mean acceptance length L, the tokens a verifying
step emits per sequence, at k proposed tokens; the plan's acceptance rate α is the share of
proposed tokens accepted, each independently (:func:`planner.model.speculative.
speculative_tokens_per_step`), so α is the root of 1 + α + … + α^k = L
(:func:`acceptance_rate_from_length`).
"""

from __future__ import annotations

from typing import Any

from planner.catalog import Catalog
from planner.measure import Measurement
from planner.measure.compare import engine_as_measured
from planner.measure.points import Measured, Unused

#: The figures read here, none of them a point of a fit.
FEATURE_FIGURES = (
    "prefix_cache_hit_ratio",
    "acceptance_length",
    "proposed_tokens",
    "draft_acceptance_rate",
)

#: Bisection steps: the interval [0, 1] halves each time, to 2⁻⁶⁰.
_STEPS = 60


def acceptance_rate_from_length(acceptance_length: float, proposed_tokens: int) -> float:
    """The acceptance rate α at which a step of k proposals emits L tokens per sequence, the
    root of 1 + α + … + α^k = L [fraction]: 0 at L ≤ 1, 1 at L ≥ k + 1.

    The sum grows with α, so the root is found by halving [0, 1]. L = 2.29 at k = 3 (vLLM's
    EAGLE-1 on Llama 3.1 8B, MT-bench): α = 0.634; at k = 1, α = L − 1.
    """
    if acceptance_length <= 1:
        return 0.0
    if acceptance_length >= proposed_tokens + 1:
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(_STEPS):
        alpha = (low + high) / 2
        emitted = sum(alpha**i for i in range(proposed_tokens + 1))
        low, high = (alpha, high) if emitted < acceptance_length else (low, alpha)
    return (low + high) / 2


def _hit_ratio(measurement: Measurement, value: float) -> Measured | Unused:
    entry = measurement.entry
    if entry.workload is None:
        return Unused(
            entry.id,
            "prefix_cache_hit_ratio",
            "a hit ratio is a workload's: name the workload whose traffic it served in "
            "index.yaml (workload: <id>)",
        )
    return Measured(
        "workloads.yaml",
        entry.workload,
        "prefix.measured_hit_ratio",
        round(value, 4),
        entry.id,
        "the engine's prefix cache hit rate",
    )


def _acceptance(
    catalog: Catalog, measurement: Measurement, figures: dict[str, float]
) -> Measured | Unused:
    entry = measurement.entry
    length = figures["acceptance_length"]
    speculative = engine_as_measured(catalog, measurement).speculative
    proposed = figures.get("proposed_tokens")
    k = int(proposed) if proposed else (speculative.proposed_tokens if speculative else 0)
    if k < 1:
        return Unused(
            entry.id,
            "acceptance_length",
            "the tokens proposed per step (k) are unknown: give the engine's speculative "
            "proposed_tokens in index.yaml",
        )
    alpha = acceptance_rate_from_length(length, k)
    path = "engine.speculative." + (
        "acceptance_rate" if entry.workload is None else f"acceptance_by_workload.{entry.workload}"
    )
    how = f"mean acceptance length {length:.3f} at k = {k}, the root of 1 + a + … + a^{k} = L"
    return Measured("assumptions.yaml", None, path, round(alpha, 4), entry.id, how)


def feature_figures(
    catalog: Catalog, measurement: Measurement, figures: dict[str, Any]
) -> list[Measured | Unused]:
    """What each feature figure of ``figures`` sets in the catalog, or why it sets nothing."""
    out: list[Measured | Unused] = []
    entry = measurement.entry.id
    if "prefix_cache_hit_ratio" in figures:
        out.append(_hit_ratio(measurement, float(figures["prefix_cache_hit_ratio"])))
    if "acceptance_length" in figures:
        out.append(_acceptance(catalog, measurement, figures))
    restated = "read with acceptance_length into the acceptance rate (it restates it)"
    out.extend(
        Unused(entry, name, restated)
        for name in ("proposed_tokens", "draft_acceptance_rate")
        if name in figures
    )
    return out
