"""The library stays lint-clean (ruff) and type-checked (mypy), as CI runs the tests."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _run(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (pip install '.[test]')")
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=REPO, capture_output=True, text=True
    )


def test_ruff_finds_nothing():
    result = _run("ruff", "check", "planner", "tests", "benchmarks")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_finds_nothing():
    result = _run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr
