"""A disaggregated candidate's prefill pool on another device than its decode pool, worked by
hand: the prompts' time on the prefill device, the generation's on the decode device, each
pool's devices at their own price, nodes pool by pool."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pandas as pd
import pytest
from test_disaggregated import pair

from planner.catalog import Catalog, CatalogError, load_catalog
from planner.model.cost import nodes_needed
from planner.model.disaggregated import (
    cloud_usd_per_device_hour,
    power_w_per_device,
    purchase_usd_per_device,
    separate_prefill_devices,
)
from planner.plan.labels import replicas_in_words, short_label
from planner.plan.sweep import evaluate

SHIPPED = Path(__file__).parent.parent / "catalogs"

#: The prompts on a compute-rich device, the generation on a bandwidth-rich one (Splitwise).
PREFILL_DEVICES = ["b200-180gb", "h100-sxm-80gb"]


def with_prefill_devices(devices: list[str], folder: Path = SHIPPED, **more: object) -> Catalog:
    catalog = load_catalog(folder)
    update = {
        "serving_layouts": ["aggregated", "disaggregated"],
        "prefill_pool_hardware": devices,
        **more,
    }
    return dataclasses.replace(catalog, assumptions=catalog.assumptions.model_copy(update=update))


# The formulas, against figures worked by hand -----------------------------------------------


def test_a_devices_price_power_and_rent_over_both_pools() -> None:
    """10 decode devices at 30,000 USD and 6 prefill devices at 20,000 USD: 420,000 USD ÷ 16 =
    26,250 a device; 700 W and 1,000 W: 812.5 W; 3.00 and 5.50 USD an hour: 3.9375. Without
    devices of another type, the decode device's own figure, exactly."""
    assert purchase_usd_per_device(30_000, 20_000, 6, 16) == pytest.approx(26_250, rel=1e-15)
    assert power_w_per_device(700, 1000, 6, 16) == pytest.approx(812.5, rel=1e-15)
    assert cloud_usd_per_device_hour(3.0, 5.5, 6, 16) == pytest.approx(3.9375, rel=1e-15)
    assert purchase_usd_per_device(30_000, 20_000, 0, 16) == 30_000
    assert math.isnan(purchase_usd_per_device(30_000, math.nan, 6, 16))  # never costed as zero


@pytest.mark.parametrize(
    ("devices", "per_node", "separate", "their_node", "nodes"),
    [
        (16, 8, 0, 8, 2),  # one device type: ⌈16 ÷ 8⌉
        (16, 8, 6, 8, 3),  # ⌈10 ÷ 8⌉ + ⌈6 ÷ 8⌉: the pools on nodes of their own
        (16, 8, 6, 4, 4),  # ⌈10 ÷ 8⌉ + ⌈6 ÷ 4⌉
        (9, 8, 0, 8, 2),
    ],
)
def test_nodes_pool_by_pool(
    devices: int, per_node: int, separate: int, their_node: int, nodes: int
) -> None:
    assert nodes_needed(devices, per_node, separate, their_node) == nodes


def test_a_nodes_peak_power_is_the_fuller_pools() -> None:
    """Six B200s of 1,000 W on a node of their own and two MI300Xs of 750 W on theirs: the
    B200s' node draws 6,000 W, the one a rack's budget must hold (not 8 × 1,000 W)."""
    from planner.model.facility import node_power_w

    assert node_power_w(8, 8, 750, 6, 8, 1000) == 6000
    assert node_power_w(8, 8, 1000, 2, 8, 750) == 6000
    assert node_power_w(16, 8, 700) == 5600


def test_separate_prefill_devices_are_the_prefill_pools() -> None:
    """6 prefill replicas of TP 2 on another device: 12 devices; on the decode device: none."""
    assert separate_prefill_devices(True, 6, 2) == 12
    assert separate_prefill_devices(False, 6, 2) == 0


# The candidates --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mixed() -> pd.DataFrame:
    """The shipped catalogs in closed form, both layouts, prefill pools also on B200 and H100."""
    return evaluate(with_prefill_devices(PREFILL_DEVICES)).table


def option(table: pd.DataFrame, hardware: str, prefill: str, model: str = "llama-3.1-70b",
           workload: str = "document-analysis", layout: int = 1) -> pd.Series:  # fmt: skip
    """The TP 1 FP8 row of ``model`` for ``workload`` on ``hardware`` (:func:`pair`'s), its
    layout ``layout``, its prompts on ``prefill``."""
    rows = pair(table, workload, model, hardware)
    rows = rows[
        (rows["expert_parallel"] == 1)
        & (rows["disaggregated"] == layout)
        & (rows["prompts_hardware"] == prefill)
    ]
    assert len(rows) == 1, rows["candidate"].tolist()
    return rows.iloc[0]


