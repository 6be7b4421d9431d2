"""A sweep too large to hold in memory: the candidates evaluated a block at a time, every row
written to ``results.parquet`` (and ``results.csv`` when asked) as its block is done, and only
the leading options of each workload × model kept.

Blocks are units of work for an executor (:mod:`planner.executor`): each evaluates its rows of
the plan in closed form (:func:`planner.plan.sweep.evaluate_plan`, tensor-parallel sizes pruned
as in a whole run), writes them as one part of the Parquet dataset (and of the CSV), and returns
its eligible rows' ranking figures; this process ranks them with the leaders kept so far
(:func:`planner.plan.recommend.rank`, the plan's own rule), keeping the first ``keep`` of each
group. Memory is bounded by a few blocks in flight,
whatever the number of candidates. The leaders are then planned as a small run is
(:func:`planner.pipeline.plan` over their rows: simulation, workbook, report).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from planner.catalog import Catalog
from planner.executor import Executor, InProcess
from planner.outputs.runs import csv_text
from planner.plan.columns import ALL_KEYS, TP_KEY
from planner.plan.recommend import GROUP, ORDER, rank
from planner.plan.sweep import CHUNK_ROWS, Candidates, candidate_codes, evaluate_plan, row_bounds
from planner.progress import Progress

#: Candidates a unit of work evaluates (a multiple of the sweep's chunk).
BLOCK_ROWS = 4 * CHUNK_ROWS

#: Options kept per workload × model for the workbook, the report and the simulation.
KEEP = 10

#: Above this many candidates a run streams its results instead of holding them.
STREAM_ABOVE = 200_000

PARQUET = "results.parquet"


class ParquetUnavailable(RuntimeError):
    """Writing results.parquet needs pyarrow (``pip install 'planner[large]'``)."""


@dataclass(frozen=True)
class Streamed:
    """What a streamed sweep leaves: its counts and the leading options' keys, in plan order."""

    candidates: int
    rows: int
    eligible: int
    leaders: pd.DataFrame

    def note(self, keep: int = KEEP) -> str:
        """What the workbook and the report hold of the sweep, in a sentence."""
        return (
            f"{self.candidates:,} candidates were evaluated ({self.rows:,} after tensor-parallel "
            f"sizes past the first that serves were dropped; {self.eligible:,} eligible); the "
            f"workbook and the report hold the leading {keep} options of each workload × model "
            f"({len(self.leaders):,} rows); every row is in {PARQUET}"
        )


_CODES: tuple[int, Candidates] | None = None


def codes_of(catalog: Catalog) -> Candidates:
    """The catalog's candidates as codes, computed once per process for the catalog last asked
    about (the run counts them, each unit reads its slice and turns only that into ids)."""
    global _CODES
    if _CODES is None or _CODES[0] != id(catalog):
        _CODES = (id(catalog), candidate_codes(catalog))
    return _CODES[1]


def _block(shared: tuple[Catalog, Path, bool], bounds: tuple[int, int]) -> tuple[int, pd.DataFrame]:
    """A unit of work: the rows ``start`` to ``stop`` − 1 of the plan, evaluated and written
    as one part of the Parquet dataset (and of the CSV, without its header); returns how many
    rows were written and the eligible ones' ranking columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    catalog, folder, with_csv = shared
    start, stop = bounds
    rows = codes_of(catalog).table(start, stop)
    table = evaluate_plan(catalog, rows, prune_parallelism=True).table
    part = folder / f"part-{start:012d}"
    arrow = pa.Table.from_pandas(_arrow_frame(table), preserve_index=False)
    pq.write_table(arrow, part.with_suffix(".parquet"))
    if with_csv:
        part.with_suffix(".csv").write_text(csv_text(table, header=False), encoding="utf-8")
    return len(table), table[table["eligible"].astype(bool)][RANKED]


def blocks(codes: Candidates, rows: int = BLOCK_ROWS) -> list[tuple[int, int]]:
    """The plan's units of work: row ranges of about ``rows`` that never split one
    combination's tensor-parallel sizes (:func:`planner.plan.sweep.row_bounds` on the codes)."""
    return row_bounds(list(codes.codes[:, :4].T), len(codes), rows)


