"""The validation suite: planner's estimates held against every public measurement set in the
repository, uncalibrated, set by set.

Each set records where its figures come from and the engine release they were measured on.
The test prints the per-set error table (mean absolute percentage error and bias, estimated ÷
measured − 1) and fails when a set gets worse than the figure recorded here; the README shows
the same table, and the test fails when it is stale. Run ``pytest tests/test_validation.py -s``
to see it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from test_calibration import GPT_OSS_H100_TP8, _errors
from test_measure import measured_catalog  # noqa: F401  (the fixture this module uses)

from planner.catalog import load_catalog
from planner.measure import load_measurements
from planner.measure.compare import comparison
from planner.resources import shipped_catalogs

README = Path(__file__).resolve().parent.parent / "README.md"


@dataclass(frozen=True)
class SetError:
    """One figure of one public set: how many points, and planner's error over them."""

    name: str
    source: str
    figure: str
    errors: tuple[float, ...]

    @property
    def mape(self) -> float:
        """Mean absolute error [fraction of the measured value]."""
        return sum(abs(e) for e in self.errors) / len(self.errors)

    @property
    def bias(self) -> float:
        """Mean signed error: below 0, planner is optimistic (too fast, too much room)."""
        return sum(self.errors) / len(self.errors)


#: Each set's figure and the mean absolute error it must not exceed (as reached, rounded up).
RECORDED = {
    ("gpt-oss-120b MXFP4, 8 × H100 TP 8, vLLM 0.11", "ITL (mean TPOT)"): 0.136,
    ("vLLM 0.7 start-up logs (A10, RTX 2060)", "KV-cache pool tokens"): 0.005,
    ("vLLM 0.7 start-up logs (A10, RTX 2060)", "weights, one device"): 0.006,
    ("vLLM 0.7 start-up log (8 × A100 40GB TP 8, MoE)", "weights per device"): 0.080,
}


def _sets(catalog_folder: Path) -> list[SetError]:
    serving = SetError(
        "gpt-oss-120b MXFP4, 8 × H100 TP 8, vLLM 0.11",
        "SemiAnalysisAI/InferenceX issue #828: 1k prompts, 1k and 8k outputs, 4–64 users",
        "ITL (mean TPOT)",
        tuple(_errors(load_catalog(shipped_catalogs()), GPT_OSS_H100_TP8)),
    )
    catalog = load_catalog(catalog_folder)
    table = comparison(catalog, load_measurements(catalog))
    dense = table[table["tensor_parallel"] == 1]
    logs = "vLLM 0.7 start-up logs (A10, RTX 2060)"
    sources = "public start-up logs (tests/fixtures/vllm/index.yaml)"

    def errors(rows, figure: str) -> tuple[float, ...]:
        return tuple(float(e) for e in rows.loc[rows["figure"] == figure, "error_fraction"])

    moe = table[table["tensor_parallel"] == 8]
    return [
        serving,
        SetError(logs, sources, "KV-cache pool tokens", errors(dense, "kv_pool_tokens")),
        SetError(logs, sources, "weights, one device", errors(dense, "weights_bytes")),
        SetError(
            "vLLM 0.7 start-up log (8 × A100 40GB TP 8, MoE)",
            sources,
            "weights per device",
            errors(moe, "weights_bytes"),
        ),
    ]


def table(sets: list[SetError]) -> str:
    """The error table as the README shows it (Markdown)."""
    lines = [
        "| public set | figure | points | mean abs. error | bias | source |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for s in sets:
        lines.append(
            f"| {s.name} | {s.figure} | {len(s.errors)} | {s.mape:.1%} | {s.bias:+.1%} | "
            f"{s.source} |"
        )
    return "\n".join(lines)


@pytest.fixture(scope="module")
def sets(measured_catalog: Path) -> list[SetError]:  # noqa: F811
    found = _sets(measured_catalog)
    print("\n" + table(found))
    return found


def test_every_set_is_recorded(sets: list[SetError]) -> None:
    assert {(s.name, s.figure) for s in sets} == set(RECORDED)
    assert all(s.errors for s in sets)


def test_no_set_gets_worse_than_recorded(sets: list[SetError]) -> None:
    worse = [
        f"{s.name}, {s.figure}: {s.mape:.2%} > {RECORDED[(s.name, s.figure)]:.2%}"
        for s in sets
        if s.mape > RECORDED[(s.name, s.figure)]
    ]
    assert not worse, worse


def test_the_readme_shows_the_table(sets: list[SetError]) -> None:
    shown = table(sets)
    assert shown in README.read_text(), "paste into the README's validation section:\n" + shown
