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
import re
from collections.abc import Mapping
from typing import Any

from planner.measure.errors import MeasurementFileError
from planner.measure.vllm_log import MAX_DEVICE_BYTES
from planner.model.units import BYTE_UNITS, GIB, is_finite


class FormatError(MeasurementFileError):
    """A file that is not the format it was said to be, or holds a figure no run could give;
    ``field`` names the key and ``line`` its line, where known."""


#: Longest latency statistic believed [ms]: a day. Longer is a unit mistake or a corrupted
#: file, not a request that was served.
MAX_LATENCY_MS = 86_400_000.0

#: Largest rate or count believed (requests, tokens, per second or in all): 10¹²; a larger
#: one is a corrupted file.
MAX_COUNT = 1e12

#: Largest share of a benchmark's requests that may fail: its statistics are of the requests
#: that completed, and when more failed the survivors are not the load that was offered (the
#: fast ones, or those that came before the server fell over).
MAX_FAILED_FRACTION = 0.05


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


def _line_of(text: str, key: str) -> int | None:
    """The 1-based line where ``"key"`` first stands in a JSON text (None when it does not)."""
    at = text.find(f'"{key.split(".")[0]}"')
    return None if at < 0 else text.count("\n", 0, at) + 1


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:40]}… ({len(text):,} characters)"


def _checked(
    value: Any,
    key: str,
    text: str = "",
    *,
    least: float = 0.0,
    zero: bool = False,
    most: float = MAX_COUNT,
    whole: bool = False,
) -> float:
    """``value`` as a float, refused (naming ``key`` and its line in ``text``) unless it is a
    finite number above ``least`` (or equal to it where ``zero``), at most ``most``, and whole
    where ``whole``. Stricter than :func:`is_finite`, which it applies: a figure in a
    benchmark's JSON must be a JSON number, not text or true/false that would read as one."""
    line = _line_of(text, key) if text else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not is_finite(value):
        raise FormatError(f"{key} must be a finite number, got {_shown(value)}", key, line)
    if value < least or (value == least and not zero):
        relation = "at least" if zero else "above"
        raise FormatError(f"{key} must be {relation} {least:g}, got {value!r}", key, line)
    if value > most:
        raise FormatError(
            f"{key} {value:g} is past {most:g}: a unit mistake or a corrupted file", key, line
        )
    if whole and value != int(value):
        raise FormatError(f"{key} must be a whole number, got {value!r}", key, line)
    return float(value)


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's members, refusing a key given twice (which would silently win)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise FormatError(f"{key!r} is given twice; keep one", str(key))
        out[key] = value
    return out


def _object(text: str) -> Mapping[str, Any]:
    if not text.strip():
        raise FormatError("the file is empty (expected a JSON object)")
    try:
        data = json.loads(text, object_pairs_hook=_unique)
    except FormatError as exc:
        raise FormatError(str(exc), exc.field, _line_of(text, exc.field or "")) from None
    except RecursionError:
        raise FormatError("not JSON a benchmark writes: nested too deeply") from None
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
        # a spread may be 0 (every request alike); a mean, median or percentile may not
        spread = stat == "std"
        ms = _checked(value, key, text, zero=spread, most=MAX_LATENCY_MS)
        out[f"{_VLLM_METRICS[match.group(2)]}.{stat}"] = ms / 1000
    if not out:
        raise FormatError(
            "no latency statistic found (expected keys such as 'median_ttft_ms', 'p99_itl_ms')"
        )
    for key in _VLLM_PLAIN:
        value = data.get(key)
        if value is None or value == "inf":  # vLLM writes "inf" for "all requests at once"
            continue
        out[key] = _checked(value, key, text, **_PLAIN_RULES.get(key, {}))
    _completed(data, out, text)
    return out


#: How each of vLLM's plain figures is checked beyond "a finite number above 0".
_PLAIN_RULES: dict[str, dict[str, Any]] = {
    "max_concurrency": {"least": 1, "zero": True, "whole": True},
    "completed": {"zero": True, "whole": True},
    "num_prompts": {"least": 1, "zero": True, "whole": True},
    "total_input_tokens": {"zero": True, "whole": True},
    "total_output_tokens": {"zero": True, "whole": True},
}


