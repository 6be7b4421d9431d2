"""Buy, rent or call an API: the advice on catalogs whose numbers are worked out by hand.

The devices and the model are those of the report's round catalog (tests/test_report.py): one
round-80 device serves the workload; owning it costs 25,000 USD of capital and 76.65 USD a month
to run, 27,759.40 USD over 36 months; round-48 owns for 31,379.70 USD.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from conftest import ROUND_ASSUMPTIONS

from planner.catalog import CatalogError, load_catalog
from planner.outputs.advice import ask_context, sensitivity_text
from planner.outputs.sections import summary_sentence
from planner.plan.deployment import advice, ask
from planner.plan.recommend import recommendations
from planner.plan.sensitivity import CHANGES, what_changes
from planner.plan.sweep import evaluate

HARDWARE = """
    hardware:
      - id: round-80
        memory: 80 GiB
        memory_bandwidth: 2 TB/s
        compute: {{bf16: 1000 TFLOPS}}
        power: 700 W
        price: {{purchase_usd: 25000, cloud_usd_per_hour: {rent_80}}}
      - id: round-48
        memory: 48 GiB
        memory_bandwidth: 1 TB/s
        compute: {{bf16: 500 TFLOPS}}
        power: 350 W
        price: {{purchase_usd: 30000, cloud_usd_per_hour: 1.50}}
"""
FILES = {
    "models.yaml": """
        models:
          - id: invented-7b
            parameters: 7000000000
            layers: 32
            kv_heads: 8
            head_dim: 128
            attention_heads: 32
            hidden_size: 4096
        """,
    "precisions.yaml": """
        precisions:
          - id: bf16
            weight_bytes_per_param: 2
            kv_bytes_per_value: 2
            compute: bf16
        """,
    # one request a second of exactly 3,072 prompt and 1,024 output tokens
    "workloads.yaml": """
        workloads:
          - id: steady
            prompt_tokens: 3072
            output_tokens: {mean: 1024, p95: 1024, max: 1024}
            max_output_tokens: 1024
            arrival: {pattern: poisson, rate: 1 /s}
        """,
    "assumptions.yaml": ROUND_ASSUMPTIONS + "      simulated_requests: 0\n",
}


def catalog(folder: Path, rent_80: float = 2.00, offers: str | None = None):
    folder.mkdir(parents=True, exist_ok=True)
    files = {**FILES, "hardware.yaml": HARDWARE.format(rent_80=rent_80)}
    if offers is not None:
        files["api_offers.yaml"] = offers
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text))
    return load_catalog(folder)


def winner(cat):
    table = evaluate(cat).table
    rec = recommendations(table).iloc[0]
    row = table[(table["hardware"] == rec["hardware"]) & table["eligible"]].iloc[0]
    return table, row


def test_owning_is_cheaper_at_list_rent(tmp_path):
    """Renting round-80 at 2.00 USD an hour: 1,460 a month, 52,560 over 36 months > 27,759.40."""
    _, row = winner(catalog(tmp_path))
    assert row["hardware"] == "round-80" and row["devices_needed"] == 1
    assert row["tco_usd"] == pytest.approx(27_759.40, rel=1e-9)
    assert row["rent_usd"] == pytest.approx(52_560, rel=1e-9)
    assert advice(row) == "buy" and row["cost_usd"] == pytest.approx(27_759.40, rel=1e-9)


def test_a_device_cheaper_to_rent_is_rented(tmp_path):
    """At 0.50 USD an hour: 365 a month, 13,140 over 36 months < 27,759.40: rent. Owning would
    save 365 − 76.65 = 288.35 a month and recover 25,000 in ⌈86.7⌉ = 87 months."""
    cat = catalog(tmp_path, rent_80=0.50)
    _, row = winner(cat)
    assert row["rent_usd"] == pytest.approx(13_140, rel=1e-9)
    assert advice(row) == "rent" and row["cost_usd"] == pytest.approx(13_140, rel=1e-9)
    assert row["break_even_month"] == 87
    sentence = summary_sentence(cat.workloads[0], row.to_frame().T, cat, [])
    assert ": rent. " in sentence and "13,140 USD over the period" in sentence
    assert "buy:" not in sentence


OFFER = """
    api_offers:
      - id: cheap-host
        name: Cheap host
        model: invented-7b
        input_usd_per_million_tokens: {price}
        output_usd_per_million_tokens: {price}
        as_of: 2026-11-30
        source: invented for the test
