"""What a run must remove if it is stopped: its staging folders, registered while they exist,
and its worker processes.

A signal handler cannot rely on an exception unwinding the stack (one raised while Python runs a
weak-reference callback or a finaliser is printed and ignored, and the run would go on), so the
command's handler removes what is registered here itself and exits at once. This module imports
nothing heavy: the handler may run at any moment.
"""

from __future__ import annotations

import multiprocessing
import shutil
from pathlib import Path

_STAGING: set[Path] = set()


def register(path: Path) -> None:
    """Note a folder to remove should the process be stopped before it is published."""
    _STAGING.add(path)


def release(path: Path) -> None:
    """The folder was published or removed: nothing to clean up for it."""
    _STAGING.discard(path)


def remove_registered() -> None:
    """Remove every registered folder (what a stopped run leaves)."""
    for path in list(_STAGING):
        shutil.rmtree(path, ignore_errors=True)
        _STAGING.discard(path)


def stop_children() -> None:
    """Terminate this process's worker processes (the simulation's pool), which would otherwise
    outlive a stopped run."""
    for child in multiprocessing.active_children():
        child.terminate()
