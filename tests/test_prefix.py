"""Prefix caching in closed form, each figure worked out by hand: a shared system prompt held and
prefilled once, an agent's history found cached or evicted, cached input priced by an API, the
workload's ``prefix`` refused where it cannot be, and one public measurement of the speed-up."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from planner.catalog import CatalogError, load_catalog
from planner.catalog.engines import caches_prefixes
from planner.catalog.records import Engine
from planner.model.cost import api_usd_per_month, input_tokens_per_month, output_tokens_per_month
from planner.model.latency import prefill_flops, prefill_s
from planner.model.memory import kv_bytes_at_concurrency, max_sequences
from planner.model.prefix import (
    api_cached_input_fraction,
    cached_prompt_tokens_mean,
    history_retained_fraction,
    idle_tasks_per_replica,
    kv_pool_idle_tokens,
    median_prefix_hit_ratio_expected,
    prefill_tokens_mean,
    prefix_hit_ratio,
    prefix_hit_ratio_expected,
    repeated_prefix_tokens,
    shared_prefix_cached_tokens,
    shared_prefix_kv_bytes,
)
from planner.plan.sweep import evaluate
from planner.resources import shipped_catalogs

GIB = 1024**3
#: The seed's 7B-shaped models cache 2 (K, V) × 32 layers × 8 KV heads × 128 × 2 B a token.
KV_PER_TOKEN = 2 * 32 * 8 * 128 * 2  # 131,072 B
#: The seed's invented-4gib model: 4 GiB of BF16 weights, 2,147,483,648 parameters.
ACTIVE_4GIB = 2_147_483_648
#: Its attention coefficient 2 × layers × query heads × head dim = 2 × 32 × 32 × 128.
ATTENTION = 262_144


# --- the shared system prompt -------------------------------------------------------------


@pytest.mark.parametrize(
    ("caching", "shared", "block", "cached"),
    [
        (1, 2000, 1, 2000),
        (1, 2000, 16, 2000),  # 125 whole blocks
        (1, 1000, 16, 992),  # 62 whole blocks; the 63rd holds 8 tokens and is not reused
        (0, 2000, 16, 0),  # prefix caching off: nothing is kept
    ],
)
def test_shared_prefix_is_cached_in_whole_blocks(
    caching: int, shared: int, block: int, cached: int
) -> None:
    assert shared_prefix_cached_tokens(caching, shared, block) == cached


def test_thirty_two_users_hold_the_system_prompt_once() -> None:
    """32 chat users of the seed's invented-4gib model on its 16 GiB device: 8 GiB of KV budget
    (16 − 4 weights − 2 runtime − 2 reserve). Each sequence reserves 2,560 prompt + 512 output
    = 3,072 tokens × 131,072 B = 402,653,184 B (384 MiB): 8 GiB ÷ 384 MiB = 21.3, 21 sequences
    without the cache, and the 32 users do not fit one replica. With a 2,000-token system
    prompt cached (262,144,000 B) and held once: ⌊(8,589,934,592 − 262,144,000) ÷ (402,653,184
    − 262,144,000)⌋ = ⌊8,327,790,592 ÷ 140,509,184⌋ = ⌊59.27⌋ = 59 sequences; the 32 users need
    32 × 140,509,184 + 262,144,000 = 4,758,437,888 B, not 32 × 384 MiB = 12,884,901,888 B."""
    budget = 8 * GIB
    per_sequence = 3072 * KV_PER_TOKEN
    assert per_sequence == 402_653_184
    shared = shared_prefix_kv_bytes(shared_prefix_cached_tokens(1, 2000, 1), KV_PER_TOKEN)
    assert shared == 262_144_000
    assert max_sequences(budget, per_sequence, 0) == 21
    assert max_sequences(budget, per_sequence, shared) == 59
    assert kv_bytes_at_concurrency(32, per_sequence, shared) == 4_758_437_888
    assert kv_bytes_at_concurrency(32, per_sequence, 0) == 12_884_901_888


def test_the_system_prompt_is_prefilled_once() -> None:
    """The same users' 2,560-token prompts on the seed device (100 TFLOPS, efficiency 1): the
    whole prompt is 2 × 2,147,483,648 × 2,560 = 10,995,116,277,760 FLOP of multiplications and
    262,144 × 2,560² = 1,717,986,918,400 of attention, 12,713,103,196,160 FLOP, 127.131 ms. With
    2,000 tokens cached the 560 new ones cost 2 × 2,147,483,648 × 560 = 2,405,181,685,760 and
    262,144 × (560² + 2 × 560 × 2,000) = 262,144 × 2,553,600 = 669,410,918,400 of attention
    over themselves and the cached tokens: 3,074,592,604,160 FLOP, 30.746 ms. The difference,
    9,638,510,592,000 FLOP (96.385 ms), is exactly a 2,000-token prompt's own prefill:
    2 × 2,147,483,648 × 2,000 + 262,144 × 2,000² (P² − N² − 2NC = C²)."""
    ratio = 2000 / 2560  # 0.78125, exact in binary
    whole = prefill_flops(ACTIVE_4GIB, 2560, 32, 32, 128)
    cached = prefill_flops(ACTIVE_4GIB, 2560, 32, 32, 128, ratio)
    alone = prefill_flops(ACTIVE_4GIB, 2000, 32, 32, 128)
    assert whole == 12_713_103_196_160
    assert cached == 3_074_592_604_160
    assert alone == 9_638_510_592_000 == whole - cached
    # the seed's 4 GiB read at 700 GB/s takes 6.136 ms: both prefills are compute-bound
    read = 4 * GIB / 700e9
    no_cache = prefill_s(whole, 100e12, 0.0, read, 2560, 0.0, 0.0)
    with_cache = prefill_s(cached, 100e12, 0.0, read, 2560, 0.0, 0.0, ratio)
    assert no_cache == pytest.approx(0.1271310319616, rel=1e-12)
    assert with_cache == pytest.approx(0.0307459260416, rel=1e-12)
    assert no_cache - with_cache == pytest.approx(0.09638510592, rel=1e-12)


def test_without_the_cache_the_prefill_is_exactly_todays() -> None:
    """A hit ratio of 0 gives the formula the prefill always had, bit for bit."""
    prompts = np.array([1.0, 37.0, 2560.0, 24_000.0])
    today = 2 * 7e9 * prompts + 2 * 32 * prompts * prompts * 32 * 128
    assert np.array_equal(prefill_flops(7e9, prompts, 32, 32, 128, 0), today)
    assert np.array_equal(prefill_flops(7e9, prompts, 32, 32, 128), today)
    assert prefill_s(1e12, 1e14, 0.001, 0.002, 2560.0, 1e-7, 0.003, 0) == prefill_s(
        1e12, 1e14, 0.001, 0.002, 2560.0, 1e-7, 0.003
    )


def _seed_chat(folder: Path, prefix: str, engine: str = "") -> None:
    (folder / "workloads.yaml").write_text(
        "workloads:\n"
        "  - id: chat\n    prompt_tokens: 2560\n    max_output_tokens: 512\n"
        f"    concurrency: 32\n{prefix}"
    )
    if engine:
        with (folder / "assumptions.yaml").open("a") as out:
            out.write(engine)


def _row(folder: Path) -> dict[str, float]:
    table = evaluate(load_catalog(folder)).table
    row = table[table["model"] == "invented-4gib"].iloc[0]
    return {str(k): v for k, v in row.items()}


def test_the_plan_holds_and_prefills_the_system_prompt_once(tmp_path: Path, seed_dir: Path):
    """The seed catalog with the chat users above, planned on the default engine (vLLM V1:
    prefix caching on, blocks of 1 token in the seed): one replica holds 59 sequences, so the
    32 users fit it, and TTFT falls by the 2,000 tokens' prefill, 96.385 ms."""
    plain, cached = tmp_path / "plain", tmp_path / "cached"
    for folder in (plain, cached):
        shutil.copytree(seed_dir, folder)
    _seed_chat(plain, "")
    _seed_chat(cached, "    prefix: {shared_tokens: 2000}\n")
    before, after = _row(plain), _row(cached)
    assert before["max_sequences"] == 21 and not before["fits"]
    assert after["max_sequences"] == 59 and after["fits"]
    assert after["prefix_hit_ratio"] == 0.78125
    assert after["prefill_tokens_mean"] == 560
    assert before["ttft_s"] - after["ttft_s"] == pytest.approx(0.09638510592, rel=1e-9)


