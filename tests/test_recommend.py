"""The recommendation rule, computed once (:func:`planner.plan.recommend.rank`) and read everywhere.

Hand-built groups whose order is worked out by the rule in words: among eligible options the lowest
cost over the period wins; ties go to fewer devices, then the smaller shortfall from the safety
margin, then lower inter-token latency (a missing latency last), then the earlier row. The
workbook's Summary cache, the choice of what to simulate and the report read the same ranking; a
test holds them to it on the catalogs of the tests.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from planner.catalog import load_catalog
from planner.outputs import workbook
from planner.outputs.sections import featured
from planner.plan import recommend
from planner.plan.selection import select_candidates
from planner.plan.sweep import evaluate

NAN = float("nan")

#: One group "w|m" of seven rows, one group "v|m" of two ineligible rows, one "u|m" of a single
#: eligible row. Columns: eligible, tco_usd, devices_needed, itl_s.
ROWS = [
    ("w", True, 5.0, 1, 0.1),  # 0: dearest eligible
    ("w", True, 3.0, 2, NAN),  # 1: ties on cost with 2 and 3; 2 devices; no latency: last
    ("w", True, 3.0, 2, 0.2),  # 2: ties with 1 on cost and devices, lower latency than NaN
    ("w", True, 3.0, 1, 0.3),  # 3: fewest devices at the lowest cost: recommended
    ("w", False, 1.0, 1, 0.1),  # 4: cheapest, but not eligible
    ("v", False, 1.0, 1, 0.1),  # 5
    ("w", True, 3.0, 1, 0.3),  # 6: ties with 3 on every key: after it (later row)
    ("u", True, 7.5, 4, 0.1),  # 7: alone
    ("v", False, 2.0, 1, 0.1),  # 8
]


def table_of(rows: list[tuple]) -> pd.DataFrame:
    frame = pd.DataFrame(
        rows, columns=["workload", "eligible", "cost_usd", "devices_needed", "itl_load_s"]
    )
    frame.insert(1, "model", "m")
    if "margin_shortfall" not in frame:
        frame.insert(5, "margin_shortfall", 0.0)
    frame["status"] = np.where(frame["eligible"], "eligible", "cost: price missing")
    return frame


@pytest.mark.parametrize(
    ("position", "rank", "winner", "verdict"),
    [
        (3, 1, 3, "recommended: lowest cost over the period"),
        (6, 2, 3, "tied on cost, devices, margin and latency: later in the Plan"),
        (2, 3, 3, "same cost; more devices"),
        (1, 4, 3, "same cost; more devices"),
        (0, 5, 3, "cost: 2 USD more over the period"),
        (4, 0, -1, "cost: price missing"),
        (5, 0, -1, "cost: price missing"),
        (7, 1, 7, "recommended: lowest cost over the period"),
    ],
)
def test_rank_by_hand(position: int, rank: int, winner: int, verdict: str) -> None:
    table = table_of(ROWS)
    ranks = recommend.rank(table)
    assert ranks["rank"].iloc[position] == rank
    assert ranks["winner"].iloc[position] == winner
    assert recommend.verdicts(table, ranks)[position] == verdict


def test_ties_on_cost_and_devices_go_to_the_lower_latency() -> None:
    rows = [("w", True, 3.0, 2, NAN), ("w", True, 3.0, 2, 0.2), ("w", True, 3.0, 2, 0.1)]
    table = table_of(rows)
    assert recommend.rank(table)["rank"].tolist() == [3, 2, 1]
    verdicts = recommend.verdicts(table, recommend.rank(table))
    assert verdicts[0] == verdicts[1] == "same cost, devices and margin; higher inter-token latency"


def test_ties_on_cost_and_devices_go_to_the_option_that_keeps_its_margin() -> None:
    """Three options at the same cost on one device: 2 % headroom to a target (8 % short of a
    10 % margin) loses to 6 % (4 % short), which loses to one that keeps its margin, although
    the first has the lowest inter-token latency."""
    rows = [("w", True, 3.0, 1, 0.1), ("w", True, 3.0, 1, 0.2), ("w", True, 3.0, 1, 0.3)]
    table = table_of(rows)
    table["margin_shortfall"] = [0.10 - 0.02, 0.10 - 0.06, 0.0]
    assert recommend.rank(table)["rank"].tolist() == [3, 2, 1]
    verdicts = recommend.verdicts(table, recommend.rank(table))
    assert (
        verdicts[0] == verdicts[1] == "same cost and devices; less margin to a target or to memory"
    )


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (821.5, "cost: 822 USD more over the period"),  # half up, as the workbook's TEXT
        (822.49, "cost: 822 USD more over the period"),
        (0.5, "cost: 1 USD more over the period"),
        (37148.2, "cost: 37,148 USD more over the period"),
    ],
)
def test_cost_words_round_half_up(extra: float, words: str) -> None:
    assert recommend.cost_words(extra) == words


def test_recommendations_per_group() -> None:
    frame = recommend.recommendations(table_of(ROWS).assign(hardware="h", precision="p"))
    assert list(zip(frame["workload"], frame["options"], frame["eligible"], strict=True)) == [
        ("w", 6, 5),
        ("v", 2, 0),
        ("u", 1, 1),
    ]
    w, v, u = (frame.iloc[i] for i in range(3))
    assert (w["cost_usd"], w["devices_needed"], w["runner_up_cost_usd"]) == (3.0, 1, 3.0)
    assert pd.isna(v["hardware"]) and v["why_none"] == "2 × cost: price missing"
    assert u["cost_usd"] == 7.5 and pd.isna(u["runner_up_hardware"])


def test_ranking_twenty_thousand_rows_has_no_group_loop() -> None:
    """Correct at scale: 2,000 groups of 10, each row's rank from a sort done another way."""
    rng = np.random.default_rng(7)
    n = 20_000
    table = pd.DataFrame(
        {
            "workload": [f"w{i // 10 % 100}" for i in range(n)],
            "model": [f"m{i // 1000}" for i in range(n)],
            "eligible": rng.random(n) < 0.7,
            "cost_usd": rng.integers(1, 5, n).astype(float) * 1000,
            "devices_needed": rng.integers(1, 3, n).astype(float),
            "margin_shortfall": np.where(rng.random(n) < 0.5, 0.0, rng.random(n) / 10),
            "itl_load_s": np.where(rng.random(n) < 0.1, np.nan, rng.random(n)),
        }
    )
    ranks = recommend.rank(table)["rank"]
    expected = (
        table[table["eligible"]]
        .assign(_row=np.flatnonzero(table["eligible"]))
        .sort_values(
            ["cost_usd", "devices_needed", "margin_shortfall", "itl_load_s", "_row"],
            na_position="last",
        )
        .groupby(["workload", "model"], sort=False)
        .cumcount()
        + 1
    )
    assert (ranks[expected.index] == expected).all()
    assert (ranks[~table["eligible"]] == 0).all()


