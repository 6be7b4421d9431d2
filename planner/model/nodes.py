"""How a replica's devices sit on a hardware type's nodes.

A replica sits within one node, or over whole nodes, every device of each a rank of it (a
pipeline's stages, a node each; SGLang's expert-parallel 32 over 4 nodes of 8 H100; DeepSeek's
expert-parallel 144 over 18 nodes); it never shares part of a node with another replica, whose
traffic would then cross the slower network between nodes. These two rules are the candidates'
(which layouts are tried), the shared fleet's (which replicas pack onto a type's nodes), the
labels' (``over 4 nodes``) and the launch files' (the nodes a replica's command starts on).
"""

from __future__ import annotations

from typing import Any

__all__ = ["nodes_spanned", "sits_on_nodes"]


def sits_on_nodes(devices: Any, devices_per_node: Any) -> Any:
    """Whether a replica of ``devices`` devices sits on nodes of ``devices_per_node``: within
    one node, or over whole nodes (numbers or arrays)."""
    return (devices <= devices_per_node) | (devices % devices_per_node == 0)


def nodes_spanned(devices: int, devices_per_node: int | None, stages: int = 1) -> int:
    """Nodes one replica of ``devices`` devices in ``stages`` pipeline stages spans: as many as
    its devices fill, and a node a stage at least; a node a stage where the hardware gives no
    node size [nodes]. EP 32 on nodes of 8: 4; TP 4 on nodes of 8: 1; 2 stages of TP 4: 2."""
    per_node = devices_per_node or devices
    return max(stages, -(-devices // per_node))
