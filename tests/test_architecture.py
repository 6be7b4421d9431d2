"""Parameter counts and KV-cache sizes against published figures.

Architectures come from the real config.json files in tests/fixtures/hf/ (imported with
planner.catalog.hf); expected figures come from model cards, technical reports and the Hub's
safetensors metadata, recorded with their sources in each fixture's companion ``<name>.meta.json``.
None of the expected numbers below was produced by this program.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.catalog.hf import architecture_from_hf_config, load_hf_config
from planner.model.architecture import (
    MLA,
    Architecture,
    MoE,
    SlidingWindow,
    compress_layer_pattern,
    count_parameters,
    kv_cache_split,
    kv_cache_values,
    kv_cache_values_per_token,
    mla_attention_parameters,
)

FIXTURES = Path(__file__).parent / "fixtures" / "hf"

B = 10**9

# Published totals. tol: 0.1 % for dense models, 0.5 % for MoE/MLA (relative to the published
# figure). Active counts are published rounded to 2-3 significant digits, so they are checked to
# within max(0.5 %, one unit of the last published digit); "conv" says whether the publisher
# counts the input embedding table in the active figure (DeepSeek does not).
#
# fixture             published total       source of the total
# llama-3.1-8b          8,030,261,248       Hub safetensors metadata (meta-llama/Llama-3.1-8B)
# llama-3.1-70b        70,553,706,496       Hub safetensors metadata (meta-llama/Llama-3.1-70B)
# mistral-7b-v0.1       7,241,732,096       Hub safetensors metadata (mistralai/Mistral-7B-v0.1)
# qwen2.5-7b            7,615,616,512       Hub safetensors metadata; card: 7.61B
# qwen3-8b              8,190,735,360       Hub safetensors metadata; card: 8.2B
# gemma-2-9b            9,241,705,984       Hub metadata = Gemma 2 report Table 1 (917.5M+8,324.2M)
# gemma-3-1b-pt           999,885,952       Hub metadata; Gemma 3 report Table 1: 302M + 698M
# mixtral-8x7b-v0.1    46,702,792,704       Hub metadata; Mistral: 46.7B total, 12.9B per token
# qwen1.5-moe-a2.7b    14,315,784,192       Hub metadata; Qwen blog: 14.3B total, 2.7B activated
# qwen3-30b-a3b        30,532,122,624       Hub metadata; card: 30.5B total, 3.3B activated
# deepseek-v3             671B              card/report: 671B total, 37B activated
# deepseek-v2-lite     15,706,484,224       Hub metadata; card: 15.7B total, 2.4B activated
# gpt-oss-20b             20.91B            OpenAI model card Table 1: 20.91B total, 3.61B active
PUBLISHED = [
    # fixture, total, tol, active, active_unit, conv
    ("llama-3.1-8b", 8_030_261_248, 0.001, None, None, None),
    ("llama-3.1-70b", 70_553_706_496, 0.001, None, None, None),
    ("mistral-7b-v0.1", 7_241_732_096, 0.001, None, None, None),
    ("qwen2.5-7b", 7_615_616_512, 0.001, None, None, None),
    ("qwen3-8b", 8_190_735_360, 0.001, None, None, None),
    ("gemma-2-9b", 9_241_705_984, 0.001, None, None, None),
    ("gemma-3-1b-pt", 999_885_952, 0.001, None, None, None),
    ("mixtral-8x7b-v0.1", 46_702_792_704, 0.005, 12.9 * B, 0.1 * B, "all"),
    ("qwen1.5-moe-a2.7b", 14_315_784_192, 0.005, 2.7 * B, 0.1 * B, "all"),
    ("qwen3-30b-a3b", 30_532_122_624, 0.005, 3.3 * B, 0.1 * B, "all"),
    ("deepseek-v3", 671 * B, 0.005, 37 * B, 1 * B, "excluding_input_embedding"),
    ("deepseek-v2-lite", 15_706_484_224, 0.005, 2.4 * B, 0.1 * B, "excluding_input_embedding"),
    ("gpt-oss-20b", 20.91 * B, 0.005, 3.61 * B, 0.01 * B, "excluding_input_embedding"),
]

# Published non-embedding counts (total minus input embeddings and LM head).
NON_EMBEDDING = [
    # fixture, published, unit of the last published digit, source
    ("gemma-2-9b", 8_324_201_984, 1, "Gemma 2 report (arXiv:2408.00118) Table 1"),
    ("gemma-3-1b-pt", 698e6, 1e6, "Gemma 3 report (arXiv:2503.19786) Table 1"),
    ("gemma-3-27b-it", 25_600e6, 1e8, "Gemma 3 report (arXiv:2503.19786) Table 1"),
    ("qwen2.5-7b", 6.53 * B, 0.01 * B, "Qwen2.5-7B model card"),
    ("qwen3-8b", 6.95 * B, 0.01 * B, "Qwen3-8B model card"),
    ("qwen3-30b-a3b", 29.9 * B, 0.1 * B, "Qwen3-30B-A3B model card"),
]


def fixture_arch(name: str) -> Architecture:
    return architecture_from_hf_config(load_hf_config(FIXTURES / f"{name}.json"))


def meta(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.meta.json").read_text(encoding="utf-8"))


def _active(name: str, conv: str) -> int:
    count = count_parameters(fixture_arch(name))
    if conv == "excluding_input_embedding":
        return count.active - count.breakdown["embeddings"]
    return count.active


@pytest.mark.parametrize(("name", "total", "tol", "active", "unit", "conv"), PUBLISHED)
def test_total_matches_published(name, total, tol, active, unit, conv):
    computed = count_parameters(fixture_arch(name)).total
    assert abs(computed - total) / total <= tol, f"{name}: {computed:,} vs published {total:,}"


@pytest.mark.parametrize(
    ("name", "total", "tol", "active", "unit", "conv"), [p for p in PUBLISHED if p[3]]
)
def test_active_matches_published(name, total, tol, active, unit, conv):
    computed = _active(name, conv)
    assert abs(computed - active) <= max(0.005 * active, unit), (
        f"{name}: {computed:,} active vs published {active:,.0f}"
    )


@pytest.mark.parametrize(("name", "published", "unit", "source"), NON_EMBEDDING)
def test_non_embedding_matches_published(name, published, unit, source):
    computed = count_parameters(fixture_arch(name)).non_embedding
    assert abs(computed - published) <= max(0.001 * published, unit), (
        f"{name}: {computed:,} vs {published:,.0f} ({source})"
    )


def test_mixtral_active_within_half_a_percent():
    # 12.9B is given to 3 significant digits, so here the 0.5 % bound is meaningful on its own.
    computed = count_parameters(fixture_arch("mixtral-8x7b-v0.1")).active
    assert abs(computed - 12.9 * B) / (12.9 * B) <= 0.005


@pytest.mark.parametrize("row", PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_table_agrees_with_fixture_metadata(row):
    name, total, _tol, active, _unit, conv = row
    published = meta(name)["published"]
    assert published["total"] == total
    assert published.get("active") == active
    assert published.get("active_convention") == conv


def test_every_fixture_has_source_metadata():
    for config in FIXTURES.glob("*.json"):
        if config.name.endswith(".meta.json"):
            continue
        data = meta(config.stem)
        assert data["config_url"].startswith("https://huggingface.co/")
        assert data["model_card_url"].startswith("https://huggingface.co/")
        assert data["published"]


# Hand-computed counts ---------------------------------------------------------------------------


def test_llama_3_1_8b_breakdown_by_hand():
    # config.json: 32 layers, hidden 4096, intermediate 14336, 32 heads, 8 KV heads, vocab 128256.
    arch = Architecture(
        layers=32,
        hidden_size=4096,
        intermediate_size=14336,
        attention_heads=32,
        kv_heads=8,
        head_dim=128,
        vocab_size=128256,
    )
    count = count_parameters(arch)
    assert count.breakdown == {
        "embeddings": 128256 * 4096,  # 525,336,576
        "attention": 32 * (4096 * 4096 + 2 * 4096 * 1024 + 4096 * 4096),  # 1,342,177,280
        "mlp": 32 * 3 * 4096 * 14336,  # 5,637,144,576
        "experts": 0,
        "norms": 32 * 2 * 4096 + 4096,  # 266,240
        "lm_head": 128256 * 4096,
    }
    assert count.total == count.active == 8_030_261_248  # the published figure, exactly


def test_qwen2_biases_by_hand():
    # Qwen2.5-7B: q/k/v biases of 28·128 + 2·4·128 = 4,608 per layer, no o_proj bias.
    with_bias = Architecture(28, 3584, 18944, 28, 4, 128, 152064, attention_bias=True)
    without = Architecture(28, 3584, 18944, 28, 4, 128, 152064, attention_bias=False)
    assert count_parameters(with_bias).total - count_parameters(without).total == 28 * 4608


def test_deepseek_v3_mla_projections_by_hand():
    # q_a 7168·1536 + q_b 1536·128·192 + kv_a 7168·576 + kv_b 512·128·256 + o 128·128·7168
    arch = fixture_arch("deepseek-v3")
    assert arch.mla == MLA(
        kv_lora_rank=512,
        qk_rope_head_dim=64,
        qk_nope_head_dim=128,
        v_head_dim=128,
        q_lora_rank=1536,
    )
    expected = 11_010_048 + 37_748_736 + 4_128_768 + 16_777_216 + 117_440_512
    assert mla_attention_parameters(arch, arch.mla) == expected == 187_105_280


def test_mixtral_experts_by_hand():
    # 32 layers × (8 experts × 3·4096·14336 + router 4096·8); active uses 2 of the 8 experts.
    count = count_parameters(fixture_arch("mixtral-8x7b-v0.1"))
    expert = 3 * 4096 * 14336
    assert count.breakdown["experts"] == 32 * (8 * expert + 4096 * 8)
    assert count.active_breakdown["experts"] == 32 * (2 * expert + 4096 * 8)
    assert count.breakdown["mlp"] == 0


def test_gpt_oss_20b_by_hand():
    """gpt-oss-20b (config.json: 24 layers, width 2880, 64 query and 8 KV heads of 64, 32
    experts of width 2880, 4 per token, vocabulary 201,088, untied). Attention per layer: q and
    o 2880 × 4096 each, k and v 2880 × 512 each, q/k/v biases 4096 + 512 + 512, 64 sinks =
    26,547,264. One expert 3 × 2880² + biases 2 × 2880 + 2880 = 24,891,840; router 2880 × 32 +
    32. Total 20,914,688,064 and active without the input embedding 3,608,238,144: the model
    card's 20.91B and 3.61B (OpenAI, gpt-oss-120b & gpt-oss-20b Model Card, 2025, Table 1)."""
    arch = Architecture(
        24, 2880, 2880, 64, 8, 64, 201_088, attention_bias=True, attention_sinks=True,
        moe=MoE(32, 4, 2880, router_bias=True, expert_bias=True),
        sliding_window=SlidingWindow(128, "SF"),
    )  # fmt: skip
    count = count_parameters(arch)
    assert count.breakdown["attention"] == 24 * 26_547_264
    assert count.breakdown["experts"] == 24 * (32 * 24_891_840 + 2880 * 32 + 32)
    assert count.total == 20_914_688_064
    assert count.active - count.breakdown["embeddings"] == 3_608_238_144
    assert abs(count.total - 20.91 * B) <= 0.005 * B
    assert abs(count.active - count.breakdown["embeddings"] - 3.61 * B) <= 0.005 * B


