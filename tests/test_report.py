"""The procurement report: content, charts, arithmetic shown, and safe rendering.

Expected figures are computed by hand from round catalog numbers (see ``ROUND``), or from the
seed text, never by the code under test. The PDF is rendered once per module (a few seconds).
"""

from __future__ import annotations

import re
import socket
import textwrap
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pypdf = pytest.importorskip("pypdf")
pytest.importorskip("weasyprint")

from conftest import ROUND_ASSUMPTIONS  # noqa: E402

from planner.catalog import load_catalog  # noqa: E402
from planner.model.units import GIB, MIB  # noqa: E402
from planner.outputs import charts, formatting, report, sections  # noqa: E402
from planner.plan.labels import short_label  # noqa: E402
from planner.plan.recommend import ranked, recommendations  # noqa: E402
from planner.plan.sweep import evaluate  # noqa: E402
from planner.resources import templates_dir  # noqa: E402

SCRIPT = "<script>alert(1)</script>"
IMG_FILE = '<img src="file:///etc/passwd">'
IMG_HTTP = '<img src="http://example.com/x.png">'
ATTACH = '<a rel="attachment" href="file:///etc/passwd">x</a>'
PASSWD = b"root:x:0:0"

# A catalog with round numbers and hostile text. By hand, for round-80 (the cheaper option):
#   weights 7e9 × 2 B = 14e9 B = 13.04 GiB; budget 80 − 13.04 − 2 − 2 = 62.96 GiB;
#   4,096 tokens × 128 KiB = 512 MiB per sequence → 125 sequences ≥ 16 users: 1 device, 1 node.
#   capital 25,000 USD; energy 700 W × 1.0 × 1.5 × 1 × 730 h ÷ 1000 = 766.5 kWh a month;
#   opex 766.5 × 0.10 = 76.65 USD a month; TCO 25,000 + 76.65 × 36 = 27,759.40 USD;
#   cloud 2.00 × 1 × 730 = 1,460 USD a month; break-even ⌈25,000 ÷ (1,460 − 76.65)⌉ = ⌈18.07⌉ = 19.
# round-48: capital 30,000; opex 350 × 1.5 × 730 ÷ 1000 × 0.10 = 38.325; TCO 31,379.70 USD.
ROUND = {
    "hardware.yaml": f"""
        hardware:
          - id: round-80
            name: '{IMG_FILE} Round 80'
            memory: 80 GiB
            memory_bandwidth: 2 TB/s
            compute: {{bf16: 1000 TFLOPS}}
            power: 700 W
            price: {{purchase_usd: 25000, cloud_usd_per_hour: 2.00}}
            source: '{IMG_HTTP} http://example.com/x.png'
          - id: round-48
            name: Round 48
            memory: 48 GiB
            memory_bandwidth: 1 TB/s
            compute: {{bf16: 500 TFLOPS}}
            power: 350 W
            price: {{purchase_usd: 30000, cloud_usd_per_hour: 1.50}}
            source: '{ATTACH}'
        """,
    "models.yaml": f"""
        models:
          - id: invented-7b
            name: '{SCRIPT}'
            revision: seed
            parameters: 7000000000
            layers: 32
            kv_heads: 8
            head_dim: 128
            attention_heads: 32
            hidden_size: 4096
        """,
    "precisions.yaml": """
        precisions:
          - id: bf16
            weight_bytes_per_param: 2
            kv_bytes_per_value: 2
            compute: bf16
        """,
    "workloads.yaml": f"""
        workloads:
          - id: round-chat
            name: Round chat
            description: '{ATTACH}'
            prompt_tokens: 3072
            max_output_tokens: 1024
            concurrency: 16
            targets: {{itl_p95: 1 s}}
        """,
    "assumptions.yaml": ROUND_ASSUMPTIONS,
}

HEADINGS = [
    "The ask in words",
    "Margins and risks",
    "Sign-off",
    "Engineering appendix",
    "Options per workload",
    "Workload record",
    "Memory breakdown",
    "Concurrency against tokens per sequence",
    "Latency against targets",
    "Cost comparison",
    "Bill of materials",
    "Capacity over time",
    "Sensitivity of the ask",
    "Why options were not recommended",
    "Risks and assumptions",
    "Memory policies",
    "Serving simulation",
    "Estimates against measurements",
    "Calibration",
    "What to measure next",
    "Skipped combinations",
    "Formulas",
    "Catalog sources",
]


