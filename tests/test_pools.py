"""Disaggregated prefill and decode pools, simulated together (planner.serving.pools): the
prefill pool's steps and transfer queue worked by hand on a step model of round numbers, the
search for both pools' sizes against a brute-force answer, the planned pools, and the pools
simulated on the shipped catalogs against the closed form's figures at light load."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from planner.catalog import Catalog, load_catalog
from planner.model.disaggregated import decode_pool_replicas, prefill_pool_planned
from planner.serving.pools import fewest_pools, prefill_pool, simulate_pools, transfer_s
from planner.serving.search import fewest
from planner.serving.traffic import Arrivals

SHIPPED = Path(__file__).resolve().parent.parent / "catalogs"


class RoundStep:
    """A step model of round numbers: a prefill-only step costs 10 ms plus 1 ms a token; it
    records the chunks (tokens done, tokens in the step) and whole prompts it is asked for."""

    shared_prefix_tokens = 0.0

    def __init__(self) -> None:
        self.chunks: list[list[tuple[float, float]]] = []
        self.wholes: list[tuple[list[float], list[float] | None]] = []

    def mixed_step_s(
        self, batch: float, context_tokens_total: float, chunks: Sequence[tuple[float, float]]
    ) -> float:
        assert batch == 0 and context_tokens_total == 0  # no sequence decodes on a prefill pool
        self.chunks.append(list(chunks))
        return 0.010 + 0.001 * sum(tokens for _, tokens in chunks)

    def prefill_batch_s(
        self, prompt_tokens: Sequence[float], cached_tokens: Sequence[float] | None = None
    ) -> float:
        self.wholes.append(
            (list(prompt_tokens), None if cached_tokens is None else list(cached_tokens))
        )
        cached = sum(cached_tokens) if cached_tokens is not None else 0
        return 0.010 + 0.001 * (sum(prompt_tokens) - cached)


def test_one_prefill_replica_chunks_two_prompts_and_queues_their_transfers() -> None:
    """Two prompts of 600 tokens at t = 0 on one replica with a 1,000-token budget: the first
    step takes A's 600 and 400 of B (10 + 1,000 ms = 1.01 s: A done), the second B's last 200
    (0.21 s: B done at 1.22 s). Each cache takes 0.5 s on the replica's one link: A's arrives
    at 1.51 s, B's waits for A's and arrives at 2.01 s. Busy 1.22 s of 2.01 s."""
    step = RoundStep()
    run = prefill_pool(step, [0.0, 0.0], [600, 600], [0, 0], 1000, 1, [0.5, 0.5])  # type: ignore[arg-type]
    assert step.chunks == [[(0.0, 600.0), (0.0, 400.0)], [(400.0, 200.0)]]
    assert run.done_s.tolist() == pytest.approx([1.01, 1.22])
    assert run.ready_s.tolist() == pytest.approx([1.51, 2.01])
    assert run.utilisation == pytest.approx(1.22 / 2.01)
    assert run.hit_ratio == 0


def test_two_prefill_replicas_take_turns() -> None:
    """Round-robin: A on the first replica, B on the second, each alone: done at 0.61 s, its
    cache at 1.11 s; both replicas busy 0.61 s of 1.11 s."""
    run = prefill_pool(RoundStep(), [0.0, 0.0], [600, 600], [0, 0], 1000, 2, [0.5, 0.5])  # type: ignore[arg-type]
    assert run.done_s.tolist() == pytest.approx([0.61, 0.61])
    assert run.ready_s.tolist() == pytest.approx([1.11, 1.11])
    assert run.utilisation == pytest.approx(0.61 / 1.11)


def test_a_late_prompt_waits_for_the_step_in_progress() -> None:
    """A (1,000 tokens) at 0 fills a step to 1.01 s; B (100) arriving at 0.5 s is taken at the
    next step boundary: done at 1.01 + 0.11 = 1.12 s. Links of no time."""
    run = prefill_pool(RoundStep(), [0.0, 0.5], [1000, 100], [0, 0], 1000, 1, [0.0, 0.0])  # type: ignore[arg-type]
    assert run.done_s.tolist() == pytest.approx([1.01, 1.12])


def test_cached_tokens_are_skipped_and_counted() -> None:
    """600 tokens, 400 found in the prefix cache: one chunk from token 400 of 200 tokens
    (0.21 s); two thirds of the prompt's tokens were found."""
    step = RoundStep()
    run = prefill_pool(step, [0.0], [600], [400], 1000, 1, [0.0])  # type: ignore[arg-type]
    assert step.chunks == [[(400.0, 200.0)]]
    assert run.done_s.tolist() == pytest.approx([0.21])
    assert run.hit_ratio == pytest.approx(400 / 600)


