"""One shared fleet at least cost, against figures worked by hand and a brute-force search."""

from __future__ import annotations

import itertools
import math
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.catalog import load_catalog
from planner.plan.fleet import Demand, NodeType, Option, plan_fleet, solve

EIGHT = {"h100": NodeType("h100", 8, 100_000.0)}


def seven_b(workload: str, replicas: int = 2, devices: int = 1) -> Option:
    return Option(workload, "h100", devices, replicas, f"{workload} on h100")


def test_two_small_workloads_share_one_node() -> None:
    """Two 7B workloads that each need 2 one-device replicas: 4 of a node's 8 devices. Alone,
    each buys a node (200,000 USD); shared, one node holds both (100,000 USD), with room for a
    third such workload; a fourth needing 4 devices brings it to 10 devices, two nodes."""
    two = [seven_b("chat"), seven_b("summaries")]
    fleet = solve(two, EIGHT)
    assert fleet.nodes == {"h100": 1} and fleet.cost_usd == 100_000
    assert fleet.alone_usd == 200_000 and fleet.saving_usd == 100_000
    assert fleet.peak_replicas == {two[0]: 2, two[1]: 2}
    three = [*two, seven_b("agent")]
    assert solve(three, EIGHT).nodes == {"h100": 1}
    four = [*three, seven_b("documents", replicas=2, devices=2)]
    assert solve(four, EIGHT).nodes == {"h100": 2}
    assert fleet.gap == 0


def test_replicas_pack_whole_onto_nodes() -> None:
    """Three 4-device replicas on nodes a rack powers 7 devices of: 12 devices, but each node
    holds one replica of 4 (4 + 4 > 7), so three nodes, not ⌈12 ÷ 7⌉ = 2."""
    seven = {"b200": NodeType("b200", 7, 1.0)}
    fleet = solve([Option("docs", "b200", 4, 3, "docs on b200")], seven)
    assert fleet.nodes == {"b200": 3}


def test_two_workloads_fill_each_others_nodes() -> None:
    """A workload needing 10 one-device replicas on H100 (nodes of 8 at 100,000 USD) or 4 on
    B200 (nodes of 8 at 200,000), beside another needing 6 H100s. Alone the first takes 2 H100
    nodes or 1 B200 node (200,000 either way) and the second one H100 node: 300,000. Shared,
    their 16 H100 devices fill 2 nodes: 200,000; the B200 route would cost 300,000."""
    types = {"h100": NodeType("h100", 8, 100_000.0), "b200": NodeType("b200", 8, 200_000.0)}
    options = [
        Option("first", "h100", 1, 10, "first on h100"),
        Option("first", "b200", 1, 4, "first on b200"),
        Option("second", "h100", 1, 6, "second on h100"),
    ]
    fleet = solve(options, types)
    assert fleet.cost_usd == 200_000 and fleet.nodes == {"h100": 2}
    assert fleet.alone_usd == 300_000


def brute_force(options: list[Option], types: dict[str, NodeType]) -> float:
    """The least cost over every count of replicas of every option up to its count alone."""
    best = math.inf
    workloads = {o.workload for o in options}
    for counts in itertools.product(*(range(o.replicas_alone + 1) for o in options)):
        share = {w: 0.0 for w in workloads}
        items: dict[str, list[int]] = {h: [] for h in types}
        for o, n in zip(options, counts, strict=True):
            share[o.workload] += n / o.replicas_alone
            items[o.hardware] += [o.devices] * n
        if min(share.values()) < 1 - 1e-9:
            continue
        cost = sum(len(first_fit(items[h], t.devices)) * t.owned_usd for h, t in types.items())
        best = min(best, cost)
    return best


def first_fit(sizes: list[int], capacity: int) -> list[int]:
    """Bins of ``capacity`` that first-fit decreasing fills with items of ``sizes``: the fewest
    where the sizes divide one another (Coffman, Garey and Johnson 1987)."""
    bins: list[int] = []
    for size in sorted(sizes, reverse=True):
        for k, used in enumerate(bins):
            if used + size <= capacity:
                bins[k] += size
                break
        else:
            bins.append(size)
    return bins


option = st.builds(
    Option,
    workload=st.sampled_from(["a", "b"]),
    hardware=st.sampled_from(["x", "y"]),
    devices=st.sampled_from([1, 2, 4]),
    replicas_alone=st.integers(1, 4),
    label=st.just(""),
)