def test_each_disaggregated_candidate_is_tried_with_its_prompts_on_each_device(
    mixed: pd.DataFrame,
) -> None:
    """Every one-pool and every same-device candidate is there once, as without the
    assumption; each disaggregated one again on each named device that runs its precision
    (not on itself: an H100 candidate's prompts go to B200s only), and the candidate id says
    where its prompts run."""
    plain = evaluate(with_prefill_devices([])).table
    same = mixed[mixed["prefill_hardware"] == ""]
    assert same["candidate"].tolist() == plain["candidate"].tolist()
    assert (same["prompts_hardware"] == same["hardware"]).all()
    other = mixed[mixed["prefill_hardware"] != ""]
    assert (other["disaggregated"] == 1).all() and other["separate_prefill_hardware"].all()
    assert set(other["prefill_hardware"]) == set(PREFILL_DEVICES)
    h100 = other[other["hardware"] == "h100-sxm-80gb"]
    assert set(h100["prefill_hardware"]) == {"b200-180gb"}
    ids = other["candidate"].astype(str).str.split("|pd-", regex=False).str[1]
    assert (ids == other["prefill_hardware"].astype(str)).all()
    assert not mixed["separate_prefill_hardware"][mixed["disaggregated"] == 0].any()


def test_same_device_rows_are_as_they_were(mixed: pd.DataFrame) -> None:
    """Naming devices for the prefill pools changes no figure of another candidate."""
    plain = evaluate(with_prefill_devices([])).table
    same = mixed[mixed["prefill_hardware"] == ""].reset_index(drop=True)
    for column in ("ttft_s", "itl_s", "replicas_planned", "cost_usd", "nodes_needed"):
        pd.testing.assert_series_equal(same[column], plain[column])


def test_long_documents_prefilled_on_b200s_and_decoded_on_mi300xs(mixed: pd.DataFrame) -> None:
    """Long-document analysis (24,000-token prompts at 2 a second) on Llama 3.1 70B in FP8.

    The prompts are compute-bound: on a B200 (4,500 TFLOPS FP8) they take what they take on a
    B200 candidate's own prefill pool, on an MI300X (2,614.9) longer. The generation is the
    MI300X's (5.3 TB/s): its decode pool, inter-token latency and decode replicas are the
    MI300X candidate's. Six B200s prefill, two MI300Xs decode: 6 × 45,000 + 2 × 20,000 + two
    nodes (one each) × 40,000 = 390,000 USD of capital, less than eight B200s (400,000 USD)
    or the MI300X pools (23 + 2 MI300Xs: 660,000 USD)."""
    both = option(mixed, "mi300x-192gb", "b200-180gb")
    b200 = option(mixed, "b200-180gb", "b200-180gb")
    mi300x = option(mixed, "mi300x-192gb", "mi300x-192gb")
    assert both["candidate"] == "mi300x-192gb|llama-3.1-70b|fp8|document-analysis|1|pd-b200-180gb"
    for prompts in ("prefill_s", "prefill_pool_s_per_prompt", "prefill_pool_replicas", "ttft_s"):
        assert both[prompts] == b200[prompts], prompts
    for decode in ("itl_s", "decode_batch", "decode_pool_replicas", "max_sequences"):
        assert both[decode] == mi300x[decode], decode
    assert both["prefill_s"] < mi300x["prefill_s"]
    prefill, decode = int(both["prefill_pool_planned"]), int(both["decode_pool_replicas"])
    assert (prefill, decode) == (6, 2)
    assert both["separate_prefill_devices"] == 6 and both["devices_needed"] == 8
    assert both["nodes_needed"] == 2  # one of B200s, one of MI300Xs
    assert both["capital_usd"] == 6 * 45_000 + 2 * 20_000 + 2 * 40_000 == 390_000
    assert b200["capital_usd"] == 8 * 45_000 + 40_000 == 400_000
    assert mi300x["capital_usd"] == 25 * 20_000 + 4 * 40_000 == 660_000
    rent = (6 * 5.50 + 2 * 2.50) * 730 * 36
    assert both["rent_usd"] == pytest.approx(rent, rel=1e-12)
    power = (6 * 1000 + 2 * 750) * 0.7 * 1.3 * 730 / 1000
    assert both["energy_kwh_per_month"] == pytest.approx(power, rel=1e-12)
    assert both["facility_peak_kw"] == pytest.approx((6 * 1000 + 2 * 750) * 1.3 / 1000)
    assert both["node_power_w"] == 6 * 1000 and both["within_power"]  # a rack holds 7 kW
    words = "6 replicas of tensor parallel 1 for prompts on b200-180gb and 2 for decoding"
    assert replicas_in_words(both, both["replicas_planned"]) == words
    pools = "TP 1, prefill 6 on b200-180gb + decode 2"
    assert short_label(both) == f"2 × mi300x-192gb + 6 × b200-180gb ({pools}) · fp8"
    named = short_label(both, hardware="AMD MI300X", prefill="NVIDIA B200")
    assert (
        named
        == "2 × AMD MI300X + 6 × NVIDIA B200 (TP 1, prefill 6 on NVIDIA B200 + decode 2) · fp8"
    )