# One ranking read everywhere ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def catalogs(tmp_path_factory: pytest.TempPathFactory) -> list[pd.DataFrame]:
    """The plans of the seed, a priced seed with a second device, and the shipped catalogs."""
    from test_workbook import SEED, rich_catalog

    folder = tmp_path_factory.mktemp("ranking")
    rich = rich_catalog(folder / "rich")
    shipped = Path(__file__).resolve().parent.parent / "catalogs"
    copy = folder / "shipped"
    shutil.copytree(shipped, copy, ignore=shutil.ignore_patterns("examples"))
    return [evaluate(load_catalog(p)).table for p in (SEED, rich, copy)]


def test_the_summary_the_report_and_sizing_rank_as_recommend(catalogs: list[pd.DataFrame]) -> None:
    for table in catalogs:
        ranks = recommend.ranked(table)
        by_rank = {
            (r.workload, r.model, int(r.rank)): i
            for i, r in zip(range(len(ranks)), ranks.itertuples(), strict=True)
            if pd.notna(r.rank) and r.rank <= 2
        }
        # the workbook's Summary (its cached values and the rows its formulas look for)
        for group in workbook.recommendation_groups(table):
            for place, position in enumerate(group.best, start=1):
                assert by_rank[(*group.ids, place)] == position
        # the report's recommended and runner-up options
        shown = featured(ranks)
        for role, place in (("recommended", 1), ("runner-up", 2)):
            for label, row in shown[shown["role"] == role].iterrows():
                assert by_rank[(row["workload"], row["model"], place)] == ranks.index.get_loc(label)
        # what the simulation sizes: the closed-form-eligible leaders, by the same rule
        chosen = select_candidates(table, per_group=1)
        served = table["meets_targets"].astype(bool) & table["cost_usd"].notna()
        leaders = recommend.rank(table.assign(eligible=served))["rank"] == 1
        assert set(table.index[leaders]) <= set(chosen.index)