@settings(max_examples=60, deadline=None)
@given(
    options=st.lists(option, min_size=1, max_size=4),
    x_cost=st.integers(1, 9),
    y_cost=st.integers(1, 9),
    y_devices=st.sampled_from([4, 6, 7, 8]),
)
def test_the_optimum_is_the_brute_force_one(
    options: list[Option], x_cost: int, y_cost: int, y_devices: int
) -> None:
    types = {"x": NodeType("x", 8, float(x_cost)), "y": NodeType("y", y_devices, float(y_cost))}
    options = list(dict.fromkeys(options))
    assert solve(options, types).cost_usd == pytest.approx(brute_force(options, types))


def test_the_shipped_portfolio_shares_its_nodes() -> None:
    """The shipped catalogs' four workloads, each served by the model deployment.yaml names:
    the shared fleet costs no more than the workloads alone, and it is found in well under 5 s
    (the plan's evaluation, in closed form here, not counted)."""
    from planner.plan.sweep import evaluate

    catalog = load_catalog(Path(__file__).parent.parent / "catalogs")
    table = evaluate(catalog).table
    models = {d.workload: d.model for d in catalog.deployment}
    start = time.perf_counter()
    fleet = plan_fleet(catalog, table, models)
    assert time.perf_counter() - start < 5
    assert fleet.cost_usd <= fleet.alone_usd
    served = {o.workload for o in fleet.replicas}
    assert served == set(models)


def peak(workload: str, hours: range, busy: int, quiet: int) -> Option:
    """One-device replicas on H100: ``busy`` of them in ``hours`` (past 23 h: the next day's),
    ``quiet`` the rest of the day."""
    hourly = tuple(busy if t in hours or t + 24 in hours else quiet for t in range(24))
    return Option(workload, "h100", 1, busy, f"{workload} on h100", hourly)


#: An 8-device node owned over the period for 100,000 USD, or rented around the clock over it
#: for 144,000 USD: 6,000 USD for each hour of the day it is rented. Owning pays from 16 hours
#: a day (24 × 100,000 ÷ 144,000).
OWN_OR_RENT = {"h100": NodeType("h100", 8, 100_000.0, 144_000.0)}


def test_peaks_twelve_hours_apart_share_an_owned_base() -> None:
    """A daytime workload needs 12 devices from 9 h to 14 h and 4 otherwise; a night one the
    same from 21 h to 2 h. Alone, each owns one node (busy all day) and rents a second for its
    6 peak hours: 100,000 + 6 × 6,000 = 136,000 USD, 272,000 for both. Shared, the 12 hours
    outside both peaks need 8 devices (one node, owned: busy 24 hours) and each peak 16 devices
    (a second node, busy 12 hours a day, under the 16 that owning needs: rented):
    100,000 + 12 × 6,000 = 172,000 USD."""
    day = peak("day", range(9, 15), 12, 4)
    night = peak("night", range(21, 27), 12, 4)  # 21 h to 2 h
    fleet = solve([day, night], OWN_OR_RENT)
    assert fleet.owned == {"h100": 1}
    assert fleet.rented_node_hours("h100") == 12
    assert fleet.cost_usd == pytest.approx(172_000)
    assert fleet.alone_usd == pytest.approx(272_000)
    assert fleet.nodes == {"h100": 2}


def test_overflow_goes_to_the_api_when_a_node_would_cost_more() -> None:
    """A workload needs 9 one-device replicas at noon and 8 the other 23 hours, its busiest
    hour's traffic all day costing 216,000 USD through the API over the period; nodes of 8 can
    only be bought, at 100,000. Two nodes cost 200,000; one node and the noon overflow to the
    API cost 100,000 + 1/9 of noon's load × 216,000 ÷ 24 = 101,000 USD, 1/9 of that hour's
    traffic, 1/9 ÷ (1 + 23 × 0.8) of the day's."""
    hourly = tuple(9 if t == 12 else 8 for t in range(24))
    option = Option("busy", "h100", 1, 9, "busy on h100", hourly)
    profile = tuple(1.0 if t == 12 else 0.8 for t in range(24))
    demand = Demand("busy", profile, 216_000.0)
    fleet = solve([option], EIGHT, [demand])
    assert fleet.owned == {"h100": 1}
    assert fleet.cost_usd == pytest.approx(101_000)
    assert fleet.api_share["busy"] == pytest.approx((1 / 9) / (1 + 23 * 0.8))
    assert solve([option], EIGHT).cost_usd == 200_000  # without the API


def test_a_spare_node_per_type_in_use() -> None:
    """N+1: two workloads of 4 one-device replicas fill one node; with a node kept spare the
    fleet owns two, where each alone owns two as well (four in all)."""
    two = [seven_b("chat", replicas=4), seven_b("summaries", replicas=4)]
    fleet = solve(two, EIGHT, spare_nodes=1)
    assert fleet.owned == {"h100": 2}
    assert fleet.alone_usd == 400_000
