"""A disaggregated expert-parallel candidate whose prefill pool has an expert-parallel size of
its own (SGLang's 96 H100s: prefill replicas of EP 32 beside decode replicas of EP 72): its
pools are the two plain layouts' pools, counted, labelled, launched and recalculated as such."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import yaml
from test_expert_parallel import cut_catalog

from planner.catalog import Catalog, load_catalog
from planner.plan.sweep import evaluate

#: DeepSeek-V3's weights outside the routed experts and of the routed experts, FP8 [B]
#: (tests/test_expert_parallel.py works both out from the model card).
OUTSIDE, ROUTED = 18_971_006_464, 653_908_770_816

#: Each device at EP 32 with 32 redundant slots holds 288 ÷ 32 = 9 of the 256 experts; at EP
#: 72, 4 of them.
AT_EP_32 = OUTSIDE + ROUTED * 9 // 256
AT_EP_72 = OUTSIDE + ROUTED * 4 // 256


def sglang_catalog(folder: Path, **more: object) -> Path:
    """The shipped catalogs cut to DeepSeek-V3 in FP8 on the H100 SXM (8 a node) for the
    assistant and the document analysis, on SGLang with 32 redundant expert slots, trying EP 32
    and 72 aggregated and disaggregated, and each disaggregated one's prefill pool at EP 32 and
    72 too."""
    keep = {
        "models": {"deepseek-v3"},
        "hardware": {"h100-sxm-80gb"},
        "precisions": {"fp8"},
        "workloads": {"chat", "document-analysis"},
    }
    assumptions = {
        "tensor_parallel_sizes": [8],
        "expert_parallel_sizes": [32, 72],
        "redundant_experts": 32,
        "serving_layouts": ["aggregated", "disaggregated"],
        "prefill_parallel_sizes": [32, 72],
        "engine": {"name": "sglang", "version": "0.4"},
    } | more
    return cut_catalog(folder, keep, assumptions)


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    return load_catalog(sglang_catalog(tmp_path_factory.mktemp("sglang") / "catalogs"))


@pytest.fixture(scope="module")
def table(catalog: Catalog) -> pd.DataFrame:
    return evaluate(catalog).table


def layout(table: pd.DataFrame, workload: str, ep: int, pd_: int, px: int) -> pd.Series:
    """The one row of ``workload`` at EP ``ep``, disaggregated ``pd_``, prefill size ``px``."""
    rows = table[
        (table["workload"] == workload)
        & (table["expert_parallel"] == ep)
        & (table["disaggregated"] == pd_)
        & (table["prefill_parallel"] == px)
    ]
    assert len(rows) == 1
    return rows.iloc[0]


def test_each_disaggregated_expert_parallel_candidate_also_tries_the_other_prefill_sizes(
    table: pd.DataFrame,
) -> None:
    """EP 32 and 72 both split 256 + 32 = 288 slots and fill whole nodes of 8: each
    disaggregated expert-parallel candidate is also tried with its prefill pool at the other
    size; the aggregated ones and the tensor-parallel ones never are."""
    layouts = set(
        table[["expert_parallel", "disaggregated", "prefill_parallel"]].itertuples(
            index=False, name=None
        )
    )
    assert layouts == {
        (1, 0, 0), (32, 0, 0), (72, 0, 0),
        (1, 1, 0), (32, 1, 0), (72, 1, 0),
        (32, 1, 72), (72, 1, 32),
    }  # fmt: skip


@pytest.mark.parametrize(
    ("per_node", "redundant", "sizes", "tried"),
    [
        # 288 slots: 48 splits them (6 a device) and fills 6 nodes of 8; 64 does not split them
        (8, 32, [48, 64], {48}),
        # 256 slots: 64 splits them; 12 fills neither one node of 8 nor whole nodes
        (8, 0, [12, 64], {64}),
        # nodes of 4: 12 is three whole nodes, and splits 288
        (4, 32, [12], {12}),
    ],
)
def test_a_prefill_size_is_tried_where_it_splits_the_slots_and_fills_nodes(
    tmp_path: Path, per_node: int, redundant: int, sizes: list[int], tried: set[int]
) -> None:
    folder = sglang_catalog(
        tmp_path / "catalogs",
        prefill_parallel_sizes=sizes,
        redundant_experts=redundant,
        expert_parallel_sizes=[16],
        serving_layouts=["disaggregated"],
    )
    path = folder / "hardware.yaml"
    data = yaml.safe_load(path.read_text())
    data["hardware"][0]["devices_per_node"] = per_node
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    from planner.plan.candidates import candidates

    found = candidates(load_catalog(folder))
    assert set(found["prefill_parallel"]) - {0} == tried


def test_the_prefill_pool_is_the_ep_32_pool_and_the_decode_pool_the_ep_72_one(
    table: pd.DataFrame,
) -> None:
    """Decode at EP 72, prefill at EP 32: every prompt-side figure is the plain EP 32
    disaggregated candidate's (its weights per device 18,971,006,464 + 653,908,770,816 × 9 ÷
    256 = 41,959,986,688 B), every decode-side figure the plain EP 72 one's (29,188,331,008 B),
    and each pool is as large as there."""
    for workload in ("chat", "document-analysis"):
        mixed = layout(table, workload, 72, 1, 32)
        prefill, decode = layout(table, workload, 32, 1, 0), layout(table, workload, 72, 1, 0)
        assert mixed["prefill_hw_weight_bytes_per_device"] == AT_EP_32 == 41_959_986_688
        assert mixed["weight_bytes_per_device"] == AT_EP_72 == 29_188_331_008
        for column in (
            "prefill_hw_tensor_parallel",
            "prefill_hw_expert_parallel",
            "prefill_pool_s_per_prompt",
            "prefill_hw_expert_alltoall_s_per_token",
            "prefill_hw_kv_budget_bytes",
            "prefill_s",
            "ttft_s",
            "prefill_pool_planned",
        ):
            assert mixed[column] == prefill[column], column
        for column in ("itl_s", "kv_budget_bytes", "decode_batch", "device_batch"):
            assert mixed[column] == decode[column], column
        decoding = decode["replicas_planned"] - decode["prefill_pool_planned"]
        assert mixed["replicas_planned"] - mixed["prefill_pool_planned"] == decoding
        assert bool(mixed["prefill_pool_fits"])
        assert mixed["candidate"].endswith("|72|ep72|pd|prefill-ep32")


@pytest.mark.parametrize(
    ("workload", "prefill", "decode"), [("chat", 1, 1), ("document-analysis", 11, 1)]
)
def test_devices_and_nodes_count_each_pool_at_its_own_size(
    table: pd.DataFrame, workload: str, prefill: int, decode: int
) -> None:
    """The assistant: 1 prefill replica of 32 devices (4 nodes) and 1 decode replica of 72
    (9 nodes): 104 devices on 13 nodes, 40 fewer than as many EP 72 replicas. The document
    analysis: 11 × 32 + 72 = 424 devices on 44 + 9 = 53 nodes."""
    row = layout(table, workload, 72, 1, 32)
    assert (row["prefill_pool_planned"], row["replicas_planned"]) == (prefill, prefill + decode)
    assert row["devices_needed"] == prefill * 32 + decode * 72
    assert row["prefill_pool_device_offset"] == prefill * (32 - 72)
    assert row["nodes_needed"] == prefill * 4 + decode * 9
    flipped = layout(table, workload, 32, 1, 72)  # decode at 32, prefill at 72
    assert (
        flipped["devices_needed"]
        == flipped["prefill_pool_planned"] * 72
        + (flipped["replicas_planned"] - flipped["prefill_pool_planned"]) * 32
    )


def test_the_option_says_each_pools_size(table: pd.DataFrame) -> None:
    from planner.plan.labels import replicas_in_words, short_label

    row = layout(table, "chat", 72, 1, 32)
    assert short_label(row) == ("104 × h100-sxm-80gb (EP 72, prefill 1 of EP 32 + decode 1) · fp8")
    assert replicas_in_words(row, row["replicas_planned"]) == (
        "1 replica of expert parallel 32 over 4 nodes for prompts and 1 of expert parallel 72 "
        "over 9 nodes for decoding"
    )


def test_the_simulation_steps_each_pool_as_its_plain_layout(
    table: pd.DataFrame, catalog: Catalog
) -> None:
    """The pools' simulation steps the prefill replicas as the EP 32 candidate's and the decode
    replicas as the EP 72 one's."""
    from planner.serving.configs import on_prefill_hardware, step_model

    a = catalog.assumptions
    mixed = layout(table, "document-analysis", 72, 1, 32).to_dict()
    prefill = layout(table, "document-analysis", 32, 1, 0).to_dict()
    decode = layout(table, "document-analysis", 72, 1, 0).to_dict()
    assert step_model(on_prefill_hardware(mixed), a) == step_model(on_prefill_hardware(prefill), a)
    assert step_model(mixed, a) == step_model(decode, a)
    assert step_model(on_prefill_hardware(mixed), a) != step_model(mixed, a)


