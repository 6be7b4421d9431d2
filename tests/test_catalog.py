"""Malformed catalogs: each gives exit 1, a message naming file, entry and field, no traceback,
and no run folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.catalog import CatalogError, load_catalog
from planner.cli import main

GOOD_HARDWARE = """hardware:
  - id: seed-16gib
    name: Seed device
    memory: 16 GiB
    memory_bandwidth: 700 GB/s
    compute: {bf16: 100 TFLOPS}
"""

BILLION_LAUGHS = """a: &a ["x","x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]
hardware: [*g]
"""

# (file to replace, its new text, fragments the message must contain)
CASES = {
    "missing unit": (
        "hardware.yaml",
        GOOD_HARDWARE.replace("16 GiB", "16"),
        ["hardware.yaml:4", "hardware 'seed-16gib'", "field 'memory'", "has no unit", "GiB"],
    ),
    "bare number for memory": (
        "hardware.yaml",
        GOOD_HARDWARE.replace("16 GiB", "80"),
        ["hardware.yaml:4", "field 'memory'", "80 has no unit"],
    ),
    "unknown unit": (
        "hardware.yaml",
        GOOD_HARDWARE.replace("700 GB/s", "700 GBps"),
        ["hardware.yaml:5", "field 'memory_bandwidth'", "unknown unit 'GBps'", "GB/s"],
    ),
    "unknown field": (
        "hardware.yaml",
        GOOD_HARDWARE + "    colour: green\n",
        ["hardware.yaml:7", "hardware 'seed-16gib'", "field 'colour'", "unknown field", "memory"],
    ),
    "missing field": (
        "hardware.yaml",
        GOOD_HARDWARE.replace("    memory_bandwidth: 700 GB/s\n", ""),
        ["hardware.yaml", "hardware 'seed-16gib'", "field 'memory_bandwidth'", "required"],
    ),
    "duplicate id": (
        "hardware.yaml",
        GOOD_HARDWARE + GOOD_HARDWARE.split("\n", 1)[1],
        ["hardware.yaml:7", "duplicate id 'seed-16gib'", "field 'id'"],
    ),
    "negative bandwidth": (
        "hardware.yaml",
        GOOD_HARDWARE.replace("700 GB/s", "-700 GB/s"),
        ["hardware.yaml:5", "field 'memory_bandwidth'", "greater than zero"],
    ),
    "zero memory": (
        "hardware.yaml",
        GOOD_HARDWARE.replace("16 GiB", "0 GiB"),
        ["hardware.yaml:4", "field 'memory'", "greater than zero"],
    ),
    "wrong type": (
        "models.yaml",
        "models:\n  - id: m\n    parameters: 1000\n    layers: thirty-two\n"
        "    kv_heads: 8\n    head_dim: 128\n",
        ["models.yaml:4", "models 'm'", "field 'layers'", "integer", "thirty-two"],
    ),
    "float where an integer count is needed": (
        "workloads.yaml",
        "workloads:\n  - id: w\n    prompt_tokens: 10.5\n    max_output_tokens: 10\n"
        "    concurrency: 1\n",
        ["workloads.yaml:3", "workloads 'w'", "field 'prompt_tokens'"],
    ),
    "invalid YAML": (
        "precisions.yaml",
        "precisions:\n  - id: bf16\n    weight_bytes_per_param: [2\n",
        ["precisions.yaml:", "invalid YAML"],
    ),
    "empty file": ("workloads.yaml", "", ["workloads.yaml", "the file is empty"]),
    "alias-heavy YAML": ("hardware.yaml", BILLION_LAUGHS, ["hardware.yaml", "aliases"]),
    "repeated key": (
        "hardware.yaml",
        GOOD_HARDWARE + "    memory: 32 GiB\n",
        ["hardware.yaml:7", "key 'memory' appears twice (first on line 4)"],
    ),
    "dangling scenario reference": (
        "scenarios.yaml",
        "scenarios:\n  - id: s\n    hardware: [seed-16gib, nonexistent-gpu]\n",
        [
            "scenarios.yaml:3",
            "scenarios 's'",
            "field 'hardware'",
            "'nonexistent-gpu'",
            "seed-16gib",
        ],
    ),
    "bad id": (
        "workloads.yaml",
        "workloads:\n  - id: Chat Workload\n    prompt_tokens: 10\n    max_output_tokens: 10\n"
        "    concurrency: 1\n",
        ["workloads.yaml:2", "field 'id'", "pattern"],
    ),
    "efficiency above one": (
        "assumptions.yaml",
        "assumptions:\n  runtime_overhead: 2 GiB\n  reserve: 2 GiB\n  bandwidth_efficiency: 1.5\n",
        [
            "assumptions.yaml:4",
            "field 'assumptions.bandwidth_efficiency'",
            "less than or equal to 1",
        ],
    ),
    "unknown engine": (
        "assumptions.yaml",
        "assumptions:\n  runtime_overhead: 2 GiB\n  reserve: 2 GiB\n  engine:\n    name: lmdeploy\n"
        "    version: 0.6.1\n",
        [
            "assumptions.yaml:5",
            "field 'assumptions.engine.name'",
            "'vllm', 'sglang' or 'tensorrt-llm'",
        ],
    ),
    "another engine's memory argument": (
        "assumptions.yaml",
        "assumptions:\n  runtime_overhead: 2 GiB\n  reserve: 2 GiB\n  engine:\n    name: sglang\n"
        "    version: 0.5.2\n    gpu_memory_utilization: 0.9\n",
        ["gpu_memory_utilization is vllm's argument; sglang takes mem_fraction_static"],
    ),
    "engine utilisation above one": (
        "assumptions.yaml",
        "assumptions:\n  runtime_overhead: 2 GiB\n  reserve: 2 GiB\n  engine:\n    name: vllm\n"
        "    version: 0.10.1\n    gpu_memory_utilization: 1.2\n",
        ["assumptions.yaml:7", "gpu_memory_utilization", "less than or equal to 1"],
    ),
    "not a mapping": ("models.yaml", "- just\n- a list\n", ["models.yaml:1", "expected a mapping"]),
    "unknown compute format": (
        "precisions.yaml",
        "precisions:\n  - id: p\n    weight_bytes_per_param: 1\n    kv_bytes_per_value: 1\n"
        "    compute: fp4\n",
        ["precisions.yaml:5", "precisions 'p'", "field 'compute'", "'fp4'", "bf16"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_malformed_catalog_is_rejected_clearly(case, seed_copy: Path, tmp_path: Path):
    file_name, text, fragments = CASES[case]
    (seed_copy / file_name).write_text(text)
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", "--catalogs", str(seed_copy), "--out", str(out)])
    assert result.exit_code == 1, result.output
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.output, (fragment, result.output)
    assert not out.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["catalogs"]  # no staging leftovers either
    check = CliRunner().invoke(main, ["check", "--catalogs", str(seed_copy)])
    assert check.exit_code == 1
    assert all(fragment in check.output for fragment in fragments)


def test_every_problem_is_reported_at_once(seed_copy: Path):
    (seed_copy / "hardware.yaml").write_text(
        GOOD_HARDWARE.replace("16 GiB", "16").replace("700 GB/s", "-1 GB/s")
    )
    (seed_copy / "workloads.yaml").write_text("")
    with pytest.raises(CatalogError) as info:
        load_catalog(seed_copy)
    messages = [str(p) for p in info.value.problems]
    assert len(messages) == 3, messages
    assert any("field 'memory'" in m for m in messages)
    assert any("field 'memory_bandwidth'" in m for m in messages)
    assert any("workloads.yaml" in m and "empty" in m for m in messages)


def test_missing_file(seed_copy: Path):
    (seed_copy / "precisions.yaml").unlink()
    with pytest.raises(CatalogError, match="precisions.yaml: the file is missing"):
        load_catalog(seed_copy)


def test_real_process_prints_no_traceback(seed_copy: Path, tmp_path: Path):
    (seed_copy / "hardware.yaml").write_text(GOOD_HARDWARE.replace("16 GiB", "80"))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "planner.cli",
            "run",
            "--catalogs",
            str(seed_copy),
            "--out",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "field 'memory'" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_earlier_report_is_untouched_by_a_failed_run(seed_dir: Path, seed_copy: Path, tmp_path):
    out = tmp_path / "run"
    runner = CliRunner()
    assert (
        runner.invoke(main, ["run", "--catalogs", str(seed_dir), "--out", str(out)]).exit_code == 0
    )
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    (seed_copy / "hardware.yaml").write_text(GOOD_HARDWARE.replace("16 GiB", "16"))
    result = runner.invoke(
        main, ["run", "--catalogs", str(seed_copy), "--out", str(out), "--force"]
    )
    assert result.exit_code == 1
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_scenarios_restrict_the_cross(seed_copy: Path):
    from planner.plan.sweep import evaluate

    (seed_copy / "scenarios.yaml").write_text(
        "scenarios:\n  - id: small\n    models: [invented-4gib]\n    workloads: [seed-4k]\n"
    )
    table = evaluate(load_catalog(seed_copy)).table
    assert table[["model", "workload"]].drop_duplicates().values.tolist() == [
        ["invented-4gib", "seed-4k"]
    ]


def test_model_without_parameters_or_architecture(seed_copy: Path):
    (seed_copy / "models.yaml").write_text(
        "models:\n  - id: m\n    layers: 2\n    kv_heads: 1\n    head_dim: 8\n"
    )
    with pytest.raises(CatalogError, match="give `parameters`, or the architecture"):
        load_catalog(seed_copy)


# Compute fallbacks ---------------------------------------------------------------------------


def _shipped_precisions(*ids: str) -> str:
    """The shipped precisions.yaml entries ``ids``, as YAML text of a precisions file."""
    import yaml
    from conftest import SHIPPED

    shipped = yaml.safe_load((SHIPPED / "precisions.yaml").read_text())["precisions"]
    return yaml.safe_dump({"precisions": [p for p in shipped if p["id"] in ids]}, sort_keys=False)


def test_fp4_precisions_fall_back_to_bf16_on_hardware_without_fp4(seed_copy: Path):
    from planner.plan.sweep import evaluate

    # The seed's one device gives bf16 only; the shipped mxfp4 and nvfp4 compute in fp4 and
    # fall back to bf16.
    (seed_copy / "precisions.yaml").write_text(_shipped_precisions("bf16", "mxfp4", "nvfp4"))
    check = CliRunner().invoke(main, ["check", "--catalogs", str(seed_copy)])
    assert check.exit_code == 0, check.output
    table = evaluate(load_catalog(seed_copy)).table
    row = table[(table.precision == "nvfp4") & (table.model == "invented-7b")].iloc[0]
    assert row.compute_format == "fp4" and row.compute_fallback == "bf16"
    # invented-7b: 7e9 parameters, dense, so 2 × 7e9 = 1.4e10 FLOP a token; at the bf16 rate of
    # 100 TFLOPS and compute_efficiency 1.0, 1.4e10 / 1e14 = 1.4e-4 s.
    assert row.compute_flops_per_s == pytest.approx(100e12)
    assert row.compute_bound_s == pytest.approx(1.4e10 / 100e12)
    # mxfp4 quantises experts only: the seed's dense models skip it, nothing else refuses it.
    assert "mxfp4" not in set(table.precision)


def test_shipped_catalogs_without_fp4_hardware_pass_check(tmp_path: Path):
    import shutil

    import yaml
    from conftest import SHIPPED

    copy = tmp_path / "catalogs"
    shutil.copytree(SHIPPED, copy, ignore=shutil.ignore_patterns("examples"))
    hardware = yaml.safe_load((copy / "hardware.yaml").read_text())
    hardware["hardware"] = [h for h in hardware["hardware"] if "fp4" not in h["compute"]]
    assert hardware["hardware"]  # something is left to plan on
    (copy / "hardware.yaml").write_text(yaml.safe_dump(hardware, sort_keys=False))
    check = CliRunner().invoke(main, ["check", "--catalogs", str(copy)])
    assert check.exit_code == 0, check.output


@pytest.mark.parametrize(
    ("compute", "fallback", "field", "fragments"),
    [
        # Neither the format nor its fallback: one message naming both, on the format.
        ("fp4", "fp8", "compute", ["neither compute format 'fp4'", "compute_fallback 'fp8'"]),
        # A fallback no hardware gives is a dangling reference even when the format is given.
        ("bf16", "fp6", "compute_fallback", ["compute_fallback 'fp6' is not given"]),
    ],
)
def test_a_fallback_no_hardware_gives_is_refused(seed_copy, compute, fallback, field, fragments):
    (seed_copy / "precisions.yaml").write_text(
        "precisions:\n  - id: p\n    weight_bytes_per_param: 1\n    kv_bytes_per_value: 1\n"
        f"    compute: {compute}\n    compute_fallback: {fallback}\n"
    )
    check = CliRunner().invoke(main, ["check", "--catalogs", str(seed_copy)])
    assert check.exit_code == 1
    for fragment in [*fragments, "precisions 'p'", f"field '{field}'", "hardware gives: bf16"]:
        assert fragment in check.output, (fragment, check.output)


@pytest.mark.parametrize(
    ("engine", "version", "planned_with"),
    [
        ("vllm", "0.40.2", "vllm 0.31"),  # newer than any known series: the newest
        ("vllm", "0.25", "vllm 0.21"),  # between 0.21 and 0.31: the nearer, 0.21
        ("vllm", "0.3.1", "vllm 0.6"),  # older than any: the oldest
        ("sglang", "0.6.0", "sglang 0.5"),
        ("tensorrt-llm", "1.2.0", "tensorrt-llm 1.0"),
    ],
)
def test_an_unknown_release_of_a_known_engine_plans_with_a_warning(
    seed_copy: Path, engine: str, version: str, planned_with: str
) -> None:
    """A release without constants of its own is planned with the nearest known series, and
    `planner check` says which, on the terminal, without failing."""
    folder = seed_copy
    path = folder / "assumptions.yaml"
    path.write_text(path.read_text() + f"  engine: {{name: {engine}, version: '{version}'}}\n")
    result = CliRunner().invoke(main, ["check", "--catalogs", str(folder)])
    assert result.exit_code == 0, result.output
    said = (
        f"{engine} {version} has no memory constants of its own: planned with those of "
        f"{planned_with}, the nearest known series"
    )
    assert said in " ".join(result.output.split())
    assert "engine.version" in result.output


# Parameters outside the decoder ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("encoder", "warned"),
    [
        # Qwen2.5-VL 7B: decoder 7,615,616,512 + vision 676,550,144 = 8,292,166,656 (tests/
        # test_hf.py), +0.0 % from the Hub's 8.29B.
        ("    encoder_parameters: 676550144\n", None),
        # Without the vision tower the decoder alone is 8.1 % short of the published total.
        ("", "the architecture gives 7,615,616,512 parameters, -8.1% from the published"),
    ],
)
def test_a_published_total_is_compared_with_decoder_and_encoder(seed_copy, encoder, warned):
    path = seed_copy / "models.yaml"
    path.write_text(
        path.read_text()
        + "  - id: qwen2.5-vl-7b\n    parameters: 8290000000\n"
        + encoder
        + "    layers: 28\n    hidden_size: 3584\n    intermediate_size: 18944\n"
        "    attention_heads: 28\n    kv_heads: 4\n    head_dim: 128\n    vocab_size: 152064\n"
        "    attention_bias: true\n"
    )
    result = CliRunner().invoke(main, ["check", "--catalogs", str(seed_copy)])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    if warned:
        assert warned in said and "field 'parameters'" in said
    else:
        assert "the architecture gives" not in said
