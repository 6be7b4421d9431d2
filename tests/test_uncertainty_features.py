"""Draws of the engine features' uncertain figures: a speculative acceptance rate and a
workload's measured prefix-cache hit ratio given as distributions are sampled with the rest."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from planner.catalog import load_catalog
from planner.plan.sweep import evaluate
from planner.plan.uncertainty import draw_values, monte_carlo, uncertain_inputs, with_values

SEED = Path(__file__).resolve().parent.parent / "catalogs" / "examples" / "seed"

#: vLLM V1 (prefix caching on) with an EAGLE head proposing 3 tokens at an acceptance rate
#: between 0.5 and 0.9, most likely 0.7.
ENGINE = """\
  engine:
    name: vllm
    version: '0.10.1'
    speculative:
      method: eagle
      proposed_tokens: 3
      draft_parameters: 250000000
      draft_layers: 1
      acceptance_rate: {low: 0.5, mode: 0.7, high: 0.9}
"""

#: The seed's 16 users sharing a prompt prefix, its measured hit ratio between 0.2 and 0.8.
WORKLOADS = """\
workloads:
  - id: chat
    prompt_tokens: 3072
    max_output_tokens: 1024
    concurrency: 16
    prefix: {shared_tokens: 1024, measured_hit_ratio: {low: 0.2, mode: 0.5, high: 0.8}}
"""


def _row(table: pd.DataFrame) -> pd.Series:
    """The plan's row of the seed's 4 GiB model."""
    (index,) = table.index[table["model"] == "invented-4gib"]
    return table.loc[index]


@pytest.fixture
def catalog_dir(tmp_path: Path) -> Path:
    shutil.copytree(SEED, tmp_path, dirs_exist_ok=True)
    assumptions = tmp_path / "assumptions.yaml"
    assumptions.write_text(assumptions.read_text() + ENGINE)
    (tmp_path / "workloads.yaml").write_text(WORKLOADS)
    return tmp_path


def test_the_acceptance_rate_and_the_hit_ratio_are_drawn(catalog_dir: Path) -> None:
    """Both are found, plan at their modes, and a draw sets each: at α = 0.5 a step of k = 3
    emits 1 + 0.5 + 0.25 + 0.125 = 1.875 tokens (2.533 at the mode, 0.7), and the prompt's
    planned hit ratio is the drawn 0.2 (0.5 at the mode)."""
    catalog = load_catalog(catalog_dir)
    found = uncertain_inputs(catalog)
    assert [i.label for i in found] == [
        "assumptions: engine.speculative.acceptance_rate",
        "workloads chat: prefix.measured_hit_ratio",
    ]
    assert not any(i.whole for i in found)
    central = _row(evaluate(catalog).table)
    assert central["speculative_tokens_per_step"] == pytest.approx(2.533, rel=1e-12)
    assert central["prefix_hit_ratio"] == pytest.approx(0.5, rel=1e-12)
    drawn = _row(evaluate(with_values(catalog, found, [0.5, 0.2])).table)
    assert drawn["speculative_tokens_per_step"] == pytest.approx(1.875, rel=1e-12)
    assert drawn["prefix_hit_ratio"] == pytest.approx(0.2, rel=1e-12)
    assert drawn["itl_s"] > central["itl_s"]  # fewer tokens a step: slower tokens


def test_draws_spread_the_latency_the_acceptance_rate_moves(catalog_dir: Path) -> None:
    """Each draw's values lie within the ranges and differ from draw to draw; over 40 draws
    the ITL at load spreads (P10 below P90), where at a fixed rate and ratio it would not."""
    catalog = load_catalog(catalog_dir)
    found = uncertain_inputs(catalog)
    values = [draw_values(found, catalog.assumptions.seed, d) for d in range(40)]
    assert all(0.5 <= a <= 0.9 and 0.2 <= h <= 0.8 for a, h in values)
    assert len({a for a, _ in values}) == 40
    bands = monte_carlo(catalog, 40)
    (option,) = bands.options[bands.options["model"] == "invented-4gib"].itertuples()
    assert option.itl_load_s_p10 < option.itl_load_s_p90
