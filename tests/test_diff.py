"""Diffs between runs, checked against a two-device catalog whose costs are worked out by hand.

The catalog: one 7e9-parameter BF16 model (14e9 bytes of weights), one workload (one sequence at a
time, inter-token p95 target 10 ms), and two 40 GB devices at 500 W:

- ``alpha``: 2 TB/s, 20,000 USD. Reading the weights takes 14e9 / 2e12 = 7 ms a token: meets 10 ms.
- ``beta``: 1 TB/s, 30,000 USD. 14e9 / 1e12 = 14 ms a token: misses 10 ms, so not eligible.

Energy per device: 500 W × 730 h = 365 kWh a month × 0.10 USD = 36.50 USD; over 36 months
1,314 USD. TCO: alpha 20,000 + 1,314 = 21,314 USD; beta 30,000 + 1,314 = 31,314 USD. Renting
either at 2.00 USD a device-hour costs 2.00 × 730 × 36 = 52,560 USD, more than owning, so the cost
the ranking compares (``cost_usd``, the cheaper of the two) is the TCO and both are to buy.

The refresh raises beta to 2 TB/s (7 ms: now meets the target) and cuts its price to 15,000 USD:
TCO 16,314 USD, so beta replaces alpha, 5,000 USD cheaper (5,000 / 21,314 = 23.5%).
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pandas as pd
import pytest

from planner.catalog import load_catalog
from planner.diff import (
    KINDS,
    Change,
    NotARun,
    catalog_changes,
    compare,
    data_file_changes,
    diff_against,
    diff_runs,
    field_unit,
    format_change,
    format_value,
    load_run,
    snapshot,
)
from planner.model import units
from planner.outputs import report, workbook
from planner.outputs.runs import CATALOG_COPY, write_run
from planner.plan.sweep import evaluate

HARDWARE = """\
hardware:
  - id: alpha
    name: Alpha 40GB
    memory: 40 GB
    memory_bandwidth: 2 TB/s
    compute: {{bf16: 100 TFLOPS}}
    power: 500 W
    price: {{purchase_usd: 20000, cloud_usd_per_hour: 2.00}}
  - id: beta
    name: Beta 40GB
    memory: 40 GB
    memory_bandwidth: {beta_bandwidth}
    compute: {{bf16: 100 TFLOPS}}
    power: 500 W
    price: {{purchase_usd: {beta_price}, cloud_usd_per_hour: 2.00}}
{extra}"""

GAMMA = """\
  - id: gamma
    name: Gamma 80GB
    memory: 80 GB
    memory_bandwidth: 3 TB/s
    compute: {bf16: 100 TFLOPS}
    power: 500 W
"""

FILES = {
    "models.yaml": """\
models:
  - id: tiny-7b
    name: Invented 7B dense
    parameters: 7000000000
    layers: 32
    kv_heads: 8
    head_dim: 128
""",
    "precisions.yaml": """\
precisions:
  - id: bf16
    weight_bytes_per_param: 2
    kv_bytes_per_value: 2
    compute: bf16
""",
    "workloads.yaml": """\
workloads:
  - id: demo
    prompt_tokens: 1024
    max_output_tokens: 1024
    concurrency: 1
    targets: {itl_p95: 10 ms}
""",
    "assumptions.yaml": """\
assumptions:
  runtime_overhead: 2 GiB
  reserve: 2 GiB
  electricity_usd_per_kwh: 0.10
  pue: 1.0
  utilisation: 1.0
  amortisation_months: 36
  hours_per_month: 730
