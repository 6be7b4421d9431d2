"""The shipped catalogs read like a proposal a manager would sign: the team's chosen models
(deployment.yaml), a line that is bought on a node of several devices, a forecast that orders
hardware in tranches with a spare node, a rack power limit that rules an option out, and a
hosted API that wins a line at its volume.

The figures asserted are worked out here from the catalogs, not copied from a run.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from planner.catalog import load_catalog
from planner.model.cost import API, BUY
from planner.model.units import GIB
from planner.pipeline import plan
from planner.plan.deployment import ask
from planner.plan.schedule import schedules

SHIPPED = Path(__file__).resolve().parent.parent / "catalogs"


@pytest.fixture(scope="module")
def shipped():
    catalog = load_catalog(SHIPPED)
    results = plan(catalog, processes=2)
    the_ask = ask(catalog, results.table)
    return catalog, results.table, the_ask, schedules(catalog, the_ask)


def test_every_line_serves_the_model_the_team_chose(shipped) -> None:
    catalog, _, the_ask, _ = shipped
    chosen = yaml.safe_load((SHIPPED / "deployment.yaml").read_text())["deployment"]["serve"]
    assert {line.workload: line.model for line in the_ask.lines} == {
        s["workload"]: s["model"] for s in chosen
    }
    assert {line.chosen_by for line in the_ask.lines} == {"deployment.yaml"}
    assert not the_ask.unserved


def test_a_line_is_bought_on_a_node_of_several_devices(shipped) -> None:
    catalog, _, the_ask, _ = shipped
    bought = [line for line in the_ask.lines if line.advice == BUY]
    assert bought
    assert any(line.devices >= 2 and line.nodes < line.devices for line in bought)


def test_a_line_goes_to_a_hosted_api(shipped) -> None:
    """Ticket summaries: 0.05 requests a second for 730 hours is 131,400 requests a month, of
    2,000 tokens in (262.8 M) and 200 out (26.28 M): 73.58 + 21.81 = 95.40 USD a month at
    Cloudflare's 0.28 and 0.83 USD per million, far below any device's rent."""
    _, _, the_ask, _ = shipped
    api = [line for line in the_ask.lines if line.advice == API]
    assert [line.workload for line in api] == ["ticket-summaries"]
    seconds_a_month = 730 * 3600
    tokens_in = 0.05 * seconds_a_month * 2000 / 1e6
    tokens_out = 0.05 * seconds_a_month * 200 / 1e6
    assert api[0].monthly_usd == pytest.approx(tokens_in * 0.28 + tokens_out * 0.83, rel=1e-6)


def test_the_growing_line_orders_in_tranches_with_a_spare_node(shipped) -> None:
    catalog, _, _, found = shipped
    (chat,) = [s for s in found if s.workload.id == "chat"]
    assert chat.workload.forecast.spare_nodes == 1
    tranches = [p for p in chat.plans.values() if len(p.orders) >= 2]
    assert tranches, {k: p.orders for k, p in chat.plans.items()}
    # N+1: every month holds one node more than its busiest hour's replicas need
    per_node = chat.node_devices / int(chat.line.row["tensor_parallel"])
    for replicas, nodes in zip(chat.replicas, chat.nodes, strict=True):
        assert nodes == math.ceil(replicas / per_node) + 1


def test_the_rack_power_limit_rules_out_a_cheaper_option(shipped) -> None:
    """Eight Gaudi 3 draw 7.2 kW, past the 7 kW rack: the cheaper option is ruled out by power,
    and the line the plan buys draws no more than the rack takes."""
    catalog, table, the_ask, _ = shipped
    rack_w = catalog.assumptions.rack_power
    (chat,) = [line for line in the_ask.lines if line.workload == "chat"]
    options = table[(table.workload == "chat") & (table.model == "gpt-oss-120b")]
    ruled_out = options[options["ruled_out_by"] == "power"]
    assert len(ruled_out) and (ruled_out["cost_usd"] < chat.row["cost_usd"]).any()
    assert 8 * 900 > rack_w >= float(chat.row["node_power_w"])


def test_the_shipped_models_are_current_and_fit_their_devices(shipped) -> None:
    """The bought assistant line holds gpt-oss-120b's ~117 B parameters at one byte each on a
    192 GB device: under 120 GB of weights per device."""
    _, _, the_ask, _ = shipped
    (chat,) = [line for line in the_ask.lines if line.workload == "chat"]
    assert float(chat.row["weight_bytes_per_device"]) < 120e9
    assert float(chat.row["memory_bytes"]) > 170 * GIB
