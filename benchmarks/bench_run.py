"""Benchmark: a `planner run` beside aiconfigurator's default search (run by hand, not a test).

    python benchmarks/bench_run.py [--repeat 3] [--suite] [--stages]

Runs ``planner run`` on the shipped catalogs into a temporary folder ``--repeat`` times and
reports each run's wall time and CPU time (user + system, the worker processes of the
simulation included: the CPU time of every child process the run waited for, from
``getrusage(RUSAGE_CHILDREN)`` around it; the pool's workers are joined before the run ends,
so they count: the sum over every process of the run read from /proc agrees within a few
tenths of a second). When the ``aiconfigurator`` command is on PATH (it is
not a dependency of planner: install it in a venv of its own, ``pip install aiconfigurator``),
its default search (Qwen3-32B on 8 H200 SXM, agg against disagg) runs in the same session, as
often, and the ratios of the medians are printed: both measured under the same load. With
``--suite`` the test suite is timed too, the fast default set (``pytest``) and every test (the
README's command, ``pytest --all``). With ``--stages`` a run's stages are timed in this process
first (the simulation in process too): where its CPU goes, from the run's own progress reports.
Each figure held to a target is printed beside it, met or missed: a run's CPU at most 20 s, its
wall time at most half aiconfigurator's, the fast test set within 5 minutes.

The figures depend on what else the machine runs: read them beside the load average printed
first, and compare runs only within one session.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHIPPED = REPO / "catalogs"

#: aiconfigurator's default search: agg against disagg serving of one model on one system.
AICONFIGURATOR_DEFAULT = (
    "cli",
    "default",
    "--model-path",
    "Qwen/Qwen3-32B",
    "--total-gpus",
    "8",
    "--system",
    "h200_sxm",
)
#: The targets the run and the suite are held to: a run's CPU (its workers included) [s], its
#: wall time as a share of aiconfigurator's default search measured beside it, and the fast
#: test set's wall time on two cores [s].
TARGET_RUN_CPU_S, TARGET_WALL_SHARE, TARGET_FAST_SUITE_S = 20.0, 0.5, 300.0

#: The test suite's fast default set, and every test (the README's test command).
FAST_SUITE = ("-m", "pytest", "-q", "-p", "no:cacheprovider")
FULL_SUITE = (*FAST_SUITE, "--all")


@dataclass(frozen=True)
class Timing:
    """One command's wall time and CPU time (user + system, its children included), seconds."""

    wall_s: float
    cpu_s: float


def children_cpu_s() -> float:
    """CPU seconds (user + system) of every child process this process has waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_timed(command: Sequence[str], cwd: Path) -> tuple[Timing, subprocess.CompletedProcess[str]]:
    """Run ``command`` in ``cwd``: its timing and what it did."""
    cpu = children_cpu_s()
    start = time.perf_counter()
    done = subprocess.run(list(command), cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    return Timing(wall, children_cpu_s() - cpu), done


def timed(command: Sequence[str], cwd: Path) -> Timing:
    """Run ``command`` in ``cwd`` and time it; a failure stops the benchmark with its output."""
    timing, done = run_timed(command, cwd)
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-3000:]
        sys.exit(f"{' '.join(command)} exited {done.returncode}:\n{tail}")
    return timing


def planner_command() -> str:
    """The ``planner`` script beside this interpreter, else the one on PATH."""
    beside = Path(sys.executable).parent / "planner"
    found = str(beside) if beside.exists() else shutil.which("planner")
    if found is None:
        sys.exit("planner is not installed: pip install -e '.[test]'")
    return found


def planner_runs(repeat: int) -> list[Timing]:
    """``planner run`` on the shipped catalogs, each into a fresh temporary folder."""
    exe = planner_command()
    timings = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="bench-run-") as scratch:
            out = Path(scratch) / "run"
            command = [exe, "run", "--catalogs", str(SHIPPED), "--out", str(out)]
            timings.append(timed(command, Path(scratch)))
    return timings


def aiconfigurator_runs(exe: str, repeat: int) -> list[Timing]:
    """aiconfigurator's default search, each saving into a fresh temporary folder."""
    timings = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="bench-aic-") as scratch:
            command = [exe, *AICONFIGURATOR_DEFAULT, "--save-dir", scratch]
            timings.append(timed(command, Path(scratch)))
    return timings


#: The stages' names as printed: the evaluations between the simulation's rounds report no
#: stage of their own, so they count with it.
STAGE_NAMES = {"simulating": "simulating (+ evaluating, rounds)"}


def process_and_children_cpu_s() -> float:
    """CPU seconds of this process and of every child it has waited for (the report's)."""
    return time.process_time() + children_cpu_s()


