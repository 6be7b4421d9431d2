"""How long the recommendation rule takes over a large plan, and what reads it.

The synthetic catalog of ``bench_workbook.py`` (20,000 candidates in 250 workload × model groups
by default) is evaluated once; then each consumer of the one ranking is timed: the ranking itself
(:func:`planner.plan.recommend.rank`), the ranked table with verdicts, the per-group
recommendations, the workbook Summary's groups and the choice of what to simulate. As a yardstick
measured in the same run on the same machine, a pandas stable sort of the table by the ranking
keys. Not a test: run it by hand::

    python benchmarks/bench_rank.py [--hardware 20 --models 25 --precisions 4 --workloads 10]
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bench_workbook import catalog_arguments, catalog_of

from planner.outputs.workbook import recommendation_groups
from planner.plan import recommend
from planner.plan.selection import select_candidates
from planner.plan.sweep import evaluate


def best_of(func: Callable[[], Any], repeat: int = 5) -> float:
    """The fastest of ``repeat`` runs, in seconds (the least disturbed by a shared machine)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    table = evaluate(catalog_of(catalog_arguments(__doc__).parse_args())).table
    print(f"plan: {len(table):,} candidates, {table.groupby(recommend.GROUP).ngroups} groups")
    yardstick = best_of(
        lambda: table.sort_values([*recommend.GROUP, *recommend.ORDER], kind="stable")
    )
    print(f"{'pandas sort of the table (yardstick)':<40} {yardstick:8.4f} s")
    for label, func in (
        ("recommend.rank", lambda: recommend.rank(table)),
        ("recommend.ranked (with verdicts)", lambda: recommend.ranked(table)),
        ("recommend.recommendations", lambda: recommend.recommendations(table)),
        ("workbook.recommendation_groups", lambda: recommendation_groups(table)),
        ("sizing.select_candidates", lambda: select_candidates(table)),
    ):
        seconds = best_of(func)
        print(f"{label:<40} {seconds:8.4f} s  ({seconds / yardstick:5.1f} × the yardstick)")


if __name__ == "__main__":
    main()
