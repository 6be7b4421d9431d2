"""Time the procurement report (HTML with charts, then the PDF) for a 40-candidate run.

Run: ``python benchmarks/bench_report.py [--shipped] [--against REV [--repeats N]]``. Not a test.

The 40 candidates come from the shipped catalogs, narrowed by a ``scenarios.yaml`` written into a
temporary copy: 2 models × 2 precisions × 5 devices × 2 workloads, tensor parallel 1 only. With
``--shipped`` the full shipped catalogs (about 1,100 candidates) are timed as well. Prints the
seconds for each stage, the page count and the file size; the goal is under 30 s for 40.

With ``--against REV`` (a git revision), the PDF of the shipped catalogs as of REV is written by
planner as of REV and by this checkout, each in its own process, and the ratio printed (this
checkout ÷ REV): the whole PDF, and an HTML page of the report's charts alone. CPU seconds of the
process, the least of ``--repeats`` tries, so other work on the machine counts little. The two
reports share the catalogs, not every figure: a change of the formulas between REV and now also
changes what is drawn.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
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


def pdf_cpu_seconds(catalogs: Path, out: Path, repeats: int) -> dict[str, float]:
    """CPU seconds (the least of ``repeats``) to write the report of ``catalogs`` as a PDF, and
    an HTML page of its charts alone; with the page count."""
    import weasyprint  # noqa: F401  (import time is not the report's)

    catalog = load_catalog(catalogs)
    html = report.render_html(catalog, evaluate(catalog))
    charts = "".join(f"<div>{svg}</div>" for svg in re.findall(r"<svg.*?</svg>", html, re.S))
    found = {}
    for name, page in (("report", html), ("charts", f"<html><body>{charts}</body></html>")):
        times = []
        for _ in range(repeats):
            start = time.process_time()
            report.write_pdf(page, out)
            times.append(time.process_time() - start)
        found[name] = min(times)
        found[f"{name}_pages"] = len(PdfReader(out).pages)
    return found


def against(revision: str, repeats: int) -> None:
    """This checkout's PDF time ÷ ``revision``'s, on ``revision``'s shipped catalogs."""
    repo = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        old.mkdir()
        archive = subprocess.run(
            ["git", "archive", revision, "planner", "templates", "catalogs"],
            cwd=repo,
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        found = {}
        for label, path in ((revision, old), ("now", repo)):
            command = [sys.executable, __file__, "--time-pdf", str(old / "catalogs")]
            command += ["--repeats", str(repeats), "--out", str(Path(tmp) / f"{label}.pdf")]
            env = dict(os.environ, PYTHONPATH=str(path))
            result = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
            found[label] = json.loads(result.stdout.splitlines()[-1])
            print(f"{label}: {found[label]}", flush=True)
        for name in ("report", "charts"):
            ratio = found["now"][name] / found[revision][name]
            print(
                f"{name}: {found[revision][name]:.2f} s at {revision}, "
                f"{found['now'][name]:.2f} s now: ratio {ratio:.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shipped", action="store_true")
    parser.add_argument("--against", metavar="REV")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--time-pdf", metavar="CATALOGS", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.time_pdf:  # one side of --against, in its own process
        print(json.dumps(pdf_cpu_seconds(Path(args.time_pdf), Path(args.out), args.repeats)))
        return
    if args.against:
        against(args.against, args.repeats)
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        import weasyprint  # noqa: F401  (import time is not the report's)

        seconds = time_report(
            "40-candidate run", forty_candidate_catalog(root / "cat"), root / "40.pdf"
        )
        print(f"goal: under 30 s -> {'ok' if seconds < 30 else 'TOO SLOW'}")
        if args.shipped:
            time_report("shipped catalogs", shipped_catalogs(), root / "shipped.pdf")


if __name__ == "__main__":
    main()
