"""Speculative decoding in closed form, each figure worked out by hand: the tokens a verifying
step emits, what the step costs, the batch where it turns into a loss, the proposer's memory,
the catalog's errors, and planner's with/without ratio against a public measurement."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from planner.catalog import Catalog, CatalogError, Workload, load_catalog
from planner.catalog.plan_records import Engine, Speculative
from planner.model.latency import decode_compute_s, decode_memory_s, itl_s
from planner.model.memory import kv_budget_bytes, kv_bytes_per_sequence, max_sequences
from planner.model.speculative import (
    acceptance_rate,
    draft_flops_per_token,
    draft_kv_bytes_per_token,
    draft_read_bytes_per_forward,
    draft_s,
    draft_weight_bytes_per_device,
    speculative_speedup,
    speculative_tokens_per_step,
    verify_kv_write_bytes_per_sequence_step,
    verify_tokens_per_sequence,
)
from planner.plan import sweep
from planner.plan.tables import input_tables
from planner.resources import shipped_catalogs

FIXTURE = Path(__file__).parent / "fixtures" / "benchmarks" / "speculative-eagle-llama-3.1-8b.md"


@pytest.mark.parametrize(
    ("k", "alpha", "tokens"),
    [
        (3, 0.7, 2.533),  # 1 + 0.7 + 0.49 + 0.343
        (1, 0.85, 1.85),  # DeepSeek-V3's MTP, one proposal: 1 + 0.85
        (2, 0.5, 1.75),  # 1 + 0.5 + 0.25
        (4, 0.6, 2.3056),  # 1 + 0.6 + 0.36 + 0.216 + 0.1296
        (3, 1.0, 4.0),  # every proposal accepted: k + 1
        (3, 0.0, 1.0),  # none accepted: the target's own token
        (0, 0.7, 1.0),  # no speculation
        (0, 0.0, 1.0),
    ],
)
def test_tokens_per_step(k: int, alpha: float, tokens: float) -> None:
    assert speculative_tokens_per_step(k, alpha) == pytest.approx(tokens, rel=1e-12)


def test_no_speculation_is_one_token_exactly() -> None:
    """(1 − α) ÷ (1 − α) is 1 to the last bit, so the plain step's figures stay as they were."""
    for alpha in (0.0, 0.3, 0.63, 0.85, 0.999):
        assert speculative_tokens_per_step(0, alpha) == 1.0
    assert verify_tokens_per_sequence(0) == 1


def test_a_workload_figure_overrides_the_profile() -> None:
    assert acceptance_rate(0.9, 0.63) == 0.9
    assert acceptance_rate(math.nan, 0.63) == 0.63


# A worked step ---------------------------------------------------------------------------------
# The seed's 7B: 14e9 B of weights, 2 × 7e9 = 14e9 FLOP a token, 131,072 B of cache a token
# (32 layers × 2 × 8 heads × 128 × 2 B), on 700 GB/s and 50 TFLOPS achieved, each sequence at
# 1,000 cached tokens (131,072,000 B read a step). No overheads, no padding, TP 1.
# Its EAGLE-style head: 250e6 parameters in BF16 (500,000,000 B) and the target's LM head of
# 32,000 × 4,096 = 131,072,000 parameters (262,144,000 B) read each forward: 762,144,000 B and
# 2 × (250e6 + 131,072,000) = 762,144,000 FLOP; it caches one layer, 2 × 8 × 128 × 2 B =
# 4,096 B a token. k = 3 proposals, α = 0.7: 2.533 tokens a step.
W, BW, COMPUTE, KV, CONTEXT = 14e9, 700e9, 50e12, 131_072, 1000
FLOPS, K, ALPHA, TOKENS = 14e9, 3, 0.7, 2.533
HEAD_BYTES, HEAD_FLOPS, HEAD_KV = 762_144_000, 762_144_000, 4096


