"""Disaggregated prefill and decode as a candidate's serving layout.

A disaggregated candidate runs its prompts on a prefill pool and its generation on a decode
pool, both of the candidate's replica layout, the prefill pool on the candidate's hardware or on
another device (``prefill_hardware``: DistServe; Splitwise; vLLM's and SGLang's disaggregated
serving). The prefill pool is sized by the prompt tokens a second it must
process, with the room its queue needs for the time-to-first-token target; the decode pool by
the sequences it must hold, as an aggregated replica is (:func:`planner.model.capacity.
replicas_needed`, without the prompts). Each request's KV cache crosses the network from its
prefill replica to its decode replica before the first token; a decode replica never stops its
batch for a prompt. The replicas planned are the two pools together, so devices, nodes and
costs count both; the load's batch is the decode pool's (:func:`decode_pool_replicas`).

The plan's layout key ``disaggregated`` is 1 for such a candidate and 0 for one pool of
replicas doing both, where every metric here is 0 or leaves the aggregated figure as it is.

*The hardware and layout the prompts run on.* A prompt's time reads the figures of the row's
``prefill_hardware`` (:data:`PREFILL_SIDE_LOOKUPS`, looked up as ``prefill_hw_`` + the name, and
the metrics of :data:`PREFILL_SIDE_METRICS` restated over them): the row's own hardware, so the
same figures, but for a prefill pool on another device. Such a candidate's devices are priced
each at its own pool's device's price and power (:func:`purchase_usd_per_device` and the two
after it, the pools' mix as planned), its nodes counted pool by pool. Likewise the layout: a
disaggregated candidate's prefill replicas may be of their own size in its kind of parallelism
(``prefill_parallel``; :func:`prefill_hw_tensor_parallel`, :func:`prefill_hw_expert_parallel`),
the weights and cache a device holds, its all-reduce or all-to-all and its ranks restated over
that size, its devices counted at it (:func:`prefill_pool_device_offset`). The prefill pool
finds a prompt's prefix in its own cache: the shared prefix and a document as a replica that
decodes too would, of a task's history only the previous prompt's part, the answer's cache
having been made on the decode pool, and that as far as the pool's room outlasts a call and its
tool time (:func:`planner.model.prefix.prefill_history_tokens`,
:func:`planner.model.prefix.prefill_history_retained_fraction`).
"""

from __future__ import annotations

from typing import Any

# the modules whose metrics are restated below, registered first
import planner.model.calibration  # noqa: F401
import planner.model.memory  # noqa: F401
import planner.model.pipeline  # noqa: F401
import planner.model.prefix  # noqa: F401
import planner.model.speculative  # noqa: F401
from planner.model import latency
from planner.model.expr import floor, is_missing, log, maximum, minimum, where
from planner.model.metric import REGISTRY, metric, rebound
from planner.model.parallel import (
    kv_transfer_bytes,
    kv_transfer_s,
    prefill_replicas_needed,
    prompt_tokens_per_s_demanded,
)
from planner.model.sources import (
    DISTSERVE,
    LITTLE,
    POPE,
    ROOFLINE,
    SARATHI,
    SGLANG_EP,
    SPLITWISE,
)

#: The mean wait in a queue with Poisson arrivals and a fixed service time.
POLLACZEK_KHINCHINE = "Pollaczek–Khinchine formula for the M/D/1 queue (Kleinrock 1975, §5.6)"
#: The wait of a single-server queue in heavy traffic, near exponential.
KINGMAN = "Kingman 1961 (the single-server queue in heavy traffic)"


@metric("B", source=f"{DISTSERVE}; {POPE}", group="latency")
def request_kv_transfer_bytes(
    prompt_tokens_mean: Any, kv_bytes_per_token: Any, prefill_hw_kv_bytes_per_token: Any = 0
) -> Any:
    """KV cache a device's link carries for one request from the prefill pool to the decode
    pool: mean prompt × KV bytes per token per device, of the side whose devices hold more of
    it (the prefill replica's where it has fewer devices, each sending its heads' share; else
    the decode replica's, each receiving its own) [B]. 4,000 tokens of 131,072 B are
    524,288,000 B."""
    per_device = maximum(kv_bytes_per_token, prefill_hw_kv_bytes_per_token)
    return kv_transfer_bytes(prompt_tokens_mean, per_device)


