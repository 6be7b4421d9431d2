"""Measurements taken in: parsing real-format files and holding the estimates against them.

The vLLM logs in tests/fixtures/vllm are public start-up logs, verbatim, with their sources in
that folder's index.yaml. Every expected figure below is read off those logs or worked out by
hand in the docstrings, never taken from planner's own output.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import openpyxl
import pytest
import yaml
from click.testing import CliRunner

from planner.catalog import CatalogError, load_catalog
from planner.cli import main
from planner.measure import Measurement, MeasurementEntry, load_measurements
from planner.measure.benchmarks import (
    FormatError,
    parse_nvidia_smi,
    parse_perf_export,
    parse_vllm_bench,
)
from planner.measure.calibrate import calibrate
from planner.measure.compare import comparison, estimate_row
from planner.measure.next_steps import efficiency_at_target, next_measurements
from planner.measure.vllm_log import LogError, parse_vllm_log, summarise
from planner.model.units import GIB, MIB
from planner.outputs.basis import measured_rows
from planner.outputs.runs import copy_catalogs
from planner.outputs.workbook import write_workbook
from planner.outputs.workbook.measured import HEADERS
from planner.plan.sweep import evaluate
from planner.resources import shipped_catalogs

FIXTURES = Path(__file__).parent / "fixtures" / "vllm"

#: Devices of the logs, by the total each log prints (what the driver reports to PyTorch).
EXTRA_HARDWARE = """
  - id: a10-24gb
    memory: 24 GB
    usable_memory: 22.07 GiB
    memory_bandwidth: 600 GB/s
    compute: {bf16: 125 TFLOPS}
  - id: rtx2060-12gb
    memory: 12 GiB
    usable_memory: 12.00 GiB
    memory_bandwidth: 336 GB/s
    compute: {bf16: 52 TFLOPS}
  - id: a100-sxm-40gb
    memory: 40 GiB
    usable_memory: 39.39 GiB
    memory_bandwidth: 1555 GB/s
    compute: {bf16: 312 TFLOPS}
    interconnect_bandwidth: 300 GB/s
"""

#: Qwen3-4B from its config.json (huggingface.co/Qwen/Qwen3-4B): 4.02B parameters, tied.
EXTRA_MODELS = """
  - id: qwen3-4b
    layers: 36
    hidden_size: 2560
    intermediate_size: 9728
    attention_heads: 32
    kv_heads: 8
    head_dim: 128
    vocab_size: 151936
    tied_embeddings: true
