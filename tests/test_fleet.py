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
from planner.plan.fleet import Demand, NodeType, Option, holds, one_node_down
from planner.plan.fleet_program import solve
from planner.plan.portfolio import fleet_at_horizon, horizon_growth, plan_fleet

#: Nodes of 8 H100s, each device 30,000 USD over the period and each node 40,000 beyond its
#: devices (chassis, processors, network), owned only.
EIGHT = {"h100": NodeType("h100", 8, 30_000.0, 40_000.0)}

#: Nodes of 8 H100s bought whole at 100,000 USD over the period.
WHOLE = {"h100": NodeType("h100", 8, 0.0, 100_000.0)}


def seven_b(workload: str, replicas: int = 2, devices: int = 1) -> Option:
    return Option(workload, "h100", devices, replicas, f"{workload} on h100")


@pytest.mark.parametrize(
    ("replicas", "cost_usd", "alone_usd", "nodes"),
    [
        # two 7B workloads of 2 one-device replicas: 4 devices on one node (4 × 30,000 +
        # 40,000), where each alone pays a node of its own (2 × (2 × 30,000 + 40,000))
        ([(2, 1), (2, 1)], 160_000, 200_000, 1),
        # a third fits the same node: 6 × 30,000 + 40,000
        ([(2, 1), (2, 1), (2, 1)], 220_000, 300_000, 1),
        # a fourth of 2 two-device replicas: 10 devices, 2 nodes (10 × 30,000 + 2 × 40,000);
        # alone it pays 4 × 30,000 + 40,000
        ([(2, 1), (2, 1), (2, 1), (2, 2)], 380_000, 460_000, 2),
    ],
)
def test_small_workloads_share_a_node(
    replicas: list[tuple[int, int]], cost_usd: float, alone_usd: float, nodes: int
) -> None:
    options = [seven_b(f"w{i}", n, d) for i, (n, d) in enumerate(replicas)]
    fleet = solve(options, EIGHT)
    # no spare asked: a node down leaves the replicas on it without a place (the fourth case's
    # two nodes hold 10 devices; one of them holds no more than 8)
    assert one_node_down(fleet) == {"h100": [o.workload for o in options]}
    assert fleet.cost_usd == pytest.approx(cost_usd)
    assert fleet.alone_usd == pytest.approx(alone_usd)
    assert fleet.owned_nodes == {"h100": nodes}
    assert fleet.peak_replicas == {o: o.replicas_alone for o in options}
    assert fleet.gap == 0


def test_replicas_pack_whole_onto_nodes() -> None:
    """Three 4-device replicas on nodes a rack powers 7 devices of: 12 devices, but each node
    holds one replica of 4 (4 + 4 > 7), so three nodes, not ⌈12 ÷ 7⌉ = 2."""
    seven = {"b200": NodeType("b200", 7, 0.0, 1.0)}
    fleet = solve([Option("docs", "b200", 4, 3, "docs on b200")], seven)
    assert fleet.owned_nodes == {"b200": 3}


def test_two_workloads_fill_each_others_nodes() -> None:
    """A workload needing 10 one-device replicas on H100 (whole nodes of 8 at 100,000 USD) or
    4 on B200 (whole nodes of 8 at 200,000), beside another needing 6 H100s. Alone the first
    takes 2 H100 nodes or 1 B200 node (200,000 either way) and the second one H100 node:
    300,000. Shared, their 16 H100 devices fill 2 nodes: 200,000; the B200 route would cost
    300,000."""
    types = WHOLE | {"b200": NodeType("b200", 8, 0.0, 200_000.0)}
    options = [
        Option("first", "h100", 1, 10, "first on h100"),
        Option("first", "b200", 1, 4, "first on b200"),
        Option("second", "h100", 1, 6, "second on h100"),
    ]
    fleet = solve(options, types)
    assert fleet.cost_usd == 200_000 and fleet.owned_nodes == {"h100": 2}
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
        cost = sum(
            sum(items[h]) * t.device_usd + len(first_fit(items[h], t.devices)) * t.node_usd
            for h, t in types.items()
        )
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
    types = {
        "x": NodeType("x", 8, float(x_cost), 10.0),
        "y": NodeType("y", y_devices, 1.0, float(y_cost)),
    }
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
    assert fleet.cost_usd <= fleet.alone_usd * (1 + 1e-9)  # to within the solver's tolerance
    served = {o.workload for o in fleet.replicas} | set(fleet.api_share)
    assert served == set(models)
    # the chat forecast grows 6 % a month for 24 months: month 23 carries 1.06^23 = 3.82 ×
    # today's traffic, the other workloads (no forecast) today's
    month, growth = horizon_growth(catalog, list(models))
    assert month == 23 and growth == {"chat": pytest.approx(1.06**23)}
    later = fleet_at_horizon(catalog, table, models)
    assert later is not None and later[0] == 23 and not isinstance(later[1], str)
    grown = later[1]
    (chat,) = [o for o in fleet.replicas if o.workload == "chat"]
    (chat_later,) = [o for o in grown.replicas if o.workload == "chat"]
    # the same option, its replicas scaled with the load: today's 8 carry between 7 and 8
    # replicas' worth, so month 23 needs between ⌈7 × 3.82⌉ = 27 and ⌈8 × 3.82⌉ = 31
    assert chat_later.label == chat.label and chat.replicas_alone == 8
    assert 27 <= chat_later.replicas_alone <= 31
    assert grown.cost_usd > fleet.cost_usd


