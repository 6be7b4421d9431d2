"""Where the package's own files are: report templates and the shipped catalogs.

In a wheel they are the sub-packages ``planner.templates`` and ``planner.catalogs``; in a source
checkout they are the top-level ``templates/`` and ``catalogs/`` folders beside ``planner/``.
"""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

_REPO = Path(__file__).resolve().parent.parent


def _package_dir(package: str, fallback: str) -> Path:
    # The data folders are namespace packages (no __init__.py): ask for their search locations.
    spec = find_spec(package)
    for location in (spec.submodule_search_locations or []) if spec else []:
        path = Path(location)
        if path.is_dir():
            return path
    return _REPO / fallback


def templates_dir() -> Path:
    """The folder of report templates and their stylesheet."""
    return _package_dir("planner.templates", "templates")


def shipped_catalogs() -> Path:
    """The catalogs shipped with planner (a real starter set)."""
    return _package_dir("planner.catalogs", "catalogs")


def default_catalogs(cwd: Path | None = None) -> Path:
    """``./catalogs`` when the working folder has one, else the shipped catalogs."""
    local = (cwd or Path.cwd()) / "catalogs"
    return local if (local / "hardware.yaml").exists() else shipped_catalogs()
