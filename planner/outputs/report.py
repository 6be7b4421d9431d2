"""report.pdf: the procurement report, rendered from Jinja templates by WeasyPrint.

The report answers one question per workload: what to buy or rent, how many, at what cost,
meeting which targets, with which risks. It shows the decision-relevant subset of the results
(the recommendation and runner-up for each workload × model); the full candidate table lives in
``results.csv`` and the workbook. It computes no metric: figures are columns of the results table,
choices come from :mod:`planner.plan.recommend`, and charts (:mod:`planner.outputs.charts`) call
the metric functions where they need a figure at other arguments. The sections' values are
prepared in :mod:`planner.outputs.sections`; this module renders and writes.

Catalog text is untrusted. Jinja autoescapes every value (``select_autoescape`` would skip
``*.html.j2``, so autoescape is simply on), and WeasyPrint gets a URL fetcher that serves only
files inside the package's template folder: ``file://`` elsewhere, ``http(s)://``, ``data:`` and
every other scheme are refused, so catalog text can neither read local files into the PDF nor
reach the network. A refusal is logged as a warning and rendering goes on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from weasyprint.urls import URLFetcher

import datetime as dt
import logging
import mimetypes
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlparse

import jinja2
import pandas as pd

from planner import __version__
from planner.catalog import Catalog
from planner.measure.next_steps import next_measurements
from planner.model.metric import Metric, defined_in
from planner.model.sources import REFERENCES
from planner.outputs.advice import ask_context, sensitivity_text
from planner.outputs.basis import (
    NOT_MODELLED,
    assumption_rows,
    measured_rows,
    policy_lines,
    price_gaps,
    sources,
)
from planner.outputs.decision import (
    bill_of_materials,
    risk_lines,
    schedule_sections,
    tornado_section,
    uncertainty_section,
)
from planner.outputs.formatting import bandwidth, cents, count, duration, memory, short, usd
from planner.outputs.formulas import printed
from planner.outputs.outlook import Outlook, outlook
from planner.outputs.sections import (
    LEADING_MODELS,
    lost_table,
    simulation_summary,
    workload_sections,
)
from planner.outputs.sharing import fleet_context, later_sentence, schedule_context
from planner.plan.columns import EP_KEY, PD_KEY, PP_KEY
from planner.plan.deployment import Ask
from planner.plan.sensitivity import CHANGES
from planner.plan.sweep import Results, engine_notes
from planner.resources import templates_dir

TEMPLATE = "report.html.j2"

LOG = logging.getLogger(__name__)

#: Rows of a baseline section shown in the PDF; the rest are in the diff's own files.
BASELINE_ROWS = 25

#: Lines of a list that grows with the catalog (missing prices, skipped combinations) shown in
#: the PDF; the rest are counted.
LIST_ROWS = 10

#: The paper sizes the report is laid out for, by name: the CSS ``@page`` size. A4 unless the
#: caller asks for another.
PAPERS = {"A4": "A4", "Letter": "letter"}


class RefusedURL(ValueError):
    """A resource the report may not fetch."""


class Baseline(Protocol):
    """What the report needs from a comparison with an earlier run (``planner diff``)."""

    def to_text(self) -> str: ...

    def sections(self) -> list[tuple[str, list[dict[str, Any]]]]: ...


def _fetcher_class() -> type[URLFetcher]:
    from weasyprint.urls import URLFetcher, URLFetcherResponse

    class LocalOnlyFetcher(URLFetcher):
        """Serves files under one folder; refuses everything else (a warning, not an error)."""

        def __init__(self, root: Path, **kwargs: Any):
            super().__init__(**kwargs)
            self.root = root.resolve()
            self.refused: list[str] = []

        def fetch(self, url: str, headers: Any = None) -> URLFetcherResponse:
            parsed = urlparse(url)
            if parsed.scheme == "file" and not parsed.netloc:
                path = Path(unquote(parsed.path)).resolve()
                if path.is_file() and path.is_relative_to(self.root):
                    kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
                    headers = {"Content-Type": kind}
                    return URLFetcherResponse(url, body=path.read_bytes(), headers=headers)
            self.refused.append(url)
            LOG.warning("report: refused to fetch %r (reports load only their own templates)", url)
            raise RefusedURL(f"refused to fetch {url!r}: reports load only their own templates")

    return LocalOnlyFetcher


def environment(folder: Path | None = None) -> jinja2.Environment:
    """The Jinja environment for reports: autoescape on, undefined names are errors."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(folder or templates_dir())),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["bytes"] = memory
    env.filters["seconds"] = duration
    env.filters["thousands"] = count
    env.filters["usd"] = usd
    env.filters["cents"] = cents
    env.filters["bandwidth"] = bandwidth
    env.filters["cell"] = short
    return env


