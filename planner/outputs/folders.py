"""What planner may write, and where: a run folder recognised as planner's own (its manifest
lists everything it holds), and the single files commands write outside run folders (a new
file linked into place whole, or an existing catalog file appended to), refused before any work
where they would land inside a run folder, in a missing folder, or over what planner did not
write.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from planner.catalog.safefile import read_text

MANIFEST = "manifest.json"
CATALOG_COPY = "catalogs"
DIFF_CSV = "diff.csv"


class FileRefused(Exception):
    """A file a command was asked to write was refused or could not be written: it exists, lies
    inside a run folder, its folder is missing, or the file system refused it (full, read-only).
    Nothing was written and nothing was left behind."""


def check_writable(path: Path, *, replace: bool = False) -> None:
    """Refuse, before any work, a path a command may not write its file to: one inside a run
    folder (:func:`run_folder_of`), or one whose folder does not exist; a new file (the
    default) also where the path exists, even as a link, dangling or not; with ``replace`` (a
    catalog file a command appends to) where it is a link or anything but a regular file.

    Raises :class:`FileRefused`.
    """
    path = Path(path)
    if not replace and (path.exists() or path.is_symlink()):
        raise FileRefused(
            f"{path} already exists; planner writes only a new file and never over one it did "
            "not create: choose another path"
        )
    run = run_folder_of(path.parent)
    if run is not None:
        raise FileRefused(
            f"{path} is inside the run folder {run}, which holds only what planner wrote for "
            "that run: "
            + (
                "write to the catalog the run was made from"
                if replace
                else "choose a path outside it"
            )
        )
    if not path.parent.is_dir():
        raise FileRefused(
            f"{path.parent} is not an existing folder; create it first or choose another path "
            f"for {path.name}"
        )
    if replace and (path.is_symlink() or (path.exists() and not path.is_file())):
        raise FileRefused(
            f"{path} is not a regular file (a link, a folder, a FIFO or a device): planner "
            "writes only to a regular file"
        )


def write_new_file(path: Path, write: Callable[[Path], Any]) -> Path:
    """Write a new file at ``path`` through ``write`` (called with a temporary path beside it),
    then link it into place, so ``path`` appears whole or not at all and never replaces a file
    that appeared meanwhile; checked first by :func:`check_writable`.

    Raises :class:`FileRefused`: a full disk or a read-only folder leaves no partial file.
    """
    path = Path(path)
    check_writable(path)
    try:
        handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise FileRefused(f"{path} could not be written: {exc.strerror or exc}") from None
    os.close(handle)
    temporary = Path(name)
    try:
        write(temporary)
        try:
            os.link(temporary, path)  # never replaces: fails when path exists
        except FileExistsError:
            raise FileRefused(
                f"{path} was created by something else meanwhile; nothing was written"
            ) from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
                raise
            if path.exists() or path.is_symlink():  # a file system without hard links
                raise FileRefused(
                    f"{path} was created by something else meanwhile; nothing was written"
                ) from None
            os.rename(temporary, path)
    except OSError as exc:
        raise FileRefused(
            f"{path} could not be written: {exc.strerror or exc}; nothing was left behind"
        ) from None
    finally:
        temporary.unlink(missing_ok=True)
    return path


def is_run(folder: Path) -> bool:
    """Whether ``folder`` is a run folder planner wrote, with nothing else in it at any depth: a
    real folder (not a link) whose ``manifest.json`` names the planner version and lists every
    file and folder it holds (:func:`foreign_entries` finds none)."""
    return not foreign_entries(folder)


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """A folder's ``manifest.json`` as planner writes one (a JSON object naming the planner
    version), or None; only a regular file is read (a FIFO named manifest.json is not waited
    on)."""
    try:
        info = json.loads(read_text(folder / MANIFEST))
    except (OSError, ValueError):  # FileProblem is a ValueError
        return None
    if not isinstance(info, dict) or not isinstance(info.get("planner_version"), str):
        return None
    return info


def _walk(folder: Path) -> Iterator[tuple[str, Path]]:
    """Every entry below ``folder`` as (path relative to it with ``/``, path), links not
    followed: a link is listed, never entered."""
    for root, dirs, files in os.walk(folder):
        here = Path(root)
        for name in sorted(dirs + files):
            path = here / name
            yield path.relative_to(folder).as_posix(), path


def listed_contents(folder: Path) -> list[str]:
    """What a run folder being written holds (manifest aside), for its manifest: every file and
    folder at any depth, folders with a trailing ``/``."""
    return sorted(
        relative + ("/" if path.is_dir() and not path.is_symlink() else "")
        for relative, path in _walk(folder)
        if relative != MANIFEST
    )


def foreign_entries(folder: Path) -> list[str]:
    """Why ``folder`` is not (only) a run planner wrote: ``[]`` when it is one; else the paths
    it holds that planner did not write (at any depth), or a reason in words when it is no run
    at all (a link, not a folder, no manifest)."""
    if folder.is_symlink() or not folder.is_dir():
        return [f"{folder} is not a folder"]
    info = read_manifest(folder)
    if info is None:
        return [f"{folder} has no manifest.json written by planner"]
    listed = info.get("contents")
    if isinstance(listed, list):  # runs that list everything they hold, at any depth
        known = {str(entry) for entry in listed} | {MANIFEST}
        return [
            str(path)
            for relative, path in _walk(folder)
            if relative + ("/" if path.is_dir() and not path.is_symlink() else "") not in known
        ]
    return _unlisted(folder, info)


def _unlisted(folder: Path, info: dict[str, Any]) -> list[str]:
    """:func:`foreign_entries` of a run whose manifest lists its top-level names and its
    catalog files (as earlier runs wrote it), not everything it holds."""
    names = {str(f).rstrip("/") for f in info.get("files", []) if isinstance(f, str)}
    names |= {MANIFEST, DIFF_CSV}
    catalog_files = info.get("catalog_files")
    copied = {f"{CATALOG_COPY}/{name}" for name in catalog_files or {}}
    foreign = []
    for relative, path in _walk(folder):
        top, _, rest = relative.partition("/")
        if path.is_symlink() or top not in names:
            foreign.append(str(path))
        elif rest and not (top == CATALOG_COPY and relative in copied and path.is_file()):
            foreign.append(str(path))
    return foreign


def run_folder_of(path: Path) -> Path | None:
    """The run folder ``path`` is, or lies inside (a folder above it holding planner's
    ``manifest.json``), links resolved; None when there is none."""
    resolved = Path(os.path.abspath(path))
    try:
        resolved = resolved.resolve()
    except (OSError, RuntimeError):  # a loop of links: judged as written
        pass
    for folder in [resolved, *resolved.parents]:
        if folder.is_dir() and read_manifest(folder) is not None:
            return folder
    return None
