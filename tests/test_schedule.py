"""Capacity over time, worked by hand.

The worked case: an open-loop workload at 10 requests/s today, a replica serving 2 requests/s
(5 replicas, one device each), 8-device nodes, traffic growing 3 % a month for 24 months, a
3-month lead time. A node costs 240,000 USD to buy, 1,000 a month to run and 16,000 a month to
rent; capital is written off over 36 months, so owning costs 240,000 ÷ 36 + 1,000 = 7,666.67 a
month against 16,000 rented: buy.

Replicas in month m: ⌈5 × 1.03^m⌉. 5 × 1.03^15 = 7.79 → 8 replicas, one node; 5 × 1.03^16 =
8.02 → 9 replicas, two nodes (1.03^16 = 1.6047). So one node in months 0–15, two in 16–23.
"""

from __future__ import annotations

import math
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest

from planner.catalog import load_catalog
from planner.plan.deployment import ask
from planner.plan.schedule import (
    NodeCosts,
    book_value_usd,
    break_even_hours,
    demand_factor,
    lease_payment_usd,
    monthly_rate,
    node_devices,
    nodes_worth_owning,
    payback_month,
    present_value,
    rented_node_hours,
    replicas_at,
    schedule_plans,
    schedules,
)
from planner.plan.sweep import evaluate

SEED = Path(__file__).resolve().parent.parent / "catalogs" / "examples" / "seed"

ROW = pd.Series(
    {
        "concurrency": 0.0,
        "replica_capacity_sequences": 100.0,
        "in_flight_requests": 4.0,
        "forecast_requests_per_s": 10.0,
        "requests_per_s_per_replica": 2.0,
        "replicas_needed": 5.0,
        "replicas_planned": 5.0,
    }
)
COSTS = NodeCosts(
    capital_usd=240_000, running_usd_per_month=1_000, rent_usd_per_month=16_000,
    amortisation_months=36,
)  # fmt: skip


@pytest.mark.parametrize(
    ("function", "args", "expected"),
    [
        (demand_factor, (0.03, 16), 1.6047064),  # 1.03^16
        (demand_factor, (0.03, 0), 1.0),
        (monthly_rate, (0.12,), 0.0094888),  # 1.12^(1/12) − 1
        (present_value, ([100.0, 100.0], 0.12), 199.0599),  # 100 + 100 ÷ 1.0094888
        (lease_payment_usd, (240_000, 0.06, 36), 7301.31),  # 1,200 ÷ (1 − 1.005^−36)
        (lease_payment_usd, (240_000, 0.0, 36), 6666.67),  # no interest: 240,000 ÷ 36
        (book_value_usd, (240_000, 21, 36), 100_000.0),  # 15 of 36 months left
        (book_value_usd, (240_000, 40, 36), 0.0),  # written off
    ],
)
def test_the_financial_formulas(function, args, expected) -> None:
    assert function(*args) == pytest.approx(expected, rel=1e-5, abs=0.01)


def test_replicas_follow_the_traffic() -> None:
    """⌈5 × 1.03^m⌉: 5 today, 8 in month 15, 9 in month 16; a closed loop of 64 users in
    replicas of 20 sequences grows from ⌈64 ÷ 20⌉ = 4 to ⌈64 × 1.5 ÷ 20⌉ = 5."""
    assert [replicas_at(ROW, demand_factor(0.03, m)) for m in (0, 15, 16)] == [5, 8, 9]
    closed = ROW.copy()
    closed[["concurrency", "replica_capacity_sequences", "replicas_needed"]] = [64, 20, 4]
    closed["replicas_planned"] = 4
    assert replicas_at(closed, 1.0) == 4 and replicas_at(closed, 1.5) == 5


def test_a_simulation_raise_carries_over() -> None:
    """The simulation asked for 6 replicas where the closed form gave 5: × 1.2 every month
    (⌈5 × 1.2⌉ = 6 today, ⌈9 × 1.2⌉ = ⌈10.8⌉ = 11 in month 16)."""
    raised = ROW.copy()
    raised["replicas_planned"] = 6.0
    assert replicas_at(raised, 1.0) == 6
    assert replicas_at(raised, demand_factor(0.03, 16)) == 11


NODES = [1] * 16 + [2] * 8


