"""Speculative decoding's proposer for each target model, from the engine profile's setting.

A profile's method gives the proposer's size and cache: a draft model of models.yaml, or an
EAGLE head or multi-token-prediction layers that read the target's own LM head. Acceptance
rates are in planner.catalog.acceptance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from planner.catalog.components import Model
    from planner.catalog.plan_records import Speculative


def cached_values_per_token(model: Model, layers: int | None = None) -> int:
    """Values one token leaves in a cache of ``model``'s attention shape: per layer the MLA
    latent width, else 2 × KV heads × head dim (keys and values), over ``layers`` layers (else
    the model's layers that cache, sliding-window ones counted whole) [values]."""
    per_layer = model.mla_kv_dim or 2 * model.kv_heads * model.head_dim
    count = model.layers - model.cacheless_layers if layers is None else layers
    return count * per_layer


@dataclass(frozen=True)
class Proposer:
    """What a target model's speculation adds, as the Models sheet holds it: k, the proposer's
    own parameters, whether it reads the target's LM head, and the values it caches per token
    at TP 1 (all 0 where the model is served without speculation)."""

    proposed_tokens: int = 0
    parameters: int = 0
    shares_lm_head: bool = False
    cached_values_per_token: int = 0


def proposer(speculative: Speculative | None, target: Model, models: dict[str, Model]) -> Proposer:
    """The proposer that serves ``target`` under the engine's ``speculative`` setting (nothing
    where there is none, or where it names other targets); ``models`` by id, for a draft
    model."""
    if speculative is None or not speculative.applies_to(target.id):
        return Proposer()
    if speculative.method == "draft":
        draft = models[str(speculative.draft_model)]
        return Proposer(
            speculative.proposed_tokens,
            draft.parameter_count,
            False,
            cached_values_per_token(draft),
        )
    return Proposer(
        speculative.proposed_tokens,
        int(speculative.draft_parameters or 0),
        True,
        cached_values_per_token(target, speculative.draft_layers or 1),
    )
