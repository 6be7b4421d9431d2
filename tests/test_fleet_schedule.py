"""The shared fleet over the months of the forecasts, against figures worked by hand: the devices
worth owning in a month, a device type's months (orders, rent until they arrive, cash, book value,
net present value), the fleet's counts grown with the traffic, the API paid by the month; and the
shipped catalogs' fleet, whose first month agrees with the optimiser's."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest

from planner.catalog import load_catalog
from planner.plan.fleet import Demand, NodeType, Option
from planner.plan.fleet_program import solve
from planner.plan.fleet_schedule import (
    api_by_month,
    devices_worth_owning,
    fleet_schedule,
    grown_replicas,
    type_months,
)
from planner.plan.schedule import NodeCosts

REPO = Path(__file__).resolve().parent.parent

#: A device bought at 36,000 USD over 36 months (1,000 a month), nothing to run, rented at 2,400
#: a month around the clock: 100 USD a month for each hour of the day it is rented.
DEVICE = NodeCosts(36_000.0, 0.0, 2_400.0, 36)
#: No overhead for a node, and an overhead of 180,000 USD (5,000 a month).
FREE_NODE = NodeCosts(0.0, 0.0, 0.0, 36)
DEAR_NODE = NodeCosts(180_000.0, 0.0, 0.0, 36)

#: Four devices busy 12 hours a day, two the other 12.
HALF_DAY = [4] * 12 + [2] * 12


@pytest.mark.parametrize(
    ("node_devices", "spare_nodes", "node", "owned"),
    [
        # owning d costs 1,000 d a month, renting 100 an hour of each device beyond d:
        # d = 0: 100 × (12 × 4 + 12 × 2) = 7,200; 1: 1,000 + 4,800 = 5,800; 2: 2,000 + 2,400;
        # 3: 3,000 + 1,200; 4: 4,000, the least (each busy 12 hours, over the break-even 10)
        (8, 0, FREE_NODE, 4),
        # a node's 5,000 a month more: owning 4 costs 9,000, 3 costs 9,200, renting 7,200
        (8, 0, DEAR_NODE, 0),
        # one spare node of 2 devices once any is owned: 4 cost 6,000 (4 + 2 owned); 3 cost
        # 5,000 + 1,200; 2 cost 4,000 + 2,400; 1 costs 3,000 + 4,800; renting 7,200
        (2, 1, FREE_NODE, 4),
    ],
)
def test_the_devices_worth_owning(
    node_devices: int, spare_nodes: int, node: NodeCosts, owned: int
) -> None:
    assert devices_worth_owning(HALF_DAY, node_devices, spare_nodes, DEVICE, node) == owned


def test_the_optimisers_choice_is_the_devices_worth_owning() -> None:
    """The shared day and night workloads of the fleet tests (12 devices all day, 14 at
    noon's two hours), priced per month as the program prices them over 36: 12 devices owned
    on 2 nodes and 4 device-hours a day rented cost 173,000 USD over the period, the least."""
    device = NodeCosts(12_500.0, 0.0, 18_000.0 / 36, 36)
    node = NodeCosts(10_000.0, 0.0, 0.0, 36)
    day = [12] * 8 + [12] * 4 + [14] * 2 + [12] * 6 + [12] * 4
    assert devices_worth_owning(day, 8, 0, device, node) == 12


def test_a_device_types_months_by_hand() -> None:
    """Four devices needed all day for four months, nodes of 4; a device bought at 36,000 USD
    and run at 100 a month, a node's overhead 3,600 and 50 a month, a device rented at 2,400 a
    month; ordered a month ahead. Owning 4 costs 4 × 1,100 + 150 = 4,550 a month against
    9,600 renting: worth owning from month 0, ordered then, in service from month 1, rented
    meanwhile (96 device-hours a day, 9,600 USD). Month 1 pays 4 × 36,000 + 3,600 on arrival
    and 4 × 100 + 50 to run: 148,050; months 2 and 3, 450. At the end (month 4) the devices
    and node are 3 months old: worth 33/36 of their capital, 132,000 + 3,300. At no discount
    the net present value is 158,550 − 135,300 = 23,250; renting every hour, 4 × 9,600."""
    device = NodeCosts(36_000.0, 100.0, 2_400.0, 36)
    node = NodeCosts(3_600.0, 50.0, 0.0, 36)
    hours = [[4] * 24 for _ in range(4)]
    t = type_months("h100", hours, 4, 0, (device, node), 1, 0.0)
    assert t.worth_owning == [4, 4, 4, 4]
    assert t.owned_devices == [0, 4, 4, 4] and t.owned_nodes == [0, 1, 1, 1]
    assert t.rented_device_hours == [96, 0, 0, 0]
    assert t.cash_usd == pytest.approx([9_600, 148_050, 450, 450])
    assert t.book_value_usd == pytest.approx(135_300)
    assert t.npv_usd == pytest.approx(23_250)
    assert t.rent_everything_npv_usd == pytest.approx(38_400)
    assert t.orders == [(0, 1)]
    # leased over 2 months at no interest instead: 18,000 a device and 1,800 a node a month
    # in months 1 and 2 (4 × 18,000 + 1,800 + 450 = 74,250 each), nothing owed at the end
    t = type_months("h100", hours, 4, 0, (device, node), 1, 0.0, lease=(0.0, 2))
    assert t.table["fleet_lease_cash_usd"] == pytest.approx([9_600, 74_250, 74_250, 450])
    assert t.lease_npv_usd == pytest.approx(158_550) and t.npv_usd == pytest.approx(23_250)
    # at 12 % a year, month m's dollar is worth 1.12^(−m/12) today, the book value at the end
    # 1.12^(−4/12)
    t = type_months("h100", hours, 4, 0, (device, node), 1, 0.12)
    cash = [9_600, 148_050, 450, 450]
    expected = sum(c / 1.12 ** (m / 12) for m, c in enumerate(cash)) - 135_300 / 1.12 ** (4 / 12)
    assert t.npv_usd == pytest.approx(expected)


def test_spare_nodes_are_owned_with_the_first_device() -> None:
    """One spare node of 2 devices is kept once any device is owned; spares serve nothing, so
    the hours beyond the devices that serve are rented (the half-day above: 4 owned to serve,
    6 in all on 3 nodes, nothing rented)."""
    t = type_months("h100", [HALF_DAY], 2, 1, (DEVICE, FREE_NODE), 0, 0.0)
    assert t.owned_devices == [6] and t.owned_nodes == [3] and t.rented_device_hours == [0]


#: The fleet tests' overflow case: 9 one-device replicas at noon and 8 the other 23 hours, nodes
#: of 8 bought whole at 100,000 USD, the busiest hour's traffic all day 216,000 through the API.
#: The replicas are those of a forecast of 9 requests a second at noon and 80 % of it otherwise,
#: each replica serving one a second: ⌈9⌉ and ⌈7.2⌉.
RATE_INPUTS = (
    ("concurrency", 0.0),
    ("replica_capacity_sequences", 100.0),
    ("in_flight_requests", 0.0),
    ("forecast_requests_per_s", 9.0),
    ("requests_per_s_per_replica", 1.0),
    ("prefill_tokens_per_s_demanded", 0.0),
    ("prefill_tokens_per_s_per_replica", 1.0),
    ("prefill_pool_utilisation_limit", 1.0),
    ("disaggregated", 0.0),
    ("simulation_raise", 1.0),
)
PROFILE = tuple(1.0 if t == 12 else 0.8 for t in range(24))


def test_the_fleets_counts_grow_with_the_traffic() -> None:
    """Today the node holds 8 replicas all day and the API takes 1/9 of noon's traffic: at noon
    the replicas carry 8/9 of the load, in the other hours all of it. With the traffic doubled,
    18 replicas carry noon alone and ⌈14.4⌉ = 15 each other hour: the fleet needs ⌈8/9 × 18⌉ =
    16 at noon and 15 otherwise; the API still takes 1/9 of noon's traffic, twice as much. Its
    bill: 216,000 USD over 36 months for the busiest hour all day, 6,000 a month, × 1/9 of one
    hour's traffic in 24 = 27.78 a month today and 55.56 at twice the traffic."""
    hourly = tuple(9 if t == 12 else 8 for t in range(24))
    option = Option("busy", "h100", 1, 9, "busy on h100", hourly, inputs=RATE_INPUTS)
    whole = {"h100": NodeType("h100", 8, 0.0, 100_000.0)}
    fleet = solve([option], whole, [Demand("busy", PROFILE, 216_000.0)])
    assert fleet.replicas[option] == (8,) * 24
    grown = grown_replicas(fleet, {"busy": [1.0, 2.0]})
    assert grown[option][0].tolist() == [8] * 24
    assert grown[option][1].tolist() == [16 if t == 12 else 15 for t in range(24)]
    api = api_by_month(fleet, {"busy": [1.0, 2.0]}, 2, 36)
    assert api == pytest.approx([6_000 / 9 / 24, 2 * 6_000 / 9 / 24], rel=1e-3)


@pytest.fixture(scope="module")
def shipped() -> tuple[Any, Any, Any]:
    from planner.outputs.outlook import outlook
    from planner.plan.sweep import evaluate

    catalog = load_catalog(REPO / "catalogs")
    results = evaluate(catalog)
    return catalog, outlook(catalog, results.table), results


def test_the_shipped_fleet_over_the_months(shipped: tuple[Any, Any, Any]) -> None:
    """The shipped assistant's forecast grows 6 % a month for 24 months; the fleet's first month
    owns, type by type, what the optimiser owns (its spares included), its replicas grow to
    between 3.5 and 3.9 × today's (1.06^23 = 3.82, rounded up per hour), and with nothing
    saved by sharing today each workload's fleet alone costs the same over the months."""
    catalog, derived, _ = shipped
    found = derived.fleet_months
    fleet = derived.fleet
    assert found is not None and found.months == 24
    for t in found.types:
        first = t.worth_owning[0] + (t.spare_nodes * t.node_devices if t.worth_owning[0] else 0)
        assert first == fleet.owned_devices.get(t.hardware, 0)
    (chat,) = [o for o in found.replicas if o.workload == "chat"]
    growth = found.replicas[chat][-1].max() / found.replicas[chat][0].max()
    assert 3.5 <= growth <= 3.9 and found.factors["chat"][-1] == pytest.approx(1.06**23)
    assert fleet.saving_usd < 1
    assert found.alone_npv_usd == pytest.approx(found.npv_usd, rel=1e-9)
    assert found.npv_usd < found.rent_everything_npv_usd
    # what the optimiser owns today is ordered in month 0, to arrive after the lead time
    for t in found.types:
        nodes = fleet.owned_nodes.get(t.hardware, 0)
        assert t.orders[:1] == ([(0, nodes)] if nodes else [])
    from planner.outputs.sharing import schedule_summary

    b200 = catalog.get("hardware", "b200-180gb").label
    assert f"orders: {b200} month 0: 1 node." in schedule_summary(found, catalog)
    data = json.loads(json.dumps(found.to_json(), allow_nan=False))
    assert data["months"] == 24 and len(data["device_types"]) == len(found.types)


def test_no_schedule_without_a_forecast(shipped: tuple[Any, Any, Any]) -> None:
    """A fleet none of whose workloads has a forecast has no months ahead."""
    catalog, derived, _ = shipped
    bare = dataclasses.replace(
        catalog,
        workloads=tuple(w.model_copy(update={"forecast": None}) for w in catalog.workloads),
    )
    assert fleet_schedule(bare, None, derived.fleet) is None
    assert math.isfinite(derived.fleet_months.npv_usd)


@pytest.fixture(scope="module")
def months_book(shipped: tuple[Any, Any, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped fleet's months on the Fleet months sheet of a small workbook: the seed's
    results under the shipped assumptions (the sheet reads their named cells: amortisation,
    PUE), so that recalculating it takes seconds."""
    import shutil

    from planner.outputs.workbook import write_workbook
    from planner.plan.sweep import evaluate

    _, derived, _ = shipped
    folder = tmp_path_factory.mktemp("months")
    shutil.copytree(REPO / "catalogs" / "examples" / "seed", folder / "seed")
    shutil.copy(REPO / "catalogs" / "assumptions.yaml", folder / "seed" / "assumptions.yaml")
    results = evaluate(load_catalog(folder / "seed"))
    return write_workbook(results, folder / "months.xlsx", fleet_months=derived.fleet_months)


def _block_rows(rows: list[list[Any]], hardware: str) -> tuple[int, dict[str, int]]:
    """The first month row of a type's block and the row of each of its inputs and totals."""
    labels = [row[0] if row else None for row in rows]
    title = labels.index(f"{hardware}: devices owned and rented by month")
    header = labels.index("month", title)
    at: dict[str, int] = {}
    for i, label in enumerate(labels[title + 1 :], start=title + 1):
        if isinstance(label, str):
            at.setdefault(label, i)
    return header + 1, at


def test_the_months_sheet_shows_the_planners_figures(
    shipped: tuple[Any, Any, Any], months_book: Path
) -> None:
    """The cached figures are the fleet schedule's: each type's owned devices month by month,
    its net present value, and the fleet's with the API's share."""
    from test_workbook import cached

    _, derived, _ = shipped
    rows = cached(months_book, "Fleet months")
    for t in derived.fleet_months.types:
        first, at = _block_rows(rows, t.hardware)
        owned = [rows[first + m][3] for m in range(24)]
        assert owned == t.owned_devices
        assert rows[at["fleet_npv_usd"]][1] == pytest.approx(t.npv_usd)
    labels = [row[0] if row else None for row in rows]
    total = rows[labels.index("fleet_months_npv_usd")][1]
    assert total == pytest.approx(derived.fleet_months.npv_usd)


@pytest.mark.parametrize("engine", ["libreoffice", "gnumeric"])
def test_the_months_sheet_recomputes(engine: str, months_book: Path, tmp_path: Path) -> None:
    """Every cell of the Fleet months sheet recalculates to the planner's value."""
    from spreadsheet import computed_values, installed, recalculate_many
    from test_workbook import assert_sheets_equal, cached

    assert installed(engine), f"{engine} is not installed"
    (out,) = recalculate_many([months_book], tmp_path, engine=engine)
    assert_sheets_equal(cached(months_book, "Fleet months"), computed_values(out, "Fleet months"))


def test_an_edited_lead_time_recomputes_the_months(
    shipped: tuple[Any, Any, Any], months_book: Path, tmp_path: Path
) -> None:
    """Finance types a lead time of 0 months for the B200s: the devices are owned from month 0,
    as the planner's own months at that lead time say, and the type's net present value
    follows."""
    import openpyxl
    from spreadsheet import computed_values, installed, recalculate_many

    assert installed("libreoffice"), "libreoffice is not installed"
    _, derived, _ = shipped
    (t,) = [t for t in derived.fleet_months.types if t.owned_devices[-1]]
    book = openpyxl.load_workbook(months_book)
    sheet = book["Fleet months"]
    labels = [row[0].value for row in sheet.iter_rows(max_col=1)]
    title = labels.index(f"{t.hardware}: devices owned and rented by month")
    sheet.cell(labels.index("lead_time_months", title) + 1, 2).value = 0
    edited = tmp_path / "edited.xlsx"
    book.save(edited)
    (out,) = recalculate_many([edited], tmp_path / "out")
    rows = computed_values(out, "Fleet months")
    first, at = _block_rows(rows, t.hardware)
    b = t.block
    device = NodeCosts(b["device_capital_usd"], b["device_running_usd_per_month"],
                       b["device_rent_usd_per_month"], b["amortisation_months"])  # fmt: skip
    node = NodeCosts(b["overhead_capital_usd"], b["overhead_running_usd_per_month"], 0.0,
                     b["amortisation_months"])  # fmt: skip
    at_once = type_months(t.hardware, t.hours, t.node_devices, t.spare_nodes, (device, node), 0,
                          b["discount_rate_per_year"])  # fmt: skip
    assert [rows[first + m][3] for m in range(24)] == at_once.owned_devices
    assert at_once.owned_devices[0] == t.owned_devices[-1] > 0
    assert rows[at["fleet_npv_usd"]][1] == pytest.approx(at_once.npv_usd)
    assert at_once.npv_usd != pytest.approx(t.npv_usd)


def test_page_one_leads_with_a_fleet_that_saves(
    shipped: tuple[Any, Any, Any], tmp_path: Path
) -> None:
    """Where sharing saves, page 1's ask is the shared fleet, with the per-workload lines after
    it as each workload alone: the fleet tests' two workloads of 2 one-device replicas on
    one node of 8 H100s (4 × 30,000 + 40,000 = 160,000 USD) against a node each (200,000). Where
    it saves nothing (the shipped fleet), page 1's ask stays the per-workload lines."""
    import pypdf

    from planner.outputs.report import context, html_from_context, write_pdf
    from planner.outputs.sharing import fleet_context

    catalog, derived, results = shipped
    h100 = "h100-sxm-80gb"
    two = [Option(w, h100, 1, 2, f"{w} on {h100}") for w in ("chat", "agent")]
    fleet = solve(two, {h100: NodeType(h100, 8, 30_000.0, 40_000.0)})
    values = context(catalog, results, derived=derived)
    assert not values["fleet"]["leads"]
    values["fleet"] = fleet_context(fleet, derived.plan, catalog) | {"later": "", "months": {}}
    pdf = tmp_path / "report.pdf"
    write_pdf(html_from_context(values), pdf)
    first = " ".join(pypdf.PdfReader(pdf).pages[0].extract_text().split())
    assert "The ask: one shared fleet" in first and "Each workload alone" in first
    assert first.index("one shared fleet") < first.index("Each workload alone")
    assert (
        "Total: 160,000 USD over 36 months, 40,000 less than each workload on devices of its "
        "own (200,000)" in first
    )
    assert "4 devices on 1 node" in first