"""


@pytest.fixture(scope="module")
def measured_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("catalog")
    shutil.copytree(shipped_catalogs(), folder, dirs_exist_ok=True)
    for name, extra in (("hardware.yaml", EXTRA_HARDWARE), ("models.yaml", EXTRA_MODELS)):
        path = folder / name
        path.write_text(path.read_text().rstrip("\n") + "\n" + extra.lstrip("\n"))
    shutil.copytree(FIXTURES, folder / "measurements")
    return folder


# Parsing --------------------------------------------------------------------------------------


def test_a_v0_log_is_read_figure_by_figure() -> None:
    figures = summarise(parse_vllm_log((FIXTURES / "oci-a10-llama-3.1-8b.log").read_text()))
    values = {name: f.value for name, f in figures.items()}
    assert values == pytest.approx(
        {
            "weights_bytes": 14.9888 * GIB,  # the first wording met: "took 14.9888 GB" (GiB)
            "total_memory_bytes": 22.07 * GIB,
            "gpu_memory_utilization": 0.90,
            "non_torch_bytes": 0.05 * GIB,
            "activation_peak_bytes": 0.22 * GIB,
            "kv_pool_bytes": 4.60 * GIB,
            "gpu_blocks": 2356,
            "max_model_len": 131072,
            "max_concurrency": 0.29,
        }
    )
    assert figures["gpu_blocks"].line == 5 and figures["weights_bytes"].line == 1


def test_wrapped_worker_lines_and_graph_memory_are_read() -> None:
    text = (FIXTURES / "a100-40gb-tp8-deepseek-coder-v2-lite.log").read_text()
    values = {n: f.value for n, f in summarise(parse_vllm_log(text)).items()}
    assert values["non_torch_bytes"] == pytest.approx(2.10 * GIB)
    assert values["cuda_graph_bytes"] == pytest.approx(0.47 * GIB)
    assert values["kv_pool_bytes"] == pytest.approx(29.02 * GIB)


@pytest.mark.parametrize(
    ("line", "name", "value"),
    [
        ("INFO [gpu_worker.py:358] Available KV cache memory: 18.78 GiB", "kv_pool_bytes", 18.78),
        ("INFO [kv_cache_utils.py:1305] GPU KV cache size: 175,856 tokens", "kv_pool_tokens", None),
        ("Maximum concurrency for 32,768 tokens per request: 13.64x", "max_concurrency", None),
        ("Model loading took 14.9889 GiB and 4.56 seconds", "weights_bytes", 14.9889),
        (
            "Actual usage is 14.96 GiB for weight, 1.23 GiB for peak activation, 0.45 GiB for "
            "non-torch memory, and 2.10 GiB for CUDAGraph memory.",
            "cuda_graph_bytes",
            2.10,
        ),
        (
            "CUDA graph pool memory: 0.69 GiB (actual), 0.61 GiB (estimated)",
            "cuda_graph_bytes",
            0.69,
        ),
    ],
)
def test_v1_wordings(line: str, name: str, value: float | None) -> None:
    figures = {f.name: f.value for f in parse_vllm_log(line)}
    expected = {"kv_pool_tokens": 175_856, "max_concurrency": 13.64}
    assert figures[name] == pytest.approx(value * GIB if value else expected[name])


def test_a_log_without_figures_is_refused() -> None:
    with pytest.raises(LogError, match="no vLLM start-up figure"):
        parse_vllm_log("INFO starting server\nERROR something else\n")


#: The flat JSON ``vllm bench serve --save-result`` writes (keys of vllm/benchmarks/serve.py).
BENCH = """{"date": "20250801-120000", "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B",
"num_prompts": 200, "request_rate": "inf", "max_concurrency": 32, "duration": 61.2,
"completed": 200, "total_input_tokens": 204800, "total_output_tokens": 51200,
"request_throughput": 3.27, "output_throughput": 836.6, "total_token_throughput": 4183.0,
"mean_ttft_ms": 120.5, "median_ttft_ms": 98.0, "std_ttft_ms": 40.1, "p99_ttft_ms": 310.0,
"mean_tpot_ms": 36.1, "median_tpot_ms": 35.0, "p99_tpot_ms": 44.0,
"mean_itl_ms": 35.9, "median_itl_ms": 34.2, "p99_itl_ms": 80.3,
"mean_e2el_ms": 9300.0, "median_e2el_ms": 9100.0, "p99_e2el_ms": 11900.0}"""


def test_vllm_bench_statistics_are_in_seconds() -> None:
    stats = parse_vllm_bench(BENCH)
    assert stats["ttft_s.p50"] == pytest.approx(0.098)
    assert stats["itl_s.p99"] == pytest.approx(0.0803)
    assert stats["e2e_s.mean"] == pytest.approx(9.3)
    assert stats["max_concurrency"] == 32 and stats["request_throughput"] == 3.27


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[1, 2]", "expected a JSON object"),
        ("{not json", "not JSON"),
        ('{"completed": 3}', "no latency statistic"),
        ('{"median_ttft_ms": "fast"}', "median_ttft_ms must be a finite number"),
    ],
)
def test_malformed_bench_results_are_refused(text: str, words: str) -> None:
    with pytest.raises(FormatError, match=words):
        parse_vllm_bench(text)


#: GenAI-Perf's profile_export_genai_perf.json shape: one object per metric, with its unit.
GENAI_PERF = """{"request_throughput": {"unit": "requests/sec", "avg": 4.2},
"request_latency": {"unit": "ms", "avg": 5100.0, "p50": 5000.0, "p99": 7000.0},
"time_to_first_token": {"unit": "ms", "avg": 150.0, "p50": 140.0, "p95": 260.0},
"inter_token_latency": {"unit": "ms", "avg": 20.0, "p50": 19.5, "p99": 31.0},
"output_token_throughput": {"unit": "tokens/sec", "avg": 1075.0},
"input_config": {"model": ["llama"]}}"""


def test_perf_exports_convert_their_stated_units() -> None:
    stats = parse_perf_export(GENAI_PERF)
    assert stats["ttft_s.p50"] == pytest.approx(0.140)
    # their inter-token latency is per request, TTFT excluded: vLLM's TPOT, not its ITL
    assert stats["tpot_s.p99"] == pytest.approx(0.031) and "itl_s.p99" not in stats
    assert stats["output_throughput.mean"] == 1075.0
    nanoseconds = '{"records": {"time_to_first_token": {"unit": "ns", "p50": 140000000}}}'
    assert parse_perf_export(nanoseconds)["ttft_s.p50"] == pytest.approx(0.140)
    with pytest.raises(FormatError, match="unit 'fortnights'"):
        parse_perf_export('{"time_to_first_token": {"unit": "fortnights", "p50": 1}}')


def test_nvidia_smi_peak_in_mib() -> None:
    csv = (
        "timestamp, name, memory.used [MiB], memory.total [MiB]\n"
        "2025/08/01 12:00:00.000, NVIDIA H100 80GB HBM3, 70213 MiB, 81559 MiB\n"
        "2025/08/01 12:00:01.000, NVIDIA H100 80GB HBM3, 72417 MiB, 81559 MiB\n"
    )
    stats = parse_nvidia_smi(csv)
    assert stats["memory_used_bytes.max"] == 72417 * MIB
    assert stats["memory_total_bytes"] == 81559 * MIB
    with pytest.raises(FormatError, match="memory.used 'n/a' is not a size") as refused:
        parse_nvidia_smi("memory.used [MiB]\n100 MiB\nn/a\n")
    assert refused.value.line == 3
    with pytest.raises(FormatError, match="no 'memory.used' column"):
        parse_nvidia_smi("name\nH100\n")


# The index ------------------------------------------------------------------------------------


#: The public start-up logs of tests/fixtures/vllm, in the index's order.
LOGS = [
    "oci-a10-llama-3.1-8b",
    "rtx2060-qwen3-4b",
    "a100-40gb-tp8-deepseek-coder-v2-lite",
    "h100-gpt-oss-120b-v0.11",
    "h100-gpt-oss-120b-v0.10",
    "a100-40gb-llama-3.1-8b-v0.15",
    "l40s-tp2-llama-3-70b-awq-v0.16",
]


def test_the_index_ties_each_file_to_the_catalog(measured_catalog: Path) -> None:
    measurements = load_measurements(load_catalog(measured_catalog))
    assert [m.entry.id for m in measurements] == LOGS
    assert measurements[2].entry.tensor_parallel == 8


def test_a_bad_index_names_the_entry_and_the_field(measured_catalog: Path, tmp_path: Path) -> None:
    folder = tmp_path / "catalog"
    shutil.copytree(measured_catalog, folder)
    index = folder / "measurements" / "index.yaml"
    index.write_text(index.read_text().replace("hardware: rtx2060-12gb", "hardware: rtx9090"))
    with pytest.raises(CatalogError) as error:
        load_measurements(load_catalog(folder))
    text = str(error.value.problems[0])
    assert "measurement 'rtx2060-qwen3-4b'" in text and "rtx9090" in text and ":" in text


def test_a_file_in_the_wrong_format_names_the_file(measured_catalog: Path, tmp_path: Path) -> None:
    folder = tmp_path / "catalog"
    shutil.copytree(measured_catalog, folder)
    (folder / "measurements" / "rtx2060-qwen3-4b.log").write_text("nothing useful\n")
    (folder / "measurements" / "escape.log").symlink_to("/etc/hostname")
    index = folder / "measurements" / "index.yaml"
    index.write_text(
        index.read_text().replace(
            "file: a100-40gb-tp8-deepseek-coder-v2-lite.log", "file: escape.log"
        )
    )
    with pytest.raises(CatalogError) as error:
        load_measurements(load_catalog(folder))
    problems = [str(p) for p in error.value.problems]
    assert any("rtx2060-qwen3-4b.log" in p and "no vLLM start-up figure" in p for p in problems)
    assert any("escape.log" in p and "inside the measurements folder" in p for p in problems)


# Estimates against the logs -------------------------------------------------------------------


def test_the_kv_pool_is_predicted_within_three_percent(measured_catalog: Path) -> None:
    """A10, Llama 3.1 8B: 0.9 × 22.07 GiB − 14.9575 GiB weights (16,060,522,496 B) − 0.2266 GiB
    activation (2,048 tokens × 2 B × (3 × 14,336 + 4 × 4,096)) − 0.1 GiB non-torch = 4.579 GiB:
    2,344 blocks of 16 tokens at 128 KiB a token, 37,504 tokens against the log's 2,356 blocks
    (37,696 tokens): −0.5 %. RTX 2060, Qwen3-4B: 0.95 × 12 GiB − 7.4925 GiB (4,022,458,880
    parameters × 2 B) − 0.7343 GiB (10,000 tokens × 2 B × (3 × 9,728 + 4 × 2,560)) − 0.1 GiB =
    3.073 GiB: 1,398 blocks of 16 × 144 KiB against the log's 1,394: +0.3 %."""
    catalog = load_catalog(measured_catalog)
    table = comparison(catalog, load_measurements(catalog))
    by = table.set_index(["measurement", "figure"])
    tokens = {
        "oci-a10-llama-3.1-8b": (37_504, 37_696),
        "rtx2060-qwen3-4b": (1_398 * 16, 1_394 * 16),
    }
    for measurement, (predicted, logged) in tokens.items():
        row = by.loc[(measurement, "kv_pool_tokens")]
        assert row["measured"] == logged
        assert row["estimated"] == predicted
        assert abs(row["error_fraction"]) <= 0.03


