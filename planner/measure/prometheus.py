"""Prefix-cache and speculative-decoding figures from vLLM's Prometheus ``/metrics`` page.

A scrape of ``/metrics`` (``curl localhost:8000/metrics > metrics.txt``) after a run holds the
engine's counters since it started, one sample per line in Prometheus's text format::

    vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000.0
    vllm:prefix_cache_hits_total{engine="0",model_name="m"} 791.0

Each counter is summed over its label sets (engines of a data-parallel deployment, models), and
read as:

* ``prefix_cache_hit_ratio`` = hits ÷ queries (the prompt tokens found in the cache, of those
  looked up);
* ``acceptance_length`` = 1 + accepted ÷ drafts (the tokens a verifying step emits per
  sequence), ``proposed_tokens`` = draft tokens ÷ drafts (k) and ``draft_acceptance_rate`` =
  accepted ÷ draft tokens, from ``vllm:spec_decode_num_drafts_total``,
  ``vllm:spec_decode_num_draft_tokens_total`` and ``vllm:spec_decode_num_accepted_tokens_total``.

V0's gauge ``vllm:gpu_prefix_cache_hit_rate`` (a share) is read where the counters are absent.
A scrape taken before the run is not subtracted: scrape a fresh server, or give the counters'
growth over the run.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict

from planner.measure.errors import MeasurementFileError

#: Longest scrape read, in lines: a /metrics page is a few thousand.
MAX_LINES = 200_000

#: A sample: its name, its labels (skipped) and its value.
_SAMPLE = re.compile(
    r"^(vllm:[a-z_]{1,80})(?:\{[^}\n]{0,2000}\})?[ \t]{1,8}([-+0-9.eE]{1,40}|NaN|[+-]Inf)\b"
)

#: The counters read, by the name each takes here.
COUNTERS = {
    "hits": "vllm:prefix_cache_hits_total",
    "queries": "vllm:prefix_cache_queries_total",
    "drafts": "vllm:spec_decode_num_drafts_total",
    "draft_tokens": "vllm:spec_decode_num_draft_tokens_total",
    "accepted": "vllm:spec_decode_num_accepted_tokens_total",
}
#: V0's gauge of the prefix cache's hit rate (a share), read where its counters are absent.
GAUGE = "vllm:gpu_prefix_cache_hit_rate"


class MetricsError(MeasurementFileError):
    """A scrape that holds no counter read here, or one no engine could report."""


def _samples(text: str) -> dict[str, float]:
    """Each vLLM sample's value summed over its label sets; comments and other names skipped."""
    sums: dict[str, float] = defaultdict(float)
    for number, line in enumerate(text.splitlines()[:MAX_LINES], start=1):
        match = _SAMPLE.match(line)
        if match is None:
            continue
        value = float(match.group(2))
        if not math.isfinite(value) or value < 0:
            raise MetricsError(
                f"{match.group(1)} is {match.group(2)}: a counter is a finite count, at least 0",
                match.group(1),
                number,
            )
        sums[match.group(1)] += value
    return dict(sums)


def parse_vllm_metrics(text: str) -> dict[str, float]:
    """The prefix cache's hit ratio and the speculative decoding's acceptance a /metrics scrape
    gives (each only where its counters are there and counted something).

    Raises :class:`MetricsError` when it gives neither, or a count is negative or not finite.
    """
    samples = _samples(text)
    counts = {name: samples.get(counter) for name, counter in COUNTERS.items()}
    figures: dict[str, float] = {}
    hits, queries = counts["hits"], counts["queries"]
    if hits is not None and queries:
        figures["prefix_cache_hit_ratio"] = min(hits / queries, 1.0)
    elif GAUGE in samples:
        figures["prefix_cache_hit_ratio"] = min(samples[GAUGE], 1.0)
    drafts, tokens, accepted = counts["drafts"], counts["draft_tokens"], counts["accepted"]
    if drafts and tokens and accepted is not None:
        figures["acceptance_length"] = 1 + accepted / drafts
        figures["proposed_tokens"] = round(tokens / drafts)
        figures["draft_acceptance_rate"] = min(accepted / tokens, 1.0)
    if not figures:
        raise MetricsError(
            "no prefix-cache or speculative-decoding counter found (expected lines such as "
            "'vllm:prefix_cache_hits_total{...} 791.0' and 'vllm:prefix_cache_queries_total"
            "{...} 1000.0', or vllm:spec_decode_num_drafts_total, _draft_tokens_total and "
            "_accepted_tokens_total)"
        )
    return figures
