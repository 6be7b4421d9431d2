"""Latency and throughput a serving benchmark measured, and device memory as ``nvidia-smi`` saw it.

Three formats users already have, each read into named statistics in base units (seconds,
requests or tokens per second, bytes):

* ``vllm bench serve --save-result`` (and the older ``benchmark_serving.py``): a flat JSON object
  with ``mean_ttft_ms``, ``median_itl_ms``, ``p99_e2el_ms``, ``request_throughput``,
  ``max_concurrency``... in milliseconds and per second.
* GenAI-Perf's ``profile_export_genai_perf.json`` and AIPerf's ``profile_export_aiperf.json``:
  one object per metric (``time_to_first_token``, ``inter_token_latency``, ``request_latency``,
  ``output_token_throughput``...) with its ``unit`` and ``avg``, ``p50``, ``p90``, ``p99``...
* ``nvidia-smi --query-gpu=...,memory.used --format=csv``: a CSV whose ``memory.used [MiB]``
  column is read; its peak is the figure.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from planner.model.units import BYTE_UNITS


class FormatError(ValueError):
    """A file that is not the format it was said to be; the message says what was expected."""


#: vLLM's statistic prefixes and the name each takes here.
_VLLM_STATS = {"mean": "mean", "median": "p50", "std": "std"}
#: vLLM's latency keys and the metric each is.
_VLLM_METRICS = {"ttft": "ttft_s", "tpot": "tpot_s", "itl": "itl_s", "e2el": "e2e_s"}
_VLLM_KEY = re.compile(r"^(mean|median|std|p[0-9]+(?:\.[0-9]+)?)_(ttft|tpot|itl|e2el)_ms$")
#: vLLM's rates and sizes, kept as they are (per second, counts).
_VLLM_PLAIN = (
    "request_throughput",
    "output_throughput",
    "total_token_throughput",
    "max_concurrency",
    "request_rate",
    "completed",
    "num_prompts",
    "total_input_tokens",
    "total_output_tokens",
    "duration",
)


def _finite(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise FormatError(f"{key} must be a finite number, got {value!r}")
    return float(value)


def _object(text: str) -> Mapping[str, Any]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise FormatError(f"not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise FormatError("expected a JSON object")
    return data


def parse_vllm_bench(text: str) -> dict[str, float]:
    """Statistics of a ``vllm bench serve --save-result`` JSON: ``ttft_s.p50``, ``itl_s.p99``,
    ``e2e_s.mean``... in seconds, and its throughputs, concurrency and counts as given.

    Raises :class:`FormatError` when no latency statistic is there.
    """
    data = _object(text)
    out: dict[str, float] = {}
    for key, value in data.items():
        match = _VLLM_KEY.match(key)
        if match is None or value is None:
            continue
        stat = _VLLM_STATS.get(match.group(1), match.group(1))
        out[f"{_VLLM_METRICS[match.group(2)]}.{stat}"] = _finite(value, key) / 1000
    if not out:
        raise FormatError(
            "no latency statistic found (expected keys such as 'median_ttft_ms', 'p99_itl_ms')"
        )
    for key in _VLLM_PLAIN:
        value = data.get(key)
        if value is None or value == "inf":  # vLLM writes "inf" for "all requests at once"
            continue
        out[key] = _finite(value, key)
    return out


#: GenAI-Perf/AIPerf metric names and the name each takes here.
_PERF_METRICS = {
    "time_to_first_token": "ttft_s",
    # GenAI-Perf and AIPerf define a request's inter-token latency as (request latency − TTFT)
    # ÷ (output − 1): vLLM's TPOT, not its per-gap ITL
    "inter_token_latency": "tpot_s",
    "request_latency": "e2e_s",
    "output_token_throughput": "output_throughput",
    "request_throughput": "request_throughput",
}
_PERF_STATS = {"avg": "mean", "p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "std": "std"}
#: Time units the exports use, in seconds.
_TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0}


def _metrics_of(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """The mapping that holds the metric objects: the top level, or AIPerf's ``records``."""
    for key in ("records", "metrics"):
        inner = data.get(key)
        if isinstance(inner, Mapping) and any(k in inner for k in _PERF_METRICS):
            return inner
    return data


def parse_perf_export(text: str) -> dict[str, float]:
    """Statistics of a GenAI-Perf or AIPerf JSON export, latencies in seconds whatever unit the
    export states (``ns``, ``ms``...), throughputs per second.

    Raises :class:`FormatError` when no known metric is there or a unit is not understood.
    """
    metrics = _metrics_of(_object(text))
    out: dict[str, float] = {}
    for key, name in _PERF_METRICS.items():
        block = metrics.get(key)
        if not isinstance(block, Mapping):
            continue
        unit = str(block.get("unit", ""))
        if name.endswith("_s"):
            if unit not in _TIME_UNITS:
                raise FormatError(f"{key}: unit {unit!r} is not one of {', '.join(_TIME_UNITS)}")
            scale = _TIME_UNITS[unit]
        else:
            scale = 1.0
        for stat, label in _PERF_STATS.items():
            if block.get(stat) is not None:
                out[f"{name}.{label}"] = _finite(block[stat], f"{key}.{stat}") * scale
    if not out:
        raise FormatError(
            "no known metric found (expected objects such as 'time_to_first_token' with a unit)"
        )
    return out


_SMI_VALUE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]i?B)?\s*$")


def parse_nvidia_smi(text: str) -> dict[str, float]:
    """Peak ``memory.used`` of an ``nvidia-smi --format=csv`` query, in bytes, over every row
    (``memory_used_bytes.max``), and the device total when queried (``memory_total_bytes``).

    The unit comes from the header (``memory.used [MiB]``) or the value (``12345 MiB``).
    Raises :class:`FormatError` naming the line of a value that is not a size.
    """
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise FormatError("empty file")
    header = [h.strip() for h in rows[0]]
    columns = {h.split(" [")[0]: i for i, h in enumerate(header)}
    if "memory.used" not in columns:
        raise FormatError(
            "no 'memory.used' column (query nvidia-smi with --query-gpu=memory.used --format=csv)"
        )
    out: dict[str, float] = {}
    for key, name in (
        ("memory.used", "memory_used_bytes.max"),
        ("memory.total", "memory_total_bytes"),
    ):
        if key not in columns:
            continue
        index = columns[key]
        head_unit = re.search(r"\[([KMGT]i?B)\]", header[index])
        values = []
        for line, row in enumerate(rows[1:], start=2):
            if not row or index >= len(row):
                continue
            match = _SMI_VALUE.match(row[index])
            unit = (match.group(2) if match else None) or (
                head_unit.group(1) if head_unit else None
            )
            if match is None or unit not in BYTE_UNITS:
                raise FormatError(f"line {line}: {key} {row[index].strip()!r} is not a size in MiB")
            values.append(float(match.group(1)) * BYTE_UNITS[unit])
        if values:
            out[name] = max(values)
    if "memory_used_bytes.max" not in out:
        raise FormatError("no memory.used value below the header")
    return out
