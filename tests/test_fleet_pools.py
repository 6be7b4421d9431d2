"""The shared fleet packs a disaggregated option whose pools are replicas of two sizes (or on
two device types) as an option per pool: the decode pool's carries the load, the prefill
pool's keeps pace with it hour by hour, and the Fleet sheet checks that pace with live
formulas."""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pytest
from spreadsheet import ENGINES, computed_values, recalculate_many, require
from test_workbook import assert_sheets_equal, cached

from planner.catalog import load_catalog
from planner.outputs.workbook import write_workbook
from planner.plan.fleet import DECODE_POOL, PREFILL_POOL, Fleet, NodeType, Option, pool_pairs
from planner.plan.fleet_program import solve
from planner.plan.sweep import evaluate

SEED = Path(__file__).resolve().parent.parent / "catalogs" / "examples" / "seed"

#: H100s owned at 12,500 USD a device and 10,000 a node of 8, or rented at 18,000 a device
#: around the clock.
TYPES = {"h100": NodeType("h100", 8, 12_500.0, 10_000.0, 18_000.0)}


def pools(
    decode: tuple[int, ...] = (), prefill: tuple[int, ...] = (), alone: tuple[int, int] = (3, 2)
) -> list[Option]:
    """The assistant's two-pool option on H100s: decode replicas of 4 devices (3 carry the
    load alone) and prefill replicas of 2 (2 keep pace), each by the hour where given; and one
    pool of 4-device replicas doing both, 6 of them."""
    pair = "h100|m|fp8|chat|4|pd|prefill-tp2"
    return [
        Option("chat", "h100", 4, alone[0], "pools, decode pool", decode, pool=DECODE_POOL,
               pair=pair),
        Option("chat", "h100", 2, alone[1], "pools, prefill pool", prefill, pool=PREFILL_POOL,
               pair=pair),
        Option("chat", "h100", 4, 6, "one pool"),
    ]  # fmt: skip


def test_the_pools_are_paired_and_only_the_decode_pool_serves() -> None:
    options = pools()
    assert pool_pairs(options) == [(1, 0)]
    assert options[0].serves("chat", "chat") and not options[1].serves("chat", "chat")
    assert options[1].holds_for("chat", "chat")


def test_the_fleet_of_two_pools_by_hand() -> None:
    """All day: 3 decode replicas × 4 devices + 2 prefill replicas × 2 = 16 devices on 2
    nodes, 16 × 12,500 + 2 × 10,000 = 220,000 USD; one pool would take 6 × 4 = 24 devices on
    3 nodes, 330,000. Without the prefill pool's pace the program would buy no prefill
    replica at all, since it carries no load of its own."""
    fleet = solve(pools(), TYPES)
    used = {o.label: hours for o, hours in fleet.replicas.items()}
    assert used == {"pools, decode pool": (3,) * 24, "pools, prefill pool": (2,) * 24}
    assert (fleet.owned_devices, fleet.owned_nodes) == ({"h100": 16}, {"h100": 2})
    assert fleet.cost_usd == pytest.approx(16 * 12_500 + 2 * 10_000)


def test_the_prefill_pool_keeps_pace_each_hour() -> None:
    """A day of 3 decode replicas (2 prefill) from 8 h to 19 h and 1 (1) at night: every hour
    the prefill replicas carry at least the decode replicas' share of the load."""
    day = tuple(3 if 8 <= t <= 19 else 1 for t in range(24))
    prompts = tuple(2 if 8 <= t <= 19 else 1 for t in range(24))
    options = pools(day, prompts)
    fleet = solve(options[:2], TYPES)
    decode, prefill = fleet.replicas[options[0]], fleet.replicas[options[1]]
    for t in range(24):
        assert prefill[t] / prompts[t] >= decode[t] / day[t] >= 1, t


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Fleet]:
    folder = tmp_path_factory.mktemp("pools")
    fleet = solve(pools(), TYPES)
    return write_workbook(evaluate(load_catalog(SEED)), folder / "pools.xlsx", fleet=fleet), fleet


def test_the_sheet_counts_no_load_for_the_prefill_pool(book: tuple[Path, Fleet]) -> None:
    """The prefill pool's part number is −1, which no demand has, so the assistant's load
    served is the decode pool's share alone (1 every hour); its pace row reads no shortfall."""
    rows = cached(book[0], "Fleet")
    mine = [r for r in rows if r and r[0] == "chat: pools, prefill pool"]
    assert len(mine) == 5 and all(r[4] == -1 for r in mine[:4])  # alone, owned, rented, share
    header = next(i for i, r in enumerate(rows) if r and r[0] == "share of the load served")
    served = rows[header + 1]
    assert served[0] == "chat"
    assert served[5 : 5 + 24] == [1.0] * 24
    assert mine[4][5 : 5 + 24] == [0.0] * 24 and mine[4][5 + 24] is True


@pytest.mark.parametrize("engine", ENGINES)
def test_the_sheet_with_two_pools_recomputes(
    book: tuple[Path, Fleet], tmp_path: Path, engine: str
) -> None:
    require(engine)
    (out,) = recalculate_many([book[0]], tmp_path, engine=engine)
    assert_sheets_equal(cached(book[0], "Fleet"), computed_values(out, "Fleet"))


def test_a_prefill_replica_taken_away_is_flagged(book: tuple[Path, Fleet], tmp_path: Path) -> None:
    """Finance takes a prefill replica away from the owned counts at noon: the pace row's noon
    cell shows the decode pool's share beyond the prefill pool's, 1 − 1/2 = 0.5, and it reads
    false."""
    require("libreoffice")
    wb = openpyxl.load_workbook(book[0])
    sheet = wb["Fleet"]
    at = [
        i + 1
        for i, r in enumerate(sheet.iter_rows(max_col=1))
        if r[0].value == "chat: pools, prefill pool"
    ]
    noon = 6 + 12
    sheet.cell(at[1], noon).value = 1  # owned: alone, owned, rented, share, pace
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)
    (out,) = recalculate_many([edited], tmp_path / "out")
    pace = computed_values(out, "Fleet")[at[4] - 1]
    assert pace[noon - 1] == pytest.approx(0.5)
    assert pace[5 + 24] is False