def test_dense_weights_are_predicted_within_one_percent(measured_catalog: Path) -> None:
    """Llama 3.1 8B: 14.9575 GiB against the logs' 14.9888 (V0) and 14.99 (V1; −0.2 %: vLLM
    also holds the rotary cache); Qwen3-4B: 7.4925 GiB against 7.5552 (−0.8 %)."""
    catalog = load_catalog(measured_catalog)
    table = comparison(catalog, load_measurements(catalog))
    dense = ["oci-a10-llama-3.1-8b", "rtx2060-qwen3-4b", "a100-40gb-llama-3.1-8b-v0.15"]
    weights = table[(table["figure"] == "weights_bytes") & table["measurement"].isin(dense)]
    assert len(weights) == 3
    assert (weights["error_fraction"].abs() <= 0.01).all()
    expected = [16_060_522_496, 8_044_917_760, 16_060_522_496]
    assert weights["estimated"].tolist() == pytest.approx(expected)


# Calibration ----------------------------------------------------------------------------------


def _synthetic(catalog, concurrency: int, figures_of, **entry: Any) -> Measurement:
    """A benchmark of Llama 3.1 8B on one H100 at ``concurrency`` users, 1,000-token prompts
    and 200-token answers (``entry`` changes any of these), whose figures
    ``figures_of(entry)`` computes."""
    fields: dict[str, Any] = {
        "id": f"synthetic-{concurrency}",
        "file": "unused.json",
        "format": "vllm-bench",
        "hardware": "h100-sxm-80gb",
        "model": "llama-3.1-8b",
        "precision": "bf16",
        "engine": {"name": "vllm", "version": "0.10.1"},
        "concurrency": concurrency,
        "prompt_tokens": 1000,
        "output_tokens": 200,
    }
    made = MeasurementEntry.model_validate(fields | entry)
    return Measurement(made, figures_of(made), {})


