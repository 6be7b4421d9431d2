"""Pipeline parallelism across nodes as a candidate layout, worked by hand."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from test_deploy import parsed
from test_disaggregated import with_layouts
from test_expert_parallel import cut_catalog

from planner.catalog import Catalog, load_catalog
from planner.deploy.engines import launch
from planner.deploy.settings import launch_settings
from planner.diff.outputs import candidate_keys, candidate_label
from planner.model import fleet as fleet_model
from planner.model.memory import kv_bytes_per_token, kv_heads_per_device
from planner.model.pipeline import (
    full_attention_layers_per_device,
    pipeline_parallel_itl_s,
    pipeline_prefill_s,
    stage_send_s,
    stage_tensor_parallel,
)
from planner.plan.labels import replicas_in_words, short_label
from planner.plan.sweep import evaluate

SHIPPED = Path(__file__).parent.parent / "catalogs"


def with_stages(sizes: list[int]) -> Catalog:
    return with_layouts(["aggregated"], pipeline_parallel_sizes=sizes)


@pytest.fixture(scope="module")
def two_stages() -> pd.DataFrame:
    return evaluate(with_stages([1, 2])).table


def deepseek_on_h100(table: pd.DataFrame, workload: str = "chat") -> pd.DataFrame:
    """DeepSeek-V3 in FP8 on H100 SXM for one workload: its rows by (devices, stages)."""
    rows = table[
        (table["model"] == "deepseek-v3")
        & (table["hardware"] == "h100-sxm-80gb")
        & (table["precision"] == "fp8")
        & (table["workload"] == workload)
    ]
    return rows.set_index(["tensor_parallel", "pipeline_parallel"])


def test_a_stage_is_a_node_of_tensor_parallel_devices() -> None:
    assert stage_tensor_parallel(16, 2) == 8
    assert stage_tensor_parallel(8, 1) == 8


def test_each_device_caches_its_stage_s_layers() -> None:
    # DeepSeek-V3's MLA caches 576 values a layer; 61 layers at 1 B: 35,136 B a token on one
    # stage, ⌈61 ÷ 2⌉ = 31 layers on the busier of two: 17,856 B.
    assert full_attention_layers_per_device(61, 2) == 31
    assert kv_bytes_per_token(full_attention_layers_per_device(61, 1), 576, 1) == 35_136
    assert kv_bytes_per_token(full_attention_layers_per_device(61, 2), 576, 1) == 17_856
    # Llama 3.1 70B's 8 KV heads over a stage of 8 devices: one each, whatever the stages
    assert kv_heads_per_device(8, stage_tensor_parallel(16, 2)) == 1


def test_a_stage_sends_its_micro_batch_s_activations() -> None:
    # 64 tokens × 16,384 values × 2 B at 50 GB/s: 2,097,152 B in 41.94 µs
    assert stage_send_s(64, 16_384, 2, 50e9) == pytest.approx(41.943e-6, rel=1e-4)


def test_a_token_passes_every_stage() -> None:
    # Two stages of 10 ms memory-bound steps (8 ms compute), 0.1 ms sends, no all-reduce,
    # 3 ms fixed and 64 sequences at 10 µs: 2 × 10 + 0.1 + 3 + 0.64 = 23.74 ms
    itl = pipeline_parallel_itl_s(2, 0.010, 0.008, 1e-4, 32, 64, 0, 0.003, 10e-6)
    assert itl == pytest.approx(23.74e-3)
    # all-reduce of 2 µs a token, paid for the 32 tokens of the micro-batch it carries: +64 µs
    assert pipeline_parallel_itl_s(2, 0.010, 0.008, 1e-4, 32, 64, 2e-6, 0.003, 10e-6) == (
        pytest.approx(23.804e-3)
    )


def test_a_prompt_passes_the_stages_before_the_last() -> None:
    # A stage's 0.2 s of arithmetic (4e14 FLOP at 2e15 FLOP/s), 4,000 tokens of 16,384 BF16
    # values sent on at 50 GB/s (2.62144 ms), two stages: 0.20262144 s; none for one stage
    hop = pipeline_prefill_s(2, 4e14, 2e15, 0, 0.01, 4000, 16_384, 2, 50e9)
    assert hop == pytest.approx(0.20262144)
    assert pipeline_prefill_s(1, 4e14, 2e15, 0, 0.01, 4000, 16_384, 2, 50e9) == 0
    # three stages: twice; a tiny prompt waits for each stage's weight read (0.01 s)
    assert pipeline_prefill_s(3, 4e14, 2e15, 0, 0.01, 4000, 16_384, 2, 50e9) == (
        pytest.approx(2 * 0.20262144)
    )
    assert pipeline_prefill_s(2, 1e9, 2e15, 0, 0.01, 0, 16_384, 2, 50e9) == pytest.approx(0.01)


def test_replicas_of_several_nodes_take_whole_nodes() -> None:
    assert fleet_model.node_room(16, 8) == 8
    assert fleet_model.node_room(3, 8) == 6
    # 5 owned nodes, 1 spare: two 16-device replicas (32 devices) fit the room of 4 nodes
    room = fleet_model.value(
        "packing_room",
        {"owned_nodes": 5, "spare_nodes": 1, "replica_size": 16, "devices_per_node": 8},
    )
    assert room == 32


def test_default_layouts_have_one_stage() -> None:
    table = evaluate(load_catalog(SHIPPED)).table
    assert set(table["pipeline_parallel"]) == {1}
    assert not table["candidate"].str.contains("|pp", regex=False).any()


def test_pipelines_are_tried_only_where_no_node_meets_the_targets(
    two_stages: pd.DataFrame,
) -> None:
    pp = two_stages[two_stages["pipeline_parallel"] == 2]
    # every pipeline is two full nodes of a linked device
    assert (pp["tensor_parallel"] == 16).all()
    assert (pp["stage_tensor_parallel"] == 8).all()
    assert pp["candidate"].str.endswith("|pp2").all()
    # a combination whose tensor-parallel sizes within a node meet the targets has no pipeline
    one = two_stages[two_stages["pipeline_parallel"] == 1]
    met = one[one["meets_targets"].astype(bool)]
    keys = ["workload", "model", "precision", "hardware"]
    both = pp.merge(met[keys].drop_duplicates(), on=keys)
    assert both.empty
    assert "llama-3.1-8b" not in set(pp["model"])
    # the one-stage rows are those of the default layouts, figure for figure
    base = evaluate(load_catalog(SHIPPED)).table.set_index("candidate")
    assert one.set_index("candidate")["itl_s"].reindex(base.index).equals(base["itl_s"])


def test_deepseek_v3_on_two_nodes_of_h100(two_stages: pd.DataFrame) -> None:
    """The shipped chat (2,048 users, 800-token prompts with 500 of system prompt, 4,096 +
    1,024 tokens at most) on DeepSeek-V3 in FP8 over H100 SXM (81,559 MiB = 85,520,809,984 B,
    3 GiB runtime and 4 GiB reserve: 7,516,192,768 B)."""
    rows = deepseek_on_h100(two_stages)
    one_node, pipeline = rows.loc[(8, 1)], rows.loc[(16, 2)]
    # Weights 672,879,777,280 B (the expert-parallel tests work them): ÷ 8 = 84,109,972,160 B
    # a device, more than 85,520,809,984 − 7,516,192,768 = 78,004,617,216 B: one node holds
    # no replica. ÷ 16 = 42,054,986,080 B a device over two nodes.
    assert not one_node["replica_fits"]
    assert pipeline["weight_bytes_per_device"] == pytest.approx(42_054_986_080)
    # Cache: 5,120 tokens × 17,856 B = 91,422,720 B a sequence, of which the system prompt's
    # 496 tokens (8,856,576 B) once: (85,520,809,984 − 42,054,986,080 − 7,516,192,768 −
    # 8,856,576) ÷ 82,566,144 = 435.3 → 435 sequences (the engine's 256 a micro-batch, 512).
    assert pipeline["max_sequences"] == 435
    assert pipeline["replica_capacity_sequences"] == 435
    # 2,048 users ÷ 435 → 5 replicas of 16 devices, 10 nodes
    assert pipeline["replicas_planned"] == 5
    assert pipeline["devices_needed"] == 80
    assert pipeline["nodes_needed"] == 10
    # ITL: micro-batches of 435 ÷ 2 = 217.5. A stage step reads 42,054,986,080 B of weights
    # less the experts its 217.5 tokens never touch, (31/32)^217.5 = 0.001002 of the 653.9 GB
    # routed over 16 devices (40.96 MB), and 217.5 × 975 tokens × 17,856 B = 3,786,588,000 B of
    # cache at 3.35 TB/s × 0.8: 17.0898 ms (the compute, 2.6 ms, is less). Two stages: 34.1796
    # ms; one send of 217.5 × 7,168 × 2 B at 50 GB/s:
    # 0.0624 ms; the all-reduces of 217.5 tokens over 61 layers of a stage of 8 at 450 GB/s
    # (61 × 2 × 1.75 × 14,336 B = 3,060,736 B a token: 6.8016 µs): 1.4793 ms; 2 ms fixed +
    # 122 all-reduce latencies of 8 µs + 14 × 0.1 µs: 3.1468 ms; 435 × 20 µs: 8.7 ms.
    assert pipeline["stage_decode_memory_s"] == pytest.approx(17.0898e-3, rel=1e-5)
    assert pipeline["itl_s"] == pytest.approx(47.5681e-3, rel=1e-5)
    # TTFT: 5 ms preprocessing; the last stage's prefill of the 304 tokens not found cached,
    # bound by its weight read, 42,054,986,080 B ÷ 2.68 TB/s = 15.6922 ms, + 304 × 6.8016 µs
    # + 3.1468 ms = 20.9066 ms; the first stage's 15.6922 ms and its 304 × 7,168 × 2 B sent
    # on (0.0872 ms): 41.686 ms.
    assert pipeline["pipeline_prefill_s"] == pytest.approx(15.7794e-3, rel=1e-4)
    assert pipeline["ttft_s"] == pytest.approx(41.686e-3, rel=1e-4)


def test_a_pipeline_is_labelled_keyed_and_launched(two_stages: pd.DataFrame) -> None:
    rows = deepseek_on_h100(two_stages).reset_index()
    row = rows[rows["pipeline_parallel"] == 2].iloc[0]
    assert short_label(row) == "80 × h100-sxm-80gb (TP 8 × PP 2) · fp8"
    assert replicas_in_words(row, 5) == "5 replicas of 2 pipeline stages of tensor parallel 8"
    (key,) = candidate_keys(row.to_frame().T)
    assert key.endswith("/16/pp2")
    assert "(TP 8 × PP 2)" in candidate_label(key)
    (settings,) = launch_settings(load_catalog(SHIPPED), row)
    assert (settings.tensor_parallel, settings.pipeline_parallel) == (8, 2)
    assert settings.devices_per_replica == 16
    started = launch(settings)
    flags = parsed("vllm", started.argv)
    assert (flags["--tensor-parallel-size"], flags["--pipeline-parallel-size"]) == ("8", "2")
    assert any("spans 2 nodes" in note for note in started.notes)


def test_a_pipeline_gets_a_pod_a_node(two_stages: pd.DataFrame) -> None:
    """A replica of two 8-device nodes cannot be one pod: its line has a launch script that
    says how it is started, and a LeaderWorkerSet of 5 groups of two 8-device pods, not a
    Deployment asking one node for 16 devices."""
    import yaml

    from planner.deploy import deploy_files
    from planner.plan.deployment import Line

    rows = deepseek_on_h100(two_stages).reset_index()
    row = rows[rows["pipeline_parallel"] == 2].iloc[0]
    line = Line("chat", "deepseek-v3", row, "buy", "deployment.yaml")
    files = deploy_files(load_catalog(SHIPPED), [line])
    assert "launch-chat.sh" in files
    workload, _ = yaml.safe_load_all(files["chat.yaml"])
    assert workload["kind"] == "LeaderWorkerSet" and workload["spec"]["replicas"] == 5
    group = workload["spec"]["leaderWorkerTemplate"]
    assert group["size"] == 2
    limits = group["workerTemplate"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"nvidia.com/gpu": 8}
    assert "--pipeline-parallel-size 2" in files["launch-chat.sh"]
    assert "spans 2 nodes" in files["launch-chat.sh"]


def test_a_pipeline_is_simulated(two_stages: pd.DataFrame) -> None:
    from planner.plan.selection import simulable

    rows = deepseek_on_h100(two_stages).reset_index()
    assert simulable(rows).all() and (rows["pipeline_parallel"] == 2).any()


@pytest.mark.parametrize("engine", ["libreoffice", "gnumeric"])
def test_spreadsheet_engines_compute_the_pipeline(tmp_path: Path, engine: str) -> None:
    """The workbook of a catalog with two stages tried: every Plan cell the spreadsheet engine
    computes, through both branches of the layout-selecting formulas, is the planner's."""
    from spreadsheet import computed_values, recalculate_many, require
    from test_workbook import assert_plan_equals

    from planner.outputs.workbook import write_workbook

    require(engine)
    keep = {
        "models": {"deepseek-v3", "llama-3.1-8b"},
        "hardware": {"h100-sxm-80gb"},
        "precisions": {"fp8"},
        "workloads": {"chat", "document-analysis"},
    }
    folder = cut_catalog(tmp_path / "catalogs", keep, {"pipeline_parallel_sizes": [1, 2]})
    results = evaluate(load_catalog(folder))
    table = results.table
    assert set(table.loc[table["pipeline_parallel"] == 2, "model"]) == {"deepseek-v3"}
    book = write_workbook(results, tmp_path / "pp.xlsx")
    (out,) = recalculate_many([book], tmp_path / f"recalculated-{engine}", engine=engine)
    assert_plan_equals(computed_values(out, "Plan"), results)


