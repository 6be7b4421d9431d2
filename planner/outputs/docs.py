"""Documentation generated from the definitions, so the site cannot drift from the code.

``python -m planner.outputs.docs`` rewrites the generated pages of the documentation site under
``docs/reference/``:

- ``columns.md``: every results column with its unit, meaning and formula or origin;
- ``metrics.md``: every metric of the registry (:mod:`planner.model.metric`) by concern, with
  its formula as the formula layer renders it, its unit, source and inputs; each metric's text
  is a named section that hand-written pages include (``--8<-- "reference/metrics.md:NAME"``);
- ``catalog.md``: every catalog file and the fields of its records (:mod:`planner.catalog.records`),
  with type, unit kind, default and meaning (the field's ``#:`` or trailing comment);
- ``api.md``: the library's public functions, with their signatures and docstrings.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planner.outputs.catalog_docs import catalog_markdown, field_gaps
from planner.outputs.markdown import GENERATED_NOTE, PIPE, escape, markdown_of_docstring
from planner.plan.sweep import Results
from planner.resources import shipped_catalogs

#: Where the generated pages go, relative to the documentation folder.
REFERENCE = "reference"


def columns_markdown(results: Results) -> str:
    """A Markdown table: every results column with its unit, meaning and formula."""
    from planner.outputs.runs import column_definitions

    lines = ["| column | unit | meaning | formula or origin |", "| --- | --- | --- | --- |"]
    for c in column_definitions(results):
        meaning = c["description"].replace("|", PIPE)
        origin = f"`{c['formula']}`" if "formula" in c else c.get("lookup", "catalog id or size")
        lines.append(f"| `{c['name']}` | {c['unit']} | {meaning} | {origin.replace('|', PIPE)} |")
    return "\n".join(lines)


# --- metrics --------------------------------------------------------------------------------

#: The order a reader meets the metric modules in, with each one's heading; a module missing
#: here is listed after them, under its own name.
METRIC_CHAPTERS = {
    "planner.model.memory": "Memory and the KV cache",
    "planner.model.engine": "The serving engine's memory",
    "planner.model.latency": "Latency bounds of one replica",
    "planner.model.load": "Latency at the forecast load",
    "planner.model.capacity": "Capacity and targets",
    "planner.model.margins": "Margins",
    "planner.model.calibration": "Calibration and the latency band",
    "planner.model.facility": "Facility limits",
    "planner.model.cost": "Cost and the recommendation",
}


def _metric_modules() -> dict[str, list[Any]]:
    from planner.model.metric import defined_in, metrics

    by_module: dict[str, list[Any]] = {m: [] for m in METRIC_CHAPTERS}
    for name, m in metrics().items():
        by_module.setdefault(defined_in(name), []).append(m)
    return {module: ms for module, ms in by_module.items() if ms}


def _metric_body(m: Any) -> list[str]:
    """A metric's text without its heading: what it means, its formula, unit and source."""
    lines = [escape(m.description), "", "```text", f"{m.name} = {m.formula_text()}", "```", ""]
    facts = [f"Unit: {m.unit}" if m.unit else f"Kind: {m.kind}"]
    if m.source:
        facts.append(f"Source: {escape(m.source)}")
    lines.append(" · ".join(facts))
    own = m.restates is None and getattr(m.func, "__name__", "") == m.name
    rest = (inspect.getdoc(m.func) or "").split("\n\n")[1:] if own else []
    if rest:
        lines += ["", markdown_of_docstring("\n\n".join(rest))]
    return lines


def metrics_markdown() -> str:
    """The page of every metric by concern: meaning, formula, unit, source and inputs."""
    modules = _metric_modules()
    names = {m.name for ms in modules.values() for m in ms}
    out = [
        GENERATED_NOTE,
        "",
        "# Metric reference",
        "",
        "Every metric of the plan, as the formula layer defines it: the formula below is the one",
        "the batch planner evaluates over every candidate and the workbook writes as a live Excel",
        "formula (with cell references in place of the names). Names that link are other",
        "metrics; the others are [inputs looked up from the catalogs](columns.md).",
        "",
    ]
    for module, ms in modules.items():
        title = METRIC_CHAPTERS.get(module, module)
        doc = inspect.getdoc(importlib.import_module(module)) if module else ""
        out += [f"## {title}", ""]
        if doc:
            out += [markdown_of_docstring(doc.split("\n\n")[0]), ""]
        for m in ms:
            reads = ", ".join(
                f"[`{i}`](#{i})" if i in names and i != m.name else f"`{i}`" for i in m.inputs
            )
            out += [f"### `{m.name}` {{#{m.name}}}", "", f"<!-- --8<-- [start:{m.name}] -->"]
            out += _metric_body(m)
            out += [f"<!-- --8<-- [end:{m.name}] -->", "", f"Reads: {reads}", ""]
    return "\n".join(out).rstrip() + "\n"


# --- library API ----------------------------------------------------------------------------

