"""Latency at the forecast load: the batch a replica runs, and the full-batch formulas over it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from planner.model.load import (
    chunked_prefill_s,
    decode_busy_fraction,
    first_token_chunks,
    load_batch,
    open_loop_batch_bound,
    open_loop_batch_refined,
    others_load_fraction,
    prefill_busy_fraction,
    step_wait_s,
    ttft_load_s,
)
from planner.model.metric import metrics

SEED = Path(__file__).resolve().parent.parent / "catalogs" / "examples" / "seed"

nan = math.nan


@pytest.mark.parametrize(
    ("decode_batch", "in_flight", "replicas", "batch"),
    [
        (16, 40.0, 3, 40 / 3),  # closed loop, no tool time: 40 users over 3 replicas
        (16, 0.5, 1, 1.0),  # at least one sequence
        (16, 100.0, 2, 16.0),  # at most the full batch
        (0, 3.0, nan, 0.0),  # nothing fits: no replica planned, the full (empty) batch
    ],
)
def test_closed_loop_load_batch_by_hand(decode_batch, in_flight, replicas, batch):
    value = load_batch(
        np.array([decode_batch]),
        np.array([in_flight]),
        np.array([replicas]),
        np.array([0.0]),  # no arrival rate: closed loop
        np.array([nan]),
    )
    assert value[0] == pytest.approx(batch)


def test_open_loop_batch_is_the_fixed_point_by_hand():
    """2 requests/s on one replica of the seed's 7B model at 700 GB/s, 4,096 cached tokens per
    sequence (536,870,912 B a step), 257 output tokens, 0.1 s prefill and TTFT, no overheads.
    Memory line: e2e = 256 × 14e9 ÷ 700e9 = 5.12 s + B × (0.1 + 256 × 536,870,912 ÷ 700e9 =
    0.296341 s); the request itself and 2 × e2e others: B = 1 + 2 × (5.12 + 0.296341 × B), so
    B = (1 + 2 × 5.12) ÷ (1 − 2 × 0.296341) = 27.5950. The compute line (14e9 FLOP at 400 TFLOP/s)
    has no intercept: 1 ÷ (1 − 2 × 0.07) = 1.16. So 27.60 sequences, and e2e there is
    13.30 s = (B − 1) ÷ 2."""
    cache = 4096 * 131_072
    args = dict(
        decode_batch=np.array([64.0]),
        forecast_requests_per_s=np.array([2.0]),
        decode_pool_replicas=np.array([1.0]),
        decode_entry_s=np.array([0.1]),
        output_tokens_mean=np.array([257.0]),
        prefill_stall_s=np.array([0.1]),
        network_s=np.array([0.0]),
        decode_weight_bytes_per_step=np.array([14e9]),
        kv_read_bytes_per_sequence_step=np.array([float(cache)]),
        memory_bandwidth_bytes_per_s=np.array([700e9]),
        bandwidth_efficiency=1.0,
        decode_flops_per_token=np.array([14e9]),
        matmul_padding_s=0.0,
        achieved_compute_flops_per_s=np.array([400e12]),
        allreduce_s_per_token=np.array([0.0]),
        step_overhead_s=0.0,
        step_overhead_per_sequence_s=0.0,
    )
    slope = 0.1 + 256 * cache / 700e9
    expected = (1 + 2 * 5.12) / (1 - 2 * slope)
    batch = open_loop_batch_bound(**args)[0]
    assert batch == pytest.approx(expected, rel=1e-12) and batch == pytest.approx(27.5950, 1e-4)
    e2e = 0.1 + 256 * (14e9 + batch * cache) / 700e9 + (batch - 1) * 0.1
    assert 1 + 2 * e2e == pytest.approx(batch, rel=1e-12)  # Little's law holds at the batch
    # twice the rate outgrows any batch (2 × 4 × 0.296 > 1): the full batch
    args["forecast_requests_per_s"] = np.array([8.0])
    assert open_loop_batch_bound(**args)[0] == 64.0


def test_a_mixture_s_batch_is_refined_with_the_experts_its_batch_touches():
    """1 request/s; 2 GB of shared weights and 8 experts of 1 GB, 2 per token; 1 TB/s; 101 output
    tokens; 0.1 s prefill and TTFT; 0.1 GB of cache a sequence a step; no overheads. With all
    10 GB read: e2e = 100 × 10e9 ÷ 1e12 = 1 s + B × (0.1 + 100 × 1e8 ÷ 1e12 = 0.11 s), so
    B = (1 + 1) ÷ (1 − 0.11) = 2.247191. At that batch a step touches 1 − 0.75^2.247191 =
    0.476112 of the experts: 2 + 8 × 0.476112 = 5.808893 GB, intercept 0.580889 s, and
    B = 1.580889 ÷ 0.89 = 1.776280."""
    line = dict(
        decode_batch=np.array([64.0]),
        forecast_requests_per_s=np.array([1.0]),
        decode_pool_replicas=np.array([1.0]),
        decode_entry_s=np.array([0.1]),
        output_tokens_mean=np.array([101.0]),
        prefill_stall_s=np.array([0.1]),
        network_s=np.array([0.0]),
        kv_read_bytes_per_sequence_step=np.array([1e8]),
        memory_bandwidth_bytes_per_s=np.array([1e12]),
        bandwidth_efficiency=1.0,
        decode_flops_per_token=np.array([1e9]),
        matmul_padding_s=0.0,
        achieved_compute_flops_per_s=np.array([1e18]),
        allreduce_s_per_token=np.array([0.0]),
        step_overhead_s=0.0,
        step_overhead_per_sequence_s=0.0,
    )
    bound = open_loop_batch_bound(decode_weight_bytes_per_step=np.array([10e9]), **line)[0]
    assert bound == pytest.approx(2 / 0.89, rel=1e-12) and bound == pytest.approx(2.247191, 1e-6)
    moe = dict(
        experts=np.array([8.0]),
        experts_per_token=np.array([2.0]),
        decoder_weight_bytes_per_device=np.array([10e9]),
        routed_expert_parameters=np.array([8e9]),
        weight_bytes_per_param=np.array([1.0]),
        routed_share_per_device=np.array([1.0]),
    )
    once = open_loop_batch_refined(open_loop_batch_bound=np.array([bound]), **moe, **line)[0]
    expected = (1 + 100 * (2e9 + 8e9 * (1 - 0.75**bound)) / 1e12) / 0.89
    assert once == pytest.approx(expected, rel=1e-12) and once == pytest.approx(1.776280, 1e-6)
    # a dense model (no routed experts) is unchanged by a pass
    dense = {**moe, "experts": np.array([0.0]), "experts_per_token": np.array([0.0])}
    dense["routed_expert_parameters"] = np.array([0.0])
    again = open_loop_batch_refined(open_loop_batch_bound=np.array([bound]), **dense, **line)[0]
    assert again == pytest.approx(bound, rel=1e-12)


def test_little_holds_at_the_load_batch_on_the_shipped_catalogs():
    """On every open-loop dense row where the batch is neither 1 nor full, a request and the
    others in flight at the load latency (1 + rate × e2e_load_s) are the load batch: the fixed
    point is solved with the very formulas that compute e2e_load_s."""
    from planner.catalog import load_catalog
    from planner.plan.sweep import evaluate
    from planner.resources import shipped_catalogs

    t = evaluate(load_catalog(shipped_catalogs())).table
    rows = t[
        (t["arrival_rate_per_s"] > 0)
        & (t["experts"] == 0)
        & (t["load_batch"] > 1)
        & (t["load_batch"] < t["decode_batch"])
    ]
    assert len(rows) > 20
    rate = rows["forecast_requests_per_s"] / rows["replicas_planned"]
    assert (1 + rate * rows["e2e_load_s"]).to_numpy() == pytest.approx(
        rows["load_batch"].to_numpy(), rel=1e-9
    )


def test_the_load_figures_are_the_full_batch_formulas_over_the_load_batch():
    """One physics: itl_load_s is itl_s's own function, reading the load batch's step terms."""
    registry = metrics()
    itl, itl_load = registry["itl_s"], registry["itl_load_s"]
    assert itl_load.func is itl.func
    assert itl_load.inputs == (
        "load_decode_memory_s",
        "load_decode_compute_s",
        "allreduce_s_per_token",
        "load_batch",
        "step_overhead_s",
        "step_overhead_per_sequence_s",
        "load_draft_s",
        "verify_tokens_per_sequence",
        "speculative_tokens_per_step",
        "expert_parallel",
        "load_expert_parallel_itl_s",
        "pipeline_parallel",
        "load_pipeline_parallel_itl_s",
    )
    assert registry["e2e_load_s"].func is registry["e2e_s"].func
    assert "itl_load_s" in registry["e2e_load_s"].inputs
    assert registry["meets_itl_target"].inputs[0] == "itl_load_s"
    # a batch of 4 at 4,096 tokens each reads 14 GB of weights and 4 × 4,096 × 128 KiB of cache
    # at 700 GB/s: (14e9 + 2,147,483,648) ÷ 700e9 = 23.07 ms
    memory = registry["load_decode_memory_s"].func(14e9, 4, 4096 * 131_072, 700e9, 1.0)
    assert memory == pytest.approx((14e9 + 2_147_483_648) / 700e9, rel=1e-12)


def test_time_to_first_token_at_load_by_hand():
    """A replica with two others in flight on average (load batch 3) decodes when an arrival
    comes with probability 1 − e^−2 = 0.864665; at 2 requests/s and a 50 ms mean prefill it
    prefills 10 % of the time. The arrival waits half a 20 ms decode step or half a 50 ms
    prefill: 0.864665 × 0.010 + 0.1 × 0.025 = 11.1467 ms, after 5 ms of preprocessing, then
    its own 20 ms median prefill: 36.1467 ms. With no replica planned there is no load."""
    busy = decode_busy_fraction(np.array([3.0]))
    assert busy[0] == pytest.approx(0.8646647168, rel=1e-9)
    open_loop = others_load_fraction(np.array([3.0, 3.0]), np.array([2.0, 2.0]))
    prefilling = prefill_busy_fraction(np.array([2.0, nan]), np.array([0.05, 0.05]), open_loop)
    assert prefilling[0] == pytest.approx(0.1, rel=1e-12) and np.isnan(prefilling[1])
    wait = step_wait_s(
        decode_busy_fraction=np.array([busy[0], busy[0]]),
        itl_load_s=np.array([0.02, 0.02]),
        prefill_busy_fraction=prefilling,
        prefill_s=np.array([0.05, 0.05]),
    )
    assert wait == pytest.approx([0.01114664717, 0.0], rel=1e-9)
    ttft = ttft_load_s(
        preprocess_s=0.005,
        median_prefill_s=0.02,
        chunked_prefill=0,
        chunked_prefill_s=0.5,  # not read: whole prompts
        step_wait_s=wait,
    )
    assert ttft == pytest.approx([0.0361466472, 0.025], rel=1e-9)
    assert decode_busy_fraction(np.array([1.0]))[0] == 0.0  # alone: nothing to wait for


@pytest.mark.parametrize(
    ("batch", "rate", "others"),
    [
        (1.0, 0.0, 0.0),  # a lone closed-loop user never meets its own previous request
        (4.0, 0.0, 0.75),  # 4 in flight: an arrival sees the other 3
        (1.0, 2.0, 1.0),  # open loop: a Poisson arrival sees the time average
        (10.0, 0.5, 1.0),
    ],
)
def test_an_arrival_sees_the_others_load(batch: float, rate: float, others: float) -> None:
    assert others_load_fraction(np.array([batch]), np.array([rate]))[0] == pytest.approx(others)


def test_a_closed_loop_arrival_waits_for_the_others_prefills_only() -> None:
    """4 users a replica at 2 requests/s and a 50 ms prefill: the replica prefills 10 % of the
    time, 7.5 % of it for the other 3 users, which is what an arrival can meet."""
    got = prefill_busy_fraction(np.array([2.0]), np.array([0.05]), np.array([0.75]))
    assert got[0] == pytest.approx(0.075, rel=1e-12)


@pytest.fixture(scope="module")
def lone_user(tmp_path_factory: pytest.TempPathFactory):
    """The seed's 4 GiB model alone: one closed-loop user, a 1,000-token prompt, one output
    token, on the seed's invented device (whole-prompt steps and chunked ones both planned)."""
    import shutil

    import yaml

    from planner.catalog import load_catalog
    from planner.plan.sweep import evaluate

    rows = {}
    for chunked in (False, True):
        folder = tmp_path_factory.mktemp(f"lone-{chunked}") / "seed"
        shutil.copytree(SEED, folder)
        path = folder / "workloads.yaml"
        doc = yaml.safe_load(path.read_text())
        workload = doc["workloads"][0]
        for key in ("arrival", "agent", "forecast", "targets"):
            workload.pop(key, None)
        workload.update(prompt_tokens=1000, max_output_tokens=1, concurrency=1)
        workload["output_tokens"] = 1
        doc["workloads"] = [workload]
        path.write_text(yaml.safe_dump(doc))
        assumptions = folder / "assumptions.yaml"
        adoc = yaml.safe_load(assumptions.read_text())
        adoc["assumptions"]["engine"] = {
            "name": "vllm", "version": "0.11", "chunked_prefill": chunked,
        }  # fmt: skip
        assumptions.write_text(yaml.safe_dump(adoc))
        table = evaluate(load_catalog(folder)).table
        rows[chunked] = table[table["model"] == "invented-4gib"].iloc[0]
    return rows


