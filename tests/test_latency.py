"""Closed-form latency and capacity, each checked against arithmetic done by hand."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.model.capacity import (
    forecast_requests_per_s,
    in_flight_requests,
    replicas_needed,
    requests_per_s_per_replica,
)
from planner.model.latency import (
    allreduce_s_per_token,
    compute_bound_s,
    decode_compute_s,
    decode_flops_per_token,
    decode_memory_s,
    decode_weight_bytes_per_step,
    e2e_s,
    experts_touched_fraction,
    itl_s,
    matmul_padding_s,
    prefill_flops,
    prefill_s,
    prefill_stall_s,
    prompt_chunks,
    task_s,
    weight_read_s,
)
from planner.model.memory import kv_budget_bytes, max_sequences


def test_weight_read_bound_seed_paragraph_7():
    # 14 GB at 700 GB/s = 0.02 s = 20 ms; at 80 % achieved bandwidth 25 ms
    assert weight_read_s(14e9, 700e9, 1.0) == pytest.approx(0.020, rel=1e-12)
    assert weight_read_s(14e9, 700e9, 0.8) == pytest.approx(0.025, rel=1e-12)


def test_batch_of_sixteen_shares_one_weight_read():
    # Without cache reads, a step of 16 sequences reads the 14 GB once: still 20 ms, so each
    # sequence's share of the weight read is 1.25 ms.
    one = decode_memory_s(14e9, 1, 0, 700e9, 1.0)
    sixteen = decode_memory_s(14e9, 16, 0, 700e9, 1.0)
    assert one == sixteen == pytest.approx(0.02, rel=1e-12)
    assert sixteen / 16 == pytest.approx(0.00125, rel=1e-12)


def test_decode_step_grows_with_cache_reads():
    # 16 sequences each reading 4,096 tokens × 131,072 B = 512 MiB of cache:
    # (14e9 + 16 × 536,870,912) / 700e9 = 22,589,934,592 / 700e9 = 0.0322713… s
    step = decode_memory_s(14e9, 16, 4096 * 131_072, 700e9, 1.0)
    assert step == pytest.approx(22_589_934_592 / 700e9, rel=1e-12)
    longer = decode_memory_s(14e9, 16, 8192 * 131_072, 700e9, 1.0)
    assert longer > step


def test_compute_bound():
    # 2 × 7e9 FLOP per token at 100 TFLOPS × 50 % = 0.28 ms
    flops = decode_flops_per_token(7e9)
    assert flops == 14e9
    assert compute_bound_s(flops, 100e12 * 0.5) == pytest.approx(0.28e-3, rel=1e-12)
    # a batch of 256 multiplies the arithmetic: 256 × 14e9 / 50e12 = 71.68 ms
    no_cache = (0.0, 700e9, 1.0)
    assert decode_compute_s(flops, 256, 50e12, 0.0, *no_cache) == pytest.approx(0.07168)
    # and the multiplications' padding adds its own time: 71.68 + 3.4 ms
    assert decode_compute_s(flops, 256, 50e12, 0.0034, *no_cache) == pytest.approx(0.07508)
    # then attention reads the 256 caches of the seed's 4,096 tokens (512 MiB each) at
    # 700 GB/s, after the multiplications: + 256 × 536,870,912 ÷ 700e9 = 196.3 ms
    cache = (4096 * 131_072, 700e9, 1.0)
    got = decode_compute_s(flops, 256, 50e12, 0.0, *cache)
    assert got == pytest.approx(0.07168 + 256 * 536_870_912 / 700e9, rel=1e-12)


def test_a_compute_bound_step_still_waits_for_its_caches() -> None:
    """The seed's 7B (14 GB of weights) at 700 GB/s and 50 TFLOPS, 256 sequences of 4,096
    cached tokens: weights 20 ms, multiplications 71.68 ms, caches 196.3 ms. The step is
    max(20, 71.68) + 196.3 = 268.0 ms, not max(20 + 196.3, 71.68) = 216.3 ms."""
    caches = 256 * 536_870_912 / 700e9
    memory = decode_memory_s(14e9, 256, 536_870_912, 700e9, 1.0)
    compute = decode_compute_s(14e9, 256, 50e12, 0.0, 536_870_912, 700e9, 1.0)
    step = itl_s(memory, compute, 0.0, 256, 0.0, 0.0)
    assert step == pytest.approx(0.07168 + caches, rel=1e-12)


@pytest.mark.parametrize(
    ("half", "plateau", "parameters", "embeddings", "routed", "rate", "tp", "padding_s"),
    [
        # Hopper: 120 tokens through 7e9 layer parameters (8e9 less 1e9 of embeddings) at
        # 989 TFLOPS × 0.8: 2 × 120 × 7e9 ÷ 791.2e12 = 2.1233 ms
        (120, 0.8, 8e9, 1e9, 0.0, 989e12, 1, 2 * 120 * 7e9 / 791.2e12),
        # the same at TP 4: a quarter on each device, all four at once
        (120, 0.8, 8e9, 1e9, 0.0, 989e12, 4, 2 * 120 * 7e9 / 791.2e12 / 4),
        # a mixture: 46.7e9 with 0.26e9 embeddings and 45.1e9 in routed experts, whose grouped
        # kernels are not padded: 2 × 120 × 1.34e9 ÷ 791.2e12 = 0.40647 ms
        (120, 0.8, 46.7e9, 0.26e9, 45.1e9, 989e12, 1, 2 * 120 * 1.34e9 / 791.2e12),
        # Blackwell: 55 tokens at 2,250 TFLOPS × 0.62: 2 × 55 × 7e9 ÷ 1,395e12 = 0.55197 ms
        (55, 0.62, 8e9, 1e9, 0.0, 2250e12, 1, 2 * 55 * 7e9 / 1395e12),
        # a curve of no half-rate tokens: the pure roofline
        (0, 0.8, 8e9, 1e9, 0.0, 989e12, 1, 0.0),
    ],
)
def test_matmul_padding_by_hand(
    half: float,
    plateau: float,
    parameters: float,
    embeddings: float,
    routed: float,
    rate: float,
    tp: int,
    padding_s: float,
) -> None:
    got = matmul_padding_s(half, plateau, parameters, embeddings, routed, rate, tp)
    assert got == pytest.approx(padding_s, rel=1e-12)


def test_a_step_of_half_rate_tokens_runs_its_multiplications_at_half_the_plateau():
    """The curve: M tokens through the weights achieve the plateau × M ÷ (M + M½). For a dense
    model of 7e9 layer parameters (no embeddings) at the plateau rate, M = M½ = 120 tokens take
    twice the time their arithmetic would, M = 1,080 (9 × M½) 10 / 9 of it."""
    padding = matmul_padding_s(120, 0.8, 7e9, 0.0, 0.0, 989e12, 1)
    for tokens, stretch in ((120, 2.0), (1080, 10 / 9)):
        no_cache = (0.0, 1.0, 1.0)
        padded = decode_compute_s(14e9, tokens, 791.2e12, padding, *no_cache)
        bare = decode_compute_s(14e9, tokens, 791.2e12, 0.0, *no_cache)
        assert padded == pytest.approx(stretch * bare)


def test_itl_takes_the_slower_of_memory_and_compute_plus_overheads():
    # memory 20 ms, compute 5 ms, all-reduce 0.1 ms per token × 8, overhead 2 ms → 22.8 ms
    assert itl_s(0.020, 0.005, 1e-4, 8, 0.002, 0.0) == pytest.approx(0.0228, rel=1e-12)
    # and 30 µs for each of the 8 sequences: + 0.24 ms
    assert itl_s(0.020, 0.005, 1e-4, 8, 0.002, 30e-6) == pytest.approx(0.02304, rel=1e-12)
    assert itl_s(0.004, 0.030, 0.0, 8, 0.0, 0.0) == pytest.approx(0.030, rel=1e-12)


def test_prefill_compute_bound_for_long_prompts_memory_bound_for_tiny_ones():
    # 7e9 parameters, 32 layers, 32 heads × 128; 100 TFLOPS achieved; weight read 20 ms
    long = prefill_flops(7e9, 8192, 32, 32, 128)
    # 2 × 7e9 × 8192 + 2 × 32 × 8192² × 32 × 128 = 1.14688e14 + 1.7592186044416e13
    assert long == pytest.approx(1.14688e14 + 17_592_186_044_416, rel=1e-12)
    assert prefill_s(long, 100e12, 0.0, 0.020, 8192, 0.0, 0.0) == pytest.approx(long / 100e12)
    # the multiplications' padding adds its time to the arithmetic's
    padded = prefill_s(long, 100e12, 0.0168, 0.020, 8192, 0.0, 0.0)
    assert padded == pytest.approx(long / 100e12 + 0.0168, rel=1e-12)
    tiny = prefill_flops(7e9, 4, 32, 32, 128)
    assert tiny / 100e12 < 0.020
    assert prefill_s(tiny, 100e12, 0.0, 0.020, 4, 0.0, 0.0) == pytest.approx(0.020, rel=1e-12)


@pytest.mark.parametrize(
    ("chunked", "flops", "stall"),
    [
        # whole prompts: the prefill step, 0.4 s, whatever its arithmetic
        (0, 1e14, 0.4),
        # 1e14 FLOP at 1e15/s = 100 ms in 3 chunks (6,000 ÷ 2,048) whose steps read 20 ms of
        # weights each anyway: 100 − 60 = 40 ms, + 6,000 × 1 µs of all-reduce = 46 ms
        (1, 1e14, 0.046),
        # 1e13 FLOP: 10 ms of arithmetic hides under the 60 ms of reads; the all-reduce stays
        (1, 1e13, 0.006),
    ],
)
def test_prefill_stall_by_hand(chunked: int, flops: float, stall: float) -> None:
    """What another request's 6,000-token prompt adds to a running request's life."""
    chunks = prompt_chunks(6000, 2048)
    assert chunks == 3 and prompt_chunks(100, 2048) == 1
    got = prefill_stall_s(chunked, 0.4, flops, 1e15, chunks, 0.020, 6000, 1e-6)
    assert got == pytest.approx(stall, rel=1e-12)


def test_request_and_task_latency_by_hand():
    # TTFT 0.5 s, 100 output tokens at 20 ms, batch of 1, 30 ms network: 0.5 + 99 × 0.02 + 0.03
    assert e2e_s(0.5, 100, 0.02, 1, 0.4, 0.03) == pytest.approx(2.51, rel=1e-12)
    # in a batch of 4 the three other sequences' prefills (0.4 s each) stall this one
    assert e2e_s(0.5, 100, 0.02, 4, 0.4, 0.03) == pytest.approx(2.51 + 1.2, rel=1e-12)
    # an agent task of 3 calls with 2 s of tools between them: 3 × 2.51 + 2 × 2
    assert task_s(3, 2.51, 2.0) == pytest.approx(11.53, rel=1e-12)


@pytest.mark.parametrize(
    ("experts", "k", "batch", "fraction"),
    [
        (8, 2, 1, 0.25),  # Mixtral: one token reads 2 of 8 experts
        (8, 2, 4, 1 - 0.75**4),  # 0.68359375
        (256, 8, 1, 8 / 256),
        (256, 8, 64, 1 - (248 / 256) ** 64),
        (0, 0, 64, 1.0),  # dense: everything is read
    ],
)
def test_experts_touched_grow_with_batch(experts, k, batch, fraction):
    assert experts_touched_fraction(experts, k, batch) == pytest.approx(fraction, rel=1e-12)


def test_moe_weight_reads_at_batch_one():
    # Mixtral in BF16: 46,702,792,704 parameters; routed experts 32 × 8 × 3 × 4096 × 14336 =
    # 45,097,156,608; at batch 1 six of eight experts are not read:
    weights = 46_702_792_704 * 2
    routed = 32 * 8 * 3 * 4096 * 14336
    assert routed == 45_097_156_608
    read = decode_weight_bytes_per_step(weights, routed, 2, 0.25, 1)
    assert read == weights - routed * 2 * 0.75


def test_allreduce_by_hand():
    # TP 4, 80 layers, hidden 8192, 2-byte activations, 450 GB/s:
    # 80 × 2 × (2 × 3/4) × 8192 × 2 B = 3,932,160 B per token → 8.738… µs
    assert allreduce_s_per_token(4, 80, 8192, 2, 450e9) == pytest.approx(3_932_160 / 450e9)
    assert allreduce_s_per_token(1, 80, 8192, 2, np.nan) == 0


def test_capacity_closed_and_open_loop():
    # 16 sequences per replica, prefill 0.2 s, 101 output tokens at 30 ms:
    # 16 / (16 × 0.2 + 100 × 0.03) = 16 / 6.2 requests per second
    rate = requests_per_s_per_replica(16, 0.2, 101, 0.03)
    assert rate == pytest.approx(16 / 6.2, rel=1e-12)
    # closed loop, 40 users: ⌈40 / 16⌉ = 3 replicas
    assert replicas_needed(40, 16, 0, 0, rate) == 3
    # open loop, 10 requests/s, 5 s end to end: 50 in flight → ⌈50 / 16⌉ = 4 by memory,
    # ⌈10 / 2.5806⌉ = 4 by rate
    in_flight = in_flight_requests(forecast_requests_per_s(10, 0, 1, 1, 0), 5.0)
    assert in_flight == 50
    assert replicas_needed(0, 16, in_flight, 10, rate) == 4
    # twice the rate: by rate ⌈20 / 2.5806⌉ = 8 exceeds by memory ⌈50 / 16⌉ = 4
    assert replicas_needed(0, 16, 50, 20, rate) == 8
    assert np.isnan(replicas_needed(0, 0, 50, 20, rate))


@given(
    output=st.integers(1, 4000),
    extra=st.integers(1, 4000),
    itl=st.floats(1e-4, 1.0),
    ttft=st.floats(0, 10),
    batch=st.integers(1, 256),
)
def test_more_output_tokens_never_lower_latency(output, extra, itl, ttft, batch):
    assert e2e_s(ttft, output + extra, itl, batch, 0.1, 0.0) >= e2e_s(
        ttft, output, itl, batch, 0.1, 0.0
    )


@given(
    memory=st.integers(1, 2**40),
    more=st.integers(0, 2**40),
    weights=st.integers(0, 2**39),
    per_seq=st.integers(1, 2**33),
)
def test_more_memory_never_lowers_concurrency(memory, more, weights, per_seq):
    low = max_sequences(kv_budget_bytes(memory, weights, 0, 0, 0, np.nan), per_seq)
    high = max_sequences(kv_budget_bytes(memory + more, weights, 0, 0, 0, np.nan), per_seq)
    assert high >= low


@pytest.mark.parametrize(
    ("kind", "tp", "per_step_us"),
    [
        # NVLink: 8 µs + 2(TP − 1) × 0.1 µs a collective, 2 × 36 layers (gpt-oss-120b)
        ("nvlink", 1, 0.0),
        ("nvlink", 2, 2 * 36 * 8.2),  # 590.4 µs
        ("nvlink", 4, 2 * 36 * 8.6),  # 619.2 µs
        ("nvlink", 8, 2 * 36 * 9.4),  # 676.8 µs
        # PCIe: 3 µs a ring hop, 2(TP − 1) hops
        ("pcie", 2, 2 * 36 * 6.0),  # 432 µs
        ("pcie", 4, 2 * 36 * 18.0),  # 1,296 µs
        ("pcie", 8, 2 * 36 * 42.0),  # 3,024 µs: the 42 µs of 8 × RTX 4090 (nccl#1530) each time
    ],
)
def test_allreduce_latency_per_step(kind: str, tp: int, per_step_us: float) -> None:
    from planner.catalog.interconnects import collective_latency
    from planner.model.latency import allreduce_latency_s_per_step

    link = collective_latency(kind)
    got = allreduce_latency_s_per_step(tp, 36, link.fixed_s, link.per_hop_s)
    assert float(got) * 1e6 == pytest.approx(per_step_us)
    assert link.at(tp) * 2 * 36 * 1e6 == pytest.approx(per_step_us)


def test_a_device_without_a_named_link_takes_the_fastest() -> None:
    from planner.catalog.interconnects import NVLINK, collective_latency

    assert collective_latency(None) is NVLINK


@pytest.mark.parametrize(
    ("family", "half", "plateau"),
    [
        ("hopper", 120, 0.80),  # H100 sweeps: 87–145 tokens; MAMF 794.5 of 989 TFLOPS
        ("blackwell", 55, 0.62),  # B200 sweeps: 43–58 tokens at 1,389–1,398 of 2,250 TFLOPS
        ("ampere", 120, 0.87),  # MAMF 271.2 of 312; M½ assumed Hopper's
        ("cdna3", 120, 0.51),  # MAMF 668.4 of 1,307; M½ assumed Hopper's
        (None, 0, 1.0),  # no family named: the roofline's bound
    ],
)
def test_matmul_curves_by_family(family: str | None, half: float, plateau: float) -> None:
    from planner.catalog.matmul import matmul_curve

    curve = matmul_curve(family)
    assert (curve.half_tokens, curve.plateau_fraction) == (half, plateau)
    assert curve.source


def test_the_hardware_sheet_takes_an_entry_s_half_tokens_over_its_family_s() -> None:
    """The shipped H100 takes Hopper's 120 tokens and 0.80, the B200 Blackwell's 55 and 0.62,
    the seed's device, of no family, none (the pure roofline), and an entry's own figure wins."""
    from dataclasses import replace

    from planner.catalog import load_catalog
    from planner.plan.tables import input_tables
    from planner.resources import shipped_catalogs

    def sheet(folder) -> dict[str, tuple[float, float]]:
        frame = input_tables(load_catalog(folder)).sheets["Hardware"].set_index("id")
        columns = ["matmul_half_tokens", "matmul_plateau_fraction"]
        return {key: tuple(values) for key, values in frame[columns].iterrows()}

    shipped = sheet(shipped_catalogs())
    assert shipped["h100-sxm-80gb"] == (120.0, 0.80)
    assert shipped["b200-180gb"] == (55.0, 0.62)
    assert sheet(shipped_catalogs() / "examples" / "seed")["seed-16gib"][0] == 0.0
    seed = load_catalog(shipped_catalogs() / "examples" / "seed")
    device = seed.hardware[0].model_copy(update={"family": "hopper", "matmul_half_tokens": 64})
    frame = input_tables(replace(seed, hardware=(device,))).sheets["Hardware"]
    assert frame["matmul_half_tokens"].tolist() == [64.0]
    assert frame["matmul_plateau_fraction"].tolist() == [0.80]
