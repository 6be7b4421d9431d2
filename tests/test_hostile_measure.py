"""Hostile and careless measurements: every case ends in a clean refusal (exit 1, a message in
planner's words naming the file, the entry and, where there is one, the field and line, no
traceback, nothing written) or in a correct result.

The battery (:data:`CASES`) edits a copy of the shipped catalogs holding one ``vllm bench``
result and one start-up log, and runs ``planner check`` (measurements are refused there,
before any work); the calibration cases run ``planner calibrate`` and hold what it writes
against ``planner check``. Expected figures are worked out by hand beside each case.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result
from test_hostile import replace_text, special, write

from planner.cli import main
from planner.resources import shipped_catalogs

Edit = Callable[[Path], None]

#: A ``vllm bench serve --save-result`` of Llama 3.1 8B (BF16) on one H100 at 32 users,
#: 1,000-token prompts and 200-token answers: plausible figures, each slower than the plan at
#: the datasheet's full bandwidth (a 32-user step reads 16.06 GB of weights and 32 × 1,100 ×
#: 128 KiB of cache, 5.7 ms at 3.35 TB/s).
BENCH = {
    "backend": "vllm",
    "num_prompts": 200,
    "request_rate": "inf",
    "max_concurrency": 32,
    "duration": 100.0,
    "completed": 200,
    "total_input_tokens": 200_000,
    "total_output_tokens": 40_000,
    "request_throughput": 2.0,
    "output_throughput": 400.0,
    "median_ttft_ms": 80.0,
    "mean_tpot_ms": 17.0,
    "median_itl_ms": 12.5,
    "p99_itl_ms": 30.0,
}

#: A vLLM V1 start-up of the same model on the same H100 (its driver total, 79.65 GiB, is the
#: catalog's usable 81,559 MiB).
LOG = """\
INFO 08-01 12:00:00 [core.py:74] Initializing a V1 LLM engine (v0.10.1) with config: \
model='meta-llama/Llama-3.1-8B-Instruct', dtype=torch.bfloat16, tensor_parallel_size=1, \
pipeline_parallel_size=1
INFO 08-01 12:00:09 [gpu_model_runner.py:1892] Model loading took 14.99 GiB and 8.1 seconds
INFO 08-01 12:00:12 [gpu_worker.py:276] Memory profiling takes 2.1 seconds
INFO 08-01 12:00:12 [gpu_worker.py:276] total_gpu_memory (79.65GiB) x gpu_memory_utilization \
(0.90) = 71.69GiB
INFO 08-01 12:00:12 [gpu_worker.py:276] model weights take 14.99GiB; non_torch_memory takes \
0.14GiB; PyTorch activation peak memory takes 1.23GiB; the rest of the memory reserved for \
KV Cache is 55.33GiB.
INFO 08-01 12:00:13 [kv_cache_utils.py:829] GPU KV cache size: 453,264 tokens
"""

INDEX = """\
measurements:
  - id: bench
    file: bench.json
    format: vllm-bench
    hardware: h100-sxm-80gb
    model: llama-3.1-8b
    precision: bf16
    concurrency: 32
    prompt_tokens: 1000
    output_tokens: 200
    engine: {name: vllm, version: "0.10.1"}
  - id: startup
    file: startup.log
    format: vllm-log
    hardware: h100-sxm-80gb
    model: llama-3.1-8b
    precision: bf16
    engine: {name: vllm, version: "0.10.1", gpu_memory_utilization: 0.9}