def test_without_chunked_prefill_every_waiting_prompt_goes_whole() -> None:
    """No token budget: A and B (600 each, at 0) in one step of 1.21 s, C (arriving at 0.1 s)
    in the next, 0.31 s."""
    step = RoundStep()
    run = prefill_pool(step, [0.0, 0.0, 0.1], [600, 600, 300], [0, 0, 0], None, 1, [0.0] * 3)  # type: ignore[arg-type]
    assert step.wholes == [([600.0, 600.0], None), ([300.0], None)]
    assert run.done_s.tolist() == pytest.approx([1.21, 1.21, 1.52])


def test_the_cache_a_request_moves_takes_its_own_prompt() -> None:
    """4,000 tokens of 131,072 B (Llama 3.1 70B's FP8 cache on one of two devices) are
    524,288,000 B: 10.48576 ms at 50 GB/s; 1,000 tokens a quarter of it."""
    assert transfer_s([4000, 1000], 131_072, 50e9).tolist() == pytest.approx(
        [0.01048576, 0.00262144], rel=1e-12
    )


@pytest.mark.parametrize(
    ("closed_form", "expected"),
    [
        ((2, 4), (3, 5)),  # the simulation needs more of both
        ((4, 6), (4, 6)),  # the closed form's pools are more than the simulation needs
        ((1, 9), (3, 9)),
    ],
)
def test_the_pools_search_finds_both_sizes(
    closed_form: tuple[int, int], expected: tuple[int, int]
) -> None:
    """Targets met with at least 3 prefill and 5 decode replicas (and the prefill pool tried is
    ample, 2p + 1 ≥ 3): the search gives each pool the larger of that and the closed form."""
    tried: list[tuple[int, int]] = []

    def simulate_at(p: int, d: int) -> tuple[bool, float]:
        tried.append((p, d))
        return p >= 3 and d >= 5, max(3 / p, 5 / d)

    def least(trial, start: int, upper: int) -> int | None:  # type: ignore[no-untyped-def]
        return fewest(trial, min(start, upper), upper, None)[1]

    assert fewest_pools(simulate_at, least, *closed_form, 64) == expected
    assert len(set(tried)) <= 10


def test_the_pools_search_gives_up_past_its_limit() -> None:
    def never(p: int, d: int) -> tuple[bool, float]:
        return False, 2.0

    def least(trial, start: int, upper: int) -> int | None:  # type: ignore[no-untyped-def]
        return fewest(trial, min(start, upper), upper, None)[1]

    assert fewest_pools(never, least, 2, 4, 16) is None


@pytest.mark.parametrize(
    ("closed", "simulated", "is_simulated", "planned"),
    [(5, 6, True, 6), (5, 4, True, 5), (5, math.nan, True, 5), (5, 6, False, 5), (0, 0, True, 0)],
)
def test_the_prefill_pool_planned(
    closed: float, simulated: float, is_simulated: bool, planned: float
) -> None:
    """The closed form's prefill replicas, raised to the simulation's; the decode pool the
    rest of the replicas planned."""
    assert prefill_pool_planned(closed, simulated, is_simulated) == planned
    assert decode_pool_replicas(14, planned) == 14 - planned


def test_a_trace_may_give_each_request_its_delay_before_the_queue() -> None:
    with pytest.raises(ValueError, match="one per task"):
        Arrivals.trace([0.0, 1.0], entry_delays_s=[0.5])
    with pytest.raises(ValueError, match=">= 0"):
        Arrivals.trace([0.0], entry_delays_s=[-1.0])


# The pools simulated on the shipped catalogs -----------------------------------------------


def with_pools() -> Catalog:
    catalog = load_catalog(SHIPPED)
    layouts = {"serving_layouts": ["aggregated", "disaggregated"]}
    return dataclasses.replace(catalog, assumptions=catalog.assumptions.model_copy(update=layouts))


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    from planner.plan.sweep import evaluate

    table = evaluate(with_pools()).table
    keep = (
        (table["model"] == "llama-3.1-8b")
        & (table["precision"] == "fp8")
        & (table["tensor_parallel"] == 1)
        & (table["disaggregated"] == 1)
        & table["hardware"].isin(["h100-sxm-80gb", "l40s-48gb"])
    )
    return table[keep].set_index(["workload", "hardware"], drop=False)