@pytest.mark.parametrize("chunked", [False, True])
def test_a_lone_user_meets_no_wait(lone_user, chunked: bool) -> None:
    """One user with a one-token output: no other request is ever in flight, so the time to
    first token at load is the no-load one (preprocessing + the prompt's prefill), whether the
    prompt is prefilled whole or in one chunk of the 8,192-token budget."""
    row = lone_user[chunked]
    assert row["load_batch"] == 1.0
    assert row["step_wait_s"] == 0.0
    assert row["ttft_load_s"] == pytest.approx(row["preprocess_s"] + row["prefill_s"], rel=1e-12)
    assert row["ttft_load_s"] == pytest.approx(row["ttft_s"], rel=1e-12)


@pytest.mark.parametrize(
    ("prompt", "budget", "batch", "chunks"),
    [
        (5000, 2048, 9, 3),  # 2,040 tokens a step after 8 decodes: 5,000 ÷ 2,040 = 2.45
        (2040, 2048, 9, 1),  # exactly one step's room
        (2041, 2048, 9, 2),
        (5000, 8192, 1, 1),  # alone, one step
        (100, 64, 200, 100),  # decodes fill the budget: a token a step, never none
    ],
)
def test_first_token_chunks_by_hand(prompt: int, budget: int, batch: int, chunks: int) -> None:
    """⌈prompt ÷ (budget − the others' decodes)⌉ steps, the room never below one token."""
    assert first_token_chunks(prompt, budget, batch) == chunks