@metric("B/s", source=f"{DISTSERVE}; {SPLITWISE}", group="serving")
def pools_link_bytes_per_s(
    network_bytes_per_s: Any, prefill_hw_network_bytes_per_s: Any = float("inf")
) -> Any:
    """The link a request's KV cache crosses from the prefill pool to the decode pool, each
    device over its own share of the network: the slower of the decode device's network and
    the prefill device's (the same device for both pools: its own) [B/s]. 50 GB/s beside
    100 GB/s: 50 GB/s."""
    return minimum(network_bytes_per_s, prefill_hw_network_bytes_per_s)


@metric("s", source=DISTSERVE, group="latency")
def request_kv_transfer_s(
    disaggregated: Any, request_kv_transfer_bytes: Any, pools_link_bytes_per_s: Any
) -> Any:
    """Time to move one request's KV cache from the prefill pool to the decode pool over the
    pools' link: bytes ÷ its bandwidth [s]; 0 for one pool. 524,288,000 B at 50 GB/s:
    10.49 ms. The link's microseconds of latency are left out."""
    moved = kv_transfer_s(request_kv_transfer_bytes, pools_link_bytes_per_s, 0)
    return where(disaggregated > 0, moved, 0)


@metric("prompts", source=f"{DISTSERVE}; {SARATHI}", group="serving")
def prefill_pool_prompts_per_step(max_num_batched_tokens: Any, prefill_tokens_mean: Any) -> Any:
    """Prompts a prefill replica runs in one step: as many mean prompts' uncached tokens as the
    engine's ``max_num_batched_tokens`` budget takes, at least one [prompts]. 8,192 tokens take
    ten prompts of 800, one of 24,000 (in chunks)."""
    return maximum(1, floor(max_num_batched_tokens / maximum(prefill_tokens_mean, 1)))


@metric("s", source=f"{DISTSERVE}; {ROOFLINE}; {SGLANG_EP}", group="serving")
def prefill_pool_s_per_prompt(
    prefill_flops: Any,
    prefill_compute_flops_per_s: Any,
    prefill_hw_matmul_padding_s: Any,
    prefill_hw_weight_read_s: Any,
    prefill_tokens_mean: Any,
    prefill_hw_allreduce_s_per_token: Any,
    prefill_hw_step_overhead_s: Any,
    prefill_pool_prompts_per_step: Any,
    prefill_hw_expert_alltoall_s_per_token: Any = 0,
    prefill_hw_expert_parallel: Any = 1,
    expert_overlap: Any = 0,
) -> Any:
    """A prefill replica's time per prompt when each of its schedulers runs n prompts a step
    [s], on the prefill pool's device: a scheduler's max(the prompt's arithmetic + padding ÷
    n, weight read ÷ n) + its tokens' communication + overhead ÷ n, ÷ the schedulers prefilling
    side by side: :func:`planner.model.latency.prefill_s` of the mean prompt's uncached tokens
    with the step's padding, weight read and overhead shared n ways. Short prompts share the
    step's weight read and overhead; long ones are compute-bound.

    A tensor-parallel replica is one scheduler at the replica's rate, its tokens all-reduced.
    An expert-parallel one (of the prefill pool's own size, :func:`prefill_hw_expert_parallel`)
    is EP ranks, each prefilling its own prompts at one device's rate
    (:func:`planner.model.parallel.prefill_compute_flops_per_s`), each token dispatched to its
    experts and back (added, or hidden under the arithmetic,
    :func:`planner.model.latency.overlapped_s`). At EP 32, 2 prompts a step of 4,096 tokens at
    0.36 s each and 4,096 × 188 µs = 0.77 s of all-to-all: 1.13 s ÷ 32 = 35.4 ms a prompt
    added, 0.77 s ÷ 32 = 24.1 ms overlapped."""
    n = prefill_pool_prompts_per_step
    rank = latency.prefill_s(  # a scheduler's prompt, its uncached tokens, a step's shares ÷ n
        prefill_flops,
        prefill_compute_flops_per_s,
        prefill_hw_matmul_padding_s / n,
        prefill_hw_weight_read_s / n,
        prefill_tokens_mean,
        prefill_hw_allreduce_s_per_token,
        prefill_hw_step_overhead_s / n,
        0,
        prefill_hw_expert_alltoall_s_per_token,
        expert_overlap,
    )
    return rank / maximum(prefill_hw_expert_parallel, 1)