def test_at_light_load_the_pools_add_the_transfer_and_one_step(rows: pd.DataFrame) -> None:
    """The ticket summaries (one request every 20 s) on H100s: a request meets no queue, so on
    one prefill and one decode replica its mean TTFT is one pool's simulated at one replica
    (the same prompts, prefilled alone), plus its cache's transfer (the mean prompt's, 2,000
    tokens of 65,536 B at 50 GB/s: 2.62 ms) and the decode replica's one step for its first
    token (a step of a batch of one, its median gap); its gaps are one pool's."""
    from planner.serving.configs import sim_config
    from planner.serving.simulate import simulate

    catalog = with_pools()
    workload = catalog.get("workloads", "ticket-summaries")
    pools = rows.loc[("ticket-summaries", "h100-sxm-80gb")].to_dict()
    cfg = sim_config(catalog, workload, pools, 1, n_requests=400)
    result = simulate_pools(cfg, 1, 1, pools["kv_bytes_per_token"], pools["network_bytes_per_s"])
    one_pool = simulate(cfg)
    assert pools["request_kv_transfer_s"] == pytest.approx(2000 * 65_536 / 50e9, rel=1e-12)
    expected = one_pool.ttft_mean_s + pools["request_kv_transfer_s"] + result.itl_p50_s
    assert result.ttft_mean_s == pytest.approx(expected, rel=0.01)
    assert result.itl_p50_s == pytest.approx(one_pool.itl_p50_s, rel=0.01)
    assert result.rejected_fraction == 0
    assert 0 < result.prefill_utilisation < 0.01


def test_the_simulation_sizes_both_pools(rows: pd.DataFrame) -> None:
    """The documents (2 a second, long prompts) on L40S: both pools are simulated together,
    each planned at no fewer than the closed form's, the targets met, and a run with one
    decode replica fewer than the simulation found misses one."""
    from planner.serving.configs import sim_config
    from planner.serving.sizing import misses, size_candidate

    catalog = with_pools()
    row = rows.loc[("document-analysis", "l40s-48gb")].to_dict()
    sized = size_candidate(catalog, row)
    p = int(sized["sim_prefill_pool_replicas"])
    total = int(sized["sim_replicas_needed"])
    assert sized["meets_targets_sim"]
    assert p >= row["prefill_pool_replicas"] >= 1
    assert total - p >= row["replicas_needed"] - row["prefill_pool_replicas"]
    assert sized["sim_reason"] == f"meets targets with {p} prefill + {total - p} decode replicas"
    assert sized["sim_runs"] >= 2
    workload = catalog.get("workloads", "document-analysis")
    cfg = sim_config(catalog, workload, row, 1)
    ceiling = catalog.assumptions.max_rejected_fraction
    fewer = simulate_pools(cfg, 2 * p + 1, 1, row["kv_bytes_per_token"], row["network_bytes_per_s"])
    assert misses(fewer, workload, ceiling)  # one decode replica cannot hold the documents


def test_a_disaggregated_option_plans_the_simulated_pools() -> None:
    """Through the pipeline: a simulated disaggregated option's replicas planned are its
    simulated pools together, its prefill pool planned the simulated one, and its label says
    both."""
    from planner.pipeline import plan
    from planner.plan.labels import option_label

    results = plan(with_pools(), processes=1)
    table = results.table
    done = table[(table["disaggregated"] == 1) & table["simulated"].astype(bool)]
    done = done[np.isfinite(done["sim_replicas_needed"].astype(float))]
    assert len(done) > 0
    for _, row in done.iterrows():
        assert row["replicas_planned"] == max(row["replicas_needed"], row["sim_replicas_needed"])
        assert row["prefill_pool_planned"] == max(
            row["prefill_pool_replicas"], row["sim_prefill_pool_replicas"]
        )
        decode = row["replicas_planned"] - row["prefill_pool_planned"]
        assert f"prefill {int(row['prefill_pool_planned'])} + decode {int(decode)}" in option_label(
            row.to_dict()
        )


def test_pools_that_no_count_can_serve_are_not_searched(rows: pd.DataFrame) -> None:
    """An inter-token target below a decode step of one sequence (0.1 ms): no pool sizes meet
    it, said without a simulation."""
    from planner.serving.sizing import size_candidate

    row = rows.loc[("document-analysis", "l40s-48gb")].to_dict() | {"itl_p95_target_s": 1e-4}
    sized = size_candidate(with_pools(), row)
    assert sized["sim_bound"] == "bandwidth" and sized["sim_runs"] == 0
    assert sized["sim_reason"].endswith("> 0.000 s target at any replica count")
    assert math.isnan(sized["sim_replicas_needed"])
