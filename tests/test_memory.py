"""Memory formulas against numbers worked out by hand: the seed's, and public model cards'."""

import numpy as np
import pytest

from planner.catalog import load_catalog
from planner.model.engine import engine_accepts_requests, engine_starts
from planner.model.memory import (
    allocated_tokens_per_sequence,
    fit_reason,
    fits,
    full_attention_layers,
    kv_budget_bytes,
    kv_bytes_at_concurrency,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    kv_bytes_per_token_windowed,
    kv_heads_per_device,
    kv_values_per_token_per_layer,
    max_sequences,
    replica_fits,
    tokens_per_sequence,
    weight_bytes,
    weight_bytes_per_device,
    weight_bytes_per_param,
    windowed_tokens_per_sequence,
)
from planner.model.units import GIB, KIB, MIB
from planner.plan.sweep import evaluate

GiB, MiB, KiB = GIB, MIB, KIB


def seed_kv_per_token(layers, kv_heads, head_dim, bytes_per_value, tp=1, mla=0, windowed=0):
    heads = kv_heads_per_device(kv_heads, tp)
    per_layer = kv_values_per_token_per_layer(mla, heads, head_dim)
    return kv_bytes_per_token(
        full_attention_layers(layers, windowed, 0), per_layer, bytes_per_value
    )


def test_weight_payload_seed_paragraph_3():
    bpp = weight_bytes_per_param(16, 0, 16)
    payload = weight_bytes(7_000_000_000, 0, 0, bpp, bpp, 16)
    assert payload == 14_000_000_000
    assert round(payload / GiB, 2) == 13.04


@pytest.mark.parametrize(
    ("bits", "group", "scale", "expected"),
    [
        (16, 0, 16, 2.0),  # BF16
        (8, 0, 16, 1.0),  # FP8
        (4, 128, 16, 4.125 / 8),  # 4 + 16/128 = 4.125 bits
        (4, 64, 32, 4.5 / 8),  # 4 + 32/64
    ],
)
def test_weight_bytes_per_param_with_group_scales(bits, group, scale, expected):
    assert weight_bytes_per_param(bits, group, scale) == expected


def test_embeddings_kept_at_higher_precision():
    # Llama 3.1 8B at 4.125 bits with embeddings + LM head (2 × 128,256 × 4,096) at 16 bits
    emb = 2 * 128_256 * 4_096
    total = 8_030_261_248
    expected = (total - emb) * 4.125 / 8 + emb * 2
    assert weight_bytes(total, emb, 0, 4.125 / 8, 4.125 / 8, 16) == pytest.approx(
        expected, rel=1e-15
    )


def test_kv_per_token_seed_paragraph_6():
    # 2 (keys and values) × 32 layers × 8 KV heads × 128 × 2 bytes = 131,072 B = 128 KiB
    assert seed_kv_per_token(32, 8, 128, 2) == 131_072 == 128 * KiB


@pytest.mark.parametrize(
    ("case", "kv", "expected"),
    [
        # GQA, Llama 3.1 70B in BF16: 2 × 80 × 8 × 128 × 2 = 327,680 B
        ("gqa", lambda: seed_kv_per_token(80, 8, 128, 2), 327_680),
        # the same with an FP8 cache: 2 × 80 × 8 × 128 × 1 = 163,840 B
        ("fp8 cache", lambda: seed_kv_per_token(80, 8, 128, 1), 163_840),
        # TP 4 splits 8 KV heads into 2 per device: 2 × 80 × 2 × 128 × 2 = 81,920 B
        ("tp4", lambda: seed_kv_per_token(80, 8, 128, 2, tp=4), 81_920),
        # TP 8 on Qwen2.5 7B's 4 KV heads: one head per device, replicated: 2 × 28 × 1 × 128 × 2
        ("tp8 replicated", lambda: seed_kv_per_token(28, 4, 128, 2, tp=8), 14_336),
        # MLA, DeepSeek-V3: 61 layers × (512 + 64) values × 2 B = 70,272 B, no head factor
        ("mla", lambda: seed_kv_per_token(61, 128, 192, 2, mla=512 + 64), 70_272),
        # MLA is not split by TP: the latent is replicated on every device
        ("mla tp8", lambda: seed_kv_per_token(61, 128, 192, 2, tp=8, mla=576), 70_272),
        # Gemma 2 9B, alternating window: 21 full layers × 2 × 8 × 256 × 2 B = 172,032 B
        ("sliding full part", lambda: seed_kv_per_token(42, 8, 256, 2, windowed=21), 172_032),
    ],
)
def test_kv_bytes_per_token_by_hand(case, kv, expected):
    assert kv() == expected