def test_known_efficiencies_are_recovered_within_one_percent() -> None:
    """Latencies computed with bandwidth efficiency 0.63, compute efficiency 0.41 and a 3.5 ms
    step overhead, at 1, 8, 32 and 96 users and a second prompt length at one user: fitted from
    the catalog's 0.8, 0.5 and 2 ms."""
    base = load_catalog(shipped_catalogs())
    truth = {"bandwidth_efficiency": 0.63, "compute_efficiency": 0.41, "step_overhead": 0.0035}
    true_catalog = replace(base, assumptions=base.assumptions.model_copy(update=truth))

    def figures_of(entry):
        row = estimate_row(true_catalog, Measurement(entry, {}, {}))
        figures = {"itl_s.p50": float(row["itl_load_s"])}
        if entry.concurrency == 1:
            figures["ttft_s.p50"] = float(row["ttft_s"])
        return figures

    measurements = tuple(_synthetic(true_catalog, c, figures_of) for c in (1, 8, 32, 96))
    # a second prompt length at one request: one length cannot fit the compute efficiency
    long = {"id": "synthetic-long", "prompt_tokens": 4000}
    measurements += (_synthetic(true_catalog, 1, figures_of, **long),)
    (fit,) = calibrate(base, measurements)
    assert (fit.hardware, fit.engine) == ("h100-sxm-80gb", "vllm 0.10")
    assert fit.bandwidth_efficiency == pytest.approx(0.63, rel=0.01)
    assert fit.step_overhead_s == pytest.approx(0.0035, rel=0.01)
    assert fit.compute_efficiency == pytest.approx(0.41, rel=0.01)
    assert all(abs(p.error_fraction) < 1e-6 for p in fit.points)
    assert len(fit.points) == 7  # five decode steps and two first tokens


