"""Disaggregated prefill and decode pools as a candidate layout, worked by hand."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pandas as pd
import pytest

from planner.catalog import Catalog, load_catalog
from planner.model.disaggregated import (
    prefill_pool_prompts_per_step,
    prefill_pool_replicas,
    prefill_pool_s_per_prompt,
    prefill_pool_utilisation_limit,
    prefill_pool_wait_p95_s,
    prefill_pool_wait_s,
    request_kv_transfer_bytes,
    request_kv_transfer_s,
)
from planner.plan.labels import short_label
from planner.plan.sweep import evaluate

SHIPPED = Path(__file__).parent.parent / "catalogs"


def with_layouts(layouts: list[str], folder: Path = SHIPPED, **more: object) -> Catalog:
    catalog = load_catalog(folder)
    update = {"serving_layouts": layouts, **more}
    return dataclasses.replace(catalog, assumptions=catalog.assumptions.model_copy(update=update))


# The formulas, each against figures worked by hand ------------------------------------------


def test_the_kv_cache_a_request_moves() -> None:
    """Llama 3.1 70B's FP8 cache: 80 layers × 8 KV heads × 128 × (K and V) × 1 B = 163,840 B a
    token (its config.json), 800 prompt tokens 131,072,000 B, at 50 GB/s 2.62144 ms; one pool
    moves nothing."""
    moved = request_kv_transfer_bytes(800, 80 * 8 * 128 * 2 * 1)
    assert moved == 131_072_000
    assert request_kv_transfer_s(1, moved, 50e9) == pytest.approx(2.62144e-3, rel=1e-12)
    assert request_kv_transfer_s(0, moved, 50e9) == 0


@pytest.mark.parametrize(
    ("budget", "prompt", "prompts"),
    [(8192, 800, 10), (8192, 24_000, 1), (2048, 2048, 1), (2048, 1000, 2), (8192, 0, 8192)],
)
def test_prompts_a_prefill_step_runs(budget: int, prompt: int, prompts: int) -> None:
    assert prefill_pool_prompts_per_step(budget, prompt) == prompts


def test_a_prompts_share_of_a_full_prefill_step() -> None:
    """Four 800-token prompts a step, 1e13 FLOP each at 1e15 FLOP/s (10 ms) and 1 ms of
    padding a step (0.25 ms each), over a 20 ms weight read shared four ways (5 ms): compute
    bound, 10.25 ms; + 800 × 1 µs of all-reduce + 2 ms of overhead ÷ 4 = 11.55 ms. Alone (one a
    step) the weight read binds: 20 + 0.8 + 2 = 22.8 ms."""
    assert prefill_pool_s_per_prompt(1e13, 1e15, 1e-3, 0.02, 800, 1e-6, 2e-3, 4) == pytest.approx(
        11.55e-3, rel=1e-12
    )
    alone = prefill_pool_s_per_prompt(1e13, 1e15, 1e-3, 0.02, 800, 1e-6, 2e-3, 1)
    assert alone == pytest.approx(22.8e-3, rel=1e-12)


@pytest.mark.parametrize(
    ("ttft", "target", "prefill", "limit"),
    [
        # G = 0.6 s: 1 − 0.2 × ln 20 ÷ 1.2 = 1 − 0.499288 = 0.500712
        (0.4, 1.0, 0.2, 1 - 0.2 * math.log(20) / 1.2),
        (0.4, math.nan, 0.2, 1.0),  # no TTFT target: the pool may run full
        (1.2, 1.0, 0.2, 1.0),  # out of reach anyway: the target check says so
        (0.99, 1.0, 0.2, 0.05),  # 10 ms of room: only where one prompt in twenty waits
    ],
)
def test_the_prefill_pools_utilisation_limit(
    ttft: float, target: float, prefill: float, limit: float
) -> None:
    assert prefill_pool_utilisation_limit(ttft, target, prefill) == pytest.approx(limit, rel=1e-12)


@pytest.mark.parametrize(
    ("pools", "demanded", "replica", "limit", "replicas"),
    [
        (1, 240_000, 100_000, 0.857, 3),  # 2.80 replicas' work: ⌊2.80⌋ + 1
        (1, 200_000, 100_000, 1.0, 3),  # two would run at 100 %: their queue would not end
        (1, 1000, 100_000, 0.5, 1),
        (0, 240_000, 100_000, 0.857, 0),  # one pool: no prefill pool
    ],
)
def test_the_prefill_pool_is_sized_by_prompt_tokens_a_second(
    pools: int, demanded: float, replica: float, limit: float, replicas: int
) -> None:
    assert prefill_pool_replicas(pools, demanded, replica, limit) == replicas


def test_the_wait_for_a_prefill_replica() -> None:
    """At ρ = 0.8 and 0.2 s prefills: mean 0.8 × 0.2 ÷ (2 × 0.2) = 0.4 s; 95th percentile
    0.2 × ln 16 ÷ 0.4 = 1.386294 s; nobody waits at ρ = 0 and one in twenty at most at 0.05;
    a full pool's wait has no bound."""
    assert prefill_pool_wait_s(0.8, 0.2) == pytest.approx(0.4, rel=1e-12)
    assert prefill_pool_wait_p95_s(0.8, 0.2) == pytest.approx(0.2 * math.log(16) / 0.4)
    assert prefill_pool_wait_s(0.0, 0.2) == 0 and prefill_pool_wait_p95_s(0.04, 0.2) == 0
    assert math.isnan(prefill_pool_wait_p95_s(1.0, 0.2))


