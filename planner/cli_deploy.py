"""The commands from the plan to a running engine and back: ``planner deploy`` (the launch
files of any option of a run) and ``planner measure check`` (measurements against a run's
settings). Each only reads its arguments and reports what :mod:`planner.deploy` says."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import click

from planner.catalog import CatalogError

#: The exit status of a refused input (the CLI's).
EXIT_INVALID = 1


@click.command()
@click.argument("run", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option("--candidate", required=True, help="The option's id, as results.csv gives it.")
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="A new folder for its launch command, manifest, measurement kit and settings.",
)
def deploy(run: Path, candidate: str, out: Path) -> None:
    """Write the launch files of one option of RUN (any candidate it evaluated, not only the
    ask's lines) to a new folder, as the run's deploy/ holds them for the ask."""
    from planner.deploy import write_deploy_files
    from planner.outputs.folders import FileRefused, check_writable
    from planner.outputs.option_deploy import OptionNotFound, option_files

    try:
        check_writable(out)
        files = option_files(run, candidate)
    except (OptionNotFound, FileRefused) as exc:
        click.echo(f"error: {exc.args[0] if isinstance(exc, OptionNotFound) else exc}", err=True)
        sys.exit(EXIT_INVALID)
    except CatalogError as exc:
        click.echo(f"{len(exc.problems)} problem(s) in the run's catalogs:", err=True)
        for problem in exc.problems:
            click.echo(f"  {problem}", err=True)
        sys.exit(EXIT_INVALID)
    staging = out.parent / f".{out.name}.staging-{os.getpid()}"
    try:
        write_deploy_files(files, staging)
        staging.rename(out)  # the folder appears whole or not at all
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        click.echo(f"error: {out} not written: {exc.strerror or exc}", err=True)
        sys.exit(EXIT_INVALID)
    click.echo(f"{len(files)} files for {candidate} written to {out}/")


@click.group()
def measure() -> None:
    """Measurements against the plan: planner measure check."""


@measure.command("check")
@click.argument("folder", type=click.Path(path_type=Path, file_okay=False, exists=True))
@click.option(
    "--run",
    "run_folder",
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    required=True,
    help="The run whose deploy/settings.json the measurements are held against.",
)
def measure_check(folder: Path, run_folder: Path) -> None:
    """Say which measurements in FOLDER (its index.yaml, or measurements/index.yaml in it)
    were not taken with the plan's settings; exit 1 when any was not."""
    import json

    from planner.deploy import FOLDER as DEPLOY
    from planner.deploy import SETTINGS
    from planner.deploy.check import check as held
    from planner.measure import FOLDER as MEASUREMENTS
    from planner.measure import INDEX, read_index

    index = folder / INDEX if (folder / INDEX).is_file() else folder / MEASUREMENTS / INDEX
    settings = run_folder / DEPLOY / SETTINGS
    if not index.is_file() or not settings.is_file():
        missing = index if not index.is_file() else settings
        click.echo(f"error: {missing} does not exist", err=True)
        sys.exit(EXIT_INVALID)
    try:
        entries = read_index(index)
        pools = json.loads(settings.read_text(encoding="utf-8"))
    except CatalogError as exc:
        for problem in exc.problems:
            click.echo(f"  {problem}", err=True)
        sys.exit(EXIT_INVALID)
    except (OSError, ValueError) as exc:
        click.echo(f"error: {settings} is not a run's settings ({exc})", err=True)
        sys.exit(EXIT_INVALID)
    verdicts = held(entries, pools)
    for verdict in verdicts:
        click.echo(verdict.text())
    apart = sum(not v.matches for v in verdicts)
    click.echo(f"{len(verdicts) - apart} of {len(verdicts)} measurement(s) taken as planned.")
    if apart:
        sys.exit(1)
