"""The report as its readers see it: page 1 inside the page at A4 and at US Letter, a decision
part of at most 8 pages whatever the catalog, and an appendix that does not grow with it.

Positions are read back from the PDF (``pdftotext -bbox-layout``), never from the HTML. The
text area is worked out by hand from report.css (margins 18 mm top and bottom, 16 mm left and
right) and the paper sizes: A4 210 × 297 mm is 595.28 × 841.89 pt, Letter 8.5 × 11 in is
612 × 792 pt (1 mm = 72 / 25.4 pt). The shipped catalogs are planned once per module (closed
form, no simulation) and each report is rendered from that plan.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest
import yaml

pypdf = pytest.importorskip("pypdf")
pytest.importorskip("weasyprint")

from planner.catalog import load_catalog  # noqa: E402
from planner.outputs import decision, report, sections  # noqa: E402
from planner.outputs.outlook import outlook  # noqa: E402
from planner.plan.sweep import evaluate  # noqa: E402
from planner.resources import shipped_catalogs, templates_dir  # noqa: E402

MM = 72 / 25.4
#: paper: (width, height) in points, by hand
PAPERS = {"A4": (210 * MM, 297 * MM), "Letter": (8.5 * 72, 11 * 72)}
LEFT = RIGHT = 16 * MM
TOP = BOTTOM = 18 * MM
#: a word's box may reach this far past an edge (glyph side bearings) [pt]
SLACK = 0.5
FOOTER = re.compile(r"^(planner \S+ )?Page \d+ of \d+$")

PDFTOTEXT = shutil.which("pdftotext")
needs_pdftotext = pytest.mark.skipif(PDFTOTEXT is None, reason="pdftotext (poppler) not found")


@dataclass(frozen=True)
class Word:
    text: str
    x0: float
    y0: float
    x1: float
    y1: float


def words(pdf: Path, page: int) -> tuple[float, float, list[Word]]:
    """The page's size and its words with their boxes, from ``pdftotext -bbox-layout``."""
    out = subprocess.run(
        [str(PDFTOTEXT), "-bbox-layout", "-f", str(page), "-l", str(page), str(pdf), "-"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    size = re.search(r'<page width="([\d.]+)" height="([\d.]+)"', out)
    assert size, out[:500]
    found = [
        Word(text, float(a), float(b), float(c), float(d))
        for a, b, c, d, text in re.findall(
            r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>',
            out,
        )
    ]
    return float(size[1]), float(size[2]), found


def outside_text_area(pdf: Path, page: int, paper: str) -> list[str]:
    """The words of a page outside its text area, besides the running header and the footer
    (``planner 0.1.0 … Page 1 of 30``) in the top and bottom margins; empty when all fit."""
    width, height, found = words(pdf, page)
    assert (width, height) == pytest.approx(PAPERS[paper], abs=0.5)
    wrong = []
    footer = []
    for w in found:
        if w.x0 < LEFT - SLACK or w.x1 > width - RIGHT + SLACK:
            wrong.append(f"{w.text!r} at x {w.x0:.1f}–{w.x1:.1f} of {width:.1f}")
        elif w.y1 <= TOP + SLACK:
            continue  # the running header (title, section)
        elif w.y0 >= height - BOTTOM - SLACK:
            footer.append(w.text)
        elif w.y0 < TOP - SLACK or w.y1 > height - BOTTOM + SLACK:
            wrong.append(f"{w.text!r} at y {w.y0:.1f}–{w.y1:.1f} of {height:.1f}")
    if footer and not FOOTER.match(" ".join(footer)):
        wrong.append(f"in the bottom margin: {' '.join(footer)!r}")
    return wrong


def appendix_page(pdf: Path) -> int:
    """The page (1-based) the engineering appendix starts on, from the PDF's outline."""
    reader = pypdf.PdfReader(pdf)
    for entry in reader.outline:
        if not isinstance(entry, list) and entry.title == "Engineering appendix":
            return reader.get_destination_page_number(entry) + 1
    raise AssertionError("no 'Engineering appendix' in the outline")


def page_count(pdf: Path) -> int:
    return len(pypdf.PdfReader(pdf).pages)


def render(catalog_folder: Path, out: Path, papers=("A4", "Letter")) -> dict[str, Any]:
    """Plan ``catalog_folder`` in closed form and render its report on each paper (the PDFs by
    paper, and the report's values under ``values``)."""
    catalog = load_catalog(catalog_folder)
    results = evaluate(catalog)
    values = report.context(catalog, results, derived=outlook(catalog, results.table))
    pdfs: dict[str, Any] = {"values": values}
    for paper in papers:
        pdfs[paper] = out / f"report-{paper}.pdf"
        report.write_pdf(report.html_from_context(values, paper), pdfs[paper])
    return pdfs


def copy_shipped(folder: Path) -> Path:
    shutil.copytree(shipped_catalogs(), folder, ignore=shutil.ignore_patterns("examples"))
    return folder


def _edit(path: Path, edit) -> None:
    data = yaml.safe_load(path.read_text())
    edit(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


LONG = " for the platform team's shared inference cluster, second procurement round"


def long_names_ten_workloads(folder: Path) -> Path:
    """The shipped catalogs with long hardware, model and workload names and 10 workloads (each
    shipped workload again under new ids, each pinned to the model its original is pinned to)."""
    copy_shipped(folder)

    def hardware(data):
        for h in data["hardware"]:
            h["name"] = f"{h['name']} accelerator board, eight to a node{LONG}"

    def models(data):
        for m in data["models"]:
            m["name"] = f"{m.get('name', m['id'])} instruction-tuned checkpoint{LONG}"

    shipped = yaml.safe_load((folder / "workloads.yaml").read_text())["workloads"]
    copies = [(w, k) for k in (2, 3, 4) for w in shipped][: 10 - len(shipped)]

    def workloads(data):
        for w, k in copies:
            extra = dict(w, id=f"{w['id']}-{k}", name=f"{w['name']} of business unit {k}{LONG}")
            data["workloads"].append(extra)
        for w in data["workloads"][: len(shipped)]:
            w["name"] = f"{w['name']}{LONG}"

    def deployment(data):
        serve = data["deployment"]["serve"]
        pinned = {line["workload"]: line["model"] for line in serve}
        serve += [
            {"workload": f"{w['id']}-{k}", "model": pinned[w["id"]]}
            for w, k in copies
            if w["id"] in pinned
        ]

    _edit(folder / "hardware.yaml", hardware)
    _edit(folder / "models.yaml", models)
    _edit(folder / "workloads.yaml", workloads)
    _edit(folder / "deployment.yaml", deployment)
    assert len(yaml.safe_load((folder / "workloads.yaml").read_text())["workloads"]) == 10
    return folder


#: the models the shipped deployment.yaml pins, and two precisions they run at
PINNED = ["gpt-oss-120b", "llama-3.1-70b", "qwen3-coder-30b-a3b", "llama-3.1-8b"]


def many_devices(folder: Path, devices: int = 3000) -> Path:
    """The shipped catalogs with ``devices`` hardware entries: each shipped device again under
    distinct ids, its prices scaled by 1 % a copy; the pinned models at fp8 and mxfp4 only, so
    that the plan stays quick to evaluate."""
    copy_shipped(folder)
    shipped = yaml.safe_load((folder / "hardware.yaml").read_text())["hardware"]

    def hardware(data):
        entries = []
        for k in range(devices // len(shipped)):
            for h in shipped:
                price = {
                    key: None if value is None else round(value * (1 + 0.01 * k), 4)
                    for key, value in h["price"].items()
                }
                entries.append(dict(h, id=f"{h['id']}-v{k}", name=f"{h['name']} v{k}", price=price))
        data["hardware"] = entries

    _edit(folder / "hardware.yaml", hardware)
    _edit(
        folder / "models.yaml",
        lambda d: d.update(models=[m for m in d["models"] if m["id"] in PINNED]),
    )
    _edit(
        folder / "precisions.yaml",
        lambda d: d.update(precisions=[p for p in d["precisions"] if p["id"] in ("fp8", "mxfp4")]),
    )
    assert len(yaml.safe_load((folder / "hardware.yaml").read_text())["hardware"]) == devices
    return folder


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return render(shipped_catalogs(), tmp_path_factory.mktemp("shipped"))


@pytest.fixture(scope="module")
def long_names(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = long_names_ten_workloads(tmp_path_factory.mktemp("long") / "catalogs")
    return render(folder, folder.parent)


# Page 1 fits its page ------------------------------------------------------------------------


@needs_pdftotext
@pytest.mark.parametrize("paper", ["A4", "Letter"])
def test_every_page_of_the_shipped_decision_lies_inside_the_text_area(shipped, paper):
    pdf = shipped[paper]
    for page in range(1, appendix_page(pdf) + 1):  # the decision, and the appendix's first page
        assert outside_text_area(pdf, page, paper) == [], f"page {page}"


@needs_pdftotext
@pytest.mark.parametrize("paper", ["A4", "Letter"])
def test_page_1_of_ten_long_named_workloads_lies_inside_the_text_area(long_names, paper):
    assert outside_text_area(long_names[paper], 1, paper) == []


@needs_pdftotext
@pytest.mark.parametrize("paper", ["A4", "Letter"])
def test_an_ask_too_long_for_page_1_continues_with_its_header_and_totals(long_names, paper):
    """Ten lines do not fit on page 1 at these lengths (the shared fleet leads it: sharing
    saves here): the table goes on over the next pages, each repeating its header row and its
    totals and lying inside its text area."""
    reader = pypdf.PdfReader(long_names[paper])
    last = "Long-document analysis of business unit 3"  # the ask's last line
    texts = [" ".join(p.extract_text().split()) for p in reader.pages]
    assert "The ask: one shared fleet" in texts[0]
    page = next(i for i, text in enumerate(texts) if "Workload Model Advice" in text)
    while True:
        text = " ".join(reader.pages[page].extract_text().split())
        assert "Workload Model Advice" in text and "Total" in text, page + 1
        assert outside_text_area(long_names[paper], page + 1, paper) == []
        if last in text:
            break
        page += 1
    assert 1 <= page < appendix_page(long_names[paper]) - 1  # continued, within the decision


def test_the_paper_is_chosen_by_name_and_laid_out_at_its_size(shipped):
    for paper, (width, height) in PAPERS.items():
        box = pypdf.PdfReader(shipped[paper]).pages[0].mediabox
        assert (float(box.width), float(box.height)) == pytest.approx((width, height), abs=0.5)


def test_no_text_is_set_below_8_pt():
    sizes = re.findall(r"font-size:\s*([\d.]+)pt", (templates_dir() / "report.css").read_text())
    assert sizes and min(float(s) for s in sizes) >= 8


# A report in two parts -----------------------------------------------------------------------


@pytest.mark.parametrize("paper", ["A4", "Letter"])
def test_the_shipped_report_is_a_short_decision_then_a_bounded_appendix(shipped, paper):
    pdf = shipped[paper]
    assert appendix_page(pdf) - 1 <= 8
    assert page_count(pdf) < 40


def test_three_thousand_devices_give_the_same_short_report(tmp_path):
    """The report does not grow with the catalog: 3,000 devices give a decision of at most 8
    pages and a report under 40."""
    folder = many_devices(tmp_path / "catalogs")
    pdf = render(folder, tmp_path, papers=("A4",))["A4"]
    assert appendix_page(pdf) - 1 <= 8
    assert page_count(pdf) < 40
    text = " ".join(pypdf.PdfReader(pdf).pages[appendix_page(pdf) - 1].extract_text().split())
    assert "results.csv" in text


# The signer's words --------------------------------------------------------------------------


def test_a_pinned_workload_is_told_by_its_pinned_model(shipped):
    """deployment.yaml pins gpt-oss-120b for chat; the sentence names it first, and the cheapest
    other model only as an alternative."""
    chat = next(item for item in shipped["values"]["workloads"] if item["workload"].id == "chat")
    assert chat["sentence"].startswith("For Employee assistant, deployment.yaml names gpt-oss-120b")
    assert "the cheapest qualifying option is" not in chat["sentence"]
    assert "The cheapest other qualifying model, an alternative" in chat["sentence"]


def test_an_unserved_pin_says_the_asks_reason():
    workload = SimpleNamespace(label="Coding agent")
    reason = "deployment.yaml pins big-model, which has no eligible option: 12 × memory"
    sentence = sections.summary_sentence(workload, pd.DataFrame(), None, [], None, reason)
    assert sentence == f"Nothing qualifies for Coding agent: {reason}."


def _plan(cash: float, residual: float) -> SimpleNamespace:
    return SimpleNamespace(total_usd=cash, residual_usd=residual, net_usd=cash - residual)


@pytest.mark.parametrize(
    ("schedule", "rent", "payback", "expected"),
    [
        # cash 960,196 against renting's 959,342; 311,111 of book value: net 649,085, which is
        # 959,342 − 649,085 = 310,257 less than renting's
        (
            (960_196, 311_111),
            (959_342, 0),
            None,
            "In cash paid within the horizon, buying does not catch up with renting: 960,196 USD "
            "against 959,342 USD. With the owned nodes' book value at the end counted (311,111 "
            "USD), the schedule nets 649,085 USD against renting's 959,342 USD: 310,257 USD less.",
        ),
        (
            (500_000, 0),
            (600_000, 0),
            14,
            "In cash, buying pays for itself against renting from month 14 on.",
        ),
        (
            (700_000, 50_000),
            (600_000, 0),
            None,
            "In cash paid within the horizon, buying does not catch up with renting: 700,000 USD "
            "against 600,000 USD. With the owned nodes' book value at the end counted (50,000 "
            "USD), the schedule nets 650,000 USD against renting's 600,000 USD: 50,000 USD more.",
        ),
    ],
)
def test_capacity_over_time_says_cash_and_net_against_renting(schedule, rent, payback, expected):
    found = SimpleNamespace(plans={"schedule": _plan(*schedule), "rent": _plan(*rent)})
    assert decision.payback_words(found, payback) == expected


def test_the_assumptions_choose_the_runs_paper(tmp_path):
    """``paper: Letter`` in assumptions.yaml lays the run's report out on US Letter: 8.5 × 11 in,
    612 × 792 pt, where A4 is 595 × 842 pt."""
    from click.testing import CliRunner

    from planner.cli import main

    folder = tmp_path / "catalog"
    shutil.copytree(shipped_catalogs() / "examples" / "seed", folder)
    path = folder / "assumptions.yaml"
    path.write_text(path.read_text() + "  paper: Letter\n")
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", "--catalogs", str(folder), "--out", str(out)])
    assert result.exit_code == 0, result.output
    box = pypdf.PdfReader(out / "report.pdf").pages[0].mediabox
    assert (round(float(box.width)), round(float(box.height))) == (612, 792)