def _step(batch: int, k: int) -> tuple[float, float]:
    """(plain ITL, speculative ITL) at ``batch`` from the formula layer's functions."""
    cache = CONTEXT * KV
    plain = itl_s(
        decode_memory_s(W, batch, cache, BW, 1.0),
        decode_compute_s(FLOPS, batch, COMPUTE, 0.0, cache, BW, 1.0),
        0.0, batch, 0.0, 0.0,
    )  # fmt: skip
    writes = verify_kv_write_bytes_per_sequence_step(k, KV)
    verify = verify_tokens_per_sequence(k)
    proposer = draft_s(k, HEAD_BYTES, batch, CONTEXT, HEAD_KV, HEAD_FLOPS, COMPUTE, BW, 1.0)
    speculative = itl_s(
        decode_memory_s(W, batch, cache, BW, 1.0, writes),
        decode_compute_s(FLOPS, batch, COMPUTE, 0.0, cache, BW, 1.0, verify),
        0.0, batch, 0.0, 0.0, proposer, verify, speculative_tokens_per_step(k, ALPHA),
    )  # fmt: skip
    return plain, speculative


def test_the_head_reads_its_weights_and_the_shared_lm_head() -> None:
    own = draft_weight_bytes_per_device(250e6, 2.0, 1)
    assert own == 500_000_000
    assert draft_read_bytes_per_forward(own, 1, 32_000, 4096, 16, 1) == HEAD_BYTES
    assert draft_flops_per_token(250e6, 1, 32_000, 4096) == HEAD_FLOPS
    # a draft model has its own head: nothing shared; an unknown vocabulary reads none
    assert draft_read_bytes_per_forward(own, 0, 32_000, 4096, 16, 1) == own
    assert draft_read_bytes_per_forward(own, 1, math.nan, 4096, 16, 1) == own
    assert draft_kv_bytes_per_token(2 * 8 * 128, 2, 1) == HEAD_KV


def test_a_speculative_step_at_batch_one() -> None:
    # verify: memory (14e9 + 131,072,000 + 3 × 131,072 written) ÷ 700e9 = 14,131,465,216 ÷ 700e9
    # = 20.187807 ms; arithmetic 4 × 14e9 ÷ 50e12 = 1.12 ms + cache 0.187246 ms: memory-bound.
    # head: 3 × (762,144,000 + 1,000 × 4,096) ÷ 700e9 = 3 × 1.094629 ms = 3.283886 ms
    # (its arithmetic, 762,144,000 ÷ 50e12 = 0.015 ms, hides under the read).
    # step 23.471693 ms, 2.533 tokens: ITL 9.266361 ms; plain (14e9 + 131,072,000) ÷ 700e9
    # = 20.187246 ms: 2.1786 × faster.
    assert draft_s(K, HEAD_BYTES, 1, CONTEXT, HEAD_KV, HEAD_FLOPS, COMPUTE, BW, 1.0) == (
        pytest.approx(3 * 766_240_000 / 700e9, rel=1e-12)
    )
    plain, speculative = _step(1, K)
    assert plain == pytest.approx(14_131_072_000 / 700e9, rel=1e-12)
    step = 14_131_465_216 / 700e9 + 3 * 766_240_000 / 700e9
    assert speculative == pytest.approx(step / 2.533, rel=1e-12)
    assert speculative_speedup(plain, speculative) == pytest.approx(2.17855, rel=1e-5)


@pytest.mark.parametrize(
    ("batch", "pays"),
    [(1, True), (16, True), (55, True), (56, False), (64, False)],
)
def test_it_turns_into_a_loss_at_a_batch_worked_by_hand(batch: int, pays: bool) -> None:
    """From B ≈ 18 the verifying step is bound by its 4 tokens' arithmetic while the plain step
    (up to B ≈ 71) is bound by its weight read:
    speculative step = B × (4 × 14e9 ÷ 50e12 + 131,072,000 ÷ 700e9 + 3 × 4,096,000 ÷ 700e9)
    + 3 × 762,144,000 ÷ 700e9 = 1.3248043e-3 × B + 3.266331e-3 s;
    plain step = (14e9 + B × 131,072,000) ÷ 700e9 = 0.02 + 1.8725e-4 × B s.
    Even where the first is 2.533 × the second: B = (0.05066 − 0.003266331) ÷ (1.3248043e-3
    − 2.533 × 1.8725e-4) = 0.04739367 ÷ 8.505e-4 = 55.7; a loss from 56 sequences."""
    plain, speculative = _step(batch, K)
    assert (speculative_speedup(plain, speculative) > 1) is pays


def test_without_speculation_the_step_is_the_plain_step_bit_for_bit() -> None:
    for batch in (1, 7, 64):
        plain, speculative = _step(batch, 0)
        assert speculative == plain


# Memory with a draft model ---------------------------------------------------------------------


