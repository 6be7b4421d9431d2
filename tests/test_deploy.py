"""From the plan to a running engine (planner.deploy): the launch commands parsed against each
engine's own argument list and read back equal to the plan's rows, the manifests validated
against the Kubernetes API's schema, catalog text kept out of shell syntax, the measurement
kit's dry run filled with a public benchmark and read by planner calibrate with every point
used, and planner measure check naming a measurement of other settings."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pandas as pd
import pytest
import yaml
from click.testing import CliRunner

from planner.catalog import Catalog, load_catalog
from planner.catalog.plan_records import Engine
from planner.cli import main
from planner.deploy import deploy_files, line_settings
from planner.deploy.check import check
from planner.deploy.engines import MODEL, launch
from planner.deploy.kit import script
from planner.deploy.manifests import manifest
from planner.deploy.settings import LaunchSettings, launch_settings
from planner.measure import MeasurementEntry
from planner.plan.deployment import API, ask

SHIPPED = Path(__file__).resolve().parent.parent / "catalogs"
ENGINES = Path(__file__).resolve().parent / "fixtures" / "engines"
BASH = shutil.which("bash") or "bash"  # the scripts are bash: a machine without it fails

#: Each engine's command words and the option list of its own parser (see each file's header).
PARSERS = {
    "vllm": (("vllm", "serve"), "vllm-serve.txt"),
    "sglang": (("python3", "-m", "sglang.launch_server"), "sglang-launch-server.txt"),
    "tensorrt-llm": (("trtllm-serve",), "trtllm-serve.txt"),
    "vllm-bench": (("vllm", "bench", "serve"), "vllm-bench-serve.txt"),
}


def options(file: str) -> dict[str, bool]:
    """An option list: every option string and whether it takes a value."""
    out = {}
    for line in (ENGINES / file).read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        strings, takes = line.split("\t")
        out |= dict.fromkeys(strings.split(), takes == "1")
    return out


def with_engine(engine: dict[str, Any], folder: Path = SHIPPED) -> Catalog:
    catalog = load_catalog(folder)
    update = {"engine": Engine.model_validate(engine)}
    return dataclasses.replace(catalog, assumptions=catalog.assumptions.model_copy(update=update))


def parsed(engine: str, argv: tuple[str, ...]) -> dict[str, Any]:
    """A command's flags and values, each flag checked against the option list of the engine's
    own parser: a flag it does not define, a value missing or a switch given a value fails the
    test."""
    command, file = PARSERS[engine]
    assert tuple(argv[: len(command)]) == command
    rest = list(argv[len(command) :])
    known = options(file)
    out: dict[str, Any] = {}
    if not rest[0].startswith("--"):  # vLLM's and TensorRT-LLM's model is positional
        out["model"] = rest.pop(0)
    while rest:
        flag = rest.pop(0)
        assert flag in known, f"{engine} defines no {flag}"
        if known[flag]:
            assert rest and not rest[0].startswith("--"), f"{flag} needs a value"
            out[flag] = rest.pop(0)
        else:
            out[flag] = True
    return out


@pytest.fixture(scope="module")
def shipped() -> tuple[Catalog, list[Any]]:
    from planner.pipeline import plan

    catalog = load_catalog(SHIPPED)
    results = plan(catalog, processes=1)
    return catalog, ask(catalog, results.table).lines


def test_the_shipped_ask_gets_a_command_a_manifest_and_a_kit_per_line(shipped) -> None:
    catalog, lines = shipped
    files = deploy_files(catalog, lines)
    served = [line for line in lines if line.advice != API]
    assert served and len(served) < len(lines)  # the shipped ask answers one line by an API
    for line in served:
        for name in (f"launch-{line.workload}.sh", f"{line.workload}.yaml"):
            assert name in files
        assert f"measure-{line.workload}.sh" in files
    settings = json.loads(files["settings.json"])
    assert [s["line"] for s in settings] == [line.workload for line in served]


def test_every_vllm_command_parses_and_reads_back_the_plans_row(shipped) -> None:
    """Each flag is one vLLM defines; the tensor-parallel size, memory fraction, batch limits,
    longest sequence and the cache's type read back equal to the line's results row and the
    engine profile (vLLM's default release: prefix caching and chunked prefill on)."""
    catalog, lines = shipped
    for line in lines:
        if line.advice == API:
            continue
        (settings,) = launch_settings(catalog, line.row)
        flags = parsed("vllm", launch(settings).argv)
        row = line.row
        assert flags["model"] == MODEL
        assert int(flags["--tensor-parallel-size"]) == row["tensor_parallel"]
        assert float(flags["--gpu-memory-utilization"]) == pytest.approx(
            row["engine_memory_fraction"], abs=5e-5
        )
        assert int(flags["--max-model-len"]) == row["engine_max_model_len"]
        assert int(flags["--max-num-seqs"]) == catalog.assumptions.max_batch_sequences
        assert int(flags["--max-num-batched-tokens"]) == 8192  # the profile's default
        assert flags["--kv-cache-dtype"] == ("fp8" if row["kv_bytes_per_value"] == 1 else "auto")
        assert flags["--enable-prefix-caching"] and flags["--enable-chunked-prefill"]
        assert flags["--served-model-name"] == row["model"]


@pytest.mark.parametrize(
    ("engine", "memory", "seqs", "tokens", "length", "parallel"),
    [
        ("sglang", "--mem-fraction-static", "--max-running-requests", "--chunked-prefill-size",
         "--context-length", "--tp-size"),
        ("tensorrt-llm", "--kv_cache_free_gpu_memory_fraction", "--max_batch_size",
         "--max_num_tokens", "--max_seq_len", "--tp_size"),
    ],
)  # fmt: skip
def test_sglang_and_tensorrt_commands_carry_the_same_settings(
    engine: str, memory: str, seqs: str, tokens: str, length: str, parallel: str
) -> None:
    """Planned under SGLang 0.5 and TensorRT-LLM 1.0 with their own memory flags set, a line of
    Llama 3.1 70B in FP8 on H100s reads back in each engine's own flags."""
    from planner.plan.sweep import evaluate

    key = {"sglang": "mem_fraction_static", "tensorrt-llm": "free_gpu_memory_fraction"}[engine]
    version = {"sglang": "0.5", "tensorrt-llm": "1.0"}[engine]
    profile = {"name": engine, "version": version, key: 0.85, "max_num_seqs": 128}
    catalog = with_engine(profile)
    table = evaluate(catalog).table
    row = table[
        (table["hardware"] == "h100-sxm-80gb")
        & (table["model"] == "llama-3.1-70b")
        & (table["precision"] == "fp8")
        & (table["workload"] == "chat")
    ].iloc[0]
    (settings,) = launch_settings(catalog, row)
    command = launch(settings)
    flags = parsed(engine, command.argv)
    assert (
        float(flags[memory]) == pytest.approx(0.85) == pytest.approx(row["engine_memory_fraction"])
    )
    assert int(flags[seqs]) == 128
    assert int(flags[tokens]) == 8192
    assert int(flags[length]) == row["engine_max_model_len"]
    assert int(flags[parallel]) == row["tensor_parallel"]
    if engine == "tensorrt-llm":
        assert command.options_file is not None
        assert command.options_file["kv_cache_config"]["dtype"] == "fp8"
    else:
        assert flags["--kv-cache-dtype"] == "fp8_e4m3" and flags["--quantization"] == "fp8"


def test_every_manifest_is_valid_kubernetes_with_the_plans_counts(shipped) -> None:
    """Validated against the Kubernetes 1.33 API schema, additional properties refused: the
    Deployment runs the replicas planned, each with the devices of one replica of the planned
    hardware's family (AMD's plugin for MI300X), on nodes labelled with the hardware."""
    catalog, lines = shipped
    for line in lines:
        if line.advice == API:
            continue
        (settings,) = launch_settings(catalog, line.row)
        documents = manifest(settings, launch(settings))
        for document in documents:
            kubernetes_validate.validate(document, "1.33", strict=True)
        deployment = next(d for d in documents if d["kind"] == "Deployment")
        spec = deployment["spec"]["template"]["spec"]
        assert deployment["spec"]["replicas"] == line.row["replicas_planned"]
        limits = spec["containers"][0]["resources"]["limits"]
        family = catalog.get("hardware", line.row["hardware"]).family
        resource = "amd.com/gpu" if family == "cdna3" else "nvidia.com/gpu"
        assert limits == {resource: line.row["tensor_parallel"]}
        assert spec["nodeSelector"] == {"planner.io/hardware": line.row["hardware"]}


def test_a_tensorrt_manifest_mounts_its_options() -> None:
    settings = _settings(engine="tensorrt-llm", engine_version="1.0")
    documents = manifest(settings, launch(settings))
    assert [d["kind"] for d in documents] == ["ConfigMap", "Deployment", "Service"]
    for document in documents:
        kubernetes_validate.validate(document, "1.33", strict=True)
    args = documents[1]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "/etc/planner/extra-llm-api-options.yaml" in args
    options = yaml.safe_load(documents[0]["data"]["extra-llm-api-options.yaml"])
    assert options["kv_cache_config"] == {"enable_block_reuse": True, "dtype": "fp8"}


def _settings(**changes: Any) -> LaunchSettings:
    base = LaunchSettings(
        line="chat", workload="chat", model="llama-3.1-8b",
        model_repository="meta-llama/Llama-3.1-8B-Instruct", checkpoint="Llama 3.1 8B",
        revision=None, hardware="h100-sxm-80gb", precision="fp8", engine="vllm",
        engine_version="0.11.0", tensor_parallel=1, expert_parallel=1, pipeline_parallel=1,
        role="both", replicas=3,
        devices_per_replica=1, device_resource="nvidia.com/gpu", memory_fraction=0.9,
        max_num_seqs=256, max_num_batched_tokens=8192, max_model_len=8192, quantization="fp8",
        kv_cache_dtype="fp8", prefix_caching=True, chunked_prefill=True, cuda_graphs=True,
        speculative_method=None, speculative_tokens=0, draft_model=None, planned_batch=10,
        prompt_tokens=1024, output_tokens=1024,
    )  # fmt: skip
    return dataclasses.replace(base, **changes)


def test_a_disaggregated_line_starts_two_pools() -> None:
    """5 prefill and 9 decode replicas planned: two pools, each started with vLLM's NIXL
    connector, SGLang's disaggregation mode in its role."""
    catalog = load_catalog(SHIPPED)
    row = {
        "hardware": "h100-sxm-80gb", "model": "llama-3.1-8b", "precision": "fp8",
        "workload": "document-analysis", "tensor_parallel": 1, "expert_parallel": 1,
        "disaggregated": 1, "replicas_planned": 14, "prefill_pool_planned": 5,
        "engine_memory_fraction": 0.92, "engine_max_model_len": 40000, "load_batch": 12,
        "prompt_tokens_mean": 24000, "output_tokens_mean": 600,
    }  # fmt: skip
    prefill, decode = launch_settings(catalog, pd.Series(row))
    assert (prefill.line, prefill.replicas) == ("document-analysis-prefill", 5)
    assert (decode.line, decode.replicas) == ("document-analysis-decode", 9)
    flags = parsed("vllm", launch(prefill).argv)
    assert json.loads(flags["--kv-transfer-config"])["kv_connector"] == "NixlConnector"
    sglang = parsed("sglang", launch(dataclasses.replace(decode, engine="sglang")).argv)
    assert sglang["--disaggregation-mode"] == "decode"


def test_expert_parallel_and_speculative_settings_reach_each_engine() -> None:
    """An EP 8 replica: vLLM's data-parallel attention with experts spread, SGLang's EP and DP
    attention; EAGLE with 3 proposals: vLLM's JSON config and SGLang's draft tokens (k + 1)."""
    settings = _settings(
        expert_parallel=8, devices_per_replica=8, speculative_method="eagle",
        speculative_tokens=3, draft_model="eagle-head",
    )  # fmt: skip
    vllm = parsed("vllm", launch(settings).argv)
    assert vllm["--data-parallel-size"] == "8" and vllm["--enable-expert-parallel"]
    assert json.loads(vllm["--speculative-config"]) == {
        "method": "eagle", "model": "eagle-head", "num_speculative_tokens": 3,
    }  # fmt: skip
    sglang = parsed("sglang", launch(dataclasses.replace(settings, engine="sglang")).argv)
    assert sglang["--ep-size"] == "8" and sglang["--enable-dp-attention"]
    assert sglang["--speculative-num-draft-tokens"] == "4"
    assert "--enable-eplb" not in vllm and "--enable-eplb" not in sglang


def test_redundant_expert_slots_reach_each_engine() -> None:
    """EP 72 with 32 redundant slots (SGLang's decode of DeepSeek-V3): vLLM's load balancer
    with 32 redundant experts in its JSON config, SGLang's; TensorRT-LLM's says it is not
    written."""
    settings = _settings(expert_parallel=72, devices_per_replica=72, redundant_experts=32)
    vllm = parsed("vllm", launch(settings).argv)
    assert vllm["--enable-eplb"] and vllm["--enable-expert-parallel"]
    assert json.loads(vllm["--eplb-config"]) == {"num_redundant_experts": 32}
    sglang = parsed("sglang", launch(dataclasses.replace(settings, engine="sglang")).argv)
    assert sglang["--ep-num-redundant-experts"] == "32" and sglang["--enable-eplb"]
    tensorrt = launch(dataclasses.replace(settings, engine="tensorrt-llm"))
    assert any("32 redundant expert slots" in n for n in tensorrt.notes)


#: Settings that change a command's flags: features off, expert parallelism, speculation by an
#: EAGLE head and by MTP layers, both pools of a disaggregated line, a checkpoint pinned.
VARIANTS = [
    {},
    {"prefix_caching": False, "chunked_prefill": False, "cuda_graphs": False},
    {"expert_parallel": 8, "devices_per_replica": 8},
    {"expert_parallel": 72, "devices_per_replica": 72, "redundant_experts": 32},
    {"speculative_method": "eagle", "speculative_tokens": 3, "draft_model": "eagle-head"},
    {"speculative_method": "mtp", "speculative_tokens": 1},
    {"speculative_method": "draft", "speculative_tokens": 4, "draft_model": "llama-3.2-1b"},
    {"role": "prefill"},
    {"role": "decode"},
    {"quantization": None, "kv_cache_dtype": "auto", "revision": "abcdef1"},
]


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tensorrt-llm"])
@pytest.mark.parametrize("changes", VARIANTS)
def test_every_command_parses_with_the_engines_own_options(
    engine: str, changes: dict[str, Any]
) -> None:
    parsed(engine, launch(_settings(engine=engine, **changes)).argv)


@pytest.mark.parametrize(
    ("mean", "reserved", "longest", "expected"),
    [
        (1024, 6000, 8192, [(1, 1024), (10, 1024), (1, 6000)]),  # reserved ≥ 2 × mean
        (1024, 1800, 8192, [(1, 1024), (10, 1024)]),  # within twice the mean: one length
        (1024, 6000, 4096, [(1, 1024), (10, 1024), (1, 3072)]),  # within 4,096 less 1,024 out
    ],
)
def test_the_kit_measures_a_second_prompt_length_where_the_plan_reserves_long_ones(
    mean: int, reserved: int, longest: int, expected: list[tuple[int, int]]
) -> None:
    """One request and the planned batch at the mean prompt, and one request of the longest
    prompt the plan reserves where it is at least twice the mean (two lengths separate a
    prompt's arithmetic from a step's fixed time), within the longest sequence less the output."""
    from planner.deploy.kit import loads

    catalog = load_catalog(SHIPPED)
    row = {
        "hardware": "h100-sxm-80gb", "model": "llama-3.1-8b", "precision": "fp8",
        "workload": "chat", "tensor_parallel": 1, "replicas_planned": 2,
        "engine_memory_fraction": 0.9, "engine_max_model_len": longest, "load_batch": 10,
        "prompt_tokens_mean": mean, "output_tokens_mean": 1024, "prompt_tokens": reserved,
    }  # fmt: skip
    (settings,) = launch_settings(catalog, row)
    assert [(load.concurrency, load.prompt_tokens) for load in loads(settings)] == expected


def test_the_kits_header_names_its_loads_in_order() -> None:
    """Concurrencies as numbers (8 before 16), each once: one request twice (the mean and the
    long prompt) is said once."""
    settings = _settings(planned_batch=16, long_prompt_tokens=6000)
    assert "benchmark it at 1 and 16 requests in flight" in script(settings, launch(settings))
    settings = _settings(planned_batch=8)
    assert "benchmark it at 1 and 8 requests in flight" in script(settings, launch(settings))


def test_the_benchmark_parses_with_vllm_bench_serves_own_options() -> None:
    """The kit's benchmark at 10 requests in flight: vLLM's own options, the workload's lengths,
    outputs not cut short, the result saved where the index points."""
    from planner.deploy.kit import benchmark_argv, loads

    at_ten = next(load for load in loads(_settings()) if load.concurrency == 10)
    flags = parsed("vllm-bench", tuple(benchmark_argv(_settings(), at_ten)))
    assert flags["--max-concurrency"] == "10" and flags["--num-prompts"] == "40"
    assert flags["--random-input-len"] == flags["--random-output-len"] == "1024"
    assert flags["--ignore-eos"] and flags["--save-result"]
    assert flags["--result-filename"] == "chat-${STAMP}-c10.json"


def test_catalog_text_stays_text_in_the_scripts(tmp_path: Path) -> None:
    """A model named with shell syntax and a quantised precision (so the script asks for the
    checkpoint by the model's name): the script refuses to start without MODEL, and its message
    holds the name as it was written, nothing run."""
    name = "Evil $(touch pwned) `touch pwned2`; touch pwned3"
    settings = _settings(model_repository=None, checkpoint=f"a checkpoint of {name}")
    text = script(settings, launch(settings))
    path = tmp_path / "measure.sh"
    path.write_text(text)
    done = subprocess.run(
        [BASH, str(path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2
    assert name in done.stderr
    assert not list(tmp_path.glob("pwned*"))


def _dry_run(tmp_path: Path, settings: LaunchSettings, out: Path) -> tuple[list[str], str]:
    path = tmp_path / f"measure-{settings.line}.sh"
    path.write_text(script(settings, launch(settings)))
    done = subprocess.run(
        [BASH, str(path), "--dry-run"], cwd=tmp_path, capture_output=True, text=True,
        env={"PATH": "/usr/bin:/bin", "OUT": str(out)}, check=True,
    )  # fmt: skip
    commands, entries = done.stdout.split("# index entries:\n")
    return commands.splitlines(), entries


#: The Qwen2-7B A100 set of the validation suite (dennislee22/vLLM-benchmarking, README "Test
#: 5", commit b474d1e; vLLM 0.10.1.1, gpu-memory-utilization 0.5, 1,024-token prompts and
#: outputs): N → (mean TPOT, median ITL) [ms] at 1 and 10 requests.
QWEN_POINTS = {1: (11.75, 11.64), 10: (13.47, 13.09)}


def test_the_kits_dry_run_filled_with_a_public_benchmark_calibrates_with_every_point(
    tmp_path: Path,
) -> None:
    """The kit for Qwen 2.5 7B on an A100 under vLLM 0.10.1 at half the memory, measured at 1
    and 10 requests of 1,024 tokens each way: its dry run prints the benchmark commands and the
    index entries; the files it names, filled with the public set's figures at those loads, are
    read by planner calibrate, which uses both figures of both files."""
    folder = tmp_path / "catalogs"
    shutil.copytree(SHIPPED, folder)
    profile = {"name": "vllm", "version": "0.10.1", "gpu_memory_utilization": 0.5}
    catalog = with_engine(profile, folder)
    from planner.plan.sweep import evaluate

    table = evaluate(catalog).table
    row = table[
        (table["hardware"] == "a100-sxm-80gb")
        & (table["model"] == "qwen2.5-7b")
        & (table["precision"] == "bf16")
        & (table["tensor_parallel"] == 1)
    ].iloc[0]
    (planned,) = launch_settings(catalog, row)
    settings = dataclasses.replace(
        planned, planned_batch=10, prompt_tokens=1024, output_tokens=1024, long_prompt_tokens=0
    )
    assert settings.memory_fraction == 0.5 and settings.engine_version == "0.10.1"
    out = folder / "measurements"
    commands, entries_text = _dry_run(tmp_path, settings, out)
    entries = yaml.safe_load(entries_text)
    benches = [e for e in entries if e["format"] == "vllm-bench"]
    assert [e["concurrency"] for e in benches] == [1, 10]
    named = [c.split("--result-filename ")[1].split()[0] for c in commands if "bench serve" in c]
    assert named == [e["file"] for e in benches]
    assert all(f"--result-dir {out}" in c for c in commands if "bench serve" in c)
    out.mkdir()
    for entry in benches:
        tpot, itl = QWEN_POINTS[entry["concurrency"]]
        n = entry["concurrency"]
        (out / entry["file"]).write_text(json.dumps({
            "mean_tpot_ms": tpot, "median_itl_ms": itl, "max_concurrency": n, "num_prompts": n,
            "completed": n, "total_input_tokens": 1024 * n, "total_output_tokens": 1024 * n,
        }))  # fmt: skip
    index = {"measurements": [{**e, "engine": {**e["engine"]}} for e in benches]}
    (out / "index.yaml").write_text(yaml.safe_dump(index, sort_keys=False))
    done = CliRunner().invoke(main, ["calibrate", "--catalogs", str(folder)])
    assert done.exit_code == 0, done.output
    document = yaml.safe_load(done.stdout)
    points = {
        (p["measurement"], p["figure"]) for fit in document["calibration"] for p in fit["points"]
    }
    wanted = {(e["id"], f) for e in benches for f in ("tpot_s.mean", "itl_s.p50")}
    assert wanted <= points


def _entry(**changes: Any) -> MeasurementEntry:
    fields = {
        "id": "m", "file": "m.json", "format": "vllm-bench", "hardware": "h100-sxm-80gb",
        "model": "llama-3.1-8b", "precision": "fp8", "tensor_parallel": 1, "concurrency": 10,
        "engine": {"name": "vllm", "version": "0.11.2", "gpu_memory_utilization": 0.9,
                   "max_num_seqs": 256, "max_num_batched_tokens": 8192, "max_model_len": 8192,
                   "chunked_prefill": True, "prefix_caching": True, "cuda_graphs": True},
    }  # fmt: skip
    engine: dict[str, Any] = dict(fields.pop("engine"))  # type: ignore[call-overload]
    for key, value in changes.items():
        if key in engine or key in ("name", "version"):
            engine[key] = value
        else:
            fields[key] = value
    fields["engine"] = {k: v for k, v in engine.items() if v is not None}  # None: not stated
    return MeasurementEntry.model_validate(fields)


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({}, None),
        ({"max_num_seqs": 128}, "max_num_seqs 128 (planned 256)"),
        ({"version": "0.19.1"}, "release 0.19.1 (planned 0.11.0)"),
        ({"precision": "bf16"}, "precision bf16 (planned fp8)"),
        ({"gpu_memory_utilization": 0.95}, "gpu_memory_utilization 0.95 (planned 0.9)"),
        (
            {"name": "sglang", "version": "0.5", "gpu_memory_utilization": None},
            "engine sglang (planned vllm)",
        ),
    ],
)
def test_measure_check_names_each_setting_apart(changes: dict[str, Any], said: str | None) -> None:
    pools = [_settings().to_dict()]
    (verdict,) = check([_entry(**changes)], pools)
    if said is None:
        assert verdict.matches and verdict.text() == "m: the plan's settings for chat"
    else:
        assert not verdict.matches
        assert said in verdict.text() and "left out of the comparison" in verdict.text()


def test_measure_check_says_what_an_entry_leaves_unconfirmed() -> None:
    entry = MeasurementEntry.model_validate(
        {"id": "m", "file": "m.log", "format": "vllm-log", "hardware": "h100-sxm-80gb",
         "model": "llama-3.1-8b", "precision": "fp8",
         "engine": {"name": "vllm", "version": "0.11"}}
    )  # fmt: skip
    (verdict,) = check([entry], [_settings().to_dict()])
    assert verdict.matches
    assert "not confirmed: gpu_memory_utilization, max_num_seqs" in verdict.text()
    (other,) = check([entry.model_copy(update={"hardware": "l4-24gb"})], [_settings().to_dict()])
    assert other.pool is None and "no line of the plan" in other.text()


def test_planner_measure_check_on_a_run(shipped, tmp_path: Path) -> None:
    """The command on a run's deploy/settings.json: a measurement at another max_num_seqs is
    named and the command exits 1; the plan's own settings pass."""
    catalog, lines = shipped
    run = tmp_path / "run" / "deploy"
    run.mkdir(parents=True)
    pools = [s.to_dict() for s in line_settings(catalog, lines)]
    (run / "settings.json").write_text(json.dumps(pools))
    first = pools[0]
    engine = {"name": first["engine"], "version": first["engine_version"],
              "max_num_seqs": first["max_num_seqs"]}  # fmt: skip
    entry = {"id": "ok", "file": "ok.log", "format": "vllm-log", "hardware": first["hardware"],
             "model": first["model"], "precision": first["precision"],
             "tensor_parallel": first["tensor_parallel"], "engine": engine}  # fmt: skip
    folder = tmp_path / "measurements"
    folder.mkdir()
    index = {"measurements": [entry]}
    (folder / "index.yaml").write_text(yaml.safe_dump(index))
    done = CliRunner().invoke(main, ["measure", "check", str(folder), "--run", str(run.parent)])
    assert done.exit_code == 0, done.output
    assert "1 of 1 measurement(s) taken as planned." in done.output
    index["measurements"].append({**entry, "id": "other", "engine": {**engine, "max_num_seqs": 1}})
    (folder / "index.yaml").write_text(yaml.safe_dump(index))
    done = CliRunner().invoke(main, ["measure", "check", str(folder), "--run", str(run.parent)])
    assert done.exit_code == 1
    assert f"other: not the plan's settings for {first['line']}: max_num_seqs 1" in done.output


def test_a_measurement_of_other_settings_is_not_the_line_measured(shipped) -> None:
    """A start-up log of the first line's model on its hardware, taken at max_num_seqs 1: it is
    named apart, with its difference, and what to measure next still asks for the line's own
    start-up log; the same log at the plan's settings counts as the line measured."""
    from planner.deploy.check import apart
    from planner.measure import Measurement
    from planner.measure.next_steps import next_measurements
    from planner.plan.deployment import Ask

    catalog, lines = shipped
    line = next(line for line in lines if line.advice != API)
    (pool,) = launch_settings(catalog, line.row)
    engine = {"name": pool.engine, "version": pool.engine_version, "max_num_seqs": 1}
    fields = {"id": "log", "file": "x.log", "format": "vllm-log", "hardware": pool.hardware,
              "model": pool.model, "precision": pool.precision,
              "tensor_parallel": pool.tensor_parallel, "engine": engine}  # fmt: skip
    other = Measurement(MeasurementEntry.model_validate(fields), {}, {})
    (verdict,) = apart(catalog, [line], [other])
    assert verdict.text() == (
        f"log: not the plan's settings for {pool.line}: max_num_seqs 1 (planned "
        f"{pool.max_num_seqs}); left out of the comparison with the plan"
    )
    said = next_measurements(catalog, Ask([line]), (other,), {"log": verdict.text()})
    assert said[0] == verdict.text() + "."
    assert any("keep the serving engine's start-up log" in s for s in said)
    engine["max_num_seqs"] = pool.max_num_seqs
    same = Measurement(MeasurementEntry.model_validate(fields), {}, {})
    assert apart(catalog, [line], [same]) == ()
    said = next_measurements(catalog, Ask([line]), (same,))
    assert not any("keep the serving engine's start-up log" in s for s in said)


def test_planner_deploy_writes_any_option_of_a_run(shipped, tmp_path: Path) -> None:
    """An option of a run that is not a line of its ask: its launch files in a new folder, the
    Deployment's replicas its own; a candidate the run lacks, or a folder that exists, is
    refused with exit 1 and nothing written."""
    catalog, lines = shipped
    from planner.plan.sweep import evaluate

    table = evaluate(catalog).table
    row = table[(table["hardware"] == "l40s-48gb") & (table["workload"] == "chat")].iloc[0]
    run = tmp_path / "run"
    shutil.copytree(SHIPPED, run / "catalogs")
    (run / "results.json").write_text(json.dumps({"rows": [json.loads(row.to_json())]}))
    out = tmp_path / "option"
    args = ["deploy", str(run), "--candidate", row["candidate"], "--out", str(out)]
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 0, done.output
    assert sorted(p.name for p in out.iterdir()) == [
        "chat.yaml", "launch-chat.sh", "measure-chat.sh", "settings.json",
    ]  # fmt: skip
    documents = yaml.safe_load_all((out / "chat.yaml").read_text())
    deployment = next(d for d in documents if d["kind"] == "Deployment")
    assert deployment["spec"]["replicas"] == row["replicas_planned"]
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 1 and "already exists" in again.output
    missing = CliRunner().invoke(main, [*args[:3], "nope", "--out", str(tmp_path / "x")])
    assert missing.exit_code == 1 and "no candidate 'nope'" in missing.output
    assert not (tmp_path / "x").exists()


def test_the_kits_start_up_log_is_a_public_logs_place(tmp_path: Path) -> None:
    """Llama 3.1 8B in BF16 on one A100 40GB under vLLM 0.15.1 as a public log ran it (0.9 of
    the memory, 256 sequences, 8,192 tokens a step, 131,072 the longest, no CUDA graphs): the
    kit's launch command carries those settings, and the public log put where its dry run says
    the start-up log goes is read under the entry it prints (a log contradicting its entry is
    refused), planner calibrate saying of every figure of it why it is not fitted."""
    from test_measure import EXTRA_HARDWARE, FIXTURES

    folder = tmp_path / "catalogs"
    shutil.copytree(SHIPPED, folder)
    hardware = folder / "hardware.yaml"
    hardware.write_text(hardware.read_text().rstrip("\n") + "\n" + EXTRA_HARDWARE.lstrip("\n"))
    profile = {"name": "vllm", "version": "0.15.1", "gpu_memory_utilization": 0.9,
               "max_num_seqs": 256, "max_model_len": 131072, "cuda_graphs": False}  # fmt: skip
    catalog = with_engine(profile, folder)
    from planner.plan.sweep import evaluate

    table = evaluate(catalog).table
    row = table[
        (table["hardware"] == "a100-sxm-40gb")
        & (table["model"] == "llama-3.1-8b")
        & (table["precision"] == "bf16")
        & (table["tensor_parallel"] == 1)
    ].iloc[0]
    (settings,) = launch_settings(catalog, row)
    flags = parsed("vllm", launch(settings).argv)
    assert flags["--gpu-memory-utilization"] == "0.9" and flags["--enforce-eager"]
    assert flags["--max-model-len"] == "131072" and flags["--max-num-seqs"] == "256"
    out = folder / "measurements"
    _, entries_text = _dry_run(tmp_path, settings, out)
    (startup,) = [e for e in yaml.safe_load(entries_text) if e["format"] == "vllm-log"]
    out.mkdir()
    shutil.copy(FIXTURES / "a100-40gb-llama-3.1-8b-v0.15.log", out / startup["file"])
    (out / "index.yaml").write_text(yaml.safe_dump({"measurements": [startup]}, sort_keys=False))
    from planner.measure import load_measurements

    (measured,) = load_measurements(load_catalog(folder))  # its entry and the log agree
    assert measured.figures["kv_pool_tokens"] > 0 and measured.entry.id == startup["id"]
    done = CliRunner().invoke(main, ["calibrate", "--catalogs", str(folder)])
    # a V1 log prints no activation peak: calibrate reads every figure and says why each is
    # not fitted (what a benchmark at the plan's loads adds, above)
    for figure in measured.figures:
        assert f"{figure}: " in done.output


@pytest.mark.parametrize(
    ("precision", "quantization", "from_repository", "cache"),
    [
        ("bf16", None, True, "auto"),
        ("fp8", "fp8", True, "fp8"),  # FP8 quantised by the engine as it loads BF16 weights
        ("int4-g128", None, False, "auto"),  # a GPTQ/AWQ checkpoint
        ("mxfp4", None, False, "auto"),
        ("nvfp4", None, False, "fp8"),
    ],
)
def test_each_precision_names_its_checkpoint_and_cache(
    precision: str, quantization: str | None, from_repository: bool, cache: str
) -> None:
    """Where the engine can load the precision from the model's own repository (named in its
    source, huggingface.co/meta-llama/Llama-3.1-8B-Instruct), the scripts default to it; a
    4-bit precision needs a checkpoint quantised ahead of time, named by the user."""
    catalog = load_catalog(SHIPPED)
    row = {
        "hardware": "h100-sxm-80gb", "model": "llama-3.1-8b", "precision": precision,
        "workload": "chat", "tensor_parallel": 1, "replicas_planned": 1,
        "engine_memory_fraction": 0.9, "engine_max_model_len": 8192,
    }  # fmt: skip
    (settings,) = launch_settings(catalog, row)
    assert settings.quantization == quantization
    assert settings.kv_cache_dtype == cache
    expected = "meta-llama/Llama-3.1-8B-Instruct" if from_repository else None
    assert settings.model_repository == expected
    if not from_repository:
        assert settings.checkpoint.startswith("a checkpoint of Llama 3.1 8B Instruct quantised")
