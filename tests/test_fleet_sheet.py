"""The Fleet sheet: the optimiser's counts as inputs, the load served, the holds and the cost as
live formulas, recalculated in LibreOffice and Gnumeric; an edited count is flagged and
checked."""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest
from spreadsheet import ENGINES, computed_values, installed, recalculate_many
from test_workbook import assert_sheets_equal, cached

from planner.catalog import load_catalog
from planner.model.fleet import CHOSEN, EDITED
from planner.outputs.workbook import write_workbook
from planner.plan.fleet import Demand, Fleet, NodeType, Option
from planner.plan.fleet_program import solve
from planner.plan.sweep import evaluate

SEED = Path(__file__).resolve().parent.parent / "catalogs" / "examples" / "seed"

#: H100s owned at 12,500 USD a device and 10,000 a node, or rented at 18,000 a device around
#: the clock (750 an hour of the day); B200s at 20,000 a device and 20,000 a node of 4.
TYPES = {
    "h100": NodeType("h100", 8, 12_500.0, 10_000.0, 18_000.0),
    "b200": NodeType("b200", 4, 20_000.0, 20_000.0),
}


def _fleet() -> Fleet:
    """A day workload (12 one-device replicas from 8 h to 19 h, 14 at 12 h and 13 h), a night
    one (12 from 20 h to 7 h) and a documents workload of two-device replicas on B200 that may
    send its noon overflow to the API: the test_fleet cases in one fleet."""
    day = tuple(14 if t in (12, 13) else 12 if 8 <= t <= 19 else 0 for t in range(24))
    night = tuple(0 if 8 <= t <= 19 else 12 for t in range(24))
    docs = tuple(3 if t == 12 else 2 for t in range(24))
    options = [
        Option("day", "h100", 1, 14, "day on h100", day),
        Option("night", "h100", 1, 12, "night on h100", night),
        Option("docs", "b200", 2, 3, "docs on b200", docs),
    ]
    profile = tuple(1.0 if t == 12 else 0.6 for t in range(24))
    return solve(options, TYPES, [Demand("docs", profile, 240_000.0)])


@pytest.fixture(scope="module")
def fleet_book(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Fleet]:
    folder = tmp_path_factory.mktemp("fleet")
    fleet = _fleet()
    return write_workbook(evaluate(load_catalog(SEED)), folder / "fleet.xlsx", fleet=fleet), fleet


def test_the_fleet_it_checks() -> None:
    """The fleet by hand: 12 H100s owned on 2 nodes (170,000 USD), the day's 2 extra devices
    rented for 2 hours (4 device-hours, 3,000), and docs on one B200 node (2 replicas of 2
    devices, 4 × 20,000 + 20,000) with a third of noon's load sent to the API: 240,000 × 1 ÷
    24 ÷ 3 = 3,333 USD, cheaper than a third replica on a second node (60,000)."""
    fleet = _fleet()
    assert fleet.owned_devices == {"h100": 12, "b200": 4}
    assert fleet.owned_nodes == {"h100": 2, "b200": 1}
    assert fleet.rented_device_hours("h100") == 4
    assert fleet.api_usd == pytest.approx(240_000 / 24 / 3, rel=1e-3)
    assert fleet.cost_usd == pytest.approx(170_000 + 3_000 + 100_000 + 240_000 / 72, rel=1e-6)


def test_the_sheet_shows_the_fleets_figures(fleet_book: tuple[Path, Fleet]) -> None:
    """The cached figures are the fleet's: its status, its cost (the formula's and the
    optimiser's), every workload served every hour, and each type's rented device-hours."""
    path, fleet = fleet_book
    rows = cached(path, "Fleet")
    assert rows[2][:2] == ["status", CHOSEN]
    assert rows[3][1] == pytest.approx(fleet.cost_usd) == rows[3][3]
    labels = [row[0] if row else None for row in rows]
    first = labels.index("share of the load nothing serves") + 1
    assert [rows[first + k][6 + 24 - 1] for k in range(3)] == [True, True, True]
    types = labels.index("h100", labels.index("Device types: what is owned, what is rented, "
                                              "whether it holds, what it costs"))  # fmt: skip
    assert rows[types][9] == 4 and rows[types + 1][9] == 0  # rented device-hours a day