@metric("tokens/s", source=DISTSERVE, group="serving")
def prefill_tokens_per_s_per_replica(
    prefill_tokens_mean: Any, prefill_pool_s_per_prompt: Any
) -> Any:
    """Prompt tokens a prefill replica processes a second: the mean prompt's uncached tokens ÷
    its time per prompt in a full step [tokens/s]."""
    return prefill_tokens_mean / prefill_pool_s_per_prompt


@metric("tokens/s", source=f"{DISTSERVE}; {LITTLE}", group="serving")
def prefill_tokens_per_s_demanded(forecast_requests_per_s: Any, prefill_tokens_mean: Any) -> Any:
    """Prompt tokens the prefill pool must process a second at the forecast: requests a
    second × the mean prompt's uncached tokens [tokens/s]."""
    return prompt_tokens_per_s_demanded(forecast_requests_per_s, prefill_tokens_mean)


@metric("", source=f"{DISTSERVE}; {KINGMAN}", group="serving")
def prefill_pool_utilisation_limit(ttft_s: Any, ttft_p95_target_s: Any, prefill_s: Any) -> Any:
    """The busiest a prefill replica may be with the 95th-percentile wait within the room the
    TTFT target leaves, G = target − TTFT without waiting: 1 − S × ln 20 ÷ (2G), at least 0.05
    [-]; 1 with no TTFT target or none within reach
    (:func:`planner.model.capacity.meets_ttft_target` says so).

    In heavy traffic the wait is near exponential (Kingman): a share ρ of prompts waits at all,
    on average ρS ÷ (2(1 − ρ)) with a fixed service time S (M/D/1), so its 95th percentile is
    S × ln(20ρ) ÷ (2(1 − ρ)) (:func:`prefill_pool_wait_p95_s`), at most S × ln 20 ÷ (2(1 −
    ρ)): the limit keeps that within G. At ρ ≤ 0.05 fewer than one prompt in twenty waits.
    A TTFT target of 1 s with 0.4 s without waiting and 0.2 s prefills leaves G = 0.6 s:
    ρ ≤ 1 − 0.2 × 2.9957 ÷ 1.2 = 0.5007."""
    room = ttft_p95_target_s - ttft_s
    reachable = where(is_missing(ttft_p95_target_s), False, room > 0)
    room = where(reachable, room, 1)
    limit = maximum(1 - prefill_s * log(20) / (2 * room), 0.05)
    return where(reachable, limit, 1)


@metric("replicas", source=f"{DISTSERVE}; {POLLACZEK_KHINCHINE}", group="serving")
def prefill_pool_replicas(
    disaggregated: Any,
    prefill_tokens_per_s_demanded: Any,
    prefill_tokens_per_s_per_replica: Any,
    prefill_pool_utilisation_limit: Any,
) -> Any:
    """Replicas of the prefill pool: the fewest that keep each below its utilisation limit,
    ⌊demanded ÷ (one replica's tokens a second × limit)⌋ + 1 [replicas]; 0 for one pool.

    240,000 tokens a second on replicas of 100,000 with a limit of 0.857: ⌊2.8⌋ + 1 = 3
    (2.8 replicas would run at the limit; the queue needs them below it)."""
    room = prefill_tokens_per_s_per_replica * prefill_pool_utilisation_limit
    pool = prefill_replicas_needed(prefill_tokens_per_s_demanded, room)
    return where(disaggregated > 0, pool, 0)


@metric("", source=LITTLE, group="serving")
def prefill_pool_utilisation(
    prefill_tokens_per_s_demanded: Any,
    prefill_pool_replicas: Any,
    prefill_tokens_per_s_per_replica: Any,
) -> Any:
    """Share of time a prefill replica is busy at the forecast: demanded ÷ (replicas × one
    replica's tokens a second) [-]; 0 for one pool."""
    capacity = maximum(prefill_pool_replicas, 1) * prefill_tokens_per_s_per_replica
    return where(prefill_pool_replicas > 0, prefill_tokens_per_s_demanded / capacity, 0)


@metric("s", source=POLLACZEK_KHINCHINE, group="latency")
def prefill_pool_wait_s(prefill_pool_utilisation: Any, prefill_s: Any) -> Any:
    """Mean wait of a prompt for its prefill replica: ρS ÷ (2(1 − ρ)), S the mean prefill, ρ
    the pool's utilisation (Poisson arrivals, a fixed service time) [s]; 0 for one pool.
    At ρ = 0.8 and 0.2 s: 0.4 s. S is one prompt's prefill: the step a prompt waits for runs
    the others' prompts with it."""
    rho = prefill_pool_utilisation
    return where(rho > 0, rho * prefill_s / (2 * (1 - where(rho < 1, rho, 0.5))), 0)