def baseline_context(baseline: Baseline | None) -> dict[str, Any] | None:
    """The comparison with a baseline run as generic tables (``None`` without one)."""
    if baseline is None:
        return None
    sections = []
    for title, rows in baseline.sections():
        columns: dict[str, None] = {}
        for row in rows:
            columns.update(dict.fromkeys(row))
        sections.append(
            {
                "title": title,
                "columns": list(columns),
                "rows": [[row.get(c) for c in columns] for row in rows[:BASELINE_ROWS]],
                "more": max(0, len(rows) - BASELINE_ROWS),
            }
        )
    return {"text": baseline.to_text() if not sections else "", "sections": sections}


def cited(metrics: list[Metric]) -> list[tuple[str, str]]:
    """The public sources the metrics cite, as (short form, full reference), in citation order."""
    seen: dict[str, str] = {}
    for m in metrics:
        for key, full in REFERENCES.items():
            if key in m.source:
                seen.setdefault(key, full)
    return list(seen.items())


def bounded(lines: list[str], limit: int = LIST_ROWS, where: str = "the catalogs") -> list[str]:
    """The first ``limit`` lines of a list, and a line counting the rest (where to find them)."""
    if len(lines) <= limit:
        return lines
    return [*lines[:limit], f"… and {len(lines) - limit:,} more (see {where})"]


def compared(catalog: Catalog, workloads: list[dict[str, Any]], plan: Ask) -> dict[str, Any]:
    """The catalog entries the report shows (the hardware and models of the ask's lines and of
    each workload's leading options), in catalog order, with how many others there are."""
    hardware = {line.row["hardware"] for line in plan.lines}
    models = {line.model for line in plan.lines}
    for item in workloads:
        hardware |= {r["hardware"] for r in item["summary"] if r.get("hardware")}
        models |= {r["model"] for r in item["summary"]}
    shown_hardware = [h for h in catalog.hardware if h.id in hardware]
    shown_models = [m for m in catalog.models if m.id in models]
    return {
        "hardware": shown_hardware,
        "models": shown_models,
        "more_hardware": len(catalog.hardware) - len(shown_hardware),
        "more_models": len(catalog.models) - len(shown_models),
    }


def input_cautions(catalog: Catalog) -> list[str]:
    """What the reader must know of the inputs: the engine's notes, then every warning the
    catalog raised (an input planner accepted but that may not mean what was meant), each once
    and as a sentence without its closing full stop (the template adds it)."""
    notes = engine_notes(catalog)
    for warning in catalog.warnings:
        if warning.message not in notes:
            notes.append(f"Input warning: {warning}".rstrip("."))
    return notes


#: The modules of metrics that only a layout beyond one pool of tensor-parallel replicas, or an
#: engine feature a run may leave off, uses, with the column that marks a candidate using it,
#: its value for one that does not, and the feature's name in words.
FEATURE_MODULES = {
    "planner.model.parallel": (EP_KEY, 1, "expert parallelism"),
    "planner.model.pipeline": (PP_KEY, 1, "pipelines across nodes"),
    "planner.model.disaggregated": (PD_KEY, 0, "disaggregated prefill and decode"),
    "planner.model.speculative": ("speculative_tokens", 0, "speculative decoding"),
}


def _tried(table: pd.DataFrame, module: str) -> bool:
    """Whether any candidate of ``table`` uses the feature of ``module``'s metrics."""
    column, default, _ = FEATURE_MODULES[module]
    return column in table and bool((pd.to_numeric(table[column]) != default).any())


def untried_features(table: pd.DataFrame) -> list[str]:
    """The layouts and engine features no candidate of the run uses, in words."""
    return [FEATURE_MODULES[m][2] for m in FEATURE_MODULES if not _tried(table, m)]


def appendix_metrics(results: Results) -> list[Metric]:
    """The metrics the formulas appendix prints: all but those of a layout or engine feature
    no candidate of the run uses (their formulas are in the workbook and on the documentation
    site)."""
    return [
        m
        for m in results.metrics
        if defined_in(m.name) not in FEATURE_MODULES or _tried(results.table, defined_in(m.name))
    ]


