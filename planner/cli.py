"""The ``planner`` command: a thin layer over the library.

Each command parses its arguments, calls one library function, and turns the library's own
exceptions into a clear message and an exit code: 0 success, 1 invalid input, 2 usage error.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import click

from planner import __version__, cleanup
from planner.catalog import Catalog, CatalogError, UnknownEntry, load_catalog
from planner.cli_deploy import EXIT_INVALID, deploy, measure
from planner.model.metric import MetricError
from planner.plan.recommend import closing_line
from planner.plan.uncertainty import MAX_DRAWS
from planner.resources import default_catalogs

#: Draws estimated to take longer than this [s] need --yes (or a yes at the terminal).
DRAWS_CONFIRM_S = 600

CATALOGS_OPTION = click.option(
    "--catalogs",
    "catalogs",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Catalog folder (default: ./catalogs if present, else the shipped catalogs).",
)


def _load(folder: Path | None) -> Catalog:
    from planner.measure.compare import checked_measurements

    try:
        catalog = load_catalog(folder or default_catalogs())
        checked_measurements(catalog)  # refused here, before any work, when a file is wrong
    except CatalogError as exc:
        click.echo(f"{len(exc.problems)} problem(s) in the catalogs:", err=True)
        for problem in exc.problems:
            click.echo(f"  {problem}", err=True)
        sys.exit(EXIT_INVALID)
    for warning in catalog.warnings:
        click.echo(f"warning: {warning}", err=True)
    return catalog


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="planner")
def main() -> None:
    """Plan LLM inference capacity: memory, latency bounds and fit for every candidate."""
    _exit_cleanly_on_signals()


def _stop(signum: int, frame: object) -> None:
    """Remove the run's staging folder and exit at once, with 128 + the signal's number (as
    shells report it): an exception raised here could land where Python ignores it."""
    cleanup.stop_children()
    cleanup.remove_registered()
    if signum == signal.SIGINT:
        os.write(2, b"\nstopped: nothing of this run was written\n")
    os._exit(128 + signum)


@contextlib.contextmanager
def _stoppable_by_ctrl_c() -> Iterator[None]:
    """While a run works, Ctrl-C (SIGINT) ends it as SIGTERM does: its workers stopped, its
    staging and scratch folders removed, no traceback, exit status 130. The handler is put back
    afterwards (a test runner's own Ctrl-C keeps working)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _exit_cleanly_on_signals() -> None:
    """On SIGTERM and SIGHUP remove the run's staging folder and exit, so a run stopped at any
    stage leaves nothing behind."""
    if threading.current_thread() is not threading.main_thread():
        return
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _stop)


