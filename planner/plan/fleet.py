"""One fleet for several workloads, as data: the ways to serve part of a workload
(:class:`Option`), the device types (:class:`NodeType`), each workload's day (:class:`Demand`)
and the fleet found (:class:`Fleet`), with what its counts cost (:func:`priced`) and whether its
nodes hold its replicas with one of them down (:func:`holds`, :func:`one_node_down`). The
integer program that finds the least-cost fleet is :mod:`planner.plan.fleet_program`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from planner.model import fleet as fleet_model
from planner.model.finance import HOURS
from planner.model.need import DECODE_POOL, PREFILL_POOL

#: A flat day: every hour carries the busiest hour's traffic.
FLAT = (1.0,) * HOURS


@dataclass(frozen=True)
class Option:
    """One way to serve part of a workload: replicas of ``devices`` devices of ``hardware``,
    ``replicas_alone`` of them carrying the busiest hour's whole load, ``hourly`` each hour's
    (empty: the busiest hour's all day); ``label`` names it for people."""

    workload: str
    hardware: str
    devices: int
    replicas_alone: int
    label: str
    hourly: tuple[int, ...] = ()
    #: the length class it serves alone (its :class:`Demand`'s key), or "" for the whole mix
    part: str = ""
    #: the Plan figures its replicas at any traffic are worked out from
    #: (:func:`planner.plan.schedule.replica_inputs`), as (name, value) pairs
    inputs: tuple[tuple[str, float], ...] = ()
    #: one pool of a disaggregated option whose pools are replicas of two sizes or two device
    #: types, each an option of its own: ``decode`` (it carries the load) or ``prefill`` (it
    #: carries none, but its decode pool's share of it needs as large a share of its own
    #: replicas); "" for an option of one kind of replica
    pool: str = ""
    #: the id both pools of such an option share (its candidate id)
    pair: str = ""

    def serves(self, key: str, parent: str) -> bool:
        """Whether its replicas carry load of demand ``key``, a part of workload ``parent``
        (or the workload itself): the same class, or the whole mix of that workload; a prefill
        pool carries none of its own."""
        if self.workload != parent or self.pool == PREFILL_POOL:
            return False
        return self.part in ("", key) if key != parent else not self.part

    def holds_for(self, key: str, parent: str) -> bool:
        """Whether its replicas are needed for demand ``key`` of workload ``parent``: it
        serves it, or it is the prefill pool of an option that does."""
        if self.pool == PREFILL_POOL:
            return self.workload == parent and self.part in ("", key)
        return self.serves(key, parent)

    def alone_at(self, hour: int) -> int:
        """Replicas that carry hour ``hour``'s whole load alone [replicas]."""
        return self.hourly[hour] if self.hourly else self.replicas_alone


def pool_pairs(options: Sequence[Option]) -> list[tuple[int, int]]:
    """The positions in ``options`` of each two-pool option's prefill pool and its decode pool
    (:attr:`Option.pool`), where both are there."""

    def key(o: Option) -> tuple[str, str, str]:
        return o.workload, o.part, o.pair  # a length class's pools apart from another's

    decode = {key(o): i for i, o in enumerate(options) if o.pool == DECODE_POOL}
    return [
        (p, decode[key(o)])
        for p, o in enumerate(options)
        if o.pool == PREFILL_POOL and key(o) in decode
    ]


@dataclass(frozen=True)
class NodeType:
    """A device type as the fleet has it: ``devices`` a node; over the period, one device owned
    costs ``device_usd`` and one node ``node_usd`` beyond its devices (capital and running
    each), and one device rented around the clock ``rent_usd``; inf where it cannot be had
    that way."""

    hardware: str
    devices: int
    device_usd: float
    node_usd: float = 0.0
    rent_usd: float = math.inf

    @property
    def ownable(self) -> bool:
        return math.isfinite(self.device_usd) and math.isfinite(self.node_usd)


@dataclass(frozen=True)
class Demand:
    """A workload's day and its hosted API: each hour's traffic as a share of the busiest
    hour's, the API's bill over the period for the busiest hour's traffic all day (inf: no
    API serves it), and the nodes its device types keep spare (N+k). A workload routed by
    length has a demand per length class (``parent``: the workload; ``workload``: the class's
    key), each to be served."""

    workload: str
    profile: tuple[float, ...] = FLAT
    api_usd: float = math.inf
    spare_nodes: int = 0
    parent: str = ""

    @property
    def of(self) -> str:
        """The workload the demand is part of (itself where it is whole)."""
        return self.parent or self.workload


@dataclass(frozen=True)
class Fleet:
    """The optimiser's fleet: replicas of each option used, hour by hour, and those of them on
    rented devices; devices and nodes of each type owned, and devices rented each hour; each
    workload's share of the day's traffic sent to the API; the cost over the period and its
    parts; the cost of each workload planned alone by the same program on devices of its own;
    the optimality gap HiGHS reports (0: proven optimal); the spare nodes each type keeps
    (N+k); and the node types it chose from."""

    replicas: dict[Option, tuple[int, ...]]
    rented_replicas: dict[Option, tuple[int, ...]]
    owned_devices: dict[str, int]
    owned_nodes: dict[str, int]
    rented_devices: dict[str, tuple[int, ...]]
    api_share: dict[str, float]
    owned_usd: float
    rented_usd: float
    api_usd: float
    alone_usd: float
    gap: float
    spare: dict[str, int] = field(default_factory=dict)
    types: dict[str, NodeType] = field(default_factory=dict)
    #: what the fleet would cost without its spare nodes (the ask's lines keep none) [USD], and
    #: the gap of that search (above 0: the best found, an upper bound)
    unguarded_usd: float = math.nan
    unguarded_gap: float = 0.0
    #: each workload's share of each hour's traffic sent to the API
    api_by_hour: dict[str, tuple[float, ...]] = field(default_factory=dict)
    #: each workload's day, API and spares, as the program had them
    demands: dict[str, Demand] = field(default_factory=dict)
    #: every option the program could choose, used or not
    options: tuple[Option, ...] = ()
    #: each workload planned alone by the same program, on devices of its own
    alone: tuple[Fleet, ...] = ()

    @property
    def cost_usd(self) -> float:
        """The fleet over the period: devices and nodes owned, device-hours rented and API
        calls [USD]."""
        return self.owned_usd + self.rented_usd + self.api_usd

    @property
    def saving_usd(self) -> float:
        """What sharing saves against each workload alone [USD]."""
        return self.alone_usd - self.cost_usd

    @property
    def peak_replicas(self) -> dict[Option, int]:
        """Replicas of each option used at its busiest hour [replicas]."""
        return {o: max(hours) for o, hours in self.replicas.items()}

    def rented_device_hours(self, hardware: str) -> int:
        """Device-hours of ``hardware`` rented a day [device·h/day]."""
        return sum(self.rented_devices.get(hardware, ()))

    def hardware(self) -> list[str]:
        """The device types the fleet owns or rents, in catalog order."""
        return [h for h in self.types if h in self.owned_devices or h in self.rented_devices]

    def to_json(self) -> dict[str, object]:
        """The fleet as plain data (``fleet.json``): costs over the period [USD], each device
        type's owned devices and nodes, spare nodes and rented device-hours a day, each
        option's replicas hour by hour (hour 0 to 23) and those of them on rented devices (and
        the pool it is of a two-pool option, ``prefill`` or ``decode``; null: one pool), and
        each workload's share of its day's traffic sent to the API, and per type owning nodes
        the workloads that fall short with one of them down; None for a way of having a device
        type that its prices do not give."""
        return {
            "cost_usd": self.cost_usd,
            "owned_usd": self.owned_usd,
            "rented_usd": self.rented_usd,
            "api_usd": self.api_usd,
            "alone_usd": self.alone_usd,
            "saving_usd": self.saving_usd,
            "without_spares_usd": self.unguarded_usd,
            "optimality_gap": self.gap,
            "device_types": [
                {
                    "hardware": h,
                    "devices_per_node": self.types[h].devices,
                    "owned_devices": self.owned_devices.get(h, 0),
                    "owned_nodes": self.owned_nodes.get(h, 0),
                    "spare_nodes": self.spare.get(h, 0),
                    "rented_device_hours_per_day": self.rented_device_hours(h),
                    "device_owned_usd": known_usd(self.types[h].device_usd),
                    "node_owned_usd": known_usd(self.types[h].node_usd),
                    "device_rented_usd": known_usd(self.types[h].rent_usd),
                }
                for h in self.hardware()
            ],
            "options": [
                {
                    "workload": o.workload,
                    "option": o.label,
                    "hardware": o.hardware,
                    "pool": o.pool or None,
                    "devices_per_replica": o.devices,
                    "replicas_alone": o.replicas_alone,
                    "replicas_by_hour": list(hours),
                    "rented_replicas_by_hour": list(self.rented_replicas.get(o, (0,) * HOURS)),
                }
                for o, hours in self.replicas.items()
            ],
            "api_share": dict(self.api_share),
            "one_node_down_short": one_node_down(self),
        }


def known_usd(value: float) -> float | None:
    """A cost for JSON: None where it is not a finite number (a way of having a device, or of
    paying, that the catalog's prices do not give)."""
    return value if math.isfinite(value) else None


def priced(fleet: Fleet) -> Fleet:
    """``fleet`` with its rented devices, API shares and costs worked out from its counts by the
    fleet metrics (:mod:`planner.model.fleet`)."""
    rented: dict[str, tuple[int, ...]] = {}
    owned_usd = rented_usd = 0.0
    for h, t in fleet.types.items():
        mine = [o for o in fleet.rented_replicas if o.hardware == h]
        hours = tuple(sum(o.devices * fleet.rented_replicas[o][t_] for o in mine)
                      for t_ in range(HOURS))  # fmt: skip
        if max(hours, default=0):
            rented[h] = hours
        prices = {"device_owned_usd": t.device_usd, "node_owned_usd": t.node_usd,
                  "device_rented_usd": t.rent_usd}  # fmt: skip
        owned_usd += fleet_model.value("type_cost_usd", prices | {
            "owned_devices": fleet.owned_devices.get(h, 0),
            "owned_nodes": fleet.owned_nodes.get(h, 0),
            "rented_device_hours_per_day": 0,
        })  # fmt: skip
        rented_usd += fleet_model.value("type_cost_usd", prices | {
            "owned_devices": 0, "owned_nodes": 0, "rented_device_hours_per_day": sum(hours),
        })  # fmt: skip
    api_share, api_usd = {}, 0.0
    for w, shares in fleet.api_by_hour.items():
        day = fleet.demands[w]
        sent = float(np.dot(shares, day.profile))
        if sent > 1e-9:
            api_share[w] = sent / sum(day.profile)
            api_usd += fleet_model.value("api_cost_usd", {
                "api_share_all": shares, "daily_profile": day.profile, "api_bill_usd": day.api_usd,
            })  # fmt: skip
    return replace(fleet, rented_devices=rented, api_share=api_share, owned_usd=owned_usd,
                   rented_usd=rented_usd, api_usd=api_usd)  # fmt: skip


def holds(fleet: Fleet, hardware: str, nodes_down: int = 0) -> bool:
    """Whether ``hardware``'s owned devices and nodes hold its owned replicas every hour with
    ``nodes_down`` of its nodes out of service (and their devices with them): the fleet
    metrics ``devices_hold`` and ``packing_holds``, the spares then standing in for the nodes
    down."""
    t = fleet.types[hardware]
    mine = [o for o in fleet.replicas if o.hardware == hardware]
    zero = (0,) * HOURS

    def owned(o: Option, hour: int) -> int:
        return fleet.replicas[o][hour] - fleet.rented_replicas.get(o, zero)[hour]

    nodes = fleet.owned_nodes.get(hardware, 0) - nodes_down
    devices = min(fleet.owned_devices.get(hardware, 0), nodes * t.devices)
    spare = max(fleet.spare.get(hardware, 0) - nodes_down, 0)
    used = [sum(o.devices * owned(o, h) for o in mine) for h in range(HOURS)]
    values = {"devices_owned_used_all": used, "spare_nodes": spare,
              "devices_per_node": t.devices, "owned_devices": devices}  # fmt: skip
    if not fleet_model.value("devices_hold", values):
        return False
    for size in sorted({o.devices for o in mine}):
        packed = [sum(o.devices * owned(o, h) for o in mine if o.devices >= size)
                  for h in range(HOURS)]  # fmt: skip
        room = fleet_model.value("packing_room", {"owned_nodes": nodes, "spare_nodes": spare,
                                                  "replica_size": size,
                                                  "devices_per_node": t.devices})  # fmt: skip
        if not fleet_model.value("packing_holds", {"devices_packed_all": packed,
                                                   "packing_room": room}):  # fmt: skip
            return False
    return True


def one_node_down(fleet: Fleet) -> dict[str, list[str]]:
    """For each device type the fleet owns nodes of, the workloads with owned replicas on it
    that fall short of their load at some hour when one of its nodes is out of service (none:
    a spare node, or room to spare, takes its replicas)."""
    short = {}
    zero = (0,) * HOURS
    for h in fleet.owned_nodes:
        on_owned = [o.workload for o, hours in fleet.replicas.items() if o.hardware == h
                    and sum(hours) > sum(fleet.rented_replicas.get(o, zero))]  # fmt: skip
        short[h] = [] if holds(fleet, h, nodes_down=1) else list(dict.fromkeys(on_owned))
    return short