""",
}


def write_catalog(
    folder: Path,
    beta_bandwidth: str = "1 TB/s",
    beta_price: int = 30000,
    extra: str = "",
) -> Path:
    folder.mkdir(parents=True)
    hardware = HARDWARE.format(beta_bandwidth=beta_bandwidth, beta_price=beta_price, extra=extra)
    (folder / "hardware.yaml").write_text(hardware)
    for name, text in FILES.items():
        (folder / name).write_text(text)
    return folder


def make_run(catalogs: Path, destination: Path) -> Path:
    """A run folder written by :func:`planner.outputs.runs.write_run`, with the workbook and the PDF
    replaced by placeholders: rendering them takes far longer than this module's tests, and the
    diff reads neither."""
    catalog = load_catalog(catalogs)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            report, "write_report", lambda _c, _r, path, *_, **__: path.write_text("stub")
        )
        patch.setattr(
            workbook, "write_workbook", lambda _r, path, *_, **__: path.write_text("stub")
        )
        out = write_run(catalog, evaluate(catalog), destination)
    if not (out / CATALOG_COPY).exists():  # runs from before the copy was kept
        shutil.copytree(catalogs, out / CATALOG_COPY)
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")
    base = write_catalog(root / "cat-base")
    refresh = write_catalog(root / "cat-refresh", beta_bandwidth="2 TB/s", beta_price=15000)
    gamma = write_catalog(root / "cat-gamma", extra=GAMMA)
    return {
        "base": make_run(base, root / "run-base"),
        "refresh": make_run(refresh, root / "run-refresh"),
        "gamma": make_run(gamma, root / "run-gamma"),
        "cat-base": base,
        "cat-refresh": refresh,
    }


def rows(diff, kind: str) -> list[tuple]:
    return [(c.key, c.field, c.old, c.new) for c in diff.changes() if c.kind == kind]


# The key case: a bandwidth and price change moves the recommendation ---------------------------


def test_bandwidth_and_price_change_is_reported_with_the_new_winner(runs):
    diff = diff_runs(runs["base"], runs["refresh"])
    assert diff.changed
    assert rows(diff, "input_changed") == [
        ("hardware/beta", "memory_bandwidth", 1e12, 2e12),
        ("hardware/beta", "price.purchase_usd", 30000.0, 15000.0),
    ]
    assert [c.unit for c in diff.inputs] == ["B/s", "USD"]
    assert [c.delta for c in diff.inputs] == [1e12, -15000.0]
    assert not rows(diff, "input_added") and not rows(diff, "input_removed")

    (rec,) = diff.recommendations
    assert (rec.workload, rec.model) == ("demo", "tiny-7b")
    assert rec.winner_changed
    assert rec.old["hardware"] == "alpha" and rec.new["hardware"] == "beta"
    assert rec.old["cost_usd"] == pytest.approx(21_314)
    assert rec.new["cost_usd"] == pytest.approx(16_314)
    assert rec.old["acquisition"] == rec.new["acquisition"] == "buy"
    changed = {c.field: c for c in rec.changes()}
    assert set(changed) == {"hardware", "cost_usd"}  # same precision, TP and device count
    assert changed["cost_usd"].delta == pytest.approx(-5_000)

    assert rows(diff, "newly_eligible") == [("beta/tiny-7b/bf16/demo/1", "eligible", False, True)]
    assert not rows(diff, "stops_eligible")
    assert not rows(diff, "newly_fits") and not rows(diff, "stops_fitting")  # both fit throughout
    ((key, field, old, new),) = rows(diff, "cost_changed")
    assert (key, field) == ("beta/tiny-7b/bf16/demo/1", "cost_usd")
    assert (old, new) == (pytest.approx(31_314), pytest.approx(16_314))
    assert not rows(diff, "candidate_added") and not rows(diff, "candidate_removed")
    assert diff.notes == []


def test_text_shows_the_input_change_and_the_new_winner(runs):
    text = diff_runs(runs["base"], runs["refresh"]).to_text()
    assert f"old: {runs['base']} (planner" in text
    assert "  ~ hardware beta\n" in text
    assert "      memory_bandwidth: 1 TB/s → 2 TB/s (+1 TB/s, +100.0%)\n" in text
    assert "      price.purchase_usd: 30,000 USD → 15,000 USD (-15,000 USD, -50.0%)\n" in text
    assert "Recommendations that changed option (1):\n  demo × tiny-7b:\n" in text
    assert "      was: 1 × alpha (TP 1) · bf16 to buy, cost 21,314 USD\n" in text
    assert (
        "      now: 1 × beta (TP 1) · bf16 to buy, cost 16,314 USD (-5,000 USD, -23.5%)\n" in text
    )
    assert "Candidates newly eligible (1):\n  + demo × tiny-7b: beta (TP 1) · bf16\n" in text
    assert (
        "  demo × tiny-7b: beta (TP 1) · bf16: cost 31,314 USD → 16,314 USD (-15,000 USD, -47.9%)"
        in text
    )
    assert "No changes" not in text


def test_csv_has_one_row_per_change(runs, tmp_path: Path):
    diff = diff_runs(runs["base"], runs["refresh"])
    path = diff.write_csv(tmp_path / "diff.csv")
    table = pd.read_csv(path, keep_default_na=False)
    assert list(table.columns) == ["kind", "key", "field", "old", "new", "delta", "unit", "note"]
    assert list(table.kind) == [
        "input_changed",
        "input_changed",
        "recommendation_changed",
        "recommendation_changed",
        "newly_eligible",
        "cost_changed",
    ]
    bandwidth = table.iloc[0]
    assert (bandwidth.key, bandwidth.field, bandwidth.unit) == (
        "hardware/beta",
        "memory_bandwidth",
        "B/s",
    )
    assert float(bandwidth.old) == 1e12 and float(bandwidth.new) == 2e12
    winner = table[(table.kind == "recommendation_changed") & (table.field == "hardware")].iloc[0]
    assert (winner.key, winner.old, winner.new, winner.delta) == (
        "demo/tiny-7b",
        "alpha",
        "beta",
        "",
    )
    cost = table[table.kind == "recommendation_changed"].iloc[1]
    assert float(cost.delta) == pytest.approx(-5_000)
    assert set(table.kind) <= set(KINDS)


def test_sections_for_the_report(runs):
    sections = dict(diff_runs(runs["base"], runs["refresh"]).sections())
    assert list(sections) == [
        "Catalog changes",
        "Recommendation changes",
        "Fit and eligibility changes",
        "Cost changes",
    ]
    assert sections["Catalog changes"][0] == {
        "entry": "hardware beta",
        "change": "changed",
        "field": "memory_bandwidth",
        "old": "1 TB/s",
        "new": "2 TB/s",
        "delta": "+1 TB/s, +100.0%",
    }
    assert sections["Recommendation changes"] == [
        {
            "workload": "demo",
            "model": "tiny-7b",
            "change": "option",
            "was": "1 × alpha (TP 1) · bf16 to buy, cost 21,314 USD",
            "now": "1 × beta (TP 1) · bf16 to buy, cost 16,314 USD",
            "cost change": "-5,000 USD, -23.5%",
        }
    ]
    assert sections["Cost changes"][0] == {
        "candidate": "demo × tiny-7b: beta (TP 1) · bf16",
        "cost was": "31,314 USD",
        "cost now": "16,314 USD",
        "cost change": "-15,000 USD, -47.9%",
        "devices": "unchanged",
        "why": "",
    }


def test_baseline_before_the_run_is_written_matches_the_written_run(runs):
    catalog = load_catalog(runs["cat-refresh"])
    before = diff_against(runs["base"], catalog, evaluate(catalog).table, label="this run")
    after = diff_runs(runs["base"], runs["refresh"])
    pd.testing.assert_frame_equal(before.to_frame(), after.to_frame())
    assert before.new.startswith("this run (planner")


def test_same_option_at_a_new_cost(runs, tmp_path: Path):
    # Electricity 0.10 → 0.20 USD/kWh: 365 kWh × 0.10 USD more a month × 36 = +1,314 USD for each
    # device; alpha still wins at 22,628 USD (1,314 / 21,314 = +6.2%).
    dearer = tmp_path / "dearer"
    shutil.copytree(runs["cat-base"], dearer)
    text = (dearer / "assumptions.yaml").read_text()
    (dearer / "assumptions.yaml").write_text(text.replace("0.10", "0.20"))
    catalog = load_catalog(dearer)
    diff = compare(load_run(runs["base"]), snapshot(catalog, evaluate(catalog).table))
    assert rows(diff, "input_changed") == [("assumptions", "electricity_usd_per_kwh", 0.1, 0.2)]
    (rec,) = diff.recommendations
    assert not rec.winner_changed
    assert [(c.field, c.delta) for c in rec.changes()] == [("cost_usd", pytest.approx(1_314))]
    text = diff.to_text()
    assert (
        "      electricity_usd_per_kwh: 0.10 USD/kWh → 0.20 USD/kWh (+0.10 USD/kWh, +100.0%)"
        in text
    )
    assert (
        "Recommendations with the same option at a new cost (1):\n"
        "  demo × tiny-7b: 1 × alpha (TP 1) · bf16 to buy, cost 22,628 USD (+1,314 USD, +6.2%)\n"
    ) in text
    assert "Cost changes (2 candidates; the 1 largest shown):" in diff.to_text(limit=1)
    sections = dict(diff.sections(limit=1))
    assert list(sections) == [
        "Catalog changes",
        "Recommendation changes",
        "Cost changes (largest 1 of 2)",
    ]
    assert sections["Recommendation changes"][0]["change"] == "cost only"


def cheaper_rent(runs, tmp_path: Path) -> Path:
    """The refreshed catalogs with alpha rented at 0.50 USD a device-hour (was 2.00)."""
    folder = tmp_path / "cheaper-rent"
    shutil.copytree(runs["cat-refresh"], folder)
    text = (folder / "hardware.yaml").read_text()
    (folder / "hardware.yaml").write_text(
        text.replace("cloud_usd_per_hour: 2.00", "cloud_usd_per_hour: 0.50", 1)
    )
    return folder


def test_a_rental_price_alone_moves_the_ranking(runs, tmp_path: Path):
    # From the refreshed run (beta wins, to buy at 16,314 USD), alpha's rent drops to 0.50 USD a
    # device-hour: 0.50 × 730 × 36 = 13,140 USD over the period, less than owning it (21,314 USD,
    # unchanged), so alpha is rented: its cost 21,314 → 13,140 USD (-8,174 USD, 8,174 / 21,314 =
    # -38.4%), and it beats beta: the recommendation moves, 13,140 - 16,314 = -3,174 USD
    # (3,174 / 16,314 = -19.5%).
    catalog = load_catalog(cheaper_rent(runs, tmp_path))
    diff = compare(load_run(runs["refresh"]), snapshot(catalog, evaluate(catalog).table))
    assert rows(diff, "input_changed") == [("hardware/alpha", "price.cloud_usd_per_hour", 2.0, 0.5)]

    (rec,) = diff.recommendations
    assert rec.winner_changed
    assert (rec.old["hardware"], rec.old["acquisition"]) == ("beta", "buy")
    assert (rec.new["hardware"], rec.new["acquisition"]) == ("alpha", "rent")
    changed = {c.field: c for c in rec.changes()}
    assert set(changed) == {"hardware", "cost_usd"}
    assert (changed["cost_usd"].old, changed["cost_usd"].new) == (
        pytest.approx(16_314),
        pytest.approx(13_140),
    )
    assert changed["cost_usd"].delta == pytest.approx(-3_174)

    # owning alpha costs the same in both runs: the only cost change is the one the ranking reads
    (cost,) = diff.of_kind("cost_changed")
    assert (cost.key, cost.field) == ("alpha/tiny-7b/bf16/demo/1", "cost_usd")
    assert (cost.old, cost.new, cost.delta) == (
        pytest.approx(21_314),
        pytest.approx(13_140),
        pytest.approx(-8_174),
    )
    assert cost.note == "buy → rent: owning 21,314 USD, renting 13,140 USD"

    text = diff.to_text()
    assert (
        "      was: 1 × beta (TP 1) · bf16 to buy, cost 16,314 USD\n"
        "      now: 1 × alpha (TP 1) · bf16 to rent, cost 13,140 USD (-3,174 USD, -19.5%)\n"
    ) in text
    assert (
        "  demo × tiny-7b: alpha (TP 1) · bf16: cost 21,314 USD → 13,140 USD (-8,174 USD, -38.4%)"
        " (buy → rent: owning 21,314 USD, renting 13,140 USD)\n"
    ) in text
    sections = dict(diff.sections())
    assert sections["Recommendation changes"][0]["cost change"] == "-3,174 USD, -19.5%"
    assert sections["Cost changes"][0]["cost change"] == "-8,174 USD, -38.4%"


def test_a_run_ranked_on_owning_alone_is_compared_on_its_tco(runs, tmp_path: Path):
    # A results.csv from before renting was compared has no cost_usd, rent_usd or acquisition:
    # its cost is its TCO, to buy. Against the cheaper rent, alpha costs 21,314 → 13,140 USD.
    old = tmp_path / "owning-only"
    shutil.copytree(runs["refresh"], old)
    table = pd.read_csv(old / "results.csv")
    table.drop(columns=["cost_usd", "rent_usd", "acquisition"]).to_csv(
        old / "results.csv", index=False
    )
    catalog = load_catalog(cheaper_rent(runs, tmp_path))
    diff = compare(load_run(old), snapshot(catalog, evaluate(catalog).table))
    (rec,) = diff.recommendations
    assert rec.describe("old") == "1 × beta (TP 1) · bf16 to buy, cost 16,314 USD"
    (cost,) = diff.of_kind("cost_changed")
    assert (cost.field, cost.delta) == ("cost_usd", pytest.approx(-8_174))
    assert cost.note == "buy → rent: owning 21,314 USD, renting 13,140 USD"


# No change; entries added and removed ------------------------------------------------------------


def test_identical_runs_have_no_changes(runs):
    diff = diff_runs(runs["base"], runs["base"])
    assert not diff.changed
    assert "No changes: inputs and outputs are the same." in diff.to_text()
    assert diff.to_frame().empty
    assert list(diff.to_frame().columns)[:6] == ["kind", "key", "field", "old", "new", "delta"]
    assert diff.sections() == []


def test_added_and_removed_hardware(runs):
    added = diff_runs(runs["base"], runs["gamma"])
    assert rows(added, "input_added") == [("hardware/gamma", "", None, "Gamma 80GB")]
    assert not rows(added, "input_changed")
    (candidate,) = [c for c in added.candidates if c.kind == "candidate_added"]
    assert candidate.key == "gamma/tiny-7b/bf16/demo/1"
    assert candidate.note.startswith("cost:")  # gamma has no price: reported, never costed as 0
    assert added.recommendations == []  # alpha still wins
    text = added.to_text()
    assert "  + hardware gamma added (Gamma 80GB)\n" in text
    assert "Candidates added (1):\n  + demo × tiny-7b: gamma (TP 1) · bf16 (cost:" in text
    assert "Recommendations: none of 1 changed." in text

    removed = diff_runs(runs["gamma"], runs["base"])
    assert rows(removed, "input_removed") == [("hardware/gamma", "", "Gamma 80GB", None)]
    assert [c.key for c in removed.candidates if c.kind == "candidate_removed"] == [
        "gamma/tiny-7b/bf16/demo/1"
    ]
    assert "  - hardware gamma removed (Gamma 80GB)\n" in removed.to_text()


def test_candidate_that_stops_fitting_says_why(runs, tmp_path: Path):
    # alpha shrunk to 16 GB: 14 GB of weights + 2 GiB runtime + 2 GiB reserve no longer fit.
    small = tmp_path / "small"
    shutil.copytree(runs["cat-base"], small)
    hardware = (small / "hardware.yaml").read_text()
    (small / "hardware.yaml").write_text(hardware.replace("memory: 40 GB", "memory: 16 GB", 1))
    catalog = load_catalog(small)
    diff = compare(load_run(runs["base"]), snapshot(catalog, evaluate(catalog).table))
    assert rows(diff, "input_changed") == [("hardware/alpha", "memory", 40e9, 16e9)]
    (stops,) = [c for c in diff.candidates if c.kind == "stops_fitting"]
    assert (
        stops.key == "alpha/tiny-7b/bf16/demo/1"
        and stops.note == "no room for one maximum-length sequence"
    )
    (rec,) = diff.recommendations
    assert rec.new is None  # beta misses the latency target: no eligible option is left
    assert "now: no eligible option (" in diff.to_text()
    assert "memory: 37.25 GiB (40.00 GB) → 14.90 GiB (16.00 GB)" in diff.to_text()


# Inputs without a catalogs/ copy; comment-only edits; field paths -----------------------------


def test_old_run_without_catalog_copy_falls_back_to_file_hashes(runs, tmp_path: Path):
    old = tmp_path / "old-run"
    shutil.copytree(runs["base"], old)
    shutil.rmtree(old / CATALOG_COPY)
    diff = diff_runs(old, runs["refresh"])
    assert not diff.field_level
    ((key, field, before, after),) = rows(diff, "input_changed")
    assert (key, field) == ("file/hardware.yaml", "sha256")
    assert len(before) == len(after) == 64 and before != after
    assert diff.notes[0].startswith(
        f"field-level catalog diff unavailable: {old} keeps no catalogs/ copy"
    )
    assert diff.recommendations[0].new["hardware"] == "beta"  # outputs are still compared
    text = diff.to_text()
    assert "field-level diff unavailable" in text and "  ~ file hardware.yaml\n" in text


def test_comment_only_edit_is_no_change_but_is_noted(runs, tmp_path: Path):
    edited = tmp_path / "edited"
    shutil.copytree(runs["cat-base"], edited)
    with (edited / "hardware.yaml").open("a") as f:
        f.write("# prices checked again, unchanged\n")
    catalog = load_catalog(edited)
    diff = compare(load_run(runs["base"]), snapshot(catalog, evaluate(catalog).table))
    assert not diff.changed
    assert diff.notes == [
        "hardware.yaml differs in bytes but not in any field "
        "(comments, layout or the order of entries)"
    ]


def test_nested_fields_lists_and_assumptions(tmp_path: Path):
    old = load_catalog(write_catalog(tmp_path / "a"))
    b = write_catalog(tmp_path / "b")
    (b / "workloads.yaml").write_text(
        FILES["workloads.yaml"].replace("itl_p95: 10 ms", "itl_p95: 20 ms, ttft_p95: 2 s")
    )
    (b / "assumptions.yaml").write_text(
        FILES["assumptions.yaml"] + "  tensor_parallel_sizes: [1, 2]\n  reserve: 4 GiB\n"
    )
    (b / "assumptions.yaml").write_text(
        (b / "assumptions.yaml").read_text().replace("  reserve: 2 GiB\n", "", 1)
    )
    changes = catalog_changes(old, load_catalog(b))
    assert [(c.key, c.field, c.old, c.new, c.unit) for c in changes] == [
        ("workload/demo", "targets.ttft_p95", None, 2.0, "s"),
        ("workload/demo", "targets.itl_p95", 0.01, 0.02, "s"),
        ("assumptions", "reserve", 2 * units.GIB, 4 * units.GIB, "B"),
        ("assumptions", "tensor_parallel_sizes", [1], [1, 2], ""),
    ]
    assert format_change(0.01, 0.02, "s") == "10 ms → 20 ms (+10 ms, +100.0%)"
    assert format_change([1], [1, 2]) == "[1] → [1, 2]"
    assert format_change(None, 2.0, "s") == "- → 2 s"


def test_workload_csv_is_compared_by_hash(tmp_path: Path):
    def with_lengths(folder: Path, lengths: str) -> Path:
        write_catalog(folder)
        (folder / "lengths.csv").write_text("prompt\n" + lengths)
        workloads = FILES["workloads.yaml"].replace(
            "prompt_tokens: 1024", "prompt_tokens: {file: lengths.csv, column: prompt}"
        )
        (folder / "workloads.yaml").write_text(workloads)
        return folder

    old = load_catalog(with_lengths(tmp_path / "a", "512\n1024\n"))
    new = load_catalog(with_lengths(tmp_path / "b", "512\n2048\n"))
    ((kind, key, field, before, after),) = [
        (c.kind, c.key, c.field, c.old, c.new) for c in data_file_changes(old, new)
    ]
    assert (kind, key, field) == ("input_changed", "file/lengths.csv", "sha256")
    assert before == hashlib.sha256(b"prompt\n512\n1024\n").hexdigest() != after
    assert catalog_changes(old, new) == []  # the YAML is the same


# Not a run ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p / "missing", "does not exist"),
        (lambda p: (p / "file.txt").write_text("x") and p / "file.txt", "is not a folder"),
        (
            lambda p: write_catalog(p / "cat"),
            "is not a run folder: no results.csv or manifest.json",
        ),
    ],
)
def test_not_a_run(runs, tmp_path: Path, make, message):
    folder = make(tmp_path)
    with pytest.raises(NotARun, match=message) as err:
        diff_runs(folder, runs["base"])
    assert str(folder) in str(err.value)
    with pytest.raises(NotARun):
        diff_runs(runs["base"], folder)


def test_results_without_key_columns_is_not_a_run(runs, tmp_path: Path):
    broken = tmp_path / "broken"
    shutil.copytree(runs["base"], broken)
    (broken / "results.csv").write_text("a,b\n1,2\n")
    with pytest.raises(NotARun, match="lacks the key column"):
        load_run(broken)


# Formatting: values as people read them ---------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (80 * units.GIB, "B", "80.00 GiB (85.90 GB)"),
        (3.35e12, "B/s", "3.35 TB/s"),
        (450e9, "B/s", "450 GB/s"),
        (989e12, "FLOP/s", "989 TFLOPS"),
        (0.05, "s", "50 ms"),
        (4.0, "1/s", "4 /s"),
        (30000.0, "USD", "30,000 USD"),
        (3.0, "USD/h", "3.00 USD/h"),
        (0.12, "USD/kWh", "0.12 USD/kWh"),
        (36, "", "36"),
        (None, "B", "-"),
        (True, "", "true"),
    ],
)
def test_format_value(value, unit, text):
    assert format_value(value, unit) == text


@pytest.mark.parametrize(
    ("path", "unit"),
    [
        ("memory", "B"),
        ("memory_bandwidth", "B/s"),
        ("compute.fp8", "FLOP/s"),
        ("price.purchase_usd", "USD"),
        ("price.cloud_usd_per_hour", "USD/h"),
        ("targets.e2e_p95", "s"),
        ("arrival.rate", "1/s"),
        ("electricity_usd_per_kwh", "USD/kWh"),
        ("layers", ""),
        ("compute", ""),  # a precision's compute format is a name, not a rate
        # every quantity of the records, read off their field types
        ("step_overhead_per_sequence", "s"),
        ("rack_power", "W"),
        ("non_torch", "B"),
        ("targets.ttft_p95", "s"),
    ],
)
def test_field_unit(path, unit):
    assert field_unit(path) == unit


def test_change_delta_and_percentages():
    change = Change("cost_changed", "k", "cost_usd", 99_413.0, 99_381.0, "USD")
    assert change.delta == pytest.approx(-32.0)
    assert format_change(99_413.0, 99_381.0, "USD") == (
        "99,413 USD → 99,381 USD (-32.00 USD, -0.03%)"
    )
    assert Change("x", "k", "hardware", "a", "b").delta is None