def _flat(text: str) -> str:
    """Text with every run of whitespace as one space (table cells wrap lines in the PDF)."""
    return re.sub(r"\s+", " ", text)


def _embedded_files(reader) -> list[bytes]:
    """Every file embedded in a PDF: document attachments and file-attachment annotations."""
    found = [data for datas in reader.attachments.values() for data in datas]
    for page in reader.pages:
        for annotation in page.get("/Annots") or []:
            annotation = annotation.get_object()
            if annotation.get("/Subtype") == "/FileAttachment":
                found.append(annotation["/FS"].get_object()["/EF"]["/F"].get_object().get_data())
    return found


def _forbid_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if anything opens a URL or a socket, or uses WeasyPrint's own fetching."""

    def refuse(*args: object, **kwargs: object) -> None:
        pytest.fail(f"a URL or socket was opened: {args!r}")

    import weasyprint.urls

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    monkeypatch.setattr(urllib.request.OpenerDirector, "open", refuse)
    monkeypatch.setattr(weasyprint.urls.URLFetcher, "fetch", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory):
    """The round catalog evaluated, its HTML, its PDF (path, bytes, text) and refused URLs."""
    folder = tmp_path_factory.mktemp("round")
    for name, text in ROUND.items():
        (folder / name).write_text(textwrap.dedent(text))
    catalog = load_catalog(folder)
    results = evaluate(catalog)
    html = report.render_html(catalog, results)
    with pytest.MonkeyPatch.context() as mp:
        _forbid_network(mp)
        pdf = folder / "report.pdf"
        refused = report.write_pdf(html, pdf)
    reader = pypdf.PdfReader(pdf)
    text = "\n".join(page.extract_text() for page in reader.pages)
    return {
        "catalog": catalog,
        "results": results,
        "html": html,
        "pdf": pdf,
        "bytes": pdf.read_bytes(),
        "reader": reader,
        "text": text,
        "flat": _flat(text),
        "refused": refused,
    }


# Content -------------------------------------------------------------------------------------


def test_every_section_heading_is_in_the_pdf(rendered):
    for heading in HEADINGS:
        assert heading in rendered["flat"], heading


def test_every_citation_is_a_public_source(rendered):
    """No internal document or paragraph number reaches the reader; every short form a metric
    cites is listed with its full reference."""
    from planner.model.metric import metrics
    from planner.model.sources import REFERENCES

    for word in ("seed ¶", "¶", "shared/seed"):
        assert word not in rendered["text"], word
    for m in metrics().values():
        assert "seed" not in m.source.lower(), (m.name, m.source)
    cited = {key for key in REFERENCES if any(key in m.source for m in metrics().values())}
    assert cited == set(REFERENCES), set(REFERENCES) - cited
    for key in ("Pope et al. 2022", "Kwon et al. 2023", "Little 1961"):
        assert key in rendered["flat"]
    assert "arXiv:2309.06180" in rendered["flat"]  # PagedAttention's full reference


def test_the_first_page_is_the_ask_and_the_decision_ends_with_its_sign_off(rendered):
    """One line (round chat: buy 1 × round-80, 25,000 of capital, 76.65 a month, 27,759.40 over
    36 months), its totals and the alternatives on page 1; the signature lines and the catalogs'
    hashes on the decision's last page, before the engineering appendix."""
    reader = rendered["reader"]
    page = _flat(reader.pages[0].extract_text())
    assert "The ask" in page and "Total 1 device " in page
    for text in ("buy", "Round 80 (TP 1) · bf16", "25,000", "77", "27,759"):
        assert text in page, text
    # renting round-80 instead: 2.00 × 730 × 36 = 52,560; no API price in this catalog
    assert "Renting every option instead: 52,560 USD" in page
    assert "no API price is catalogued" in page
    assert "planner 0." in page
    appendix = next(
        reader.get_destination_page_number(entry)
        for entry in reader.outline
        if not isinstance(entry, list) and entry.title == "Engineering appendix"
    )
    sign_off = _flat(reader.pages[appendix - 1].extract_text())
    for text in ("Sign-off", "Prepared by", "Approved (engineering)", "Approved (finance)"):
        assert text in sign_off, text
    assert "Signature" in sign_off and "hardware.yaml" in sign_off
    assert f"runs to page {appendix};" in page


