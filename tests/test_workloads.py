"""Workload shapes: length distributions, arrival patterns, traces, and their validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.catalog import CatalogError, load_catalog
from planner.plan.sweep import evaluate


def write_workloads(folder: Path, body: str) -> None:
    (folder / "workloads.yaml").write_text("workloads:\n" + body)


def test_length_samples_summarised_by_hand(seed_copy: Path):
    write_workloads(
        seed_copy,
        "  - id: w\n    prompt_tokens: {samples: [100, 200, 300, 400, 1000]}\n"
        "    output_tokens: {mean: 50, p95: 90, max: 128}\n    max_output_tokens: 128\n"
        "    concurrency: 4\n",
    )
    results = evaluate(load_catalog(seed_copy))
    sheet = results.inputs.sheets["Workloads"].set_index("id")
    assert sheet.loc["w", "prompt_tokens"] == 1000  # reserve for the longest prompt
    assert sheet.loc["w", "prompt_tokens_mean"] == 400  # (100 + 200 + 300 + 400 + 1000) / 5
    assert sheet.loc["w", "prompt_tokens_p95"] == 1000  # inverted-CDF: an observed value
    assert sheet.loc["w", "output_tokens_mean"] == 50
    row = results.table.iloc[0]
    assert row["tokens_per_sequence"] == 1000 + 128
    assert row["mean_context_tokens"] == 400 + 50 / 2


def test_lengths_and_trace_from_csv(seed_copy: Path):
    (seed_copy / "data").mkdir()
    (seed_copy / "data" / "lengths.csv").write_text("prompt\n100\n300\n")
    (seed_copy / "data" / "trace.csv").write_text("arrival_s\n0\n1\n2\n3\n4\n")
    write_workloads(
        seed_copy,
        "  - id: w\n    prompt_tokens: {file: data/lengths.csv, column: prompt}\n"
        "    max_output_tokens: 64\n    arrival: {pattern: trace, file: data/trace.csv}\n",
    )
    catalog = load_catalog(seed_copy)
    assert catalog.data_files == ("data/lengths.csv", "data/trace.csv")
    results = evaluate(catalog)
    sheet = results.inputs.sheets["Workloads"].set_index("id")
    assert sheet.loc["w", "prompt_tokens_mean"] == 200
    assert sheet.loc["w", "arrival_rate_per_s"] == 1.0  # 4 gaps over 4 s
    assert sheet.loc["w", "concurrency"] == 0


@pytest.mark.parametrize(
    ("body", "fragments"),
    [
        (
            "    prompt_tokens: {file: missing.csv, column: p}\n    concurrency: 1\n",
            ["field 'prompt_tokens.file'", "cannot read missing.csv"],
        ),
        (
            "    prompt_tokens: {file: ../outside.csv, column: p}\n    concurrency: 1\n",
            ["inside the catalog folder"],
        ),
        (
            "    prompt_tokens: 10\n    arrival: {pattern: poisson}\n",
            ["field 'arrival'", "needs a rate"],
        ),
        (
            "    prompt_tokens: 10\n    concurrency: 2\n"
            "    arrival: {pattern: poisson, rate: 1 /s}\n",
            ["exactly one of concurrency (closed loop) and arrival (open loop)"],
        ),
        (
            "    prompt_tokens: {mean: 500, p95: 400, max: 1000}\n    concurrency: 1\n",
            ["need mean ≤ p95 ≤ max"],
        ),
        (
            "    prompt_tokens: 10\n    output_tokens: 500\n    concurrency: 1\n",
            ["output_tokens exceed max_output_tokens (64)"],
        ),
        (
            "    prompt_tokens: 10\n    concurrency: 1\n    targets: {ttft_p95: 2}\n",
            ["field 'targets.ttft_p95'", "has no unit"],
        ),
    ],
)
def test_bad_workloads(seed_copy: Path, body: str, fragments: list[str]):
    write_workloads(seed_copy, "  - id: w\n    max_output_tokens: 64\n" + body)
    with pytest.raises(CatalogError) as info:
        load_catalog(seed_copy)
    text = str(info.value)
    for fragment in fragments:
        assert fragment in text, text


def test_trace_must_be_ordered(seed_copy: Path):
    (seed_copy / "trace.csv").write_text("arrival_s\n0\n2\n1\n")
    write_workloads(
        seed_copy,
        "  - id: w\n    prompt_tokens: 10\n    max_output_tokens: 64\n"
        "    arrival: {pattern: trace, file: trace.csv}\n",
    )
    with pytest.raises(CatalogError, match="non-decreasing"):
        load_catalog(seed_copy)


def test_targets_and_agent_loop_reach_the_plan(seed_copy: Path):
    write_workloads(
        seed_copy,
        "  - id: w\n    prompt_tokens: 1000\n    max_output_tokens: 100\n    concurrency: 2\n"
        "    requests_per_task: 3\n    tool_time: 2 s\n    network_time: 50 ms\n"
        "    targets: {itl_p95: 1 ms, task_p95: 10 min}\n",
    )
    table = evaluate(load_catalog(seed_copy)).table
    row = table[table.model == "invented-4gib"].iloc[0]
    assert row["itl_p95_target_s"] == 0.001
    assert row["task_p95_target_s"] == 600
    assert row["task_s"] == pytest.approx(3 * row["e2e_s"] + 2 * 2.0)
    assert not row["meets_itl_target"]  # 1 ms is below the 6 ms weight-read bound
    assert row["target_miss_reason"] == "latency: inter-token p95 target"