def context(
    catalog: Catalog,
    results: Results,
    baseline: Baseline | None = None,
    derived: Outlook | None = None,
    paper: str = "A4",
) -> dict[str, Any]:
    """Everything the template shows, prepared as plain values (the template does no arithmetic
    and this function no planning: the figures are the results' and ``derived``'s, the run's
    :class:`Outlook`, computed here only where the caller has none); ``paper`` a key of
    :data:`PAPERS`."""
    table = results.table
    derived = derived or outlook(catalog, table)
    plan, ranks = derived.plan, derived.ranks
    workloads = workload_sections(catalog, table, ranks, plan, derived.recommendations)
    shown = compared(catalog, workloads, plan)
    return {
        "title": "Inference capacity plan",
        "paper": {"name": paper, "css": PAPERS[paper]},
        "leading_models": LEADING_MODELS,
        "compared": shown,
        "margins": risk_lines(catalog, plan, len(derived.measurements)),
        "date": dt.date.today().isoformat(),
        "version": __version__,
        "catalog": catalog,
        "files": sorted(catalog.files.items()),
        "workloads": workloads,
        "lost": lost_table(ranks, catalog.workloads),
        "simulation": simulation_summary(ranks),
        "baseline": baseline_context(baseline),
        "metrics": [(m, printed(m)) for m in appendix_metrics(results)],
        "untried_features": untried_features(results.table),
        "assumptions": assumption_rows(catalog),
        "amortisation_months": catalog.assumptions.amortisation_months,
        "not_modelled": NOT_MODELLED,
        "policies": policy_lines(catalog),
        "skipped": bounded(list(results.skipped), where="results.csv and the workbook"),
        # the engine's notes and the catalog's warnings stand with the risks, the run's others
        # with the options lost
        "run_notes": [n for n in results.notes if n not in engine_notes(catalog)],
        "engine_notes": input_cautions(catalog),
        "price_gaps": bounded(price_gaps(catalog), where="hardware.yaml and planner check"),
        "sources": sources(catalog, shown["hardware"], shown["models"]),
        "references": cited(appendix_metrics(results)),  # those the formulas shown cite
        "ask": ask_context(plan, catalog, derived.caching),
        "fleet": fleet_context(derived.fleet, plan, catalog)
        | {
            "later": later_sentence(derived.fleet_later, plan, catalog),
            "months": schedule_context(derived.fleet_months, catalog),
        },
        "sensitivity": {
            workload: sensitivity_text(changes, [label for label, _ in CHANGES])
            for workload, changes in derived.changes.items()
        },
        "measured": measured_rows(derived.measured),
        "calibration": derived.calibration,
        "schedules": schedule_sections(derived.schedules, derived.growth),
        "tornado": tornado_section(derived.tornado),
        "uncertainty": uncertainty_section(derived.bands, plan),
        "bill": bill_of_materials(catalog, plan),
        "discount_rate": f"{catalog.assumptions.discount_rate_per_year:.1%}",
        "uncalibrated_band": f"{catalog.assumptions.uncalibrated_band:.0%}",
        "next_measurements": next_measurements(
            catalog, plan, derived.measurements, {v.measurement: v.text() for v in derived.apart}
        ),
        "n_candidates": len(table),
        "n_fitting": int(table["fits"].sum()) if len(table) else 0,
        "n_eligible": int(table["eligible"].astype(bool).sum()) if len(table) else 0,
    }


def render_html(
    catalog: Catalog,
    results: Results,
    baseline: Baseline | None = None,
    derived: Outlook | None = None,
    paper: str = "A4",
) -> str:
    """The report as HTML (autoescaped), laid out for ``paper`` (a key of :data:`PAPERS`)."""
    return html_from_context(context(catalog, results, baseline, derived, paper))


def html_from_context(values: dict[str, Any], paper: str | None = None) -> str:
    """The report's HTML from its :func:`context` (on another ``paper`` where given)."""
    if paper is not None:
        values = values | {"paper": {"name": paper, "css": PAPERS[paper]}}
    return environment().get_template(TEMPLATE).render(**values)


def write_pdf(html: str, path: str | Path) -> list[str]:
    """Render report HTML to a PDF at ``path``; return the URLs the fetcher refused.

    Only files inside the template folder are served; every other URL is refused with a warning
    and rendering continues without it.
    """
    import weasyprint

    folder = templates_dir()
    fetcher = _fetcher_class()(folder)
    logging.getLogger("weasyprint").setLevel(logging.ERROR)
    document = weasyprint.HTML(string=html, base_url=folder.as_uri() + "/", url_fetcher=fetcher)
    document.write_pdf(Path(path))
    return list(fetcher.refused)


def write_report(
    catalog: Catalog,
    results: Results,
    path: str | Path,
    baseline: Baseline | None = None,
    derived: Outlook | None = None,
    paper: str = "A4",
) -> Path:
    """Render the report to PDF at ``path`` on ``paper`` (A4 or Letter); resources outside the
    templates are refused."""
    path = Path(path)
    write_pdf(render_html(catalog, results, baseline, derived, paper), path)
    return path