def test_kv_uses_kv_heads_not_query_heads():
    # With 32 query heads sharing 8 KV heads, counting query heads would be 4× too large.
    assert seed_kv_per_token(32, 32, 128, 2) == 4 * seed_kv_per_token(32, 8, 128, 2)


def test_sliding_window_sequence_by_hand():
    # Gemma 2 9B at 8,192 tokens: 21 full layers cache all 8,192 tokens, 21 windowed layers
    # cache the 4,096-token window; 8,192 × 172,032 + 4,096 × 172,032 = 2,113,929,216 B
    per_layer = kv_values_per_token_per_layer(0, 8, 256)
    full = kv_bytes_per_token(21, per_layer, 2)
    windowed = kv_bytes_per_token_windowed(21, per_layer, 2)
    window_tokens = windowed_tokens_per_sequence(8192, 4096, 1)
    assert window_tokens == 4096
    assert kv_bytes_per_sequence(8192, full, window_tokens, windowed, 0) == 2_113_929_216


@pytest.mark.parametrize(
    ("tokens", "block", "allocated"),
    [(4096, 16, 4096), (4097, 16, 4112), (5000, 16, 5008), (5000, 1, 5000), (1, 16, 16)],
)
def test_paged_allocation_rounds_up_to_blocks(tokens, block, allocated):
    assert allocated_tokens_per_sequence(tokens, block) == allocated


@pytest.mark.parametrize(
    ("prompt", "output", "tokens", "per_sequence"),
    [
        (4096, 0, 4096, 512 * MiB),  # seed ¶6: a 4,096-token sequence needs 512 MiB
        (3072, 1024, 4096, 512 * MiB),
        (4096, 1024, 5120, 640 * MiB),  # seed, last paragraph: prompt + maximum output
    ],
)
def test_tokens_and_kv_per_sequence(prompt, output, tokens, per_sequence):
    assert tokens_per_sequence(prompt, output) == tokens
    assert kv_bytes_per_sequence(tokens, 131_072, 0, 0, 0) == per_sequence


def test_sixteen_sequences_need_8_gib():
    assert kv_bytes_at_concurrency(16, 512 * MiB) == 8 * GiB


def test_budget_and_concurrency_seed_paragraph_9():
    budget = kv_budget_bytes(16 * GiB, 4 * GiB, 2 * GiB, 2 * GiB, 0, np.nan)
    assert budget == 8 * GiB
    assert max_sequences(budget, 512 * MiB) == 16
    assert fits(16, 16, True)
    # With 1,024 promised output tokens on top of a 4,096-token prompt: 8 GiB / 640 MiB = 12.8
    assert max_sequences(budget, 640 * MiB) == 12
    assert not fits(16, 12, True)


def test_max_sequences_is_zero_when_weights_do_not_fit():
    budget = kv_budget_bytes(16 * GiB, 20 * GiB, 2 * GiB, 2 * GiB, 0, np.nan)
    assert budget == -8 * GiB
    assert max_sequences(budget, 512 * MiB) == 0


def test_tensor_parallel_fits_what_one_device_cannot():
    # Llama 3.1 70B in BF16: 70,553,706,496 × 2 B = 141,107,412,992 B (131.4 GiB) of weights.
    weights = weight_bytes(70_553_706_496, 0, 0, 2.0, 2.0, 16)
    assert weights == 141_107_412_992
    per_seq = 4096 * seed_kv_per_token(80, 8, 128, 2)  # 4,096 tokens × 320 KiB = 1.25 GiB
    assert per_seq == 1.25 * GiB
    one = kv_budget_bytes(
        80 * GiB, weight_bytes_per_device(weights, 1), 3 * GiB, 4 * GiB, 0, np.nan
    )
    assert max_sequences(one, per_seq) == 0
    # TP 2: 70,553,706,496 B per device; 80 GiB − that − 7 GiB = 7,829,446,656 B of cache; each
    # device holds 4 of the 8 KV heads, so a 4,096-token sequence takes 0.625 GiB per device:
    # ⌊7,829,446,656 ÷ 671,088,640⌋ = ⌊11.67⌋ = 11 sequences.
    two = kv_budget_bytes(
        80 * GiB, weight_bytes_per_device(weights, 2), 3 * GiB, 4 * GiB, 0, np.nan
    )
    assert two == 7_829_446_656
    per_seq_two = 4096 * seed_kv_per_token(80, 8, 128, 2, tp=2)
    assert per_seq_two == 671_088_640
    assert max_sequences(two, per_seq_two) == 11
    # TP 4: 35,276,853,248 B weights per device, 2 heads per device (0.3125 GiB per sequence):
    # ⌊(85,899,345,920 − 35,276,853,248 − 7,516,192,768) ÷ 335,544,320⌋ = ⌊128.46…⌋ = 128
    four = kv_budget_bytes(
        80 * GiB, weight_bytes_per_device(weights, 4), 3 * GiB, 4 * GiB, 0, np.nan
    )
    assert max_sequences(four, 4096 * seed_kv_per_token(80, 8, 128, 2, tp=4)) == 128