"""


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "catalog"
    shutil.copytree(shipped_catalogs(), folder)
    measurements = folder / "measurements"
    measurements.mkdir()
    (measurements / "index.yaml").write_text(INDEX)
    (measurements / "bench.json").write_text(json.dumps(BENCH, indent=1))
    (measurements / "startup.log").write_text(LOG)
    return folder


# Edits ---------------------------------------------------------------------------------------


def bench(**changes: object) -> Edit:
    """The benchmark with ``changes`` (a value of ``...`` removes the key)."""

    def edit(folder: Path) -> None:
        data = {k: v for k, v in (BENCH | changes).items() if v is not ...}
        (folder / "measurements" / "bench.json").write_text(json.dumps(data, indent=1))

    return edit


def text(file: str, content: str | bytes) -> Edit:
    return write(f"measurements/{file}", content)


def swap(file: str, old: str, new: str) -> Edit:
    return replace_text(f"measurements/{file}", old, new)


def index(old: str, new: str) -> Edit:
    return swap("index.yaml", old, new)


def both(*edits: Edit) -> Edit:
    def edit(folder: Path) -> None:
        for each in edits:
            each(folder)

    return edit


BENCH_AT = "file: bench.json"
LOG_AT = "file: startup.log"
NESTED = "[" * 100_000 + "]" * 100_000

#: (case, edit, words the refusal holds): ``planner check`` refuses each, naming the file (or
#: the index), the entry and the field.
CASES: list[tuple[str, Edit, list[str]]] = [
    # latencies no run gives
    (
        "negative ITL",
        bench(median_itl_ms=-12.5),
        ["bench.json", "measurement 'bench'", "field 'median_itl_ms'", "above 0", "-12.5"],
    ),
    ("zero ITL", bench(median_itl_ms=0), ["field 'median_itl_ms'", "above 0"]),
    ("NaN TTFT", bench(median_ttft_ms=float("nan")), ["median_ttft_ms", "finite number"]),
    ("infinite TPOT", bench(mean_tpot_ms=float("inf")), ["mean_tpot_ms", "finite number"]),
    ("absurd ITL", bench(median_itl_ms=1e12), ["median_itl_ms", "1e+12", "corrupted"]),
    ("ITL as text", bench(median_itl_ms="12.5"), ["median_itl_ms", "finite number", "'12.5'"]),
    ("ITL true", bench(median_itl_ms=True), ["median_itl_ms", "finite number"]),
    ("negative throughput", bench(output_throughput=-400.0), ["output_throughput", "above 0"]),
    # faster than the device: 2 ms against at least 5.7 ms of reading at full bandwidth
    (
        "2 ms ITL at 32 users",
        bench(median_itl_ms=2.0),
        ["field 'median_itl_ms'", "2 ms, at 32 users", "faster than the device allows"],
    ),
    (
        "ten-fold throughput",
        bench(output_throughput=40_000.0),
        ["output_throughput", "40,000 tokens/s, at 32 users", "faster than the device allows"],
    ),
    # files that are not the format
    ("empty bench", text("bench.json", ""), ["bench.json", "empty"]),
    ("bench a list", text("bench.json", "[1, 2]"), ["expected a JSON object"]),
    ("bench not JSON", text("bench.json", "{median_itl_ms: 12"), ["not JSON"]),
    ("bench nested deep", text("bench.json", NESTED), ["nested too deeply"]),
    (
        "bench no latency",
        text("bench.json", '{"completed": 200, "max_concurrency": 32}'),
        ["no latency statistic"],
    ),
    (
        "bench key twice",
        text("bench.json", '{"median_itl_ms": 12.5,\n"median_itl_ms": 1.0}'),
        ["'median_itl_ms' is given twice", "field 'median_itl_ms'"],
    ),
    ("bench not UTF-8", text("bench.json", b'{"median_itl_ms": "\xff"}'), ["UTF-8"]),
    # benchmarks that measured something else than they say
    (
        "most requests failed",
        bench(completed=40),
        ["field 'completed'", "160 of 200 requests failed", "80%"],
    ),
    ("no request completed", bench(completed=0), ["no request completed"]),
    ("failed counted", bench(failed=50), ["50 of 250 requests failed"]),
    ("half a user", bench(max_concurrency=0.5), ["max_concurrency", "at least 1"]),
    (
        "concurrency contradicts",
        bench(max_concurrency=8),
        ["field 'max_concurrency'", "max_concurrency 8", "concurrency 32"],
    ),
    (
        "no concurrency anywhere",
        both(bench(max_concurrency=...), index("    concurrency: 32\n", "")),
        ["field 'concurrency'", "how many requests were in flight"],
    ),
    (
        "prompts twice as long",
        bench(total_input_tokens=400_000),
        ["field 'total_input_tokens'", "averaged 2,000", "prompt_tokens 1,000"],
    ),
    # the index
    (
        "duplicate id",
        index("id: startup", "id: bench"),
        ["index.yaml:12", "measurement 'bench'", "field 'id'", "duplicate id 'bench'"],
    ),
    (
        "path escapes",
        index(BENCH_AT, "file: ../hardware.yaml"),
        ["index.yaml:3", "field 'file'", "inside the measurements folder"],
    ),
    ("absolute path", index(BENCH_AT, "file: /etc/passwd"), ["inside the measurements folder"]),
    (
        "link out",
        special("measurements/bench.json", "/etc/hostname"),
        ["inside the measurements folder"],
    ),
    ("missing file", index(BENCH_AT, "file: gone.json"), ["gone.json", "does not exist"]),
    ("file a folder", special("measurements/bench.json", "folder"), ["bench.json", "folder"]),
    (
        "hardware unknown",
        index(
            "hardware: h100-sxm-80gb\n    model: llama-3.1-8b\n    precision: bf16\n    "
            "concurrency",
            "hardware: h900\n    model: llama-3.1-8b\n    precision: bf16\n    concurrency",
        ),
        ["index.yaml:5", "field 'hardware'", "no hardware 'h900'"],
    ),  # fmt: skip
    (
        "unknown field",
        index("    concurrency: 32\n", "    concurrency: 32\n    users: 32\n"),
        ["measurement 'bench'", "field 'users'", "unknown field"],
    ),
    (
        "format missing",
        index("    format: vllm-bench\n", ""),
        ["field 'format'", "required field is missing"],
    ),
    ("format unknown", index("format: vllm-bench", "format: csv"), ["field 'format'"]),
    ("index empty", text("index.yaml", ""), ["index.yaml", "empty"]),
    ("index not YAML", text("index.yaml", "measurements: [\n"), ["index.yaml"]),
    ("no entries", text("index.yaml", "measurements: []\n"), ["field 'measurements'"]),
    # logs
    (
        "log of digits",
        text("startup.log", "1" * 100_000 + "\n" + "9," * 50_000 + "\n"),
        ["startup.log", "measurement 'startup'", "no vLLM start-up figure"],
    ),
    (
        "log says TP 2",
        swap("startup.log", "tensor_parallel_size=1", "tensor_parallel_size=2"),
        ["startup.log:1", "tensor_parallel_size=2", "tensor_parallel 1"],
    ),
    (
        "log says two pipeline stages",
        swap("startup.log", "pipeline_parallel_size=1", "pipeline_parallel_size=2"),
        ["startup.log:1", "pipeline_parallel_size=2", "pipeline_parallel 1"],
    ),
    (
        "log printed another release",
        swap("startup.log", "(v0.10.1)", "(v0.7.3)"),
        ["startup.log:1", "field 'version'", "vLLM 0.7.3", "vllm 0.10.1"],
    ),
    (
        "log of a 40 GB device",
        swap("startup.log", "total_gpu_memory (79.65GiB)", "total_gpu_memory (39.39GiB)"),
        ["startup.log:4", "field 'total_memory_bytes'", "39.39 GiB", "another device"],
    ),
    (
        "log utilisation 1.5",
        swap("startup.log", "gpu_memory_utilization (0.90)", "gpu_memory_utilization (1.50)"),
        ["startup.log:4", "gpu_memory_utilization 1.5", "share"],
    ),
    (
        "log absurd weights",
        swap("startup.log", "took 14.99 GiB", "took 99999999 GiB"),
        ["startup.log:2", "field 'weights_bytes'", "more than any device holds"],
    ),
    ("log not UTF-8", text("startup.log", b"Model loading took \xff GiB"), ["UTF-8"]),
    (
        "log of another release",
        index(
            'version: "0.10.1", gpu_memory_utilization', 'version: "0.7", gpu_memory_utilization'
        ),
        ["startup.log:1", "field 'version'", "written by vLLM 0.10.1", "vllm 0.7"],
    ),
    (
        "log said sglang",
        index(
            '{name: vllm, version: "0.10.1", gpu_memory_utilization: 0.9}',
            '{name: sglang, version: "0.4.6"}',
        ),
        ["startup.log", "a vLLM start-up log, but its entry's engine is sglang"],
    ),  # fmt: skip
    # other formats
    (
        "nvidia-smi not a size",
        both(
            text("smi.csv", "memory.used [MiB]\n100 MiB\nn/a\n"),
            index(LOG_AT + "\n    format: vllm-log", "file: smi.csv\n    format: nvidia-smi"),
        ),
        ["smi.csv:3", "field 'memory.used'", "'n/a' is not a size"],
    ),
    (
        "nvidia-smi of another device",
        both(
            text("smi.csv", "memory.used [MiB], memory.total [MiB]\n30000, 40960\n"),
            index(LOG_AT + "\n    format: vllm-log", "file: smi.csv\n    format: nvidia-smi"),
        ),
        ["smi.csv", "field 'memory_total_bytes'", "40.00 GiB", "another device"],
    ),
    (
        "perf export negative",
        both(
            text("perf.json", '{"time_to_first_token": {"unit": "ms", "avg": -3}}'),
            index(
                BENCH_AT + "\n    format: vllm-bench", "file: perf.json\n    format: perf-export"
            ),
        ),
        ["perf.json:1", "field 'time_to_first_token.avg'", "above 0"],
    ),
    (
        "perf export in fortnights",
        both(
            text("perf.json", '{"time_to_first_token": {"unit": "fortnights", "p50": 1}}'),
            index(
                BENCH_AT + "\n    format: vllm-bench", "file: perf.json\n    format: perf-export"
            ),
        ),
        ["perf.json", "unit 'fortnights'"],
    ),
]


def _listing(folder: Path) -> dict[str, float]:
    return {
        str(p.relative_to(folder)): p.lstat().st_mtime
        for p in folder.rglob("*")
        if not p.is_dir() or p.is_symlink()
    }


def _clean_refusal(result: Result, words: list[str]) -> None:
    """Exit 1 through the CLI's own message: no traceback, no pydantic wording."""
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)  # no traceback
    for word in words:
        assert word in result.output, (word, result.output)
    for internal in ("Traceback", "pydantic", "For further information", "[type="):
        assert internal not in result.output, result.output