def test_the_worked_schedule() -> None:
    """Node 1 is needed from month 0: ordered in month 0, it arrives in month 3, so months 0–2
    rent one node (16,000 each). Node 2 is needed from month 16: ordered in month 13.

    Cash: 3 × 16,000 + (240,000 + 1,000) + 12 × 1,000 + (240,000 + 2 × 1,000) + 7 × 2,000 =
    557,000. Book value after 24 months: node 1 served 21 months (100,000 left), node 2 served
    8 (240,000 × 28 ÷ 36 = 186,666.67): net 270,333.33. Renting everything: 16 × 16,000 +
    8 × 32,000 = 512,000. Buying the peak up front: 3 × 16,000 + 2 × 240,000 + 2 × 1,000 +
    20 × 2,000 = 570,000, with 2 × 100,000 left: net 370,000."""
    plans = schedule_plans(NODES, 3, COSTS)
    schedule, rent, up_front = plans["schedule"], plans["rent"], plans["up_front"]
    assert schedule.orders == [(0, 1), (13, 1)]
    assert schedule.rented == [1, 1, 1] + [0] * 21
    assert schedule.owned == [0, 0, 0] + [1] * 13 + [2] * 8
    assert schedule.total_usd == pytest.approx(557_000)
    assert schedule.residual_usd == pytest.approx(100_000 + 240_000 * 28 / 36)
    assert schedule.net_usd == pytest.approx(270_333.33, abs=0.01)
    assert rent.total_usd == pytest.approx(512_000) and rent.residual_usd == 0
    assert up_front.orders == [(0, 2)]
    assert up_front.total_usd == pytest.approx(570_000)
    assert up_front.net_usd == pytest.approx(370_000)


def test_n_plus_one_adds_exactly_one_node() -> None:
    """One spare node: two nodes from month 0 (both ordered in month 0), three from month 16
    (ordered in month 13): one more node than without, in every month."""
    spare = [n + 1 for n in NODES]
    plans = schedule_plans(spare, 3, COSTS)
    assert plans["schedule"].orders == [(0, 2), (13, 1)]
    assert [
        a - b
        for a, b in zip(
            plans["schedule"].owned, schedule_plans(NODES, 3, COSTS)["schedule"].owned, strict=True
        )
    ][3:] == [1] * 21


def test_renting_is_the_schedule_where_owning_costs_more() -> None:
    dear = NodeCosts(240_000, 1_000, 5_000, 36)  # 7,666.67 owned against 5,000 rented
    plans = schedule_plans(NODES, 3, dear)
    assert plans["schedule"].orders == [] and plans["schedule"].cash_usd == plans["rent"].cash_usd


def test_payback_month() -> None:
    """Buying pays 100 up front and 10 a month against 40 a month rented: cumulative 110, 120,
    130, 140 against 40, 80, 120, 160: at or below renting from month 3 (cumulative 140 ≤
    160) on."""
    assert payback_month([40.0] * 5, [110.0, 10.0, 10.0, 10.0, 10.0]) == 3
    assert payback_month([40.0] * 3, [110.0, 10.0, 10.0]) is None  # not within 3 months
    assert payback_month([40.0] * 3, [40.0] * 3) is None  # nothing bought


def test_a_lease_spreads_the_capital() -> None:
    """Leasing node 1 (arrives month 3) and node 2 (month 16) at 6 % over 36 months: 7,301.31 a
    month each from arrival; 36 − 21 = 15 and 36 − 8 = 28 payments still owed at the end."""
    plans = schedule_plans(NODES, 3, COSTS, lease=(0.06, 36))
    lease, payment = plans["lease"], lease_payment_usd(240_000, 0.06, 36)
    assert lease.cash_usd[3] == pytest.approx(payment + 1_000)
    assert lease.cash_usd[16] == pytest.approx(2 * payment + 2_000)
    assert lease.residual_usd == pytest.approx(-(15 + 28) * payment)


