"""Speculative decoding's inputs as the workbook holds them: on the Models sheet what each
target model's proposer adds (proposals per step, its weights, whether it reads the target's LM
head, what it caches), on the Workloads sheet a workload's own acceptance rate, and the
lookups that bring them into the Plan (:mod:`planner.model.speculative` computes with them).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from planner.catalog import Catalog, Model, Workload
from planner.catalog.speculative import Proposer, proposer
from planner.plan.columns import Column, Lookup


def _proposer_of(catalog: Catalog) -> Callable[[Model], Proposer]:
    engine = catalog.assumptions.engine
    speculative = None if engine is None else engine.speculative
    models = {m.id: m for m in catalog.models}
    return lambda m: proposer(speculative, m, models)


def model_columns(catalog: Catalog) -> list[Column]:
    """The Models sheet's speculative columns under the catalog's engine profile (0 where a
    model is served without speculation)."""
    of = _proposer_of(catalog)
    return [
        Column(
            "speculative_tokens",
            "tokens",
            "speculative decoding: tokens proposed per sequence each step (0: none)",
            lambda m: float(of(m).proposed_tokens),
        ),
        Column(
            "draft_parameters",
            "",
            "speculative decoding: the proposer's own parameters (a draft model's; an EAGLE "
            "head's or MTP layers', the shared LM head not included)",
            lambda m: float(of(m).parameters),
        ),
        Column(
            "draft_shares_lm_head",
            "1 = yes",
            "speculative decoding: 1 where the proposer reads the target's LM head (EAGLE, MTP)",
            lambda m: 1.0 if of(m).shares_lm_head else 0.0,
        ),
        Column(
            "draft_kv_values_per_token",
            "values",
            "speculative decoding: values the proposer caches per token, all its layers, TP 1",
            lambda m: float(of(m).cached_values_per_token),
        ),
    ]


def workload_columns(catalog: Catalog) -> list[Column]:
    """The Workloads sheet's acceptance rate: the engine profile's figure for the workload
    (``acceptance_by_workload``), blank where it gives none."""
    engine = catalog.assumptions.engine
    speculative = None if engine is None else engine.speculative
    rates = {} if speculative is None else speculative.acceptance_by_workload

    def rate(w: Workload) -> float:
        return float(rates.get(w.id, math.nan))

    return [
        Column(
            "acceptance_rate",
            "fraction",
            "speculative decoding: share of proposed tokens accepted on this workload (blank: "
            "the engine profile's)",
            rate,
        )
    ]


#: The Plan's speculative inputs, read from the Models and Workloads sheets by id.
LOOKUPS = [
    Lookup(
        "speculative_tokens",
        "model",
        "speculative_tokens",
        1,
        "tokens",
        "tokens proposed per sequence each step (0: no speculative decoding)",
    ),
    Lookup("draft_parameters", "model", "draft_parameters", 1, "", "the proposer's parameters"),
    Lookup(
        "draft_shares_lm_head",
        "model",
        "draft_shares_lm_head",
        1,
        "1 = yes",
        "the proposer reads the target's LM head",
    ),
    Lookup(
        "draft_kv_values_per_token",
        "model",
        "draft_kv_values_per_token",
        1,
        "values",
        "values the proposer caches per token at TP 1",
    ),
    Lookup(
        "workload_acceptance_rate",
        "workload",
        "acceptance_rate",
        1,
        "fraction",
        "the workload's own acceptance rate of proposed tokens (blank: the engine profile's)",
    ),
]
