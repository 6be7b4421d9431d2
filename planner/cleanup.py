"""What a run must remove if it is stopped: its staging folders, registered while they exist,
and its worker processes.

A signal handler cannot rely on an exception unwinding the stack (one raised while Python runs a
weak-reference callback or a finaliser is printed and ignored, and the run would go on), so the
command's handler removes what is registered here itself and exits at once. This module imports
nothing heavy: the handler may run at any moment.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
import multiprocessing
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

_STAGING: set[Path] = set()


def register(path: Path) -> None:
    """Note a folder to remove should the process be stopped before it is published."""
    _STAGING.add(path)


def release(path: Path) -> None:
    """The folder was published or removed: nothing to clean up for it."""
    _STAGING.discard(path)


def forget_registered() -> None:
    """Drop every registered folder without removing it: a forked worker process inherits the
    run's list, but the folders are the run's to remove."""
    _STAGING.clear()


def remove_registered() -> None:
    """Remove every registered folder (what a stopped run leaves)."""
    for path in list(_STAGING):
        shutil.rmtree(path, ignore_errors=True)
        _STAGING.discard(path)


#: How long a stopped run waits for its children to end before killing them [s].
CHILDREN_GRACE_S = 5.0


def stop_children(grace_s: float = CHILDREN_GRACE_S) -> None:
    """Terminate this process's child processes (the simulation's pool, the report's writer),
    which would otherwise outlive a stopped run, and wait for them to end (killing any still
    alive after ``grace_s``): a child still writing into the staging folder while the run
    removes it could leave a file, and with it the folder, behind."""
    children = multiprocessing.active_children()
    for child in children:
        child.terminate()
    deadline = time.monotonic() + grace_s
    for child in children:
        child.join(max(0.0, deadline - time.monotonic()))
        if child.is_alive():
            child.kill()
            child.join(1.0)


#: ``prctl`` option that has the kernel signal a process when its parent dies (Linux).
PR_SET_PDEATHSIG = 1


def _kernel_death_signal() -> None:
    """Ask Linux to send SIGKILL to this process when its parent dies; elsewhere nothing."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _watch_parent(parent: int, every_s: float) -> None:
    while os.getppid() == parent:
        time.sleep(every_s)
    os._exit(1)


def die_with_parent(parent: int, every_s: float = 0.5) -> None:
    """Make a worker process end when ``parent`` (the run) ends, even when the run is killed
    with SIGKILL and cleans up nothing: the kernel's parent-death signal where there is one, and
    a thread that notices the worker was orphaned (its parent id changed) everywhere."""
    _kernel_death_signal()
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent, every_s), daemon=True).start()


@contextlib.contextmanager
def frozen_for_fork() -> Iterator[None]:
    """Processes forked in this block start with the run's objects frozen (:func:`gc.freeze`):
    their collector never scans them, so it never writes to (and copies) the pages they share
    with the run, and scans less. The run's own collector is as before once the block ends. A
    caller's own freeze is left as it is (``gc.unfreeze`` would undo it)."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
