"""Figures a vLLM engine prints at start-up and while it serves, read from its log.

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

While it serves, vLLM logs its metrics every few seconds (:func:`serving_figures`), read as one
figure each over the whole log:

=================================================  =============================================
Wording (release)                                  Figure
=================================================  =============================================
``Prefix cache hit rate: GPU: 45.00%, CPU: 0.00%`` ``prefix_cache_hit_ratio``: the last printed
(V0, cumulative)                                   (a fraction)
``..., GPU KV cache usage: 0.8%, Prefix cache hit  ``prefix_cache_hit_ratio``: the last printed,
rate: 19.8%`` (V1, over the recent requests)       the recent requests' share
``SpecDecoding metrics: Mean acceptance length:    ``acceptance_length``: the intervals' mean
1.80, ..., Accepted: 648 tokens, Drafted: 788      acceptance lengths weighted by their drafted
tokens, Per-position acceptance rate: 0.796, ...`` tokens; ``proposed_tokens``: the positions
(V1)                                               listed (k); ``draft_acceptance_rate``:
                                                   accepted ÷ drafted tokens
=================================================  =============================================

The engine's own account of how it was started is read too (:func:`log_settings`): its release
(``Initializing a V1 LLM engine (v0.10.1)``, ``vLLM API server version 0.10.1``) and its
``tensor_parallel_size=2``, for holding against what the index says it was measured on.

Every pattern reads in time linear in the log: each begins with its wording's words, each
repetition is bounded (a number of at most :data:`NUMBER_DIGITS` characters, a few spaces) and a
number begins only where one does, so a line of a hundred thousand digits is read in one pass,
not re-read from each of its characters. Each pattern scans the whole text once; at most
:data:`MAX_MATCHES` lines of each wording are kept (a start-up prints each once per worker).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import islice

from planner.measure.errors import MeasurementFileError
from planner.model.units import GIB

#: Longest number read, in characters (digits, thousands separators, a decimal part):
#: 449,776,000,000 is 15; a longer run of digits is no start-up figure.
NUMBER_DIGITS = 24

#: Lines of one wording kept, at most (a start-up prints each once per tensor-parallel worker).
MAX_MATCHES = 1024

#: Largest memory figure believed of one device [B]: 64 TiB, over two hundred times the
#: largest device's memory today (288 GB); a larger one is a corrupted line, not a measurement.
MAX_DEVICE_BYTES = 64 * 1024 * GIB

#: Largest token, block or request count believed: 10¹² (a thousand times a 1 TB pool of
#: one-byte tokens).
MAX_COUNT = 1e12

# a number starts where no digit, separator or point stands before it: a long run of digits
# is then tried once, not from each of its characters
_DIGITS = rf"[0-9][0-9,]{{0,{NUMBER_DIGITS}}}(?:\.[0-9]{{1,{NUMBER_DIGITS}}})?"
_NUMBER = r"(?<![0-9,.])(" + _DIGITS + ")"
_SPACE = r"[ \t]{0,8}"
_UNIT = _SPACE + r"(GiB|GB)"
_GIB = _NUMBER + _UNIT


@dataclass(frozen=True)
class Figure:
    """One figure read from a log: its name, value in base units and 1-based line."""

    name: str
    value: float
    line: int


@dataclass(frozen=True)
class Setting:
    """How the engine says it was started: a setting's name, its text as printed, its line."""

    name: str
    text: str
    line: int


class LogError(MeasurementFileError):
    """A log that holds no start-up figure, or a figure no device could have (``line`` says
    where)."""


