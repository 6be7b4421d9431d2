"""Figures a vLLM engine prints at start-up, read from its log.

vLLM logs what it measured before sizing its KV cache. The lines changed between releases; each
pattern below is one wording, and a log may use several. Every figure is returned in base units
(bytes, tokens, a fraction), with the line it came from. vLLM's "GB" in ``Loading model weights
took`` is a binary gigabyte (the code divides by 2³⁰), read here as GiB.

=================================================  =============================================
Wording (release)                                  Figures
=================================================  =============================================
``Loading model weights took 14.9888 GB`` (V0)     ``weights_bytes``
``Model loading took 14.99 GiB and 4.5 s`` (V1)    ``weights_bytes``
``total_gpu_memory (79.19GiB) x                    ``total_memory_bytes``,
gpu_memory_utilization (0.90) = 71.27GiB``         ``gpu_memory_utilization``
``model weights take 14.99GiB; non_torch_memory    ``weights_bytes``, ``non_torch_bytes``,
takes 0.19GiB; PyTorch activation peak memory      ``activation_peak_bytes``, ``kv_pool_bytes``
takes 1.19GiB; the rest of the memory reserved
for KV Cache is 54.91GiB``
``Memory profiling results: total_gpu_memory=...   the same figures, as ``key=valueGiB`` pairs
non_torch_memory=... kv_cache_size=...`` (0.6)
``Available KV cache memory: 54.91 GiB`` (V1;      ``kv_pool_bytes``
negative when nothing is left)
``# GPU blocks: 28112, # CPU blocks: 2048`` (V0;   ``gpu_blocks``
also ``# cuda blocks``, ``# CUDA blocks``)
``GPU KV cache size: 449,776 tokens`` (V1)         ``kv_pool_tokens``
``Maximum concurrency for 32,768 tokens per        ``max_concurrency``, ``max_model_len``
request: 13.73x``
``Graph capturing finished in 8 secs, took         ``cuda_graph_bytes``
0.53 GiB``
``Actual usage is 14.96 GiB for weight, 1.23 GiB   ``weights_bytes``, ``activation_peak_bytes``,
for peak activation, 0.45 GiB for non-torch        ``non_torch_bytes``, ``cuda_graph_bytes``
memory, and 2.10 GiB for CUDAGraph memory``
(recent V1, debug level)
``CUDA graph pool memory: 0.69 GiB (actual)``      ``cuda_graph_bytes``
=================================================  =============================================
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from planner.model.units import GIB

_NUMBER = r"([0-9][0-9,]*(?:\.[0-9]+)?)"
_GIB = _NUMBER + r"\s*(GiB|GB)"


@dataclass(frozen=True)
class Figure:
    """One figure read from a log: its name, value in base units and 1-based line."""

    name: str
    value: float
    line: int


class LogError(ValueError):
    """A log that holds no start-up figure, or one whose figures contradict each other."""


def _number(text: str) -> float:
    return float(text.replace(",", ""))  # a leading minus is kept


def _gib(text: str) -> float:
    return _number(text) * GIB


#: Each pattern and the figures its groups give, in order: (name, converter).
PATTERNS: list[tuple[re.Pattern[str], tuple[tuple[str, str], ...]]] = [
    (re.compile(r"Loading model weights took " + _GIB), (("weights_bytes", "gib"),)),
    (re.compile(r"Model loading took " + _GIB), (("weights_bytes", "gib"),)),
    (
        re.compile(
            r"total_gpu_memory \(" + _GIB + r"\) x gpu_memory_utilization \(" + _NUMBER + r"\)"
        ),
        (("total_memory_bytes", "gib"), ("gpu_memory_utilization", "number")),
    ),
    (re.compile(r"model weights take " + _GIB), (("weights_bytes", "gib"),)),
    (re.compile(r"non_torch_memory takes " + _GIB), (("non_torch_bytes", "gib"),)),
    (
        re.compile(r"PyTorch activation peak memory takes " + _GIB),
        (("activation_peak_bytes", "gib"),),
    ),
    (
        re.compile(r"the rest of the memory reserved for KV Cache is " + _GIB),
        (("kv_pool_bytes", "gib"),),
    ),
    (re.compile(r"total_gpu_memory=" + _GIB), (("total_memory_bytes", "gib"),)),
    (re.compile(r"non_torch_memory=" + _GIB), (("non_torch_bytes", "gib"),)),
    (re.compile(r"kv_cache_size=" + _GIB), (("kv_pool_bytes", "gib"),)),
    (
        re.compile(r"gpu_memory_utilization=" + _NUMBER),
        (("gpu_memory_utilization", "number"),),
    ),
    # negative where nothing is left for the cache (the engine then refuses to start)
    (re.compile(r"Available KV cache memory: (-?" + _GIB[1:]), (("kv_pool_bytes", "gib"),)),
    (re.compile(r"# (?:GPU|cuda|CUDA) blocks: " + _NUMBER), (("gpu_blocks", "number"),)),
    (re.compile(r"GPU KV cache size: " + _NUMBER + r" tokens"), (("kv_pool_tokens", "number"),)),
    (
        re.compile(
            r"Maximum concurrency for " + _NUMBER + r" tokens per request: " + _NUMBER + r"x"
        ),
        (("max_model_len", "number"), ("max_concurrency", "number")),
    ),
    (
        re.compile(r"Graph capturing finished in [0-9.]+ secs?, took " + _GIB),
        (("cuda_graph_bytes", "gib"),),
    ),
    (re.compile(r"Actual usage is " + _GIB + r" for weight"), (("weights_bytes", "gib"),)),
    (re.compile(_GIB + r" for peak activation"), (("activation_peak_bytes", "gib"),)),
    (re.compile(_GIB + r" for non-torch memory"), (("non_torch_bytes", "gib"),)),
    (re.compile(_GIB + r" for CUDAGraph memory"), (("cuda_graph_bytes", "gib"),)),
    (
        re.compile(r"CUDA graph pool memory: " + _GIB + r" \(actual\)"),
        (("cuda_graph_bytes", "gib"),),
    ),
]


def _values(match: re.Match[str], names: tuple[tuple[str, str], ...]) -> list[tuple[str, float]]:
    groups = [g for g in match.groups()]
    out = []
    position = 0
    for name, kind in names:
        text = groups[position]
        position += 2 if kind == "gib" else 1  # a GiB figure also captured its unit
        out.append((name, _gib(text) if kind == "gib" else _number(text)))
    return out


def parse_vllm_log(text: str) -> list[Figure]:
    """Every start-up figure in a vLLM log, in order of appearance.

    A figure printed more than once (one line per tensor-parallel worker) is kept each time;
    :func:`summarise` takes the first. Raises :class:`LogError` when the log has none.
    """
    figures: list[Figure] = []
    for number, line in enumerate(text.splitlines(), start=1):
        for pattern, names in PATTERNS:
            for match in pattern.finditer(line):
                figures.extend(Figure(n, v, number) for n, v in _values(match, names))
    if not figures:
        raise LogError(
            "no vLLM start-up figure found (expected lines such as 'Model loading took 14.99 GiB'"
            " or 'GPU KV cache size: 449,776 tokens')"
        )
    return figures


def summarise(figures: list[Figure]) -> dict[str, Figure]:
    """The first value of each figure (tensor-parallel workers repeat the same lines)."""
    first: dict[str, Figure] = {}
    for figure in figures:
        first.setdefault(figure.name, figure)
    return first
