"""How a replica sits on nodes: the rule the candidates, the shared fleet, the labels and the
launch files share (planner.model.nodes)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.model.nodes import nodes_spanned, sits_on_nodes


@pytest.mark.parametrize(
    ("stages", "devices", "per_node", "nodes"),
    [(1, 8, 8, 1), (2, 16, 8, 2), (1, 16, 8, 2), (1, 4, 8, 1), (1, 24, 8, 3), (1, 8, None, 1),
     (2, 4, 8, 2), (1, 72, 8, 9), (1, 32, 4, 8)],
)  # fmt: skip
def test_the_nodes_a_replica_spans(stages: int, devices: int, per_node: int | None, nodes: int):
    """A stage a node at least; else the nodes its devices fill (an EP 16 replica on
    8-device nodes: 2; SGLang's EP 72 decode replica on 8-GPU H100 nodes: 9)."""
    assert nodes_spanned(devices, per_node, stages) == nodes


@pytest.mark.parametrize(
    ("devices", "per_node", "sits"),
    [(1, 8, True), (4, 8, True), (8, 8, True), (16, 8, True), (32, 8, True), (72, 8, True),
     (12, 8, False), (6, 4, False), (12, 4, True), (3, 2, False)],
)  # fmt: skip
def test_a_replica_sits_within_a_node_or_over_whole_nodes(devices, per_node, sits):
    """EP 12 on nodes of 8 would share a node with another replica; on nodes of 4 it fills 3."""
    assert bool(sits_on_nodes(devices, per_node)) is sits


def test_the_rule_holds_over_arrays_as_over_numbers():
    devices, per_node = np.array([4, 12, 16, 12]), np.array([8, 8, 8, 4])
    assert sits_on_nodes(devices, per_node).tolist() == [True, False, True, True]