def test_memory_constants_are_fitted_to_the_logs(measured_catalog: Path) -> None:
    """One log per device here: each fit reproduces its log (activation 0.22 GiB on the A10,
    0.74 GiB on the RTX 2060; non-torch 0.05 and 0.04 GiB; 2.10 GiB under TP 8), and the
    activation scales say how far the structural peak is from each (0.22 ÷ 0.2266 = 0.97 and
    0.74 ÷ 0.7343 = 1.01)."""
    catalog = load_catalog(measured_catalog)
    fits = {
        f.hardware: f
        for f in calibrate(catalog, load_measurements(catalog))
        if f.engine == "vllm 0.7"
    }
    assert fits["a10-24gb"].engine == "vllm 0.7"
    assert fits["a10-24gb"].activation_scale == pytest.approx(0.22 / 0.22656, rel=1e-3)
    assert fits["rtx2060-12gb"].activation_scale == pytest.approx(0.74 / 0.73433, rel=1e-3)
    assert fits["a10-24gb"].non_torch_bytes == pytest.approx(0.05 * GIB)
    assert fits["a100-sxm-40gb"].non_torch_tensor_parallel_bytes == pytest.approx(2.10 * GIB)
    assert fits["a100-sxm-40gb"].non_torch_bytes is None
    for fit in fits.values():
        assert all(abs(p.error_fraction) < 1e-9 for p in fit.points)


def test_the_calibrate_command_prints_and_writes_once(measured_catalog: Path, tmp_path: Path):
    shown = CliRunner().invoke(main, ["calibrate", "--catalogs", str(measured_catalog)])
    assert shown.exit_code == 0, shown.output
    document = yaml.safe_load(shown.stdout)["calibration"]
    # the terminal says per fit what was used, what was not and why, apart from the document
    assert "a10-24gb on vllm 0.7: 2 figure(s) used, " in shown.stderr
    assert "not used: oci-a10-llama-3.1-8b kv_pool_tokens: follows from the fitted" in (
        shown.stderr
    )
    a10 = next(entry for entry in document if entry["hardware"] == "a10-24gb")
    assert a10["engine"] == "vllm 0.7" and a10["non_torch"] == "0.05 GiB"
    assert {p["figure"] for p in a10["points"]} == {"activation_peak_bytes", "non_torch_bytes"}
    out = tmp_path / "calibration.yaml"
    args = ["calibrate", "--catalogs", str(measured_catalog), "--out", str(out)]
    assert CliRunner().invoke(main, args).exit_code == 0
    assert yaml.safe_load(out.read_text()) == {"calibration": document}
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 1 and "already exists" in again.output
    none = CliRunner().invoke(main, ["calibrate", "--catalogs", str(shipped_catalogs())])
    assert none.exit_code == 1 and "no measurements" in none.output