def test_prefix_caching_off_plans_as_before(tmp_path: Path, seed_dir: Path):
    """An engine profile with prefix caching off plans a workload with a prefix exactly as one
    without: the same capacity and the same TTFT, bit for bit."""
    plain, off = tmp_path / "plain", tmp_path / "off"
    for folder in (plain, off):
        shutil.copytree(seed_dir, folder)
    engine = "  engine: {name: vllm, version: '0.11.0', prefix_caching: false}\n"
    _seed_chat(plain, "", engine)
    _seed_chat(off, "    prefix: {shared_tokens: 2000}\n", engine)
    before, after = _row(plain), _row(off)
    assert after["prefix_hit_ratio"] == 0
    names = (
        "max_sequences",
        "ttft_s",
        "ttft_load_s",
        "e2e_s",
        "requests_per_s_per_replica",
        "itl_s",
    )
    for name in names:
        assert after[name] == before[name], name


# --- an agent's history -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("batch", "room", "idle", "retained", "prefilled"),
    [
        # 4 × (12,600 + 600 ÷ 2) = 51,600 tokens running of the 65,536 the 8 GiB pool holds:
        # 13,936 idle; 4 × 4/5 × 2 s ÷ (600 × 20 ms) = 0.533 idle tasks want 6,400 tokens, all
        # kept: the fifth step prefills its 600 new tokens only
        (4, 13_936, 4 * 0.8 * 2 / 12, 1.0, 600),
        # 5 × 12,900 = 64,500: 1,036 idle for 0.667 × 12,000 = 8,000 wanted, 12.95 % kept:
        # 1,554 tokens, 97 whole blocks of 16 = 1,552 cached, 11,048 prefilled
        (5, 1_036, 5 * 0.8 * 2 / 12, 1036 / 8000, 11_048),
        # 6 × 12,900 = 77,400 tokens running: the pool is full, no history survives
        (6, 0, 6 * 0.8 * 2 / 12, 0.0, 12_600),
    ],
)
def test_history_is_found_cached_until_the_pool_is_too_small(
    batch: int, room: float, idle: float, retained: float, prefilled: int
) -> None:
    """An agent whose step re-sends 12,000 tokens of its own history before 600 new ones (five
    calls a task, 2 s of tool time between them, 600-token answers at 20 ms a token), on the
    seed's 8 GiB pool of 131,072-byte tokens (65,536 tokens), in blocks of 16."""
    pool = kv_pool_idle_tokens(8 * GIB, 0.0, KV_PER_TOKEN, batch, 12_600 + 600 / 2, 0)
    assert pool == room
    tasks = idle_tasks_per_replica(batch, 5, 2.0, 600, 0.02)
    assert tasks == pytest.approx(idle, rel=1e-12)
    kept = history_retained_fraction(12_000, tasks, pool)
    assert kept == pytest.approx(retained, rel=1e-12)
    expected = prefix_hit_ratio_expected(0, repeated_prefix_tokens(0, 1, 12_000, kept), 16, 12_600)
    ratio = prefix_hit_ratio(1, math.nan, expected)
    cached = cached_prompt_tokens_mean(ratio, 12_600)
    assert prefill_tokens_mean(12_600, cached) == pytest.approx(prefilled, rel=1e-12)