def test_breakdowns_sum_to_totals():
    for row in PUBLISHED:
        count = count_parameters(fixture_arch(row[0]))
        assert sum(count.breakdown.values()) == count.total
        assert sum(count.active_breakdown.values()) == count.active
        assert count.active <= count.total


# KV cache ------------------------------------------------------------------------------------
#
# Hand-computed rows (values per token; bytes = values × bytes per value):
#   Llama 3.1 8B, bf16:   2 × 32 layers × 8 KV heads × 128 head dim = 65,536 values
#                         × 2 B = 131,072 B per token (128 KiB)
#   DeepSeek-V3 (MLA):    61 layers × (512 kv_lora_rank + 64 rope)   = 35,136 values
#   Mistral 7B v0.1:      all 32 layers windowed at 4,096: (0, 65,536, 4096)
#   Gemma 2 9B:           42 layers alternate S,F; 2 × 8 × 256 = 4,096 per layer
#                         full 21 × 4,096 = 86,016; windowed 21 × 4,096 = 86,016; window 4,096
#   Gemma 3 1B:           26 layers, every 6th full → layers 5, 11, 17, 23 full (4), 22 windowed;
#                         2 × 1 × 256 = 512 per layer → (2,048, 11,264, 512)


def test_kv_llama_3_1_8b_bf16():
    assert kv_cache_values_per_token(fixture_arch("llama-3.1-8b")) * 2 == 131_072


