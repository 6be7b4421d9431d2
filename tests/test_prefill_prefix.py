"""A disaggregated candidate's prompts find the prefill pool's prefix cache, not the decode
pool's: its idle room, how fast its prompts overwrite it, and only the previous prompt's part of
a task's history (the answer's cache was made on the decode pool), each worked by hand."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest

from planner.catalog import load_catalog
from planner.model.prefix import (
    prefill_history_retained_fraction,
    prefill_history_tokens,
    prefill_pool_idle_tokens,
    prefill_pool_write_tokens_per_s,
)
from planner.plan.sweep import evaluate

SHIPPED = Path(__file__).parent.parent / "catalogs"


def test_a_prefill_schedulers_idle_room() -> None:
    """60 GB of cache, a 2,000-token shared prefix at 131,072 B a token, 8,192 tokens a step:
    60e9 ÷ 131,072 = 457,763.671875 slots, − 2,000 − 8,192 = 447,571.671875; none where the
    budget does not hold the prefix and a step."""
    shared = 2_000 * 131_072
    assert prefill_pool_idle_tokens(60e9, shared, 131_072, 8_192) == 447_571.671875
    assert prefill_pool_idle_tokens(1e9, shared, 131_072, 8_192) == 0


def test_how_fast_prompts_overwrite_it() -> None:
    """1e15 FLOP/s over 2 × 8e9 FLOP a token: 62,500 tokens a second."""
    assert prefill_pool_write_tokens_per_s(1e15, 16e9) == 62_500


@pytest.mark.parametrize(
    ("history", "idle", "rate", "retained"),
    [
        # 500,000 slots at 50,000 tokens a second over 400 × 10 ms + 8 s: 500,000 ÷ 600,000
        (6_800, 500_000, 50_000, 500_000 / 600_000),
        (6_800, 700_000, 50_000, 1.0),  # the room outlasts the call and the tool time
        (6_800, 0, 50_000, 0.0),  # no room: nothing survives
        (0, 0, 50_000, 1.0),  # no history to keep
    ],
)
def test_the_history_a_prefill_scheduler_keeps(history, idle, rate, retained) -> None:
    got = prefill_history_retained_fraction(history, idle, rate, 400, 0.01, 8.0)
    assert got == pytest.approx(retained, rel=1e-12)


@pytest.mark.parametrize(
    ("history", "output", "calls", "pools", "tokens"),
    [
        (7_300, 600, 6, 1, 6_800),  # five of six calls re-send a 600-token answer: 500 a call
        (7_300, 600, 6, 0, 7_300),  # a replica that decodes too holds the answers' cache
        (300, 600, 2, 1, 0),  # a history shorter than its answers: nothing of it
    ],
)
def test_a_prefill_pool_caches_the_prompts_part_of_a_history(
    history, output, calls, pools, tokens
) -> None:
    assert prefill_history_tokens(history, output, calls, pools) == tokens


@pytest.fixture(scope="module")
def agent() -> pd.DataFrame:
    """The shipped catalogs' coding agent on one pool and on two (each prefill pool on the
    decode replica's own device and layout)."""
    catalog = load_catalog(SHIPPED)
    update = {"serving_layouts": ["aggregated", "disaggregated"]}
    assumptions = catalog.assumptions.model_copy(update=update)
    catalog = dataclasses.replace(catalog, assumptions=assumptions)
    table = evaluate(catalog).table
    table = table[(table["workload"] == "agent") & (table["pipeline_parallel"] == 1)]
    own = (table["prefill_hardware"].astype(str) == "") & (table["prefill_parallel"] == 0)
    return table[own & table["fits"].astype(bool)]


def _pair(agent: pd.DataFrame, hardware: str, model: str, precision: str) -> pd.DataFrame:
    rows = agent[(agent["hardware"] == hardware) & (agent["model"] == model)]
    rows = rows[(rows["precision"] == precision) & (rows["tensor_parallel"] == 1)]
    return rows.set_index("disaggregated")


def test_with_room_to_spare_the_prefill_pool_misses_only_the_answers(agent) -> None:
    """Llama 3.1 8B on an H100, both caches keeping every history: one pool finds the 3,000
    shared tokens and all 7,300 of history, 10,300 tokens, 643 whole blocks of 16 = 10,288 of
    the 12,000-token mean prompt (0.857333); a prefill pool 3,000 + 6,800 = 9,800, 612 blocks =
    9,792 (0.816), so it prefills 2,208 tokens a prompt where one pool prefills 1,712."""
    pair = _pair(agent, "h100-sxm-80gb", "llama-3.1-8b", "bf16")
    assert pair.loc[0, "history_retained_fraction"] == 1
    assert pair.loc[1, "prefill_history_retained_fraction"] == 1
    assert pair.loc[0, "prefix_hit_ratio"] == pytest.approx(10_288 / 12_000, rel=1e-12)
    assert pair.loc[1, "prefix_hit_ratio"] == pytest.approx(9_792 / 12_000, rel=1e-12)
    assert pair.loc[0, "prefill_tokens_mean"] == pytest.approx(1_712, rel=1e-12)
    assert pair.loc[1, "prefill_tokens_mean"] == pytest.approx(2_208, rel=1e-12)


def test_a_prefill_pool_that_turns_over_faster_keeps_less(agent) -> None:
    """Llama 3.1 8B in FP8 on an L40S: the decoding replica keeps every history, while its
    prefill scheduler overwrites its room within a call and its tool time, so it keeps the
    share min(1, room ÷ (rate × (600 × ITL + 2 s))) of it; the hit ratio is the whole blocks of
    3,000 + 6,800 × that share."""
    pair = _pair(agent, "l40s-48gb", "llama-3.1-8b", "fp8")
    row = pair.loc[1]
    assert pair.loc[0, "history_retained_fraction"] == 1
    gap = row["prefill_pool_write_tokens_per_s"] * (600 * row["itl_s"] + 2.0)
    kept = min(1.0, row["prefill_pool_idle_tokens"] / gap)
    assert 0 < kept < 1
    assert row["prefill_history_retained_fraction"] == pytest.approx(kept, rel=1e-12)
    blocks = (3_000 + 6_800 * kept) // 16 * 16
    assert row["prefix_hit_ratio"] == pytest.approx(blocks / 12_000, rel=1e-12)
    assert row["prefix_hit_ratio"] < pair.loc[0, "prefix_hit_ratio"]
