"""Importing Hugging Face config.json files (real ones, in tests/fixtures/hf/)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from planner.catalog.hf import (
    FAMILIES,
    UnsupportedConfig,
    architecture_from_entry,
    architecture_from_hf_config,
    entry_to_yaml,
    load_hf_config,
    mla_from_hf_config,
    model_entry_from_hf_config,
    moe_from_hf_config,
    quantisation_note,
    sliding_window_from_hf_config,
    vision_parameters_from_hf_config,
    vit_parameters,
)
from planner.catalog.records import Model
from planner.model.architecture import (
    MLA,
    Architecture,
    MoE,
    SlidingWindow,
    count_parameters,
    kv_cache_split,
)

FIXTURES = Path(__file__).parent / "fixtures" / "hf"
CONFIGS = sorted(p.stem for p in FIXTURES.glob("*.json") if not p.name.endswith(".meta.json"))


def config(name: str) -> dict:
    return load_hf_config(FIXTURES / f"{name}.json")


def meta(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.meta.json").read_text(encoding="utf-8"))


# What each fixture must import as, read off its config.json by hand.
EXPECTED = {
    "llama-3.1-8b": Architecture(32, 4096, 14336, 32, 8, 128, 128256),
    "llama-3.1-70b": Architecture(80, 8192, 28672, 64, 8, 128, 128256),
    "mistral-7b-v0.1": Architecture(
        32, 4096, 14336, 32, 8, 128, 32000, sliding_window=SlidingWindow(4096, "S")
    ),
    # Qwen2 has q/k/v biases with no config flag; use_sliding_window is false.
    "qwen2.5-7b": Architecture(28, 3584, 18944, 28, 4, 128, 152064, attention_bias=True),
    "qwen3-8b": Architecture(36, 4096, 12288, 32, 8, 128, 151936),
    # Gemma configs omit tie_word_embeddings; Gemma2Config/Gemma3TextConfig default to true.
    "gemma-2-9b": Architecture(
        42, 3584, 14336, 16, 8, 256, 256000, tied_embeddings=True,
        sliding_window=SlidingWindow(4096, "SF"),
    ),
    "gemma-3-1b-pt": Architecture(
        26, 1152, 6912, 4, 1, 256, 262144, tied_embeddings=True,
        sliding_window=SlidingWindow(512, "SSSSSF"),
    ),
    # text_config omits vocab_size (default 262208) and sliding_window_pattern (default 6).
    "gemma-3-27b-it": Architecture(
        62, 5376, 21504, 32, 16, 128, 262208, tied_embeddings=True,
        sliding_window=SlidingWindow(1024, "SSSSSF"),
    ),
    "mixtral-8x7b-v0.1": Architecture(
        32, 4096, 14336, 32, 8, 128, 32000, moe=MoE(8, 2, 14336)
    ),
    "qwen1.5-moe-a2.7b": Architecture(
        24, 2048, 5632, 16, 16, 128, 151936, attention_bias=True,
        moe=MoE(60, 4, 1408, shared_experts=1, shared_expert_intermediate_size=5632),
    ),
    "qwen3-30b-a3b": Architecture(48, 2048, 6144, 32, 4, 128, 151936, moe=MoE(128, 8, 768)),
    # Qwen3-Coder 30B-A3B: Qwen3-30B-A3B's shape with a narrower dense width no layer uses
    "qwen3-coder-30b-a3b": Architecture(
        48, 2048, 5472, 32, 4, 128, 151936, moe=MoE(128, 8, 768)
    ),
    "deepseek-v3": Architecture(
        61, 7168, 18432, 128, 128, 192, 129280,
        moe=MoE(256, 8, 2048, shared_experts=1, dense_layers=3, router_bias=True),
        mla=MLA(kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128,
                q_lora_rank=1536),
    ),
    "deepseek-v2-lite": Architecture(
        27, 2048, 10944, 16, 16, 192, 102400,
        moe=MoE(64, 6, 1408, shared_experts=2, dense_layers=1),
        mla=MLA(kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128),
    ),
    # Attention (with biases and sinks) alternates windowed and full from layer 0; router and
    # experts carry biases.
    "gpt-oss-20b": Architecture(
        24, 2880, 2880, 64, 8, 64, 201088, attention_bias=True, attention_sinks=True,
        moe=MoE(32, 4, 2880, router_bias=True, expert_bias=True),
        sliding_window=SlidingWindow(128, "SF"),
    ),
    # Multimodal wrappers: the decoder under text_config (Qwen2.5-VL: at the top level).
    # Mistral Small 3.1: sliding_window null; head_dim 128, not 5120 / 32.
    "mistral-small-3.1-24b": Architecture(40, 5120, 32768, 32, 8, 128, 131072),
    "qwen2.5-vl-7b": Architecture(28, 3584, 18944, 28, 4, 128, 152064, attention_bias=True),
    # Llama 4 Scout: the dense width is intermediate_size_mlp (no dense layer uses it); 16 routed
    # experts and one shared, 8192 wide; every 4th layer NoPE and full, the rest chunked by 8192.
    "llama-4-scout-17b-16e": Architecture(
        48, 5120, 16384, 40, 8, 128, 202048,
        moe=MoE(16, 1, 8192, shared_experts=1), sliding_window=SlidingWindow(8192, "SSSF"),
    ),
}  # fmt: skip


def test_every_fixture_has_an_expectation():
    assert set(CONFIGS) == set(EXPECTED)


@pytest.mark.parametrize("name", CONFIGS)
def test_fixture_imports_as_expected(name):
    assert architecture_from_hf_config(config(name)) == EXPECTED[name]


@pytest.mark.parametrize("name", CONFIGS)
def test_imported_count_matches_published(name):
    published = meta(name)["published"]
    arch = architecture_from_hf_config(config(name))
    count = count_parameters(arch)
    if "total" in published:  # published totals of multimodal models include the vision tower
        total = count.total + vision_parameters_from_hf_config(config(name))
        tol = 0.005 if arch.moe or arch.mla else 0.001
        assert abs(total - published["total"]) / published["total"] <= tol
    if "non_embedding" in published:
        limit = max(0.001 * published["non_embedding"], published["non_embedding_unit"])
        assert abs(count.non_embedding - published["non_embedding"]) <= limit


# Entries -------------------------------------------------------------------------------------


def test_entry_fields_for_a_dense_model():
    entry = model_entry_from_hf_config(config("llama-3.1-8b"), id="llama-3.1-8b")
    assert entry == {
        "id": "llama-3.1-8b",
        "name": "llama-3.1-8b",
        "layers": 32,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "attention_heads": 32,
        "kv_heads": 8,
        "head_dim": 128,
        "vocab_size": 128256,
        "tied_embeddings": False,
        "attention_bias": False,
    }


def test_entry_blocks_use_dataclass_field_names():
    entry = model_entry_from_hf_config(
        config("deepseek-v3"),
        id="deepseek-v3",
        name="DeepSeek-V3",
        source="https://huggingface.co/deepseek-ai/DeepSeek-V3",
        revision="abc123",
    )
    assert list(entry)[:4] == ["id", "name", "source", "revision"]
    assert entry["moe"] == {
        "experts": 256,
        "experts_per_token": 8,
        "expert_intermediate_size": 2048,
        "shared_experts": 1,
        "dense_layers": 3,
        "router_bias": True,
        "expert_bias": False,
    }
    assert entry["mla"] == {
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "q_lora_rank": 1536,
    }
    assert "sliding_window" not in entry


def test_entry_sliding_window_block():
    entry = model_entry_from_hf_config(config("gemma-2-9b"), id="gemma-2-9b")
    assert entry["sliding_window"] == {"window": 4096, "pattern": "SF"}


def test_entry_source_from_name_or_path():
    cfg = config("llama-3.1-8b") | {"_name_or_path": "meta-llama/Llama-3.1-8B"}
    entry = model_entry_from_hf_config(cfg, id="llama-3.1-8b")
    assert entry["source"] == "https://huggingface.co/meta-llama/Llama-3.1-8B"
    assert "revision" not in entry
    local = config("llama-3.1-8b") | {"_name_or_path": "/data/models/llama"}
    assert "source" not in model_entry_from_hf_config(local, id="x")


@pytest.mark.parametrize("name", CONFIGS)
def test_entry_round_trips_through_yaml(name):
    entry = model_entry_from_hf_config(config(name), id=name)
    text = entry_to_yaml(entry)
    assert yaml.safe_load(text) == entry
    assert list(yaml.safe_load(text)) == list(entry)
    assert architecture_from_entry(yaml.safe_load(text)) == EXPECTED[name]


def test_entry_to_yaml_as_list_item():
    entry = model_entry_from_hf_config(config("qwen3-8b"), id="qwen3-8b")
    text = entry_to_yaml(entry, list_item=True)
    assert text.startswith("- id: qwen3-8b\n")
    assert yaml.safe_load("models:\n" + text) == {"models": [entry]}


# Defaults and family rules ------------------------------------------------------------------


def test_kv_heads_default_to_attention_heads_and_head_dim_to_hidden_over_heads():
    cfg = config("llama-3.1-8b")
    del cfg["num_key_value_heads"]
    arch = architecture_from_hf_config(cfg)
    assert arch.kv_heads == 32 and arch.head_dim == 128


def test_null_head_dim_falls_back_to_hidden_over_heads():
    arch = architecture_from_hf_config(config("mistral-7b-v0.1") | {"head_dim": None})
    assert arch.head_dim == 4096 // 32


def test_explicit_head_dim_wins():
    # Gemma 3 1B: 4 heads × 256 = 1024, not hidden_size 1152.
    assert architecture_from_hf_config(config("gemma-3-1b-pt")).head_dim == 256


def test_missing_tie_word_embeddings_uses_family_default():
    cfg = config("llama-3.1-8b")
    del cfg["tie_word_embeddings"]
    assert architecture_from_hf_config(cfg).tied_embeddings is False  # LlamaConfig default


def test_wrapper_level_tie_word_embeddings_applies_to_text_decoder():
    cfg = config("gemma-3-27b-it") | {"tie_word_embeddings": False}
    assert architecture_from_hf_config(cfg).tied_embeddings is False


def test_qwen2_use_sliding_window_windows_layers_from_max_window_layers_on():
    cfg = config("qwen2.5-7b") | {"use_sliding_window": True, "max_window_layers": 20}
    arch = architecture_from_hf_config(cfg)
    assert arch.sliding_window == SlidingWindow(131072, "F" * 20 + "S" * 8)
    all_full = config("qwen2.5-7b") | {"use_sliding_window": True}  # max_window_layers 28
    assert architecture_from_hf_config(all_full).sliding_window is None


def test_layer_types_list_is_compressed():
    cfg = config("gemma-2-9b") | {"layer_types": ["sliding_attention", "full_attention"] * 21}
    assert architecture_from_hf_config(cfg).sliding_window == SlidingWindow(4096, "SF")
    full = config("qwen3-8b") | {"layer_types": ["full_attention"] * 36}
    assert architecture_from_hf_config(full).sliding_window is None


def test_underscored_gemma3_pattern_key_is_read():
    cfg = config("gemma-3-1b-pt")
    del cfg["sliding_window_pattern"]
    cfg["_sliding_window_pattern"] = 4
    assert architecture_from_hf_config(cfg).sliding_window == SlidingWindow(512, "SSSF")


def test_mistral_without_window_has_none():
    # Mistral 7B v0.2+ configs set sliding_window to null.
    cfg = config("mistral-7b-v0.1") | {"sliding_window": None}
    assert architecture_from_hf_config(cfg).sliding_window is None
    assert architecture_from_hf_config(config("mixtral-8x7b-v0.1")).sliding_window is None


# Refusals ------------------------------------------------------------------------------------


def problems_of(cfg) -> list[str]:
    with pytest.raises(UnsupportedConfig) as caught:
        architecture_from_hf_config(cfg)
    assert isinstance(caught.value, ValueError)
    return caught.value.problems


def test_unknown_model_type_is_refused_and_named():
    cfg = config("llama-3.1-8b") | {"model_type": "falcon", "architectures": ["FalconForCausalLM"]}
    (problem,) = problems_of(cfg)
    assert "'falcon'" in problem and "not supported" in problem


def test_unknown_architecture_class_is_refused():
    cfg = config("llama-3.1-8b") | {"architectures": ["LlamaForSequenceClassification"]}
    assert any("LlamaForSequenceClassification" in p for p in problems_of(cfg))


def test_missing_fields_are_all_listed():
    cfg = config("qwen3-8b")
    for key in ("hidden_size", "vocab_size", "num_hidden_layers"):
        del cfg[key]
    problems = problems_of(cfg)
    for key in ("hidden_size", "vocab_size", "num_hidden_layers"):
        assert any(f"`{key}`" in p and "missing" in p for p in problems), problems
    with pytest.raises(UnsupportedConfig, match="vocab_size"):
        architecture_from_hf_config(cfg)


def test_missing_field_in_text_config_names_its_path():
    cfg = copy.deepcopy(config("gemma-3-27b-it"))
    del cfg["text_config"]["hidden_size"]
    assert any("`text_config.hidden_size`" in p for p in problems_of(cfg))


def test_missing_model_type_is_refused():
    cfg = config("llama-3.1-8b")
    del cfg["model_type"]
    assert any("model_type" in p for p in problems_of(cfg))


@pytest.mark.parametrize(
    ("name", "change", "words"),
    [
        ("llama-3.1-8b", {"mlp_bias": True}, "mlp_bias"),
        ("llama-3.1-8b", {"hidden_size": "4096"}, "hidden_size"),
        ("llama-3.1-8b", {"num_hidden_layers": 0}, "num_hidden_layers"),
        ("llama-3.1-8b", {"tie_word_embeddings": "no"}, "tie_word_embeddings"),
        ("llama-3.1-8b", {"num_key_value_heads": 5}, "multiple of kv_heads"),
        ("qwen3-30b-a3b", {"decoder_sparse_step": 2}, "decoder_sparse_step"),
        ("qwen3-30b-a3b", {"mlp_only_layers": [0, 1]}, "mlp_only_layers"),
        ("qwen3-30b-a3b", {"num_experts_per_tok": 200}, "experts_per_token"),
        ("deepseek-v3", {"moe_layer_freq": 2}, "moe_layer_freq"),
        ("deepseek-v3", {"kv_lora_rank": None}, "kv_lora_rank"),
        ("deepseek-v3", {"n_routed_experts": None}, "n_routed_experts"),
        ("mixtral-8x7b-v0.1", {"num_local_experts": None}, "num_local_experts"),
        ("gemma-2-9b", {"sliding_window": None}, "sliding_window"),
        ("gemma-2-9b", {"layer_types": ["linear_attention"] * 42}, "linear_attention"),
        ("gemma-2-9b", {"layer_types": ["full_attention"] * 3}, "one type per layer"),
        ("mistral-7b-v0.1", {"head_dim": None, "hidden_size": 4100}, "head_dim"),
    ],
)
def test_unmodelled_or_malformed_settings_are_refused(name, change, words):
    problems = problems_of(config(name) | change)
    assert any(words in p for p in problems), problems


def test_unknown_multimodal_wrapper_is_refused():
    cfg = {
        "architectures": ["LlavaForConditionalGeneration"],
        "model_type": "llava",
        "text_config": {"model_type": "llama", "hidden_size": 4096},
    }
    problems = problems_of(cfg)
    assert any("'llava'" in p for p in problems)


def test_non_mapping_config_is_refused():
    problems_of(["not", "a", "config"])


def test_every_family_accepts_its_causal_lm_class():
    # Qwen2.5-VL's decoder has no causal-LM class of its own: only the multimodal one.
    for model_type, family in FAMILIES.items():
        heads = ("ForCausalLM", "ForConditionalGeneration")
        assert any(a.endswith(heads) for a in family.architectures), model_type


def test_load_hf_config_refuses_non_objects(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(UnsupportedConfig):
        load_hf_config(path)


# Block readers ----------------------------------------------------------------------------------


def test_block_readers_on_their_own():
    assert moe_from_hf_config(config("qwen3-30b-a3b"), "qwen3_moe") == MoE(128, 8, 768)
    assert moe_from_hf_config(config("qwen3-8b"), "qwen3") is None
    assert mla_from_hf_config(config("deepseek-v2-lite")).q_lora_rank is None
    window = sliding_window_from_hf_config(config("gemma-3-1b-pt"), "gemma3_text", 26)
    assert window == SlidingWindow(512, "SSSSSF")
    assert sliding_window_from_hf_config(config("llama-3.1-8b"), "llama", 32) is None


def test_block_readers_refuse_unknown_or_incomplete_input():
    with pytest.raises(UnsupportedConfig, match="'gpt2'"):
        moe_from_hf_config({}, "gpt2")
    with pytest.raises(UnsupportedConfig, match="n_routed_experts"):
        moe_from_hf_config({"num_experts_per_tok": 8, "moe_intermediate_size": 8}, "deepseek_v3")
    with pytest.raises(UnsupportedConfig, match="v_head_dim"):
        mla_from_hf_config({"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128})
    with pytest.raises(UnsupportedConfig, match="sliding_window"):
        sliding_window_from_hf_config({}, "gemma2", 42)


def test_a_quantised_checkpoint_is_pointed_at_its_precision():
    note = quantisation_note(config("gpt-oss-20b"))
    assert note is not None and "'mxfp4'" in note and "mxfp4 (routed experts only)" in note
    assert quantisation_note(config("llama-3.1-8b")) is None
    assert "precisions.yaml" in quantisation_note({"quantization_config": {"quant_method": "awq"}})


# Multimodal wrappers ----------------------------------------------------------------------------

# Each model's total worked out by hand from its config.json (h: hidden, i: intermediate, L:
# layers; "q,k,v,o" are the four attention projections), against the figure the model card
# publishes, within the stated relative tolerance.
#
# Mistral Small 3.1 24B. Decoder (Mistral, untied): per layer attention 5120·4096·2 +
# 5120·1024·2 = 52,428,800, MLP 3·5120·32768 = 503,316,480, norms 2·5120 = 10,240 →
# 555,755,520 × 40 = 22,230,220,800; + final norm 5,120 + embeddings and LM head 2·131072·5120 =
# 1,342,177,280 → 23,572,403,200.
# Pixtral (h 1024, i 4096, L 24, gated, no biases, RMSNorm): per layer 4·1024² + 3·1024·4096 +
# 2·1024 = 16,779,264 × 24 = 402,702,336; patch 3·14²·1024 = 602,112; ln_pre 1,024. Projector:
# norm 1,024 + merger (1024·2²)·1024 = 4,194,304 + linear_1 1024·5120 = 5,242,880 + linear_2
# 5120² = 26,214,400. Vision 438,958,080; total 24,011,361,280 (model card: 24B).
#
# Gemma 3 27B. Decoder: 27,008,663,808 (the text count; its q/k norms and the two extra norms
# per layer, 62·(2·5376 + 2·128) = 682,496, are not counted). SigLIP (h 1152, i 4304, L 27,
# biases, LayerNorm): per layer 4·1152² + 4·1152 + 2·1152·4304 + 4304 + 1152 + 4·1152 =
# 15,239,504 × 27 = 411,466,608; patch 3·14²·1152 + 1152 = 678,528; positions (896/14)² · 1152 =
# 4,718,592; post-LayerNorm 2,304 → 416,866,032 (the report's 417M). Projector 1152·5376 + 1152 =
# 6,194,304. Vision 423,060,336; total 27,431,724,144 (Hub: 27,432,406,640, i.e. 27.4B).
#
# Qwen2.5-VL 7B. Decoder: Qwen2.5-7B's 7,615,616,512. Vision (h 1280, i 3420, depth 32, biased
# q,k,v,o and gated MLP, RMSNorm): per layer 4·1280² + 4·1280 + 3·1280·3420 + 2·3420 + 1280 +
# 2·1280 = 19,702,200 × 32 = 630,470,400; patch 3·2·14²·1280 = 1,505,280. Merger: RMSNorm 1,280
# + 5120² + 5120 + 5120·3584 + 3584 = 44,574,464. Vision 676,550,144; total 8,292,166,656 (Hub:
# 8.29B).
#
# Llama 4 Scout 17B-16E. Decoder: per layer attention 5120·5120·2 + 5120·1024·2 = 62,914,560,
# experts (16 routed + 1 shared) 17·3·5120·8192 = 2,139,095,040, router 5120·16 = 81,920, norms
# 10,240 → 2,202,101,760 × 48 = 105,700,884,480; + final norm 5,120 + embeddings and LM head
# 2·202048·5120 = 2,068,971,520 → 107,769,861,120. Vision (h 1408, i 5632, L 34, biases,
# LayerNorm, plain MLP): per layer 4·1408² + 4·1408 + 2·1408·5632 + 5632 + 1408 + 4·1408 =
# 23,807,872 × 34 = 809,467,648; patch 3·14²·1408 = 827,904; positions ((336/14)² + 1)·1408 =
# 812,416; class embedding 1,408; pre/post LayerNorms 5,632; adapter 5632·4096 + 4096² =
# 39,845,888; projector 4096·5120 = 20,971,520. Vision 871,932,416; total 108,641,793,536
# (model card: 109B). Active: 48 × (62,914,560 + 2·125,829,120 + 81,920 + 10,240) + 5,120 +
# 2,068,971,520 = 17,172,894,720 (model card: 17B).
MULTIMODAL = [
    # (fixture, decoder, vision, published total, tolerance)
    ("mistral-small-3.1-24b", 23_572_403_200, 438_958_080, 24.0e9, 0.005),
    ("gemma-3-27b-it", 27_008_663_808, 423_060_336, 27.4e9, 0.005),
    ("qwen2.5-vl-7b", 7_615_616_512, 676_550_144, 8.29e9, 0.001),
    ("llama-4-scout-17b-16e", 107_769_861_120, 871_932_416, 109e9, 0.01),
]


@pytest.mark.parametrize(("name", "decoder", "vision", "published", "tol"), MULTIMODAL)
def test_multimodal_totals_include_the_vision_tower(name, decoder, vision, published, tol):
    cfg = config(name)
    assert count_parameters(architecture_from_hf_config(cfg)).total == decoder
    assert vision_parameters_from_hf_config(cfg) == vision
    assert decoder + vision == pytest.approx(published, rel=tol)
    entry = model_entry_from_hf_config(cfg, id=name)
    assert "parameters" not in entry  # derived: the decoder's count + encoder_parameters
    assert entry["encoder_parameters"] == vision
    assert list(entry).index("encoder_parameters") == list(entry).index("layers") - 1
    model = Model.model_validate(entry)
    assert model.parameter_count == decoder + vision  # the weights a server loads


def test_a_dense_vlm_runs_only_its_decoder_per_token():
    """Qwen2.5-VL 7B's decoder by hand from its config.json (L 28, h 3584, i 18944, 28 query and
    4 key/value heads of 128, q/k/v biases, untied vocabulary 152064): per layer attention
    3584·3584·2 + 3584·512·2 + biases 3584 + 2·512 = 29,364,736, gated MLP 3·3584·18944 =
    203,685,888, norms 2·3584 = 7,168 → 233,057,792 × 28 = 6,525,618,176; + final norm 3,584 +
    embeddings and LM head 2·152064·3584 = 1,089,994,752 → 7,615,616,512. The vision tower's
    676,550,144 are loaded (total 8,292,166,656) but no generated token runs them."""
    model = Model.model_validate(model_entry_from_hf_config(config("qwen2.5-vl-7b"), id="q"))
    assert model.encoder_parameters == 676_550_144
    assert model.parameter_count == 8_292_166_656
    assert model.active_parameter_count == 7_615_616_512
    # A published total includes the encoder: the decoder's share of it is what runs.
    given = Model.model_validate(
        model_entry_from_hf_config(config("qwen2.5-vl-7b"), id="q") | {"parameters": 8_290_000_000}
    )
    assert given.parameter_count == 8_290_000_000
    assert given.active_parameter_count == 8_290_000_000 - 676_550_144


def test_a_moe_vlm_runs_its_active_decoder_only():
    model = Model.model_validate(
        model_entry_from_hf_config(config("llama-4-scout-17b-16e"), id="scout")
    )
    assert model.parameter_count == 107_769_861_120 + 871_932_416  # decoder + vision
    assert model.active_parameter_count == 17_172_894_720  # worked out above


def test_encoder_parameters_must_be_part_of_a_given_total():
    entry = {"id": "m", "layers": 2, "kv_heads": 1, "head_dim": 8}
    with pytest.raises(ValueError, match="encoder_parameters .* must be less than"):
        Model.model_validate(entry | {"parameters": 1_000, "encoder_parameters": 1_000})
    assert Model.model_validate(entry | {"parameters": 1_000}).encoder_parameters == 0


def test_llama4_scout_active_parameters():
    count = count_parameters(architecture_from_hf_config(config("llama-4-scout-17b-16e")))
    assert count.active == 17_172_894_720  # worked out above
    assert count.active == pytest.approx(17e9, rel=0.02)  # model card: 17B activated


# KV cache per token at 2 bytes a value (BF16), from the configs by hand:
# Mistral Small 3.1: 40 layers · 2 (k, v) · 8 heads · 128 = 81,920 values = 163,840 B, all full.
# Gemma 3 27B: 62 layers, every 6th full (layers 5, 11, ..., 59: 10), 52 windowed by 1024;
#   per layer 2 · 16 · 128 = 4,096 values = 8,192 B → 81,920 B full, 425,984 B windowed.
# Qwen2.5-VL 7B: 28 · 2 · 4 · 128 = 28,672 values = 57,344 B (use_sliding_window false).
# Llama 4 Scout: per layer 2 · 8 · 128 = 2,048 values = 4,096 B; 12 NoPE full layers = 49,152 B,
#   36 chunked (8192) = 147,456 B.
KV_BYTES = [
    ("mistral-small-3.1-24b", 163_840, 0, 0),
    ("gemma-3-27b-it", 81_920, 425_984, 1024),
    ("qwen2.5-vl-7b", 57_344, 0, 0),
    ("llama-4-scout-17b-16e", 49_152, 147_456, 8192),
]


@pytest.mark.parametrize(("name", "full", "windowed", "window"), KV_BYTES)
def test_multimodal_decoder_kv_bytes_per_token(name, full, windowed, window):
    split = kv_cache_split(architecture_from_hf_config(config(name)))
    bf16 = 2
    assert (split.full_values_per_token * bf16, split.windowed_values_per_token * bf16) == (
        full,
        windowed,
    )
    assert split.window == window


def test_vit_formula_on_one_siglip_layer():
    # One SigLIP layer of h 2, i 3, no patch or positions: q,k,v,o 4·4 + 4·2 = 24; MLP 2·2·3 + 3
    # + 2 = 17; two LayerNorms 4·2 = 8 → 49.
    kwargs = {"attention_bias": True, "mlp_bias": True, "norm_bias": True, "patch_values": 0}
    assert vit_parameters(1, 2, 3, gated_mlp=False, **kwargs) == 49
    # Gated: MLP 3·2·3 + 2·3 + 2 = 26 → 58; a biased patch of 5 values adds 5·2 + 2 = 12.
    assert vit_parameters(1, 2, 3, gated_mlp=True, **kwargs | {"patch_values": 5},
                          patch_bias=True) == 58 + 12  # fmt: skip


def test_qwen2_5_vl_nested_text_config_imports_the_same():
    # transformers >= 4.53 writes the decoder under text_config as qwen2_5_vl_text, and the
    # vision channels as in_channels.
    flat = config("qwen2.5-vl-7b")
    vision = dict(flat.pop("vision_config"))
    vision["in_channels"] = vision.pop("in_chans")
    outer = {k: flat.pop(k) for k in ("architectures", "model_type", "tie_word_embeddings")}
    nested = outer | {
        "text_config": flat | {"model_type": "qwen2_5_vl_text"},
        "vision_config": vision,
    }
    assert architecture_from_hf_config(nested) == EXPECTED["qwen2.5-vl-7b"]
    assert vision_parameters_from_hf_config(nested) == 676_550_144


def test_llama4_interleaved_dense_layers_are_refused():
    # Maverick: interleave_moe_layer_step 2, MoE on layers 1, 3, 5, ...
    cfg = copy.deepcopy(config("llama-4-scout-17b-16e"))
    cfg["text_config"]["interleave_moe_layer_step"] = 2
    assert any("interleave_moe_layer_step" in p for p in problems_of(cfg))
    # A leading run of dense layers is a MoE block's dense_layers.
    cfg["text_config"]["moe_layers"] = list(range(2, 48))
    assert architecture_from_hf_config(cfg).moe.dense_layers == 2


def test_llama4_explicit_rope_layers_and_no_chunking():
    cfg = copy.deepcopy(config("llama-4-scout-17b-16e"))
    cfg["text_config"]["no_rope_layers"] = [1, 0] * 24
    assert architecture_from_hf_config(cfg).sliding_window == SlidingWindow(8192, "SF")
    cfg["text_config"]["attention_chunk_size"] = None
    assert architecture_from_hf_config(cfg).sliding_window is None
    cfg["text_config"]["layer_types"] = ["chunked_attention", "full_attention"] * 24
    cfg["text_config"]["attention_chunk_size"] = 4096
    assert architecture_from_hf_config(cfg).sliding_window == SlidingWindow(4096, "SF")


def test_text_only_configs_have_no_vision_parameters():
    assert vision_parameters_from_hf_config(config("gemma-3-1b-pt")) == 0
    entry = model_entry_from_hf_config(config("llama-3.1-8b"), id="x")
    assert "parameters" not in entry and "encoder_parameters" not in entry


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"vision_use_head": True}, "vision_use_head"),
        ({"hidden_size": None}, "`vision_config.hidden_size`"),
        ({"patch_size": "14"}, "patch_size"),
    ],
)
def test_incomplete_vision_config_is_refused(change, words):
    cfg = copy.deepcopy(config("gemma-3-27b-it"))
    cfg["vision_config"] |= change
    with pytest.raises(UnsupportedConfig, match=words):
        vision_parameters_from_hf_config(cfg)


def test_unknown_wrapper_names_the_known_ones():
    cfg = {
        "architectures": ["LlavaForConditionalGeneration"],
        "model_type": "llava",
        "text_config": {"model_type": "llama", "hidden_size": 4096},
        "vision_config": {"model_type": "clip_vision_model"},
    }
    (problem,) = [p for p in problems_of(cfg) if "'llava'" in p]
    for known in ("gemma3", "llama4", "mistral3", "qwen2_5_vl"):
        assert known in problem
    with pytest.raises(UnsupportedConfig, match="vision tower of model_type 'llava'"):
        vision_parameters_from_hf_config(cfg)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        # 32 query heads cannot share 5 KV heads: the record's grouped-query rule refuses it
        ({"num_key_value_heads": 5}, "attention_heads (32) must be a multiple of kv_heads (5)"),
        ({"vocab_size": 10**16}, "`vocab_size` must be a whole number from 1 to"),
    ],
)
def test_an_imported_entry_is_one_check_accepts(change: dict, words: str) -> None:
    """What import-hf would print is validated by the catalog's own Model record, and a fault
    is told against the config.json key it came from."""
    cfg = config("llama-3.1-8b") | change
    with pytest.raises(UnsupportedConfig) as caught:
        model_entry_from_hf_config(cfg, "llama")
    assert words in str(caught.value)


def test_an_imported_id_the_catalog_refuses_is_refused() -> None:
    with pytest.raises(UnsupportedConfig) as caught:
        model_entry_from_hf_config(config("llama-3.1-8b"), "Bad ID")
    assert "the id (--id, else the config's name): must match the pattern" in str(caught.value)
    assert "Input should" not in str(caught.value)


@pytest.mark.parametrize("name", CONFIGS)
def test_every_fixture_imports_as_an_entry_check_accepts(name: str) -> None:
    Model.model_validate(model_entry_from_hf_config(config(name), "m"))