def test_the_launch_files_start_each_pool_at_its_own_size(
    table: pd.DataFrame, catalog: Catalog
) -> None:
    from planner.deploy.engines import launch
    from planner.deploy.settings import launch_settings

    row = layout(table, "chat", 72, 1, 32)
    prefill, decode = launch_settings(catalog, row)
    assert (prefill.role, prefill.expert_parallel, prefill.devices_per_replica) == (
        "prefill",
        32,
        32,
    )
    assert (prefill.nodes_per_replica, prefill.replicas, prefill.tensor_parallel) == (4, 1, 32)
    assert (decode.role, decode.expert_parallel, decode.devices_per_replica) == ("decode", 72, 72)
    assert (decode.nodes_per_replica, decode.replicas, decode.tensor_parallel) == (9, 1, 72)
    assert "--ep-size 32" in " ".join(launch(prefill).argv)
    assert "--ep-size 72" in " ".join(launch(decode).argv)


def test_a_runs_diff_keys_the_prefill_size(table: pd.DataFrame) -> None:
    from planner.diff.outputs import candidate_keys, candidate_label

    keys = candidate_keys(table)
    mixed = [k for k in keys if k.endswith("/pd/prefill-ep32")]
    assert len(mixed) == 2 and len(set(keys)) == len(keys)
    assert "prefill" in candidate_label(mixed[0]) and "EP 32" in candidate_label(mixed[0])


