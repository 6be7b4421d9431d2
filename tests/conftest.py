from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "catalogs" / "examples" / "seed"
SHIPPED = REPO / "catalogs"


@pytest.fixture
def seed_dir() -> Path:
    return SEED


@pytest.fixture
def seed_copy(tmp_path: Path) -> Path:
    """A writable copy of the seed catalog."""
    dest = tmp_path / "catalogs"
    shutil.copytree(SEED, dest)
    return dest


def pytest_collection_modifyitems(config, items):
    """Under CI a missing spreadsheet engine fails the run instead of skipping the workbook
    tests."""
    import os

    if os.environ.get("CI") and not (shutil.which("soffice") or shutil.which("libreoffice")):
        raise pytest.UsageError("CI=true but LibreOffice (soffice) is not installed")
    if os.environ.get("CI") and not shutil.which("ssconvert"):
        raise pytest.UsageError("CI=true but Gnumeric (ssconvert) is not installed")
