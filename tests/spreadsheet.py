"""Recalculate a workbook in a real spreadsheet engine, headless, and read back the values.

Two engines: LibreOffice Calc and Gnumeric. Finance uses Excel; a formula both engines compute
to the planner's value is one that does not lean on either engine's leniency.

LibreOffice does not recalculate an xlsx on load when cached values are present, unless its
profile says so: each call uses its own profile whose ``OOXMLRecalcMode`` is 0 (always
recalculate), so the values read back are computed by LibreOffice, never stale ones. One
``soffice`` start costs about two seconds here: :func:`recalculate_many` converts several files
in one start.

Gnumeric's ``ssconvert --recalc`` recalculates every cell before it writes the file back as
xlsx (one process per file; two run at a time).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openpyxl
import pytest

RECALC_ALWAYS = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry"
 xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load">
 <prop oor:name="OOXMLRecalcMode" oor:op="fuse"><value>0</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Load">
 <prop oor:name="ODFRecalcMode" oor:op="fuse"><value>0</value></prop></item>
</oor:items>
"""


ENGINES = ("libreoffice", "gnumeric")


def soffice() -> str | None:
    """Path of LibreOffice's ``soffice``, or None when it is not installed."""
    return shutil.which("soffice") or shutil.which("libreoffice")


def ssconvert() -> str | None:
    """Path of Gnumeric's ``ssconvert``, or None when it is not installed."""
    return shutil.which("ssconvert")


def installed(engine: str) -> bool:
    return (soffice() if engine == "libreoffice" else ssconvert()) is not None


def require(engine: str) -> None:
    """Skip the calling test where ``engine`` is not installed (never under CI, where
    tests/conftest.py refuses to start without both engines)."""
    if not installed(engine):
        pytest.skip(f"{engine} is not installed")


def recalculate_many(
    paths: Sequence[Path], out_dir: Path, convert_to: str = "xlsx", engine: str = "libreoffice"
) -> list[Path]:
    """Recalculate ``paths`` in ``engine`` and write them into ``out_dir`` as ``convert_to``.

    The files' names must differ: each result is ``out_dir / (stem + extension)``.
    """
    if engine == "gnumeric":
        return _gnumeric_many(paths, out_dir)
    exe = soffice()
    if exe is None:
        raise RuntimeError("LibreOffice (soffice) is not installed")
    stems = [p.stem for p in paths]
    if len(set(stems)) != len(stems):
        raise ValueError(f"file names must differ: {stems}")
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lo-profile-") as profile:
        user = Path(profile) / "user"
        user.mkdir(parents=True)
        (user / "registrymodifications.xcu").write_text(RECALC_ALWAYS)
        subprocess.run(
            [
                exe,
                f"-env:UserInstallation=file://{profile}",
                "--headless",
                "--norestore",
                "--convert-to",
                convert_to,
                "--outdir",
                str(out_dir),
                *(str(p) for p in paths),
            ],
            check=True,
            capture_output=True,
            timeout=600,
        )
    results = [out_dir / (stem + "." + convert_to.split(":")[0]) for stem in stems]
    missing = [str(r) for r in results if not r.exists()]
    if missing:  # soffice exits 0 even when it could not convert
        raise RuntimeError(f"LibreOffice did not write {', '.join(missing)}")
    return results


def _gnumeric_many(paths: Sequence[Path], out_dir: Path) -> list[Path]:
    exe = ssconvert()
    if exe is None:
        raise RuntimeError("Gnumeric (ssconvert) is not installed")
    out_dir.mkdir(parents=True, exist_ok=True)
    targets = [out_dir / (p.stem + ".xlsx") for p in paths]
    if len({t.name for t in targets}) != len(targets):
        raise ValueError(f"file names must differ: {[p.name for p in paths]}")

    def convert(pair: tuple[Path, Path]) -> None:
        source, target = pair
        subprocess.run(
            [exe, "--recalc", str(source), str(target)],
            check=True,
            capture_output=True,
            timeout=600,
        )
        if not target.exists():
            raise RuntimeError(f"Gnumeric did not write {target}")

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(convert, zip(paths, targets, strict=True)))
    return targets


def recalculate(path: Path, out_dir: Path, convert_to: str = "xlsx") -> Path:
    """Convert ``path`` with LibreOffice (recalculating every formula) into ``out_dir``."""
    return recalculate_many([path], out_dir, convert_to)[0]


def computed_values(path: Path, sheet: str) -> list[list[object]]:
    """All cell values of ``sheet`` as computed (cached) by LibreOffice."""
    wb = openpyxl.load_workbook(path, data_only=True, read_only=True)
    try:
        return [list(row) for row in wb[sheet].iter_rows(values_only=True)]
    finally:
        wb.close()