def test_the_schedule_counts_each_pool_at_its_size(table: pd.DataFrame, catalog: Catalog) -> None:
    """Month 0 of the assistant's schedule needs the Plan's 13 nodes (2 replicas × 72 devices
    less the prefill replica's 40 fewer, 104 devices in nodes of 8) and its forecast's spare
    node (N+1)."""
    from planner.plan.deployment import Line
    from planner.plan.schedule import workload_schedule

    row = layout(table, "chat", 72, 1, 32)
    schedule = workload_schedule(catalog, Line("chat", "deepseek-v3", row, "buy", "cheapest"))
    assert schedule is not None
    spare = catalog.get("workloads", "chat").forecast.spare_nodes
    assert spare == 1
    assert schedule.nodes[0] == row["nodes_needed"] + spare == 14


@pytest.mark.parametrize("engine", ["libreoffice", "gnumeric"])
def test_spreadsheet_engines_compute_pools_of_two_sizes(
    tmp_path: Path, engine: str, catalog: Catalog, table: pd.DataFrame
) -> None:
    """Every Plan cell the spreadsheet engine computes for the catalog with pools of two sizes,
    and every Schedule cell of the line served so, is the planner's."""
    from spreadsheet import computed_values, recalculate_many, require
    from test_workbook import assert_plan_equals, assert_sheets_equal, cached

    from planner.outputs.workbook import write_workbook
    from planner.plan.deployment import Line
    from planner.plan.schedule import workload_schedule

    require(engine)
    results = evaluate(catalog)
    row = layout(results.table, "chat", 72, 1, 32)
    schedule = workload_schedule(catalog, Line("chat", "deepseek-v3", row, "buy", "cheapest"))
    book = write_workbook(results, tmp_path / "px.xlsx", schedules=[schedule])
    (out,) = recalculate_many([book], tmp_path / f"recalculated-{engine}", engine=engine)
    assert_plan_equals(computed_values(out, "Plan"), results)
    assert_sheets_equal(cached(book, "Schedule"), computed_values(out, "Schedule"))


def test_the_pools_are_sized_by_simulation_at_their_own_sizes(tmp_path: Path) -> None:
    """The document analysis with a 20 s TTFT target, simulated with 400 requests: the prefill
    pool of EP 32 replicas needs as many (11) as the plain EP 32 candidate's, the decode pool
    one EP 72 replica: 11 × 32 + 72 = 424 devices."""
    from planner.serving.sizing import size_candidate

    folder = sglang_catalog(tmp_path / "catalogs")
    path = folder / "workloads.yaml"
    data = yaml.safe_load(path.read_text())
    analysis = next(w for w in data["workloads"] if w["id"] == "document-analysis")
    analysis["targets"]["ttft_p95"] = "20 s"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    catalog = load_catalog(folder)
    table = evaluate(catalog).table
    sized = {
        (ep, px): size_candidate(
            catalog, layout(table, "document-analysis", ep, 1, px).to_dict(), n_requests=400
        )
        for ep, px in ((72, 32), (32, 0))
    }
    mixed, plain = sized[72, 32], sized[32, 0]
    assert mixed["meets_targets_sim"] and plain["meets_targets_sim"]
    p = mixed["sim_prefill_pool_replicas"]
    assert p == plain["sim_prefill_pool_replicas"] == 11
    assert mixed["sim_replicas_needed"] == p + 1
    assert mixed["sim_devices_needed"] == p * 32 + 72 == 424
    assert mixed["sim_reason"] == "meets targets with 11 prefill + 1 decode replicas (424 devices)"