def test_chunked_prefill_by_hand() -> None:
    """A 5,000-token median prompt in 3 steps (budget 2,048, 8 others decoding), each step
    reading 20 ms of weights and caches (the weights alone: 18 ms; 2 ms for the 9 caches at
    1 TB/s, 222,222,222 B each): memory 3 × 20 = 60 ms. The arithmetic: 3 steps × 8 others ×
    1.4e10 FLOP + the prompt's 1e14 FLOP = 1.00336e14 FLOP at 1e15 FLOP/s = 100.336 ms, more
    than the weight read, then each step reads the 8 others' caches (16 ÷ 9 ms): 105.669 ms.
    Plus (3 × 8 + 5,000) tokens × 1 µs of all-reduce = 5.024 ms and 3 × 2 ms of overhead:
    116.693 ms. A short prompt's arithmetic (1e13 FLOP, 10.336 ms, and the caches' 5.333 ms)
    hides under the 60 ms the steps read: 60 + 5.024 + 6 = 71.024 ms."""
    args = dict(
        first_token_chunks=3,
        load_decode_memory_s=0.020,
        weight_read_s=0.018,
        load_batch=9,
        decode_flops_per_token=1.4e10,
        matmul_padding_s=0.0,
        achieved_compute_flops_per_s=1e15,
        prompt_tokens_median=5000,
        allreduce_s_per_token=1e-6,
        step_overhead_s=0.002,
        step_overhead_per_sequence_s=0.0,
        kv_read_bytes_per_sequence_step=2e9 / 9,
        memory_bandwidth_bytes_per_s=1e12,
        bandwidth_efficiency=1.0,
    )
    caches = 3 * 8 * (2e9 / 9) / 1e12
    got = chunked_prefill_s(median_prefill_flops=1e14, **args)
    assert got == pytest.approx(0.100336 + caches + 0.005024 + 0.006)
    assert got == pytest.approx(0.116693, abs=1e-6)
    assert chunked_prefill_s(median_prefill_flops=1e13, **args) == pytest.approx(0.071024)
    # a mixture's load batch may read fewer weights than a prompt, which reads them all
    args["load_decode_memory_s"] = 0.010
    assert chunked_prefill_s(median_prefill_flops=1e13, **args) == pytest.approx(0.054 + 0.011024)
    # and the 8 others' 30 µs a sequence in each of the 3 steps: + 0.72 ms
    args["step_overhead_per_sequence_s"] = 30e-6
    got = chunked_prefill_s(median_prefill_flops=1e13, **args)
    assert got == pytest.approx(0.054 + 0.011024 + 0.00072)


