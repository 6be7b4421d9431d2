"""Recalculate a workbook in LibreOffice Calc, headless, and read back the computed values.

LibreOffice does not recalculate an xlsx on load when cached values are present, unless its
profile says so: each call uses its own profile whose ``OOXMLRecalcMode`` is 0 (always
recalculate), so the values read back are computed by LibreOffice, never stale ones.

One ``soffice`` start costs about two seconds here: :func:`recalculate_many` converts several
files in one start.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import openpyxl

RECALC_ALWAYS = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry"
 xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load">
 <prop oor:name="OOXMLRecalcMode" oor:op="fuse"><value>0</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Load">
 <prop oor:name="ODFRecalcMode" oor:op="fuse"><value>0</value></prop></item>
</oor:items>
"""


def soffice() -> str | None:
    """Path of LibreOffice's ``soffice``, or None when it is not installed."""
    return shutil.which("soffice") or shutil.which("libreoffice")


def recalculate_many(paths: Sequence[Path], out_dir: Path, convert_to: str = "xlsx") -> list[Path]:
    """Convert ``paths`` with one LibreOffice start (recalculating every formula) into ``out_dir``.

    The files' names must differ: each result is ``out_dir / (stem + extension)``.
    """
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