# Held against a public measurement ---------------------------------------------------------

BENCHMARKS = Path(__file__).parent / "fixtures" / "benchmarks"
PIPELINE_FIXTURE = BENCHMARKS / "pipeline-llama-3.3-70b-a100.md"
PIPELINE_SOURCE = "surajssd/llm-k8s (58b61c5): 200 ShareGPT prompts at 1, 4 and 16 requests/s"
PIPELINE_SET = "Llama 3.3 70B BF16, A100 40GB, TP 4 × PP 2 on 2 nodes and TP 8 on 1, vLLM 0.8.3"

#: (tensor-parallel size, stages, requests a second sent) → (requests a second served, mean
#: TTFT, mean TPOT) [1/s, ms, ms]: the fixture's rows.
LLAMA_70B_A100_40GB: dict[tuple[int, int, int], tuple[float, float, float]] = {
    (8, 1, 1): (0.974567, 65.2578, 24.5644),
    (8, 1, 4): (3.17519, 50.3255, 27.0833),
    (8, 1, 16): (6.33325, 59.5779, 31.5751),
    (4, 2, 1): (0.924709, 110.089, 44.0363),
    (4, 2, 4): (2.5417, 114.88, 57.8201),
    (4, 2, 16): (3.79431, 127.477, 67.7359),
}
#: The same 200 prompts each run: 42,659 input tokens, and about 42,700 generated [tokens].
SHAREGPT_PROMPT_TOKENS = 213
SHAREGPT_OUTPUT_TOKENS = 214
#: The pipeline's start-up, per device: weights 16.46 GiB, KV cache 15.58 GiB (the fixture's
#: log; 39.49 GiB a device at a fraction of 0.90).
PIPELINE_WEIGHTS_GIB, PIPELINE_KV_POOL_GIB, A100_40GB_USABLE_GIB = 16.46, 15.58, 39.49


