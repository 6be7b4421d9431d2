"""The package finds its templates and shipped catalogs when installed from a wheel."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        pytest.fail(proc.stderr)
    return next(out.glob("planner-*.whl"))


def test_wheel_contains_templates_and_catalogs(wheel: Path):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "planner/templates/report.html.j2" in names
    assert "planner/templates/report.css" in names
    assert "planner/catalogs/hardware.yaml" in names
    assert "planner/catalogs/examples/seed/models.yaml" in names


def test_installed_wheel_runs_from_elsewhere(wheel: Path, tmp_path: Path):
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    env = {**os.environ, "PYTHONPATH": str(target)}
    work = tmp_path / "elsewhere"
    work.mkdir()
    root = target / "planner"
    code = (
        "import pathlib, planner, planner.resources as r\n"
        f"root = pathlib.Path({str(root)!r})\n"
        "assert r.templates_dir() == root / 'templates', r.templates_dir()\n"
        "assert r.shipped_catalogs() == root / 'catalogs', r.shipped_catalogs()\n"
        "assert pathlib.Path(planner.__file__).parent == root\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    run = subprocess.run(
        [sys.executable, "-m", "planner.cli", "check"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "10 hardware, 12 models" in run.stdout
    assert (root / "catalog" / "engines.yaml").is_file()  # the engines' sourced constants
