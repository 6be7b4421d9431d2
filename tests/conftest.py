from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "catalogs" / "examples" / "seed"
SHIPPED = REPO / "catalogs"

#: Round-number assumptions for hand-worked costs: 0.10 USD/kWh, PUE 1.5, full power, 36 months
#: of 730 hours, no node overhead or hosting (the report's and the advice's test catalogs).
ROUND_ASSUMPTIONS = """
    assumptions:
      runtime_overhead: 2 GiB
      reserve: 2 GiB
      kv_block_tokens: 1
      tensor_parallel_sizes: [1]
      electricity_usd_per_kwh: 0.10
      pue: 1.5
      utilisation: 1.0
      amortisation_months: 36
      devices_per_node: 8
      node_overhead_usd: 0
      hosting_usd_per_node_month: 0
      hours_per_month: 730
"""


@pytest.fixture
def seed_dir() -> Path:
    return SEED


@pytest.fixture
def seed_copy(tmp_path: Path) -> Path:
    """A writable copy of the seed catalog."""
    dest = tmp_path / "catalogs"
    shutil.copytree(SEED, dest)
    return dest


@pytest.fixture(scope="session")
def seed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run folder of the seed catalog, written once; tests copy it before changing it."""
    from click.testing import CliRunner

    from planner.cli import main

    folder = tmp_path_factory.mktemp("seed-run") / "run"
    result = CliRunner().invoke(main, ["run", "--catalogs", str(SEED), "--out", str(folder)])
    assert result.exit_code == 0, result.output
    return folder


def pytest_collection_modifyitems(config, items):
    """Under CI a missing spreadsheet engine fails the run instead of skipping the workbook
    tests."""
    import os

    if os.environ.get("CI") and not (shutil.which("soffice") or shutil.which("libreoffice")):
        raise pytest.UsageError("CI=true but LibreOffice (soffice) is not installed")
    if os.environ.get("CI") and not shutil.which("ssconvert"):
        raise pytest.UsageError("CI=true but Gnumeric (ssconvert) is not installed")