#: The figures that are shares of something (0 to 1).
RATIOS = ("prefix_cache_hit_ratio", "draft_acceptance_rate")


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
    (
        re.compile(r"Available KV cache memory: (-?" + _DIGITS + ")" + _UNIT),
        (("kv_pool_bytes", "gib"),),
    ),
    (re.compile(r"# (?:GPU|cuda|CUDA) blocks: " + _NUMBER), (("gpu_blocks", "number"),)),
    (re.compile(r"GPU KV cache size: " + _NUMBER + r" tokens"), (("kv_pool_tokens", "number"),)),
    (
        re.compile(
            r"Maximum concurrency for " + _NUMBER + r" tokens per request: " + _NUMBER + r"x"
        ),
        (("max_model_len", "number"), ("max_concurrency", "number")),
    ),
    (
        re.compile(r"Graph capturing finished in [0-9.]{1,16} secs?, took " + _GIB),
        (("cuda_graph_bytes", "gib"),),
    ),
    # one line: "Actual usage is 14.96 GiB for weight, 1.23 GiB for peak activation, ..."
    (re.compile(r"Actual usage is " + _GIB + r" for weight"), (("weights_bytes", "gib"),)),
    (
        re.compile(r", (?:and )?" + _GIB + r" for peak activation"),
        (("activation_peak_bytes", "gib"),),
    ),
    (re.compile(r", (?:and )?" + _GIB + r" for non-torch memory"), (("non_torch_bytes", "gib"),)),
    (re.compile(r", (?:and )?" + _GIB + r" for CUDAGraph memory"), (("cuda_graph_bytes", "gib"),)),
    (
        re.compile(r"CUDA graph pool memory: " + _GIB + r" \(actual\)"),
        (("cuda_graph_bytes", "gib"),),
    ),
]

