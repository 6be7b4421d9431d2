from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.outputs import runs
from planner.outputs.runs import default_run_dir, slug

RUN_FILES = {
    "results.csv",
    "results.json",
    "fleet.json",
    "plan.xlsx",
    "report.pdf",
    "manifest.json",
    "catalogs",
    "deploy",
}


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def test_run_writes_the_run_folder(seed_dir: Path, tmp_path: Path):
    out = tmp_path / "seed-run"
    result = invoke("run", "--catalogs", str(seed_dir), "--out", str(out), "--name", "seed")
    assert result.exit_code == 0, result.output
    # the seed has no prices: no option is eligible in any of its 2 workloads × 2 models
    closing = "4 candidates evaluated; 0 eligible; 0 recommendations (workload × model), "
    assert closing + "4 with no eligible option." in result.output
    assert {p.name for p in out.iterdir()} == RUN_FILES
    table = pd.read_csv(out / "results.csv")
    assert list(table.columns[:4]) == ["hardware", "model", "precision", "workload"]
    assert len(table) == 4  # 1 hardware × 2 models × 1 precision × 2 workloads
    row = table[(table.model == "invented-4gib") & (table.workload == "seed-4k")].iloc[0]
    assert row.kv_bytes_per_token == 131072
    assert row.max_sequences == 16
    assert bool(row.fits) is True
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["candidates"] == 4
    assert manifest["counts"]["fitting"] == 1
    assert set(manifest["catalog_files"]) == {
        "hardware.yaml",
        "models.yaml",
        "precisions.yaml",
        "workloads.yaml",
        "assumptions.yaml",
    }
    assert all(len(h) == 64 for h in manifest["catalog_files"].values())
    data = json.loads((out / "results.json").read_text())
    assert [c["name"] for c in data["columns"]] == list(table.columns)
    kv = next(c for c in data["columns"] if c["name"] == "kv_bytes_per_token")
    assert kv["unit"] == "B"
    assert kv["formula"] == (
        "full_attention_layers_per_device*kv_values_per_token_per_layer*kv_bytes_per_value"
    )
    assert (out / "report.pdf").read_bytes().startswith(b"%PDF")
    # the catalogs are copied verbatim, so the run can be diffed and audited later
    for name in manifest["catalog_files"]:
        assert (out / "catalogs" / name).read_bytes() == (seed_dir / name).read_bytes()


def test_run_refuses_to_overwrite_and_force_replaces(seed_dir: Path, tmp_path: Path):
    out = tmp_path / "run"
    assert invoke("run", "--catalogs", str(seed_dir), "--out", str(out)).exit_code == 0
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps({**manifest, "name": "earlier run"}))
    again = invoke("run", "--catalogs", str(seed_dir), "--out", str(out))
    assert again.exit_code == 1
    assert "already exists" in again.output
    assert "earlier run" in (out / "manifest.json").read_text()
    forced = invoke("run", "--catalogs", str(seed_dir), "--out", str(out), "--force")
    assert forced.exit_code == 0
    assert "earlier run" not in (out / "manifest.json").read_text()
    assert {p.name for p in out.iterdir()} == RUN_FILES
    assert [p.name for p in tmp_path.iterdir()] == ["run"]


def test_default_run_folder_is_dated_and_never_reused(tmp_path: Path):
    import datetime as dt

    day = dt.date(2026, 12, 2)
    first = default_run_dir(tmp_path, "H200 refresh!", day)
    assert first.name == "2026-12-02-h200-refresh"
    first.mkdir()
    assert default_run_dir(tmp_path, "H200 refresh!", day).name == "2026-12-02-h200-refresh-2"
    assert slug("../../etc") == "etc"


def test_failed_run_leaves_nothing(seed_dir: Path, tmp_path: Path, monkeypatch):
    from planner.catalog import load_catalog
    from planner.plan.sweep import evaluate

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr("planner.outputs.report.write_report", broken)
    catalog = load_catalog(seed_dir)
    with pytest.raises(RuntimeError):
        runs.write_run(catalog, evaluate(catalog), tmp_path / "run")
    assert list(tmp_path.iterdir()) == []


def test_check_ok(seed_dir: Path):
    result = invoke("check", "--catalogs", str(seed_dir))
    assert result.exit_code == 0
    assert "1 hardware, 2 models, 1 precisions, 2 workloads" in result.output


def test_check_shipped_catalogs():
    result = invoke("check")
    assert result.exit_code == 0, result.output


def test_explain_shows_the_seed_arithmetic(seed_dir: Path):
    result = invoke(
        "explain",
        "--catalogs",
        str(seed_dir),
        "--hardware",
        "seed-16gib",
        "--model",
        "invented-4gib",
        "--precision",
        "bf16",
        "--workload",
        "seed-4k-prompt-1k-out",
    )
    assert result.exit_code == 0, result.output
    text = result.output.replace("\u2009", " ")  # thin spaces separate thousands
    assert "IF(mla_kv_dim > 0, mla_kv_dim, 2 × kv_heads_per_device × head_dim)" in text
    assert "= IF(0 > 0, 0, 2 × 8 × 128)\n  = 2 048 values" in text
    assert "= 32 × 2 048 × 2\n  = 131 072 B = 128.00 KiB (131.07 kB) = 128 KiB" in text
    assert "= 4 096 + 1 024" in text
    assert "671 088 640 B = 640.00 MiB (671.09 MB) = 640 MiB" in text
    assert "8 589 934 592 B = 8.00 GiB (8.59 GB)" in text
    assert "= 12 sequences" in text
    assert "= AND(True, IF(16 > 0, 16 ≤ 12, TRUE()))\n  = False" in text
    # the latency arithmetic follows: 4 GiB read at 700 GB/s
    assert "= 4 294 967 296 ÷ (700 000 000 000 × 1)" in text
    assert "not measured latency" in text