@pytest.mark.parametrize("engine", ENGINES)
def test_the_fleet_sheet_recomputes(
    engine: str, fleet_book: tuple[Path, Fleet], tmp_path: Path
) -> None:
    """Every cell of the Fleet sheet recalculates to the planner's value."""
    assert installed(engine), f"{engine} is not installed"
    path, _ = fleet_book
    (out,) = recalculate_many([path], tmp_path, engine=engine)
    assert_sheets_equal(cached(path, "Fleet"), computed_values(out, "Fleet"))


def test_an_edited_count_is_flagged_and_checked(
    fleet_book: tuple[Path, Fleet], tmp_path: Path
) -> None:
    """One owned replica fewer for the day workload at noon leaves 1 ÷ 14 of that hour's load
    unserved, flags the fleet as edited and costs nothing less (the devices stay owned); one
    owned H100 fewer makes the owned devices too few and costs 12,500 USD less."""
    assert installed("libreoffice"), "libreoffice is not installed"
    path, fleet = fleet_book
    book = openpyxl.load_workbook(path)
    sheet = book["Fleet"]
    labels = [row[0].value for row in sheet.iter_rows(max_col=1)]
    owned = labels.index("Replicas on owned devices (input)") + 3  # title, header, first row
    assert sheet.cell(owned, 1).value == "day: day on h100"
    noon = 6 + 12
    sheet.cell(owned, noon).value = sheet.cell(owned, noon).value - 1
    types = labels.index("h100", labels.index("Device types: what is owned, what is rented, "
                                              "whether it holds, what it costs")) + 1  # fmt: skip
    sheet.cell(types, 7).value = 11
    edited = tmp_path / "edited.xlsx"
    book.save(edited)
    (out,) = recalculate_many([edited], tmp_path / "out")
    rows = computed_values(out, "Fleet")
    assert rows[2][1] == EDITED
    day = rows[labels.index("share of the load nothing serves") + 1]  # its first row
    assert day[0] == "day" and day[noon - 1] == pytest.approx(1 / 14)
    assert day[6 + 24 - 1] is False
    assert rows[types - 1][11] is False  # devices hold
    assert rows[3][1] == pytest.approx(fleet.cost_usd - 12_500)


def test_a_fleet_routed_by_length_recomputes(tmp_path: Path) -> None:
    """The documents workload routed by length (test_fleet's case: short prompts on 4 small
    devices, long ones on 1 large): a row per length class, each served by its own class's
    options and the whole mix's, recalculated alike in both engines."""
    from test_fleet import CLASSES, LARGE_SMALL, routed

    short = Option("docs", "small", 1, 4, "small, short prompts", part="docs-short")
    long = Option("docs", "large", 1, 1, "large, long prompts", part="docs-long")
    fleet = solve(routed(short, long), LARGE_SMALL, CLASSES)
    path = write_workbook(evaluate(load_catalog(SEED)), tmp_path / "routed.xlsx", fleet=fleet)
    rows = cached(path, "Fleet")
    assert rows[3][1] == pytest.approx(260)
    labels = [row[0] if row else None for row in rows]
    first = labels.index("share of the load nothing serves") + 1
    assert [rows[first + k][:5] for k in range(2)] == [
        ["docs-short", 1, None, 1, None],
        ["docs-long", 1, None, 2, None],
    ]
    assert [rows[first + k][6 + 24 - 1] for k in range(2)] == [True, True]
    for engine in ENGINES:
        assert installed(engine), f"{engine} is not installed"
        (out,) = recalculate_many([path], tmp_path / engine, engine=engine)
        assert_sheets_equal(rows, computed_values(out, "Fleet"))
