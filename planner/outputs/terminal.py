"""What ``planner run`` shows in the terminal: progress on its long stages (on stderr, and only
on a terminal) and, at the end, the one ask as a table (the report's first page in brief)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from planner.catalog import Catalog
from planner.outputs.advice import ask_context
from planner.outputs.outlook import CacheWorth
from planner.outputs.sharing import fleet_context, schedule_summary
from planner.plan.deployment import Ask, ask
from planner.plan.fleet import Fleet
from planner.plan.fleet_schedule import FleetSchedule
from planner.plan.sweep import Results
from planner.progress import Progress as ProgressCallback

#: The stages whose units of work run on the executor's workers.
SPREAD_STAGES = frozenset({"evaluating", "simulating", "drawing"})


@contextmanager
def progress_display(
    console: Console | None = None, workers: int | None = None
) -> Iterator[ProgressCallback]:
    """A :data:`planner.progress.Progress` that draws one bar per stage while the run lasts,
    saying how many workers share the stages that spread over them; nothing is drawn when
    stderr is not a terminal (logs and pipes stay clean)."""
    console = console or Console(stderr=True)
    bars = Progress(
        TextColumn("{task.description:<30}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
    tasks: dict[str, TaskID] = {}

    def report(stage: str, done: int, total: int) -> None:
        name = "writing the run folder" if stage.startswith("writing") else stage
        shown = name
        if workers is not None and workers > 1 and name in SPREAD_STAGES:
            shown = f"{name} on {workers} workers"
        if name not in tasks:
            tasks[name] = bars.add_task(shown, total=total)
        bars.update(tasks[name], completed=done, total=total, description=shown)

    with bars:
        yield report


def ask_table(page: dict[str, Any]) -> Table:
    """The one ask (``page``: :func:`planner.outputs.advice.ask_context`): per workload the
    model, the advice and what it costs, with the totals."""
    months = page["months"]
    table = Table(title="The ask (USD)", title_justify="left", show_footer=bool(page["lines"]))
    table.add_column("Workload", footer="Total", no_wrap=True)
    table.add_column("Model", no_wrap=True)
    table.add_column("Advice", no_wrap=True)
    table.add_column("Devices", footer=page["devices"])  # a long layout wraps, not the sums
    table.add_column("Capital", justify="right", footer=page["capital"], no_wrap=True)
    table.add_column("Monthly", justify="right", footer=page["monthly"], no_wrap=True)
    table.add_column(f"{months} months", justify="right", footer=page["period"], no_wrap=True)
    for line in page["lines"]:  # ids: short, and as in the catalogs
        workload, model, what = (escape(text) for text in line["ids"])
        table.add_row(
            workload, model, line["advice"], what, line["capital"], line["monthly"], line["period"]
        )
    return table


def print_ask(
    catalog: Catalog,
    results: Results,
    console: Console | None = None,
    plan: Ask | None = None,
    caching: dict[str, CacheWorth] | None = None,
    fleet: Fleet | str | None = None,
    months: FleetSchedule | None = None,
) -> None:
    """Print :func:`ask_table`, the ties, what prefix caching is worth (``caching``: the run's
    :attr:`planner.outputs.outlook.Outlook.caching`), the workloads nothing serves and the
    shared ``fleet`` (the run's :attr:`~planner.outputs.outlook.Outlook.fleet`, where it has
    one) with its ``months`` (:attr:`~planner.outputs.outlook.Outlook.fleet_months`) of
    ``plan`` (the run's ask; planned from ``results`` where the caller has none)."""
    if console is None:
        console = Console()
        if not console.is_terminal:  # a log or a pipe: wide enough for the ask's table, not 80
            console = Console(width=132)
    page = ask_context(plan or ask(catalog, results.table), catalog, caching)
    console.print(ask_table(page))
    for line in page["lines"]:
        if line["margin"]:
            workload, model, _ = line["ids"]
            console.print(f"{workload} ({model}): {line['margin']}", markup=False, style="red")
    if page["lines"]:
        upper = f"; {page['devices_upper']}" if page["devices_upper"] else ""
        console.print(
            f"Latency estimates calibrated on measurements for {page['calibrated']} options "
            f"(else +{page['uncalibrated_band']} at 90% confidence, assumed){upper}.",
            markup=False,
            highlight=False,
        )
    for text in page["ties"]:
        console.print(f"Tie: {text}.", markup=False, highlight=False)
    for text in page["caching"]:
        console.print(f"{text}.", markup=False, highlight=False)
    for text in page["unserved_reasons"] or page["unserved"]:
        console.print(f"Not served: {text}.", markup=False, highlight=False)
    if fleet is not None:
        print_fleet(console, fleet_context(fleet, plan or ask(catalog, results.table), catalog))
    if summary := schedule_summary(months, catalog):
        console.print(f"  {summary}", markup=False, highlight=False)


def print_fleet(console: Console, page: dict[str, Any]) -> None:
    """The shared fleet (``page``: :func:`planner.outputs.sharing.fleet_context`) in a few
    lines: its cost and what sharing saves, each device type's devices and what runs on
    them."""
    if page["none"]:
        console.print(page["none"], markup=False, highlight=False)
        return
    console.print(f"{page['headline']} {page['alone']}", markup=False, highlight=False)
    for row in page["rows"]:
        runs = "; ".join(row["runs"])
        text = f"  {row['hardware']}: owned {row['owned']}; rented {row['rented']}. {runs}."
        console.print(text, markup=False, highlight=False)
    for text in page["api"]:
        console.print(f"  {text}.", markup=False, highlight=False)
    if page["down"]:
        console.print(f"  {page['down']}", markup=False, highlight=False)