def test_running_sequences_hold_the_shared_prefix_once() -> None:
    """The seed's 8 GiB pool (65,536 tokens of 131,072 B) with a 2,000-token system prompt
    cached (262,144,000 B, 2,000 tokens): 63,536 tokens left; 4 sequences of 12,900 tokens
    each hold 10,900 of their own, 43,600 in all: 19,936 idle."""
    assert kv_pool_idle_tokens(8 * GIB, 262_144_000, KV_PER_TOKEN, 4, 12_900, 2000) == 19_936


def test_the_hit_ratio_falls_as_concurrency_rises() -> None:
    ratios = []
    for batch in range(1, 8):
        pool = kv_pool_idle_tokens(8 * GIB, 0.0, KV_PER_TOKEN, batch, 12_900, 0)
        tasks = idle_tasks_per_replica(batch, 5, 2.0, 600, 0.02)
        kept = history_retained_fraction(12_000, tasks, pool)
        ratios.append(
            prefix_hit_ratio_expected(0, repeated_prefix_tokens(0, 1, 12_000, kept), 16, 12_600)
        )
    assert ratios == sorted(ratios, reverse=True)
    assert ratios[0] == 12_000 / 12_600 and ratios[-1] == 0


@pytest.mark.parametrize(
    ("shared", "document", "questions", "history", "prompt", "ratio"),
    [
        (0, 0, 1, 0, 800, 0.0),  # nothing shared
        (500, 0, 1, 0, 800, 496 / 800),  # 31 whole blocks of the system prompt
        (0, 24_000, 4, 0, 24_100, 18_000 / 24_100),  # three questions in four find it
        (3000, 0, 1, 7300, 12_000, 10_288 / 12_000),  # ⌊10,300 ÷ 16⌋ = 643 blocks
        (2000, 0, 1, 0, 2000, 1984 / 2000),  # a whole-prompt hit: at most 1,999, 124 blocks
        (0, 0, 1, 12_000, 12_000, 11_999 / 12_000),  # and in blocks of 1, its last token
    ],
)
def test_expected_hit_ratio_by_hand(
    shared: int, document: int, questions: int, history: int, prompt: int, ratio: float
) -> None:
    block = 1 if prompt == 12_000 and history == 12_000 else 16
    repeated = repeated_prefix_tokens(document, questions, history, 1.0)
    got = prefix_hit_ratio_expected(shared, repeated, block, prompt)
    assert got == pytest.approx(ratio, rel=1e-12)