def test_kv_deepseek_v3_mla():
    assert kv_cache_values_per_token(fixture_arch("deepseek-v3")) == 61 * (512 + 64) == 35_136


def test_kv_split_without_window_is_all_full():
    arch = fixture_arch("llama-3.1-8b")
    assert tuple(kv_cache_split(arch)) == (65_536.0, 0.0, 0)
    assert kv_cache_values(arch, 1000) == 65_536 * 1000


def test_kv_split_mistral_all_layers_windowed():
    arch = fixture_arch("mistral-7b-v0.1")
    assert tuple(kv_cache_split(arch)) == (0.0, 65_536.0, 4096)
    assert kv_cache_values(arch, 10_000) == 65_536 * 4096
    assert kv_cache_values(arch, 100) == 65_536 * 100


def test_kv_split_gemma_2_alternating():
    arch = fixture_arch("gemma-2-9b")
    assert tuple(kv_cache_split(arch)) == (86_016.0, 86_016.0, 4096)
    assert kv_cache_values(arch, 8192) == 86_016 * 8192 + 86_016 * 4096


def test_kv_split_gemma_3_every_sixth_full():
    arch = fixture_arch("gemma-3-1b-pt")
    assert arch.sliding_window.layer_kinds(26) == "SSSSSF" * 4 + "SS"
    assert tuple(kv_cache_split(arch)) == (2_048.0, 11_264.0, 512)