def a100_40gb_catalog() -> Catalog:
    """The shipped catalogs with the A100 SXM4 40GB of Azure's Standard_ND96asr_v4: its
    datasheet's 1,555 GB/s and 312 BF16 TFLOPS, NVLink 3 at 300 GB/s a direction (the 80 GB
    part's), 39.49 GiB usable (the fixture's log), one 200 Gb/s HDR InfiniBand card a GPU (25
    GB/s; Azure's ND A100 v4 documentation)."""
    catalog = load_catalog(SHIPPED)
    a100 = catalog.get("hardware", "a100-sxm-80gb")
    gib = 1024**3
    device = a100.model_copy(
        update={
            "id": "a100-sxm-40gb",
            "memory": 40 * gib,
            "usable_memory": A100_40GB_USABLE_GIB * gib,
            "memory_bandwidth": 1.555e12,
            "network_bandwidth": 25e9,
        }
    )
    return dataclasses.replace(catalog, hardware=(*catalog.hardware, device))


def in_flight(rate: float, ttft_ms: float, tpot_ms: float) -> int:
    """Requests in flight on average at a measured point: served a second × mean time in the
    engine, TTFT + (output − 1) × TPOT (Little's law), at least 1."""
    latency_s = (ttft_ms + (SHAREGPT_OUTPUT_TOKENS - 1) * tpot_ms) / 1e3
    return max(1, round(rate * latency_s))


