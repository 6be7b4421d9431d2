"""Hostile and careless input: every case ends in a clean refusal (exit 1, a message naming the
file and, where there is one, the entry and field, no traceback, nothing written) or in a run
that plans correctly.

The battery (:data:`CASES`) edits a copy of the seed catalog one way each and runs ``planner
run``; faults (signals, a file system that refuses the run, two runs at once, an altered or
malformed earlier run) follow; a property-based test feeds random YAML values into every field.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import openpyxl
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.catalog import CatalogError, load_catalog
from planner.cli import main
from planner.diff import NotARun, load_run
from planner.outputs.runs import RunExists, RunNotWritten, _publish, recover_stale, write_run

SEED = Path(__file__).resolve().parent.parent / "catalogs" / "examples" / "seed"
SHIPPED = SEED.parent.parent

Edit = Callable[[Path], None]


def replace_text(file: str, old: str, new: str) -> Edit:
    def edit(folder: Path) -> None:
        path = folder / file
        text = path.read_text()
        assert old in text, (file, old)
        path.write_text(text.replace(old, new, 1))

    return edit


def append(file: str, text: str) -> Edit:
    def edit(folder: Path) -> None:
        path = folder / file
        path.write_text(path.read_text() + text)

    return edit


def write(file: str, content: str | bytes) -> Edit:
    def edit(folder: Path) -> None:
        path = folder / file
        if path.exists() or path.is_symlink():
            path.unlink()
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)

    return edit


def special(file: str, kind: str) -> Edit:
    """Replace ``file`` by a FIFO, a symlink to a device or outside file, or a folder."""

    def edit(folder: Path) -> None:
        path = folder / file
        if path.exists() or path.is_symlink():
            path.unlink()
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "folder":
            path.mkdir()
        else:
            path.symlink_to(kind)

    return edit


def remove(file: str) -> Edit:
    return lambda folder: (folder / file).unlink()


NAME = "name: Seed hypothetical 16 GiB device"
MEMORY = "memory: 16 GiB"
PARAMS = "parameters: 7000000000"
LAYERS = "layers: 32                      # seed ¶6"
PROMPT = "prompt_tokens: 3072"
CONCURRENCY = (
    "concurrency: 16\n    source: worked example of the domain text that started planner (invented"
)
RESERVE = "reserve: 2 GiB"
EFFICIENCY = "bandwidth_efficiency: 1.0"
WEIGHT = "weight_bytes_per_param: 2 "
KV = "kv_bytes_per_value: 2 "
ID = "id: seed-16gib"
BILLION_LAUGHS = (
    "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n"
        for p, c in zip("abcdef", "bcdefg", strict=True)
    )
    + "hardware: *g\n"
)

#: (case, edit of the seed catalog, words the refusal must hold). Every case is refused.
CASES: list[tuple[str, Edit, list[str]]] = [
    # units and quantities
    ("bare memory", replace_text("hardware.yaml", MEMORY, "memory: 16"), ["memory", "unit"]),
    ("gigabits", replace_text("hardware.yaml", MEMORY, "memory: 16 Gb"), ["memory"]),
    ("memory 1e400", replace_text("hardware.yaml", MEMORY, "memory: 1e400 GiB"), ["memory"]),
    ("memory nan", replace_text("hardware.yaml", MEMORY, "memory: nan GiB"), ["memory"]),
    ("memory negative", replace_text("hardware.yaml", MEMORY, "memory: -16 GiB"), ["memory"]),
    ("memory zero", replace_text("hardware.yaml", MEMORY, "memory: 0 GiB"), ["memory"]),
    ("memory a list", replace_text("hardware.yaml", MEMORY, "memory: [16 GiB]"), ["memory"]),
    (
        "bandwidth inf",
        replace_text("hardware.yaml", "memory_bandwidth: 700 GB/s", "memory_bandwidth: .inf"),
        ["memory_bandwidth"],
    ),
    (
        "compute inf",
        replace_text("hardware.yaml", "bf16: 100 TFLOPS", "bf16: inf TFLOPS"),
        ["compute"],
    ),
    ("price inf", append("hardware.yaml", "    price: {purchase_usd: .inf}\n"), ["finite"]),
    ("price nan", append("hardware.yaml", "    price: {purchase_usd: .nan}\n"), ["finite"]),
    ("price negative", append("hardware.yaml", "    price: {purchase_usd: -1.0}\n"), ["price"]),
    (
        "interconnect kind unknown",
        append("hardware.yaml", "    interconnect: carrier-pigeon\n"),
        ["interconnect", "nvlink", "pcie"],
    ),
    (
        "family unknown",
        append("hardware.yaml", "    family: volta\n"),
        ["family", "hopper", "blackwell"],
    ),
    (
        "matmul half tokens negative",
        append("hardware.yaml", "    matmul_half_tokens: -5\n"),
        ["matmul_half_tokens"],
    ),
    (
        "price huge integer",
        append("hardware.yaml", "    price: {purchase_usd: " + "9" * 400 + "}\n"),
        ["purchase_usd", "…"],
    ),
    ("power bare", append("hardware.yaml", "    power: 700\n"), ["power", "unit"]),
    # integers
    ("layers zero", replace_text("models.yaml", LAYERS, "layers: 0"), ["layers"]),
    ("layers negative", replace_text("models.yaml", LAYERS, "layers: -1"), ["layers"]),
    ("layers fractional", replace_text("models.yaml", LAYERS, "layers: 1.5"), ["layers"]),
    ("layers text", replace_text("models.yaml", LAYERS, "layers: '32'"), ["layers"]),
    ("layers huge", replace_text("models.yaml", LAYERS, "layers: " + "9" * 400), ["layers"]),
    ("parameters float", replace_text("models.yaml", PARAMS, "parameters: 7.0e+9"), ["param"]),
    ("parameters 1e400", replace_text("models.yaml", PARAMS, "parameters: 1e400"), ["param"]),
    ("prompt zero", replace_text("workloads.yaml", PROMPT, "prompt_tokens: 0"), ["prompt"]),
    (
        "a forecast in two forms",
        replace_text(
            "workloads.yaml",
            PROMPT,
            "prompt_tokens: 3072\n    forecast: {months: 3, growth_per_month: 0.1, factors: [1]}",
        ),
        ["forecast", "give one of growth_per_month, factors, or file"],
    ),
    (
        "a forecast file without its column",
        replace_text("workloads.yaml", PROMPT, "prompt_tokens: 3072\n    forecast: {file: t.csv}"),
        ["forecast", "needs its column"],
    ),
    (
        "a forecast file that is missing",
        replace_text(
            "workloads.yaml", PROMPT, "prompt_tokens: 3072\n    forecast: {file: t.csv, column: f}"
        ),
        ["forecast.file", "t.csv"],
    ),
    (
        "a zero traffic factor",
        replace_text(
            "workloads.yaml", PROMPT, "prompt_tokens: 3072\n    forecast: {factors: [1, 0]}"
        ),
        ["forecast.factors.1", "greater than 0"],
    ),
    (
        "lengths in two forms",
        replace_text("workloads.yaml", PROMPT, "prompt_tokens: {samples: [5], file: x.csv}"),
        ["prompt_tokens", "give one of"],
    ),
    (
        "a zero length sample",
        replace_text("workloads.yaml", PROMPT, "prompt_tokens: {samples: [0]}"),
        ["prompt_tokens.samples.0", "greater than 0"],
    ),
    (
        "prompt past 10^15",
        replace_text("workloads.yaml", PROMPT, "prompt_tokens: 10000000000000000"),
        ["prompt_tokens", "1000000000000000"],
    ),
    (
        "concurrency negative",
        replace_text("workloads.yaml", "concurrency: 16", "concurrency: -1"),
        ["concurrency"],
    ),
    # ratios and prices
    (
        "efficiency inf",
        replace_text("assumptions.yaml", EFFICIENCY, "bandwidth_efficiency: .inf"),
        ["bandwidth_efficiency"],
    ),
    (
        "efficiency nan",
        replace_text("assumptions.yaml", EFFICIENCY, "bandwidth_efficiency: .nan"),
        ["bandwidth_efficiency"],
    ),
    (
        "efficiency 1.5",
        replace_text("assumptions.yaml", EFFICIENCY, "bandwidth_efficiency: 1.5"),
        ["bandwidth_efficiency"],
    ),
    ("pue inf", append("assumptions.yaml", "  pue: .inf\n"), ["pue", "finite"]),
    ("pue below 1", append("assumptions.yaml", "  pue: 0.5\n"), ["pue"]),
    ("utilisation 0", append("assumptions.yaml", "  utilisation: 0\n"), ["utilisation"]),
    (
        "electricity inf",
        append("assumptions.yaml", "  electricity_usd_per_kwh: .inf\n"),
        ["electricity_usd_per_kwh", "finite"],
    ),
    ("reserve bare", replace_text("assumptions.yaml", RESERVE, "reserve: 2"), ["reserve"]),
    (
        "simulated requests huge",
        append("assumptions.yaml", "  simulated_requests: 100000000\n"),
        ["simulated_requests"],
    ),
    (
        "weight bytes inf",
        replace_text("precisions.yaml", WEIGHT, "weight_bytes_per_param: .inf "),
        ["weight"],
    ),
    ("kv bytes zero", replace_text("precisions.yaml", KV, "kv_bytes_per_value: 0 "), ["kv_bytes"]),
    # text
    (
        "control character",
        replace_text("hardware.yaml", NAME, 'name: "Seed\\a device"'),
        ["name", "control character U+0007"],
    ),
    ("tab in a name", replace_text("hardware.yaml", NAME, 'name: "a\\tb"'), ["U+0009"]),
    ("line break in a name", replace_text("hardware.yaml", NAME, 'name: "a\\nb"'), ["U+000A"]),
    (
        "1 MB name",
        replace_text("hardware.yaml", NAME, "name: " + "x" * 1_000_000),
        ["at most 500 characters", "1,000,000 characters"],
    ),
    ("id nan", replace_text("hardware.yaml", ID, "id: nan"), ["'nan' cannot be an id"]),
    ("id null", replace_text("hardware.yaml", ID, "id: 'null'"), ["'null' cannot be an id"]),
    ("id true", replace_text("hardware.yaml", ID, "id: 'true'"), ["cannot be an id"]),
    ("id yaml null", replace_text("hardware.yaml", ID, "id: null"), ["id"]),
    ("id a number", replace_text("hardware.yaml", ID, "id: 16"), ["id"]),
    ("id upper case", replace_text("hardware.yaml", ID, "id: Seed"), ["id", "pattern"]),
    ("id right-to-left", replace_text("hardware.yaml", ID, "id: \u05d0\u05d1"), ["id"]),
    ("id 200 characters", replace_text("hardware.yaml", ID, "id: " + "a" * 200), ["id"]),
    (
        "duplicate id",
        append("models.yaml", "  - {id: invented-7b, parameters: 1000}\n"),
        ["duplicate id"],
    ),
    ("unknown field", append("hardware.yaml", "    colour: red\n"), ["colour", "unknown field"]),
    # files
    ("hardware is a FIFO", special("hardware.yaml", "fifo"), ["FIFO"]),
    ("hardware is /dev/zero", special("hardware.yaml", "/dev/zero"), ["character device"]),
    ("hardware is a folder", special("hardware.yaml", "folder"), ["hardware.yaml"]),
    ("hardware links outside", special("hardware.yaml", "/etc/passwd"), ["hardware.yaml"]),
    ("hardware missing", remove("hardware.yaml"), ["hardware.yaml", "missing"]),
    ("hardware empty", write("hardware.yaml", ""), ["empty"]),
    ("hardware not UTF-8", write("hardware.yaml", b"hardware: \xff\xfe\n"), ["UTF-8"]),
    ("alias bomb", write("hardware.yaml", BILLION_LAUGHS), ["aliases"]),
    ("duplicate key", append("hardware.yaml", "    memory: 8 GiB\n"), ["appears twice"]),
    (
        "python tag",
        write("hardware.yaml", "hardware: !!python/object/apply:os.system [echo hi]\n"),
        ["hardware.yaml"],
    ),
    ("tab indentation", write("hardware.yaml", "hardware:\n\t- id: x\n"), ["invalid YAML"]),
    ("two documents", append("hardware.yaml", "---\nhardware: []\n"), ["hardware.yaml"]),
    ("top-level list", write("hardware.yaml", "- id: x\n"), ["mapping"]),
    # scenarios, calibration, measurements
    ("no scenarios", write("scenarios.yaml", "scenarios: []\n"), ["scenarios", "at least 1"]),
    (
        "a scenario selecting nothing",
        write("scenarios.yaml", "scenarios:\n  - {id: none, models: []}\n"),
        ["models", "at least 1"],
    ),
    (
        "a scenario naming no entry",
        write("scenarios.yaml", "scenarios:\n  - {id: s, models: [no-such-model]}\n"),
        ["no-such-model"],
    ),
    (
        "calibration of unknown hardware",
        write("calibration.yaml", "calibration:\n  - {hardware: nope, engine: vllm 0.11}\n"),
        ["calibration.yaml", "no hardware entry 'nope'"],
    ),
    (
        "calibration efficiency inf",
        write(
            "calibration.yaml",
            "calibration:\n  - {hardware: seed-16gib, engine: vllm 0.11, "
            "bandwidth_efficiency: .inf}\n",
        ),
        ["calibration.yaml", "bandwidth_efficiency"],
    ),
    (
        "data file is a FIFO",
        lambda folder: (
            os.mkfifo(folder / "lengths.csv"),
            replace_text("workloads.yaml", PROMPT, "prompt_tokens: {file: lengths.csv, column: p}")(
                folder
            ),
        ),
        ["lengths.csv", "FIFO"],
    ),
    (
        "measurement outside its folder",
        lambda folder: (
            (folder / "measurements").mkdir(),
            (folder / "measurements" / "index.yaml").write_text(
                "measurements:\n  - {id: m, file: ../hardware.yaml, format: vllm-log, "
                "hardware: seed-16gib, model: invented-7b, precision: bf16}\n"
            ),
        ),
        ["index.yaml", "file"],
    ),
    # gaps in data files: a blank line inside the data is a missing value, named by its line
    (
        "a gap in a lengths file",
        lambda folder: (
            (folder / "lengths.csv").write_text("p\n3000\n\n3100\n"),
            replace_text("workloads.yaml", PROMPT, "prompt_tokens: {file: lengths.csv, column: p}")(
                folder
            ),
        ),
        ["lengths.csv", "line 3 holds nothing"],
    ),
    (
        "a word in a lengths file",
        lambda folder: (
            (folder / "lengths.csv").write_text("p\n3000\n3100\nlong\n"),
            replace_text("workloads.yaml", PROMPT, "prompt_tokens: {file: lengths.csv, column: p}")(
                folder
            ),
        ),
        ["lengths.csv", "line 4 holds 'long'"],
    ),
    (
        "a gap in a forecast file",
        lambda folder: (
            (folder / "growth.csv").write_text("f\n1\n1.2\n\n1.5\n"),
            replace_text(
                "workloads.yaml",
                PROMPT,
                "prompt_tokens: 3072\n    forecast: {file: growth.csv, column: f}",
            )(folder),
        ),
        ["growth.csv", "line 4 holds nothing"],
    ),
    (
        "a trace that goes back in time",
        lambda folder: (
            (folder / "trace.csv").write_text("arrival_s\n0\n1.5\n1.0\n"),
            replace_text(
                "workloads.yaml",
                "concurrency: 16",
                "arrival: {pattern: trace, file: trace.csv}",
            )(folder),
        ),
        ["trace.csv", "non-decreasing", "line 4 holds '1.0'"],
    ),
    # engine limits and the lease, where one setting without its partner would change the plan
    (
        "lease rate without a term",
        append("assumptions.yaml", "  lease_rate_per_year: 0.07\n"),
        ["lease_rate_per_year", "without lease_term_months"],
    ),
    (
        "lease term without a rate",
        append("assumptions.yaml", "  lease_term_months: 36\n"),
        ["lease_term_months", "without lease_rate_per_year"],
    ),
    (
        "a step budget below max_num_seqs",
        append(
            "assumptions.yaml",
            "  engine: {name: vllm, version: '0.11', max_num_batched_tokens: 1, max_num_seqs: 8}\n",
        ),
        ["max_num_batched_tokens (1)", "max_num_seqs (8)", "refuses to start"],
    ),
    (
        "a step budget below the default batch",
        append(
            "assumptions.yaml",
            "  engine: {name: vllm, version: '0.11', max_num_batched_tokens: 1}\n",
        ),
        ["max_num_batched_tokens (1)", "max_batch_sequences (256)"],
    ),
    (
        "whole prompts longer than a step",
        append(
            "assumptions.yaml",
            "  engine: {name: vllm, version: '0.11', chunked_prefill: false, "
            "max_num_batched_tokens: 4096, max_model_len: 8192}\n",
        ),
        ["max_model_len (8,192)", "chunked_prefill off"],
    ),
    (
        "max_model_len zero",
        append("assumptions.yaml", "  engine: {name: vllm, version: '0.11', max_model_len: 0}\n"),
        ["max_model_len"],
    ),
    (
        "max_model_len past 10^15",
        append(
            "assumptions.yaml",
            "  engine: {name: vllm, version: '0.11', max_model_len: 10000000000000000}\n",
        ),
        ["max_model_len"],
    ),
    (
        "an engine planner does not know",
        append("assumptions.yaml", "  engine: {name: vllm-ascend, version: '0.11'}\n"),
        ["engine", "vllm", "sglang", "tensorrt-llm"],
    ),
    (
        "another engine's memory argument",
        append(
            "assumptions.yaml",
            "  engine: {name: vllm, version: '0.11', mem_fraction_static: 0.8}\n",
        ),
        ["mem_fraction_static", "gpu_memory_utilization"],
    ),
    (
        "an engine release in words",
        append("assumptions.yaml", "  engine: {name: vllm, version: latest}\n"),
        ["engine", "version"],
    ),
    # calibrations that were not fitted to anything, or to nothing measurable
    (
        "a calibration without points",
        write(
            "calibration.yaml",
            "calibration:\n  - {hardware: seed-16gib, engine: vllm 0.11, "
            "bandwidth_efficiency: 0.8}\n",
        ),
        ["bandwidth_efficiency", "no measured points", "assumptions.yaml"],
    ),
    (
        "a calibrated efficiency past the datasheet",
        write(
            "calibration.yaml",
            "calibration:\n  - {hardware: seed-16gib, engine: vllm 0.11, "
            "bandwidth_efficiency: 1.67, points: [{measurement: m, figure: itl_median_s, "
            "measured: 0.02, fitted: 0.02}]}\n",
        ),
        ["bandwidth_efficiency", "1"],
    ),
    (
        "a calibrated efficiency below zero",
        write(
            "calibration.yaml",
            "calibration:\n  - {hardware: seed-16gib, engine: vllm 0.11, "
            "bandwidth_efficiency: -3.5, points: [{measurement: m, figure: itl_median_s, "
            "measured: 0.02, fitted: 0.02}]}\n",
        ),
        ["bandwidth_efficiency", "0"],
    ),
    (
        "a measured zero",
        write(
            "calibration.yaml",
            "calibration:\n  - {hardware: seed-16gib, engine: vllm 0.11, "
            "bandwidth_efficiency: 0.8, points: [{measurement: m, figure: itl_median_s, "
            "measured: 0, fitted: 0.02}]}\n",
        ),
        ["measured", "greater than 0"],
    ),
    (
        "a measured negative",
        write(
            "calibration.yaml",
            "calibration:\n  - {hardware: seed-16gib, engine: vllm 0.11, "
            "bandwidth_efficiency: 0.8, points: [{measurement: m, figure: itl_median_s, "
            "measured: -0.02, fitted: 0.02}]}\n",
        ),
        ["measured", "greater than 0"],
    ),
]


@pytest.fixture
def reports(tmp_path: Path) -> Path:
    """A reports folder that already holds an earlier run, which no refusal may touch."""
    folder = tmp_path / "reports"
    (folder / "earlier").mkdir(parents=True)
    (folder / "earlier" / "results.csv").write_text("kept\n")
    return folder


def _untouched(reports: Path) -> bool:
    return (
        sorted(p.name for p in reports.iterdir()) == ["earlier"]
        and (reports / "earlier" / "results.csv").read_text() == "kept\n"
    )


@pytest.mark.parametrize(("case", "edit", "words"), CASES, ids=[c[0] for c in CASES])
def test_a_hostile_catalog_is_refused_cleanly(
    tmp_path: Path, reports: Path, case: str, edit: Edit, words: list[str]
) -> None:
    folder = tmp_path / "catalog"
    shutil.copytree(SEED, folder)
    edit(folder)
    result = CliRunner().invoke(
        main, ["run", "--catalogs", str(folder), "--out", str(reports / "new")]
    )
    assert result.exit_code == 1, (case, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception  # no traceback
    assert "Traceback" not in result.output
    for word in words:
        assert word in result.output, (case, word, result.output[:2000])
    assert str(folder) in result.output  # the message names the file
    assert len(result.output) < 20_000  # an offending value is never repeated whole
    assert _untouched(reports)


def _linked_elsewhere(folder: Path) -> None:
    """Every catalog file a symlink to a regular file in another folder."""
    elsewhere = folder.parent / "elsewhere"
    elsewhere.mkdir()
    for path in list(folder.glob("*.yaml")):
        target = elsewhere / path.name
        shutil.move(path, target)
        path.symlink_to(target)


#: (case, edit of the seed catalog, the hardware name the workbook must hold as text).
PLANNED: list[tuple[str, Edit, str]] = [
    (
        "right-to-left and emoji name",
        replace_text("hardware.yaml", NAME, 'name: "התקן 🚀 16 GiB"'),
        "התקן 🚀 16 GiB",
    ),
    (
        "a name that looks like a formula",
        replace_text("hardware.yaml", NAME, 'name: \'=HYPERLINK("http://example.com","x")\''),
        '=HYPERLINK("http://example.com","x")',
    ),
    ("catalog files linked from elsewhere", _linked_elsewhere, "Seed hypothetical 16 GiB device"),
]


@pytest.mark.parametrize(("case", "edit", "text"), PLANNED, ids=[c[0] for c in PLANNED])
def test_unusual_but_valid_input_plans(tmp_path: Path, case: str, edit: Edit, text: str) -> None:
    """Valid input that looks odd plans like any other, and its text stays text: exact, as
    text, in the workbook's Hardware sheet, and never a formula in results.csv."""
    folder = tmp_path / "catalog"
    shutil.copytree(SEED, folder)
    edit(folder)
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", "--catalogs", str(folder), "--out", str(out)])
    assert result.exit_code == 0, (case, result.output, result.exception)
    sheet = openpyxl.load_workbook(out / "plan.xlsx")["Hardware"]
    names = [cell for cell in sheet["B"][1:] if cell.value == text]
    assert names and all(cell.data_type == "s" for cell in names), case  # text, not a formula
    for cell in pd.read_csv(out / "results.csv", dtype=str).stack():
        assert not str(cell).startswith(("=", "+", "@")), cell


