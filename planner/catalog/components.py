"""The records of what a candidate is built from: an accelerator (with its price), a decoder
model (with its mixture-of-experts, latent-attention and sliding-window blocks) and a precision
its weights and cache are stored at.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field, model_validator

from planner.catalog.fields import (
    Bandwidth,
    Bytes,
    BytesOrZero,
    Compute,
    Count,
    CountOrZero,
    Entry,
    Money,
    OptionalBandwidth,
    OptionalBytes,
    OptionalPower,
    Positive,
    Record,
    Text,
    Uncertain,
)
from planner.catalog.interconnects import Kind
from planner.catalog.matmul import Family
from planner.model.architecture import (
    MLA,
    Architecture,
    MoE,
    ParameterCount,
    SlidingWindow,
    count_parameters,
    embedding_parameters,
    lm_head_parameters,
    mlp_parameters,
)


class Price(Uncertain):
    UNCERTAIN: ClassVar[dict[str, float]] = {
        "purchase_usd": float("inf"),
        "cloud_usd_per_hour": float("inf"),
    }

    purchase_usd: Money | None = None
    cloud_usd_per_hour: Money | None = None


class Hardware(Entry):
    """One accelerator as its datasheet describes it (dense compute rates, never sparse)."""

    memory: Bytes
    usable_memory: OptionalBytes = None
    memory_bandwidth: Bandwidth
    compute: dict[Annotated[str, Field(pattern=r"^[a-z0-9]+$")], Compute] = Field(min_length=1)
    interconnect_bandwidth: OptionalBandwidth = None
    interconnect: Kind | None = None
    # the device's share of its node's scale-out network, per direction (a 400 Gb/s card a
    # device is 50 GB/s): what carries a request's KV cache between disaggregated pools
    network_bandwidth: OptionalBandwidth = None
    family: Family | None = None
    matmul_half_tokens: CountOrZero | None = None
    power: OptionalPower = None
    price: Price = Price()
    devices_per_node: Count | None = None

    @model_validator(mode="after")
    def _usable_within_memory(self) -> Hardware:
        if self.usable_memory is not None and self.usable_memory > self.memory:
            raise ValueError("usable_memory cannot exceed memory")
        return self


class MoEBlock(Record):
    """Mixture of experts (fields as :class:`planner.model.architecture.MoE`)."""

    experts: Count
    experts_per_token: Count
    expert_intermediate_size: Count
    shared_experts: CountOrZero = 0
    shared_expert_intermediate_size: Count | None = None
    dense_layers: CountOrZero = 0
    router_bias: bool = False
    expert_bias: bool = False


class MLABlock(Record):
    """Multi-head latent attention (fields as :class:`planner.model.architecture.MLA`)."""

    kv_lora_rank: Count
    qk_rope_head_dim: Count
    qk_nope_head_dim: Count
    v_head_dim: Count
    q_lora_rank: Count | None = None


class SlidingWindowBlock(Record):
    """Sliding-window layers: ``pattern`` of S (windowed) and F (full), repeated over layers."""

    window: Count
    pattern: Annotated[str, Field(strict=True, pattern=r"^[SF]+$")] = "S"


class Model(Entry):
    """A decoder model's architecture; ``parameters`` (the published total, any encoder
    included) is derived when not given."""

    revision: Text | None = None
    parameters: Count | None = None
    #: Parameters outside the decoder (a multimodal model's vision tower and projector): loaded
    #: with the weights, never run per generated token.
    encoder_parameters: CountOrZero = 0
    layers: Count
    kv_heads: Count
    head_dim: Count
    attention_heads: Count | None = None
    hidden_size: Count | None = None
    intermediate_size: Count | None = None
    vocab_size: Count | None = None
    tied_embeddings: bool = False
    attention_bias: bool = False
    attention_sinks: bool = False
    gated_mlp: bool = True
    moe: MoEBlock | None = None
    mla: MLABlock | None = None
    sliding_window: SlidingWindowBlock | None = None
    cacheless_layers: CountOrZero = 0
    state_per_sequence: BytesOrZero = 0.0

    @model_validator(mode="after")
    def _parameters_known(self) -> Model:
        needed = ("attention_heads", "hidden_size", "intermediate_size", "vocab_size")
        missing = [n for n in needed if getattr(self, n) is None]
        if self.parameters is None and missing:
            raise ValueError(
                "give `parameters`, or the architecture to derive it from "
                f"(missing: {', '.join(missing)})"
            )
        if self.parameters is not None and self.encoder_parameters >= self.parameters:
            raise ValueError(
                f"encoder_parameters ({self.encoder_parameters}) must be less than the total "
                f"`parameters` ({self.parameters}), which includes them"
            )
        if (self.moe or self.mla) and missing:
            raise ValueError(
                f"a moe or mla block needs the full architecture (missing: {', '.join(missing)})"
            )
        if (
            self.attention_heads is not None
            and self.mla is None
            and self.attention_heads % self.kv_heads
        ):
            raise ValueError(
                f"attention_heads ({self.attention_heads}) must be a multiple of kv_heads "
                f"({self.kv_heads}) for grouped-query attention"
            )
        if self.cacheless_layers + self.windowed_layers > self.layers:
            raise ValueError("cacheless and windowed layers outnumber the layers")
        if self.sliding_window and len(self.sliding_window.pattern) > self.layers:
            raise ValueError("sliding_window.pattern is longer than the model has layers")
        if self.moe and self.moe.dense_layers > self.layers:
            raise ValueError("moe.dense_layers exceeds layers")
        return self

    def architecture(self) -> Architecture | None:
        """The full architecture, when the entry gives every field it needs."""
        if (
            self.attention_heads is None
            or self.hidden_size is None
            or self.intermediate_size is None
            or self.vocab_size is None
        ):
            return None
        return Architecture(
            layers=self.layers,
            hidden_size=self.hidden_size,
            intermediate_size=self.intermediate_size,
            attention_heads=self.attention_heads,
            kv_heads=self.kv_heads,
            head_dim=self.head_dim,
            vocab_size=self.vocab_size,
            tied_embeddings=self.tied_embeddings,
            attention_bias=self.attention_bias,
            attention_sinks=self.attention_sinks,
            gated_mlp=self.gated_mlp,
            moe=MoE(**self.moe.model_dump()) if self.moe else None,
            mla=MLA(**self.mla.model_dump()) if self.mla else None,
            sliding_window=(
                SlidingWindow(**self.sliding_window.model_dump()) if self.sliding_window else None
            ),
        )

    def derived_parameters(self) -> ParameterCount | None:
        """Parameter counts derived from the architecture (None without one)."""
        arch = self.architecture()
        return count_parameters(arch) if arch is not None else None

    @property
    def parameter_count(self) -> int:
        """Total parameters, the weights a server loads: as given (a published total), else
        derived from the architecture plus ``encoder_parameters``."""
        if self.parameters is not None:
            return self.parameters
        derived = self.derived_parameters()
        assert derived is not None  # guaranteed by validation
        return derived.total + self.encoder_parameters

    @property
    def active_parameter_count(self) -> int:
        """Decoder parameters used per generated token: all of the decoder's for a dense model
        (the total less ``encoder_parameters``); routed experts in part for a mixture."""
        derived = self.derived_parameters()
        if derived is None or self.moe is None:
            return self.parameter_count - self.encoder_parameters
        return derived.active

    @property
    def embedding_parameter_count(self) -> int:
        """Input embeddings plus an untied LM head: the layers often kept at higher precision."""
        arch = self.architecture()
        if arch is None:
            return 0
        return embedding_parameters(arch) + lm_head_parameters(arch)

    @property
    def routed_expert_parameter_count(self) -> int:
        """Parameters of all routed experts (shared experts and routers excluded)."""
        arch = self.architecture()
        if arch is None or arch.moe is None:
            return 0
        moe = arch.moe
        per_expert = mlp_parameters(arch.hidden_size, moe.expert_intermediate_size, arch.gated_mlp)
        return (arch.layers - moe.dense_layers) * moe.experts * per_expert

    @property
    def mlp_width(self) -> int | None:
        """Intermediate width a token passes through in its widest MLP layer: the dense width,
        or a mixture's experts per token × expert width + its shared experts (None without the
        architecture)."""
        arch = self.architecture()
        if arch is None:
            return None
        if arch.moe is None:
            return arch.intermediate_size
        moe = arch.moe
        routed = moe.experts_per_token * moe.expert_intermediate_size
        experts = routed + moe.shared_experts * moe.shared_width
        return max(experts, arch.intermediate_size) if moe.dense_layers else experts

    @property
    def windowed_layers(self) -> int:
        """Layers that cache only the last ``window`` tokens."""
        if self.sliding_window is None:
            return 0
        pattern = self.sliding_window.pattern
        whole, rest = divmod(self.layers, len(pattern))  # the pattern repeats over the layers
        return whole * pattern.count("S") + pattern[:rest].count("S")

    @property
    def mla_kv_dim(self) -> int:
        """Values cached per token per layer under MLA: kv_lora_rank + rope dim (0 otherwise)."""
        return self.mla.kv_lora_rank + self.mla.qk_rope_head_dim if self.mla else 0


class Precision(Entry):
    """How weights and the KV cache are stored, and which compute rate applies.

    Weights are given either as ``weight_bytes_per_param`` or as ``weight_bits`` with an optional
    quantisation ``group_size`` and ``scale_bits`` per group (4-bit, group 128, 16-bit scale is
    4 + 16/128 = 4.125 bits). Embeddings and the LM head are kept at ``embedding_bits``
    (default: 16, or the weight bits when higher). ``quantised: experts`` quantises only the
    routed experts of a mixture (gpt-oss's MXFP4 checkpoints); its other weights (attention,
    router, shared and dense layers) are stored at ``unquantised_bits``, and the precision
    does not apply to dense models.
    """

    weight_bytes_per_param: Positive | None = None
    weight_bits: Positive | None = None
    group_size: Count | None = None
    scale_bits: Positive = 16.0
    embedding_bits: Positive | None = None
    quantised: Literal["all", "experts"] = "all"
    unquantised_bits: Positive = 16.0
    kv_bytes_per_value: Positive
    compute: Annotated[str, Field(pattern=r"^[a-z0-9]+$")]
    compute_fallback: Annotated[str, Field(pattern=r"^[a-z0-9]+$")] | None = None

    @model_validator(mode="after")
    def _one_weight_size(self) -> Precision:
        if (self.weight_bytes_per_param is None) == (self.weight_bits is None):
            raise ValueError("give exactly one of weight_bytes_per_param and weight_bits")
        return self

    @property
    def bits(self) -> float:
        """Stored bits per quantised weight, before group scales [bit]."""
        if self.weight_bits is not None:
            return self.weight_bits
        return self.weight_bytes_per_param * 8  # type: ignore[operator]

    @property
    def embedding_bits_or_default(self) -> float:
        return self.embedding_bits if self.embedding_bits is not None else max(self.bits, 16.0)