def test_the_cache_moves_at_the_slower_link() -> None:
    """A prefill device with a 25 GB/s network sends the cache at 25 GB/s, not the decode
    device's 50: Llama 3.1 8B's FP8 cache, 32 layers × 8 KV heads × 128 × 2 × 1 B = 65,536 B a
    token, 24,000 tokens 1,572,864,000 B: 62.91 ms, against 31.46 at 50 GB/s."""
    from planner.model.disaggregated import pools_link_bytes_per_s, request_kv_transfer_s

    moved = 24_000 * 65_536
    assert pools_link_bytes_per_s(50e9, 25e9) == pools_link_bytes_per_s(25e9, 50e9) == 25e9
    assert pools_link_bytes_per_s(50e9) == 50e9  # one device for both pools
    slower = pools_link_bytes_per_s(50e9, 25e9)
    assert request_kv_transfer_s(1, moved, slower) == pytest.approx(0.06291456, rel=1e-12)
    assert request_kv_transfer_s(1, moved, 50e9) == pytest.approx(0.03145728, rel=1e-12)


def test_a_prefill_device_that_cannot_hold_the_weights(mixed: pd.DataFrame) -> None:
    """Llama 3.1 70B in FP8 is 70.6 GB of weights: an H100's 79.6 GiB less them, the 3 GiB
    runtime overhead and 4 GiB reserve leaves less than one 32,768 + 1,024-token request's
    cache, so no H100 prefill pool holds it; the reason says so and the candidate does not
    fit."""
    row = option(mixed, "mi300x-192gb", "h100-sxm-80gb")
    held = row["weight_bytes_per_device"] + 7 * 2**30
    assert row["prefill_hw_kv_budget_bytes"] == pytest.approx(81559 * 2**20 - held, rel=1e-12)
    assert row["prefill_hw_kv_budget_bytes"] < row["kv_bytes_per_sequence"]
    assert not row["prefill_pool_fits"] and not row["fits"] and not row["replica_fits"]
    assert row["fit_reason"] == (
        "the prefill pool's device cannot hold its weights, the shared prefix and one request's "
        "cache"
    )


def test_a_prefill_device_holds_the_shared_prefix_too() -> None:
    """A prefill device's cache hits read the shared prefix, so it holds the prefix once beside
    one request's cache: a 20 GiB budget holds a 16 GiB request (Llama 3.1 8B's BF16 cache,
    131,072 B a token, 131,072 tokens) and 4 GiB of prefix (32,768 tokens) exactly, and not
    one token more of either; a device of the candidate's own is not checked here."""
    from planner.model.disaggregated import prefill_pool_fits

    request, prefix, token = 131_072 * 131_072, 32_768 * 131_072, 131_072
    assert request == 16 * 2**30 and prefix == 4 * 2**30
    assert prefill_pool_fits(1, 20 * 2**30, request, prefix)
    assert not prefill_pool_fits(1, 20 * 2**30, request, prefix + token)
    assert not prefill_pool_fits(1, 20 * 2**30, request + token, prefix)
    assert prefill_pool_fits(1, 20 * 2**30, request + token, 0)  # no prefix cached
    assert prefill_pool_fits(0, 0, request, prefix)  # the prompts on the row's own device


def test_a_prefill_device_the_catalog_lacks(tmp_path: Path) -> None:
    """A device named for the prefill pools that hardware.yaml lacks: the file, the field and
    the valid ids."""
    import shutil

    shutil.copytree(SHIPPED, tmp_path / "c", ignore=shutil.ignore_patterns("examples"))
    path = tmp_path / "c" / "assumptions.yaml"
    path.write_text(path.read_text() + "  prefill_pool_hardware: [h100-sxm-80gb, tpu-v9]\n")
    with pytest.raises(CatalogError) as error:
        load_catalog(tmp_path / "c")
    text = str(error.value)
    assert "assumptions.yaml" in text and "prefill_pool_hardware" in text
    assert "no hardware entry 'tpu-v9' in hardware.yaml" in text and "h100-sxm-80gb" in text


