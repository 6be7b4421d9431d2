"""What prefix caching is worth to the ask: the outlook evaluates the plan once more with the
engine's prefix caching off and keeps, per workload the cache applies to, its line with and
without; the report's first page and the terminal say it in a sentence."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from planner.catalog import load_catalog
from planner.outputs.advice import ask_context
from planner.outputs.outlook import outlook
from planner.outputs.sections import engine_features
from planner.plan.sensitivity import without_prefix_caching
from planner.plan.sweep import evaluate
from planner.resources import shipped_catalogs


@pytest.fixture(scope="module")
def shipped():
    catalog = load_catalog(shipped_catalogs())
    return catalog, outlook(catalog, evaluate(catalog).table)


def test_only_workloads_with_a_prefix_are_weighed(shipped):
    """chat (a 500-token system prompt) and agent (instructions and a re-sent trace) say what
    their prompts share; document analysis and the ticket summaries do not."""
    _, derived = shipped
    assert set(derived.caching) == {"chat", "agent"}


def test_the_planned_hit_ratios_are_the_workloads_prefixes_in_whole_blocks(shipped):
    """Blocks of 16 tokens (assumptions.yaml). chat: ⌊500 ÷ 16⌋ × 16 = 496 of an 800-token mean
    prompt, 0.62. agent: the 3,000 shared tokens and 7,300 of history as one 10,300-token
    prefix, ⌊10,300 ÷ 16⌋ × 16 = 10,288 of 12,000, the trace kept (16 tasks' traces fit the
    pool)."""
    _, derived = shipped
    chat, agent = derived.caching["chat"], derived.caching["agent"]
    assert float(chat.cached.row["prefix_hit_ratio"]) == pytest.approx(496 / 800)
    assert float(agent.cached.row["prefix_hit_ratio"]) == pytest.approx(10_288 / 12_000)
    assert float(agent.uncached.row["prefix_hit_ratio"]) == 0


def test_without_the_cache_the_ask_costs_no_less_and_the_agent_waits_longer(shipped):
    _, derived = shipped
    for worth in derived.caching.values():
        assert worth.uncached is not None
        assert worth.devices_saved >= 0 and worth.monthly_usd_saved >= 0
    agent = derived.caching["agent"]
    # 10,288 of 12,000 prompt tokens not prefilled: the first token comes several times sooner
    assert float(agent.uncached.row["ttft_s"]) > 3 * float(agent.cached.row["ttft_s"])


def test_a_busier_agent_needs_more_devices_without_the_cache(shipped):
    """At 256 agents in place of 16, the uncached prefill of 12,000 tokens a call takes a
    replica's time the cache saves: the line without it asks for more devices and more a
    month, and the sentence says by how much."""
    catalog, _ = shipped
    busier = tuple(
        w.model_copy(update={"concurrency": 256}) if w.id == "agent" else w
        for w in catalog.workloads
    )
    catalog = dataclasses.replace(catalog, workloads=busier)
    derived = outlook(catalog, evaluate(catalog).table)
    agent = derived.caching["agent"]
    assert agent.devices_saved > 0 and agent.monthly_usd_saved > 0
    text = ask_context(derived.plan, catalog, derived.caching)["caching"]
    said = next(t for t in text if t.startswith("Prefix caching for Coding agent"))
    assert "so the cache is worth" in said and "86% of prompt tokens" in said


def test_an_engine_without_prefix_caching_weighs_nothing(shipped):
    catalog, _ = shipped
    off = without_prefix_caching(catalog)
    derived = outlook(off, evaluate(off).table)
    assert derived.caching == {}
    assert ask_context(derived.plan, off, derived.caching)["caching"] == []


def test_the_latency_page_names_the_cache_and_the_speculation_figures():
    """chat's 800-token prompt with 496 tokens cached prefills 304; a shared prefix of
    16 MiB is 16 × 1024² = 16,777,216 B; k = 3 at α = 0.7 emits 1 + 0.7 + 0.49 + 0.343 =
    2.533 tokens a step."""
    row = pd.Series(
        {
            "prefix_hit_ratio": 0.62,
            "prefill_tokens_mean": 304.0,
            "prompt_tokens_mean": 800.0,
            "shared_prefix_kv_bytes": 16 * 1024**2,
            "speculative_tokens": 3,
            "speculative_tokens_per_step": 2.533,
            "speculative_speedup": 1.8,
        }
    )
    text = engine_features(row)
    assert "62% of prompt tokens cached, 304 of 800 prefilled" in text
    assert "16.00 MiB" in text and "held once" in text
    assert "2.53 tokens a step per sequence, 1.80×" in text
    plain = row.copy()
    plain[["prefix_hit_ratio", "shared_prefix_kv_bytes", "speculative_tokens"]] = 0
    assert engine_features(plain) == ""


def test_the_sentence_tells_two_close_ttfts_apart(shipped):
    """chat's line prefills 304 tokens with the cache and 800 without: its prompts are nearly
    bound by one read of the weights, so the TTFTs differ in the fourth digit, and the sentence
    writes them that far, not as the same number; the agent's are apart at three digits."""
    catalog, derived = shipped
    text = ask_context(derived.plan, catalog, derived.caching)["caching"]
    chat = derived.caching["chat"]
    with_it, without = (float(line.row["ttft_s"]) for line in (chat.cached, chat.uncached))
    assert with_it < without and f"{with_it * 1e3:.3g}" == f"{without * 1e3:.3g}"
    said = next(t for t in text if t.startswith("Prefix caching for Employee assistant"))
    expected = f"TTFT {with_it * 1e3:.4g} ms with it, {without * 1e3:.4g} ms without"
    assert said.endswith(expected) and f"{with_it * 1e3:.4g}" != f"{without * 1e3:.4g}"