@pytest.mark.parametrize(
    ("shared", "history", "median", "ratio"),
    [
        # a 489-token median chat prompt behind a 500-token system prompt: all of it but its
        # last token may hit, 488 → 30 whole blocks of 16, 480 tokens
        (500, 0, 489, 480 / 489),
        # a 2,000-token median prompt behind the same 500: 31 blocks, 496 tokens
        (500, 0, 2000, 496 / 2000),
        # the agent: 3,000 shared + its 7,300-token history's share of the 12,000-token mean
        # prompt (0.608333) of the 11,880-token median, 7,227.0 tokens: 10,227 → 639 blocks,
        # 10,224 tokens
        (3000, 7300, 11_880, 10_224 / 11_880),
    ],
)
def test_the_median_prompts_hit_ratio_by_hand(
    shared: int, history: int, median: int, ratio: float
) -> None:
    repeated = repeated_prefix_tokens(0, 1, history, 1.0)
    got = median_prefix_hit_ratio_expected(shared, repeated, 16, 12_000, median)
    assert got == pytest.approx(ratio, rel=1e-12)


def test_a_measured_hit_ratio_overrides_the_expected() -> None:
    assert prefix_hit_ratio(1, 0.35, 0.62) == 0.35
    assert prefix_hit_ratio(1, math.nan, 0.62) == 0.62
    assert prefix_hit_ratio(0, 0.35, 0.62) == 0  # the engine keeps no cache
    assert api_cached_input_fraction(0.35, 0.62) == 0.35
    assert api_cached_input_fraction(math.nan, 0.62) == 0.62


# --- the API's cached input ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("fraction", "cached_price", "monthly"),
    [
        # 5,256 M tokens in × (0.4 × 0.20 + 0.6 × 0.05) = 578.16, + 2,628 M out × 0.60 = 1,576.8
        (0.6, 0.05, 2154.96),
        # no cached price: every input token at 0.20, 1,051.2 + 1,576.8
        (0.6, math.nan, 2628.0),
        (0.0, 0.05, 2628.0),
    ],
)
def test_cached_input_is_charged_at_its_price(
    fraction: float, cached_price: float, monthly: float
) -> None:
    """2 requests/s of 1,000 prompt and 500 output tokens over 730 hours, at 0.20 USD per
    million input tokens (0.05 cached) and 0.60 per million output tokens."""
    tokens_in = input_tokens_per_month(2, 1_000, 730)  # 5,256,000,000
    tokens_out = output_tokens_per_month(2, 500, 730)  # 2,628,000,000
    got = api_usd_per_month(
        tokens_in, tokens_out, 0.20, 0.60, 1_500, np.nan, fraction, cached_price
    )
    assert got == pytest.approx(monthly, rel=1e-12)