def test_seed_catalog_end_to_end(seed_dir):
    table = evaluate(load_catalog(seed_dir)).table.set_index(["model", "workload"])
    row = table.loc[("invented-4gib", "seed-4k")]
    assert row["weight_bytes"] == 4 * GiB
    assert row["kv_bytes_per_token"] == 131_072
    assert row["tokens_per_sequence"] == 4096
    assert row["kv_bytes_per_sequence"] == 512 * MiB
    assert row["kv_budget_bytes"] == 8 * GiB
    assert row["max_sequences"] == 16
    assert row["kv_bytes_at_concurrency"] == 8 * GiB
    assert bool(row["fits"]) is True
    assert row["replicas_needed"] == 1
    longer = table.loc[("invented-4gib", "seed-4k-prompt-1k-out")]
    assert longer["tokens_per_sequence"] == 5120
    assert longer["max_sequences"] == 12
    assert bool(longer["fits"]) is False
    assert longer["fit_reason"] == "concurrency exceeds KV capacity of one replica"
    assert longer["replicas_needed"] == 2  # ⌈16 users ÷ 12 per replica⌉
    big = table.loc[("invented-7b", "seed-4k")]
    assert big["weight_bytes"] == 14_000_000_000
    assert big["weight_read_s"] == pytest.approx(0.02, rel=1e-12)
    assert big["weight_read_ms"] == pytest.approx(20, rel=1e-12)
    assert big["weight_gib"] == pytest.approx(13.0385, abs=1e-4)
    # 16 GiB − 13.04 GiB − 4 GiB is negative: loads, but not one sequence fits
    assert big["max_sequences"] == 0
    assert big["fit_reason"] == "no room for one maximum-length sequence"
    assert np.isnan(big["replicas_needed"])


@pytest.mark.parametrize(
    ("model", "published"),
    [
        # totals from the Hugging Face model cards / safetensors metadata
        ("llama-3.1-8b", 8_030_261_248),
        ("llama-3.1-70b", 70_553_706_496),
        ("mistral-7b-v0.1", 7_241_732_096),
        ("qwen2.5-7b", 7_615_616_512),
        ("mixtral-8x7b", 46_702_792_704),
        ("deepseek-v3", 671_000_000_000),
    ],
)
def test_shipped_models_parameters_match_published(model, published):
    from conftest import SHIPPED

    derived = load_catalog(SHIPPED).get("models", model).parameter_count
    assert derived == pytest.approx(published, rel=1e-3)


@pytest.mark.parametrize(
    ("modelled", "pool_tokens", "max_model_len", "request_tokens", "starts", "accepts", "reason"),
    [
        # no engine profile: the planner's budget decides, whatever the pool
        (0, 0, 5_120, 5_120, True, True, "fits"),
        # an architecture that leaves the engine's pool unknown: the planner's budget decides
        (1, float("nan"), 5_120, 5_120, True, True, "fits"),
        # the seed's 5,120-token requests in a 100-token max_model_len: refused by the engine
        (1, 131_072, 100, 5_120, True, False, "longer than the engine's max_model_len"),
        # a max_model_len of 10^9 tokens needs 10^9 tokens of pool: the engine would not start
        (1, 131_072, 10**9, 5_120, False, True, "would not start"),
        # exactly one request of max_model_len: it starts
        (1, 8_192, 8_192, 5_120, True, True, "fits"),
        (1, 8_176, 8_192, 5_120, False, True, "would not start"),
    ],
)
def test_engine_limits_decide_whether_a_replica_serves(
    modelled, pool_tokens, max_model_len, request_tokens, starts, accepts, reason
):
    """vLLM refuses to start when its pool cannot hold one request of max_model_len, and
    refuses requests longer than max_model_len; either way no replica serves the workload."""
    assert engine_starts(modelled, pool_tokens, max_model_len) == starts
    assert engine_accepts_requests(max_model_len, request_tokens) == accepts
    one_replica = replica_fits(16, starts, accepts)
    assert one_replica == (starts and accepts)
    assert fits(16, 16, one_replica) == (starts and accepts)
    why = fit_reason(4 * GiB, 16 * GiB, 16, accepts, starts, fits(16, 16, one_replica))
    assert reason in why