@main.command()
@CATALOGS_OPTION
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Run folder to create (default: reports/YYYY-MM-DD-NAME).",
)
@click.option("--name", default=None, help="Short name of the run (default: run).")
@click.option("--force", is_flag=True, help="Replace --out if it already exists.")
@click.option(
    "--workers",
    type=click.IntRange(1, 1024),
    default=None,
    help="Processes (or Dask workers) the simulation runs on; 1: in this process "
    "(default: the cores there are).",
)
@click.option(
    "--scheduler",
    default=None,
    metavar="ADDRESS",
    help="Run the simulation on a Dask cluster: its scheduler (tcp://HOST:8786), or 'local' "
    "for a LocalCluster of --workers processes (needs the dask extra).",
)
@click.option(
    "--baseline",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Earlier run folder to compare with: the report gets a 'Changes since the baseline "
    "run' section and the run folder a diff.csv.",
)
@click.option(
    "--draws",
    type=click.IntRange(0, MAX_DRAWS),
    default=0,
    help="Evaluate the plan over this many draws of the inputs the catalogs give as "
    "distributions ({low, mode, high}, {mean, sd}, {samples}): P10/P50/P90 of devices, cost "
    "and latency per option, and how often each is the cheapest (default 0: none). At most "
    f"{MAX_DRAWS:,}: a share of draws is then known within 0.6 percentage points, and each "
    "draw evaluates the whole plan. The time they take is estimated first (one draw timed); "
    f"over {DRAWS_CONFIRM_S // 60:.0f} minutes the run asks for --yes.",
)
@click.option(
    "--yes",
    is_flag=True,
    help="Run the draws even when they are estimated to take more than "
    f"{DRAWS_CONFIRM_S // 60:.0f} minutes.",
)
@click.option(
    "--stream-above",
    type=click.IntRange(0, None),
    default=None,
    help="Stream the sweep when it has more candidates than this (default 200,000): every row "
    "to results.parquet as it is computed, the workbook and report holding the leading options "
    "of each group (needs the large extra: pip install 'planner[large]').",
)
@click.option(
    "--full-csv",
    is_flag=True,
    help="With a streamed sweep, write every row to results.csv too (else it holds the "
    "leading options; results.parquet holds every row).",
)
def run(
    catalogs: Path | None,
    out: Path | None,
    name: str | None,
    force: bool,
    workers: int | None,
    scheduler: str | None,
    baseline: Path | None,
    draws: int,
    stream_above: int | None,
    full_csv: bool,
    yes: bool,
) -> None:
    """Evaluate every candidate and write a run folder.

    The folder holds results.csv, results.json, plan.xlsx (live formulas), report.pdf,
    manifest.json and a copy of the catalogs. It is written atomically and never replaces an
    earlier run unless --force.
    """
    from planner.diff import NotARun
    from planner.executor import BadExecutor, ExecutorUnavailable, executor
    from planner.outputs.runs import RunExists, RunNotWritten, default_run_dir
    from planner.outputs.terminal import print_ask, progress_display
    from planner.pipeline import NothingToPlan, NothingUncertain
    from planner.pipeline import run as run_pipeline
    from planner.plan.stream import STREAM_ABOVE, ParquetUnavailable

    _check_executor(workers, scheduler)
    catalog = _load(catalogs)
    destination = out or default_run_dir(Path("reports"), name)
    _check_run_paths(catalog.folder, destination, baseline)
    if draws:
        _check_draws(catalog, draws, workers, scheduler, yes)
    try:
        runner = executor(workers, scheduler)
        with (
            _stoppable_by_ctrl_c(),
            progress_display(workers=getattr(runner, "workers", 1)) as progress,
        ):
            outcome = run_pipeline(
                catalog,
                destination,
                name=name,
                force=force,
                number=out is None,
                baseline=baseline,
                processes=runner,
                progress=progress,
                draws=draws,
                stream_above=STREAM_ABOVE if stream_above is None else stream_above,
                full_csv=full_csv,
            )
    except (
        RunExists,
        RunNotWritten,
        NotARun,
        MetricError,
        NothingToPlan,
        NothingUncertain,
        BadExecutor,
        ExecutorUnavailable,
        ParquetUnavailable,
    ) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_INVALID)
    folder, results, comparison = outcome.folder, outcome.results, outcome.baseline
    if comparison is not None:
        click.echo(comparison.summary())
    derived = outcome.derived
    print_ask(catalog, results, plan=derived.plan, caching=derived.caching, fleet=derived.fleet,
              months=derived.fleet_months)  # fmt: skip
    for note in results.notes:
        click.echo(f"{note}.")
    prefix = "Of the leading options: " if results.notes else ""
    click.echo(prefix + closing_line(results.table))
    if folder != destination:
        click.echo(f"{destination}/ was taken by another run meanwhile.")
    click.echo(f"Run written to {folder}/")
    from planner.deploy import FOLDER as DEPLOY
    from planner.deploy import SETTINGS

    if (folder / DEPLOY / SETTINGS).is_file():
        click.echo(
            f"Launch commands, manifests and measurement kits: {folder}/{DEPLOY}/ "
            "(measure-LINE.sh --dry-run prints what one runs)"
        )