def dense_catalog(folder: Path) -> Path:
    """The shipped catalogs cut to Llama 3.1 70B in FP8 on the H100 SXM for the assistant and
    the document analysis, trying TP 1, 2, 4 and 8 aggregated and disaggregated, and each
    disaggregated one's prefill pool at TP 2, 4 and 8 too."""
    keep = {
        "models": {"llama-3.1-70b"},
        "hardware": {"h100-sxm-80gb"},
        "precisions": {"fp8"},
        "workloads": {"chat", "document-analysis"},
    }
    assumptions = {
        "tensor_parallel_sizes": [1, 2, 4, 8],
        "serving_layouts": ["aggregated", "disaggregated"],
        "prefill_parallel_sizes": [2, 4, 8],
    }
    return cut_catalog(folder, keep, assumptions)


@pytest.fixture(scope="module")
def dense(tmp_path_factory: pytest.TempPathFactory) -> Catalog:
    return load_catalog(dense_catalog(tmp_path_factory.mktemp("dense") / "catalogs"))


def tensor(table: pd.DataFrame, workload: str, tp: int, px: int) -> pd.Series:
    """The one disaggregated row of ``workload`` at TP ``tp`` with prefill replicas of ``px``."""
    rows = table[
        (table["workload"] == workload)
        & (table["tensor_parallel"] == tp)
        & (table["disaggregated"] == 1)
        & (table["prefill_parallel"] == px)
    ]
    assert len(rows) == 1
    return rows.iloc[0]


def test_a_tensor_parallel_prefill_pool_of_its_own_size_by_hand(dense: Catalog) -> None:
    """The document analysis (24,000-token prompts) decoded at TP 2, prefilled at TP 8: a
    prefill device holds 1 of Llama 3.1 70B's 8 KV heads, 2 × 80 layers × 128 × 1 B = 20,480 B
    a token, where a decode device holds 4 of them, 81,920 B; the cache crosses at the larger,
    24,000 × 81,920 = 1,966,080,000 B a device. The prefill side is the same whatever the
    decode pool's size (the TP 1 decode pool's prefill at TP 8 is this one's), the decode side
    the plain TP 2 candidate's, and the devices 2 prefill replicas × 8 + 2 decode × 2 = 20."""
    from planner.plan.labels import replicas_in_words, short_label
    from planner.serving.configs import on_prefill_hardware, step_model

    table = evaluate(dense).table
    row = tensor(table, "document-analysis", 2, 8)
    plain = tensor(table, "document-analysis", 2, 0)
    other = tensor(table, "document-analysis", 1, 8)
    assert row["prefill_hw_kv_bytes_per_token"] == 2 * 80 * 1 * 128 == 20_480
    assert row["kv_bytes_per_token"] == 2 * 80 * 4 * 128 == 81_920
    assert row["request_kv_transfer_bytes"] == 24_000 * 81_920
    assert row["prefill_hw_weight_bytes_per_device"] == row["weight_bytes"] / 8
    for column in ("prefill_pool_s_per_prompt", "prefill_s", "prefill_hw_kv_budget_bytes"):
        assert row[column] == other[column], column
    for column in ("itl_s", "kv_budget_bytes", "weight_bytes_per_device", "decode_batch"):
        assert row[column] == plain[column], column
    a = dense.assumptions  # the simulation steps each pool so too
    prompts = step_model(on_prefill_hardware(row.to_dict()), a)
    assert prompts == step_model(on_prefill_hardware(other.to_dict()), a)
    assert step_model(row.to_dict(), a) == step_model(plain.to_dict(), a) != prompts
    assert (row["prefill_pool_planned"], row["replicas_planned"]) == (2, 4)
    assert row["devices_needed"] == 2 * 8 + 2 * 2 == 20
    assert row["candidate"].endswith("|2|pd|prefill-tp8")
    assert short_label(row) == "20 × h100-sxm-80gb (TP 2, prefill 2 of TP 8 + decode 2) · fp8"
    assert replicas_in_words(row, row["replicas_planned"]) == (
        "2 replicas of tensor parallel 8 for prompts and 2 of tensor parallel 2 for decoding"
    )