"""


def test_an_api_cheaper_than_both_is_advised_with_its_break_even_load(tmp_path):
    """Tokens a month: 3,072 × 3,600 × 730 = 8,073,216,000 in and 1,024 × 3,600 × 730 =
    2,691,072,000 out; at 0.05 USD per million each, 538.2144 USD a month, 19,375.7184 over 36
    months, below owning (27,759.40). The API costs as much as the device at 1 × 27,759.40 ÷
    19,375.7184 = 1.4327 requests/s."""
    cat = catalog(tmp_path, offers=OFFER.format(price=0.05))
    _, row = winner(cat)
    assert row["api_usd_per_month"] == pytest.approx(538.2144, rel=1e-9)
    assert row["api_usd"] == pytest.approx(19_375.7184, rel=1e-9)
    assert advice(row) == "API"
    assert row["api_break_even_requests_per_s"] == pytest.approx(27_759.40 / 19_375.7184, rel=1e-9)
    sentence = summary_sentence(cat.workloads[0], row.to_frame().T, cat, [])
    assert "call the API rather than deploy" in sentence
    assert "unless the load grows beyond 1.43 requests/s" in sentence


def test_an_api_dearer_than_the_devices_is_named_but_not_advised(tmp_path):
    """At 0.10 USD per million: 38,751.44 over 36 months > 27,759.40: buy; the API would cost
    less below 27,759.40 ÷ 38,751.4368 = 0.7163 requests/s."""
    cat = catalog(tmp_path, offers=OFFER.format(price=0.10))
    _, row = winner(cat)
    assert advice(row) == "buy"
    sentence = summary_sentence(cat.workloads[0], row.to_frame().T, cat, [])
    assert "more than the devices; it would cost less below 0.72 requests/s" in sentence


def test_without_an_offer_the_comparison_is_said_to_be_missing(tmp_path):
    cat = catalog(tmp_path)
    _, row = winner(cat)
    sentence = summary_sentence(cat.workloads[0], row.to_frame().T, cat, [])
    assert "No API price is catalogued for this model" in sentence


@pytest.mark.parametrize(
    ("offers", "message"),
    [
        (OFFER.format(price=0.05).replace("invented-7b", "nope"), "no models entry 'nope'"),
        (
            textwrap.dedent(OFFER.format(price=0.05))
            + "  - {id: second, model: invented-7b, input_usd_per_million_tokens: 1,\n"
            "     output_usd_per_million_tokens: 1, as_of: 2026-11-30}\n",
            "already has the offer 'cheap-host'",
        ),
        (OFFER.format(price="-1"), "input_usd_per_million_tokens"),
    ],
)
def test_bad_offers_are_refused_with_file_entry_and_field(tmp_path, offers, message):
    with pytest.raises(CatalogError) as caught:
        catalog(tmp_path, offers=offers)
    text = str(caught.value)
    assert "api_offers.yaml" in text and message in text


def test_the_ask_adds_up_the_advice_by_hand(tmp_path):
    """Bought: 1 device, 25,000 of capital, 76.65 a month, 27,759.40 over 36 months; drawing
    700 W × 1.0 × PUE 1.5 = 1.05 kW at the facility. Rented at 0.50: no capital, 365 a month,
    13,140 over the period. By API at 0.05: no devices, 538.2144 a month, 19,375.7184."""
    cases = [
        (catalog(tmp_path / "buy"), 1, 25_000, 76.65, 27_759.40, 1.05),
        (catalog(tmp_path / "rent", rent_80=0.50), 1, 0, 365, 13_140, 0),
        (
            catalog(tmp_path / "api", offers=OFFER.format(price=0.05)),
            0,
            0,
            538.2144,
            19_375.7184,
            0,
        ),
    ]
    for cat, devices, capital, monthly, period, kw in cases:
        plan = ask(cat, evaluate(cat).table)
        assert [line.model for line in plan.lines] == ["invented-7b"]
        assert plan.total("devices") == devices
        assert plan.total("capital_usd") == pytest.approx(capital, rel=1e-9)
        assert plan.total("monthly_usd") == pytest.approx(monthly, rel=1e-9)
        assert plan.total("period_usd") == pytest.approx(period, rel=1e-9)
        assert plan.facility_kw == pytest.approx(kw, rel=1e-9)
        assert ask_context(plan, cat)["bought"] is (kw > 0)  # the page speaks of power only then


TWIN = (
    "  - id: twin-7b\n    parameters: 7000000000\n    layers: 32\n    kv_heads: 8\n"
    "    head_dim: 128\n    attention_heads: 32\n    hidden_size: 4096\n"
)


def _with_twin(folder: Path, deployment: str | None = None):
    catalog(folder)
    models = folder / "models.yaml"
    models.write_text(models.read_text() + TWIN)
    if deployment is not None:
        (folder / "deployment.yaml").write_text(textwrap.dedent(deployment))
    return load_catalog(folder)


def test_models_that_cost_the_same_are_named_as_a_tie(tmp_path):
    """twin-7b is invented-7b under another name: the same cost, a tie the first page names;
    the plan takes the model listed first."""
    cat = _with_twin(tmp_path)
    plan = ask(cat, evaluate(cat).table)
    (line,) = plan.lines
    assert (line.model, line.ties, line.chosen_by) == ("invented-7b", ("twin-7b",), "cheapest")
    page = ask_context(plan, cat)
    assert page["ties"] == [
        "steady: invented-7b, twin-7b tie at 27,759 USD; the plan takes invented-7b by the "
        "ranking's tie-breaks (fewer devices, then the larger safety margin, then lower "
        "inter-token latency, then the order of models.yaml): name the one to deploy in "
        "deployment.yaml"
    ]


def test_deployment_yaml_names_the_model(tmp_path):
    cat = _with_twin(
        tmp_path,
        """
        deployment:
          prepared_by: Capacity team
          serve:
            - {workload: steady, model: twin-7b}
        """,
    )
    plan = ask(cat, evaluate(cat).table)
    (line,) = plan.lines
    assert (line.model, line.ties, line.chosen_by) == ("twin-7b", (), "deployment.yaml")
    assert ask_context(plan, cat)["prepared_by"] == "Capacity team"


@pytest.mark.parametrize(
    ("serve", "message"),
    [
        ("{workload: nope, model: invented-7b}", "no workloads entry 'nope'"),
        ("{workload: steady, model: nope}", "no models entry 'nope'"),
        (
            "{workload: steady, model: invented-7b}\n    - {workload: steady, model: twin-7b}",
            "workload 'steady' is served twice",
        ),
    ],
)
def test_a_bad_deployment_is_refused_with_its_line(tmp_path, serve, message):
    with pytest.raises(CatalogError) as caught:
        _with_twin(tmp_path, f"deployment:\n  serve:\n    - {serve}\n")
    text = str(caught.value)
    assert "deployment.yaml:" in text and message in text


def test_the_input_change_the_decision_hangs_on_is_named(tmp_path):
    """Renting round-80 at 1.05 USD an hour costs 1.05 × 730 × 36 = 27,594 < 27,759.40: rent.
    With device prices 10 % higher, renting costs 30,353.40 and owning 27,500 + 2,759.40 =
    30,259.40: buy. More traffic (1.1 requests/s) still fits one device; 10 % less bandwidth or
    compute still meets a workload without targets."""
    cat = catalog(tmp_path, rent_80=1.05)
    (line,) = ask(cat, evaluate(cat).table).lines
    assert line.advice == "rent" and line.period_usd == pytest.approx(27_594, rel=1e-9)
    changes = what_changes(cat)["steady"]
    assert [label for label, _ in changes] == ["+10 % device prices"]
    (_, after) = changes[0]
    assert after is not None and after.advice == "buy"
    assert after.period_usd == pytest.approx(30_259.40, rel=1e-9)
    text = sensitivity_text(changes, [label for label, _ in CHANGES])
    assert text == (
        "In closed form, the decision changes with +10 % device prices "
        "(then invented-7b: buy 1 × round-80 (TP 1) · bf16)."
    )


def test_planner_run_ends_with_the_ask(tmp_path):
    """The terminal's closing table: rented round-80 at 0.50, 365 a month, 13,140 in all."""
    from click.testing import CliRunner

    from planner.cli import main

    catalog(tmp_path / "c", rent_80=0.50)
    result = CliRunner().invoke(
        main, ["run", "--catalogs", str(tmp_path / "c"), "--out", str(tmp_path / "run")]
    )
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if "│" in line]
    cells = [[c.strip() for c in row.split("│")[1:-1]] for row in rows]
    assert [
        "steady",
        "invented-7b",
        "rent",
        "1 × round-80 (TP 1) · bf16",
        "0",
        "365",
        "13,140",
    ] in cells
    assert ["Total", "", "", "1 device", "0", "365", "13,140"] in cells