def test_time_per_output_token_at_load_by_hand() -> None:
    """e2e 2.0 s, TTFT 0.2 s, network 0.05 s, 101 output tokens: (2.0 − 0.2 − 0.05) ÷ 100 =
    17.5 ms a token after the first; one-token outputs have none."""
    from planner.model.load import load_output_tokens_per_s_per_replica, tpot_load_s

    got = tpot_load_s(np.array([2.0, 2.0]), 0.2, 0.05, np.array([101.0, 1.0]))
    assert got[0] == pytest.approx(0.0175) and np.isnan(got[1])
    # 3 requests a second of 101 tokens each: 303 output tokens a second
    assert load_output_tokens_per_s_per_replica(3.0, 101.0) == pytest.approx(303.0)


def test_a_decode_step_does_not_read_a_vision_tower(tmp_path: Path) -> None:
    """The seed's 4 GiB model given 1e9 of its 2,147,483,648 parameters as an encoder (a vision
    tower, BF16): memory holds all 4 GiB, each decode step reads 4,294,967,296 − 2e9 B, in the
    closed form and in the simulation's step alike."""
    import shutil

    import yaml

    from planner.catalog import load_catalog
    from planner.plan.sweep import evaluate
    from planner.serving.configs import step_model

    folder = tmp_path / "seed"
    shutil.copytree(SEED, folder)
    path = folder / "models.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["models"][1]["encoder_parameters"] = 1_000_000_000
    path.write_text(yaml.safe_dump(doc))
    catalog = load_catalog(folder)
    table = evaluate(catalog).table
    row = table[table["model"] == "invented-4gib"].iloc[0]
    assert row["weight_bytes_per_device"] == 4_294_967_296
    assert row["decode_weight_bytes_per_step"] == 4_294_967_296 - 2_000_000_000
    step = step_model(row, catalog.assumptions)
    assert step.decode_weight_bytes(1) == 4_294_967_296 - 2_000_000_000
    assert step.prefill_memory_s() * step.bandwidth_bytes_per_s == pytest.approx(4_294_967_296)