def test_a_forecast_in_the_catalog_gives_each_workload_its_schedule(tmp_path: Path) -> None:
    """The seed catalog with a forecast on one workload (3 %/month, 24 months, one spare node):
    that line of the ask gets a schedule whose first month is its plan today plus the spare."""
    folder = tmp_path / "seed"
    shutil.copytree(SEED, folder)
    workloads = folder / "workloads.yaml"
    text = workloads.read_text().replace(
        "    concurrency: 16\n",
        "    concurrency: 16\n    forecast: {months: 24, growth_per_month: 0.03, spare_nodes: 1}\n",
        1,
    )
    workloads.write_text(text)
    (folder / "hardware.yaml").write_text(
        (folder / "hardware.yaml").read_text()
        + "    power: 300 W\n    price: {purchase_usd: 20000.0, cloud_usd_per_hour: 2.0}\n"
    )
    catalog = load_catalog(folder)
    plan = ask(catalog, evaluate(catalog).table)
    found = schedules(catalog, plan)
    assert [s.workload.id for s in found] == ["seed-4k"]
    first = found[0]
    row = first.line.row
    assert first.nodes[0] == math.ceil(row["devices_needed"] / row["devices_per_node"]) + 1
    assert first.nodes == sorted(first.nodes)  # growing traffic never needs fewer nodes
    assert len(first.nodes) == 24
    from planner.outputs.decision import bill_of_materials

    bill = {r["workload"]: r for r in bill_of_materials(catalog, plan)}
    seed_4k = catalog.get("workloads", "seed-4k").label
    assert bill[seed_4k]["spares"] == "1" and bill[seed_4k]["racks"] == "no limit"
    assert bill[seed_4k]["node_down"] == "targets hold"
    # 300 W devices: a node of min(devices, 8) of them
    devices = min(float(row["devices_needed"]), 8.0)
    assert bill[seed_4k]["node_kw"] == f"{devices * 0.3:,.1f}"


def test_the_report_section_of_a_schedule(tmp_path: Path) -> None:
    """The report shows, per workload with a forecast, its month rows (every third month and
    the last), the orders and the ways of paying, renting everything among them."""
    from planner.outputs.decision import schedule_sections

    folder = tmp_path / "seed"
    shutil.copytree(SEED, folder)
    workloads = folder / "workloads.yaml"
    workloads.write_text(
        workloads.read_text().replace(
            "    concurrency: 16\n", "    concurrency: 16\n    forecast: {months: 24}\n", 1
        )
    )
    (folder / "hardware.yaml").write_text(
        (folder / "hardware.yaml").read_text()
        + "    power: 300 W\n    price: {purchase_usd: 20000.0, cloud_usd_per_hour: 2.0}\n"
    )
    catalog = load_catalog(folder)
    (section,) = schedule_sections(schedules(catalog, ask(catalog, evaluate(catalog).table)))
    assert [r["month"] for r in section["rows"]] == [0, 3, 6, 9, 12, 15, 18, 21, 23]
    assert "rent everything" in [p["name"] for p in section["plans"]]
    assert section["svg"].startswith("<svg")


def test_the_tornado_of_the_seed(tmp_path: Path) -> None:
    """The seed with a price: every line is rented, so ±20 % device prices move the ask's cost
    by exactly ±20 % without changing it (rent = devices × 2.00 USD × 730 h × 36 months), and
    every bar runs from its lowered to its raised side around the cost as given."""
    from planner.plan.sensitivity import closed_ask, tornado, what_changes

    folder = tmp_path / "seed"
    shutil.copytree(SEED, folder)
    (folder / "hardware.yaml").write_text(
        (folder / "hardware.yaml").read_text()
        + "    power: 300 W\n    price: {purchase_usd: 200000.0, cloud_usd_per_hour: 2.0}\n"
    )
    catalog = load_catalog(folder)
    base_usd, devices, bars = tornado(catalog, 0.2)
    assert base_usd == pytest.approx(devices * 2.0 * 730 * 36)
    prices = next(b for b in bars if b.label == "device prices")
    assert (prices.low_usd, prices.high_usd) == pytest.approx((0.8 * base_usd, 1.2 * base_usd))
    assert prices.flips == () and prices.low_devices == prices.high_devices == devices
    assert [b.swing_usd for b in bars] == sorted((b.swing_usd for b in bars), reverse=True)
    # the passes share one closed-form plan of the inputs as given, to the same bars
    assert tornado(catalog, 0.2, base=closed_ask(catalog)) == (base_usd, devices, bars)
    shared, alone = what_changes(catalog, base=closed_ask(catalog)), what_changes(catalog)
    assert {w: [c for c, _ in moved] for w, moved in shared.items()} == {
        w: [c for c, _ in moved] for w, moved in alone.items()
    }


