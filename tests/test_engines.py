"""Engine profiles: each engine's rule for the share of memory its KV pool comes from, worked by
hand from the engines' own formulas (their sources are in planner/catalog/engines.yaml)."""

from __future__ import annotations

import shutil

import pytest
import yaml

from planner.catalog import load_catalog
from planner.catalog.engines import constants_for, nearest_series
from planner.catalog.records import Engine
from planner.model.engine import (
    engine_memory_bytes,
    engine_memory_fraction,
    kv_pool_bytes,
    sglang_graph_batch,
    sglang_reserved_mib,
)
from planner.model.units import GIB, MIB
from planner.plan.sweep import evaluate
from planner.resources import shipped_catalogs

VLLM, SGLANG, TRTLLM = 1, 2, 3  # the budget rules' numbers
SEED = shipped_catalogs() / "examples" / "seed"


@pytest.mark.parametrize(
    ("setting", "rule", "memory_mib", "tp", "chunk", "fraction"),
    [
        (0.93, 2, 81920, 4, 8192, 0.93),  # the profile's own
        (0.0, 1, 81920, 1, 8192, 0.88),  # SGLang 0.4, by tensor-parallel size
        (0.0, 1, 81920, 2, 8192, 0.87),
        (0.0, 1, 81920, 4, 8192, 0.85),
        (0.0, 1, 81920, 8, 8192, 0.81),
        (0.0, 1, 81920, 16, 8192, 0.79),
        # SGLang 0.5: 80 GiB, TP 1: 512 + 1.5 × 8,192 + 1/8 × 1,024 + 2 × 256 = 13,440 MiB
        (0.0, 2, 81920, 1, 8192, (81920 - 13440) / 81920),
        # 141 GiB at TP 8: 512 + 12,288 + 1,024 + 2 × 512 = 14,848 MiB
        (0.0, 2, 144384, 8, 8192, (144384 - 14848) / 144384),
        # 24 GiB, TP 1, 2,048-token chunks: 512 + 3,072 + 128 + 2 × 48 = 3,808 MiB
        (0.0, 2, 24576, 1, 2048, (24576 - 3808) / 24576),
        # 64 GiB, TP 1: 512 + 3,072 + 128 + 2 × 256 = 4,224 MiB, raised to the 10 GiB floor
        (0.0, 2, 65536, 1, 2048, (65536 - 10240) / 65536),
    ],
)
def test_the_share_of_memory(setting, rule, memory_mib, tp, chunk, fraction) -> None:
    graphs = sglang_graph_batch(memory_mib * MIB, tp)
    reserved = sglang_reserved_mib(memory_mib * MIB, tp, chunk, graphs)
    got = engine_memory_fraction(setting, rule, memory_mib * MIB, tp, reserved)
    assert got == pytest.approx(fraction, rel=1e-12)


def _pool(rule: int, fraction: float, graphs_in_budget: int = 0) -> float:
    """An 80 GiB device, 15 GiB of weights, a 1 GiB activation peak, 0.5 GiB outside PyTorch
    and 0.5 GiB of CUDA graphs."""
    parts = dict(
        weight_bytes_per_device=15 * GIB,
        activation_peak_bytes=1 * GIB,
        non_torch_bytes=0.5 * GIB,
        cuda_graph_bytes=0.5 * GIB,
    )
    share = engine_memory_bytes(80 * GIB, fraction, rule, **parts)
    return kv_pool_bytes(share, rule, cuda_graphs_in_budget=graphs_in_budget, **parts) / GIB


@pytest.mark.parametrize(
    ("rule", "fraction", "graphs", "pool_gib"),
    [
        (VLLM, 0.9, 0, 0.9 * 80 - 15 - 1 - 0.5),  # 55.5: graphs captured after the pool
        (VLLM, 0.92, 1, 0.92 * 80 - 15 - 1 - 0.5 - 0.5),  # 0.21 on: graphs in the budget
        (SGLANG, 0.836, 0, 0.836 * (80 - 0.5) - 15),  # 51.462: free before weights, less them
        (TRTLLM, 0.9, 0, 0.9 * (80 - 15 - 1 - 0.5 - 0.5)),  # 56.7: free after profiling
    ],
)
def test_each_engine_s_pool(rule: int, fraction: float, graphs: int, pool_gib: float) -> None:
    assert _pool(rule, fraction, graphs) == pytest.approx(pool_gib, rel=1e-12)


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory):
    """Llama 3.1 8B in BF16 on one H100 SXM (81,559 MiB as the driver reports it), planned
    with each engine's profile and its defaults."""
    rows = {}
    for engine in ("sglang 0.5.2", "tensorrt-llm 1.0.0", "vllm 0.11.0", "vllm 0.21.0"):
        name, version = engine.split()
        folder = tmp_path_factory.mktemp(name) / "catalogs"
        shutil.copytree(shipped_catalogs(), folder)
        path = folder / "assumptions.yaml"
        doc = yaml.safe_load(path.read_text())
        doc["assumptions"]["engine"] = {"name": name, "version": version}
        doc["assumptions"]["tensor_parallel_sizes"] = [1]
        path.write_text(yaml.safe_dump(doc))
        table = evaluate(load_catalog(folder)).table
        chosen = (
            (table["hardware"] == "h100-sxm-80gb")
            & (table["model"] == "llama-3.1-8b")
            & (table["precision"] == "bf16")
        )
        rows[engine] = table[chosen].iloc[0]
    return rows