# What the plan does with such a candidate ------------------------------------------------


def test_a_prefill_pool_simulated_on_its_own_device(mixed: pd.DataFrame) -> None:
    """The pools' simulation steps the prefill replicas with the prefill device's figures: the
    step model of the prompts' view of the row is the B200 candidate's own, and the decode
    replicas' the MI300X's."""
    from planner.serving.configs import on_prefill_hardware, step_model

    catalog = with_prefill_devices(PREFILL_DEVICES)
    both = option(mixed, "mi300x-192gb", "b200-180gb")
    b200 = option(mixed, "b200-180gb", "b200-180gb")
    mi300x = option(mixed, "mi300x-192gb", "mi300x-192gb")
    a = catalog.assumptions
    assert step_model(on_prefill_hardware(both), a) == step_model(b200, a)
    assert step_model(both, a) == step_model(mi300x, a)


def test_pools_on_two_devices_sized_by_the_simulation(mixed: pd.DataFrame) -> None:
    """The long documents' pools simulated: six B200s keep up with the prompts the closed form
    gave them and two MI300Xs decode, every target met (the closed form's counts: the
    simulation raises them only where a run misses)."""
    from planner.serving.sizing import size_candidate

    catalog = with_prefill_devices(PREFILL_DEVICES)
    sized = size_candidate(catalog, option(mixed, "mi300x-192gb", "b200-180gb").to_dict())
    assert sized["meets_targets_sim"]
    assert (sized["sim_prefill_pool_replicas"], sized["sim_replicas_needed"]) == (6, 8)
    assert sized["sim_reason"] == "meets targets with 6 prefill + 2 decode replicas"


def test_the_fleet_takes_pools_on_two_device_types_as_an_option_each(mixed: pd.DataFrame) -> None:
    """The fleet packs one device type an option, so a candidate whose pools are on two is two
    options: its decode pool's on the MI300X, carrying the load, and its prefill pool's on the
    B200, keeping pace with it, each with its pool's replicas of the row (the closed form's
    prefill pool, and the rest); each type's node is priced from a row of that type alone."""
    from planner.plan.fleet import DECODE_POOL, PREFILL_POOL
    from planner.plan.portfolio import fleet_options, one_device_type

    catalog = with_prefill_devices(PREFILL_DEVICES)
    models = {"document-analysis": "llama-3.1-70b"}
    rows = mixed.assign(eligible=mixed["meets_targets"].astype(bool))
    pools = [o for o in fleet_options(catalog, rows, models) if o.pool]
    prefill = next(
        p
        for p in pools
        if (p.hardware, p.pool) == ("b200-180gb", PREFILL_POOL)
        and any((d.hardware, d.pair) == ("mi300x-192gb", p.pair) for d in pools)
    )
    decode = next(o for o in pools if o.pair == prefill.pair and o.pool == DECODE_POOL)
    row = mixed.set_index("candidate").loc[prefill.pair]
    assert (decode.hardware, decode.devices) == ("mi300x-192gb", int(row["tensor_parallel"]))
    assert prefill.replicas_alone == row["prefill_pool_replicas"] > 0
    assert decode.replicas_alone == row["replicas_planned"] - row["prefill_pool_replicas"] > 0
    assert (~one_device_type(mixed)).sum() == mixed["separate_prefill_hardware"].sum() > 0


def test_each_pool_is_launched_on_its_own_device(mixed: pd.DataFrame) -> None:
    """The launch settings of the mixed line: the prefill pool on B200s (NVIDIA's device
    plugin), the decode pool on MI300Xs (AMD's)."""
    from planner.deploy.settings import launch_settings

    catalog = with_prefill_devices(PREFILL_DEVICES)
    prefill, decode = launch_settings(catalog, option(mixed, "mi300x-192gb", "b200-180gb"))
    assert (prefill.role, prefill.hardware, prefill.replicas) == ("prefill", "b200-180gb", 6)
    assert prefill.device_resource == "nvidia.com/gpu"
    assert (decode.role, decode.hardware, decode.replicas) == ("decode", "mi300x-192gb", 2)
    assert decode.device_resource == "amd.com/gpu"


