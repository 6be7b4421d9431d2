"""Simulated figures reach the plan through the Simulated sheet and change the sizing."""

from __future__ import annotations

import math

import pandas as pd

from planner.catalog import load_catalog
from planner.plan.sweep import evaluate
from planner.plan.tables import SIMULATED_COLUMNS, SIMULATION_INPUTS, simulation_input_column


def sim_row(**overrides):
    row = {
        "hardware": "seed-16gib",
        "model": "invented-4gib",
        "precision": "bf16",
        "workload": "seed-4k",
        "tensor_parallel": 1,
        "sim_replicas_needed": 3.0,
        "meets_targets_sim": True,
        "ttft_p50_s": 0.1,
        "ttft_p95_s": 0.2,
        "ttft_p99_s": 0.3,
        "itl_p50_s": 0.01,
        "itl_p95_s": 0.02,
        "itl_p99_s": 0.03,
        "e2e_p50_s": 5.0,
        "e2e_p95_s": 6.0,
        "e2e_p99_s": 7.0,
        "task_p95_s": 6.0,
        "sim_throughput_tokens_per_s": 800.0,
        "queued_fraction": 0.1,
        "rejected_fraction": 0.0,
        "preempted_fraction": 0.0,
        "sim_reason": "meets targets with 3 replicas",
    }
    row.update(overrides)
    return row


def test_candidate_ids(seed_dir):
    table = evaluate(load_catalog(seed_dir)).table
    assert table.loc[1, "candidate"] == "seed-16gib|invented-4gib|bf16|seed-4k|1"


def test_without_simulation_the_closed_form_sizes(seed_dir):
    table = evaluate(load_catalog(seed_dir)).table
    row = table[(table.model == "invented-4gib") & (table.workload == "seed-4k")].iloc[0]
    assert not row["simulated"] and row["simulation"] == "not simulated"
    assert math.isnan(row["ttft_p95_s"])
    assert row["replicas_planned"] == row["replicas_needed"] == 1
    assert row["devices_needed"] == 1


def test_simulation_raises_replicas_and_fills_percentiles(seed_dir):
    simulated = pd.DataFrame([sim_row()])
    results = evaluate(load_catalog(seed_dir), simulated=simulated)
    sheet = results.inputs.sheets["Simulated"]
    recorded = [simulation_input_column(n) for n in SIMULATION_INPUTS]
    assert list(sheet.columns) == [c.name for c in SIMULATED_COLUMNS] + recorded
    assert sheet.loc[0, "id"] == "seed-16gib|invented-4gib|bf16|seed-4k|1"
    table = results.table
    row = table[(table.model == "invented-4gib") & (table.workload == "seed-4k")].iloc[0]
    # the sheet records the inputs the figures were simulated with: the Plan row's values
    assert sheet.loc[0, "sim_input_kv_budget_bytes"] == row["kv_budget_bytes"] == 8 * 2**30
    assert sheet.loc[0, "sim_input_prompt_tokens"] == 3072
    assert math.isnan(sheet.loc[0, "sim_input_ttft_p95_target_s"])  # the seed sets no target
    assert row["simulation"] == "simulated"
    assert row["simulated"] and row["meets_targets_planned"]
    assert row["ttft_p95_s"] == 0.2 and row["rejected_fraction"] == 0.0
    assert row["replicas_planned"] == 3  # max(closed form 1, simulated 3)
    assert row["devices_needed"] == 3
    other = table[(table.model == "invented-4gib") & (table.workload != "seed-4k")].iloc[0]
    assert not other["simulated"]


def test_a_simulated_miss_blocks_the_recommendation(seed_dir):
    simulated = pd.DataFrame(
        [
            sim_row(
                sim_replicas_needed=float("nan"),
                meets_targets_sim=False,
                sim_reason="itl p95 0.08 s > 0.05 s target at any replica count",
            )
        ]
    )
    table = evaluate(load_catalog(seed_dir), simulated=simulated).table
    row = table[(table.model == "invented-4gib") & (table.workload == "seed-4k")].iloc[0]
    assert row["meets_targets"] and not row["meets_targets_planned"]
    assert math.isnan(row["replicas_planned"])
    assert not row["eligible"]
    assert row["status"] == "simulation: itl p95 0.08 s > 0.05 s target at any replica count"


def test_unsimulated_leaders_are_simulated_next():
    from planner.plan.selection import unsimulated_leaders

    ranks = pd.DataFrame(
        {
            "workload": ["w"] * 5 + ["v"] * 2,
            "model": ["m"] * 7,
            "rank": [1, 2, 3, 4, pd.NA, 1, 2],
            "simulated": [False, False, True, False, False, True, False],
        }
    )
    ranks["rank"] = ranks["rank"].astype("Int64")
    # group w: ranks 1 and 2 were never simulated and stand above the simulated rank 3;
    # group v: its leader was simulated already
    assert list(unsimulated_leaders(ranks, 3).index) == [0, 1]
    assert list(unsimulated_leaders(ranks, 1).index) == [0]


def test_the_plan_simulates_every_leader(seed_copy):
    from planner.pipeline import plan
    from planner.plan.recommend import ranked

    hardware = (seed_copy / "hardware.yaml").read_text()
    hardware = hardware.replace(
        "    compute: {bf16: 100 TFLOPS}",
        "    compute: {bf16: 100 TFLOPS}\n    power: 300 W\n    price: {purchase_usd: 10000}",
    )
    (seed_copy / "hardware.yaml").write_text(hardware)
    text = (seed_copy / "assumptions.yaml").read_text()
    (seed_copy / "assumptions.yaml").write_text(
        text + "  electricity_usd_per_kwh: 0.1\n  simulated_requests: 300\n"
    )
    results = plan(load_catalog(seed_copy), processes=1)
    ranks = ranked(results.table)
    leaders = ranks[ranks["rank"] == 1]
    assert len(leaders) >= 1
    assert leaders["simulated"].all()