@metric("s", source=f"{POLLACZEK_KHINCHINE}; {KINGMAN}", group="latency")
def prefill_pool_wait_p95_s(prefill_pool_utilisation: Any, prefill_s: Any) -> Any:
    """95th percentile of a prompt's wait for its prefill replica: S × ln(20ρ) ÷ (2(1 − ρ)),
    0 where at most one prompt in twenty waits (ρ ≤ 0.05), missing at ρ ≥ 1 [s] (the
    exponential tail of :func:`prefill_pool_utilisation_limit`). At ρ = 0.8 and 0.2 s:
    0.2 × ln 16 ÷ 0.4 = 1.386 s."""
    rho = prefill_pool_utilisation
    busy = where(rho < 1, rho, 0.5)
    tail = prefill_s * log(20 * maximum(busy, 0.05)) / (2 * (1 - busy))
    return where(rho > 0.05, where(rho < 1, tail, float("nan")), 0)


@metric("replicas", source=f"{DISTSERVE}; serving simulation", group="serving")
def prefill_pool_planned(
    prefill_pool_replicas: Any, sim_prefill_pool_replicas: Any, simulated: Any
) -> Any:
    """Prefill replicas to provision: the closed form's, raised to what the simulation of both
    pools needed (:mod:`planner.serving.pools`) [replicas]; 0 for one pool. The closed form's
    5 against a simulated 6: 6."""
    found = where(is_missing(sim_prefill_pool_replicas), 0, sim_prefill_pool_replicas)
    return maximum(prefill_pool_replicas, where(simulated, found, 0))


@metric("replicas", source=DISTSERVE, group="serving")
def decode_pool_replicas(replicas_planned: Any, prefill_pool_planned: Any) -> Any:
    """Replicas that hold the sequences and decode them: the replicas planned less the prefill
    pool's (all of them for one pool) [replicas]."""
    return replicas_planned - prefill_pool_planned


@metric("s", source=DISTSERVE, group="latency")
def decode_entry_s(ttft_s: Any, disaggregated: Any) -> Any:
    """Time a request holds its decode replica before its decode steps: its TTFT on a replica
    that also prefills; none on a decode pool, which receives the cache ready [s]."""
    return where(disaggregated > 0, 0, ttft_s)


# The hardware the prompts run on ----------------------------------------------------------

#: The prefix of a figure of the hardware the prompts run on.
PREFILL_HW = "prefill_hw_"

#: The hardware figures a prompt's time, a prefill pool's memory and its devices' costs read,
#: each looked up again by the row's ``prefill_hardware`` as ``prefill_hw_`` + its name.
PREFILL_SIDE_LOOKUPS = (
    "memory_bytes",
    "memory_bandwidth_bytes_per_s",
    "interconnect_bytes_per_s",
    "network_bytes_per_s",
    "power_w",
    "purchase_usd",
    "cloud_usd_per_hour",
    "devices_per_node",
    "allreduce_fixed_s",
    "allreduce_per_hop_s",
    "matmul_half_tokens",
    "matmul_plateau_fraction",
    "calibrated_bandwidth_efficiency",
    "calibrated_compute_efficiency",
    "calibrated_step_overhead_s",
    "compute_flops_per_s",
)

#: The layout keys a prompt's time reads, restated for the prefill pool's own layout as
#: ``prefill_hw_`` + their name (:func:`prefill_hw_tensor_parallel`,
#: :func:`prefill_hw_expert_parallel`).
PREFILL_SIDE_LAYOUT = ("tensor_parallel", "expert_parallel")