def test_a_runs_diff_keys_the_prefill_device() -> None:
    """``/pd-`` and the prefill device after a key whose prompts run on another device, read
    back into its label; ``/pd`` alone on its own."""
    from planner.diff.outputs import candidate_keys, candidate_label

    ids = {"hardware": "mi300x", "model": "m", "precision": "fp8", "workload": "chat"}
    table = pd.DataFrame(
        [
            {**ids, "tensor_parallel": 1, "disaggregated": 1, "prefill_hardware": ""},
            {**ids, "tensor_parallel": 1, "disaggregated": 1, "prefill_hardware": "b200"},
        ]
    )
    keys = candidate_keys(table)
    assert keys == ["mi300x/m/fp8/chat/1/pd", "mi300x/m/fp8/chat/1/pd-b200"]
    assert [candidate_label(k) for k in keys] == [
        "chat × m: mi300x (TP 1, disaggregated) · fp8",
        "chat × m: mi300x (TP 1, disaggregated, prefill on b200) · fp8",
    ]


# The workbook ----------------------------------------------------------------------------


def small_catalog(folder: Path) -> Path:
    """The shipped catalogs cut to one dense model on two devices at one precision for two
    workloads, both serving layouts, the prefill pools also on the other device."""
    from test_expert_parallel import cut_catalog

    keep = {
        "models": {"llama-3.1-8b"},
        "hardware": {"mi300x-192gb", "b200-180gb"},
        "precisions": {"fp8"},
        "workloads": {"chat", "document-analysis"},
    }
    layouts = {
        "serving_layouts": ["aggregated", "disaggregated"],
        "prefill_pool_hardware": ["mi300x-192gb", "b200-180gb"],
    }
    return cut_catalog(folder, keep, layouts)


@pytest.mark.parametrize("engine", ["libreoffice", "gnumeric"])
def test_spreadsheet_engines_compute_pools_on_two_devices(tmp_path: Path, engine: str) -> None:
    """The workbook of a catalog whose prefill pools may run on the other device: every Plan
    cell the spreadsheet engine computes, the prompts' figures looked up by the row's
    prefill_hardware, is the planner's."""
    from spreadsheet import computed_values, recalculate_many, require
    from test_workbook import assert_plan_equals

    from planner.outputs.workbook import write_workbook

    require(engine)
    catalog = load_catalog(small_catalog(tmp_path / "catalogs"))
    results = evaluate(catalog)
    assert results.table["separate_prefill_hardware"].sum() > 0
    book = write_workbook(results, tmp_path / "mixed.xlsx")
    (out,) = recalculate_many([book], tmp_path / f"recalculated-{engine}", engine=engine)
    assert_plan_equals(computed_values(out, "Plan"), results)


def test_the_report_names_each_pools_devices(mixed: pd.DataFrame) -> None:
    """The line in words names each pool's devices."""
    from planner.outputs.sections import _option_words

    catalog = with_prefill_devices(PREFILL_DEVICES)
    row = option(mixed, "mi300x-192gb", "b200-180gb")
    assert _option_words(row, catalog) == (
        "Llama 3.1 70B Instruct on 2 devices × AMD Instinct MI300X 192GB and 6 × NVIDIA B200 "
        "180GB (2 nodes; 6 replicas of tensor parallel 1 for prompts on b200-180gb and 2 for "
        "decoding at fp8)"
    )


def test_a_schedule_says_its_nodes_blend_both_pools(mixed: pd.DataFrame) -> None:
    """A schedule counts nodes of one device type: for pools on two types it says that its node
    is a blend of both at the decode device's node size, and that the Plan counts nodes pool by
    pool. A one-device option's node is said as before."""
    from planner.catalog.records import Forecast
    from planner.outputs.decision import schedule_sections
    from planner.plan.deployment import Line
    from planner.plan.schedule import workload_schedule

    catalog = with_prefill_devices(PREFILL_DEVICES)
    grown = tuple(
        w.model_copy(update={"forecast": Forecast(months=12, growth_per_month=0.05)})
        if w.id == "document-analysis"
        else w
        for w in catalog.workloads
    )
    catalog = dataclasses.replace(catalog, workloads=grown)
    said = {}
    for prefill in ("b200-180gb", "mi300x-192gb"):
        row = option(mixed, "mi300x-192gb", prefill)
        found = workload_schedule(
            catalog, Line("document-analysis", "llama-3.1-70b", row, "buy", "named")
        )
        assert found is not None
        (section,) = schedule_sections([found])
        said[prefill] = section["per_node"]
    assert said["b200-180gb"].startswith(
        "A node holds 8 devices (a blend of the prefill pool's b200-180gb and the decode pool's "
        "mi300x-192gb, in their planned mix at the decode device's node size: the Plan counts "
        "nodes pool by pool, so it may count more) and costs"
    )
    assert "blend" not in said["mi300x-192gb"]