class StageClock:
    """CPU seconds of this process by stage: each progress report closes the time since the
    one before, which is the stage then reported (its name without the steps). A child the
    stage waited for counts with it: the report, written in a forked child while the other
    files are, counts with "writing report.pdf", the stage that waits for it."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.stage = "start"
        self.mark = process_and_children_cpu_s()

    def enter(self, stage: str) -> None:
        now = process_and_children_cpu_s()
        self.seconds[self.stage] = self.seconds.get(self.stage, 0.0) + now - self.mark
        self.stage, self.mark = stage, now

    def progress(self, stage: str, done: int, total: int) -> None:
        self.enter(stage)


def stages() -> dict[str, float]:
    """CPU seconds of each stage of a run on the shipped catalogs, all in this process: the
    imports, loading the catalogs, evaluating (every round), simulating (every round), what the
    writers show (the outlook: ranking, sensitivity, schedules) and writing each file."""
    clock = StageClock()
    clock.enter("import planner")
    from planner.catalog import load_catalog
    from planner.outputs.outlook import outlook
    from planner.outputs.runs import write_run
    from planner.pipeline import plan

    clock.enter("load catalogs")
    catalog = load_catalog(SHIPPED)
    results = plan(catalog, processes=1, progress=clock.progress)
    clock.enter("outlook")
    derived = outlook(catalog, results.table)
    with tempfile.TemporaryDirectory(prefix="bench-stages-") as scratch:
        write_run(catalog, results, Path(scratch) / "run", derived=derived,
                  progress=clock.progress)  # fmt: skip
        clock.enter("end")
    return clock.seconds


def median(timings: Sequence[Timing]) -> Timing:
    return Timing(
        statistics.median(t.wall_s for t in timings), statistics.median(t.cpu_s for t in timings)
    )


def line(label: str, timings: Sequence[Timing]) -> str:
    """One row: the median wall and CPU seconds, and every measurement."""
    middle = median(timings)
    each = ", ".join(f"{t.wall_s:.1f}/{t.cpu_s:.1f}" for t in timings)
    return f"{label:<34} {middle.wall_s:>8.1f} {middle.cpu_s:>8.1f}   ({each})"


def verdict(what: str, measured: float, target: float) -> str:
    """One target beside the figure measured: ``target run CPU s ≤ 20.00: 24.01, missed``."""
    met = "met" if measured <= target else "missed"
    return f"target {what} ≤ {target:.2f}: {measured:.2f}, {met}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command (default 3)")
    parser.add_argument(
        "--suite", action="store_true", help="also time the fast test set and the whole suite"
    )
    parser.add_argument(
        "--stages", action="store_true", help="first time a run's stages in this process"
    )
    args = parser.parse_args()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{os.cpu_count()} cores, load average {load} (1, 5, 15 min)")
    if args.stages:
        seconds = stages()
        seconds.pop("start", None)
        print(f"{'stage (in process)':<34} {'CPU s':>8}")
        for stage, cpu in seconds.items():
            print(f"{STAGE_NAMES.get(stage, stage):<34} {cpu:>8.2f}")
        print(f"{'all':<34} {sum(seconds.values()):>8.2f}", flush=True)
    print(f"{'command':<34} {'wall s':>8} {'CPU s':>8}   (each run: wall/CPU)")
    ours = planner_runs(args.repeat)
    print(line("planner run (shipped catalogs)", ours), flush=True)
    aic = shutil.which("aiconfigurator")
    if aic is None:
        print("aiconfigurator is not on PATH: its default search is not measured")
    else:
        theirs = aiconfigurator_runs(aic, args.repeat)
        print(line("aiconfigurator cli default", theirs), flush=True)
        mine, other = median(ours), median(theirs)
        print(
            f"planner ÷ aiconfigurator: wall {mine.wall_s / other.wall_s:.2f}, "
            f"CPU {mine.cpu_s / other.cpu_s:.2f}"
        )
        print(verdict("wall ÷ aiconfigurator's", mine.wall_s / other.wall_s, TARGET_WALL_SHARE))
    print(verdict("run CPU s", median(ours).cpu_s, TARGET_RUN_CPU_S))
    if args.suite:
        for label, suite in (("pytest (fast set)", FAST_SUITE), ("pytest --all", FULL_SUITE)):
            timing, done = run_timed([sys.executable, *suite], REPO)
            outcome = (done.stdout.strip().splitlines() or [f"exit {done.returncode}"])[-1]
            print(f"{line(label, [timing])}  {outcome}", flush=True)
            if suite is FAST_SUITE:
                print(verdict("fast set wall s", timing.wall_s, TARGET_FAST_SUITE_S))


if __name__ == "__main__":
    main()
