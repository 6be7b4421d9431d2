"""report.pdf: the procurement report, rendered from Jinja templates by WeasyPrint.

Catalog text is untrusted. Jinja autoescapes every value (``select_autoescape`` would skip
``*.html.j2``, so autoescape is simply on), and WeasyPrint gets a URL fetcher that serves only
files inside the package's template folder: ``file://`` elsewhere, ``http(s)://``, ``data:`` and
every other scheme are refused, so catalog text can neither read local files into the PDF nor
reach the network.
"""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import jinja2

from . import __version__
from .catalog import Catalog
from .resources import templates_dir
from .sweep import Results
from .units import format_bytes, format_seconds

TEMPLATE = "report.html.j2"


class RefusedURL(ValueError):
    """A resource the report may not fetch."""


def _fetcher_class() -> type:
    from weasyprint.urls import URLFetcher, URLFetcherResponse

    class LocalOnlyFetcher(URLFetcher):
        """Serves files under one folder; refuses everything else."""

        def __init__(self, root: Path, **kwargs: Any):
            super().__init__(**kwargs)
            self.root = root.resolve()
            self.refused: list[str] = []

        def fetch(self, url: str, headers: Any = None) -> URLFetcherResponse:
            parsed = urlparse(url)
            if parsed.scheme == "file" and not parsed.netloc:
                path = Path(unquote(parsed.path)).resolve()
                if path.is_file() and path.is_relative_to(self.root):
                    return URLFetcherResponse(url, body=path.read_bytes())
            self.refused.append(url)
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
    env.filters["bytes"] = format_bytes
    env.filters["seconds"] = format_seconds
    env.filters["thousands"] = lambda v: f"{v:,.0f}"
    return env


def context(catalog: Catalog, results: Results) -> dict[str, Any]:
    """Everything the template shows, prepared as plain values (the template does no arithmetic)."""
    table = results.table
    workloads = []
    for w in catalog.workloads:
        rows = table[table["workload"] == w.id]
        if rows.empty:
            continue
        fitting = rows[rows["fits"]].sort_values(
            ["weight_read_s", "max_sequences"], ascending=[True, False]
        )
        workloads.append(
            {
                "workload": w,
                "rows": rows.to_dict(orient="records"),
                "fitting": fitting.to_dict(orient="records"),
            }
        )
    return {
        "title": "Inference capacity plan",
        "date": dt.date.today().isoformat(),
        "version": __version__,
        "catalog": catalog,
        "files": sorted(catalog.files.items()),
        "workloads": workloads,
        "metrics": results.metrics,
        "assumptions": catalog.assumptions,
        "n_candidates": len(table),
        "n_fitting": int(table["fits"].sum()),
    }


def render_html(catalog: Catalog, results: Results) -> str:
    """The report as HTML (autoescaped)."""
    return environment().get_template(TEMPLATE).render(**context(catalog, results))


def write_report(catalog: Catalog, results: Results, path: str | Path) -> Path:
    """Render the report to PDF at ``path``; resources outside the templates are refused."""
    import weasyprint

    folder = templates_dir()
    fetcher = _fetcher_class()(folder)
    logging.getLogger("weasyprint").setLevel(logging.ERROR)
    html = weasyprint.HTML(
        string=render_html(catalog, results),
        base_url=folder.as_uri() + "/",
        url_fetcher=fetcher,
    )
    path = Path(path)
    html.write_pdf(path)
    return path