def test_a_max_model_len_shorter_than_the_requests_serves_nothing_and_says_why(
    tmp_path: Path,
) -> None:
    """The seed's requests are 4,096 and 5,120 tokens long: an engine that accepts 100 tokens
    refuses them all. The plan says so in the terminal, and every option says why it is out."""
    folder = tmp_path / "catalog"
    shutil.copytree(SEED, folder)
    append("assumptions.yaml", "  engine: {name: vllm, version: '0.11', max_model_len: 100}\n")(
        folder
    )
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", "--catalogs", str(folder), "--out", str(out)])
    assert result.exit_code == 0, result.output
    for workload, longest in (("seed-4k", "4,096"), ("seed-4k-prompt-1k-out", "5,120")):
        assert f"shorter than workload {workload}'s longest request ({longest} tokens" in (
            result.output
        )
    table = pd.read_csv(out / "results.csv")
    assert not table["eligible"].any()
    assert table["fit_reason"].str.contains("longer than the engine's max_model_len").all()
    assert table["status"].str.startswith("engine: the workload's requests are longer").all()


def test_a_max_model_len_no_pool_holds_starts_no_engine(tmp_path: Path) -> None:
    """10⁹ tokens of KV cache fit no device of the shipped catalog: vLLM would refuse to start
    on every candidate, and the plan says so rather than plan as if it started."""
    from planner.plan.sweep import evaluate

    folder = tmp_path / "catalogs"
    shutil.copytree(SHIPPED, folder, ignore=shutil.ignore_patterns("examples"))
    path = folder / "assumptions.yaml"
    data = yaml.safe_load(path.read_text())
    data["assumptions"]["engine"] = {"name": "vllm", "version": "0.11", "max_model_len": 10**9}
    path.write_text(yaml.safe_dump(data))
    results = evaluate(load_catalog(folder))
    assert not results.table["replica_fits"].any()
    assert (
        results.table["fit_reason"]
        .str.contains("weights exceed|would not start|no room", regex=True)
        .all()
    )
    assert any("would start on none of them" in note for note in results.notes)