def test_recommendation_and_its_cost_are_those_of_the_results(rendered):
    table = rendered["results"].table
    recs = recommendations(table)
    ranks = ranked(table)
    assert len(recs) == 1
    rec = recs.iloc[0]
    winner = ranks[ranks["rank"].eq(1).fillna(False).astype(bool)].iloc[0]
    assert rec["hardware"] == "round-80"
    for expected in (
        short_label(winner),
        f"{formatting.usd(rec['tco_usd'])} USD over 36 months",
        formatting.usd(rec["capital_usd"]),
        formatting.usd(rec["opex_usd_per_month"]),
        formatting.usd(rec["cloud_usd_per_month"]),
    ):
        assert expected in rendered["flat"], expected


def test_hand_computed_costs_appear(rendered):
    flat = rendered["flat"]
    assert "on 1 device × " in flat
    assert "at bf16): buy." in flat
    assert "25,000 USD of capital and 77 USD a month to run: 27,759 USD over 36 months" in flat
    # renting: 2.00 × 730 = 1,460 a month, 52,560 over 36 months; buying breaks even in month 19
    assert "costs 1,460 USD a month: 52,560 USD over the period" in flat
    assert "So buy: owning breaks even in month 19" in flat
    assert "31,380" not in flat  # the runner-up's TCO: each model's best option only
    assert "ITL" in flat and "≤ 1 s" in flat


def test_workload_record_states_the_shape(rendered):
    flat = rendered["flat"]
    assert "3,072 / 3,072 / 3,072" in flat  # prompt mean / p95 / max
    assert "4,096 (longest prompt + promised output)" in flat
    assert "16 concurrent users (closed loop)" in flat
    assert "reserve-max" in flat
    assert "seed" in flat  # the model revision


def test_pages_are_numbered_with_running_headers(rendered):
    pages = len(rendered["reader"].pages)
    assert f"Page 2 of {pages}" in rendered["text"]
    second = rendered["reader"].pages[1].extract_text()
    assert "Inference capacity plan" in second  # running header from the title


def test_the_stylesheet_is_applied(rendered):
    fonts = set()
    for page in rendered["reader"].pages:
        for font in (page["/Resources"].get("/Font") or {}).values():
            fonts.add(str(font.get_object()["/BaseFont"]))
    assert any("Carlito" in f for f in fonts), fonts
    assert rendered["refused"] == []


# Charts --------------------------------------------------------------------------------------


def test_charts_are_inline_svg_with_text_labels(rendered):
    html = rendered["html"]
    assert html.count("<svg") >= 4
    assert "<?xml" not in html and "<!DOCTYPE svg" not in html
    flat = rendered["flat"]
    for label in (
        "GiB per device",
        "GB per device",
        "tokens per sequence (prompt + promised output)",
        "weights per device",
        "KV cache at the planned batch",
    ):
        assert label in flat, label


def test_chart_ids_do_not_collide(rendered):
    ids = re.findall(r'\bid="([^"]+)"', rendered["html"])
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize(
    ("workload", "sequences", "kv_gib", "free_gib"),
    [
        ("seed-4k", 16, 8.0, 0.0),  # seed ¶9: 8 GiB ÷ 512 MiB = 16, nothing left
        ("seed-4k-prompt-1k-out", 12, 7.5, 0.5),  # seed's last ¶: 12 × 640 MiB = 7.5 GiB
    ],
)
def test_memory_breakdown_of_the_seed_device(seed_dir, workload, sequences, kv_gib, free_gib):
    catalog = load_catalog(seed_dir)
    table = evaluate(catalog).table
    rows = table[(table["model"] == "invented-4gib") & (table["workload"] == workload)]
    segments = charts.memory_segments(rows, 2 * GIB, 2 * GIB).iloc[0]
    assert segments["weights"] == 4 * GIB
    assert segments["kv"] == pytest.approx(kv_gib * GIB)
    assert segments["free"] == pytest.approx(free_gib * GIB)
    assert segments["total"] == 16 * GIB
    assert rows["decode_batch"].iloc[0] == sequences


