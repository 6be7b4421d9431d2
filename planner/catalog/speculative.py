"""Speculative decoding's shipped acceptance rates: the share of proposed tokens the target
model accepts, per method, each read off a public measurement.

The plan treats acceptance as independent from one proposed token to the next (Leviathan et
al. 2023, "Fast Inference from Transformers via Speculative Decoding", section 3.1): a step
that proposes k tokens then emits 1 + α + … + α^k of them
(:func:`planner.model.speculative.speculative_tokens_per_step`). A measurement that reports a
mean acceptance length L at k proposals gives α as the root of 1 + α + … + α^k = L.

A draft model has no default: how often a separate small model agrees with its target depends
on the pair (its family, size and training) and on the text, so its profile gives the rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from planner.catalog.components import Model
    from planner.catalog.plan_records import Speculative


@dataclass(frozen=True)
class AcceptanceDefault:
    """A method's shipped acceptance rate per proposed token [fraction] and where it is from."""

    rate: float
    source: str


#: The acceptance rate a speculative profile uses when it gives none, by method.
ACCEPTANCE_DEFAULTS: dict[str, AcceptanceDefault] = {
    "eagle": AcceptanceDefault(
        0.63,
        "vLLM issue #20780 (2025-07-10): EAGLE-1 head (yuhuili/EAGLE-LLaMA3.1-Instruct-8B) on "
        "Llama 3.1 8B Instruct, MT-bench, mean acceptance length 2.29 at k = 3, so "
        "1 + a + a^2 + a^3 = 2.29, a = 0.634 (k = 2: 2.1, a = 0.66; k = 7: 2.47, a = 0.60); "
        "its EAGLE-3 head: 3.08 at k = 4, a = 0.75",
    ),
    "mtp": AcceptanceDefault(
        0.85,
        "DeepSeek-V3 Technical Report (arXiv 2412.19437) section 5.4.3: 'the acceptance rate "
        "of the second token prediction ranges between 85% and 90% across various generation "
        "topics' (the low end)",
    ),
}


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
