"""One file of a run written in a forked child process while the run writes the others.

The report's PDF takes WeasyPrint several seconds of one core, while the results, the catalogs'
copy and the workbook take the run's own: on a machine with a second core the two go together.
The child is forked (nothing is pickled: it starts as a copy of the run, its results and outlook
included), so this is done only where ``fork`` is the platform's way (Linux); elsewhere the file
is written in process, as before.

What the caller sees does not change: the child sends back the exception its writer raised and
:meth:`Background.wait` raises it (an ``OSError`` stays an ``OSError``, so a full disk is still
the run's :class:`~planner.outputs.runs.RunNotWritten`); an exception that cannot travel is
raised by writing the file once more in process. A child killed by a signal is an error naming
it. The child leaves the run's staging folder to the run (it forgets the folders registered in
:mod:`planner.cleanup`), ends with the run if the run is killed, and is stopped with the run's
workers when the run is stopped (``multiprocessing`` knows it as an active child).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from planner import cleanup

Writer = Callable[[Path], Any]


def forking() -> bool:
    """Whether files may be written in a forked child here (Linux, where ``fork`` is safe)."""
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def _child(writer: Writer, path: Path, done: Connection, parent: int) -> None:
    cleanup.forget_registered()
    cleanup.die_with_parent(parent)
    try:
        writer(path)
    except BaseException as exc:  # every failure goes back to the run, which raises it
        text = traceback.format_exc()
        try:
            done.send(("raised", exc, text))
        except Exception:  # the exception cannot be pickled: the run writes the file itself
            done.send(("unpicklable", None, text))
        return
    done.send(("written", None, ""))


class Background:
    """``writer(path)`` in a forked child from :meth:`start` to :meth:`wait` (in process, at
    :meth:`wait`, where :func:`forking` is false)."""

    def __init__(self, writer: Writer, path: Path) -> None:
        self.writer = writer
        self.path = path
        self.process: multiprocessing.process.BaseProcess | None = None
        self.received: Connection | None = None

    def start(self) -> None:
        if not forking():
            return
        context = multiprocessing.get_context("fork")
        received, sent = context.Pipe(duplex=False)
        process = context.Process(
            target=_child, args=(self.writer, self.path, sent, os.getpid()), daemon=True
        )
        try:
            process.start()
        except OSError:  # no process to be had (a limit on processes): write it in process
            received.close()
            sent.close()
            return
        sent.close()  # the child holds the only sending end: its death is the pipe's end
        self.process, self.received = process, received

    def wait(self) -> None:
        """Return once the file is written; raise what writing it raised."""
        if self.process is None or self.received is None:
            self.writer(self.path)
            return
        try:
            outcome, exc, text = self.received.recv()
        except EOFError:
            outcome, exc, text = "died", None, ""
        finally:
            self.received.close()
            self.process.join()
        if outcome == "written":
            return
        if outcome == "raised" and isinstance(exc, BaseException):
            exc.add_note(f"raised while writing {self.path.name} in a child process:\n{text}")
            raise exc
        if outcome == "unpicklable":
            self.writer(self.path)  # raises here what it raised there
            return
        raise RuntimeError(
            f"the process writing {self.path.name} ended without finishing it "
            f"(exit code {self.process.exitcode})"
        )

    def stop(self) -> None:
        """End the child, if any, and wait for it (the run failed elsewhere)."""
        if self.process is not None and self.process.is_alive():
            self.process.terminate()
        if self.process is not None:
            self.process.join()
        if self.received is not None:
            self.received.close()
