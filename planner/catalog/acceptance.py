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