def _arrow_frame(table: pd.DataFrame) -> pd.DataFrame:
    """The table with one type per column whatever the block: text as text (a categorical's
    categories differ from block to block), flags as flags, numbers as floats, the
    tensor-parallel size as an integer."""
    out: dict[str, pd.Series] = {}
    for name, column in table.items():
        name = str(name)
        if name == TP_KEY:
            out[name] = column.astype(np.int64)
        elif pd.api.types.is_bool_dtype(column):
            out[name] = column.astype(bool)
        elif pd.api.types.is_numeric_dtype(column):
            out[name] = column.astype(np.float64)
        else:
            out[name] = column.astype(object).where(column.notna(), None).astype("string")
    return pd.DataFrame(out)


def _leading(frame: pd.DataFrame, keep: int) -> pd.DataFrame:
    """The first ``keep`` eligible options of each group by the plan's ranking rule."""
    if frame.empty:
        return frame
    frame = frame.reset_index(drop=True)
    ranks = rank(frame)["rank"].to_numpy()
    return frame[(ranks >= 1) & (ranks <= keep)]


RANKED = [*dict.fromkeys([*ALL_KEYS, *GROUP, *ORDER, "eligible"])]


def stream(
    catalog: Catalog,
    parquet: Path,
    executor: Executor | None = None,
    keep: int = KEEP,
    csv: Path | None = None,
    progress: Progress | None = None,
    block_rows: int = BLOCK_ROWS,
) -> Streamed:
    """Evaluate every candidate of ``catalog`` a block at a time into the Parquet dataset
    ``parquet`` (a folder of one part per block, in plan order) and ``csv``, keeping the
    leading ``keep`` options of each workload × model. Each worker writes its own parts, so
    the workers share the writing too."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:  # pragma: no cover - the test extra installs it
        raise ParquetUnavailable(
            "a sweep this large writes results.parquet, which needs pyarrow: "
            "pip install 'planner[large]'"
        ) from None
    plan = codes_of(catalog)
    units = blocks(plan, block_rows)
    parquet.mkdir()
    tell = progress or (lambda stage, done, total: None)
    tell("evaluating", 0, len(plan))
    leaders = pd.DataFrame(columns=RANKED)
    rows = eligible = 0
    work = (executor or InProcess()).map(_block, (catalog, parquet, csv is not None), units)
    for (_, stop), (written, chosen) in zip(units, work, strict=True):
        rows += written
        eligible += len(chosen)
        leaders = _leading(pd.concat([leaders, chosen], ignore_index=True), keep)
        tell("evaluating", stop, len(plan))
    if csv is not None:
        _join_csv(parquet, csv)
    return Streamed(len(plan), rows, eligible, _in_plan_order(plan, leaders))


def _join_csv(folder: Path, csv: Path) -> None:
    """The CSV parts the workers wrote, in plan order under one header, as ``csv``."""
    import pyarrow.parquet as pq

    first = min(folder.glob("part-*.parquet"))
    header = csv_text(pd.DataFrame(columns=pq.read_schema(first).names))
    with csv.open("w", encoding="utf-8", newline="") as out:
        out.write(header)
        for part in sorted(folder.glob("part-*.csv")):
            with part.open(encoding="utf-8", newline="") as piece:
                shutil.copyfileobj(piece, out)
            part.unlink()


def _in_plan_order(plan: Candidates, leaders: pd.DataFrame) -> pd.DataFrame:
    """The leaders' keys as rows of the plan, in its order: matched on the candidates' codes
    (one integer a row), so a plan of millions of rows is never turned into text."""
    if leaders.empty:
        return plan.table(0, 0)
    every = np.zeros(len(plan), dtype=np.int64)
    wanted = np.zeros(len(leaders), dtype=np.int64)
    for column, key in enumerate(("workload", "model", "precision", "hardware")):
        values = pd.Index(plan.ids[key])
        every = every * len(values) + plan.codes[:, column]
        wanted = wanted * len(values) + values.get_indexer(pd.Index(leaders[key].astype(str)))
    sizes = pd.Index(plan.sizes)
    every = every * len(sizes) + plan.codes[:, 4]
    wanted = wanted * len(sizes) + sizes.get_indexer(pd.Index(leaders[TP_KEY].astype(np.int64)))
    chosen = np.flatnonzero(np.isin(every, wanted))
    return Candidates(plan.codes[chosen], plan.ids, plan.sizes).table()
