"""The seed's numbers, each computed by hand in the seed text, from the formula functions."""

import pytest

from planner.catalog import load_catalog
from planner.latency import compute_bound_s, decode_flops_per_token, weight_read_s
from planner.memory import (
    fits,
    kv_budget_bytes,
    kv_bytes_at_concurrency,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    max_sequences,
    tokens_per_sequence,
    weight_bytes,
)
from planner.sweep import evaluate
from planner.units import GIB, KIB, MIB

GiB, MiB, KiB = GIB, MIB, KIB


def test_weight_payload_seed_paragraph_3():
    payload = weight_bytes(7_000_000_000, 2)
    assert payload == 14_000_000_000
    assert round(payload / GiB, 2) == 13.04


def test_kv_per_token_seed_paragraph_6():
    # 2 (keys and values) × 32 layers × 8 KV heads × 128 × 2 bytes = 131,072 B = 128 KiB
    assert kv_bytes_per_token(32, 8, 128, 2) == 131_072 == 128 * KiB


def test_kv_uses_kv_heads_not_query_heads():
    # With 32 query heads sharing 8 KV heads, counting query heads would be 4× too large.
    assert kv_bytes_per_token(32, 32, 128, 2) == 4 * kv_bytes_per_token(32, 8, 128, 2)


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
    assert kv_bytes_per_sequence(131_072, tokens) == per_sequence


def test_sixteen_sequences_need_8_gib():
    assert kv_bytes_at_concurrency(16, 512 * MiB) == 8 * GiB


def test_budget_and_concurrency_seed_paragraph_9():
    budget = kv_budget_bytes(16 * GiB, 4 * GiB, 2 * GiB, 2 * GiB)
    assert budget == 8 * GiB
    assert max_sequences(budget, 512 * MiB) == 16
    assert fits(16, 16)
    # With 1,024 promised output tokens on top of a 4,096-token prompt: 8 GiB / 640 MiB = 12.8
    assert max_sequences(budget, 640 * MiB) == 12
    assert not fits(16, 12)


def test_max_sequences_is_zero_when_weights_do_not_fit():
    budget = kv_budget_bytes(16 * GiB, 20 * GiB, 2 * GiB, 2 * GiB)
    assert budget == -8 * GiB
    assert max_sequences(budget, 512 * MiB) == 0


def test_weight_read_bound_seed_paragraph_7():
    # 14 GB at 700 GB/s = 0.02 s = 20 ms
    assert weight_read_s(14e9, 700e9, 1.0) == pytest.approx(0.020, rel=1e-12)
    # at 80 % achieved bandwidth the bound is 25 ms
    assert weight_read_s(14e9, 700e9, 0.8) == pytest.approx(0.025, rel=1e-12)


def test_compute_bound():
    # 2 × 7e9 FLOP per token at 100 TFLOPS × 50 % = 0.28 ms
    flops = decode_flops_per_token(7e9)
    assert flops == 14e9
    assert compute_bound_s(flops, 100e12, 0.5) == pytest.approx(0.28e-3, rel=1e-12)


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
    longer = table.loc[("invented-4gib", "seed-4k-prompt-1k-out")]
    assert longer["tokens_per_sequence"] == 5120
    assert longer["max_sequences"] == 12
    assert bool(longer["fits"]) is False
    assert longer["fit_reason"] == "concurrency exceeds KV capacity"
    big = table.loc[("invented-7b", "seed-4k")]
    assert big["weight_bytes"] == 14_000_000_000
    assert big["weight_read_s"] == pytest.approx(0.02, rel=1e-12)
    assert big["weight_read_ms"] == pytest.approx(20, rel=1e-12)
    assert big["weight_gib"] == pytest.approx(13.0385, abs=1e-4)
    # 16 GiB − 13.04 GiB − 4 GiB is negative: loads, but not one sequence fits
    assert big["max_sequences"] == 0
    assert big["fit_reason"] == "no room for one maximum-length sequence"


@pytest.mark.parametrize(
    ("model", "published"),
    [
        # totals from the Hugging Face model cards / safetensors metadata
        ("llama-3.1-8b", 8_030_261_248),
        ("llama-3.1-70b", 70_553_706_496),
        ("mistral-7b-v0.1", 7_241_732_096),
        ("qwen2.5-7b", 7_615_616_512),
    ],
)
def test_parameters_derived_from_architecture_match_published(model, published, tmp_path):
    from conftest import SHIPPED

    derived = load_catalog(SHIPPED).get("models", model).parameter_count
    assert derived == pytest.approx(published, rel=1e-3)