#: Llama 3.1 8B's weights in BF16 (8,030,261,248 parameters × 2 B) and the H100's memory.
WEIGHTS = 8_030_261_248 * 2
H100 = 81559 * MIB


def test_sglang_plans_by_its_own_rule(planned) -> None:
    """SGLang 0.5 with its default share: 512 + 1.5 × 8,192 + 128 + 2 × 256 = 13,440 MiB
    reserved of 81,559: 0.835211; times the 81,559 MiB less its 0.8 GiB outside PyTorch, less
    the weights: 50.90 GiB of KV cache."""
    row = planned["sglang 0.5.2"]
    fraction = (81559 - 13440) / 81559
    assert row["engine_memory_fraction"] == pytest.approx(fraction, rel=1e-12)
    pool = fraction * (H100 - 0.8 * GIB) - WEIGHTS
    assert row["kv_pool_bytes"] == pytest.approx(pool, rel=1e-12)
    assert pool / GIB == pytest.approx(50.90, abs=0.01)


def test_tensorrt_llm_plans_by_its_own_rule(planned) -> None:
    """TensorRT-LLM: 0.9 × what its profiling pass leaves: 81,559 MiB less the weights, the
    activation peak of 8,192 tokens (8,192 × (3 × 14,336 + 4 × 4,096) × 2 B = 0.906 GiB),
    0.5 GiB outside PyTorch and 0.5 GiB of graphs."""
    row = planned["tensorrt-llm 1.0.0"]
    activation = 8192 * (3 * 14336 + 4 * 4096) * 2
    assert row["activation_peak_bytes"] == pytest.approx(activation, rel=1e-12)
    pool = 0.9 * (H100 - WEIGHTS - activation - 0.5 * GIB - 0.5 * GIB)
    assert row["kv_pool_bytes"] == pytest.approx(pool, rel=1e-12)


def test_vllm_counts_cuda_graphs_in_its_budget_from_0_21(planned) -> None:
    """vLLM 0.11: 0.9 × the device less weights and the larger of the forward pass (0.906 GiB)
    and the dummy sampler (256 sequences × 128,256 logits × 38 B = 1.16 GiB); 0.21 takes 0.92
    and subtracts its 0.5 GiB of graphs too."""
    sampler = 256 * 128_256 * 38
    old, new = planned["vllm 0.11.0"], planned["vllm 0.21.0"]
    assert old["activation_peak_bytes"] == pytest.approx(sampler, rel=1e-12)
    assert old["kv_pool_bytes"] == pytest.approx(0.9 * H100 - WEIGHTS - sampler, rel=1e-12)
    expected = 0.92 * H100 - WEIGHTS - sampler - 0.5 * GIB
    assert new["kv_pool_bytes"] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("name", "version", "series"),
    [
        ("vllm", "0.11.2", "0.11"),
        ("vllm", "0.17.1", "0.16"),  # between 0.16 and 0.19, two apart each: the older
        ("vllm", "0.20.0", "0.19"),
        ("vllm", "0.27.0", "0.31"),
        ("vllm", "1.2", "0.31"),
        ("sglang", "0.4.6", "0.4"),
        ("tensorrt-llm", "0.21.0", "0.20"),
    ],
)
def test_the_nearest_series(name: str, version: str, series: str) -> None:
    assert nearest_series(name, version) == series
    assert constants_for(Engine(name=name, version=version)) is not None


def test_a_profile_gives_only_its_engine_s_memory_argument() -> None:
    assert Engine(name="sglang", version="0.5", mem_fraction_static=0.8).memory_fraction == 0.8
    assert Engine(name="vllm", version="0.11").memory_fraction is None
    with pytest.raises(ValueError, match="free_gpu_memory_fraction is tensorrt-llm's argument"):
        Engine(name="vllm", version="0.11", free_gpu_memory_fraction=0.9)


def test_a_release_without_constants_is_said_in_the_report_and_the_workbook(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """vLLM 0.40 on the seed catalog: the run's notes (the workbook's Notes sheet, the
    terminal) and the report's risks say which series it was planned with."""
    from planner.outputs.report import render_html

    folder = tmp_path_factory.mktemp("v040") / "catalogs"
    shutil.copytree(SEED, folder)
    path = folder / "assumptions.yaml"
    path.write_text(path.read_text() + "  engine: {name: vllm, version: '0.40.1'}\n")
    catalog = load_catalog(folder)
    results = evaluate(catalog)
    said = "vllm 0.40.1 has no memory constants of its own: planned with those of vllm 0.31"
    assert any(said in note for note in results.notes)
    html = render_html(catalog, results)
    risks = html[html.index('id="risks"') :]
    assert said in risks[: risks.index("<h3>")]
