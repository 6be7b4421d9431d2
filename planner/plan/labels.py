"""How an option is named for people: one short form and one long form, used by every writer.

An option is a workload × model served on a number of devices of one hardware, at a precision,
with a tensor-parallel size (the devices over it are its replicas). The **short form** names what
is deployed, for a place that already names the workload and the model (a row of the ask, a
model's line of a table): ``4 × h100-sxm-80gb (TP 2) · fp8``. The **long form** names the whole
option: ``chat × llama-3.1-8b: 4 × h100-sxm-80gb (TP 2) · fp8``; a chart of one workload's models
drops the workload it is titled with (``llama-3.1-8b: 4 × ...``).

The device count is left out where the record has none (a candidate's key, before it is sized)
or where the text says it beside the label; an unknown count reads ``?``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from planner.model.nodes import nodes_spanned
from planner.model.units import is_finite
from planner.plan.columns import pipeline_stages, prefill_hardware_of, prefill_parallel_of

__all__ = ["option_label", "prefill_device", "short_label"]

#: A results row, or any mapping with its key columns.
Option = Mapping[Any, Any] | pd.Series


def short_label(
    option: Option,
    *,
    devices: bool = True,
    hardware: str | None = None,
    prefill: str | None = None,
) -> str:
    """What an option deploys: ``4 × h100-sxm-80gb (TP 2) · fp8``; with its prompts on another
    device, each pool's devices: ``2 × mi300x-192gb + 6 × b200-180gb (TP 1, prefill 6 on
    b200-180gb + decode 2) · fp8``.

    ``option`` is a results row (or any mapping with ``hardware``, ``precision``,
    ``tensor_parallel`` and, for the count, ``devices_needed``); ``devices=False`` leaves the
    count out; ``hardware`` (and ``prefill``, the prompts' device) name the devices for their
    reader (the catalog's labels) in place of their ids."""
    other = prefill_device(option)
    prefill = prefill or other
    name = hardware or str(option["hardware"])
    text = f" ({_layout(option, prefill)}) · {option['precision']}"
    if not devices or "devices_needed" not in option:
        return name + text
    count = option["devices_needed"]
    if not is_finite(count):
        return f"? × {name}{text}"
    prompts = option.get("separate_prefill_devices", math.nan)
    if other is not None and is_finite(prompts):
        decode = int(float(count) - float(prompts))
        return f"{decode:,} × {name} + {int(float(prompts)):,} × {prefill}{text}"
    return f"{int(float(count)):,} × {name}{text}"


def _layout(option: Option, prefill: str | None = None) -> str:
    """A replica's layout, ``TP 2``, ``EP 8`` or ``TP 8 × PP 2`` (two stages of eight
    devices), and the pools of a disaggregated option: ``TP 2, prefill 2 + decode 3``, or
    ``TP 2, prefill 2 on b200-180gb + decode 3`` where its prompts run on another device
    (``prefill``: that device's name, else its id), ``EP 72, prefill 3 of EP 32 + decode 2``
    where its prefill replicas are of their own size."""
    expert, stages = option.get("expert_parallel", 1), pipeline_stages(option)
    if is_finite(expert) and expert > 1:
        layout = f"EP {int(expert)}"
    elif stages > 1:
        layout = f"TP {int(option['tensor_parallel']) // stages} × PP {stages}"
    else:
        layout = f"TP {int(option['tensor_parallel'])}"
    if not (is_finite(pools := option.get("disaggregated", 0)) and pools > 0):
        return layout
    replicas, prompts = option.get("replicas_planned", math.nan), _prefill(option)
    other, own = prefill_device(option), prefill_parallel_of(option)
    sized = f" of {_kind(option)[0]} {own}" if own else ""
    on = ("" if other is None else f" on {prefill or other}") + sized
    if not (is_finite(prompts) and is_finite(replicas)):
        return f"{layout}, disaggregated" + (f", prefill{on}" if on else "")
    return f"{layout}, prefill {int(prompts)}{on} + decode {int(replicas) - int(prompts)}"


def prefill_device(option: Option) -> str | None:
    """The device a disaggregated option's prefill pool runs on where that is not its own
    hardware (None: its own, or one pool; :func:`planner.plan.columns.prefill_hardware_of`)."""
    pools = option.get("disaggregated", 0)
    if not (is_finite(pools) and pools > 0):
        return None
    return prefill_hardware_of(option) or None


def replicas_in_words(option: Option, replicas: Any) -> str:
    """The replicas of an option in words: ``2 replicas of tensor parallel 2``, ``1 replica of
    expert parallel 8`` (``expert parallel 32 over 4 nodes`` where a replica spans several),
    ``1 replica of 2 pipeline stages of tensor parallel 8``, or for a
    disaggregated option ``5 replicas of tensor parallel 1 for prompts and 9 for decoding``
    (``for prompts on b200-180gb`` where they run on another device; ``2 replicas of expert
    parallel 32 over 4 nodes for prompts and 1 of expert parallel 72 over 9 nodes for
    decoding`` where the prefill replicas are of their own size)."""
    expert, stages = option.get("expert_parallel", 1), pipeline_stages(option)
    if is_finite(expert) and expert > 1:
        layout = f"expert parallel {int(expert)}{_over_nodes(option, int(expert))}"
    elif stages > 1:
        per_stage = int(option["tensor_parallel"]) // stages
        layout = f"{stages} pipeline stages of tensor parallel {per_stage}"
    else:
        layout = f"tensor parallel {int(option['tensor_parallel'])}"
    pools = option.get("disaggregated", 0)
    prefill = _prefill(option)
    if not is_finite(replicas):
        return f"? replicas of {layout}"
    if is_finite(pools) and pools > 0 and is_finite(prefill):
        decode = int(replicas) - int(prefill)
        on = "" if (other := prefill_device(option)) is None else f" on {other}"
        if own := prefill_parallel_of(option):
            prompts = f"{_kind(option)[1]} {own}{_over_nodes(option, own)}"
            return (
                f"{_count(prefill, 'replica')} of {prompts} for prompts{on} and {decode} of "
                f"{layout} for decoding"
            )
        return f"{_count(prefill, 'replica')} of {layout} for prompts{on} and {decode} for decoding"
    return f"{_count(replicas, 'replica')} of {layout}"


def _kind(option: Option) -> tuple[str, str]:
    """The option's kind of parallelism, short and in words: ``("EP", "expert parallel")`` for
    an expert-parallel replica, else ``("TP", "tensor parallel")``."""
    expert = option.get("expert_parallel", 1)
    if is_finite(expert) and expert > 1:
        return "EP", "expert parallel"
    return "TP", "tensor parallel"


def _over_nodes(option: Option, devices: int) -> str:
    """`` over N nodes`` where a replica of ``devices`` devices fills several of the option's
    nodes, else nothing."""
    per_node = option.get("devices_per_node", math.nan)
    if not (is_finite(per_node) and devices > per_node > 0):
        return ""
    return f" over {nodes_spanned(devices, int(per_node))} nodes"


def _prefill(option: Option) -> Any:
    """The prefill replicas planned (the closed form's for a row from before the simulation
    sized both pools)."""
    planned = option.get("prefill_pool_planned", math.nan)
    return planned if is_finite(planned) else option.get("prefill_pool_replicas", math.nan)


def _count(n: Any, word: str) -> str:
    return f"{int(n):,} {word}{'' if int(n) == 1 else 's'}"


def option_label(
    option: Option,
    *,
    workload: bool = True,
    devices: bool = True,
) -> str:
    """The whole option: ``chat × llama-3.1-8b: 4 × h100-sxm-80gb (TP 2) · fp8`` (without the
    workload where ``workload`` is False, without the count as :func:`short_label`)."""
    named = f"{option['workload']} × {option['model']}" if workload else str(option["model"])
    return f"{named}: {short_label(option, devices=devices)}"


def line_pools(row: Mapping[str, Any] | pd.Series) -> list[tuple[str, str]]:
    """A line's pools, (name in file names, role): its workload id for one pool of replicas, or
    ``WORKLOAD-prefill`` and ``WORKLOAD-decode`` for a disaggregated line (the names of its
    files in a run's ``deploy/``)."""
    workload = str(row["workload"])
    pools = row.get("disaggregated", 0)
    if is_finite(pools) and float(pools) > 0:
        return [(f"{workload}-prefill", "prefill"), (f"{workload}-decode", "decode")]
    return [(workload, "both")]