def test_the_limit_keeps_the_95th_percentile_wait_within_the_room() -> None:
    """At the limit the 95th-percentile wait is within G (the bound takes ln 20 for ln 20ρ)."""
    for ttft, target, prefill in [(0.4, 1.0, 0.2), (0.05, 1.0, 0.03), (2.0, 10.0, 1.5)]:
        rho = prefill_pool_utilisation_limit(ttft, target, prefill)
        assert ttft + prefill_pool_wait_p95_s(rho, prefill) <= target


# The plan's candidates ----------------------------------------------------------------------


def test_default_layouts_are_aggregated_only() -> None:
    table = evaluate(load_catalog(SHIPPED)).table
    assert set(table["disaggregated"]) == {0}
    assert (table["prefill_pool_replicas"] == 0).all()


@pytest.fixture(scope="module")
def both() -> pd.DataFrame:
    """The shipped catalogs planned in closed form with both serving layouts."""
    return evaluate(with_layouts(["aggregated", "disaggregated"])).table


def pair(table: pd.DataFrame, workload: str, model: str, hardware: str) -> pd.DataFrame:
    """A combination's aggregated and disaggregated rows at TP 1 in FP8, by the layout key."""
    rows = table[
        (table["workload"] == workload)
        & (table["model"] == model)
        & (table["hardware"] == hardware)
        & (table["precision"] == "fp8")
        & (table["tensor_parallel"] == 1)
    ]
    return rows.set_index("disaggregated", drop=False)


def test_every_candidate_is_also_tried_disaggregated(both: pd.DataFrame) -> None:
    """Each combination's one-device replica in both layouts; larger tensor-parallel sizes up
    to the first that meets the targets, in each layout apart."""
    keys = ["hardware", "model", "precision", "workload"]
    single = both[(both["tensor_parallel"] == 1) & (both["expert_parallel"] == 1)]
    counts = single.groupby(keys)["disaggregated"].agg(["min", "max", "count"])
    assert (counts["min"] == 0).all() and (counts["max"] == 1).all()
    assert (counts["count"] == 2).all()
    assert (both["candidate"].str.endswith("|pd") == (both["disaggregated"] == 1)).all()