def test_kv_cache_values_rejects_negative_tokens():
    with pytest.raises(ValueError):
        kv_cache_values(fixture_arch("llama-3.1-8b"), -1)


# Validation ----------------------------------------------------------------------------------

BASE = dict(
    layers=4,
    hidden_size=64,
    intermediate_size=128,
    attention_heads=4,
    kv_heads=2,
    head_dim=16,
    vocab_size=100,
)


@pytest.mark.parametrize(
    "make",
    [
        lambda: MoE(experts=4, experts_per_token=5, expert_intermediate_size=8),
        lambda: MoE(experts=0, experts_per_token=0, expert_intermediate_size=8),
        lambda: SlidingWindow(window=16, pattern="SX"),
        lambda: SlidingWindow(window=16, pattern=""),
        lambda: SlidingWindow(window=16, pattern="FF"),
        lambda: SlidingWindow(window=0),
        lambda: MLA(kv_lora_rank=0, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128),
        lambda: Architecture(**BASE | {"kv_heads": 3}),
        lambda: Architecture(**BASE | {"layers": 0}),
        lambda: Architecture(**BASE | {"hidden_size": 64.0}),
        lambda: Architecture(**BASE | {"moe": MoE(4, 2, 8, dense_layers=5)}),
        lambda: Architecture(**BASE | {"mla": MLA(8, 4, 8, 8), "attention_bias": True}),
        lambda: Architecture(**BASE | {"sliding_window": SlidingWindow(8, "SSSSF")}),
    ],
)
def test_invalid_descriptions_raise(make):
    with pytest.raises(ValueError):
        make()


def test_shared_expert_width_defaults_to_routed_width():
    assert MoE(8, 2, 32, shared_experts=1).shared_width == 32
    assert MoE(8, 2, 32, shared_experts=1, shared_expert_intermediate_size=64).shared_width == 64


def test_ungated_mlp_has_two_matrices():
    gated = count_parameters(Architecture(**BASE)).breakdown["mlp"]
    plain = count_parameters(Architecture(**BASE | {"gated_mlp": False})).breakdown["mlp"]
    assert gated == 4 * 3 * 64 * 128 and plain == 4 * 2 * 64 * 128


# Properties ----------------------------------------------------------------------------------

sizes = st.integers(min_value=1, max_value=64)


@st.composite
def architectures(draw):
    kv_heads = draw(st.integers(1, 8))
    moe = None
    if draw(st.booleans()):
        experts = draw(st.integers(1, 16))
        moe = MoE(
            experts=experts,
            experts_per_token=draw(st.integers(1, experts)),
            expert_intermediate_size=draw(sizes),
            shared_experts=draw(st.integers(0, 2)),
            dense_layers=draw(st.integers(0, 2)),
            router_bias=draw(st.booleans()),
        )
    return Architecture(
        layers=draw(st.integers(2, 8)),
        hidden_size=draw(sizes),
        intermediate_size=draw(sizes),
        attention_heads=kv_heads * draw(st.integers(1, 4)),
        kv_heads=kv_heads,
        head_dim=draw(sizes),
        vocab_size=draw(st.integers(1, 1000)),
        tied_embeddings=draw(st.booleans()),
        attention_bias=draw(st.booleans()),
        moe=moe,
    )


@given(architectures())
def test_tying_removes_exactly_one_vocab_matrix(arch):
    from dataclasses import replace

    untied = count_parameters(replace(arch, tied_embeddings=False)).total
    tied = count_parameters(replace(arch, tied_embeddings=True)).total
    assert untied - tied == arch.vocab_size * arch.hidden_size


@given(architectures())
def test_active_never_exceeds_total_and_routing_everything_is_total(arch):
    from dataclasses import replace

    count = count_parameters(arch)
    assert 0 < count.active <= count.total
    if arch.moe is not None:
        everything = replace(arch, moe=replace(arch.moe, experts_per_token=arch.moe.experts))
        full = count_parameters(everything)
        assert full.active == full.total == count.total


@given(st.text(alphabet="SF", min_size=1, max_size=64))
def test_compressed_pattern_reproduces_layer_kinds(kinds):
    unit = compress_layer_pattern(kinds)
    assert len(unit) <= len(kinds)
    if "S" in kinds:
        assert SlidingWindow(window=8, pattern=unit).layer_kinds(len(kinds)) == kinds


def test_compress_examples():
    assert compress_layer_pattern("SF" * 21) == "SF"
    assert compress_layer_pattern("SSSSSF" * 4 + "SS") == "SSSSSF"
    assert compress_layer_pattern("FFSS") == "FFSS"
    assert compress_layer_pattern("SSSS") == "S"