def test_tensor_parallel_prefill_sizes_stay_within_a_node(tmp_path: Path) -> None:
    """Prefill sizes of 2, 4, 8 and 16 on nodes of 8: 16 is never tried for a tensor-parallel
    candidate, nor a size equal to its own, nor any for an aggregated one."""
    from planner.plan.candidates import candidates

    folder = dense_catalog(tmp_path / "catalogs")
    path = folder / "assumptions.yaml"
    data = yaml.safe_load(path.read_text())
    data["assumptions"]["prefill_parallel_sizes"] = [2, 4, 8, 16]
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    found = candidates(load_catalog(folder))
    sized = found[found["prefill_parallel"] > 0]
    assert set(sized["prefill_parallel"]) == {2, 4, 8}
    assert (sized["disaggregated"] == 1).all()
    assert (sized["prefill_parallel"] != sized["tensor_parallel"]).all()
    assert len(sized) == (3 + 2 + 2 + 2) * 2  # TP 1 takes 2, 4, 8; TP 2, 4, 8 the other two


def test_a_tensor_parallel_prefill_pool_is_launched_at_its_size(dense: Catalog) -> None:
    from planner.deploy.engines import launch
    from planner.deploy.settings import launch_settings
    from planner.diff.outputs import candidate_keys

    table = evaluate(dense).table
    row = tensor(table, "document-analysis", 2, 8)
    prefill, decode = launch_settings(dense, row)
    assert (prefill.tensor_parallel, prefill.expert_parallel, prefill.devices_per_replica) == (
        8,
        1,
        8,
    )
    assert (decode.tensor_parallel, decode.devices_per_replica) == (2, 2)
    assert "--tensor-parallel-size 8" in " ".join(launch(prefill).argv)
    assert "--tensor-parallel-size 2" in " ".join(launch(decode).argv)
    keys = candidate_keys(table)
    assert sum(k.endswith("/pd/prefill-tp8") for k in keys) >= 1 and len(set(keys)) == len(keys)


@pytest.mark.parametrize("engine", ["libreoffice", "gnumeric"])
def test_spreadsheet_engines_compute_tensor_parallel_pools_of_two_sizes(
    tmp_path: Path, engine: str, dense: Catalog
) -> None:
    from spreadsheet import computed_values, recalculate_many, require
    from test_workbook import assert_plan_equals

    from planner.outputs.workbook import write_workbook

    require(engine)
    results = evaluate(dense)
    assert (results.table["prefill_parallel"] > 0).any()
    book = write_workbook(results, tmp_path / "tp.xlsx")
    (out,) = recalculate_many([book], tmp_path / f"recalculated-{engine}", engine=engine)
    assert_plan_equals(computed_values(out, "Plan"), results)


def test_the_fleet_packs_each_pool_at_its_size_month_by_month(
    table: pd.DataFrame, catalog: Catalog
) -> None:
    """The assistant served only by EP 72 decode replicas beside EP 32 prefill ones: the fleet
    takes an option per pool, 1 decode replica of 72 devices and 1 prefill replica of 32 (104
    devices on 13 nodes, as the Plan counts them), and its months grow each pool by its own
    formula (the prefill pool's by the prompt tokens a second)."""
    from planner.model.need import pool_replicas_at
    from planner.plan.fleet import DECODE_POOL, PREFILL_POOL
    from planner.plan.fleet_schedule import alone
    from planner.plan.portfolio import plan_fleet

    only = table[(table["workload"] != "chat") | (table["prefill_parallel"] == 32)]
    fleet = plan_fleet(catalog, only, {"chat": "deepseek-v3"})
    used = {o.pool: (o.devices, hours[0]) for o, hours in fleet.replicas.items()}
    assert used == {DECODE_POOL: (72, 1), PREFILL_POOL: (32, 1)}
    assert sum(fleet.owned_devices.values()) - 8 * sum(fleet.spare.values()) == 104
    prefill = next(o for o in fleet.replicas if o.pool == PREFILL_POOL)
    grown = alone(prefill, [1.0, 3.0], [1.0])
    inputs = dict(prefill.inputs)
    assert grown[1, 0] == pool_replicas_at(PREFILL_POOL, 3.0, **inputs) >= grown[0, 0] == 1