def test_depreciation_by_month() -> None:
    """Straight-line over 36 months: 6,666.67 a month for node 1 from month 3, twice that from
    month 16; over 24 months 13 × 6,666.67 + 8 × 13,333.33 = 193,333.33, which is the capital
    (480,000) less the book value left (286,666.67). Past the period a node stops depreciating:
    one node owned from month 0, written off over 2 months, depreciates in months 0 and 1 only."""
    from planner.plan.schedule import depreciation_usd

    owned = schedule_plans(NODES, 3, COSTS)["schedule"].owned
    months = depreciation_usd(owned, 240_000, 36)
    assert months[:3] == [0, 0, 0]
    assert months[3] == pytest.approx(6_666.67, abs=0.01)
    assert months[16] == pytest.approx(13_333.33, abs=0.01)
    assert sum(months) == pytest.approx(480_000 - (100_000 + 240_000 * 28 / 36))
    assert depreciation_usd([1, 1, 1, 1], 100.0, 2) == [50.0, 50.0, 0.0, 0.0]


def _seed_with(tmp_path: Path, forecast: str) -> Path:
    folder = tmp_path / "seed"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(SEED, folder)
    workloads = folder / "workloads.yaml"
    workloads.write_text(
        workloads.read_text().replace(
            "    concurrency: 16\n", f"    concurrency: 16\n    forecast: {forecast}\n", 1
        )
    )
    (folder / "hardware.yaml").write_text(
        (folder / "hardware.yaml").read_text()
        + "    power: 300 W\n    price: {purchase_usd: 20000.0, cloud_usd_per_hour: 2.0}\n"
    )
    return folder


def test_a_forecast_table_inline_or_in_a_csv(tmp_path: Path) -> None:
    """Traffic ×1, ×1, ×2, ×2.5 by month: the 16 users of seed-4k become 16, 16, 32 and 40, and
    the same table in a CSV gives the same schedule; the workbook's traffic cells are then the
    table's, typed in, not a growth formula."""
    import openpyxl

    from planner.outputs.workbook import write_workbook

    inline = load_catalog(_seed_with(tmp_path / "a", "{factors: [1, 1, 2, 2.5]}"))
    folder = _seed_with(tmp_path / "b", "{file: traffic.csv, column: factor}")
    (folder / "traffic.csv").write_text("month,factor\n0,1\n1,1\n2,2\n3,2.5\n")
    from_csv = load_catalog(folder)
    found = []
    for catalog in (inline, from_csv):
        results = evaluate(catalog)
        (one,) = schedules(catalog, ask(catalog, results.table))
        found.append(one)
        path = write_workbook(results, tmp_path / f"{len(found)}.xlsx", schedules=[one])
        sheet = openpyxl.load_workbook(path)["Schedule"]
        assert sheet["B2"].value == "month by month below"
        header = next(r for r in sheet.iter_rows() if r[0].value == "month")[0].row
        traffic = [r[1].value for r in sheet.iter_rows(min_row=header + 1, max_row=header + 4)]
        assert traffic == [1, 1, 2, 2.5]
    assert found[0].factors == found[1].factors == [1.0, 1.0, 2.0, 2.5]
    assert found[0].nodes == found[1].nodes
    row = found[0].line.row
    per_replica = float(row["replica_capacity_sequences"])
    assert found[0].replicas == [
        math.ceil(16 * f / per_replica - 1e-9) for f in (1.0, 1.0, 2.0, 2.5)
    ]


def test_the_workbook_carries_the_tornado(tmp_path: Path) -> None:
    """The Sensitivity sheet holds the cost as given and one row per input, as computed."""
    import openpyxl

    from planner.outputs.workbook import write_workbook
    from planner.plan.sensitivity import tornado

    catalog = load_catalog(_seed_with(tmp_path, "{months: 3}"))
    found = tornado(catalog, 0.2)
    path = write_workbook(evaluate(catalog), tmp_path / "plan.xlsx", sensitivity=found)
    rows = list(openpyxl.load_workbook(path)["Sensitivity"].iter_rows(values_only=True))
    assert rows[1][:2] == ("inputs as given", pytest.approx(found[0]))
    assert [r[0] for r in rows[3:]] == [bar.label for bar in found[2]]
    assert [r[2] for r in rows[3:]] == pytest.approx([bar.high_usd for bar in found[2]])


