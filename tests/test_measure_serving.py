"""A prefix cache's hit ratio and speculative decoding's acceptance, as vLLM reports them while
serving: read from its log's metrics lines and its /metrics counters, turned by ``planner
calibrate`` into the figures to set in the catalog, and asked for by the what-to-measure-next
list where a plan depends on them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from planner.catalog import load_catalog
from planner.cli import main
from planner.measure import load_measurements
from planner.measure.calibrate import calibrate
from planner.measure.features import acceptance_rate_from_length
from planner.measure.next_steps import feature_measurements
from planner.measure.prometheus import MetricsError, parse_vllm_metrics
from planner.measure.vllm_log import LogError, parse_vllm_log, summarise
from planner.resources import shipped_catalogs

SERVING = Path(__file__).parent / "fixtures" / "vllm" / "serving"


def test_a_v1_log_gives_the_hit_ratio_and_the_acceptance() -> None:
    """The fixture's two intervals (vllm-project/vllm pull request #43447): the hit rate last
    printed, 23.6 %; the mean acceptance lengths 1.80 over 788 drafted tokens and 1.82 over
    2,123, weighted: (788 × 1.80 + 2,123 × 1.82) ÷ 2,911 = 5,282.26 ÷ 2,911 = 1.814586; one
    position listed, so k = 1; accepted ÷ drafted = (648 + 1,744) ÷ 2,911 = 0.821711."""
    figures = summarise(parse_vllm_log((SERVING / "v1-spec-prefix-metrics.log").read_text()))
    assert figures["prefix_cache_hit_ratio"].value == pytest.approx(0.236, abs=1e-12)
    assert figures["prefix_cache_hit_ratio"].line == 3
    assert figures["acceptance_length"].value == pytest.approx(1.814586, abs=1e-6)
    assert figures["proposed_tokens"].value == 1
    assert figures["draft_acceptance_rate"].value == pytest.approx(0.821711, abs=1e-6)


def test_a_v0_log_gives_the_gpu_s_hit_rate() -> None:
    """V0 prints the GPU's and the CPU's rates; the GPU's is the one read (a line quoted by
    zzzyq in vllm-project/vllm pull request #18674, 2025-05-25, on a CPU build)."""
    line = "INFO 05-25 06:50:29 [metrics.py:502] Prefix cache hit rate: GPU: 0.00%, CPU: 90.00%"
    (figure,) = parse_vllm_log(line)
    assert (figure.name, figure.value) == ("prefix_cache_hit_ratio", 0.0)


def test_a_hit_rate_past_one_hundred_percent_is_refused() -> None:
    with pytest.raises(LogError, match="prefix_cache_hit_ratio 1.5 is not a share"):
        parse_vllm_log("Engine 000: GPU KV cache usage: 0.8%, Prefix cache hit rate: 150.0%")


@pytest.mark.parametrize(
    ("length", "k", "alpha"),
    [
        (2.533, 3, 0.7),  # 1 + 0.7 + 0.49 + 0.343
        (2.29, 3, 0.6338),  # vLLM's EAGLE-1 on Llama 3.1 8B: 1 + 0.6338 + 0.4017 + 0.2546
        (1.8, 1, 0.8),  # one proposal: L − 1
        (1.0, 3, 0.0),  # nothing accepted
        (5.0, 3, 1.0),  # more than k + 1 tokens: all accepted
    ],
)
def test_the_acceptance_rate_of_a_mean_acceptance_length(length, k, alpha) -> None:
    assert acceptance_rate_from_length(length, k) == pytest.approx(alpha, abs=1e-4)


#: A /metrics scrape in vLLM's Prometheus text format (written for this test): two engines of
#: a data-parallel deployment, their created timestamps and histograms not read.
SCRAPE = """\
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 120.0
vllm:prefix_cache_hits_total{engine="1",model_name="m"} 80.0
vllm:prefix_cache_hits_created{engine="0",model_name="m"} 1.7e+09
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 200.0
vllm:prefix_cache_queries_total{engine="1",model_name="m"} 300.0
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 200.0
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 600.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 175.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="1.0",model_name="m"} 3.0
"""


def test_the_counters_give_the_ratio_and_the_acceptance() -> None:
    """Hits (120 + 80) ÷ queries (200 + 300) = 0.4; 1 + 175 accepted ÷ 200 drafts = 1.875
    tokens a step; 600 draft tokens ÷ 200 drafts = 3 proposed; 175 ÷ 600 = 0.291667 of the
    proposals accepted."""
    assert parse_vllm_metrics(SCRAPE) == pytest.approx(
        {
            "prefix_cache_hit_ratio": 0.4,
            "acceptance_length": 1.875,
            "proposed_tokens": 3,
            "draft_acceptance_rate": 175 / 600,
        }
    )
    with pytest.raises(MetricsError, match="no prefix-cache or speculative-decoding counter"):
        parse_vllm_metrics("vllm:num_requests_running 3.0\n")