@pytest.mark.parametrize(("case", "edit", "words"), CASES, ids=[c[0] for c in CASES])
def test_check_refuses_the_measurement(
    tmp_path: Path, case: str, edit: Edit, words: list[str]
) -> None:
    folder = _folder(tmp_path)
    edit(folder)
    before = _listing(folder)
    started = time.perf_counter()
    result = CliRunner().invoke(main, ["check", "--catalogs", str(folder)])
    assert time.perf_counter() - started < 5, case  # no hang, however long the lines
    _clean_refusal(result, words)
    assert _listing(folder) == before  # nothing written


def test_the_base_passes_check(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["check", "--catalogs", str(_folder(tmp_path))])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output


def test_a_file_past_the_size_limit_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PLANNER_MAX_FILE_MIB=1 and a 2 MiB log: refused by its size, before it is read."""
    folder = _folder(tmp_path)
    (folder / "measurements" / "startup.log").write_text(LOG + "x" * (2 * 1024 * 1024) + "\n")
    monkeypatch.setenv("PLANNER_MAX_FILE_MIB", "1")
    result = CliRunner().invoke(main, ["check", "--catalogs", str(folder)])
    _clean_refusal(result, ["startup.log", "larger than the 1 MiB limit"])


def test_a_multi_megabyte_log_reads_in_well_under_a_second(tmp_path: Path) -> None:
    """The start-up lines after 60,000 lines of request logging (about 9 MB), a line of
    100,000 digits and one of 100,000 spaces: read, and planned as measured."""
    folder = _folder(tmp_path)
    noise = "INFO 08-01 12:00:14 [loggers.py:118] Engine 000: Avg prompt throughput: 1.5 GB 3 GiB\n"
    hostile = "1" * 100_000 + "\nModel loading took 1" + " " * 100_000 + "x\n"
    (folder / "measurements" / "startup.log").write_text(noise * 60_000 + hostile + LOG)
    started = time.perf_counter()
    result = CliRunner().invoke(main, ["check", "--catalogs", str(folder)])
    assert result.exit_code == 0, result.output
    assert time.perf_counter() - started < 2.0


# Correct results -----------------------------------------------------------------------------


def _calibrate(folder: Path) -> tuple[Result, Path]:
    out = folder / "calibration.yaml"
    return CliRunner().invoke(
        main, ["calibrate", "--catalogs", str(folder), "--out", str(out)]
    ), out


def _refused_by_calibrate(result: Result, out: Path, words: list[str]) -> None:
    """Nothing written, exit 1, no traceback, the words said."""
    assert result.exit_code == 1, result.output
    assert not out.exists()
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    for word in words:
        assert word in result.output, (word, result.output)


@pytest.mark.parametrize(
    ("itl_ms", "written"),
    [
        # below the 6.5 ms of a step at full bandwidth, no overhead: check refuses it
        (2.0, False),
        (5.0, False),
        (6.4, False),
        # a step takes its read at the efficiency + the overhead + 32 × 20 µs: at full
        # bandwidth and no overhead 6.81 ms, so 6.6 ms is within the 5 % floor of that; below
        # 8.81 ms (the assumed 2 ms) the efficiency is held at 1 and the overhead fitted lower
        (6.6, True),
        (7.0, True),
        (9.0, True),
        (12.5, True),
        (40.0, True),
        (400.0, True),  # slower than any kernel: the overhead carries it
    ],
)
def test_calibrate_never_writes_what_check_refuses(
    tmp_path: Path, itl_ms: float, written: bool
) -> None:
    """One ``vllm bench`` point of ``itl_ms`` at 32 users: either nothing is written (exit 1,
    saying which point is faster than the device allows) or a calibration that check
    accepts, with an efficiency in (0, 1]."""
    folder = _folder(tmp_path)
    bench(median_itl_ms=itl_ms, mean_tpot_ms=..., median_ttft_ms=..., output_throughput=...)(folder)
    result, out = _calibrate(folder)
    if not written:
        _clean_refusal(result, ["faster than the device allows", f"{itl_ms:g} ms, at 32 users"])
        assert not out.exists()
        return
    assert result.exit_code == 0, (result.output, result.exception)
    fit = yaml.safe_load(out.read_text())["calibration"]
    latency = next(entry for entry in fit if "bandwidth_efficiency" in entry)
    assert 0 < latency["bandwidth_efficiency"] <= 1
    check = CliRunner().invoke(main, ["check", "--catalogs", str(folder)])
    assert check.exit_code == 0, check.output


def _points(folder: Path, points: dict[str, tuple[int, float]]) -> None:
    """Benchmarks ``id: (users, median ITL ms)`` in place of the base's."""
    entries = []
    for name, (users, itl_ms) in points.items():
        data = {"max_concurrency": users, "median_itl_ms": itl_ms}
        (folder / "measurements" / f"{name}.json").write_text(json.dumps(data))
        entries.append(
            f"  - {{id: {name}, file: {name}.json, format: vllm-bench, hardware: h100-sxm-80gb,"
            f" model: llama-3.1-8b, precision: bf16, prompt_tokens: 1000, output_tokens: 200,"
            f" engine: {{name: vllm, version: '0.10.1'}}}}\n"
        )
    (folder / "measurements" / "index.yaml").write_text("measurements:\n" + "".join(entries))