# A daily profile --------------------------------------------------------------------------------

#: A month whose day needs 4 nodes for 8 hours, 2 for 8 and 1 for 8.
DAY = [4] * 8 + [2] * 8 + [1] * 8


@pytest.mark.parametrize(
    ("hourly", "break_even_h", "owned"),
    [
        (DAY, 11.5, 2),  # ≥1 node 24 h, ≥2 16 h (> 11.5: own), ≥3 8 h (rent)
        (DAY, 7.9, 4),  # ≥4 nodes 8 h > 7.9: own all four
        (DAY, 8.0, 2),  # 8 h is not more than 8: rent the third and fourth
        (DAY, 16.0, 1),
        (DAY, 23.99, 1),
        (DAY, 24.0, 0),  # owning costs a whole day's rent or more: own none
        ([3] * 24, 0.0, 3),  # flat need, renting impossible: own all
    ],
)
def test_nodes_worth_owning(hourly: list[int], break_even_h: float, owned: int) -> None:
    assert nodes_worth_owning(hourly, break_even_h) == owned


def test_break_even_hours() -> None:
    """Owning costs 7,666.67 a month against 16,000 rented: 24 × 7,666.67 ÷ 16,000 = 11.5 h."""
    assert break_even_hours(COSTS) == pytest.approx(11.5)
    assert break_even_hours(NodeCosts(240_000, 1_000, math.inf, 36)) == 0.0  # cannot rent
    assert break_even_hours(NodeCosts(240_000, 1_000, 0.0, 36)) == math.inf  # renting is free


def test_own_the_base_and_rent_the_peak_by_the_hour() -> None:
    """Six months of DAY, no lead time. Own 2 nodes (break-even 11.5 h): month 0 pays
    2 × 240,000 + 2 × 1,000 and 8 h × 2 rented nodes = 16 node-hours, 16,000 × 16 ÷ 24 =
    10,666.67; then 12,666.67 a month. Renting everything: 56 node-hours a day, 16,000 × 56 ÷
    24 = 37,333.33 a month. Buying the peak: 4 × 240,000 + 4 × 1,000, nothing rented."""
    assert rented_node_hours(DAY, 2) == 16 and rented_node_hours(DAY, 4) == 0
    plans = schedule_plans([4] * 6, 0, COSTS, hours=[DAY] * 6)
    schedule, rent, up_front = plans["schedule"], plans["rent"], plans["up_front"]
    assert schedule.name == "own the base in tranches, rent the peak by the hour"
    assert schedule.orders == [(0, 2)] and schedule.owned == [2] * 6
    assert schedule.rented == [2] * 6  # at the busiest hour
    assert schedule.cash_usd[0] == pytest.approx(482_000 + 10_666.67, abs=0.01)
    assert schedule.cash_usd[1:] == pytest.approx([12_666.67] * 5, abs=0.01)
    assert rent.cash_usd == pytest.approx([37_333.33] * 6, abs=0.01)
    assert up_front.cash_usd == pytest.approx([964_000] + [4_000] * 5)


def test_a_flat_profile_changes_nothing() -> None:
    flat = schedule_plans(NODES, 3, COSTS, hours=[[n] * 24 for n in NODES])
    assert {k: p.cash_usd for k, p in flat.items()} == {
        k: p.cash_usd for k, p in schedule_plans(NODES, 3, COSTS).items()
    }


PROFILE = "[" + ", ".join(["0.25"] * 6 + ["0.5"] * 8 + ["1"] * 10) + "]"


@pytest.mark.parametrize(
    ("profile", "words"),
    [
        ("[" + ", ".join(["0.5"] * 24) + "]", ["largest value must be 1", "0.5"]),
        ("[" + ", ".join(["1"] * 23) + "]", ["daily_profile", "at least 24"]),
        ("[" + ", ".join(["1"] * 23 + ["0"]) + "]", ["daily_profile", "greater than 0"]),
    ],
)
def test_a_daily_profile_is_checked(tmp_path: Path, profile: str, words: list[str]) -> None:
    from planner.catalog import CatalogError

    folder = _seed_with(tmp_path, f"{{months: 3, daily_profile: {profile}}}")
    with pytest.raises(CatalogError) as caught:
        load_catalog(folder)
    text = str(caught.value)
    for word in ["workloads.yaml", "seed-4k", *words]:
        assert word in text, text


