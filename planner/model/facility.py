"""Facility limits: what a rack and a site can power, and the racks an option fills.

A rack is budgeted for the peak board power of the nodes in it; a node draws its installed
devices' board power (the fleet's devices, at most ``devices_per_node`` of them). An option whose
single node draws more than the rack's budget cannot be installed; one whose devices draw more
than the site's budget at peak (× PUE) cannot be powered. Without a board power or a limit the
check passes and says nothing.
"""

from __future__ import annotations

from typing import Any

from planner.model.expr import ceil, floor, is_missing, maximum, minimum, where
from planner.model.metric import metric

NAN = float("nan")

RACK = "rack_power assumption; board power of the hardware"


@metric("W", source=RACK, group="cost")
def node_power_w(
    devices_needed: Any,
    devices_per_node: Any,
    power_w: Any,
    separate_prefill_devices: Any = 0,
    prefill_hw_devices_per_node: Any = 1,
    prefill_hw_power_w: Any = 0,
) -> Any:
    """Peak board power of the option's fullest node: min(devices, devices per node) × board
    power [W]; with a prefill pool on another device, on nodes of its own, the larger of each
    pool's fullest node (6 B200s of 1,000 W and 2 MI300Xs of 750 W: 6,000 W)."""
    separate = separate_prefill_devices
    own = minimum(devices_needed - separate, devices_per_node) * power_w
    other = minimum(separate, prefill_hw_devices_per_node) * prefill_hw_power_w
    return where(separate > 0, maximum(own, other), own)


@metric("nodes", source=RACK, group="cost")
def nodes_per_rack(rack_power_w: Any, node_power_w: Any) -> Any:
    """Nodes a rack's power budget holds: ⌊rack power ÷ node power⌋; missing without a limit
    or a board power [nodes]."""
    return floor(rack_power_w / where(node_power_w > 0, node_power_w, NAN))


@metric("racks", source=RACK, group="cost")
def racks_needed(nodes_needed: Any, nodes_per_rack: Any) -> Any:
    """Racks the option fills: ⌈nodes ÷ nodes per rack⌉; missing without a rack limit or where
    not one node fits a rack [racks]."""
    return where(nodes_per_rack >= 1, ceil(nodes_needed / maximum(nodes_per_rack, 1)), NAN)


@metric("kW", source="site_power assumption; board power × PUE", group="cost")
def facility_peak_kw(devices_needed: Any, power_w_per_device: Any, pue: Any) -> Any:
    """Peak power the option draws at the site: devices × board power × PUE ÷ 1000 [kW]."""
    return devices_needed * power_w_per_device * pue / 1000


@metric("", kind="bool", source="rack_power and site_power assumptions", group="cost")
def within_power(nodes_per_rack: Any, facility_peak_kw: Any, site_power_w: Any) -> Any:
    """Whether the option can be installed and powered: one node fits a rack's budget and the
    site's peak stays within its budget (true where a limit or the board power is not given)."""
    fits_rack = where(is_missing(nodes_per_rack), True, nodes_per_rack >= 1)
    fits_site = where(
        is_missing(facility_peak_kw),
        True,
        where(is_missing(site_power_w), True, facility_peak_kw * 1000 <= site_power_w),
    )
    return fits_rack & fits_site