def test_points_that_contradict_the_model_are_refused_not_clipped(tmp_path: Path) -> None:
    """10 ms at one user and 8 ms at 32: a step of 32 sequences reads more than one of a
    single sequence, so it cannot be faster; each is possible alone (at least 6.2 ms), but a
    fit of both rests on the full datasheet bandwidth and still misses the 32-user point by
    more than the 5 % floor. Nothing is written; the problem names the figure, the bound and
    the point."""
    folder = _folder(tmp_path)
    _points(folder, {"one": (1, 10.0), "many": (32, 8.0)})
    assert CliRunner().invoke(main, ["check", "--catalogs", str(folder)]).exit_code == 0
    result, out = _calibrate(folder)
    words = [
        "many.json",
        "measurement 'many'",
        "bandwidth_efficiency would have to go past 1",
        "8 ms at 32 users",
        "contradict the model",
    ]
    _refused_by_calibrate(result, out, words)


def test_points_that_disagree_within_the_bounds_say_so(tmp_path: Path) -> None:
    """12 ms and 16 ms at the same 32 users: one step size, so only the efficiency is fitted,
    to a step between them; the fit misses each by about ±14 %, which the summary states (and
    the held-out error carries), rather than a +0.0 %."""
    folder = _folder(tmp_path)
    _points(folder, {"first": (32, 12.0), "again": (32, 16.0)})
    result, out = _calibrate(folder)
    assert result.exit_code == 0, (result.output, result.exception)
    assert "the fit misses first's itl_s.p50 (12 ms at 32 users) by +1" in result.output
    assert "the fit misses again's itl_s.p50 (16 ms at 32 users) by -1" in result.output
    points = yaml.safe_load(out.read_text())["calibration"][0]["points"]
    assert [p["error"][0] for p in points] == ["+", "-"]
    assert all(p["error"] != "+0.0%" for p in points)