def test_a_draft_model_takes_its_weights_and_cache_from_the_budget() -> None:
    """The seed's ¶9 device: 16 GiB less 4 GiB of weights, 2 GiB runtime and 2 GiB reserve
    leaves 8 GiB = 8,589,934,592 B; a 1e9-parameter BF16 draft takes 2e9 B more:
    6,589,934,592 B. Each 4,096-token sequence caches 131,072 B a token for the target
    (512 MiB) and, for a draft of 16 layers × 2 × 8 heads × 64 × 2 B = 32,768 B a token,
    128 MiB more: 671,088,640 B. ⌊6,589,934,592 ÷ 671,088,640⌋ = ⌊9.82⌋ = 9 sequences, where
    16 fit without it."""
    gib = 1024**3
    draft = draft_weight_bytes_per_device(1e9, 2.0, 1)
    assert draft == 2e9
    budget = kv_budget_bytes(16 * gib, 4 * gib, 2 * gib, 2 * gib, 0, math.nan, draft)
    assert budget == 6_589_934_592
    per_token = draft_kv_bytes_per_token(16 * 2 * 8 * 64, 2, 1)
    assert per_token == 32_768
    per_sequence = kv_bytes_per_sequence(4096, 131_072, 0, 0, 0, per_token)
    assert per_sequence == 671_088_640
    assert max_sequences(budget, per_sequence) == 9
    plain_budget = kv_budget_bytes(16 * gib, 4 * gib, 2 * gib, 2 * gib, 0, math.nan)
    assert max_sequences(plain_budget, kv_bytes_per_sequence(4096, 131_072, 0, 0, 0)) == 16


DRAFT_MODEL = """  - id: invented-1b
    name: Invented 1B draft
    parameters: 1000000000
    layers: 16
    kv_heads: 8
    head_dim: 64
    attention_heads: 32
    hidden_size: 2048
"""


def _with_engine(folder: Path, speculative: str) -> Path:
    """The seed copy with a vLLM profile carrying ``speculative`` (YAML under it) and the
    invented draft model."""
    models = folder / "models.yaml"
    models.write_text(models.read_text() + DRAFT_MODEL)
    assumptions = folder / "assumptions.yaml"
    assumptions.write_text(
        assumptions.read_text()
        + "  engine:\n    name: vllm\n    version: '0.10.1'\n    speculative:\n"
        + "".join(f"      {line}\n" for line in speculative.strip().splitlines())
    )
    return folder


def test_a_draft_model_reaches_the_plan(seed_copy: Path) -> None:
    """The Models sheet carries the draft's size under the profile, only for the targets it
    names; the plan's cache per sequence grows by the draft's and its pool shrinks by the
    draft's 2e9 B of weights; ITL divides the step by the tokens it emits."""
    folder = _with_engine(
        seed_copy,
        "method: draft\ndraft_model: invented-1b\nproposed_tokens: 3\nacceptance_rate: 0.7\n"
        "models: [invented-4gib]\nacceptance_by_workload: {seed-4k: 0.5}",
    )
    catalog = load_catalog(folder)
    models = input_tables(catalog).sheets["Models"].set_index("id")
    assert models.loc["invented-4gib", "speculative_tokens"] == 3
    assert models.loc["invented-4gib", "draft_parameters"] == 1e9
    assert models.loc["invented-4gib", "draft_kv_values_per_token"] == 16 * 2 * 8 * 64
    assert models.loc["invented-1b", "speculative_tokens"] == 0  # not a target
    plain = replace(
        catalog, assumptions=catalog.assumptions.model_copy(update={"engine": Engine(
            name="vllm", version="0.10.1")})
    )  # fmt: skip
    for workload, tokens in (("seed-4k", 1.875), ("seed-4k-prompt-1k-out", 2.533)):
        # α 0.5 by the workload's own figure: 1 + 0.5 + 0.25 + 0.125; else the profile's 0.7
        row = sweep.evaluate_subset(catalog, "seed-16gib", "invented-4gib", "bf16", workload)
        base = sweep.evaluate_subset(plain, "seed-16gib", "invented-4gib", "bf16", workload)
        got, was = row.table.iloc[0], base.table.iloc[0]
        assert got["speculative_tokens_per_step"] == pytest.approx(tokens, rel=1e-12)
        assert got["kv_budget_bytes"] == pytest.approx(was["kv_budget_bytes"] - 2e9, rel=1e-12)
        # 131,072 + 32,768 B a token over the workload's tokens (kv_block_tokens 1)
        tokens_each = was["kv_bytes_per_sequence"] / 131_072
        assert got["kv_bytes_per_sequence"] == pytest.approx(tokens_each * 163_840, rel=1e-12)
        assert was["speculative_speedup"] == 1.0
        assert was["itl_s"] == was["plain_itl_s"]
        assert got["speculative_speedup"] == pytest.approx(got["plain_itl_s"] / got["itl_s"])