INDEX = """\
measurements:
  - id: chat-scrape
    file: chat.txt
    format: vllm-metrics
    hardware: h100-sxm-80gb
    model: llama-3.1-8b
    precision: bf16
    workload: chat
"""


@pytest.fixture
def scraped(tmp_path: Path) -> Path:
    folder = tmp_path / "catalogs"
    shutil.copytree(shipped_catalogs(), folder)
    (folder / "measurements").mkdir(exist_ok=True)
    (folder / "measurements" / "index.yaml").write_text(INDEX)
    (folder / "measurements" / "chat.txt").write_text(SCRAPE)
    return folder


def test_calibrate_says_what_to_set(scraped: Path) -> None:
    """The scrape's 0.4 becomes chat's measured hit ratio; its 1.875 tokens a step at k = 3 an
    acceptance rate for chat of 0.5 (1 + 0.5 + 0.25 + 0.125 = 1.875); the two restating figures
    are listed as not used; nothing else is fitted, and the notes carry what to set."""
    catalog = load_catalog(scraped)
    (fit,) = calibrate(catalog, load_measurements(catalog))
    assert [m.sentence() for m in fit.measured] == [
        "set workloads.yaml chat: prefix.measured_hit_ratio: 0.4 (measurement chat-scrape: "
        "the engine's prefix cache hit rate)",
        "set assumptions.yaml: engine.speculative.acceptance_by_workload.chat: 0.5 (measurement "
        "chat-scrape: mean acceptance length 1.875 at k = 3, the root of 1 + a + … + a^3 = L)",
    ]
    assert {u.figure for u in fit.unused} == {"proposed_tokens", "draft_acceptance_rate"}
    shown = CliRunner().invoke(main, ["calibrate", "--catalogs", str(scraped)])
    assert shown.exit_code == 0, shown.output
    assert "  set workloads.yaml chat: prefix.measured_hit_ratio: 0.4 " in shown.stderr
    (entry,) = yaml.safe_load(shown.stdout)["calibration"]
    assert entry["notes"] == [m.sentence() for m in fit.measured]


def test_a_hit_ratio_without_its_workload_sets_nothing(scraped: Path) -> None:
    index = scraped / "measurements" / "index.yaml"
    index.write_text(INDEX.replace("    workload: chat\n", ""))
    catalog = load_catalog(scraped)
    (fit,) = calibrate(catalog, load_measurements(catalog))
    assert [m.path for m in fit.measured] == ["engine.speculative.acceptance_rate"]
    (why,) = [u.reason for u in fit.unused if u.figure == "prefix_cache_hit_ratio"]
    assert why.startswith("a hit ratio is a workload's: name the workload")


#: A line of the ask whose plan counts cached tokens and speculates.
ROW = {
    "model": "llama-3.1-8b",
    "workload": "chat",
    "prefix_hit_ratio": 0.5,
    "measured_prefix_hit_ratio": float("nan"),
    "prefill_tokens_mean": 1000.0,
    "prompt_tokens_mean": 2000.0,
    "speculative_tokens": 3,
    "acceptance_rate": 0.7,
    "speculative_tokens_per_step": 2.533,
    "speculative_speedup": 1.8,
}


def test_what_to_measure_next_names_the_features_the_plan_depends_on(scraped: Path) -> None:
    lines = feature_measurements("llama-3.1-8b on h100 for chat", ROW, ())
    assert lines == [
        "llama-3.1-8b on h100 for chat: measure the prefix cache's hit ratio (vLLM's 'Prefix "
        "cache hit rate' log line, or vllm:prefix_cache_hits_total ÷ "
        "vllm:prefix_cache_queries_total, with the workload named in index.yaml); planned 50% "
        "of the prompt found cached, 1,000 of 2,000 tokens prefilled.",
        "llama-3.1-8b on h100 for chat: measure speculative decoding's acceptance (vLLM's "
        "'SpecDecoding metrics: Mean acceptance length' log line, or its vllm:spec_decode "
        "counters); planned a rate of 0.70, 2.53 tokens a step at 3 proposed, 1.80× the plain "
        "step's token rate at the full batch.",
    ]
    # neither where the plan does not depend on it, nor once measured
    plain = {**ROW, "prefix_hit_ratio": 0.0, "speculative_tokens": 0}
    assert feature_measurements("x", plain, ()) == []
    catalog = load_catalog(scraped)
    assert feature_measurements("x", ROW, load_measurements(catalog)) == []