def test_concurrency_curve_reproduces_the_seed(seed_dir):
    catalog = load_catalog(seed_dir)
    table = evaluate(catalog).table
    row = table[(table["model"] == "invented-4gib") & (table["workload"] == "seed-4k")].iloc[0]
    tokens = np.array([4096.0, 5120.0, 8192.0, 16384.0])
    # 8 GiB of cache at 128 KiB per token: 65,536 tokens in all
    assert list(charts.concurrency_curve(row, tokens, 1)) == [16, 12, 8, 4]
    assert charts.concurrency_curve(row, np.array([4096.0]), 1)[0] == row["max_sequences"]


def test_to_svg_strips_the_prologue_and_prefixes_ids():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 1))
    fig.add_subplot().plot([0, 1], [0, 1])
    svg = charts.to_svg(fig, "t1")
    assert svg.startswith("<svg")
    assert "<metadata" not in svg
    refs = re.findall(r'(?:url\(#|href="#)([^")]+)', svg)
    ids = set(re.findall(r'\bid="([^"]+)"', svg))
    assert refs and all(r.startswith("t1-") and r in ids for r in refs)


# Safety --------------------------------------------------------------------------------------


def test_catalog_text_is_escaped(rendered):
    html = rendered["html"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script" not in html
    assert "<img" not in html
    assert 'rel="attachment"' not in html
    assert SCRIPT in rendered["flat"]  # shown as text


def test_catalog_text_reaches_no_file_or_network(rendered):
    assert rendered["refused"] == []  # escaped text: nothing was even requested
    assert b"/EmbeddedFile" not in rendered["bytes"]
    assert _embedded_files(rendered["reader"]) == []
    assert IMG_FILE in rendered["flat"]
    assert "http://example.com/x.png" in rendered["flat"]


def test_the_fetcher_refuses_what_escaping_would_let_through(tmp_path, monkeypatch):
    """Defence in depth: raw HTML with file and network references still loads nothing."""
    _forbid_network(monkeypatch)
    outside = tmp_path / "secret.css"
    outside.write_text("body { color: red }")
    html = (
        "<html><head><link rel='stylesheet' href='report.css'>"
        "<link rel='stylesheet' href='http://example.com/s.css'>"
        f"<link rel='stylesheet' href='{outside.as_uri()}'></head><body><p>text</p>"
        f"{IMG_FILE}{IMG_HTTP}{ATTACH}<img src='data:image/png;base64,AAAA'>"
        "<img src='report.css/../../../../etc/passwd'></body></html>"
    )
    pdf = tmp_path / "raw.pdf"
    refused = report.write_pdf(html, pdf)
    assert "file:///etc/passwd" in refused
    assert "http://example.com/x.png" in refused
    assert "http://example.com/s.css" in refused
    assert outside.as_uri() in refused
    assert any(u.startswith("data:") for u in refused)
    assert not any(u.endswith("report.css") for u in refused)  # its own stylesheet is served
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and b"/EmbeddedFile" not in data
    assert _embedded_files(pypdf.PdfReader(pdf)) == []


def test_without_the_fetcher_the_attachment_would_be_embedded(tmp_path):
    """The control for the test above: WeasyPrint's default fetcher embeds local files."""
    import weasyprint

    if not Path("/etc/passwd").is_file():
        pytest.skip("no /etc/passwd here")
    pdf = tmp_path / "unsafe.pdf"
    weasyprint.HTML(string=f"<p>{ATTACH}</p>").write_pdf(pdf)
    assert any(PASSWD in data for data in _embedded_files(pypdf.PdfReader(pdf)))


def test_the_fetcher_serves_its_own_stylesheet_with_a_type():
    fetcher = report._fetcher_class()(templates_dir())
    response = fetcher.fetch((templates_dir() / "report.css").as_uri())
    assert response.content_type == "text/css"
    with pytest.raises(report.RefusedURL):
        fetcher.fetch((templates_dir() / ".." / "pyproject.toml").as_uri())
    assert len(fetcher.refused) == 1


# Other inputs --------------------------------------------------------------------------------


class StandInDiff:
    """The shape of ``planner diff``'s result, as the report consumes it."""

    def __init__(self, sections):
        self._sections = sections

    def to_text(self) -> str:
        return "2 inputs changed; the recommendation changed"

    def sections(self):
        return self._sections


def test_baseline_comparison_is_rendered_generically(rendered):
    diff = StandInDiff(
        [
            (
                "Recommendation changes",
                [{"workload": "chat", "old": "h100", "new": SCRIPT, "tco_delta_usd": -1234.4}],
            ),
            ("Inputs", [{"file": "hardware.yaml", "entry": "h100", "field": "price"}] * 30),
            ("Nothing", []),
        ]
    )
    catalog, results = rendered["catalog"], rendered["results"]
    html = report.render_html(catalog, results, baseline=diff)
    assert "Changes since the baseline run" in html
    assert "Recommendation changes" in html and "tco_delta_usd" in html
    assert "-1,234" in html
    assert "&lt;script&gt;" in html and "<script" not in html
    assert "and 5 more rows" in html
    empty = report.render_html(catalog, results, baseline=StandInDiff([]))
    assert "2 inputs changed; the recommendation changed" in empty
    assert "Changes since the baseline run" not in report.render_html(catalog, results)


def test_seed_report_says_why_nothing_qualifies(seed_dir):
    catalog = load_catalog(seed_dir)
    html = _flat(report.render_html(catalog, evaluate(catalog)))
    assert "Nothing qualifies for" in html
    assert "cost: no purchase price (with electricity rate) or rental price" in html
    assert "memory: no room for one maximum-length sequence" in html
    assert "16 × 512.00 MiB" in html  # seed ¶9 in the memory table
    assert "12 × 640.00 MiB" in html


def test_write_report_writes_a_pdf(rendered, tmp_path):
    path = report.write_report(rendered["catalog"], rendered["results"], tmp_path / "r.pdf")
    assert path.read_bytes().startswith(b"%PDF")


def test_memory_cell_shows_gib_with_gb():
    assert str(sections.memory_cell(14e9)) == '13.04 GiB<br><span class="small">14.00 GB</span>'
    assert str(sections.memory_cell(512 * MIB)) == (
        '512.00 MiB<br><span class="small">536.87 MB</span>'
    )
    assert formatting.usd(float("nan")) == "n/a"
    assert formatting.usd(27759.4) == "27,759"


def test_simulated_sizing_and_percentiles_are_reported(rendered):
    """With the serving simulation's figures (made up here: both devices need 2 replicas), the
    report uses them. By hand, round-80 with 2 devices: capital 50,000 USD, opex 2 × 76.65 =
    153.30 USD a month, TCO 50,000 + 153.30 × 36 = 55,518.80 USD; round-48 with 2 devices:
    60,000 + 2 × 38.325 × 36 = 62,759.40 USD, so round-80 still wins.
    """
    from planner.plan.tables import ALL_KEYS
    from planner.serving.sizing import SIZING_COLUMNS

    rows = []
    for hardware, itl in (("round-80", 0.05), ("round-48", 0.09)):
        row = {k: np.nan for k in SIZING_COLUMNS}
        row.update(
            hardware=hardware,
            model="invented-7b",
            precision="bf16",
            workload="round-chat",
            tensor_parallel=1,
            sim_replicas_needed=2,
            sim_devices_needed=2,
            meets_targets_sim=True,
            sim_bound="",
            sim_reason="meets targets with 2 replicas",
            ttft_p95_s=0.25,
            itl_p95_s=itl,
            e2e_p95_s=60.0,
            task_p95_s=60.0,
            rejected_fraction=0.0,
        )
        rows.append(row)
    simulated = pd.DataFrame(rows, columns=[*ALL_KEYS, *SIZING_COLUMNS])
    results = evaluate(rendered["catalog"], simulated=simulated)
    html = _flat(report.render_html(rendered["catalog"], results))
    assert "on 2 devices × " in html and "): buy." in html
    assert "50,000 USD of capital and 153 USD a month to run: 55,519 USD over 36 months" in html
    assert "ITL p95 50 ms ≤ 1 s" in html
    assert "sized by the serving simulation" in html
    assert "meets targets with 2 replicas" in html
    assert "1 → 2" in html  # replicas: closed form → simulated
    assert "1 of the 1 recommended options were simulated" in html