def test_the_report_puts_each_measurement_beside_its_estimate(measured_catalog: Path) -> None:
    catalog = load_catalog(measured_catalog)
    groups = measured_rows(comparison(catalog, load_measurements(catalog)))
    assert [g["measurement"] for g in groups] == LOGS
    a10 = {f["what"]: f for f in groups[0]["figures"]}
    tokens = a10["KV cache pool, tokens"]
    assert (tokens["measured"], tokens["estimated"], tokens["error"]) == (
        "37,696",
        "37,504",
        "-0.5%",
    )
    assert a10["weights as loaded, per device"]["measured"] == "14.99 GiB"
    assert groups[2]["option"] == "deepseek-v2-lite: a100-sxm-40gb (TP 8) · bf16 (vllm 0.7)"
    shipped = load_catalog(shipped_catalogs())
    assert measured_rows(comparison(shipped, load_measurements(shipped))) == []


def test_a_run_keeps_the_measurements_it_was_held_against(
    measured_catalog: Path, tmp_path: Path
) -> None:
    catalog = load_catalog(measured_catalog)
    copy_catalogs(catalog, tmp_path / "copy")
    copied = load_catalog(tmp_path / "copy")
    assert [m.entry.id for m in load_measurements(copied)] == [
        m.entry.id for m in load_measurements(catalog)
    ]


def test_the_workbook_has_a_measured_sheet(measured_catalog: Path, tmp_path: Path) -> None:
    catalog = load_catalog(measured_catalog)
    table = comparison(catalog, load_measurements(catalog))
    results = evaluate(replace(catalog, workloads=catalog.workloads[:1]))
    path = write_workbook(results, tmp_path / "plan.xlsx", measured=table)
    sheet = openpyxl.load_workbook(path)["Measured"]
    rows = list(sheet.iter_rows(min_row=3, values_only=True))
    assert rows[0] == tuple(HEADERS)
    by = {(r[0], r[6]): r for r in rows[1:]}
    tokens = by[("oci-a10-llama-3.1-8b", "KV cache pool, tokens")]
    assert tokens[7:11] == ("tokens", 37_696, 37_504, pytest.approx(37_504 / 37_696 - 1))
    weights = by[("oci-a10-llama-3.1-8b", "weights as loaded, per device")]
    assert weights[7] == "GiB" and weights[8] == pytest.approx(14.9888)
    assert len(rows) - 1 == len(table)
    empty = write_workbook(results, tmp_path / "none.xlsx", measured=table.iloc[:0])
    assert "Measured" not in openpyxl.load_workbook(empty).sheetnames