def pipeline_point(tp: int, pp: int, concurrency: int) -> Any:
    from test_validation import _point

    return _point(
        f"llm-k8s-tp{tp}-pp{pp}-{concurrency}",
        {},
        hardware="a100-sxm-40gb",
        model="llama-3.1-70b",  # Llama 3.3 70B is the 3.1 architecture
        precision="bf16",
        tensor_parallel=tp,
        pipeline_parallel=pp,
        engine={
            "name": "vllm",
            "version": "0.8.3",
            "gpu_memory_utilization": 0.9,
            "max_model_len": 131072,
            "max_num_batched_tokens": 2048,  # "Chunked prefill is enabled with ... 2048"
        },
        concurrency=concurrency,
        prompt_tokens=SHAREGPT_PROMPT_TOKENS,
        output_tokens=SHAREGPT_OUTPUT_TOKENS,
    )


def pipeline_errors() -> dict[str, list[float]]:
    """planner's error (estimated ÷ measured − 1), uncalibrated, on each point's mean TPOT and
    mean TTFT, at the requests in flight the point's own rate and latency give, and on the
    pipeline's weights and KV pool per device at start-up."""
    from planner.measure.compare import estimate_row

    catalog = a100_40gb_catalog()
    errors: dict[str, list[float]] = {"tpot_s.mean": [], "ttft_s.mean": [], "memory": []}
    for (tp, pp, _), (rate, ttft, tpot) in LLAMA_70B_A100_40GB.items():
        row = estimate_row(catalog, pipeline_point(tp, pp, in_flight(rate, ttft, tpot)))
        errors["tpot_s.mean"].append(float(row["tpot_load_s"]) / (tpot / 1e3) - 1)
        errors["ttft_s.mean"].append(float(row["ttft_load_s"]) / (ttft / 1e3) - 1)
    row = estimate_row(catalog, pipeline_point(4, 2, 1))
    gib = 1024**3
    for column, measured in (
        ("weight_bytes_per_device", PIPELINE_WEIGHTS_GIB),
        ("kv_pool_bytes", PIPELINE_KV_POOL_GIB),
    ):
        errors["memory"].append(float(row[column]) / (measured * gib) - 1)
    return errors