# --- the engine's default and the catalog's validation --------------------------------------


@pytest.mark.parametrize(
    ("engine", "caches"),
    [
        (None, True),  # the default engine: vLLM's newest series
        (Engine(name="vllm", version="0.6.3"), False),  # V0: off unless asked
        (Engine(name="vllm", version="0.11.0"), True),  # V1: on
        (Engine(name="vllm", version="0.11.0", prefix_caching=False), False),
        (Engine(name="sglang", version="0.5.2"), True),  # the radix cache
        (Engine(name="tensorrt-llm", version="1.0.0"), True),  # block reuse
    ],
)
def test_each_engine_release_says_whether_it_caches(engine: Engine | None, caches: bool) -> None:
    assert caches_prefixes(engine) is caches


@pytest.mark.parametrize(
    ("body", "fragments"),
    [
        (
            "    prefix: {history_tokens: 500}\n",
            ["workloads.yaml", "'w'", "history_tokens (500)", "requests_per_task is 1"],
        ),
        (
            "    requests_per_task: 3\n    prefix: {shared_tokens: 600, history_tokens: 500}\n",
            ["workloads.yaml", "'w'", "1,100 tokens", "mean prompt (1,000 tokens)"],
        ),
        (
            "    prefix: {document_tokens: 800}\n",
            ["field 'prefix'", "questions_per_document 1"],
        ),
        (
            "    prefix: {shared_tokens: -5}\n",
            ["field 'prefix.shared_tokens'"],
        ),
        (
            "    prefix: {measured_hit_ratio: 1.5}\n",
            ["field 'prefix.measured_hit_ratio'"],
        ),
        (
            "    prefix: {system_tokens: 100}\n",
            ["prefix.system_tokens"],
        ),
    ],
)
def test_bad_prefixes(seed_copy: Path, body: str, fragments: list[str]) -> None:
    (seed_copy / "workloads.yaml").write_text(
        "workloads:\n  - id: w\n    prompt_tokens: {mean: 1000, p95: 1500, max: 2000}\n"
        "    max_output_tokens: 64\n    concurrency: 1\n" + body
    )
    with pytest.raises(CatalogError) as info:
        load_catalog(seed_copy)
    text = str(info.value)
    for fragment in fragments:
        assert fragment in text, text


def test_the_shipped_chat_and_agent_find_their_prefixes_cached() -> None:
    """The shipped chat's 500-token system prompt is 31 whole blocks of 16, 496 of its 800 mean
    tokens; the agent's 3,000 shared and 7,300 history tokens 643 blocks, 10,288 of 12,000, its
    pools large enough to keep every history between calls."""
    table = evaluate(load_catalog(shipped_catalogs())).table
    ratios = table.groupby("workload")["prefix_hit_ratio"]
    assert ratios.min()["chat"] == ratios.max()["chat"] == 496 / 800
    assert ratios.max()["agent"] == pytest.approx(10_288 / 12_000, rel=1e-12)
    assert ratios.max()["document-analysis"] == 0


# --- one public measurement ---------------------------------------------------------------

#: vLLM PR #9668 (tests/fixtures/benchmarks/vllm-prefix-caching-pr9668.md): Llama 3 8B FP8 on
#: an L40S, 400 requests of 381 prompt and 10 output tokens, 8.54 s without the cache and 4.86 s
#: with it (a 49 % hit rate).
MEASURED_SPEED_UP = 8.54 / 4.86


