"""The schedule's finance as metrics of the formula layer: one definition gives the planner's
value and the Schedule sheet's formula.

The profiled seed of ``test_schedule`` (traffic ×1, ×4, ×8, ×16 by month, a daily profile, a
2-month lease at 6 %) is the worked case: its sheet is written from :mod:`planner.model.finance`
and, with one metric's definition edited, written again.
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import openpyxl
import pytest
from test_schedule import _profiled

from planner.catalog import load_catalog
from planner.model import finance
from planner.model.expr import (
    Ref,
    greatest,
    largest,
    least,
    pick,
    sum_product,
    to_excel,
    total,
    where,
)
from planner.outputs.workbook import write_workbook
from planner.outputs.workbook.schedule import MONTH_COLUMNS, TOTALS
from planner.plan.deployment import ask
from planner.plan.schedule import schedules
from planner.plan.sweep import evaluate

DAY = [4] * 8 + [2] * 8 + [1] * 8


@pytest.mark.parametrize(
    ("func", "args", "expected", "formula"),
    [
        (total, (DAY,), 56, "SUM(r)"),
        (greatest, (DAY,), 4, "MAX(r)"),
        (least, (DAY,), 1, "MIN(r)"),
        (largest, (DAY, 9), 2, "LARGE(r,k)"),  # 8 hours of 4, then 2
        (largest, (DAY, 25), math.nan, "LARGE(r,k)"),  # past the range: #NUM!
        (pick, ([5, 6, 7], 2), 6, "INDEX(r,k)"),
        (pick, ([5, 6, 7], 0), math.nan, "INDEX(r,k)"),  # before the range: #REF!
        (sum_product, ([1, 2, 3], [4, 5, 6]), 32, "SUMPRODUCT(r,k)"),
    ],
)
def test_range_functions_compute_and_render(func, args, expected, formula) -> None:
    got = func(*args)
    assert got == expected or (math.isnan(expected) and math.isnan(got))
    symbols = (Ref("r"), Ref("k"))[: len(args)]
    assert to_excel(func(*symbols), lambda n: n) == "=" + formula


def test_a_number_or_a_text_stays_what_it_is() -> None:
    """A payback month or "none": the branch chosen, not numpy's common type ('3')."""
    assert where(True, 3.0, "none") == 3.0 and where(False, 3.0, "none") == "none"


def test_every_schedule_metric_traces_with_a_description_and_unit() -> None:
    registry = finance.schedule_metrics()
    for name, m in registry.items():
        assert m.description and m.unit is not None, name
        assert m.formula_text(), name
    laid_out = {name for name, _ in MONTH_COLUMNS if name != "month"}
    laid_out |= {metric for _, _, metric in TOTALS}
    assert laid_out | {"hour_nodes"} <= set(registry)
    evaluated = set(finance.MONTH_FINANCE + finance.LEASE_MONTHS + finance.HORIZON)
    assert evaluated | set(finance.LEASE_HORIZON) <= set(registry)


@pytest.mark.parametrize(
    ("name", "values", "expected"),
    [
        # 24 × (160,000 ÷ 36 + 210.24) ÷ 11,680
        ("break_even_hours_per_day", {"node_owned_usd_per_month": 4654.68,
                                      "node_rent_usd_per_month": 11_680}, 9.5644),
        ("break_even_hours_per_day", {"node_owned_usd_per_month": 4654.68,
                                      "node_rent_usd_per_month": 0}, 24),  # renting is free
        ("nodes_worth_owning", {"hourly_nodes": DAY, "break_even_hours_per_day": 11.5}, 2),
        ("rented_node_hours_per_day", {"hourly_nodes": DAY, "nodes_owned": 2}, 16),
        ("lease_payment_usd_per_month", {"node_capital_usd": 160_000, "lease_rate_per_year": 0.06,
                                         "lease_term_months": 2}, 80_600.50),
        ("payback_month", {"stays_at_or_below_rent_all": [0, 0, 0, 1, 1], "months": 5}, 3),
        ("payback_month", {"stays_at_or_below_rent_all": [1, 1, 1], "months": 3}, "none"),
        ("payback_month", {"stays_at_or_below_rent_all": [0, 0, 0], "months": 3}, "none"),
    ],
)  # fmt: skip
def test_schedule_metrics_by_hand(name: str, values: dict[str, Any], expected: Any) -> None:
    got = finance.value(name, values)
    assert got == (expected if isinstance(expected, str) else pytest.approx(expected, abs=0.01))


def test_a_count_of_nothing_costs_nothing_at_an_unknown_price() -> None:
    """No node arrives and none is rented: no capital or rent, though both prices are unknown."""
    values = {"nodes_arriving": 0, "node_capital_usd": math.inf, "nodes_owned": 2,
              "node_running_usd_per_month": 100.0, "rented_node_hours_per_day": 0,
              "node_rent_usd_per_month": math.inf}  # fmt: skip
    assert finance.value("cash_usd", values) == 200.0


def _write(tmp_path: Path, name: str) -> Path:
    catalog = load_catalog(_profiled(tmp_path / name))
    results = evaluate(catalog)
    found = schedules(catalog, ask(catalog, results.table))
    return write_workbook(results, tmp_path / f"{name}.xlsx", schedules=found)


def _column(path: Path, header: str) -> list[Any]:
    """The formulas (or values) of a month column of the first block."""
    sheet = openpyxl.load_workbook(path)["Schedule"]
    rows = list(sheet.iter_rows(values_only=True))
    start = next(i for i, row in enumerate(rows) if row[0] == "month")
    column = rows[start].index(header)
    return [row[column] for row in rows[start + 1 :] if isinstance(row[0], int)]


def simple_discount(discount_rate_per_year: Any, month: Any) -> Any:
    """Simple interest instead of compound: 1 ÷ (1 + r × month ÷ 12) [-]."""
    return 1 / (1 + discount_rate_per_year * month / 12)


def test_editing_a_metric_changes_the_sheet_and_the_planner_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The discount factor's definition, edited to simple interest: the Schedule sheet's
    discount column is the edited formula over the same cells, the planner's net present
    values follow it, and the sheet recalculates to them."""
    before = _write(tmp_path, "compound")
    assert _column(before, "discount_factor")[1] == "=1/POWER(1+$B$5,A20/12)"
    edited = dataclasses.replace(
        finance.schedule_metrics()["discount_factor"], func=simple_discount
    )
    monkeypatch.setitem(finance.SCHEDULE, "discount_factor", edited)
    after = _write(tmp_path, "simple")
    formulas = _column(after, "discount_factor")
    assert formulas[1] == "=1/(1+$B$5*A20/12)"
    assert all(re.fullmatch(r"=1/\(1\+\$B\$5\*A\d+/12\)", f) for f in formulas)
    catalog = load_catalog(_profiled(tmp_path / "again"))
    (s,) = schedules(catalog, ask(catalog, evaluate(catalog).table))
    rate = s.discount_rate_per_year
    assert s.table["discount_factor"] == pytest.approx([1 / (1 + rate * m / 12) for m in range(4)])
    assert s.npv_usd("rent") == pytest.approx(
        float(np.dot(s.plans["rent"].cash_usd, s.table["discount_factor"]))
    )
    from spreadsheet import computed_values, installed, recalculate_many
    from test_workbook import assert_sheets_equal, cached

    if not installed("libreoffice"):
        pytest.skip("LibreOffice is not installed")
    (out,) = recalculate_many([after], tmp_path / "recalculated")
    assert_sheets_equal(cached(after, "Schedule"), computed_values(out, "Schedule"))