def test_the_pipeline_fixture_holds_the_figures_used() -> None:
    text = PIPELINE_FIXTURE.read_text()
    for (tp, pp, rate), (served, ttft, tpot) in LLAMA_70B_A100_40GB.items():
        name = (
            f"tp{tp}_pp{pp}_qps_{rate:02d}" if pp == 1 else f"tp4_pp2_optimized_IB_qps_{rate:02d}"
        )
        line = next(line for line in text.splitlines() if line.startswith(f"| {name} "))
        cells = [c.strip() for c in line.split("|")]
        assert (float(cells[4]), float(cells[7]), float(cells[10])) == (served, ttft, tpot)
    assert "--tensor-parallel-size 4 --pipeline-parallel-size 2" in text
    assert "model weights take 16.46GiB" in text
    assert "reserved for KV Cache is 15.58GiB" in text
    assert "total_gpu_memory (39.49GiB)" in text


def test_two_stages_take_as_long_a_token_as_measured_against_one_node() -> None:
    """At one request a second both layouts decode a few sequences, each step bound by reading
    a device's weights: two stages of 4 devices read 141 GB ÷ 8 per stage in turn, one node of
    8 reads it once. planner's TPOT ratio of the two is the measured one (44.04 ÷ 24.56 =
    1.793) within 2 %, whatever its absolute error."""
    from planner.measure.compare import estimate_row

    catalog = a100_40gb_catalog()
    tpot = {}
    for tp, pp in ((8, 1), (4, 2)):
        rate, ttft, measured = LLAMA_70B_A100_40GB[(tp, pp, 1)]
        row = estimate_row(catalog, pipeline_point(tp, pp, in_flight(rate, ttft, measured)))
        tpot[pp] = float(row["tpot_load_s"])
    measured_ratio = LLAMA_70B_A100_40GB[(4, 2, 1)][2] / LLAMA_70B_A100_40GB[(8, 1, 1)][2]
    assert tpot[2] / tpot[1] == pytest.approx(measured_ratio, rel=0.02)


