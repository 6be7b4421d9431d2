"""Real models end to end: tensor parallelism in the sweep, MoE/MLA/window rows, import-hf."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from planner.catalog import CatalogError, load_catalog
from planner.cli import main
from planner.plan.sweep import evaluate

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "hf"


@pytest.fixture(scope="module")
def shipped():
    return evaluate(load_catalog(REPO / "catalogs")).table


def row(table, **keys):
    mask = True
    for key, value in keys.items():
        mask = mask & (table[key] == value)
    found = table[mask]
    assert len(found) == 1, (keys, len(found))
    return found.iloc[0]


def test_70b_in_bf16_needs_tensor_parallel_on_h100(shipped):
    tp = shipped[
        (shipped.model == "llama-3.1-70b")
        & (shipped.hardware == "h100-sxm-80gb")
        & (shipped.precision == "bf16")
        & (shipped.workload == "chat")
    ].set_index("tensor_parallel")
    # TP 1: 141,107,412,992 B of weights exceed the 81,559 MiB usable
    assert tp.loc[1, "fit_reason"] == "weights exceed device memory"
    assert tp.loc[1, "max_sequences"] == 0
    # TP 2: half the weights per device, 4 of 8 KV heads per device
    assert tp.loc[2, "weight_bytes_per_device"] == 141_107_412_992 / 2
    assert tp.loc[2, "kv_heads_per_device"] == 4
    # 85,520,809,984 (81,559 MiB) − 70,553,706,496 − 7,516,192,768 (7 GiB) = 7,450,910,720 B;
    # a sequence reserves 4,096 + 1,024 tokens (5,120, whole 16-token blocks) × 2 × 80 × 4 × 128
    # × 2 B = 838,860,800 B. The chat's 500-token system prompt is cached in 31 whole blocks,
    # 496 tokens × 163,840 B = 81,264,640 B, held once by the replica and by no sequence:
    # ⌊(7,450,910,720 − 81,264,640) ÷ (838,860,800 − 81,264,640)⌋ = ⌊9.73⌋ = 9
    assert tp.loc[2, "kv_budget_bytes"] == 7_450_910_720
    assert tp.loc[2, "kv_bytes_per_sequence"] == 838_860_800
    assert tp.loc[2, "shared_prefix_kv_bytes"] == 81_264_640
    assert tp.loc[2, "max_sequences"] == 9
    # closed loop of 2,048 users at up to 9 per replica: ⌈227.6⌉ = 228 replicas of 2 devices
    assert tp.loc[2, "replicas_needed"] == 228
    assert tp.loc[2, "devices_needed"] == 456


def test_tp_beyond_the_first_that_serves_is_not_listed(shipped):
    small = shipped[(shipped.model == "llama-3.1-8b") & (shipped.hardware == "h200-sxm-141gb")]
    assert set(small.tensor_parallel) == {1}  # TP 1 meets every target already


def test_devices_without_interconnect_only_run_tp1(shipped):
    assert set(shipped[shipped.hardware == "l40s-48gb"].tensor_parallel) == {1}


def test_fp8_falls_back_to_bf16_compute_on_a100(shipped):
    r = row(
        shipped,
        model="llama-3.1-8b",
        hardware="a100-sxm-80gb",
        precision="fp8",
        workload="chat",
        tensor_parallel=1,
    )
    assert r["compute_format"] == "fp8"
    assert r["compute_flops_per_s"] == 312e12  # the BF16 rate: A100 has no FP8 tensor cores
    assert r["weight_bytes_per_param"] == 1.0


def test_mla_and_moe_rows(shipped):
    ds = row(
        shipped,
        model="deepseek-v2-lite",
        hardware="h100-sxm-80gb",
        precision="bf16",
        workload="chat",
        tensor_parallel=1,
    )
    # 27 layers × (512 + 64) values × 2 B = 31,104 B per token, no KV-head factor
    assert ds["kv_bytes_per_token"] == 31_104
    assert ds["experts"] == 64 and ds["experts_per_token"] == 6
    assert ds["active_parameters"] < ds["parameters"]
    # the decode step reads only the experts a batch touches
    assert ds["decode_weight_bytes_per_step"] < ds["weight_bytes_per_device"]


def test_sliding_window_rows(shipped):
    g = row(
        shipped,
        model="gemma-2-9b",
        hardware="h100-sxm-80gb",
        precision="bf16",
        workload="document-analysis",
        tensor_parallel=1,
    )
    # 21 full layers × 2 × 8 × 256 × 2 B and 21 windowed layers capped at 4,096 tokens
    assert g["kv_bytes_per_token"] == 172_032
    assert g["kv_bytes_per_token_windowed"] == 172_032
    assert g["windowed_tokens_per_sequence"] == 4096
    # (32,768 + 1,024) tokens × 172,032 + 4,096 × 172,032
    assert g["kv_bytes_per_sequence"] == (33_792 + 4_096) * 172_032


def test_published_parameters_far_from_the_architecture_warn(tmp_path: Path):
    folder = tmp_path / "c"
    shutil.copytree(REPO / "catalogs", folder)
    text = (folder / "models.yaml").read_text()
    text = text.replace(
        "  - id: llama-3.1-8b\n", "  - id: llama-3.1-8b\n    parameters: 9000000000\n", 1
    )
    (folder / "models.yaml").write_text(text)
    catalog = load_catalog(folder)
    assert len(catalog.warnings) == 1
    message = str(catalog.warnings[0])
    assert "models 'llama-3.1-8b' field 'parameters'" in message
    assert "8,030,261,248" in message and "-10.8%" in message
    assert catalog.get("models", "llama-3.1-8b").parameter_count == 9_000_000_000


def test_import_hf_prints_an_entry_that_loads(tmp_path: Path):
    result = CliRunner().invoke(
        main,
        [
            "import-hf",
            str(FIXTURES / "mixtral-8x7b-v0.1.json"),
            "--id",
            "mixtral",
            "--revision",
            "v0.1",
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith("- id: mixtral\n")
    assert "  moe:\n    experts: 8\n    experts_per_token: 2\n" in result.output
    folder = tmp_path / "c"
    shutil.copytree(REPO / "catalogs" / "examples" / "seed", folder)
    (folder / "models.yaml").write_text(
        "models:\n" + "".join(f"  {line}" for line in result.output.splitlines(True))
    )
    model = load_catalog(folder).get("models", "mixtral")
    assert model.parameter_count == 46_702_792_704  # published total (model card)


def test_import_hf_appends_and_refuses_duplicates(tmp_path: Path):
    models = tmp_path / "models.yaml"
    shutil.copy(REPO / "catalogs" / "examples" / "seed" / "models.yaml", models)
    runner = CliRunner()
    first = runner.invoke(
        main, ["import-hf", str(FIXTURES / "qwen3-8b.json"), "--append", str(models)]
    )
    assert first.exit_code == 0, first.output
    assert "appended 'qwen3-8b'" in first.output
    before = models.read_text()
    again = runner.invoke(
        main, ["import-hf", str(FIXTURES / "qwen3-8b.json"), "--append", str(models)]
    )
    assert again.exit_code == 1
    assert "already has a model with that id" in again.output
    assert models.read_text() == before


def test_import_hf_unknown_architecture(tmp_path: Path):
    config = tmp_path / "config.json"
    config.write_text('{"model_type": "rwkv", "num_hidden_layers": 24}')
    result = CliRunner().invoke(main, ["import-hf", str(config)])
    assert result.exit_code == 1
    assert "model_type 'rwkv' is not supported" in result.output


def test_moe_block_needs_the_architecture(tmp_path: Path):
    folder = tmp_path / "c"
    shutil.copytree(REPO / "catalogs" / "examples" / "seed", folder)
    (folder / "models.yaml").write_text(
        "models:\n  - id: m\n    parameters: 1000\n    layers: 2\n    kv_heads: 1\n"
        "    head_dim: 8\n"
        "    moe: {experts: 8, experts_per_token: 2, expert_intermediate_size: 16}\n"
    )
    with pytest.raises(CatalogError, match="a moe or mla block needs the full architecture"):
        load_catalog(folder)