def _profiled(tmp_path: Path) -> Path:
    """The seed with traffic ×1, ×4, ×8, ×16 by month and a day of 6 hours at 25 %, 8 at 50 %
    and 10 at the peak; electricity priced so owning has a running cost; a 2-month lease at
    6 %."""
    folder = _seed_with(tmp_path, f"{{factors: [1, 4, 8, 16], daily_profile: {PROFILE}}}")
    assumptions = folder / "assumptions.yaml"
    assumptions.write_text(
        assumptions.read_text()
        + "  electricity_usd_per_kwh: 0.12\n  lease_rate_per_year: 0.06\n"
        + "  lease_term_months: 2\n"
    )
    return folder


def test_a_daily_profile_in_the_catalog(tmp_path: Path) -> None:
    """16 users × 16 at the peak hour with 16 per replica: 16 replicas, 2 nodes of 8; the
    quiet hours need 4 and 8 replicas: one node. A node of 8 devices costs 8 × 20,000 =
    160,000, runs for 8 × 300 W × 730 h × 0.12 USD/kWh = 210.24 a month and rents for 8 × 2 ×
    730 = 11,680. The break-even is 24 × (160,000 ÷ 36 + 210.24) ÷ 11,680 = 9.56 h: the second
    node, busy the 10 peak hours, is worth owning; with a peak of 9 hours it is rented for them
    (9 × 11,680 ÷ 24 = 4,380 a month)."""
    catalog = load_catalog(_profiled(tmp_path))
    (s,) = schedules(catalog, ask(catalog, evaluate(catalog).table))
    assert s.replicas == [1, 4, 8, 16] and s.node_devices == 8
    assert s.nodes == [1, 1, 1, 2] and s.base_nodes == [1, 1, 1, 1]
    assert s.hours[3] == [1] * 14 + [2] * 10
    assert s.costs == NodeCosts(160_000, pytest.approx(210.24), pytest.approx(11_680), 36)
    assert break_even_hours(s.costs) == pytest.approx(24 * (160_000 / 36 + 210.24) / 11_680)
    schedule = s.plans["schedule"]
    assert schedule.owned == [1, 1, 1, 2] and schedule.orders == [(0, 1), (3, 1)]
    assert schedule.cash_usd[3] == pytest.approx(160_000 + 2 * 210.24)
    shorter = [[1] * 15 + [2] * 9 if max(h) == 2 else h for h in s.hours]
    nine = schedule_plans(s.nodes, 0, s.costs, hours=shorter)["schedule"]
    assert nine.owned == [1, 1, 1, 1]
    assert nine.cash_usd[3] == pytest.approx(210.24 + 4_380)


def test_the_profiled_lease_and_payback(tmp_path: Path) -> None:
    """Nodes arrive in months 0 and 3; leased over 2 months at 6 % (0.5 % a month), each pays
    160,000 × 0.005 ÷ (1 − 1.005^−2) = 800 ÷ 0.0099256 = 80,600.50 a month: node 1 in months
    0–1, node 2 in month 3, so month 2 pays only the running 210.24, and one payment of node 2
    is still owed after month 3. Buying never gets back to renting's cumulative cost (160,210
    against 11,680 in month 0; 480,841 against 51,587 by month 3): no payback."""
    catalog = load_catalog(_profiled(tmp_path))
    (s,) = schedules(catalog, ask(catalog, evaluate(catalog).table))
    payment = 160_000 * 0.005 / (1 - 1.005**-2)
    assert payment == pytest.approx(80_600.50, abs=0.01)
    lease = s.plans["lease"]
    assert lease.cash_usd == pytest.approx(
        [payment + 210.24, payment + 210.24, 210.24, payment + 2 * 210.24]
    )
    assert lease.residual_usd == pytest.approx(-payment)
    assert s.payback_month() is None


@pytest.mark.parametrize(
    ("per_node", "tp", "peak_replicas", "devices"),
    [
        (8, 1, 2, 2),  # a fleet smaller than a node: a node of the peak's devices
        (8, 1, 16, 8),  # the peak fills nodes: full nodes
        (8, 2, 3, 6),
        (8, 4, 0, 4),  # no traffic: a replica's devices at least
        (4, 8, 1, 4),  # a replica spans nodes: full nodes
    ],
)
def test_node_devices(per_node: int, tp: int, peak_replicas: int, devices: int) -> None:
    row = pd.Series({"devices_per_node": per_node, "tensor_parallel": tp})
    assert node_devices(row, peak_replicas) == devices