def peak(workload: str, hours: range, busy: int, quiet: int) -> Option:
    """One-device replicas on H100: ``busy`` of them in ``hours`` (past 23 h: the next day's),
    ``quiet`` the rest of the day."""
    hourly = tuple(busy if t in hours or t + 24 in hours else quiet for t in range(24))
    return Option(workload, "h100", 1, max(hourly), f"{workload} on h100", hourly)


#: H100s owned at 12,500 USD a device and 10,000 a node over the period, or rented at 18,000
#: a device around the clock over it: 750 USD for each hour of the day a device is rented.
#: Owning 12 devices (on 2 nodes) pays from 12 × 12,500 + 2 × 10,000 = 170,000 ÷ (12 × 750) =
#: 18.9 hours a day.
OWN_OR_RENT = {"h100": NodeType("h100", 8, 12_500.0, 10_000.0, 18_000.0)}


def test_peaks_twelve_hours_apart_share_an_owned_base() -> None:
    """A daytime workload needs 12 devices from 8 h to 19 h (14 from 12 h to 13 h) and none at
    night; a night one 12 from 20 h to 7 h. Alone, each is busy 12 hours a day, under the 18.9
    that owning 12 devices needs: each rents, (12 × 12 + 2 × 2) × 750 = 111,000 USD and
    12 × 12 × 750 = 108,000, 219,000 for both. Shared, 12 devices are busy all day: owned,
    170,000, with the 2 extra devices of the day's peak rented for its 2 hours (3,000):
    173,000 USD. Owning 14 would cost 14 × 12,500 + 20,000 = 195,000."""
    hourly = tuple(14 if t in (12, 13) else 12 if 8 <= t <= 19 else 0 for t in range(24))
    day = Option("day", "h100", 1, 14, "day on h100", hourly)
    night = peak("night", range(20, 32), 12, 0)
    fleet = solve([day, night], OWN_OR_RENT)
    assert fleet.owned_devices == {"h100": 12} and fleet.owned_nodes == {"h100": 2}
    assert fleet.rented_device_hours("h100") == 4
    assert fleet.cost_usd == pytest.approx(173_000)
    assert fleet.alone_usd == pytest.approx(219_000)


def test_overflow_goes_to_the_api_when_a_node_would_cost_more() -> None:
    """A workload needs 9 one-device replicas at noon and 8 the other 23 hours, its busiest
    hour's traffic all day costing 216,000 USD through the API over the period; nodes of 8 are
    bought whole at 100,000. Two nodes cost 200,000; one node and the noon overflow to the
    API cost 100,000 + 1/9 of noon's load × 216,000 ÷ 24 = 101,000 USD, 1/9 of that hour's
    traffic, 1/9 ÷ (1 + 23 × 0.8) of the day's."""
    hourly = tuple(9 if t == 12 else 8 for t in range(24))
    option = Option("busy", "h100", 1, 9, "busy on h100", hourly)
    profile = tuple(1.0 if t == 12 else 0.8 for t in range(24))
    demand = Demand("busy", profile, 216_000.0)
    fleet = solve([option], WHOLE, [demand])
    assert fleet.owned_nodes == {"h100": 1}
    assert fleet.cost_usd == pytest.approx(101_000)
    assert fleet.api_share["busy"] == pytest.approx((1 / 9) / (1 + 23 * 0.8), rel=1e-3)
    assert solve([option], WHOLE).cost_usd == 200_000  # without the API