def _check_executor(workers: int | None, scheduler: str | None) -> None:
    """Refuse, before any work, a ``--scheduler`` that is no address (a usage error, exit 2),
    one that needs Dask where it is missing, and more local workers than the cores allow."""
    from planner.executor import BadExecutor, ExecutorUnavailable, check_scheduler, check_workers

    try:
        if scheduler is not None:
            check_scheduler(scheduler)
        if workers is not None:
            check_workers(workers, scheduler)
    except BadExecutor as exc:
        option = "--scheduler" if scheduler is not None and "scheduler" in str(exc) else "--workers"
        raise click.BadParameter(str(exc), param_hint=f"'{option}'") from None
    except ExecutorUnavailable as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_INVALID)


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies inside it, links resolved."""
    path, folder = Path(os.path.abspath(path)).resolve(), Path(os.path.abspath(folder)).resolve()
    return path == folder or folder in path.parents


def _check_run_paths(catalogs: Path, destination: Path, baseline: Path | None) -> None:
    """Refuse, before any work, a run folder placed where it would write into what it reads: the
    catalog folder, the baseline run, or another run folder."""
    from planner.outputs.folders import run_folder_of

    refusal = None
    if _inside(destination, catalogs):
        refusal = (
            f"--out {destination} is the catalog folder {catalogs} or inside it, which a run "
            "reads and never writes; nothing was changed: choose a folder outside it"
        )
    elif baseline is not None and _inside(destination, baseline):
        refusal = (
            f"--out {destination} is the baseline run {baseline} (or inside it): a run never "
            "replaces the run it is compared with; choose another --out"
        )
    elif baseline is not None and _inside(baseline, destination):
        refusal = (
            f"--baseline {baseline} lies inside --out {destination}, the folder this run "
            "writes: choose another --out"
        )
    else:
        holder = run_folder_of(destination.parent)
        if holder is not None:
            refusal = (
                f"--out {destination} is inside the run folder {holder}, which holds only what "
                "planner wrote for that run: choose a folder outside it"
            )
    if refusal:
        click.echo(f"error: {refusal}", err=True)
        sys.exit(EXIT_INVALID)


def _check_draws(catalog: Catalog, draws: int, workers: int | None, scheduler: str | None,
                 yes: bool) -> None:  # fmt: skip
    """Time one draw and refuse (or, at a terminal, ask) when the draws would take more than
    :data:`DRAWS_CONFIRM_S` without ``--yes``, saying the estimate."""
    from planner.executor import cores
    from planner.plan.uncertainty import draws_seconds, seconds_per_draw, uncertain_inputs

    if not uncertain_inputs(catalog):
        return  # the run refuses it, saying what to write
    busy = workers or cores()
    per_draw = seconds_per_draw(catalog)
    estimate = draws_seconds(per_draw, draws, busy)
    if estimate <= DRAWS_CONFIRM_S or yes:
        return
    where = "a Dask cluster's" if scheduler not in (None, "local") else f"{busy} worker(s)"
    said = (
        f"--draws {draws:,} would take about {_duration(estimate)} (one draw took "
        f"{per_draw:.2f} s here, × {draws:,} draws over {where}), more than "
        f"{DRAWS_CONFIRM_S // 60} minutes"
    )
    if sys.stdin.isatty() and click.confirm(f"{said}. Run them?", default=False, err=True):
        return
    click.echo(f"error: {said}; pass --yes to run them anyway, or ask for fewer draws", err=True)
    sys.exit(EXIT_INVALID)


def _duration(seconds: float) -> str:
    """A duration in words: ``40 s``, ``12 min``, ``3.5 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@main.command()
@CATALOGS_OPTION
def check(catalogs: Path | None) -> None:
    """Validate the catalogs; list every problem and exit 1 if there are any."""
    catalog = _load(catalogs)
    click.echo(
        f"ok: {catalog.folder}: {len(catalog.hardware)} hardware, {len(catalog.models)} models, "
        f"{len(catalog.precisions)} precisions, {len(catalog.workloads)} workloads"
    )


@main.command()
@CATALOGS_OPTION
@click.option("--hardware", required=True, help="Hardware id.")
@click.option("--model", required=True, help="Model id.")
@click.option("--precision", required=True, help="Precision id.")
@click.option("--workload", required=True, help="Workload id.")
@click.option(
    "--simulate/--no-simulate",
    default=True,
    show_default=True,
    help="Also size the candidate by simulation and say what binds.",
)
def explain(
    catalogs: Path | None,
    hardware: str,
    model: str,
    precision: str,
    workload: str,
    simulate: bool,
) -> None:
    """Print the arithmetic of one candidate step by step, with GB and GiB side by side."""
    from planner.outputs.explain import explain as explain_candidate

    catalog = _load(catalogs)
    try:
        text = explain_candidate(catalog, hardware, model, precision, workload, simulate)
    except UnknownEntry as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_INVALID)
    except MetricError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_INVALID)
    click.echo(text)


@main.command()
@click.argument("old", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path))
@click.option(
    "--csv",
    "csv_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Also write every change to this CSV file (diff.csv), one row per change.",
)
@click.option(
    "--limit",
    type=click.IntRange(0, None),
    default=20,
    show_default=True,
    help="Rows shown per list on the terminal; the CSV holds them all.",
)
def diff(old: Path, new: Path, csv_path: Path | None, limit: int) -> None:
    """Show what changed between two run folders: catalog entries (field by field),
    recommendations, candidates that newly fit or stop fitting, and cost changes.

    --csv writes a new file: never over an existing one, nor inside a run folder."""
    from planner.diff import NotARun, diff_runs
    from planner.outputs.folders import FileRefused, check_writable, write_new_file

    try:
        if csv_path is not None:
            check_writable(csv_path)  # before reading the runs
        result = diff_runs(old, new)
        text = result.to_text(limit=limit)
        written = write_new_file(csv_path, result.write_csv) if csv_path is not None else None
    except (NotARun, FileRefused) as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_INVALID)
    click.echo(text, nl=False)
    if written is not None:
        click.echo(f"Changes written to {written}")