# Catalog errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("speculative", "expected"),
    [
        (
            "method: draft\nproposed_tokens: 3\nacceptance_rate: 0.7",
            ["assumptions.yaml", "draft_model: expected an id of models.yaml"],
        ),
        (
            "method: draft\ndraft_model: invented-1b\nproposed_tokens: 3",
            ["acceptance_rate: expected a fraction for method 'draft'"],
        ),
        (
            "method: eagle\nproposed_tokens: 3",
            ["draft_parameters: expected the parameter count of the eagle proposer"],
        ),
        (
            "method: mtp\ndraft_model: invented-1b\ndraft_parameters: 1000\nproposed_tokens: 1",
            ["draft_model: only for method 'draft'"],
        ),
        (
            "method: eagle\ndraft_parameters: 1000\nproposed_tokens: 0",
            ["assumptions.yaml:", "proposed_tokens", "greater than or equal to 1"],
        ),
        (
            "method: medusa\ndraft_parameters: 1000\nproposed_tokens: 2",
            ["method", "'draft', 'eagle' or 'mtp'"],
        ),
        (
            "method: mtp\ndraft_parameters: 1000\nproposed_tokens: 2\nacceptance_rate: 1.5",
            ["acceptance_rate", "less than or equal to 1"],
        ),
        (
            "method: draft\ndraft_model: invented-70b\nproposed_tokens: 3\nacceptance_rate: 0.7",
            [
                "assumptions.yaml:",
                "assumptions engine.speculative",
                "field 'draft_model'",
                "no models entry 'invented-70b' in models.yaml; expected one of: invented-7b",
            ],
        ),
        (
            "method: mtp\ndraft_parameters: 1000\nproposed_tokens: 1\n"
            "acceptance_by_workload: {chat: 0.9}",
            ["field 'acceptance_by_workload'", "no workloads entry 'chat' in workloads.yaml"],
        ),
        (
            "method: mtp\ndraft_parameters: 1000\nproposed_tokens: 1\nmodels: [llama]",
            ["field 'models'", "no models entry 'llama'"],
        ),
    ],
)
def test_catalog_errors(seed_copy: Path, speculative: str, expected: list[str]) -> None:
    folder = _with_engine(seed_copy, speculative)
    with pytest.raises(CatalogError) as info:
        load_catalog(folder)
    message = " ".join(str(info.value).split())
    for part in expected:
        assert part in message, message


def test_the_methods_ship_their_published_acceptance() -> None:
    eagle = Speculative(method="eagle", proposed_tokens=3, draft_parameters=251_670_528)
    assert eagle.default_acceptance_rate == 0.63
    mtp = Speculative(method="mtp", proposed_tokens=1, draft_parameters=11_500_000_000)
    assert mtp.default_acceptance_rate == 0.85  # DeepSeek-V3: 85-90 %, the low end
    assert Speculative.model_validate(
        {"method": "mtp", "proposed_tokens": 1, "draft_parameters": 1000,
         "acceptance_rate": {"low": 0.85, "mode": 0.87, "high": 0.9}}
    ).default_acceptance_rate == 0.87  # fmt: skip