def test_the_metric_order_does_not_depend_on_the_first_import() -> None:
    """A program that imports the engine formulas first sees the registry in the same order as
    one that asks for every metric."""
    code = (
        "import planner.model.engine\n"
        "from planner.model.metric import metrics\n"
        "names = list(metrics())\n"
        "print(names.index('engine_memory_bytes') > names.index('weight_bytes'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


@pytest.mark.parametrize(
    ("memory_s", "itl_s", "target_s", "efficiency", "expected"),
    [
        # rest = 14 − 10 = 4 ms; 10 ms × 0.8 ÷ (50 − 4) ms = 0.17391
        (0.010, 0.014, 0.050, 0.8, 0.008 / 0.046),
        # a pure memory step: efficiency scales with memory ÷ target, 0.8 × 20 ÷ 40 = 0.4
        (0.020, 0.020, 0.040, 0.8, 0.4),
        # the fixed part (30 ms) alone misses a 25 ms target
        (0.010, 0.040, 0.025, 0.8, math.nan),
    ],
)
def test_efficiency_at_which_a_target_is_missed(
    memory_s: float, itl_s: float, target_s: float, efficiency: float, expected: float
) -> None:
    got = efficiency_at_target(memory_s, itl_s, target_s, efficiency)
    assert got == pytest.approx(expected, nan_ok=True)


def test_what_to_measure_next_skips_what_is_measured(measured_catalog: Path) -> None:
    """A start-up log is asked for only where none is in ``measurements/``; the decode
    measurement names the batch and the efficiency at which the target is missed; a line on
    devices names its measurement kit."""
    catalog = load_catalog(measured_catalog)
    row = {
        "hardware": "a10-24gb",
        "model": "llama-3.1-8b",
        "precision": "bf16",
        "tensor_parallel": 1,
        "workload": "chat",
        "kv_pool_tokens": 37504.0,
        "kv_pool_bytes": 37504 * 131072.0,  # 128 KiB per token: 4.58 GiB
        "load_batch": 12.0,
        "itl_load_s": 0.014,
        "load_decode_memory_s": 0.010,
        "load_decode_compute_s": 0.002,
        "itl_p95_target_s": 0.050,
    }
    other = {**row, "hardware": "rtx2060-12gb"}
    lines_ = [SimpleNamespace(row=row, advice="buy"), SimpleNamespace(row=other, advice="API")]
    plan = SimpleNamespace(lines=lines_)
    lines = next_measurements(catalog, plan, load_measurements(catalog))  # type: ignore[arg-type]
    efficiency = catalog.assumptions.bandwidth_efficiency
    limit = 0.010 * efficiency / 0.046
    assert lines[0] == (
        "chat × llama-3.1-8b: a10-24gb (TP 1) · bf16: measure decode inter-token latency at 1 and "
        "at 12 requests in flight per replica (two loads separate a step's fixed time from its "
        "bandwidth time; planned 14.0 ms at 12); it misses its 50 ms target if "
        f"bandwidth efficiency is below {limit:.2f} (planned {efficiency:.2f})."
    )
    assert lines[1] == (
        "chat × llama-3.1-8b: a10-24gb (TP 1) · bf16: deploy/measure-chat.sh in the run folder "
        "starts the engine with the plan's settings, keeps its start-up log, runs the benchmark "
        "at both loads and writes the measurements/index.yaml entries (--dry-run prints the "
        "commands)."
    )
    assert lines[2].startswith("chat × llama-3.1-8b: rtx2060-12gb (TP 1) · bf16: keep the serving")
    assert "a pool of 37,504 tokens (4.6 GiB) per device" in lines[2]
    assert len(lines) == 4  # a line answered by an API has no kit


def test_gpt_oss_weights_are_predicted_within_two_percent() -> None:
    """gpt-oss-120b in MXFP4 (experts at 4.25 bits with their block scales, the rest BF16),
    one device: a public llama.cpp load log of the MXFP4 model (ollama/ollama issue #12752,
    "model weights" 59.8 GiB on the GPU + 1.1 GiB on the CPU = 60.9 GiB) against planner's
    weight payload."""
    catalog = load_catalog(shipped_catalogs())
    table = evaluate(replace(catalog, workloads=catalog.workloads[:1])).table
    row = table[
        (table["model"] == "gpt-oss-120b")
        & (table["precision"] == "mxfp4")
        & (table["tensor_parallel"] == 1)
    ].iloc[0]
    assert row["weight_bytes"] / GIB == pytest.approx(59.8 + 1.1, rel=0.02)


@pytest.mark.parametrize(
    ("figure", "metric"),
    [
        ("itl_s.p50", "itl_load_s"),  # vLLM's median gap: one typical step
        ("itl_s.mean", "tpot_load_s"),  # a mean gap spreads others' prefills over the gaps
        ("tpot_s.mean", "tpot_load_s"),
        ("tpot_s.p50", "tpot_load_s"),
        ("output_throughput", "load_output_tokens_per_s_per_replica"),
        ("output_throughput.mean", "load_output_tokens_per_s_per_replica"),
        ("request_throughput", "load_requests_per_s_per_replica"),
    ],
)
def test_each_benchmark_figure_meets_the_metric_of_its_definition(figure: str, metric: str) -> None:
    from planner.measure.compare import COMPARED

    assert COMPARED[figure][0] == metric