@pytest.mark.parametrize(
    ("file", "addition", "field"),
    [
        ("hardware.yaml", "    price: {purchase_usd: 0}\n", "price.purchase_usd"),
        ("hardware.yaml", "    price: {cloud_usd_per_hour: 0.0}\n", "price.cloud_usd_per_hour"),
        ("assumptions.yaml", "  electricity_usd_per_kwh: 0\n", "electricity_usd_per_kwh"),
    ],
)
def test_a_price_of_zero_is_accepted_and_said(
    tmp_path: Path, file: str, addition: str, field: str
) -> None:
    """A free device or free power is possible, so it plans, but it decides the answer: check
    warns at the field's line, and the report lists it with the risks."""
    from planner.outputs.report import input_cautions

    folder = tmp_path / "catalog"
    shutil.copytree(SEED, folder)
    append(file, addition)(folder)
    result = CliRunner().invoke(main, ["check", "--catalogs", str(folder)])
    assert result.exit_code == 0, result.output
    line = len((folder / file).read_text().splitlines())  # the line just appended
    assert f"{file}:{line}:" in result.output and f"field '{field}'" in result.output
    assert "a price of 0 makes it free" in result.output
    cautions = input_cautions(load_catalog(folder))
    assert any(field in c and c.startswith("Input warning: ") for c in cautions)