def _completed(data: Mapping[str, Any], figures: dict[str, float], text: str) -> None:
    """Refuse a benchmark none of whose requests completed, or too many failed: its statistics
    are of the survivors only (:data:`MAX_FAILED_FRACTION`)."""
    completed = figures.get("completed")
    if completed is None:
        return
    failed = data.get("failed")
    if failed is not None:
        failed = _checked(failed, "failed", text, zero=True, whole=True)
    elif "num_prompts" in figures:
        failed = max(0.0, figures["num_prompts"] - completed)
    line = _line_of(text, "completed")
    if completed == 0:
        raise FormatError("no request completed: there is nothing measured", "completed", line)
    if failed and failed / (failed + completed) > MAX_FAILED_FRACTION:
        share = failed / (failed + completed)
        raise FormatError(
            f"{failed:,.0f} of {failed + completed:,.0f} requests failed ({share:.0%}, more than "
            f"{MAX_FAILED_FRACTION:.0%}): its latencies are of the requests that survived, not "
            f"of the load offered; measure at a load the server sustains",
            "completed",
            line,
        )


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
                raise FormatError(
                    f"{key}: unit {_shown(unit)} is not one of {', '.join(_TIME_UNITS)}",
                    f"{key}.unit",
                    _line_of(text, key),
                )
            scale = _TIME_UNITS[unit]
            most = MAX_LATENCY_MS / 1000 / scale
        else:
            scale, most = 1.0, MAX_COUNT
        for stat, label in _PERF_STATS.items():
            if block.get(stat) is not None:
                value = _checked(block[stat], f"{key}.{stat}", text, zero=stat == "std", most=most)
                out[f"{name}.{label}"] = value * scale
    if not out:
        raise FormatError(
            "no known metric found (expected objects such as 'time_to_first_token' with a unit)"
        )
    return out


#: A size as nvidia-smi prints it, spaces around already stripped (every repetition bounded).
_SMI_VALUE = re.compile(r"([0-9]{1,20}(?:\.[0-9]{1,20})?)[ \t]{0,8}([KMGT]i?B)?")


def parse_nvidia_smi(text: str) -> dict[str, float]:
    """Peak ``memory.used`` of an ``nvidia-smi --format=csv`` query, in bytes, over every row
    (``memory_used_bytes.max``), and the device total when queried (``memory_total_bytes``).

    The unit comes from the header (``memory.used [MiB]``) or the value (``12345 MiB``).
    Raises :class:`FormatError` naming the line of a value that is not a size.
    """
    try:
        rows = list(csv.reader(io.StringIO(text)))
    except csv.Error as exc:  # a field past the reader's limit, a NUL byte...
        raise FormatError(f"not a CSV nvidia-smi writes: {exc}") from None
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
            match = _SMI_VALUE.fullmatch(row[index].strip())
            unit = (match.group(2) if match else None) or (
                head_unit.group(1) if head_unit else None
            )
            if match is None or unit not in BYTE_UNITS:
                raise FormatError(
                    f"{key} {_shown(row[index].strip())} is not a size in MiB",
                    key,
                    line,
                )
            value = float(match.group(1)) * BYTE_UNITS[unit]
            if value > MAX_DEVICE_BYTES:
                raise FormatError(
                    f"{key} {value / GIB:,.0f} GiB is more than any device holds",
                    key,
                    line,
                )
            values.append(value)
        if values:
            out[name] = max(values)
    if "memory_used_bytes.max" not in out:
        raise FormatError("no memory.used value below the header")
    return out


def _vllm_key(figure: str) -> str:
    """The key of ``vllm bench`` JSON a figure was read from (``itl_s.p50``: ``median_itl_ms``)."""
    metric, _, stat = figure.partition(".")
    names = {v: k for k, v in _VLLM_METRICS.items()}
    if metric not in names:
        return figure
    stats = {v: k for k, v in _VLLM_STATS.items()}
    return f"{stats.get(stat, stat)}_{names[metric]}_ms"


def _perf_key(figure: str) -> str:
    """The metric object of a perf export a figure was read from (``ttft_s.p50``:
    ``time_to_first_token``)."""
    metric = figure.partition(".")[0]
    return next((k for k, v in _PERF_METRICS.items() if v == metric), metric)


def file_key(format: str, figure: str) -> str:
    """The key a figure stands under in a file of ``format`` (a log's figures are named as
    here): ``median_itl_ms`` for vLLM's ``itl_s.p50``."""
    if format == "vllm-bench":
        return _vllm_key(figure)
    if format == "perf-export":
        return _perf_key(figure)
    return figure


def figure_lines(format: str, text: str, figures: dict[str, float]) -> dict[str, int]:
    """The 1-based line of each figure of a JSON benchmark in its file, where the key stands."""
    lines = {figure: _line_of(text, file_key(format, figure)) for figure in figures}
    return {figure: line for figure, line in lines.items() if line is not None}