#: The metrics of a prompt's time that read the hardware or the layout, restated over the
#: figures of the hardware and layout the prompts run on as ``prefill_hw_`` + their name, each
#: after those it reads.
PREFILL_SIDE_METRICS = (
    "stage_tensor_parallel",
    "routed_share_per_device",
    "expert_parallel_weight_bytes",
    "weight_bytes_per_device",
    "decoder_weight_bytes_per_device",
    "kv_heads_per_device",
    "kv_values_per_token_per_layer",
    "kv_bytes_per_token",
    "kv_bytes_per_token_windowed",
    "draft_kv_bytes_per_token",
    "kv_bytes_per_sequence",
    "shared_prefix_kv_bytes",
    "kv_read_bytes_per_sequence_step",
    "compute_efficiency",
    "bandwidth_efficiency",
    "allreduce_latency_s_per_step",
    "step_overhead_s",
    "achieved_compute_flops_per_s",
    "device_compute_flops_per_s",
    "matmul_padding_s",
    "weight_read_s",
    "allreduce_s_per_token",
    "expert_alltoall_s_per_token",
)


@metric("devices", source=f"{DISTSERVE}; {SGLANG_EP}", group="serving")
def prefill_hw_tensor_parallel(
    tensor_parallel: Any, disaggregated: Any, prefill_parallel: Any
) -> Any:
    """Devices of a replica of the pool that runs the prompts: the prefill replicas' own size
    where a disaggregated candidate gives them one (``prefill_parallel`` above 0), else the
    replica's [devices]. SGLang's 96 H100s: prefill replicas of 32 beside decode replicas of
    72; DistServe's OPT-66B: prefill at TP 4 beside decode at TP 2."""
    return where((disaggregated > 0) & (prefill_parallel > 0), prefill_parallel, tensor_parallel)


@metric("ranks", source=SGLANG_EP, group="serving")
def prefill_hw_expert_parallel(
    expert_parallel: Any, disaggregated: Any, prefill_parallel: Any
) -> Any:
    """Expert-parallel size of the pool that runs the prompts: an expert-parallel candidate's
    prefill replicas' own size where it gives them one (the devices of
    :func:`prefill_hw_tensor_parallel`), else the replica's (1: tensor parallel) [ranks]."""
    own = (disaggregated > 0) & (expert_parallel > 1) & (prefill_parallel > 0)
    return where(own, prefill_parallel, expert_parallel)


def _restate_on_prefill_hardware() -> None:
    """Register each of :data:`PREFILL_SIDE_METRICS` over the prefill side's figures: the
    same formula (:func:`planner.model.metric.rebound`), its hardware and layout inputs
    renamed."""
    renamed = {name: PREFILL_HW + name for name in (*PREFILL_SIDE_LOOKUPS, *PREFILL_SIDE_LAYOUT)}
    for name in PREFILL_SIDE_METRICS:
        inputs = {i: renamed[i] for i in REGISTRY[name].inputs if i in renamed}
        rebound(
            PREFILL_HW + name,
            name,
            inputs,
            f"{name} on the hardware and layout the prompts run on (the prefill pool's device "
            "and expert-parallel size; the row's own figure where the prompts run on them).",
        )
        renamed[name] = PREFILL_HW + name


_restate_on_prefill_hardware()


@metric("", kind="text", source=f"{DISTSERVE}; {SPLITWISE}", group="keys")
def prompts_hardware(prefill_hardware: Any, hardware: Any) -> Any:
    """The hardware the prompts run on, whose figures the ``prefill_hw_`` columns look up: the
    row's ``prefill_hardware`` (a prefill pool's other device), else its own hardware."""
    return where(prefill_hardware == "", hardware, prefill_hardware)


@metric("", kind="bool", source=f"{DISTSERVE}; {SPLITWISE}", group="keys")
def separate_prefill_hardware(disaggregated: Any, prompts_hardware: Any, hardware: Any) -> Any:
    """Whether the candidate's prefill pool runs on another device than its decode pool."""
    return (disaggregated > 0) & (prompts_hardware != hardware)


@metric("devices", source=SPLITWISE, group="cost")
def separate_prefill_devices(
    separate_prefill_hardware: Any, prefill_pool_planned: Any, prefill_hw_tensor_parallel: Any
) -> Any:
    """Devices of a prefill pool on another device type than the decode pool's: its replicas
    × devices a prefill replica [devices]; 0 where the prompts run on the candidate's own
    hardware."""
    return where(separate_prefill_hardware, prefill_pool_planned * prefill_hw_tensor_parallel, 0)