def test_explain_unknown_id(seed_dir: Path):
    result = invoke(
        "explain",
        "--catalogs",
        str(seed_dir),
        "--hardware",
        "seed-16gib",
        "--model",
        "nope",
        "--precision",
        "bf16",
        "--workload",
        "seed-4k",
    )
    assert result.exit_code == 1
    assert "no models entry 'nope'; valid: invented-7b, invented-4gib" in result.output


def test_usage_error_exits_2():
    assert invoke("explain", "--model", "x").exit_code == 2
    assert invoke("no-such-command").exit_code == 2


@pytest.mark.parametrize("command", sorted(main.commands))
def test_every_command_has_help_and_is_in_the_readme(command):
    result = invoke(command, "--help")
    assert result.exit_code == 0
    assert main.commands[command].help
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    assert f"planner {command}" in readme


def test_diff_and_baseline(tmp_path: Path):
    """Two runs of the seed catalog, the second with a faster device: diff and --baseline."""
    import shutil

    seed = Path(__file__).resolve().parent.parent / "catalogs" / "examples" / "seed"
    changed = tmp_path / "changed"
    shutil.copytree(seed, changed)
    text = (changed / "hardware.yaml").read_text().replace("700 GB/s", "1400 GB/s")
    (changed / "hardware.yaml").write_text(text)
    old, new = tmp_path / "old", tmp_path / "new"
    assert invoke("run", "--catalogs", str(seed), "--out", str(old)).exit_code == 0
    result = invoke("run", "--catalogs", str(changed), "--out", str(new), "--baseline", str(old))
    assert result.exit_code == 0, result.output
    assert (new / "diff.csv").exists()
    shown = invoke("diff", str(old), str(new), "--csv", str(tmp_path / "d.csv"))
    assert shown.exit_code == 0, shown.output
    assert "hardware seed-16gib" in shown.output
    assert "memory_bandwidth: 700 GB/s → 1.4 TB/s" in shown.output
    assert (tmp_path / "d.csv").exists()
    missing = invoke("diff", str(old), str(tmp_path / "nothing"))
    assert missing.exit_code == 1
    assert "nothing does not exist; a run folder holds results.csv" in missing.output
    bad = invoke(
        "run",
        "--catalogs",
        str(seed),
        "--out",
        str(tmp_path / "x"),
        "--baseline",
        str(tmp_path / "nothing"),
    )
    assert bad.exit_code == 1
    assert not (tmp_path / "x").exists()


def test_explain_says_why_a_target_is_missed(seed_copy: Path):
    # 4 GiB of weights at 700 GB/s take 6.1 ms per decode step: a 5 ms ITL target cannot be met
    text = (seed_copy / "workloads.yaml").read_text()
    text = text.replace(
        "    concurrency: 16\n", "    concurrency: 16\n    targets: {itl_p95: 5 ms}\n", 1
    )
    (seed_copy / "workloads.yaml").write_text(text)
    result = invoke(
        "explain",
        "--catalogs",
        str(seed_copy),
        "--hardware",
        "seed-16gib",
        "--model",
        "invented-4gib",
        "--precision",
        "bf16",
        "--workload",
        "seed-4k",
    )
    assert result.exit_code == 0, result.output
    assert "target_miss_reason: " in result.output
    assert "= latency: inter-token p95 target" in result.output
    assert "Simulation (discrete-event" in result.output
    assert "target at any replica count: bandwidth" in result.output


def test_the_cli_catches_only_the_librarys_own_exceptions():
    """A bare KeyError or ValueError caught in the CLI would hide a bug as a user error."""
    import ast
    import builtins

    import planner.cli

    tree = ast.parse(Path(planner.cli.__file__).read_text())
    caught = []
    for handler in (n for n in ast.walk(tree) if isinstance(n, ast.ExceptHandler)):
        types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        caught += [t.id for t in types if isinstance(t, ast.Name)]
    assert caught and not [name for name in caught if hasattr(builtins, name)], caught


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"{not json", "cannot read it"),
        (b"\xff\xfe\x00", "cannot read it"),
        (b"[1, 2]", "config must be a JSON object"),
    ],
)
def test_import_hf_refuses_an_unreadable_config(tmp_path: Path, content: bytes, words: str):
    config = tmp_path / "config.json"
    config.write_bytes(content)
    result = invoke("import-hf", str(config))
    assert result.exit_code == 1
    assert f"error: {config}: unsupported Hugging Face config:" in result.output
    assert words in result.output and "Traceback" not in result.output