def test_a_disaggregated_chat_on_mi325x(both: pd.DataFrame) -> None:
    """The assistant's 2,048 users on Llama 3.1 70B in FP8, one MI325X a replica.

    Decode pool: the users' sequences, as the aggregated replica holds them, ⌈2,048 ÷ its
    batch⌉. Prefill pool: the forecast's uncached prompt tokens a second over one replica's,
    each below its limit. The TTFT floor gains the 800-token cache's move, 163,840 B a token at
    50 GB/s: 2.62144 ms; a decode replica never stalls for a prompt. Devices: both pools."""
    rows = pair(both, "chat", "llama-3.1-70b", "mi325x-256gb")
    one, two = rows.loc[0], rows.loc[1]
    assert two["candidate"] == "mi325x-256gb|llama-3.1-70b|fp8|chat|1|pd"
    assert two["ttft_s"] - one["ttft_s"] == pytest.approx(2.62144e-3, rel=1e-9)
    decode = math.ceil(2048 / two["decode_batch"])
    assert two["replicas_planned"] - two["prefill_pool_replicas"] == decode
    demanded = two["forecast_requests_per_s"] * two["prefill_tokens_mean"]
    capacity = two["prefill_tokens_per_s_per_replica"] * two["prefill_pool_utilisation_limit"]
    assert two["prefill_pool_replicas"] == math.floor(demanded / capacity) + 1
    assert two["prefill_pool_utilisation"] < two["prefill_pool_utilisation_limit"]
    assert two["prefill_stall_s"] == 0 and one["prefill_stall_s"] > 0
    assert two["devices_needed"] == two["replicas_planned"]
    label = short_label(two)
    pools = f"prefill {int(two['prefill_pool_replicas'])} + decode {decode}"
    assert label == f"{int(two['devices_needed'])} × mi325x-256gb (TP 1, {pools}) · fp8"


def test_a_disaggregated_ttft_at_load(both: pd.DataFrame) -> None:
    """At load a disaggregated prompt waits for a prefill replica (M/D/1 mean), is prefilled
    alone and moved: preprocessing + wait + median prefill + transfer."""
    two = pair(both, "document-analysis", "llama-3.1-70b", "mi325x-256gb").loc[1]
    expected = (
        two["preprocess_s"]
        + two["prefill_pool_wait_s"]
        + two["median_prefill_s"]
        + two["request_kv_transfer_s"]
    )
    assert two["ttft_load_s"] == pytest.approx(expected, rel=1e-12)
    rho = two["prefill_pool_utilisation"]
    assert two["prefill_pool_wait_s"] == pytest.approx(rho * two["prefill_s"] / (2 * (1 - rho)))


def test_a_small_dense_model_at_low_load_stays_aggregated(both: pd.DataFrame) -> None:
    """The ticket summaries (a few thousand a day) on Llama 3.1 8B: one replica does both, and
    a disaggregated deployment needs a second for the prompts, so it costs more."""
    rows = both[(both["workload"] == "ticket-summaries") & (both["model"] == "llama-3.1-8b")]
    ok = rows[rows["meets_targets"].astype(bool)].sort_values("cost_usd", kind="stable")
    assert ok.iloc[0]["disaggregated"] == 0
    rows = pair(both, "ticket-summaries", "llama-3.1-8b", "h100-sxm-80gb")
    assert rows.loc[0, "devices_needed"] == 1 and rows.loc[1, "devices_needed"] == 2


def small_catalog(folder: Path) -> Path:
    """The shipped catalogs cut to one dense model on two devices at one precision for two
    workloads, trying both serving layouts."""
    from test_expert_parallel import cut_catalog

    keep = {
        "models": {"llama-3.1-8b"},
        "hardware": {"h200-sxm-141gb", "l4-24gb"},
        "precisions": {"fp8"},
        "workloads": {"chat", "document-analysis"},
    }
    return cut_catalog(folder, keep, {"serving_layouts": ["aggregated", "disaggregated"]})