def test_spare_nodes_guard_the_types_their_workloads_use() -> None:
    """Chat asks for N+1, summaries for nothing; each needs four one-device replicas, on nodes
    of 8 bought whole at 100,000 USD. Shared, their eight replicas fill one node and chat's
    spare is a second: 200,000 USD. Alone, chat owns two nodes and summaries one: 300,000.
    Offered A100 nodes at 30,000 as well, moving summaries there would cost 30,000 more and
    free no H100 node (chat's four replicas and its spare still need two), so the fleet
    stays on two H100 nodes."""
    two = [seven_b("chat", replicas=4), seven_b("summaries", replicas=4)]
    spares = [Demand("chat", spare_nodes=1)]
    fleet = solve(two, WHOLE, spares)
    assert fleet.owned_nodes == {"h100": 2} and fleet.spare == {"h100": 1}
    assert fleet.alone_usd == 300_000
    assert one_node_down(fleet) == {"h100": []}  # the spare takes the replicas of a node down
    a100 = Option("summaries", "a100", 1, 4, "summaries on a100")
    types = WHOLE | {"a100": NodeType("a100", 8, 0.0, 30_000.0)}
    assert solve([*two, a100], types, spares).owned_nodes == {"h100": 2}


def test_the_fleet_in_words() -> None:
    """The report's and the terminal's sentences carry the fleet's own figures: the peaks case
    above saves 219,000 − 173,000 = 46,000 USD (21 % of 219,000), owns 12 H100s on 2 nodes and
    rents 4 device-hours a day."""
    from types import SimpleNamespace

    from planner.outputs.sharing import fleet_context, later_sentence
    from planner.plan.deployment import Ask

    hourly = tuple(14 if t in (12, 13) else 12 if 8 <= t <= 19 else 0 for t in range(24))
    day = Option("day", "h100", 1, 14, "h100 (TP 1) · fp8", hourly)
    fleet = solve([day, peak("night", range(20, 32), 12, 0)], OWN_OR_RENT)
    labels = {"day": "Daytime", "night": "Night-time", "h100": "NVIDIA H100"}
    named = SimpleNamespace(
        workloads=[SimpleNamespace(id=w, label=labels[w]) for w in ("day", "night")],
        get=lambda kind, id_: SimpleNamespace(label=labels[id_]),
    )
    page = fleet_context(fleet, Ask([], months=36), named)  # type: ignore[arg-type]
    assert "cost 173,000 USD over 36 months" in page["headline"]
    assert page["alone"].startswith("Sharing saves 46,000 USD (21%)")
    (row,) = page["rows"]
    assert row["hardware"] == "NVIDIA H100" and row["owned"] == "12 devices on 2 nodes"
    assert row["rented"] == "4 device-hours a day"
    assert row["runs"][0] == (
        "Daytime: h100 (TP 1) · fp8, 14 replicas at the busiest hour, 0 at the quietest "
        "(2 of them rented)"
    )
    assert "173,000 USD" in page["summary"] and "46,000 less" in page["summary"]
    assert page["down"] == (
        "One node down: with one NVIDIA H100 node down, Daytime and Night-time fall short at "
        "their busiest hours: no spare node is kept (a forecast's spare_nodes asks for one)."
    )
    assert later_sentence((23, fleet), Ask([], months=36), named) == (  # type: ignore[arg-type]
        "At month 23, the forecasts' last, the same arithmetic at that month's traffic gives a "
        "fleet of 173,000 USD over 36 months (NVIDIA H100: 12 devices owned and 4 device-hours "
        "a day rented)."
    )
    assert later_sentence(None, Ask([]), named) == ""  # type: ignore[arg-type]
    # one workload alone shares nothing: its cost, and no word of sharing
    alone = fleet_context(solve([day], OWN_OR_RENT), Ask([], months=36), named)  # type: ignore[arg-type]
    assert alone["headline"].startswith("As one fleet, the workload costs ")
    assert alone["alone"] == ""
    assert alone["summary"].startswith("Owning what is busy all day and renting the rest by ")
    assert "devices of its own" not in alone["summary"]
    assert fleet_context("no workload is served", Ask([]), named)["none"] == (  # type: ignore[arg-type]
        "No shared fleet: no workload is served."
    )


def test_a_node_down_with_room_to_spare() -> None:
    """Four one-device replicas on one whole node fall short with it down; edited to two nodes
    of 8 devices, the second holds them: the check reads the counts, not the optimiser."""
    from dataclasses import replace

    fleet = solve([seven_b("chat", replicas=4)], WHOLE)
    assert one_node_down(fleet) == {"h100": ["chat"]}
    roomy = replace(fleet, owned_nodes={"h100": 2}, owned_devices={"h100": 16})
    assert one_node_down(roomy) == {"h100": []}
    assert not holds(roomy, "h100", nodes_down=2)


def test_nodes_without_overhead_are_not_multiplied() -> None:
    """Where a node costs nothing beyond its devices, any count of nodes costs the same: the
    fleet owns the fewest that hold its devices (3 devices: 1 node of 8), not an arbitrary
    count."""
    free = {"h100": NodeType("h100", 8, 10_000.0, 0.0)}
    fleet = solve([seven_b("a", replicas=1), seven_b("b", replicas=2)], free)
    assert fleet.owned_devices == {"h100": 3} and fleet.owned_nodes == {"h100": 1}