def test_the_battery_is_large() -> None:
    """At least 60 hostile inputs, besides the faults and the random values."""
    assert len(CASES) >= 60


# Faults: signals, the file system, two runs, earlier runs ----------------------------------------

PLANNER = str(Path(sys.executable).with_name("planner"))


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _survivors(marker: str) -> list[str]:
    """Processes whose command line holds ``marker`` (a run's own output path)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            line = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in line:
            found.append(line)
    return found


def _stop_when(
    reports: Path,
    ready: Callable[[], bool],
    catalog: Path = SEED,
    limit_s: float = 60,
    extra: tuple[str, ...] = (),
) -> int:
    """Start a run of ``catalog`` into ``reports/r`` (with ``extra`` arguments), SIGTERM it once
    ``ready()``, and return its exit status; no process of the run (its simulation's workers
    included) may outlive it."""
    out = reports / "r"
    run = subprocess.Popen(
        [PLANNER, "run", "--catalogs", str(catalog), "--out", str(out), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    start = time.monotonic()
    while not ready() and run.poll() is None and time.monotonic() - start < limit_s:
        time.sleep(0.005)
    run.send_signal(signal.SIGTERM)
    _, err = run.communicate(timeout=60)  # waits for every holder of its pipes: workers too
    assert b"Traceback" not in err, err.decode()
    time.sleep(0.2)
    assert not _survivors(str(out)), _survivors(str(out))
    return run.returncode


def _staging(reports: Path) -> list[Path]:
    return [p for p in reports.iterdir() if ".staging-" in p.name]


@pytest.mark.parametrize("when", ["starting", "planning", "simulating", "writing"])
def test_sigterm_at_any_stage_leaves_no_staging_folder(reports: Path, when: str) -> None:
    """Stopped while it starts, while it plans, while the shipped catalogs' simulation runs on
    its worker processes, or once its staging folder exists: the run exits 143 (or had
    finished, 0), no process of it lives on, and it leaves either nothing or a whole run, never
    a staging folder."""
    started = time.monotonic()
    ready = {
        "starting": lambda: True,
        "planning": lambda: time.monotonic() - started > 2.5,
        "simulating": lambda: time.monotonic() - started > 8,
        "writing": lambda: bool(_staging(reports)),
    }[when]
    catalog = SHIPPED if when == "simulating" else SEED
    status = _stop_when(reports, ready, catalog)
    assert status in (143, -signal.SIGTERM, 0), status  # −15: stopped before it set a handler
    assert not _staging(reports)
    if status != 0:
        assert _untouched(reports)
    else:
        assert (reports / "r" / "manifest.json").is_file()


def test_sigterm_while_a_sweep_streams_leaves_no_scratch_folder(reports: Path) -> None:
    """Stopped once a streamed sweep has its scratch folder (where its Parquet parts go before
    the run folder exists): the run exits 143 (or had finished), its workers end with it, and
    no scratch or staging folder is left."""
    ready = lambda: any("scratch" in p.name for p in reports.iterdir())  # noqa: E731
    status = _stop_when(reports, ready, SHIPPED, extra=("--stream-above", "0", "--workers", "2"))
    assert status in (143, -signal.SIGTERM, 0), status
    assert not _staging(reports)


def test_a_killed_runs_staging_folder_is_removed_by_the_next_run(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    stale = reports / f".r.staging-{_dead_pid()}-abc"
    live = reports / f".q.staging-{os.getpid()}-abc"  # this process is alive: kept
    for folder in (stale, live):
        (folder / "catalogs").mkdir(parents=True)
    assert recover_stale(reports) == [stale]
    assert not stale.exists() and live.exists()


def test_a_run_the_file_system_refuses_says_so_and_leaves_nothing(
    tmp_path: Path, reports: Path
) -> None:
    blocker = reports / "not-a-folder"
    blocker.write_text("a file where the run's parent folder should be")
    result = CliRunner().invoke(
        main, ["run", "--catalogs", str(SEED), "--out", str(blocker / "run")]
    )
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    assert "could not be written" in result.output and "earlier runs are untouched" in result.output
    assert sorted(p.name for p in reports.iterdir()) == ["earlier", "not-a-folder"]


def test_a_full_disk_while_writing_leaves_nothing(tmp_path: Path, reports: Path) -> None:
    """The disk fills while the report is written: RunNotWritten names the file, the staging
    folder is gone and the earlier run is untouched."""
    from planner.plan.sweep import evaluate

    catalog = load_catalog(SEED)

    def full(path: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    with pytest.raises(RunNotWritten, match="No space left on device") as caught:
        write_run(catalog, evaluate(catalog), reports / "new", extra_writers={"extra.txt": full})
    assert "extra.txt" in str(caught.value)
    assert _untouched(reports)


def test_two_runs_finishing_into_one_folder_do_not_overwrite_each_other(tmp_path: Path) -> None:
    first, second, destination = tmp_path / "a", tmp_path / "b", tmp_path / "run"
    for folder in (first, second):
        folder.mkdir()
        (folder / "results.csv").write_text(folder.name)
    _publish(first, destination)
    with pytest.raises(RunExists, match="written by another run meanwhile"):
        _publish(second, destination)
    assert (destination / "results.csv").read_text() == "a"


def _copy_run(seed_run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(seed_run, copy)
    return copy


@pytest.mark.parametrize(
    ("column", "value", "words"),
    [
        ("tensor_parallel", "abc", ["column 'tensor_parallel'", "whole number", "'abc'"]),
        ("tensor_parallel", "0", ["column 'tensor_parallel'"]),
        ("tensor_parallel", "1.5", ["column 'tensor_parallel'"]),
        ("cost_usd", "lots", ["column 'cost_usd'", "expected a number", "'lots'"]),
        ("devices_needed", "=1+1", ["column 'devices_needed'"]),
        ("eligible", "maybe", ["column 'eligible'", "true or false"]),
        ("hardware", "", ["column 'hardware' is empty"]),
    ],
)
def test_a_malformed_earlier_run_is_refused_by_diff(
    seed_run: Path, tmp_path: Path, column: str, value: str, words: list[str]
) -> None:
    run = _copy_run(seed_run, tmp_path)
    table = pd.read_csv(run / "results.csv", dtype=str, keep_default_na=False)
    table.loc[0, column] = value
    table.to_csv(run / "results.csv", index=False)
    with pytest.raises(NotARun) as caught:
        load_run(run)
    for word in ["row 2", *words]:
        assert word in str(caught.value), str(caught.value)
    result = CliRunner().invoke(main, ["diff", str(run), str(seed_run)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"catalog_files": ["hardware.yaml"]}, ["'catalog_files'", "object"]),
        ({"catalog_files": {"hardware.yaml": "abc"}}, ["SHA-256", "'abc'"]),
        ({"planner_version": 3}, ["'planner_version'", "string"]),
    ],
)
def test_a_malformed_manifest_is_refused(
    seed_run: Path, tmp_path: Path, change: dict, words: list[str]
) -> None:
    run = _copy_run(seed_run, tmp_path)
    info = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps(info | change))
    with pytest.raises(NotARun) as caught:
        load_run(run)
    for word in words:
        assert word in str(caught.value), str(caught.value)


def test_a_run_whose_catalog_copy_was_edited_is_reported_altered(
    seed_run: Path, tmp_path: Path
) -> None:
    run = _copy_run(seed_run, tmp_path)
    hardware = run / "catalogs" / "hardware.yaml"
    hardware.write_text(hardware.read_text().replace("16 GiB", "32 GiB"))
    snapshot = load_run(run)
    assert snapshot.catalog is None
    assert "altered" in snapshot.catalog_note and "hardware.yaml" in snapshot.catalog_note
    result = CliRunner().invoke(main, ["diff", str(seed_run), str(run)])
    assert result.exit_code == 0 and "altered" in result.output, result.output
    assert load_run(seed_run).catalog is not None  # the untouched run still loads


def test_results_csv_cells_never_run_as_formulas(tmp_path: Path) -> None:
    """OWASP CSV injection: text cells starting with = + - @ tab or CR get a leading apostrophe
    in results.csv; numbers (negative ones too) stay numbers, and results.json keeps the text."""
    from planner.plan.export import csv_table

    texts = ['=HYPERLINK("http://x")', "+1", "-2+3", "@SUM(A1)", "\tx", "\rx", "plain"]
    frame = pd.DataFrame({"text": texts, "number": [-1.5, 2, -3, 4, 5, 6, 7]})
    out = csv_table(frame)
    assert out["text"].tolist() == [
        "'=HYPERLINK(\"http://x\")", "'+1", "'-2+3", "'@SUM(A1)", "'\tx", "'\rx", "plain"
    ]  # fmt: skip
    assert out["number"].tolist() == [-1.5, 2, -3, 4, 5, 6, 7]
    assert frame["text"].tolist() == texts  # the table itself (and results.json) is unchanged


# Random values in every field -------------------------------------------------------------------

FILES = ("hardware", "models", "precisions", "workloads")
FIELDS = [
    (stem, key)
    for stem in FILES
    for key in yaml.safe_load((SEED / f"{stem}.yaml").read_text())[stem][0]
] + [
    ("assumptions", key)
    for key in yaml.safe_load((SEED / "assumptions.yaml").read_text())["assumptions"]
]

#: Keys the catalogs use inside a field, so random mappings reach the nested records.
KEYS_SEEN = st.sampled_from(
    ["samples", "file", "column", "mean", "p95", "max", "purchase_usd", "bf16", "itl_p95"]
)

VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**400), max_value=10**400)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40)
    | st.sampled_from(["16 GiB", "1e400 GB", "-1 GiB", "nan", ".inf", "3.35 TB/s", "5 ms"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(KEYS_SEEN | st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(field=st.sampled_from(FIELDS), value=VALUES)
def test_any_value_in_any_field_is_planned_or_refused_with_its_place(
    tmp_path: Path, field: tuple[str, str], value: object
) -> None:
    stem, key = field
    folder = tmp_path / "random"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(SEED, folder)
    data = yaml.safe_load((folder / f"{stem}.yaml").read_text())
    target = data[stem] if stem == "assumptions" else data[stem][0]
    target[key] = value
    (folder / f"{stem}.yaml").write_text(yaml.safe_dump(data, allow_unicode=True))
    try:
        load_catalog(folder)
    except CatalogError as exc:
        assert exc.problems and all(p.file.endswith(".yaml") for p in exc.problems), exc
        assert any(f"{stem}.yaml" in str(p) for p in exc.problems), exc