def test_the_profiled_schedule_recomputes_in_both_engines(tmp_path: Path) -> None:
    """Every Schedule cell of the profiled seed, hourly nodes, nodes worth owning and rented
    node-hours included, recalculates to the planner's values in LibreOffice and Gnumeric."""
    from spreadsheet import ENGINES, computed_values, installed, recalculate_many
    from test_workbook import assert_sheets_equal, cached

    from planner.outputs.workbook import write_workbook

    catalog = load_catalog(_profiled(tmp_path))
    results = evaluate(catalog)
    found = schedules(catalog, ask(catalog, results.table))
    path = write_workbook(results, tmp_path / "profiled.xlsx", schedules=found)
    engines = [e for e in ENGINES if installed(e)]
    assert engines, "no spreadsheet engine installed"
    for engine in engines:
        (out,) = recalculate_many([path], tmp_path / engine, engine=engine)
        assert_sheets_equal(cached(path, "Schedule"), computed_values(out, "Schedule"))


def test_how_the_schedule_hangs_on_the_growth(tmp_path: Path) -> None:
    """10 % a month for 24 months: month 23 carries 1.1^23 = 8.95 × today's 16 users, 9
    replicas of 16, two nodes of 8 devices. Growth −20 % (8 %): 1.08^23 = 5.87, 6 replicas, one
    node (of 6 devices); +20 % (12 %): 1.12^23 = 13.55, 14 replicas, two nodes of 8."""
    from planner.plan.schedule import growth_cases

    catalog = load_catalog(_seed_with(tmp_path, "{months: 24, growth_per_month: 0.1}"))
    (found,) = schedules(catalog, ask(catalog, evaluate(catalog).table))
    cases = growth_cases(catalog, found, 0.2)
    assert [c.scale for c in cases] == [0.8, 1.0, 1.2]
    assert [c.peak_nodes for c in cases] == [1, 2, 2]
    assert cases[1].npv_usd == pytest.approx({k: found.npv_usd(k) for k in found.plans})
    assert found.replicas[-1] == 9 and found.node_devices == 8


def test_a_tabled_forecast_scales_its_rise(tmp_path: Path) -> None:
    """Factors 1, 1, 2, 2.5 with growth −20 %: 1, 1, 1.8, 2.2 (the rise over today × 0.8)."""
    from planner.plan.schedule import scaled_growth

    catalog = load_catalog(_seed_with(tmp_path, "{factors: [1, 1, 2, 2.5]}"))
    (found,) = schedules(catalog, ask(catalog, evaluate(catalog).table))
    forecast = found.workload.forecast
    assert forecast is not None
    lowered = scaled_growth(forecast, found.factors, 0.8)
    assert lowered.factors == pytest.approx([1, 1, 1.8, 2.2])


@pytest.mark.parametrize(
    ("nodes", "spares", "words"),
    [(3, 1, "targets hold"), (1, 0, "no service"), (4, 0, "short: 3 of 4 nodes")],
)
def test_what_one_node_down_leaves(nodes: int, spares: int, words: str) -> None:
    from planner.outputs.decision import node_down

    assert node_down(nodes, spares) == words


def test_a_schedule_counts_nodes_by_tranche_not_one_by_one() -> None:
    """A need of 1, 3, 3 and then 10¹² nodes, bought with no lead time at 240,000 USD a node
    and never rented (renting costs more): 1 node arrives in month 0, 2 in month 1 and
    10¹² − 3 in month 3, paid on arrival; the work does not grow with the node count."""
    nodes = [1, 3, 3, 10**12]
    started = time.monotonic()
    plans = schedule_plans(nodes, 0, COSTS)
    assert time.monotonic() - started < 1
    schedule = plans["schedule"]
    assert schedule.owned == [1, 3, 3, 10**12]
    assert schedule.orders == [(0, 1), (1, 2), (3, 10**12 - 3)]
    assert schedule.cash_usd[3] == pytest.approx((10**12 - 3) * 240_000 + 10**12 * 1_000)
    assert plans["up_front"].orders == [(0, 10**12)]
    assert plans["up_front"].owned == [10**12] * 4