#: Large-memory devices at 100 USD and small ones at 40 over the period, nodes of 8 at no cost of
#: their own.
LARGE_SMALL = {
    "large": NodeType("large", 8, 100.0, 0.0),
    "small": NodeType("small", 8, 40.0, 0.0),
}


def routed(*parts: Option) -> list[Option]:
    """A documents workload of mixed prompt lengths: 4 large devices carry its whole mix (each
    sequence reserves the longest prompt); a small device holds no long prompt at all."""
    return [Option("docs", "large", 1, 4, "large, the whole mix"), *parts]


#: The length classes of the documents workload: prompts up to 8,192 tokens and above.
CLASSES = [Demand("docs-short", parent="docs"), Demand("docs-long", parent="docs")]


def test_long_prompts_routed_to_large_devices_and_short_ones_to_small() -> None:
    """Routed by length, the short prompts need 4 small devices and the long ones 1 large
    device: 4 × 40 + 100 = 260 USD, against 400 for 4 large devices carrying the whole mix
    (the short prompts alone on large devices need 3: 300 + 100 = 400, no better)."""
    short_small = Option("docs", "small", 1, 4, "small, short prompts", part="docs-short")
    short_large = Option("docs", "large", 1, 3, "large, short prompts", part="docs-short")
    long_large = Option("docs", "large", 1, 1, "large, long prompts", part="docs-long")
    fleet = solve(routed(short_small, short_large, long_large), LARGE_SMALL, CLASSES)
    assert fleet.cost_usd == pytest.approx(260)
    assert fleet.peak_replicas == {short_small: 4, long_large: 1}
    assert fleet.owned_devices == {"large": 1, "small": 4}
    # without the small devices' class option, the whole mix on large devices is as cheap as
    # any split: 400
    assert solve(routed(short_large, long_large), LARGE_SMALL, CLASSES).cost_usd == 400
    # a class nothing serves but the whole mix: the whole-mix option carries both classes
    whole = solve(routed(short_small), LARGE_SMALL, CLASSES)
    assert whole.cost_usd == 400 and whole.owned_devices == {"large": 4}


def test_a_workload_split_by_prompt_length(tmp_path: Path) -> None:
    """Prompts of 1,000 tokens for 8 requests in 10 and 30,000 for the others, split at 8,192:
    the classes carry 80 % and 20 % of the 2 requests a second (to within the draws' sampling
    error, 0.3 % at 20,000 draws), prompts of exactly 1,000 and 30,000 tokens."""
    import shutil

    import yaml

    from planner.plan.portfolio import length_classes

    folder = tmp_path / "catalogs"
    shutil.copytree(Path(__file__).parent.parent / "catalogs" / "examples" / "seed", folder)
    data = yaml.safe_load((folder / "workloads.yaml").read_text())
    entry = data["workloads"][0]
    entry.pop("concurrency", None)
    entry.update(
        prompt_tokens={"samples": [1000] * 8 + [30000] * 2},
        max_output_tokens=512,
        arrival={"pattern": "poisson", "rate": "2 /s"},
        long_prompt_tokens=8192,
    )
    (folder / "workloads.yaml").write_text(yaml.safe_dump(data))
    catalog = load_catalog(folder)
    (short, short_share, short_words), (long, long_share, _) = length_classes(
        catalog, catalog.workloads[0]
    )
    assert short_share == pytest.approx(0.8, abs=0.01) and long_share == 1 - short_share
    assert short.prompt_tokens.mean == short.prompt_tokens.max == 1000
    assert long.prompt_tokens.mean == long.prompt_tokens.max == 30000
    assert short.arrival.rate == pytest.approx(2 * short_share)
    assert short_words == "prompts up to 8,192 tokens"
    assert short.id == f"{entry['id']}-up-to-8192" and long.long_prompt_tokens is None


def test_routing_by_length_needs_an_arrival_rate(tmp_path: Path) -> None:
    """A closed-loop workload routed by length is refused at its field, saying why."""
    import shutil

    import yaml

    from planner.catalog import CatalogError

    folder = tmp_path / "catalogs"
    shutil.copytree(Path(__file__).parent.parent / "catalogs", folder)
    data = yaml.safe_load((folder / "workloads.yaml").read_text())
    chat = next(w for w in data["workloads"] if w["id"] == "chat")
    chat["long_prompt_tokens"] = 2048
    (folder / "workloads.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(CatalogError) as caught:
        load_catalog(folder)
    text = str(caught.value)
    assert "workloads.yaml" in text and "chat" in text
    assert "long_prompt_tokens routes each request by its prompt's length" in text