@pytest.mark.parametrize("engine", ["libreoffice", "gnumeric"])
def test_spreadsheet_engines_compute_the_disaggregated_layout(tmp_path: Path, engine: str) -> None:
    """The workbook of a catalog with both serving layouts, the assistant's line served
    disaggregated: every Plan cell the spreadsheet engine computes, through both branches of the
    layout-selecting formulas, is the planner's, and so is every Schedule cell, whose replicas
    count both pools month by month."""
    from spreadsheet import computed_values, recalculate_many, require
    from test_workbook import assert_plan_equals, assert_sheets_equal, cached

    from planner.outputs.workbook import write_workbook
    from planner.plan.deployment import Line
    from planner.plan.schedule import workload_schedule

    require(engine)
    catalog = load_catalog(small_catalog(tmp_path / "catalogs"))
    results = evaluate(catalog)
    assert set(results.table["disaggregated"]) == {0, 1}
    row = pair(results.table, "chat", "llama-3.1-8b", "h200-sxm-141gb").loc[1]
    schedule = workload_schedule(catalog, Line("chat", "llama-3.1-8b", row, "buy", "cheapest"))
    assert schedule is not None and row["prefill_pool_replicas"] > 0
    book = write_workbook(results, tmp_path / "pd.xlsx", schedules=[schedule])
    (out,) = recalculate_many([book], tmp_path / f"recalculated-{engine}", engine=engine)
    assert_plan_equals(computed_values(out, "Plan"), results)
    assert_sheets_equal(cached(book, "Schedule"), computed_values(out, "Schedule"))


def test_a_disaggregated_schedule_counts_both_pools(both: pd.DataFrame) -> None:
    """At today's traffic the schedule's replicas are the plan's, both pools; at twice the
    traffic the prefill pool is sized again over twice the prompt tokens, the decode pool over
    twice the users."""
    from planner.plan.schedule import replicas_at

    two = pair(both, "chat", "llama-3.1-70b", "mi325x-256gb").loc[1]
    assert replicas_at(two, 1.0) == two["replicas_planned"]
    room = two["prefill_tokens_per_s_per_replica"] * two["prefill_pool_utilisation_limit"]
    prefill = math.floor(2 * two["prefill_tokens_per_s_demanded"] / room) + 1
    decode = math.ceil(2 * 2048 / two["decode_batch"])
    assert replicas_at(two, 2.0) == prefill + decode


def test_disaggregated_pools_under_a_closed_loop_are_not_simulated(both: pd.DataFrame) -> None:
    """The assistant's users send their next message when the last answer came back through
    both pools, which a replay of send times cannot follow: closed form only, said so."""
    from planner.plan.selection import simulable
    from planner.serving.sizing import size_candidate

    rows = pair(both, "chat", "llama-3.1-8b", "h100-sxm-80gb")
    sized = size_candidate(with_layouts(["aggregated", "disaggregated"]), rows.loc[1].to_dict())
    assert sized["sim_bound"] == "layout"
    assert sized["sim_reason"].startswith("not simulated: a closed loop's next request waits")
    assert sized["sim_runs"] == 0
    assert simulable(rows).tolist() == [True, False]
    open_loop = pair(both, "document-analysis", "llama-3.1-8b", "h100-sxm-80gb")
    assert simulable(open_loop).tolist() == [True, True]


@pytest.mark.parametrize(
    ("option", "replicas", "words"),
    [
        ({"tensor_parallel": 2}, 2, "2 replicas of tensor parallel 2"),
        ({"tensor_parallel": 8, "expert_parallel": 8}, 1, "1 replica of expert parallel 8"),
        (
            {"tensor_parallel": 1, "disaggregated": 1, "prefill_pool_replicas": 5},
            14,
            "5 replicas of tensor parallel 1 for prompts and 9 for decoding",
        ),
        ({"tensor_parallel": 1}, math.nan, "? replicas of tensor parallel 1"),
    ],
)
def test_the_report_says_both_pools(option: dict, replicas: float, words: str) -> None:
    from planner.plan.labels import replicas_in_words

    assert replicas_in_words(option, replicas) == words


