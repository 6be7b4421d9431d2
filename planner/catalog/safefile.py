"""Reading an input file safely: a regular file of bounded size, read in bounded memory.

Catalogs, data files, measurements and run folders come from users. A catalog file that is a
FIFO would block a read forever, one that is a symlink to ``/dev/zero`` would fill memory, and a
directory or device is never an input. Every input file is therefore checked after following
symlinks: it must be a regular file no larger than :func:`max_bytes`, and at most that many
bytes are ever read. The limit is generous (64 MiB; a 10,000-entry catalog is about 1 MiB) and
the environment variable ``PLANNER_MAX_FILE_MIB`` raises it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: Environment variable that sets the largest input file read [MiB].
MAX_FILE_ENV = "PLANNER_MAX_FILE_MIB"

#: Largest input file read when the environment does not say [MiB].
DEFAULT_MAX_FILE_MIB = 64

MIB = 1024 * 1024

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class FileProblem(ValueError):
    """An input file that cannot be read safely; the message says why and what to do."""


def max_bytes() -> int:
    """The largest input file read [B]: ``PLANNER_MAX_FILE_MIB`` MiB, else 64 MiB."""
    text = os.environ.get(MAX_FILE_ENV, "").strip()
    if text.isdigit() and 0 < int(text) <= 1024 * 1024:
        return int(text) * MIB
    return DEFAULT_MAX_FILE_MIB * MIB


def _too_large(limit: int) -> FileProblem:
    return FileProblem(
        f"is larger than the {limit // MIB:,} MiB limit on an input file; set the environment "
        f"variable {MAX_FILE_ENV} to a larger number of MiB to read it"
    )


def read_regular(path: Path) -> bytes:
    """The bytes of ``path``, which must be (or link to) a regular file of at most
    :func:`max_bytes`; raises :class:`FileProblem` otherwise, before reading anything."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise FileProblem("does not exist") from None
    except OSError as exc:
        raise FileProblem(f"cannot be read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
        raise FileProblem(f"is {kind}, not a regular file; planner reads only regular files")
    limit = max_bytes()
    if info.st_size > limit:
        raise _too_large(limit)
    try:
        # O_NONBLOCK: should the file be swapped for a FIFO after the check, opening it does
        # not wait for a writer.
        handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(handle, "rb") as stream:
            data = stream.read(limit + 1)
    except OSError as exc:
        raise FileProblem(f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise _too_large(limit)
    return data


def read_text(path: Path) -> str:
    """:func:`read_regular`, decoded as UTF-8 (a :class:`FileProblem` if it is not)."""
    try:
        return read_regular(path).decode("utf-8")
    except UnicodeDecodeError:
        raise FileProblem("is not UTF-8 text") from None