#: How the engine says it was started: the setting and the pattern whose group gives it.
SETTINGS: list[tuple[str, re.Pattern[str]]] = [
    ("version", re.compile(r"LLM engine \(v([0-9]{1,4}\.[0-9]{1,4}(?:\.[0-9]{1,4})?)")),
    ("version", re.compile(r"vLLM API server version ([0-9]{1,4}\.[0-9]{1,4}(?:\.[0-9]{1,4})?)")),
    ("tensor_parallel_size", re.compile(r"tensor_parallel_size=([0-9]{1,6})\b")),
    ("pipeline_parallel_size", re.compile(r"pipeline_parallel_size=([0-9]{1,6})\b")),
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


def _lines(text: str, positions: list[int]) -> list[int]:
    """The 1-based line of each position (ascending), counting newlines once over the text."""
    lines, line, at = [], 1, 0
    for position in positions:
        line += text.count("\n", at, position)
        at = position
        lines.append(line)
    return lines


def _matches(text: str, patterns: list[re.Pattern[str]]) -> list[tuple[int, int, re.Match[str]]]:
    """(line, pattern's index, match) of the first :data:`MAX_MATCHES` matches of each pattern,
    in the order of the log: by line, then by pattern, as a reader meets them."""
    found = [
        (match.start(), i, match)
        for i, pattern in enumerate(patterns)
        for match in islice(pattern.finditer(text), MAX_MATCHES)
    ]
    found.sort(key=lambda item: item[0])
    lines = _lines(text, [start for start, _, _ in found])
    return sorted(
        ((line, i, match) for line, (_, i, match) in zip(lines, found, strict=True)),
        key=lambda item: (item[0], item[1], item[2].start()),
    )


def _believable(figure: Figure) -> None:
    """Refuse a figure no device could have (a corrupted or edited line), naming its line."""
    value, name = figure.value, figure.name
    if name.endswith("_bytes"):
        if abs(value) > MAX_DEVICE_BYTES:
            raise LogError(
                f"{name} {value / GIB:,.2f} GiB is more than any device holds "
                f"({MAX_DEVICE_BYTES / GIB:,.0f} GiB at most)",
                name,
                figure.line,
            )
    elif name == "gpu_memory_utilization":
        if not 0 < value <= 1:
            raise LogError(
                f"gpu_memory_utilization {value:g} is not a share of the device's memory "
                f"(above 0, at most 1)",
                name,
                figure.line,
            )
    elif name in RATIOS:
        if not 0 <= value <= 1:
            raise LogError(f"{name} {value:g} is not a share (0 to 1)", name, figure.line)
    elif name == "acceptance_length" and value < 1:
        raise LogError(
            f"acceptance_length {value:g} is below 1 (a step emits at least its own token)",
            name,
            figure.line,
        )
    elif value > MAX_COUNT:
        raise LogError(f"{name} {value:,.0f} is past {MAX_COUNT:,.0f}", name, figure.line)


#: The serving metrics' wordings: a prefix-cache hit rate in percent (V0 prints the GPU's and
#: the CPU's; V1 one) and a speculative-decoding interval's line, read part by part.
HIT_RATE = re.compile(r"Prefix cache hit rate: (?:GPU: )?" + _NUMBER + r"%")
SPEC_LINE = re.compile(r"SpecDecoding metrics: [^\n]{1,4000}")
SPEC_PARTS = {
    "length": re.compile(r"Mean acceptance length: " + _NUMBER),
    "accepted": re.compile(r"Accepted: " + _NUMBER + r" tokens"),
    "drafted": re.compile(r"Drafted: " + _NUMBER + r" tokens"),
    "positions": re.compile(r"Per-position acceptance rate: ([0-9., ]{1,400})"),
}


def _spec_figures(text: str) -> list[Figure]:
    """The speculative-decoding figures over every interval line that drafted tokens: the mean
    acceptance length weighted by drafted tokens (each draft proposes k tokens, so an
    interval's drafts are its drafted tokens ÷ k), the positions listed (k) and accepted ÷
    drafted tokens."""
    drafted = accepted = weighted = 0.0
    proposed, line = 0, 0
    for match in islice(SPEC_LINE.finditer(text), MAX_MATCHES):
        parts = {name: pattern.search(match.group(0)) for name, pattern in SPEC_PARTS.items()}
        if any(part is None for part in parts.values()):
            continue
        tokens = _number(parts["drafted"].group(1))  # type: ignore[union-attr]
        if tokens <= 0:
            continue  # an idle interval
        drafted += tokens
        accepted += _number(parts["accepted"].group(1))  # type: ignore[union-attr]
        weighted += tokens * _number(parts["length"].group(1))  # type: ignore[union-attr]
        listed = parts["positions"].group(1).strip(" ,")  # type: ignore[union-attr]
        proposed = len([p for p in listed.split(",") if p.strip()])
        line = text.count("\n", 0, match.start()) + 1
    if drafted <= 0:
        return []
    return [
        Figure("acceptance_length", weighted / drafted, line),
        Figure("proposed_tokens", float(proposed), line),
        Figure("draft_acceptance_rate", accepted / drafted, line),
    ]


def serving_figures(text: str) -> list[Figure]:
    """The figures vLLM's metrics lines give over a run: the last prefix-cache hit rate printed
    (a fraction; V0's is cumulative, V1's over the recent requests) and the speculative
    decoding's acceptance (:func:`_spec_figures`); none where the log has no such line."""
    found: list[Figure] = []
    last = None
    for match in islice(HIT_RATE.finditer(text), MAX_MATCHES):
        last = match
    if last is not None:
        line = text.count("\n", 0, last.start()) + 1
        found.append(Figure("prefix_cache_hit_ratio", _number(last.group(1)) / 100, line))
    return found + _spec_figures(text)


def parse_vllm_log(text: str) -> list[Figure]:
    """Every start-up figure in a vLLM log, in order of appearance.

    A figure printed more than once (one line per tensor-parallel worker) is kept each time
    (up to :data:`MAX_MATCHES` lines of each wording); :func:`summarise` takes the first.
    Raises :class:`LogError` when the log has none, or one no device could have.
    """
    figures: list[Figure] = []
    for line, i, match in _matches(text, [pattern for pattern, _ in PATTERNS]):
        figures.extend(Figure(n, v, line) for n, v in _values(match, PATTERNS[i][1]))
    figures.extend(serving_figures(text))
    if not figures:
        raise LogError(
            "no vLLM start-up figure found (expected lines such as 'Model loading took 14.99 GiB'"
            " or 'GPU KV cache size: 449,776 tokens'), nor a metrics line ('Prefix cache hit "
            "rate: 19.8%', 'SpecDecoding metrics: Mean acceptance length: 1.80, ...')"
        )
    for figure in figures:
        _believable(figure)
    return figures


def log_settings(text: str) -> dict[str, Setting]:
    """The first ``version``, ``tensor_parallel_size`` and ``pipeline_parallel_size`` the engine
    prints, with their lines (none where the log does not print them)."""
    first: dict[str, Setting] = {}
    for line, i, match in _matches(text, [pattern for _, pattern in SETTINGS]):
        first.setdefault(SETTINGS[i][0], Setting(SETTINGS[i][0], match.group(1), line))
    return first


def summarise(figures: list[Figure]) -> dict[str, Figure]:
    """The first value of each figure (tensor-parallel workers repeat the same lines)."""
    first: dict[str, Figure] = {}
    for figure in figures:
        first.setdefault(figure.name, figure)
    return first