#: The public functions and classes of the library, in the order a program uses them.
API = (
    ("Loading catalogs", ("planner.catalog:load_catalog", "planner.catalog:Catalog",
                          "planner.catalog:CatalogError")),
    ("Planning", ("planner.plan.sweep:evaluate", "planner.plan.sweep:Results",
                  "planner.pipeline:plan", "planner.plan.recommend:recommendations",
                  "planner.plan.deployment:ask")),
    ("Writing a run", ("planner.pipeline:run", "planner.outputs.runs:write_run",
                       "planner.outputs.explain:explain")),
    ("The shared fleet", ("planner.plan.portfolio:plan_fleet",
                          "planner.plan.fleet_schedule:fleet_schedule")),
    ("Comparing runs", ("planner.diff:diff_runs",)),
    ("Measurements and calibration", ("planner.measure:load_measurements",
                                      "planner.measure.compare:comparison",
                                      "planner.measure.calibrate:calibrate")),
    ("From the plan to a running engine", ("planner.deploy:deploy_files",
                                           "planner.deploy.settings:launch_settings",
                                           "planner.deploy.check:check")),
    ("Importing models", ("planner.catalog.hf:model_entry_from_hf_config",)),
    ("Where the work runs", ("planner.executor:executor",)),
)  # fmt: skip


def _signature(obj: Callable[..., Any]) -> str:
    """``name(a: T, b: U = default) -> R`` with the annotations as written in the source."""
    sig = inspect.signature(obj)
    params = []
    star = False
    for p in sig.parameters.values():
        if p.kind is p.KEYWORD_ONLY and not star:
            params.append("*")
            star = True
        text = p.name + (f": {p.annotation}" if p.annotation is not p.empty else "")
        if p.default is not p.empty:
            default = p.default
            shown = "..." if callable(default) else repr(default)
            text += f" = {shown}"
        params.append(text)
    returns = "" if sig.return_annotation is sig.empty else f" -> {sig.return_annotation}"
    if inspect.isclass(obj):
        returns = ""
    return f"{obj.__qualname__}({', '.join(params)}){returns}"


def api_markdown() -> str:
    """The page of the library's public functions and classes: signature and docstring."""
    out = [
        GENERATED_NOTE,
        "",
        "# Library API",
        "",
        "planner is a library first: the `planner` command parses its arguments, calls one of",
        "these functions and turns their named exceptions into a message and exit status 1.",
        "",
        "```python",
        "from pathlib import Path",
        "",
        "from planner.catalog import load_catalog",
        "from planner.outputs.runs import write_run",
        "from planner.plan.sweep import evaluate",
        "",
        'catalog = load_catalog("catalogs")',
        "results = evaluate(catalog)  # every candidate in closed form, no simulation",
        'print(results.table[["hardware", "model", "fits", "itl_load_s"]].head())',
        'write_run(catalog, results, Path("reports/by-hand"))',
        "```",
        "",
    ]
    for title, paths in API:
        out += [f"## {title}", ""]
        for path in paths:
            module, name = path.split(":")
            obj = getattr(importlib.import_module(module), name)
            out += [f"### `{module}.{name}` {{#{name.lower()}}}", "", "```python"]
            out += [("class " if inspect.isclass(obj) else "") + _signature(obj), "```", ""]
            out += [markdown_of_docstring(inspect.getdoc(obj) or ""), ""]
    return "\n".join(out).rstrip() + "\n"


# --- the pages, written ---------------------------------------------------------------------


def generated_pages(results: Results) -> dict[str, str]:
    """Each generated page's path under the documentation folder, and its text."""
    columns = "\n".join(
        [
            GENERATED_NOTE,
            "",
            "# Results columns",
            "",
            "Every column of `results.csv` (and of the workbook's `Plan` sheet, in the same "
            "order), with its unit, its meaning and its formula (a metric: see the "
            "[metric reference](metrics.md)) or where it is looked up. Base units are bytes "
            "(`_bytes`, `B`), seconds (`_s`), FLOP and FLOP/s; `_gib`, `_gb`, `_mib` and `_ms` "
            "columns restate a figure for people.",
            "",
            columns_markdown(results),
            "",
        ]
    )
    return {
        f"{REFERENCE}/columns.md": columns,
        f"{REFERENCE}/metrics.md": metrics_markdown(),
        f"{REFERENCE}/catalog.md": catalog_markdown(results),
        f"{REFERENCE}/api.md": api_markdown(),
    }


def write_docs(docs: Path, results: Results) -> list[str]:
    """Write every generated page under ``docs``; return those that changed."""
    changed = []
    for relative, text in generated_pages(results).items():
        path = docs / relative
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            changed.append(relative)
    return changed


def _main() -> int:  # pragma: no cover - a maintenance script
    from planner.catalog import load_catalog
    from planner.plan.sweep import evaluate

    results = evaluate(load_catalog(shipped_catalogs() / "examples" / "seed"))
    pages = write_docs(Path("docs"), results)
    print(f"docs/ updated: {', '.join(pages)}" if pages else "docs/ already up to date")
    if "--gaps" in sys.argv:
        gaps = field_gaps(results)
        print("Catalog fields their records do not describe (meaning taken from):")
        print("\n".join(f"  {name}: {origin}" for name, origin in gaps.items()))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_main())