@metric("devices", source=SGLANG_EP, group="serving")
def prefill_pool_device_offset(
    prefill_pool_planned: Any, prefill_hw_tensor_parallel: Any, tensor_parallel: Any
) -> Any:
    """Devices a prefill pool of its own replica size holds beyond as many replicas of the
    candidate's: prefill replicas × (devices a prefill replica − devices a replica) [devices];
    0 where both pools' replicas are alike or there is one pool. 3 prefill replicas of 32
    beside decode replicas of 72: −120."""
    return prefill_pool_planned * (prefill_hw_tensor_parallel - tensor_parallel)


def _mix(own: Any, other: Any, separate_prefill_devices: Any, devices_needed: Any) -> Any:
    """A figure per device over both pools' devices: the decode pool's own figure for its
    devices and the prefill pool's device's for the separate prefill devices, ÷ all devices;
    the own figure where there are none."""
    separate = separate_prefill_devices
    mixed = (own * (devices_needed - separate) + other * separate) / maximum(devices_needed, 1)
    return where(separate > 0, mixed, own)


@metric("USD", source="purchase_usd of each pool's hardware", group="cost")
def purchase_usd_per_device(
    purchase_usd: Any,
    prefill_hw_purchase_usd: Any,
    separate_prefill_devices: Any,
    devices_needed: Any,
) -> Any:
    """Purchase price of the candidate's devices, on average [USD]: the hardware's own, or,
    with a prefill pool on another device, each pool's devices at their own price ÷ all
    devices (10 decode devices at 30,000 and 6 prefill devices at 20,000: 26,250). A schedule
    that grows the candidate keeps the pools' mix as planned."""
    return _mix(purchase_usd, prefill_hw_purchase_usd, separate_prefill_devices, devices_needed)


@metric("W", source="board power of each pool's hardware", group="cost")
def power_w_per_device(
    power_w: Any, prefill_hw_power_w: Any, separate_prefill_devices: Any, devices_needed: Any
) -> Any:
    """Board power of the candidate's devices, on average [W] (as
    :func:`purchase_usd_per_device`)."""
    return _mix(power_w, prefill_hw_power_w, separate_prefill_devices, devices_needed)


@metric("USD/h", source="cloud_usd_per_hour of each pool's hardware", group="cost")
def cloud_usd_per_device_hour(
    cloud_usd_per_hour: Any,
    prefill_hw_cloud_usd_per_hour: Any,
    separate_prefill_devices: Any,
    devices_needed: Any,
) -> Any:
    """Rental price of the candidate's devices an hour, on average [USD/h] (as
    :func:`purchase_usd_per_device`)."""
    return _mix(
        cloud_usd_per_hour, prefill_hw_cloud_usd_per_hour, separate_prefill_devices, devices_needed
    )


@metric("B", source="the plan's memory budget (runtime overhead and reserve)", group="memory")
def prefill_hw_kv_budget_bytes(
    prefill_hw_memory_bytes: Any,
    prefill_hw_weight_bytes_per_device: Any,
    runtime_overhead_bytes: Any,
    reserve_bytes: Any,
) -> Any:
    """KV cache a prefill pool's device holds beside its share of the weights (at the pool's
    own layout): its memory − weights − runtime overhead − reserve [B] (the engine's own budget
    rules are the decode pool's; a prefill replica holds the prompts it runs, not a batch of
    sequences)."""
    held = prefill_hw_weight_bytes_per_device + runtime_overhead_bytes + reserve_bytes
    return prefill_hw_memory_bytes - held


@metric("", kind="bool", source="the plan's memory budget", group="memory")
def prefill_pool_fits(
    separate_prefill_hardware: Any,
    prefill_hw_kv_budget_bytes: Any,
    prefill_hw_kv_bytes_per_sequence: Any,
    prefill_hw_shared_prefix_kv_bytes: Any = 0,
    prefill_hw_tensor_parallel: Any = 1,
    tensor_parallel: Any = 1,
) -> Any:
    """Whether a prefill pool on another device or of its own replica size holds its weights,
    the shared prefix its cache hits read (held once, as on the decode device) and one longest
    request's cache, each at its own layout (:func:`prefill_hw_kv_budget_bytes` ≥ the prefix's
    and the sequence's reserved cache); true where the prompts run on the candidate's own
    hardware and layout, whose memory the replica's fit already checks."""
    holds = prefill_hw_kv_budget_bytes >= prefill_hw_shared_prefix_kv_bytes + (
        prefill_hw_kv_bytes_per_sequence
    )
    other_layout = prefill_hw_tensor_parallel != tensor_parallel
    return where(separate_prefill_hardware | other_layout, holds, True)
