"""How long one tensor-parallel all-reduce of a decode step's small activations takes, by the
kind of link between the devices: a fixed part and a part per ring hop, α(TP) = fixed +
2 × (TP − 1) × per hop [s] (a ring all-reduce makes 2 × (TP − 1) hops; a switched fabric does it
in a near-constant time).

Figures are small-message (512 B – 32 KiB) all-reduce times published with their set-ups; a
step's two all-reduces per layer carry messages of this size at decode batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: The kinds of device link a hardware entry may name (``interconnect``).
Kind = Literal["nvlink", "pcie", "infinity-fabric", "ethernet"]


@dataclass(frozen=True)
class CollectiveLatency:
    """A link's all-reduce latency: fixed part and part per ring hop [s], with its source."""

    fixed_s: float
    per_hop_s: float
    source: str

    def at(self, tensor_parallel: int) -> float:
        """One all-reduce across ``tensor_parallel`` devices [s] (0 on one device)."""
        if tensor_parallel <= 1:
            return 0.0
        return self.fixed_s + 2 * (tensor_parallel - 1) * self.per_hop_s


NVLINK = CollectiveLatency(
    8e-6,
    0.1e-6,
    "H100 HGX (NVSwitch): vLLM's custom all-reduce of 512 B – 32 KiB takes 9.5 / 9.1 / 10.1 µs "
    "at TP 2 / 4 / 8 (sgl-project/sglang PR #2904, without CUDA graphs); NCCL NVLSTree with "
    "CUDA graphs about 6 µs at 2 GPUs (NVIDIA/nccl issue #1259); 2 × RTX 2080 Ti over an NVLink "
    "bridge 7.1 µs (NVIDIA/nccl-tests issue #44)",
)

PCIE = CollectiveLatency(
    0.0,
    3e-6,
    "NCCL all_reduce_perf, 8 B: 42 µs on 8 × RTX 4090 over PCIe (NVIDIA/nccl issue #1530), "
    "54 µs on 8 × RTX 3090 (NVIDIA/nccl issue #1439): about 3 µs per ring hop, 14 hops at TP 8",
)

#: Each kind's latency. Infinity Fabric and Ethernet scale-up links have no public
#: small-message figure at hand: they take NVLink's, stated as an assumption, until measured.
INTERCONNECTS: dict[str, CollectiveLatency] = {
    "nvlink": NVLINK,
    "pcie": PCIE,
    "infinity-fabric": CollectiveLatency(
        NVLINK.fixed_s, NVLINK.per_hop_s, "assumed equal to NVLink (no public figure at hand)"
    ),
    "ethernet": CollectiveLatency(
        NVLINK.fixed_s, NVLINK.per_hop_s, "assumed equal to NVLink (no public figure at hand)"
    ),
}

#: The kind assumed where a hardware entry names none: the fastest, so the estimate stays a
#: bound (the latency is never overstated).
DEFAULT_KIND = "nvlink"


def collective_latency(kind: str | None) -> CollectiveLatency:
    """The all-reduce latency of a link ``kind`` (:data:`DEFAULT_KIND` when none is named)."""
    return INTERCONNECTS[kind or DEFAULT_KIND]