def test_a_large_moe_at_high_load_takes_another_layout() -> None:
    """The assistant's 2,048 users on DeepSeek-V3 (671B, 256 experts), closed form with every
    layout tried: a tensor-parallel replica holds at most the engine's 256 sequences, so it
    takes 2,048 ÷ 256 = 8 replicas of at least two devices, 16; an expert-parallel replica of 8
    serves 256 on each device (DP attention), 2,048 on one replica: the cheapest option is a
    layout other than one pool of tensor-parallel replicas, on fewer devices than the best
    such pool."""
    catalog = with_layouts(["aggregated", "disaggregated"], expert_parallel_sizes=[1, 8])
    table = evaluate(catalog).table
    rows = table[(table["workload"] == "chat") & (table["model"] == "deepseek-v3")]
    ok = rows[rows["meets_targets"].astype(bool)].sort_values("cost_usd", kind="stable")
    best = ok.iloc[0]
    assert best["expert_parallel"] == 8 or best["disaggregated"] == 1
    plain = ok[(ok["expert_parallel"] == 1) & (ok["disaggregated"] == 0)].iloc[0]
    assert plain["devices_needed"] >= 16 > best["devices_needed"]
    assert plain["cost_usd"] > best["cost_usd"]
    # the report gives the best such pool beside it, with both costs
    from planner.outputs.formatting import usd
    from planner.outputs.sections import _plain_alternative

    rows = rows.assign(eligible=rows["meets_targets"].astype(bool))
    text = _plain_alternative(best, rows, catalog)
    assert text.startswith(" One pool of tensor-parallel replicas, the best such option")
    assert f"{usd(plain['cost_usd'])} USD over 36 months against {usd(best['cost_usd'])}" in text
    assert _plain_alternative(plain, rows, catalog) == ""


def test_a_runs_diff_keeps_the_layouts_apart() -> None:
    """The diff keys a candidate by its ids and tensor-parallel size as before, and a layout's
    by ``/ep8`` or ``/pd`` after them: one combination's three layouts are three keys, each read
    back into its label."""
    from planner.diff.outputs import candidate_keys, candidate_label

    ids = {"hardware": "h200", "model": "m", "precision": "fp8", "workload": "chat"}
    table = pd.DataFrame(
        [
            {**ids, "tensor_parallel": 8, "expert_parallel": 1, "disaggregated": 0},
            {**ids, "tensor_parallel": 8, "expert_parallel": 8, "disaggregated": 0},
            {**ids, "tensor_parallel": 8, "expert_parallel": 1, "disaggregated": 1},
        ]
    )
    keys = candidate_keys(table)
    assert keys == ["h200/m/fp8/chat/8", "h200/m/fp8/chat/8/ep8", "h200/m/fp8/chat/8/pd"]
    assert candidate_keys(table.drop(columns=["expert_parallel", "disaggregated"]))[0] == keys[0]
    labels = [candidate_label(k) for k in keys]
    assert labels == [
        "chat × m: h200 (TP 8) · fp8",
        "chat × m: h200 (EP 8) · fp8",
        "chat × m: h200 (TP 8, disaggregated) · fp8",
    ]


def test_the_formulas_appendix_prints_the_layouts_a_run_tries() -> None:
    """A run of one pool of tensor-parallel replicas prints no formula of the other layouts and
    says so; a run that tries disaggregated pools prints theirs."""
    from planner.outputs.report import appendix_metrics, untried_features

    plain = evaluate(load_catalog(SHIPPED))
    names = {m.name for m in appendix_metrics(plain)}
    assert "prefill_pool_replicas" not in names and "expert_alltoall_s_per_step" not in names
    assert "pipeline_parallel_itl_s" not in names
    assert "ttft_s" in names and "prefill_pool_replicas" in plain.table
    assert untried_features(plain.table) == [
        "expert parallelism",
        "pipelines across nodes",
        "disaggregated prefill and decode",
        "speculative decoding",
    ]
    assert "plain_itl_s" not in names and "speculative_speedup" not in names
    both = evaluate(with_layouts(["aggregated", "disaggregated"]))
    names = {m.name for m in appendix_metrics(both)}
    assert "prefill_pool_replicas" in names and "expert_alltoall_s_per_step" not in names
    assert untried_features(both.table) == [
        "expert parallelism",
        "pipelines across nodes",
        "speculative decoding",
    ]
