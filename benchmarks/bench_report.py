"""Time the procurement report (HTML with charts, then the PDF) for a 40-candidate run.

Run: ``python benchmarks/bench_report.py [--shipped]``. Not a test.

The 40 candidates come from the shipped catalogs, narrowed by a ``scenarios.yaml`` written into a
temporary copy: 2 models × 2 precisions × 5 devices × 2 workloads, tensor parallel 1 only. With
``--shipped`` the full shipped catalogs (about 1,100 candidates) are timed as well. Prints the
seconds for each stage, the page count and the file size; the goal is under 30 s for 40.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

from pypdf import PdfReader

from planner.catalog import load_catalog
from planner.outputs import report
from planner.plan.sweep import evaluate
from planner.resources import shipped_catalogs

SCENARIO = """\
scenarios:
  - id: bench-40
    models: [llama-3.1-8b, qwen2.5-7b]
    precisions: [bf16, fp8]
    hardware: [h100-sxm-80gb, h200-sxm-141gb, a100-sxm-80gb, l40s-48gb, mi300x-192gb]
    workloads: [chat, agent]
"""


def forty_candidate_catalog(folder: Path) -> Path:
    """A copy of the shipped catalogs narrowed to 40 candidates."""
    shutil.copytree(shipped_catalogs(), folder, ignore=shutil.ignore_patterns("examples"))
    (folder / "scenarios.yaml").write_text(SCENARIO)
    assumptions = folder / "assumptions.yaml"
    text = assumptions.read_text()
    start = text.index("tensor_parallel_sizes:")
    end = text.index("\n", start)
    assumptions.write_text(text[:start] + "tensor_parallel_sizes: [1]" + text[end:])
    return folder


def time_report(label: str, catalogs: Path, out: Path) -> float:
    """Evaluate, render and write the report of ``catalogs``; print each stage; total seconds."""
    catalog = load_catalog(catalogs)
    t0 = time.perf_counter()
    results = evaluate(catalog)
    t1 = time.perf_counter()
    html = report.render_html(catalog, results)
    t2 = time.perf_counter()
    refused = report.write_pdf(html, out)
    t3 = time.perf_counter()
    pages = len(PdfReader(out).pages)
    print(
        f"{label}: {len(results.table):,} candidates; evaluate {t1 - t0:.1f} s, "
        f"HTML and charts {t2 - t1:.1f} s, PDF {t3 - t2:.1f} s; report {t3 - t1:.1f} s, "
        f"{pages} pages, {out.stat().st_size / 1e6:.2f} MB, {len(refused)} URLs refused"
    )
    return t3 - t1


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        import weasyprint  # noqa: F401  (import time is not the report's)

        seconds = time_report(
            "40-candidate run", forty_candidate_catalog(root / "cat"), root / "40.pdf"
        )
        print(f"goal: under 30 s -> {'ok' if seconds < 30 else 'TOO SLOW'}")
        if "--shipped" in sys.argv[1:]:
            time_report("shipped catalogs", shipped_catalogs(), root / "shipped.pdf")


if __name__ == "__main__":
    main()
