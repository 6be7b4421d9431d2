"""The one rule for the option that comes closest where none is eligible
(planner.plan.selection.closest), on rows worked by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from planner.outputs.sections import CLOSEST, featured
from planner.plan import recommend
from planner.plan.selection import (
    closest,
    contenders,
    deciding,
    screened,
    select_candidates,
    simulable,
    unsimulated_leaders,
)

NAN = math.nan


def _rows(spec: list[tuple]) -> pd.DataFrame:
    """One row per (name, model, fits, targets missed, cost, devices, shortfall, ITL): the
    missed targets are the first of TTFT, ITL, end-to-end and task, none eligible."""
    names = ["meets_ttft_target", "meets_itl_target", "meets_e2e_target", "meets_task_target"]
    rows = []
    for name, model, fits, missed, cost, devices, shortfall, itl in spec:
        rows.append(
            {
                "name": name,
                "workload": "chat",
                "model": model,
                "replica_fits": fits,
                **{n: i >= missed for i, n in enumerate(names)},
                "meets_targets": missed == 0,
                "cost_usd": cost,
                "devices_needed": devices,
                "margin_shortfall": shortfall,
                "itl_load_s": itl,
                "eligible": False,
            }
        )
    return pd.DataFrame(rows)


# Group m1, by hand: "a" does not fit (out, cheapest as it is); "b" misses 2 targets, every
# other fitting row 1, so "b" comes last; among those missing one: cost 20 before 30 before the
# unknown cost; at cost 20, 2 devices before 4; at 20 and 4 devices, shortfall 0 before 0.1;
# "h" and "i" tie on every key, so plan order. Group m2: no replica fits, nothing shown.
TABLE = _rows(
    [
        ("a", "m1", False, 1, 1.0, 1, 0.0, 0.01),
        ("b", "m1", True, 2, 10.0, 1, 0.0, 0.01),
        ("c", "m1", True, 1, 30.0, 1, 0.0, 0.01),
        ("d", "m1", True, 1, 20.0, 4, 0.1, 0.01),
        ("e", "m1", True, 1, 20.0, 2, 0.0, 0.05),
        ("f", "m1", True, 1, NAN, 1, 0.0, 0.01),
        ("g", "m1", True, 1, 20.0, 4, 0.0, 0.09),
        ("m", "m2", False, 1, 5.0, 1, 0.0, 0.01),
        ("h", "m3", True, 1, 7.0, 1, 0.0, 0.02),
        ("i", "m3", True, 1, 7.0, 1, 0.0, 0.02),
        ("j", "m3", True, 1, 7.0, 1, 0.0, 0.01),
    ]
)


@pytest.mark.parametrize(
    ("per_group", "expected"),
    [
        (1, ["e", "j"]),
        (2, ["e", "g", "j", "h"]),
        (10, ["e", "g", "d", "c", "f", "b", "j", "h", "i"]),
    ],
)
def test_closest(per_group, expected):
    assert closest(TABLE, per_group)["name"].tolist() == expected


def test_closest_keeps_the_index_and_nothing_when_nothing_fits():
    assert list(closest(TABLE, 1).index) == [4, 10]
    assert closest(TABLE[TABLE["model"] == "m2"]).empty


def test_the_report_and_the_simulation_take_the_same_closest_option():
    """With nothing eligible anywhere, the report shows each group's closest option and the
    simulation sizes it (with the runners-up of the same rule)."""
    shown = featured(recommend.ranked(TABLE))
    assert shown["name"].tolist() == ["e", "j"]
    assert set(shown["role"]) == {CLOSEST}
    assert select_candidates(TABLE, per_group=2)["name"].tolist() == ["e", "g", "j", "h"]


def test_only_the_groups_that_decide_the_ask_are_searched():
    """deployment.yaml names m3 for chat: m1's group is sized at its first option only (e), m3's
    at every option chosen (j, h); a workload it names nothing for (docs) decides by any
    model."""
    chosen = select_candidates(TABLE, per_group=2)
    assert screened(chosen, {"chat": "m3"})["name"].tolist() == ["e", "j", "h"]
    assert screened(chosen, {"chat": "m3"}, others=2)["name"].tolist() == ["e", "g", "j", "h"]
    assert screened(chosen, {"docs": "m3"})["name"].tolist() == ["e", "g", "j", "h"]
    assert deciding(TABLE, {"chat": "m1"}).tolist() == [True] * 7 + [False] * 4


def test_an_expert_parallel_leader_planned_in_closed_form_is_not_sent_to_the_simulation():
    """Ranked first, an expert-parallel option whose all-to-all is hidden under its arithmetic
    (planned in closed form only) is passed over: the group's best simulable option, simulated
    already, settles it; unsimulated, it is picked. With its all-to-all added, the
    expert-parallel option is simulated like any other, in disaggregated pools too (open loop)."""
    ranks = pd.DataFrame(
        {
            "workload": ["chat"] * 3,
            "model": ["m"] * 3,
            "rank": [1.0, 2.0, 3.0],
            "expert_parallel": [8, 1, 1],
            "expert_alltoall_hidden": [True, False, False],
            "simulated": [False, True, False],
            "ruled_out_by": ["", "", "latency"],
            "cost_usd": [1.0, 2.0, 0.5],
            "ttft_p95_target_s": [NAN] * 3,
            "ttft_s": [0.1] * 3,
        }
    )
    assert unsimulated_leaders(ranks, 3).empty
    second_unsimulated = ranks.assign(simulated=[False, False, False])
    assert list(unsimulated_leaders(second_unsimulated, 3)["rank"]) == [2.0, 3.0]
    added = ranks.assign(expert_alltoall_hidden=[False] * 3)
    assert list(unsimulated_leaders(added, 3)["rank"]) == [1.0]
    ep_contender = ranks.assign(
        expert_parallel=[1, 1, 8], expert_alltoall_hidden=[False, False, True], rank=[1.0, 2.0, NAN]
    )
    assert list(simulable(ep_contender)) == [True, True, False]
    assert contenders(ep_contender).empty
    pooled = added.assign(disaggregated=[1, 0, 0])
    assert list(simulable(pooled)) == [True, True, True]
    assert list(simulable(pooled.assign(concurrency=[64] * 3))) == [False, True, True]