@main.command()
@CATALOGS_OPTION
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write the calibration (YAML) to this new file instead of printing it.",
)
def calibrate(catalogs: Path | None, out: Path | None) -> None:
    """Fit efficiencies, step overhead and the engine's memory to measurements/index.yaml."""
    import yaml

    from planner.measure import load_measurements
    from planner.measure.calibrate import calibrate as fit
    from planner.measure.calibrate import calibration_document, summary
    from planner.outputs.folders import FileRefused, check_writable, write_new_file

    if out is not None:
        try:
            check_writable(out)  # before any fitting
        except FileRefused as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(EXIT_INVALID)
    catalog = _load(catalogs)
    try:
        measurements = load_measurements(catalog)
        if measurements:
            fits = fit(catalog, measurements)
            text = yaml.safe_dump(calibration_document(fits), sort_keys=False)
    except CatalogError as exc:
        click.echo(f"{len(exc.problems)} problem(s) in the measurements:", err=True)
        for problem in exc.problems:
            click.echo(f"  {problem}", err=True)
        sys.exit(EXIT_INVALID)
    if not measurements:
        click.echo(
            f"error: no measurements: {catalog.folder / 'measurements' / 'index.yaml'} lists none",
            err=True,
        )
        sys.exit(EXIT_INVALID)
    for line in summary(fits):
        click.echo(line, err=True)
    if out is None:
        click.echo(text, nl=False)
        return
    try:
        write_new_file(out, lambda path: path.write_text(text, encoding="utf-8"))
    except FileRefused as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_INVALID)
    click.echo(f"calibration of {len(measurements)} measurement(s) written to {out}")


main.add_command(deploy)
main.add_command(measure)


@main.command("import-hf")
@click.argument("config", type=click.Path(path_type=Path, dir_okay=False))
@click.option(
    "--id", "entry_id", default=None, help="Catalog id (default: from the config's name)."
)
@click.option("--name", default=None, help="Display name.")
@click.option("--revision", default=None, help="Model revision (config.json has no commit hash).")
@click.option(
    "--append",
    "append_to",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Append the entry to this models.yaml (it must stay a valid catalog) instead of printing.",
)
def import_hf(
    config: Path,
    entry_id: str | None,
    name: str | None,
    revision: str | None,
    append_to: Path | None,
) -> None:
    """Turn a local Hugging Face config.json into a models.yaml entry (no network)."""
    from planner.catalog.hf import (
        AppendRefused,
        UnsupportedConfig,
        append_model_entry,
        entry_to_yaml,
        load_hf_config,
        model_entry_from_hf_config,
        quantisation_note,
    )

    if append_to is not None:
        _check_append(append_to)  # before reading the config
    try:
        cfg = load_hf_config(config)
        entry_id = entry_id or _id_from_config(cfg, config)
        entry = model_entry_from_hf_config(cfg, entry_id, name, revision=revision)
    except UnsupportedConfig as exc:
        click.echo(f"error: {config}: {exc}", err=True)
        sys.exit(EXIT_INVALID)
    note = quantisation_note(cfg)
    if note:
        click.echo(f"note: {note}", err=True)
    text = entry_to_yaml(entry, list_item=True)
    if append_to is None:
        click.echo(text, nl=False)
        return
    try:
        append_model_entry(append_to, text)
    except AppendRefused as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_INVALID)
    click.echo(f"appended {entry_id!r} to {append_to}")


def _check_append(path: Path) -> None:
    """Refuse, before any work, a models.yaml ``--append`` may not write
    (:func:`planner.outputs.folders.check_writable`)."""
    from planner.outputs.folders import FileRefused, check_writable

    try:
        check_writable(path, replace=True)
    except FileRefused as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_INVALID)


def _id_from_config(cfg: dict, path: Path) -> str:
    from planner.outputs.runs import slug

    fallback = path.parent.resolve().name if path.stem == "config" else path.stem
    source = str(cfg.get("_name_or_path") or fallback)
    return slug(source.split("/")[-1])


if __name__ == "__main__":  # pragma: no cover
    main()