def _line(devices: float, monthly: float, ttft: float, hardware: str = "h100-sxm-80gb"):
    from planner.plan.deployment import BUY, Line

    row = pd.Series(
        {
            "devices_needed": devices,
            "opex_usd_per_month": monthly,
            "ttft_s": ttft,
            "prefix_hit_ratio": 0.62,
            "hardware": hardware,
            "tensor_parallel": 8,
            "precision": "fp8",
            "replicas_planned": devices / 8,
        }
    )
    return Line("chat", "deepseek-v3", row, BUY, "cheapest")


@pytest.mark.parametrize(
    ("closed", "without", "said"),
    [
        # the closed form needs as much either way: the planned line's 384 devices are the
        # simulation's, not the cache's doing
        (
            (144, 35_000),
            (144, 35_000),
            "in closed form, the line is the same without it (144 devices, 35,000 USD a month); "
            "the planned line, from the simulation, is 384 devices, 93,000 USD a month",
        ),
        # 80 devices with the cache and 144 without, both closed form: worth 64 devices
        (
            (80, 20_000),
            (144, 35_000),
            "in closed form, with it 80 devices, 20,000 USD a month; without it 144 devices, "
            "35,000 USD a month (deepseek-v3: buy 144 × h100-sxm-80gb (TP 8) · fp8), so the "
            "cache is worth 64 devices and 15,000 USD a month; the planned line, from the "
            "simulation, is 384 devices",
        ),
    ],
)
def test_a_simulated_line_is_weighed_like_with_like(shipped, closed, without, said):
    """A planned line the simulation raised to 384 devices is not weighed against the closed
    form's line without the cache (which would make the cache worth −240 devices): the closed
    form's lines with and without it are, and the planned line is said beside them."""
    from planner.outputs.advice import caching_text
    from planner.outputs.outlook import CacheWorth

    catalog, _ = shipped
    planned = _line(384, 93_000, 0.0886)
    worth = CacheWorth("chat", planned, _line(*without, 0.217), _line(*closed, 0.0886))
    assert worth.devices_saved == without[0] - closed[0] >= 0
    text = caching_text(worth, catalog)
    assert said in text and "worth -" not in text
    assert text.endswith("TTFT 88.6 ms with it, 217 ms without")
    # closed form throughout: weighed against the planned line, said as before
    plain = CacheWorth("chat", _line(*closed, 0.0886), _line(*without, 0.217))
    assert "in closed form" not in caching_text(plain, catalog)
    assert plain.devices_saved == worth.devices_saved
    # a simulated line as the closed form's: nothing to set apart
    agreed = CacheWorth(
        "chat", _line(*closed, 0.0886), _line(*without, 0.217), _line(*closed, 0.0886)
    )
    assert caching_text(agreed, catalog) == caching_text(plain, catalog)