def test_a_calibration_of_nothing_is_refused(tmp_path: Path) -> None:
    """A benchmark of a p99 alone, which no plan metric estimates: nothing to fit, so nothing
    is written (a calibration without a fitted figure is one check refuses)."""
    folder = _folder(tmp_path)
    bench(median_itl_ms=..., median_ttft_ms=..., mean_tpot_ms=..., output_throughput=...,
          request_throughput=...)(folder)  # fmt: skip
    (folder / "measurements" / "index.yaml").write_text(INDEX.split("  - id: startup")[0])
    result, out = _calibrate(folder)
    _refused_by_calibrate(result, out, ["nothing fitted", "itl_s.p99", "no plan metric"])


def test_an_unknown_release_is_planned_with_the_nearest_and_said(tmp_path: Path) -> None:
    """vLLM 0.99 has no constants: check passes, and calibrate fits it with the newest
    series' constants, saying so in its notes (no assertion anywhere)."""
    folder = _folder(tmp_path)
    index('version: "0.10.1"}', 'version: "0.99"}')(folder)
    (folder / "measurements" / "index.yaml").write_text(
        (folder / "measurements" / "index.yaml").read_text().split("  - id: startup")[0]
    )
    assert CliRunner().invoke(main, ["check", "--catalogs", str(folder)]).exit_code == 0
    result, out = _calibrate(folder)
    assert result.exit_code == 0, (result.output, result.exception)
    assert "vllm 0.99 has no memory constants of its own" in result.output
    assert "nearest known series" in result.output
    assert yaml.safe_load(out.read_text())["calibration"][0]["engine"] == "vllm 0.99"


def test_a_refused_fit_is_a_message_not_a_traceback(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    _points(folder, {"one": (1, 10.0), "many": (32, 8.0)})
    result, _ = _calibrate(folder)
    _clean_refusal(result, ["bandwidth_efficiency would have to go past 1"])


def test_the_battery_is_large_enough() -> None:
    assert len(CASES) >= 30
    assert os.path.basename(__file__) == "test_hostile_measure.py"