def test_the_report_says_why_a_pipeline_spans_nodes(two_stages: pd.DataFrame) -> None:
    """Beside a pipeline the report gives the best replica within one node of the same model,
    with both costs, or says that none qualifies (DeepSeek-V3 in FP8 on H100s alone)."""
    from planner.outputs.formatting import usd
    from planner.outputs.sections import _plain_alternative

    catalog = with_stages([1, 2])
    rows = two_stages[(two_stages["workload"] == "chat") & (two_stages["model"] == "deepseek-v3")]
    rows = rows.assign(eligible=rows["meets_targets"].astype(bool))
    h100 = rows[(rows["hardware"] == "h100-sxm-80gb") & (rows["precision"] == "fp8")]
    pipeline = h100[h100["pipeline_parallel"] == 2].iloc[0]
    assert _plain_alternative(pipeline, h100, catalog) == (
        " No replica within one node of this model qualifies, so its replicas span nodes."
    )
    # with the other devices beside it, H200s hold the model in one node of 8
    text = _plain_alternative(pipeline, rows, catalog)
    plain = rows[rows["eligible"] & (rows["pipeline_parallel"] == 1)]
    cheapest = plain.sort_values("cost_usd", kind="stable").iloc[0]
    assert text.startswith(" A replica within one node, the best such option, would be ")
    assert f"{usd(cheapest['cost_usd'])} USD over 36 months" in text


def test_the_simulation_steps_a_virtual_engine_as_the_closed_form_passes(
    two_stages: pd.DataFrame,
) -> None:
    """One virtual engine of DeepSeek-V3's two stages on H100s (the shipped document analysis):
    at a micro-batch of the closed form's, its decode step is the closed form's pass, its cache
    half the replica's and its share of the requests half a replica's."""
    from planner.plan.columns import pipeline_stages
    from planner.serving.configs import kv_budget_tokens, sim_config, step_model

    catalog = with_stages([1, 2])
    rows = deepseek_on_h100(two_stages, "document-analysis").reset_index()
    row = rows[rows["pipeline_parallel"] == 2].iloc[0]
    assert pipeline_stages(row) == 2
    step = step_model(row, catalog.assumptions)
    b = float(row["stage_batch"])
    context = b * float(row["mean_context_tokens"])
    assert step.decode_step_s(b, context) == pytest.approx(float(row["itl_s"]), rel=1e-12)
    workload = catalog.get("workloads", "document-analysis")
    config = sim_config(catalog, workload, row, replicas=3)
    assert config.kv_budget_tokens == kv_budget_tokens(row) // 2
    assert config.arrivals.rate_per_s == pytest.approx(float(workload.arrival.rate) / 6)


def test_a_fleet_owns_pipelines_on_whole_nodes(two_stages: pd.DataFrame) -> None:
    """DeepSeek-V3 in FP8 on H100s alone, for the chat and the document analysis: the fleet
    takes the two-stage replicas (16 devices, two whole nodes each) and packs its owned ones,
    N+1, on whole nodes."""
    from planner.plan.fleet import holds
    from planner.plan.portfolio import fleet_of

    catalog = with_stages([1, 2])
    table = two_stages[
        (two_stages["hardware"] == "h100-sxm-80gb") & (two_stages["precision"] == "fp8")
    ]
    fleet = fleet_of(catalog, table, {"chat": "deepseek-v3", "document-analysis": "deepseek-v3"})
    assert not isinstance(fleet, str), fleet
    assert {o.devices for o in fleet.replicas} == {16}
    owned, nodes = fleet.owned_devices["h100-sxm-80gb"], fleet.owned_nodes["h100-sxm-80gb"]
    assert owned == 8 * nodes and (owned - 8 * fleet.spare["h100-sxm-80gb"]) % 16 == 0
    assert holds(fleet, "h100-sxm-80gb")
