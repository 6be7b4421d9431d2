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
)
from planner.model.architecture import MLA, Architecture, MoE, SlidingWindow, count_parameters

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
    if "total" in published:
        tol = 0.005 if arch.moe or arch.mla else 0.001
        assert abs(count.total - published["total"]) / published["total"] <= tol
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
    for model_type, family in FAMILIES.items():
        assert any(a.endswith("ForCausalLM") for a in family.architectures), model_type


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