def offline_prefix_caching_speed_up(folder: Path) -> float:
    """planner's ratio of the requests a replica completes per second with the cache and
    without, for vLLM PR #9668's benchmark, uncalibrated: the shipped catalogs' L40S, Llama 3.1
    8B (Llama 3 8B's shape) and FP8 weights, planned for the benchmark's requests with the hit
    rate it reported and without (``folder``: an empty folder to write the catalogs in).

    The closed form charges each prompt a weight read (13.1 ms) and a step overhead (2 ms) of
    its own, which the engine's batched prefill shares among many prompts, so a cached prompt's
    prefill cannot fall below about 15 ms however few tokens it computes: the estimate is low
    (about 1.42 against 1.76 when written)."""
    folder.mkdir(exist_ok=True)
    for name in ("hardware.yaml", "models.yaml", "precisions.yaml", "assumptions.yaml"):
        shutil.copy(shipped_catalogs() / name, folder / name)
    shape = (
        "    prompt_tokens: 381\n    output_tokens: 10\n    max_output_tokens: 10\n"
        "    concurrency: 400\n"
    )
    (folder / "workloads.yaml").write_text(
        "workloads:\n"
        f"  - id: without\n{shape}"
        f"  - id: with\n{shape}    prefix: {{measured_hit_ratio: 0.49}}\n"
    )
    table = evaluate(load_catalog(folder)).table
    rows = table[
        (table["hardware"] == "l40s-48gb")
        & (table["model"] == "llama-3.1-8b")
        & (table["precision"] == "fp8")
        & (table["tensor_parallel"] == 1)
    ].set_index("workload")
    rate = rows["requests_per_s_per_replica"]
    return float(rate["with"] / rate["without"])


def test_offline_prefix_caching_speed_up_within_a_fifth(tmp_path: Path) -> None:
    estimate = offline_prefix_caching_speed_up(tmp_path / "catalogs")
    assert estimate == pytest.approx(MEASURED_SPEED_UP, rel=0.20), estimate


# --- the workbook: live formulas ----------------------------------------------------------

PREFIX_WORKLOADS = """\
workloads:
  - id: chat
    prompt_tokens: 2560
    max_output_tokens: 512
    concurrency: 32
    prefix: {shared_tokens: 2000}
  - id: agent
    prompt_tokens: {mean: 12600, p95: 14000, max: 16000}
    output_tokens: {mean: 600, p95: 900, max: 1000}
    max_output_tokens: 1000
    concurrency: 6
    requests_per_task: 5
    tool_time: 2 s
    prefix: {shared_tokens: 100, history_tokens: 12000}
  - id: documents
    prompt_tokens: 3000
    max_output_tokens: 200
    arrival: {pattern: poisson, rate: 0.5 /s}
    prefix: {document_tokens: 2800, questions_per_document: 4}
  - id: measured
    prompt_tokens: 1000
    max_output_tokens: 100
    concurrency: 4
    prefix: {shared_tokens: 400, measured_hit_ratio: 0.3}
"""

PREFIX_OFFER = """\
api_offers:
  - id: seed-api
    model: invented-4gib
    input_usd_per_million_tokens: 0.20
    cached_input_usd_per_million_tokens: 0.05
    output_usd_per_million_tokens: 0.60
    as_of: 2026-12-01
"""


@pytest.mark.parametrize("engine", ["libreoffice", "gnumeric"])
def test_spreadsheet_engines_compute_the_prefix_metrics(
    tmp_path: Path, seed_dir: Path, engine: str
) -> None:
    """A workbook of the seed with a system prompt, an agent's history, a document asked four
    questions, a measured hit ratio and an API offer with a cached price: every Plan cell the
    spreadsheet engine computes is the planner's."""
    from spreadsheet import computed_values, recalculate_many, require
    from test_workbook import assert_plan_equals

    from planner.outputs.workbook import write_workbook

    require(engine)
    folder = tmp_path / "catalogs"
    shutil.copytree(seed_dir, folder)
    (folder / "workloads.yaml").write_text(PREFIX_WORKLOADS)
    (folder / "api_offers.yaml").write_text(PREFIX_OFFER)
    assumptions = folder / "assumptions.yaml"  # blocks of 16 tokens: whole blocks matter
    text = assumptions.read_text()
    assumptions.write_text(text.replace("kv_block_tokens: 1 ", "kv_block_tokens: 16"))
    assert "kv_block_tokens: 16" in assumptions.read_text()
    results = evaluate(load_catalog(folder))
    table = results.table
    assert (table["prefix_hit_ratio"] > 0).all()
    assert table["history_retained_fraction"].between(0, 1).all()
    book = write_workbook(results, tmp_path / "prefix.xlsx")
    (out,) = recalculate_many([book], tmp_path / f"recalculated-{engine}", engine=engine)
    assert_plan_equals(computed_values(out, "Plan"), results)