# Against a public measurement ------------------------------------------------------------------
# vLLM issue #20780: Llama 3.1 8B Instruct with the EAGLE-1 head, MT-bench, one request at a time;
# TPOT 7.07 ms without, and with k proposals (tests/fixtures/benchmarks/
# speculative-eagle-llama-3.1-8b.md). Its mean acceptance lengths give α, the root of
# 1 + α + … + α^k = L: k = 2, L = 2.1: α = (−1 + √(1 + 4 × 1.1)) ÷ 2 = 0.66190; k = 3,
# L = 2.29: 0.63377; k = 4, L = 2.39: 0.61989; k = 5, L = 2.43: 0.60959 (by bisection).
# The head (yuhuili/EAGLE-LLaMA3.1-Instruct-8B) is one decoder layer of the target's shape,
# 4,096 × (4,096 + 1,024 + 1,024 + 4,096) = 41,943,040 in attention, 3 × 4,096 × 14,336 =
# 176,160,768 in the MLP, 2 × 4,096 norm weights, and the fc of 8,192 × 4,096 + 4,096 bias =
# 33,558,528: 251,670,528 parameters; it reads the target's LM head (128,256 × 4,096).
# Planned uncalibrated with the shipped assumptions on an H100 SXM in BF16.
MEASURED_TPOT_MS = {
    # k: (α, EAGLE-1 TPOT ms); vanilla 7.07 ms
    2: (0.66190, 4.37),
    3: (0.63377, 4.29),
    4: (0.61989, 4.48),
    5: (0.60959, 4.71),
}
VANILLA_TPOT_MS = 7.07
HEAD_PARAMETERS = 41_943_040 + 176_160_768 + 2 * 4096 + 33_558_528


def test_the_head_has_the_counted_parameters() -> None:
    assert HEAD_PARAMETERS == 251_670_528


def test_the_fixture_holds_the_figures() -> None:
    text = FIXTURE.read_text()
    for k, (_, tpot) in MEASURED_TPOT_MS.items():
        assert f"K={k} | {VANILLA_TPOT_MS} | {tpot} |" in text
    assert "3 | 2.29 | 2.79" in text


def mt_bench_catalog() -> Catalog:
    """The shipped catalogs with one MT-bench-like workload: one user, short prompts (about
    100 tokens), answers of up to 256."""
    base = load_catalog(shipped_catalogs())
    workload = Workload.model_validate(
        {"id": "mt-bench", "prompt_tokens": 100, "max_output_tokens": 256, "concurrency": 1}
    )
    return replace(base, workloads=(workload,))


def eagle_speedup(catalog: Catalog, k: int) -> float:
    """planner's speed-up (plain ITL ÷ speculative ITL) for vLLM issue #20780's EAGLE-1 runs
    at ``k`` proposals with their measured acceptance, uncalibrated on an H100 SXM in BF16."""
    alpha, _ = MEASURED_TPOT_MS[k]
    speculative = Speculative(
        method="eagle", proposed_tokens=k, draft_parameters=HEAD_PARAMETERS, acceptance_rate=alpha
    )
    engine = Engine(name="vllm", version="0.9.2", speculative=speculative)
    catalog = replace(
        catalog, assumptions=catalog.assumptions.model_copy(update={"engine": engine})
    )
    row = sweep.evaluate_subset(catalog, "h100-sxm-80gb", "llama-3.1-8b", "bf16", "mt-bench")
    return float(row.table.iloc[0]["speculative_speedup"])


@pytest.fixture(scope="module")
def mt_bench() -> Catalog:
    return mt_bench_catalog()


@pytest.mark.parametrize("k", sorted(MEASURED_TPOT_MS))
def test_the_speedup_is_within_a_fifth_of_vllms(mt_bench: Catalog, k: int) -> None:
    planned = eagle_speedup(mt_bench, k)
    measured = VANILLA_TPOT_MS / MEASURED_TPOT_MS[k][1]
    assert planned / measured - 1 == pytest.approx(0, abs=0.20), (planned, measured)


def test_the_formulas_appendix_prints_speculation_where_a_run_uses_it(mt_bench: Catalog) -> None:
    """A run whose engine proposes tokens prints speculation's formulas; one without (the
    shipped run) leaves them out and says so (tests/test_disaggregated.py)."""
    from planner.outputs.report import appendix_metrics, untried_features

    speculative = Speculative(
        method="eagle", proposed_tokens=3, draft_parameters=HEAD_PARAMETERS, acceptance_rate=0.7
    )
    engine = Engine(name="vllm", version="0.9.2", speculative=speculative)
    catalog = replace(
        mt_bench, assumptions=mt_bench.assumptions.model_copy(update={"engine": engine})
    )
    results = sweep.evaluate_subset(catalog, "h100-sxm-80gb", "llama-3.1-8b", "bf16", "mt-bench")
    names = {m.name for m in appendix_metrics(results)}
    assert {"speculative_speedup", "plain_itl_s"} <= names
    assert "speculative decoding" not in untried_features(results.table)
