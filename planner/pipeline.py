"""A run of planner, told as one story.

:func:`plan` is the arithmetic: cross the catalogs into candidates and evaluate every metric;
choose what is worth simulating; simulate it; evaluate once more with the simulated figures as
data; rank; and, where an option that was never simulated now leads its group, simulate that one
too. :func:`run` adds what a run leaves behind: the comparison with a baseline run and the run
folder (results, workbook, report, manifest). Each stage is a function of its own module that
can be called alone; this module only puts them in order.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from planner.catalog import Catalog
from planner.diff import RunDiff, RunSnapshot, compare, load_run, snapshot
from planner.executor import Executor, as_executor, kept
from planner.outputs.folders import DIFF_CSV
from planner.outputs.outlook import Outlook, outlook
from planner.outputs.runs import (
    RESULTS_CSV,
    UNCERTAINTY_CSV,
    Writer,
    check_destination,
    probe_destination,
    remove_scratch,
    scratch_folder,
    write_csv,
    write_run,
)
from planner.plan import recommend
from planner.plan.selection import (
    contenders,
    deciding,
    screened,
    select_candidates,
    unsimulated_leaders,
)
from planner.plan.stream import PARQUET, STREAM_ABOVE, codes_of, settle, stream
from planner.plan.sweep import Results, evaluate, skipped_pairs
from planner.plan.uncertainty import Bands, monte_carlo, simulate_p90, uncertain_inputs
from planner.progress import Progress
from planner.serving.sizing import simulate_rows

#: How many options per workload × model are simulated first, and how many more rounds may
#: simulate options that come to lead their group without having been simulated.
PER_GROUP = 3
MAX_ROUNDS = 4

#: Options simulated of a model deployment.yaml does not name for its workload (it is shown
#: beside the named one, it does not serve): its leading option first, then in each round the
#: option that leads it unsimulated; never the search for contenders.
OTHERS_PER_GROUP = 1


def plan(
    catalog: Catalog,
    processes: int | Executor = 2,
    per_group: int = PER_GROUP,
    max_rounds: int = MAX_ROUNDS,
    progress: Progress | None = None,
    rows: pd.DataFrame | None = None,
    others_per_group: int | None = OTHERS_PER_GROUP,
) -> Results:
    """Every candidate evaluated, the leading ones sized by simulation.

    Simulation can make its candidates dearer (more replicas) or rule them out, so an option
    that was never simulated may then rank first; and the closed form plans every replica full,
    so it may rule out an option the simulation would accept. Each round simulates the
    unsimulated options ranked above a group's best simulated one and the :func:`contenders`
    (ruled out in closed form only, yet cheaper than the winner), up to ``max_rounds`` times.
    Only groups that can decide the ask are searched so: of a workload deployment.yaml names a
    model for, another model's group is simulated at its ``others_per_group`` leading options
    (:func:`planner.plan.selection.screened`), and each round at the unsimulated options ranked
    above its best simulated one, as many, so that the option the comparison of models shows
    is a simulated one (None: every group searched alike).
    Without simulated requests (``simulated_requests: 0``) this is
    :func:`planner.plan.sweep.evaluate`. ``rows`` plans only those candidates (a streamed
    sweep's leading options).
    """
    tell = progress or (lambda stage, done, total: None)
    tell("evaluating", 0, 1)
    results = evaluate(catalog, rows=rows)  # every metric over whole columns
    tell("evaluating", 1, 1)
    if catalog.assumptions.simulated_requests == 0 or results.table.empty:
        return results
    # every model decides when all are searched alike
    named = {} if others_per_group is None else {d.workload: d.model for d in catalog.deployment}
    others = others_per_group or per_group
    chosen = select_candidates(results.table, per_group)  # by the recommendation's own rule
    chosen = screened(chosen, named, others)
    runner = as_executor(processes)
    with kept(runner):  # the first round's workers run the rounds after it
        simulated = simulate_rows(catalog, chosen.sort_index(), runner, progress=progress)
        for _ in range(max_rounds):
            results = evaluate(catalog, simulated=simulated, rows=rows)  # simulated as data
            ranks = recommend.ranked(results.table)
            wanted = unsimulated_leaders(ranks, per_group).index.union(contenders(ranks).index)
            wanted = wanted[deciding(results.table.loc[wanted], named)]
            # another model's group: its leader, as the comparison of models shows it, simulated
            shown = unsimulated_leaders(ranks, others).index
            wanted = wanted.union(shown[~deciding(results.table.loc[shown], named)])
            if wanted.empty:
                return results
            more = simulate_rows(catalog, results.table.loc[wanted], runner, progress=progress)
            simulated = pd.concat([simulated, more], ignore_index=True)
    return evaluate(catalog, simulated=simulated, rows=rows)


@dataclass(frozen=True)
class RunOutcome:
    """What :func:`run` produced: the folder written, its results, the comparison with the
    baseline run (None without one), and what its writers showed beyond the table (the ask, the
    ranking, the sensitivity...), computed once for all of them."""

    folder: Path
    results: Results
    baseline: RunDiff | None
    derived: Outlook

    @property
    def bands(self) -> Bands | None:
        """The plan over draws of its uncertain inputs (``draws``), None without."""
        return self.derived.bands


class NothingToPlan(ValueError):
    """The catalogs select no hardware × model × precision × workload to evaluate."""


class NothingUncertain(ValueError):
    """Draws were asked for, but the catalogs give no quantity as a distribution."""


def run(
    catalog: Catalog,
    destination: Path,
    *,
    name: str | None = None,
    force: bool = False,
    number: bool = False,
    baseline: Path | None = None,
    processes: int | Executor = 2,
    progress: Progress | None = None,
    draws: int = 0,
    stream_above: int = STREAM_ABOVE,
    full_csv: bool = False,
) -> RunOutcome:
    """Plan, compare with ``baseline`` (an earlier run folder), and write the run folder;
    with ``draws``, evaluate the plan over that many draws of its uncertain inputs too.

    Above ``stream_above`` candidates the sweep is streamed (:mod:`planner.plan.stream`): every
    row goes to ``results.parquet`` (and, with ``full_csv``, to ``results.csv``) as it is
    computed, and the run plans, simulates and shows the leading options of each group.

    Raises :class:`NothingToPlan` when the catalogs select no candidate,
    :class:`planner.outputs.runs.RunExists` before any work when ``destination`` exists and
    ``force`` is false or it is not a planner run (``number`` takes the next free numbered name
    instead), :class:`planner.outputs.runs.RunNotWritten` before any work when the file system
    refuses the folder, :class:`planner.diff.NotARun` before any work when ``baseline`` is not a
    run folder, and :class:`planner.model.metric.MetricError` when a formula meets inputs it does
    not cover, and :class:`NothingUncertain` before any work when ``draws`` are asked of
    catalogs with no distribution.
    """
    destination = Path(destination)
    if not number:
        check_destination(destination, force=force)
    probe_destination(destination)
    earlier = load_run(baseline) if baseline is not None else None
    if draws and not uncertain_inputs(catalog):
        raise NothingUncertain(
            "--draws needs an uncertain input, and the catalogs give none: write a quantity as "
            "a distribution, e.g. bandwidth_efficiency: {low: 0.6, mode: 0.8, high: 0.9}"
        )
    count = len(codes_of(catalog))  # kept for the streamed sweep: listed once
    if not count:
        raise NothingToPlan(
            "the catalogs select no candidate: "
            + ("; ".join(skipped_pairs(catalog)) or "check scenarios.yaml")
        )
    runner = as_executor(processes)
    scratch = scratch_folder(destination) if count > stream_above else None
    try:
        return _run(catalog, destination, runner, scratch, name=name, force=force,
                    number=number, earlier=earlier, progress=progress, draws=draws,
                    full_csv=full_csv)  # fmt: skip
    finally:
        if scratch is not None:
            remove_scratch(scratch)


def _run(
    catalog: Catalog,
    destination: Path,
    runner: Executor,
    scratch: Path | None,
    *,
    name: str | None,
    force: bool,
    number: bool,
    earlier: RunSnapshot | None,
    progress: Progress | None,
    draws: int,
    full_csv: bool,
) -> RunOutcome:
    """:func:`run` once its checks are done: ``scratch`` (a streamed sweep's folder, removed by
    the caller whatever happens) is None for a sweep held whole."""
    extra: dict[str, Writer] = {}
    if scratch is not None:
        parquet, csv = scratch / PARQUET, scratch / RESULTS_CSV
        streamed = stream(catalog, parquet, runner, csv=csv if full_csv else None,
                          progress=progress, join_csv=False)  # fmt: skip
        results = plan(catalog, processes=runner, progress=progress, rows=streamed.leaders)
        settle(parquet, results, runner, csv=csv if full_csv else None)  # one answer per row
        results.notes.append(streamed.note())
        extra[PARQUET] = lambda path: os.replace(parquet, path)
        if full_csv:
            extra[RESULTS_CSV] = lambda path: os.replace(csv, path)
    else:
        results = plan(catalog, processes=runner, progress=progress)
    derived = outlook(catalog, results.table)  # what every writer shows, computed once
    if draws:
        bands = monte_carlo(catalog, draws, runner, progress)
        groups = [(line.workload, line.model) for line in derived.plan.lines]
        simulated = simulate_p90(catalog, bands, groups, simulate_rows, runner)
        bands = replace(bands, simulated=simulated)
        options = bands.options
        extra[UNCERTAINTY_CSV] = lambda path: write_csv(options, path)
        derived = replace(derived, bands=bands)
    comparison = None
    if earlier is not None:
        comparison = compare(earlier, snapshot(catalog, results.table, str(destination)))
        extra[DIFF_CSV] = comparison.write_csv
    folder = write_run(
        catalog,
        results,
        destination,
        name=name,
        force=force,
        number=number,
        extra_writers=extra,
        baseline=comparison,
        progress=progress,
        derived=derived,
    )
    return RunOutcome(folder, results, comparison, derived)
