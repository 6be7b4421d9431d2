"""Benchmark: the report's share of a run, and its pages, as the catalog grows (run by hand).

    python benchmarks/bench_report_share.py [--devices 3000] [--skip-shipped]

For the shipped catalogs and for a copy with ``--devices`` hardware entries (each shipped device
again under distinct ids, prices scaled by 1 % a copy; the models deployment.yaml pins, at fp8
and mxfp4, as tests/test_report_layout.py builds it), times ``planner run`` end to end, then the
report alone from the same catalogs (its values, including the sensitivity it evaluates, then
HTML and PDF; the ask, schedules and tornado are the run's, computed once for the workbook too),
and prints the report's seconds as a share of the run's, with the decision's and the report's
pages. The goal: the report under a third of the run, the decision at most 8 pages, the report
under 40 pages. Measured on a shared 2-core machine: shipped, run 69 s, report 8.2 s = 0.12 of it
(5 + 29 pages); 3,000 devices, run 65 s, report 18 s = 0.28 (5 + 28 pages), its values taking
12 s, most of it the sensitivity sentences re-evaluating the plan (``what_changes``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pypdf import PdfReader

from planner.catalog import load_catalog
from planner.outputs import report
from planner.outputs.outlook import outlook
from planner.plan.sweep import evaluate
from planner.resources import shipped_catalogs

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_report_layout import appendix_page, many_devices  # noqa: E402


def run_seconds(catalogs: Path, out: Path) -> float:
    """Wall seconds of ``planner run`` on ``catalogs`` (simulation on one worker)."""
    command = [str(Path(sys.executable).parent / "planner"), "run", "--catalogs", str(catalogs)]
    command += ["--out", str(out), "--workers", "1"]
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


def report_seconds(catalogs: Path, pdf: Path) -> tuple[float, float, float]:
    """Seconds for the report's values, and for its HTML and PDF."""
    catalog = load_catalog(catalogs)
    results = evaluate(catalog)
    derived = outlook(catalog, results.table)
    t0 = time.perf_counter()
    values = report.context(catalog, results, derived=derived)
    t1 = time.perf_counter()
    report.write_pdf(report.html_from_context(values), pdf)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, t2 - t0


def measure(label: str, catalogs: Path, work: Path) -> None:
    run = run_seconds(catalogs, work / f"run-{label}")
    pdf = work / f"{label}.pdf"
    values, pdf_s, total = report_seconds(catalogs, pdf)
    pages = len(PdfReader(pdf).pages)
    decision = appendix_page(pdf) - 1
    print(
        f"{label}: run {run:.1f} s; report {total:.1f} s (values {values:.1f} s, PDF {pdf_s:.1f} s)"
        f" = {total / run:.2f} of the run; decision {decision} pages, report {pages} pages",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=3000)
    parser.add_argument("--skip-shipped", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if not args.skip_shipped:
            measure("shipped", shipped_catalogs(), work)
        measure(f"{args.devices}-devices", many_devices(work / "many", args.devices), work)


if __name__ == "__main__":
    main()
