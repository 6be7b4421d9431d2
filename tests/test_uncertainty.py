"""Uncertain inputs: distributions in the catalogs, the plan over draws of them, and the bands
a run reports, checked against values worked out by hand."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from openpyxl import load_workbook
from pypdf import PdfReader

from planner.catalog import load_catalog
from planner.catalog.distributions import triangular_quantile
from planner.catalog.records import Assumptions
from planner.cli import main
from planner.executor import Dask, InProcess, ProcessPool
from planner.plan.sweep import evaluate
from planner.plan.uncertainty import monte_carlo, uncertain_inputs, with_values

SEED = Path(__file__).resolve().parent.parent / "catalogs" / "examples" / "seed"

#: One open-loop stream on the seed's 16 GiB device (700 GB/s, 100 TFLOP/s) serving its 4 GiB
#: model: 3,072-token prompts, 1,024-token answers, 1.8 requests a second; a price, so an
#: option can win; the bandwidth efficiency triangular between 0.5 and 1, most likely 0.8.
STREAM = """\
workloads:
  - id: stream
    prompt_tokens: 3072
    output_tokens: 1024
    max_output_tokens: 1024
    arrival: {pattern: poisson, rate: 1.8 /s}
"""


@pytest.fixture(scope="module")
def stream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("stream")
    shutil.copytree(SEED, folder, dirs_exist_ok=True)
    (folder / "workloads.yaml").write_text(STREAM)
    assumptions = (folder / "assumptions.yaml").read_text()
    assumptions = assumptions.replace(
        "bandwidth_efficiency: 1.0", "bandwidth_efficiency: {low: 0.5, mode: 0.8, high: 1.0}"
    )
    (folder / "assumptions.yaml").write_text(assumptions)
    hardware = (folder / "hardware.yaml").read_text()
    (folder / "hardware.yaml").write_text(
        hardware.replace("    source:", "    price: {cloud_usd_per_hour: 1.00}\n    source:", 1)
    )
    return folder


@pytest.mark.parametrize(
    ("low", "mode", "high", "p", "expected"),
    [
        (0.5, 0.8, 1.0, 0.1, 0.5 + math.sqrt(0.1 * 0.5 * 0.3)),  # below the mode: 0.6225
        (0.5, 0.8, 1.0, 0.5, 0.5 + math.sqrt(0.5 * 0.5 * 0.3)),  # the mode's share is 0.6
        (0.5, 0.8, 1.0, 0.9, 1.0 - math.sqrt(0.1 * 0.5 * 0.2)),  # above it: 0.9
        (16, 32, 96, 0.9, 96 - math.sqrt(0.1 * 80 * 64)),  # 73.4
        (2.0, 2.0, 2.0, 0.3, 2.0),  # no spread
    ],
)
def test_triangular_quantiles_by_hand(low, mode, high, p, expected) -> None:
    assert triangular_quantile(low, mode, high, p) == pytest.approx(expected, rel=1e-12)


BASE = {"runtime_overhead": "3 GiB", "reserve": "4 GiB"}


@pytest.mark.parametrize(
    ("field", "written", "central"),
    [
        ("bandwidth_efficiency", {"low": 0.6, "mode": 0.8, "high": 0.9}, 0.8),
        ("step_overhead", {"mean": "2 ms", "sd": "0.5 ms"}, 0.002),
        ("step_overhead", {"low": "1 ms", "mode": "2 ms", "high": "5 ms"}, 0.002),
        ("step_overhead_per_sequence", {"low": "10 us", "mode": "30 us", "high": "60 us"}, 3e-5),
        ("compute_efficiency", {"samples": [0.4, 0.55, 0.5, 0.45, 0.6]}, 0.5),
    ],
)
def test_a_distribution_plans_at_its_central_value(field, written, central) -> None:
    assumptions = Assumptions.model_validate(BASE | {field: written})
    assert getattr(assumptions, field) == pytest.approx(central)
    assert field in assumptions.uncertain
    assert "uncertain" not in assumptions.model_dump()


@pytest.mark.parametrize(
    ("written", "message"),
    [
        ({"low": 0.6, "mode": 0.8, "high": 1.2}, "less than or equal to 1"),
        ({"low": 0.9, "mode": 0.8, "high": 1.0}, "low ≤ mode ≤ high, got 0.9, 0.8, 1"),
        ({"mean": 0.9, "sd": 0.1}, "mean ± 3 sd = 0.6 … 1.2, which must be between 0 and 1"),
        ({"lo": 0.5}, "{low, mode, high}, {mean, sd} or {samples: [...]}"),
        ({"samples": []}, "non-empty list"),
    ],
)
def test_a_bad_distribution_says_what_is_expected(written, message) -> None:
    with pytest.raises(ValueError, match="bandwidth_efficiency") as error:
        Assumptions.model_validate(BASE | {"bandwidth_efficiency": written})
    assert message in str(error.value)


def test_a_time_keeps_its_unit_in_a_distribution() -> None:
    with pytest.raises(ValueError, match="has no unit"):
        Assumptions.model_validate(
            BASE | {"step_overhead": {"low": 1, "mode": "2 ms", "high": "3 ms"}}
        )


def test_uncertain_cannot_be_written_by_a_catalog() -> None:
    with pytest.raises(ValueError, match="'uncertain' is not a catalog field"):
        Assumptions.model_validate(BASE | {"uncertain": {}})


def test_the_plan_uses_the_central_value(stream: Path) -> None:
    catalog = load_catalog(stream)
    (found,) = uncertain_inputs(catalog)
    assert found.label == "assumptions: bandwidth_efficiency"
    central = evaluate(catalog).table
    written = evaluate(with_values(catalog, [found], [0.8])).table
    pd.testing.assert_series_equal(central["itl_s"], written["itl_s"])
    assert catalog.assumptions.bandwidth_efficiency == 0.8


def test_the_p90_purchase_is_the_devices_at_the_tenth_percentile_of_efficiency(
    stream: Path,
) -> None:
    """By hand: a decode step reads the 4 GiB of weights and 16 caches of 3,584 tokens × 128 KiB
    (11.81 GB) at 700 GB/s × e: 16.87 ms ÷ e; a 3,072-token prefill is 15.67 TFLOP at
    100 TFLOP/s, 0.1567 s. A replica of 16 sequences completes 16 ÷ (16 × 0.1567 + 1,023 ×
    0.01687 ÷ e) requests a second, and 1.8 a second need ⌈1.8 ÷ that⌉ replicas: 4 below
    e = 17.261 ÷ 24.160 = 0.7145, else 3. Triangular(0.5, 0.8, 1) puts (0.2145)² ÷ (0.5 × 0.3)
    = 30.7 % of draws below it: P10 and P50 need 3 devices, P90 needs 4 (the devices at the
    efficiency's 10th percentile, 0.6225)."""
    bands = monte_carlo(load_catalog(stream), 300)
    (option,) = bands.options[bands.options["model"] == "invented-4gib"].itertuples()
    assert (option.devices_needed_p10, option.devices_needed_p50) == (3, 3)
    assert option.devices_needed_p90 == 4
    purchase = bands.purchases.set_index("model").loc["invented-4gib"]
    assert purchase["devices_needed_p90"] == 4 and purchase["served_share"] == 1.0
    assert purchase["cost_usd_p90"] == pytest.approx(4 / 3 * purchase["cost_usd_p50"])
    assert _share_needing(stream, 4, 300) == pytest.approx(0.2145**2 / 0.15, abs=0.08)


def _share_needing(folder: Path, devices: int, draws: int) -> float:
    """The share of ``draws`` draws in which the seed's 4 GiB model needs ``devices``."""
    from planner.plan.uncertainty import _evaluate_draws

    catalog = load_catalog(folder)
    frame = _evaluate_draws((catalog, uncertain_inputs(catalog), 0), (0, draws))
    rows = frame[frame["model"] == "invented-4gib"]
    return float((rows["devices_needed"] == devices).mean())


def test_the_draws_are_the_same_on_every_executor(stream: Path) -> None:
    pytest.importorskip("dask.distributed")
    catalog = load_catalog(stream)
    alone = monte_carlo(catalog, 60, InProcess())
    pooled = monte_carlo(catalog, 60, ProcessPool(2))
    dask = monte_carlo(catalog, 60, Dask(workers=2))
    pd.testing.assert_frame_equal(alone.options, pooled.options)
    pd.testing.assert_frame_equal(alone.options, dask.options)
    pd.testing.assert_frame_equal(alone.purchases, dask.purchases)


def test_a_run_with_draws_writes_the_bands(stream: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["run", "--catalogs", str(stream), "--out", str(out), "--draws", "40", "--workers", "1"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    bands = pd.read_csv(out / "uncertainty.csv")
    assert {"devices_needed_p90", "cheapest_share", "meets_share"} <= set(bands.columns)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["draws"] == 40 and "uncertainty.csv" in manifest["files"]
    sheet = load_workbook(out / "plan.xlsx", read_only=True)["Uncertainty"]
    cells = [c for row in sheet.iter_rows(values_only=True) for c in row if c is not None]
    assert "assumptions: bandwidth_efficiency" in cells
    assert "triangular 0.5 / 0.8 / 1" in cells
    report = " ".join(page.extract_text() for page in PdfReader(out / "report.pdf").pages)
    report = " ".join(report.split())
    assert "Uncertainty of the ask" in report
    assert "At the draw of its P90 cost" in report and "4 devices in closed form" in report


def test_draws_without_a_distribution_is_a_clear_error(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(
        main, ["run", "--catalogs", str(SEED), "--out", str(out), "--draws", "10"]
    )
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert "--draws needs an uncertain input" in result.output
    assert not out.exists()


def test_a_bad_distribution_in_a_catalog_names_file_entry_and_field(
    stream: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "bad"
    shutil.copytree(stream, folder)
    workloads = (folder / "workloads.yaml").read_text()
    bad = workloads.replace("rate: 1.8 /s", "rate: {low: 2 /s, mode: 1 /s, high: 3 /s}")
    (folder / "workloads.yaml").write_text(bad)
    result = CliRunner().invoke(main, ["check", "--catalogs", str(folder)])
    assert result.exit_code == 1, result.output
    assert "workloads.yaml" in result.output and "stream" in result.output
    assert "rate" in result.output and "low ≤ mode ≤ high" in result.output
    assert "Traceback" not in result.output


def test_a_changed_range_shows_in_the_diff_though_its_mode_stays(stream: Path, tmp_path) -> None:
    from planner.diff.inputs import catalog_changes

    folder = tmp_path / "wider"
    shutil.copytree(stream, folder)
    text = (folder / "assumptions.yaml").read_text().replace("high: 1.0}", "high: 0.95}")
    (folder / "assumptions.yaml").write_text(text)
    changes = catalog_changes(load_catalog(stream), load_catalog(folder))
    (change,) = [c for c in changes if c.key == "assumptions"]
    assert change.field == "bandwidth_efficiency_distribution"
    assert (change.old, change.new) == ("triangular 0.5 / 0.8 / 1", "triangular 0.5 / 0.8 / 0.95")


def test_the_p90_draw_is_the_ninth_cheapest_of_ten() -> None:
    from planner.plan.uncertainty import p90_draw

    winners = pd.DataFrame({"draw": range(10), "cost_usd": [5, 1, 9, 3, 7, 2, 8, 4, 10, 6]})
    assert p90_draw(winners)["cost_usd"] == 9 and p90_draw(winners)["draw"] == 2


def test_the_p90_purchase_is_simulated_under_its_draws_inputs(stream: Path) -> None:
    """The winner at the P90 cost's draw needs 4 devices in closed form, so its drawn bandwidth
    efficiency is below the 0.7145 worked out by hand above; the simulation sizes it again under
    that draw's inputs."""
    from planner.plan.uncertainty import draw_values, simulate_p90
    from planner.serving.sizing import simulate_rows

    catalog = load_catalog(stream)
    bands = monte_carlo(catalog, 100)
    found = simulate_p90(catalog, bands, [("stream", "invented-4gib")], simulate_rows)
    (row,) = found.itertuples()
    assert (row.model, row.devices_needed) == ("invented-4gib", 4)
    (efficiency,) = draw_values(bands.inputs, 0, row.draw)
    assert 0.5 <= efficiency < 0.7145
    assert row.sim_devices_needed >= 1 and isinstance(row.meets_targets_sim, bool | np.bool_)


def test_an_uncertain_prompt_length_moves_the_devices_as_worked_by_hand(tmp_path: Path) -> None:
    """16 users of the seed's 4 GiB model on its 16 GiB device: 8 GiB of cache at 128 KiB a
    token hold ⌊65,536 ÷ (prompt + 1,024)⌋ sequences, 16 while the prompt is at most 3,072
    tokens (1 device), 8 to 15 up to 7,168 (2 devices). A prompt triangular(2,048, 3,072,
    7,168) is at most 3,072 in (1,024)² ÷ (5,120 × 1,024) = 20 % of draws: P10 needs 1
    device, P50 and P90 need 2. A length's samples keep their meaning: a spread of requests."""
    shutil.copytree(SEED, tmp_path, dirs_exist_ok=True)
    (tmp_path / "workloads.yaml").write_text(
        "workloads:\n  - id: users\n    prompt_tokens: {low: 2048, mode: 3072, high: 7168}\n"
        "    max_output_tokens: 1024\n    concurrency: 16\n"
    )
    catalog = load_catalog(tmp_path)
    (found,) = uncertain_inputs(catalog)
    assert found.label == "workloads users: prompt_tokens" and found.whole
    bands = monte_carlo(catalog, 300)
    (option,) = bands.options[bands.options["model"] == "invented-4gib"].itertuples()
    assert (option.devices_needed_p10, option.devices_needed_p50) == (1, 2)
    assert option.devices_needed_p90 == 2
    frame_share = _share_needing(tmp_path, 1, 300)
    assert frame_share == pytest.approx(0.2, abs=0.08)


#: A prompt whose range runs to 10^8 tokens: a draw past 64,512 (the seed's 8 GiB KV budget of
#: 128 KiB a token holds 65,536 tokens, less the 1,024 answered) leaves no option, and the
#: triangle puts (10^8 − 64,512)² ÷ ((10^8 − 4,000)(10^8 − 4,096)) = 99.88 % of draws there, so
#: in 10 draws the ask's line (served at its mode of 4,096 tokens) almost surely never wins.
NEVER = """\
workloads:
  - id: stream
    prompt_tokens: {low: 4000, mode: 4096, high: 100000000}
    output_tokens: 1024
    max_output_tokens: 1024
    arrival: {pattern: poisson, rate: 0.5 /s}
"""


def test_a_line_that_wins_in_no_draw_reads_zero_percent(stream: Path, tmp_path: Path) -> None:
    cats = tmp_path / "cats"
    shutil.copytree(stream, cats)
    (cats / "workloads.yaml").write_text(NEVER)
    out = tmp_path / "run"
    args = ["run", "--catalogs", str(cats), "--out", str(out), "--draws", "10", "--workers", "1"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert pd.read_csv(out / "uncertainty.csv")["cheapest_share"].max() == 0
    report = " ".join(page.extract_text() for page in PdfReader(out / "report.pdf").pages)
    assert "stream invented-4gib 0% none none" in " ".join(report.split())


def test_the_draws_estimate_is_the_time_of_one_draw_over_the_busy_workers() -> None:
    from planner.plan.uncertainty import draws_seconds

    assert draws_seconds(0.5, 1000, 4) == pytest.approx(125.0)  # 1,000 × 0.5 s ÷ 4
    assert draws_seconds(0.5, 20, 4) == pytest.approx(10.0)  # one unit of 20: one worker busy
    assert draws_seconds(0.5, 40, 8) == pytest.approx(10.0)  # two units: two workers
