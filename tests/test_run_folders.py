"""What a run leaves on disk, used carelessly: ``--force`` never replaces what planner did not
write, runs started together both land or one is refused, workers die with a killed run, a kill
between the renames of ``--force`` loses nothing, every CSV planner writes is inert in a
spreadsheet, ids read back as text, altered runs are named, and an unwritable destination is
refused before any work.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from planner import pipeline
from planner.catalog import load_catalog
from planner.cli import main
from planner.diff import compare, load_run, snapshot
from planner.outputs.folders import is_run
from planner.outputs.runs import csv_text, recover_stale, write_run
from planner.plan.sweep import evaluate

SEED = Path(__file__).resolve().parent.parent / "catalogs" / "examples" / "seed"
SHIPPED = SEED.parent.parent
PLANNER = str(Path(sys.executable).with_name("planner"))


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


# --force ------------------------------------------------------------------------------------


def test_force_never_replaces_a_folder_planner_did_not_write(tmp_path: Path) -> None:
    """Pointed by mistake at the catalog folder, ``--force`` refuses and every file stays."""
    catalogs = tmp_path / "catalogs"
    shutil.copytree(SEED, catalogs)
    (catalogs / "notes.txt").write_text("my notes")
    before = _tree(catalogs)
    result = CliRunner().invoke(
        main, ["run", "--catalogs", str(catalogs), "--out", str(catalogs), "--force"]
    )
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert "is the catalog folder" in result.output and "nothing was changed" in result.output
    assert _tree(catalogs) == before
    assert [p.name for p in tmp_path.iterdir()] == ["catalogs"]  # no staging folder either


def test_force_refuses_a_run_holding_a_file_planner_did_not_write(
    seed_run: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    shutil.copytree(seed_run, run)
    assert is_run(run)
    (run / "notes.txt").write_text("kept beside the report")
    assert not is_run(run)
    result = CliRunner().invoke(
        main, ["run", "--catalogs", str(SEED), "--out", str(run), "--force"]
    )
    assert result.exit_code == 1, result.output
    assert (run / "notes.txt").read_text() == "kept beside the report"


@pytest.mark.parametrize(
    ("damage", "recognised"),
    [
        (lambda run: None, True),
        (lambda run: (run / "manifest.json").unlink(), False),
        (lambda run: (run / "manifest.json").write_text("[]"), False),
        (lambda run: (run / "manifest.json").write_text('{"files": []}'), False),
        (lambda run: (run / "diff.csv").write_text("kind\n"), False),  # not listed: not ours
        (lambda run: (run / "catalogs" / "notes.txt").write_text("mine"), False),  # any depth
        (lambda run: (run / "catalogs" / "mine").mkdir(), False),  # an empty folder too
        (lambda run: _fifo(run / "manifest.json"), False),  # never read, never waited on
    ],
)
def test_what_counts_as_a_planner_run(seed_run: Path, tmp_path: Path, damage, recognised) -> None:
    run = tmp_path / "run"
    shutil.copytree(seed_run, run)
    damage(run)
    assert is_run(run) is recognised
    link = tmp_path / "link"
    link.symlink_to(run)
    assert not is_run(link)  # a link is never replaced: its target is someone's folder


def test_a_kill_between_the_renames_of_force_loses_neither_run(
    seed_run: Path, tmp_path: Path
) -> None:
    """A forced run is killed (SIGKILL) right after it moved the old run aside and before it
    renamed the new one in; the next run into the same folder puts the old run back."""
    reports = tmp_path / "reports"
    reports.mkdir()
    shutil.copytree(seed_run, reports / "run")
    before = _tree(reports / "run")
    script = textwrap.dedent(
        f"""
        import os, signal
        from pathlib import Path
        from planner.catalog import load_catalog
        from planner.outputs import runs
        from planner.plan.sweep import evaluate

        real = os.rename
        def rename(src, dst):
            real(src, dst)
            if str(dst).endswith("-" + runs.REPLACED):
                os.kill(os.getpid(), signal.SIGKILL)
        runs.os.rename = rename
        catalog = load_catalog({str(SEED)!r})
        runs.write_run(catalog, evaluate(catalog), Path({str(reports / "run")!r}), force=True)
        """
    )
    killed = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert not (reports / "run").exists()  # the moment the kill left behind
    assert len([p for p in reports.iterdir() if ".staging-" in p.name]) == 2  # new and old
    recover_stale(reports)
    assert sorted(p.name for p in reports.iterdir()) == ["run"]
    assert _tree(reports / "run") == before


# Runs started together ----------------------------------------------------------------------


def _start(args: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [PLANNER, "run", "--catalogs", str(SEED), *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def test_two_runs_with_one_name_started_together_both_land_and_say_where(tmp_path: Path) -> None:
    runs = [_start(["--name", "same"], tmp_path) for _ in range(2)]
    outputs = [r.communicate(timeout=300)[0].decode() for r in runs]
    assert [r.returncode for r in runs] == [0, 0], outputs
    folders = sorted(p.name for p in (tmp_path / "reports").iterdir())
    assert len(folders) == 2 and folders[1] == folders[0] + "-2", folders
    said = [line for o in outputs for line in o.splitlines() if "Run written to" in line]
    assert sorted(s.rstrip("/").rsplit("/", 1)[1] for s in said) == folders
    for folder in folders:
        assert is_run(tmp_path / "reports" / folder)


def test_two_runs_into_one_out_started_together_exactly_one_wins(tmp_path: Path) -> None:
    out = tmp_path / "run"
    runs = [_start(["--out", str(out)], tmp_path) for _ in range(2)]
    outputs = [r.communicate(timeout=300)[0].decode() for r in runs]
    codes = sorted(r.returncode for r in runs)
    assert codes == [0, 1], outputs
    loser = outputs[[r.returncode for r in runs].index(1)]
    assert "already exists" in loser or "another run meanwhile" in loser, loser
    assert "Traceback" not in loser
    assert is_run(out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


# Workers die with their run -----------------------------------------------------------------


def _children(pid: int) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(proc.name))
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_killing_the_run_alone_with_sigkill_takes_its_workers_with_it(tmp_path: Path) -> None:
    run = subprocess.Popen(
        [PLANNER, "run", "--catalogs", str(SHIPPED), "--out", str(tmp_path / "run")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    start = time.monotonic()
    workers: list[int] = []
    while not workers and run.poll() is None and time.monotonic() - start < 120:
        time.sleep(0.05)
        workers = _children(run.pid)
    assert workers, "the run never started its simulation's workers"
    run.send_signal(signal.SIGKILL)
    run.wait(timeout=30)
    deadline = time.monotonic() + 10
    while any(_running(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [w for w in workers if _running(w)]


# CSV files are inert ------------------------------------------------------------------------

HOSTILE = ['=HYPERLINK("http://x","y")', "=cmd|' /C calc'!A0", "+1+2", "@SUM(A1)", "a\rb", "c\nd"]


def test_every_csv_planner_writes_keeps_rows_whole_and_formulas_inert() -> None:
    """A bare CR or LF inside a cell is quoted, so the file reads back with one row per row;
    every cell that a spreadsheet would run is written with a leading apostrophe."""
    frame = pd.DataFrame({"text": HOSTILE, "number": [-1.5, 2, 3, 4, 5, 6]})
    rows = list(csv.reader(io.StringIO(csv_text(frame), newline="")))
    assert len(rows) == 1 + len(HOSTILE)
    assert [r[0] for r in rows[1:]] == [
        "'" + HOSTILE[0], "'" + HOSTILE[1], "'+1+2", "'@SUM(A1)", "a\rb", "c\nd"
    ]  # fmt: skip
    assert [float(r[1]) for r in rows[1:]] == [-1.5, 2, 3, 4, 5, 6]


def test_diff_csv_holds_hostile_names_as_text(seed_run: Path, tmp_path: Path) -> None:
    """A hardware name changed to a formula arrives in diff.csv as text."""
    catalogs = tmp_path / "catalogs"
    shutil.copytree(SEED, catalogs)
    hardware = catalogs / "hardware.yaml"
    text = hardware.read_text()
    name_line = next(line for line in text.splitlines() if "name:" in line)
    hostile = '=HYPERLINK("http://x","y")'
    hardware.write_text(text.replace(name_line, name_line.split(":")[0] + f": '{hostile}'", 1))
    out = tmp_path / "new"
    result = CliRunner().invoke(
        main, ["run", "--catalogs", str(catalogs), "--out", str(out), "--baseline", str(seed_run)]
    )
    assert result.exit_code == 0, result.output
    cells = [c for row in csv.reader((out / "diff.csv").open(newline="")) for c in row]
    assert "'" + hostile in cells
    assert not [c for c in cells if c.startswith(("=", "+", "@"))]


# Ids read back as text ----------------------------------------------------------------------


def _catalog_with_ids(tmp_path: Path, ids: tuple[str, str]) -> Path:
    """The seed catalog with its one device listed twice, under each of ``ids``."""
    catalogs = tmp_path / "catalogs"
    shutil.copytree(SEED, catalogs)
    hardware = catalogs / "hardware.yaml"
    text = hardware.read_text()
    entry = text[text.index("  - id: seed-16gib") :]
    copies = [entry.replace("id: seed-16gib", f"id: '{i}'", 1) for i in ids]
    hardware.write_text(text[: text.index("  - id: seed-16gib")] + "".join(copies))
    return catalogs


def test_ids_that_look_like_the_same_number_stay_distinct(tmp_path: Path) -> None:
    catalogs = _catalog_with_ids(tmp_path, ("1", "1.0"))
    catalog = load_catalog(catalogs)
    assert sorted(h.id for h in catalog.hardware) == ["1", "1.0"]
    out = write_run(catalog, evaluate(catalog), tmp_path / "run")
    written = load_run(out)
    assert sorted(set(written.table["hardware"])) == ["1", "1.0"]
    unwritten = snapshot(catalog, evaluate(catalog).table)
    assert sorted(set(unwritten.table["hardware"])) == ["1", "1.0"]
    same = compare(written, unwritten)
    assert not same.recommendations and not same.candidates, same.to_text()


# Altered runs -------------------------------------------------------------------------------


def test_a_run_whose_results_were_edited_is_named_altered(seed_run: Path, tmp_path: Path) -> None:
    """Every row set eligible after the run: the manifest's SHA-256 no longer matches and the
    diff says so; the untouched run has no such note."""
    run = tmp_path / "run"
    shutil.copytree(seed_run, run)
    manifest = json.loads((run / "manifest.json").read_text())
    recorded = manifest["output_files"]["results.csv"]
    assert recorded == hashlib.sha256((seed_run / "results.csv").read_bytes()).hexdigest()
    table = pd.read_csv(run / "results.csv", dtype=str, keep_default_na=False)
    table["eligible"] = "True"
    table.to_csv(run / "results.csv", index=False)
    assert "altered" in load_run(run).results_note
    assert load_run(seed_run).results_note == ""
    result = CliRunner().invoke(main, ["diff", str(seed_run), str(run)])
    assert result.exit_code == 0 and "results.csv no longer matches" in result.output


def test_a_zeroed_catalog_hash_in_the_manifest_is_named_altered(
    seed_run: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    shutil.copytree(seed_run, run)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["catalog_files"]["hardware.yaml"] = "0" * 64
    (run / "manifest.json").write_text(json.dumps(manifest))
    snap = load_run(run)
    assert snap.catalog is None and "altered" in snap.catalog_note


# The destination is checked first -----------------------------------------------------------


@pytest.mark.parametrize("where", ["/proc/planner-run", "file/run"])
def test_an_unwritable_destination_is_refused_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    (tmp_path / "file").write_text("a file where a folder should be")
    out = Path(where) if where.startswith("/") else tmp_path / where

    def no_planning(*args, **kwargs):
        raise AssertionError("planned before checking where the run goes")

    monkeypatch.setattr(pipeline, "plan", no_planning)
    result = CliRunner().invoke(main, ["run", "--catalogs", str(SEED), "--out", str(out)])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert "could not be written" in result.output and "Traceback" not in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_a_stale_staging_folder_of_a_live_process_is_kept(tmp_path: Path) -> None:
    live = tmp_path / f".run.staging-{os.getpid()}-old"
    live.mkdir()
    assert recover_stale(tmp_path) == [] and live.exists()


@pytest.mark.parametrize(
    "value",
    [
        0.1,
        1e-05,
        1e16,
        -2.5e-300,
        1.7976931348623157e308,
        2**62,
        "GiB ≠ GB, “quoted” \\ </script>",
        {"rows": [{"a": None, "b": True, "c": [1, 2.0]}]},
    ],
)
def test_run_json_files_read_back_as_the_values_written(tmp_path, value):
    """results.json and fleet.json are written by pydantic-core's serialiser: every value reads
    back as the standard library's JSON reads it, each number to the last bit."""
    from planner.outputs.runs import write_json

    path = tmp_path / "value.json"
    write_json(value, path)
    assert json.loads(path.read_text(encoding="utf-8")) == value
    assert path.read_bytes().endswith(b"\n")
