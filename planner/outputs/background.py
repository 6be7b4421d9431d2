"""Work of a run done in a forked child process while the run does other work.

The report's PDF takes WeasyPrint several seconds of one core, while the results, the catalogs'
copy and the workbook take the run's own; the outlook's sensitivity passes take a second or two
while its fleet is optimised: on a machine with a second core the two go together. The child is
forked (nothing is pickled on the way in: it starts as a copy of the run, its results and
outlook included), so this is done only where ``fork`` is the platform's way (Linux); elsewhere
the work is done in process, as before.

What the caller sees does not change: :meth:`Forked.result` gives what the work returned (sent
back pickled), or raises the exception it raised (an ``OSError`` stays an ``OSError``, so a
full disk is still the run's :class:`~planner.outputs.runs.RunNotWritten`); a value or an
exception that cannot travel is had by doing the work once more in process. A child killed by a
signal is an error naming the work. The child leaves the run's staging folder to the run (it
forgets the folders registered in :mod:`planner.cleanup`), ends with the run if the run is
killed, and is stopped with the run's workers when the run is stopped (``multiprocessing`` knows
it as an active child).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import sys
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Generic, TypeVar

from planner import cleanup

Writer = Callable[[Path], Any]
T = TypeVar("T")

#: Allocations between two collections of the youngest generation in a child (Python's default
#: is 700). The report's layout allocates hundreds of thousands of small objects that live until
#: its pages are drawn, so most collections find nothing to free: at 20,000, with the run's
#: objects frozen at the fork, the report's child takes about a sixth less CPU on the shipped
#: catalogs (0.84×, benchmarks/bench_child_gc.py), for a few MB more at most.
CHILD_GC_ALLOCATIONS = 20_000


def forking() -> bool:
    """Whether work may be done in a forked child here (Linux, where ``fork`` is safe)."""
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def _child(work: Callable[[], Any], done: Connection, parent: int) -> None:
    gc.set_threshold(CHILD_GC_ALLOCATIONS, *gc.get_threshold()[1:])
    cleanup.forget_registered()
    cleanup.die_with_parent(parent)
    try:
        value = work()
    except BaseException as exc:  # every failure goes back to the run, which raises it
        text = traceback.format_exc()
        try:
            done.send(("raised", exc, text))
        except Exception:  # the exception cannot be pickled: the run does the work itself
            done.send(("unpicklable", None, text))
        return
    try:
        done.send(("done", value, ""))
    except Exception:  # the value cannot be pickled: the run does the work itself
        done.send(("unpicklable", None, ""))


class Forked(Generic[T]):
    """``work()`` in a forked child from :meth:`start` to :meth:`result` (in process, at
    :meth:`result`, where :func:`forking` is false); ``what`` names it in errors."""

    def __init__(self, work: Callable[[], T], what: str) -> None:
        self.work = work
        self.what = what
        self.process: multiprocessing.process.BaseProcess | None = None
        self.received: Connection | None = None

    def start(self) -> Forked[T]:
        if not forking():
            return self
        context = multiprocessing.get_context("fork")
        received, sent = context.Pipe(duplex=False)
        process = context.Process(target=_child, args=(self.work, sent, os.getpid()), daemon=True)
        try:
            with cleanup.frozen_for_fork():
                process.start()
        except OSError:  # no process to be had (a limit on processes): work in process
            received.close()
            sent.close()
            return self
        sent.close()  # the child holds the only sending end: its death is the pipe's end
        self.process, self.received = process, received
        return self

    def result(self) -> T:
        """What the work returned, once it is done; raise what it raised."""
        if self.process is None or self.received is None:
            return self.work()
        try:
            outcome, value, text = self.received.recv()
        except EOFError:
            outcome, value, text = "died", None, ""
        finally:
            self.received.close()
            self.process.join()
        if outcome == "done":
            return value
        if outcome == "raised" and isinstance(value, BaseException):
            value.add_note(f"raised while {self.what} in a child process:\n{text}")
            raise value
        if outcome == "unpicklable":
            return self.work()  # gives here what it gave there, or raises it
        raise RuntimeError(
            f"the process {self.what} ended without finishing (exit code {self.process.exitcode})"
        )

    def stop(self) -> None:
        """End the child, if any, and wait for it (the run failed elsewhere)."""
        if self.process is not None and self.process.is_alive():
            self.process.terminate()
        if self.process is not None:
            self.process.join()
        if self.received is not None:
            self.received.close()


class Background(Forked[None]):
    """``writer(path)`` in a forked child from :meth:`start` to :meth:`wait`."""

    def __init__(self, writer: Writer, path: Path) -> None:
        super().__init__(lambda: _written(writer, path), f"writing {path.name}")
        self.writer = writer
        self.path = path

    def wait(self) -> None:
        """Return once the file is written; raise what writing it raised."""
        self.result()


def _written(writer: Writer, path: Path) -> None:
    """Write the file; its writer's return value stays in the child."""
    writer(path)
