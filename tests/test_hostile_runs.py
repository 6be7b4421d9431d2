"""Run folders, streaming, diff and the CLI under hostile and careless use: every case ends in a
clean refusal (exit 1 or 2, planner's own sentence naming the path or option, no traceback),
with nothing overwritten and nothing left behind, or in a correct result.

The table (:data:`CASES`) drives the CLI against one seed run shared by the module; faults that
need more (a full disk, a missing extra, Ctrl-C during a streamed sweep) follow it.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from planner.cli import main
from planner.outputs.folders import FileRefused, write_new_file

REPO = Path(__file__).resolve().parent.parent
SEED = REPO / "catalogs" / "examples" / "seed"
SHIPPED = REPO / "catalogs"
HF_CONFIG = REPO / "tests" / "fixtures" / "hf" / "llama-3.1-8b.json"
PLANNER = str(Path(sys.executable).with_name("planner"))


def _tree(folder: Path) -> dict[str, str]:
    """Every entry below ``folder``: a file by its SHA-256, a folder or link by its kind."""
    out = {}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        if path.is_symlink():
            out[key] = "link:" + os.readlink(path)
        elif path.is_dir():
            out[key] = "dir"
        elif path.is_file():
            out[key] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[key] = "special"
    return out


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding one seed run (``run``), a copy of the seed catalog (``cats``), a file
    of the user's (``notes.txt``), a dangling link, a link to the run, and a FIFO."""
    root = tmp_path_factory.mktemp("hostile-runs")
    result = CliRunner().invoke(main, ["run", "--catalogs", str(SEED), "--out", str(root / "run")])
    assert result.exit_code == 0, result.output
    shutil.copytree(SEED, root / "cats")
    (root / "notes.txt").write_text("the user's own notes")
    (root / "dangling").symlink_to(root / "nowhere")
    (root / "runlink").symlink_to(root / "run")
    os.mkfifo(root / "fifo")
    return root


def _clean(result, code: int, words: tuple[str, ...]) -> None:
    """Exit ``code`` through planner's own handling (no exception but SystemExit), no
    traceback, and every one of ``words`` said."""
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output, result.output
    for word in words:
        assert word in result.output, (word, result.output)


#: (id, arguments with {root} for the shared folder, exit code, words the message holds)
CASES = [
    # diff --csv never writes over a file or into a run
    ("diff-csv-over-results", "diff {root}/run {root}/run --csv {root}/run/results.csv", 1,
     ("results.csv already exists",)),
    ("diff-csv-new-in-run", "diff {root}/run {root}/run --csv {root}/run/new.csv", 1,
     ("inside the run folder",)),
    ("diff-csv-deep-in-run", "diff {root}/run {root}/run --csv {root}/run/catalogs/d.csv", 1,
     ("inside the run folder",)),
    ("diff-csv-through-link", "diff {root}/run {root}/run --csv {root}/runlink/d.csv", 1,
     ("inside the run folder",)),
    ("diff-csv-missing-folder", "diff {root}/run {root}/run --csv {root}/absent/d.csv", 1,
     ("absent is not an existing folder",)),
    ("diff-csv-user-file", "diff {root}/run {root}/run --csv {root}/notes.txt", 1,
     ("notes.txt already exists",)),
    ("diff-csv-dangling-link", "diff {root}/run {root}/run --csv {root}/dangling", 1,
     ("dangling already exists",)),
    ("diff-csv-fifo", "diff {root}/run {root}/run --csv {root}/fifo", 1,
     ("fifo already exists",)),
    ("diff-limit-negative", "diff {root}/run {root}/run --limit -1", 2, ("--limit", "-1")),
    ("diff-missing-run", "diff {root}/run {root}/absent", 1, ("absent does not exist",)),
    ("diff-file-as-run", "diff {root}/run {root}/notes.txt", 1, ("is not a folder",)),
    ("diff-catalog-as-run", "diff {root}/run {root}/cats", 1, ("is not a run folder",)),
    ("diff-with-itself", "diff {root}/run {root}/run", 0, ("No changes",)),
    # run: executor options, refused before any work
    ("scheduler-bogus", "run --catalogs {root}/cats --out {root}/x --scheduler bogus", 2,
     ("--scheduler", "'bogus' is not a Dask scheduler")),
    ("scheduler-empty", "run --catalogs {root}/cats --out {root}/x --scheduler=", 2,
     ("'' is not a Dask scheduler",)),
    ("scheduler-no-port", "run --catalogs {root}/cats --out {root}/x --scheduler tcp://h", 2,
     ("tcp://HOST:8786",)),
    ("scheduler-port-too-big", "run --catalogs {root}/cats --out {root}/x "
     "--scheduler tcp://h:70000", 2, ("port from 1 to 65535",)),
    ("workers-zero", "run --catalogs {root}/cats --out {root}/x --workers 0", 2, ("--workers",)),
    ("workers-huge", "run --catalogs {root}/cats --out {root}/x --workers 1024", 2,
     ("--workers", "per core")),
    ("draws-million", "run --catalogs {root}/cats --out {root}/x --draws 1000000", 2,
     ("--draws", "10000")),
    ("draws-negative", "run --catalogs {root}/cats --out {root}/x --draws -1", 2, ("--draws",)),
    ("stream-above-negative", "run --catalogs {root}/cats --out {root}/x --stream-above -1", 2,
     ("--stream-above",)),
    # run: where the run folder goes
    ("out-user-file", "run --catalogs {root}/cats --out {root}/notes.txt", 2,
     ("--out", "notes.txt' is a file")),
    ("out-user-file-force", "run --catalogs {root}/cats --out {root}/notes.txt --force", 2,
     ("--out", "notes.txt' is a file")),
    ("out-link-to-run-force", "run --catalogs {root}/cats --out {root}/runlink --force", 1,
     ("not a run folder planner wrote",)),
    ("out-dangling-link", "run --catalogs {root}/cats --out {root}/dangling", 1,
     ("dangling already exists",)),
    ("out-fifo-force", "run --catalogs {root}/cats --out {root}/fifo --force", 1,
     ("not a run folder planner wrote",)),
    ("out-in-catalogs", "run --catalogs {root}/cats --out {root}/cats/run", 1,
     ("is the catalog folder", "or inside it")),
    ("out-is-catalogs-force", "run --catalogs {root}/cats --out {root}/cats --force", 1,
     ("is the catalog folder",)),
    ("out-in-run", "run --catalogs {root}/cats --out {root}/run/inner", 1,
     ("inside the run folder",)),
    ("out-is-baseline", "run --catalogs {root}/cats --out {root}/run --force "
     "--baseline {root}/run", 1, ("is the baseline run",)),
    ("out-is-baseline-by-link", "run --catalogs {root}/cats --out {root}/runlink --force "
     "--baseline {root}/run", 1, ("is the baseline run",)),
    ("baseline-missing", "run --catalogs {root}/cats --out {root}/x --baseline {root}/absent", 1,
     ("absent does not exist",)),
    ("baseline-file", "run --catalogs {root}/cats --out {root}/x --baseline {root}/notes.txt", 2,
     ("--baseline", "notes.txt' is a file")),
    ("baseline-catalogs", "run --catalogs {root}/cats --out {root}/x --baseline {root}/cats", 1,
     ("is not a run folder",)),
    # calibrate --out and import-hf --append
    ("calibrate-out-in-run", "calibrate --catalogs {root}/cats --out {root}/run/c.yaml", 1,
     ("inside the run folder",)),
    ("calibrate-out-user-file", "calibrate --catalogs {root}/cats --out {root}/notes.txt", 1,
     ("notes.txt already exists",)),
    ("calibrate-out-missing-folder", "calibrate --catalogs {root}/cats "
     "--out {root}/absent/c.yaml", 1, ("is not an existing folder",)),
    ("append-in-run", "import-hf " + str(HF_CONFIG) + " --append {root}/run/catalogs/models.yaml",
     1, ("inside the run folder",)),
    ("append-missing-folder", "import-hf " + str(HF_CONFIG) + " --append {root}/absent/m.yaml",
     1, ("is not an existing folder",)),
    ("append-fifo", "import-hf " + str(HF_CONFIG) + " --append {root}/fifo", 1,
     ("not a regular file",)),
    ("append-folder", "import-hf " + str(HF_CONFIG) + " --append {root}/cats", 2,
     ("--append", "cats' is a directory")),
]  # fmt: skip


@pytest.mark.parametrize(("args", "code", "words"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_a_careless_command_is_refused_and_changes_nothing(
    place: Path, args: str, code: int, words: tuple[str, ...]
) -> None:
    before = _tree(place)
    argv = [a.replace("{root}", str(place)) for a in args.split(" ")]
    started = time.monotonic()
    result = CliRunner().invoke(main, argv)
    _clean(result, code, words)
    assert _tree(place) == before  # nothing written, replaced or left behind
    assert time.monotonic() - started < 60


def test_force_names_a_file_hidden_deep_in_the_runs_catalog_copy(place: Path, tmp_path) -> None:
    """--force over a run compares the manifest with every entry at any depth: a file put in
    ``catalogs/`` (or a folder below it) is named and kept, and the run is not replaced."""
    run = tmp_path / "run"
    shutil.copytree(place / "run", run)
    (run / "catalogs" / "mine" / "deep").mkdir(parents=True)
    (run / "catalogs" / "mine" / "deep" / "plan.txt").write_text("kept")
    before = _tree(run)
    result = CliRunner().invoke(main, ["run", "--catalogs", str(SEED), "--out", str(run),
                                       "--force"])  # fmt: skip
    _clean(result, 1, ("holds what planner did not write", "catalogs/mine", "nothing was changed"))
    assert _tree(run) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_force_replaces_a_run_holding_only_what_planner_wrote(place: Path, tmp_path) -> None:
    run = tmp_path / "run"
    shutil.copytree(place / "run", run)
    result = CliRunner().invoke(main, ["run", "--catalogs", str(SEED), "--out", str(run),
                                       "--force"])  # fmt: skip
    _clean(result, 0, ("Run written to",))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_a_full_disk_under_diff_csv_leaves_no_file(
    place: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from planner.diff import RunDiff

    def half_then_full(self, path):
        Path(path).write_text("kind,key\n")  # part of the file, then the disk fills
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(RunDiff, "write_csv", half_then_full)
    target = tmp_path / "d.csv"
    result = CliRunner().invoke(main, ["diff", str(place / "run"), str(place / "run"), "--csv",
                                       str(target)])  # fmt: skip
    _clean(result, 1, ("d.csv could not be written", "No space left on device"))
    assert list(tmp_path.iterdir()) == []  # neither the file nor its temporary


def test_a_new_file_never_replaces_one_that_appears_meanwhile(tmp_path: Path) -> None:
    target = tmp_path / "out.csv"

    def racing(path: Path) -> None:
        path.write_text("planner's")
        target.write_text("someone else's")  # appears while planner writes

    with pytest.raises(FileRefused, match="created by something else meanwhile"):
        write_new_file(target, racing)
    assert target.read_text() == "someone else's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_a_full_disk_under_import_hf_append_keeps_models_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models = tmp_path / "models.yaml"
    shutil.copy(SEED / "models.yaml", models)
    before = _tree(tmp_path)
    real = os.fdopen

    class Full:
        """A file that takes half of what is written, then finds the disk full."""

        def __init__(self, handle: Any) -> None:
            self.handle = handle

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self.handle.close()

        def write(self, data: str) -> int:
            self.handle.write(data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")

    def fdopen(fd: int, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        opened = real(fd, mode, *args, **kwargs)
        return Full(opened) if "w" in mode else opened

    monkeypatch.setattr(os, "fdopen", fdopen)
    result = CliRunner().invoke(main, ["import-hf", str(HF_CONFIG), "--append", str(models)])
    _clean(result, 1, ("models.yaml could not be written", "No space left", "left as it was"))
    assert _tree(tmp_path) == before


def test_a_stream_without_pyarrow_is_refused_and_leaves_no_scratch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    result = CliRunner().invoke(main, ["run", "--catalogs", str(SEED), "--out",
                                       str(tmp_path / "r"), "--stream-above", "0"])  # fmt: skip
    _clean(result, 1, ("pyarrow", "pip install 'planner[large]'"))
    assert list(tmp_path.iterdir()) == []


def _with_id_holding_a_slash(place: Path, tmp_path: Path) -> Path:
    """A copy of the shared run as an earlier planner might have written it: its hardware id
    holds a ``/``."""
    old = tmp_path / "old"
    shutil.copytree(place / "run", old)
    csv = old / "results.csv"
    csv.write_text(csv.read_text().replace('"seed-16gib"', '"seed/16gib"'))
    return old


def test_diff_of_a_run_whose_id_holds_a_slash(place: Path, tmp_path: Path) -> None:
    old = _with_id_holding_a_slash(place, tmp_path)
    result = CliRunner().invoke(main, ["diff", str(old), str(place / "run"), "--csv",
                                       str(tmp_path / "d.csv")])  # fmt: skip
    _clean(result, 0, ("seed-4k × invented-4gib: seed/16gib (TP 1) · bf16",))
    table = pd.read_csv(tmp_path / "d.csv")
    removed = table[table["kind"] == "candidate_removed"]["key"]
    assert "seed%2F16gib/invented-4gib/bf16/seed-4k/1" in set(removed)  # one key, five parts
    assert len(removed) == 4


def test_a_baseline_whose_id_holds_a_slash(place: Path, tmp_path: Path) -> None:
    old = _with_id_holding_a_slash(place, tmp_path)
    result = CliRunner().invoke(main, ["run", "--catalogs", str(SEED), "--out",
                                       str(tmp_path / "new"), "--baseline", str(old)])  # fmt: skip
    _clean(result, 0, ("Run written to",))
    assert (tmp_path / "new" / "diff.csv").is_file()


def test_diff_of_runs_of_different_planner_versions(place: Path, tmp_path: Path) -> None:
    old = tmp_path / "old"
    shutil.copytree(place / "run", old)
    manifest = json.loads((old / "manifest.json").read_text())
    manifest["planner_version"] = "0.0.1"
    (old / "manifest.json").write_text(json.dumps(manifest))
    result = CliRunner().invoke(main, ["diff", str(old), str(place / "run")])
    _clean(result, 0, ("different planner versions (0.0.1 →",))


def test_draws_estimated_past_the_bound_need_yes(
    place: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A draw timed at 2 s: 1,000 draws on 1 worker would take 2,000 s, past the 600 s bound,
    so the run is refused before any work, saying the estimate (33 min) and --yes."""
    from planner.plan import uncertainty

    cats = tmp_path / "cats"
    shutil.copytree(SEED, cats)
    text = (cats / "assumptions.yaml").read_text()
    assert "bandwidth_efficiency: 1.0" in text
    (cats / "assumptions.yaml").write_text(
        text.replace(
            "bandwidth_efficiency: 1.0", "bandwidth_efficiency: {low: 0.5, mode: 0.8, high: 1.0}"
        )  # fmt: skip
    )
    monkeypatch.setattr(uncertainty, "seconds_per_draw", lambda catalog: 2.0)
    args = ["run", "--catalogs", str(cats), "--out", str(tmp_path / "r"), "--draws", "1000",
            "--workers", "1"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    _clean(result, 1, ("--draws 1,000 would take about 33 min", "2.00 s", "pass --yes"))
    assert not (tmp_path / "r").exists()


def _scratch_or_staging(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if ".staging-" in p.name]


def test_ctrl_c_during_a_streamed_sweep_ends_cleanly(tmp_path: Path) -> None:
    """Ctrl-C reaches the run and its workers (the terminal signals the whole process group)
    once the streamed sweep's scratch folder exists: exit 130, no traceback from the run or a
    worker, and no scratch, staging or run folder left."""
    reports = tmp_path / "reports"
    reports.mkdir()
    run = subprocess.Popen(
        [PLANNER, "run", "--catalogs", str(SHIPPED), "--out", str(reports / "r"),
         "--stream-above", "0", "--workers", "2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    started = time.monotonic()
    while not _scratch_or_staging(reports) and run.poll() is None:
        assert time.monotonic() - started < 60
        time.sleep(0.01)
    time.sleep(0.3)  # the workers are at work
    os.killpg(run.pid, signal.SIGINT)
    _, err = run.communicate(timeout=60)
    assert run.returncode in (130, 0), err.decode()
    assert b"Traceback" not in err and b"KeyboardInterrupt" not in err, err.decode()
    time.sleep(0.3)
    assert not _scratch_or_staging(reports)
    if run.returncode == 130:
        assert not (reports / "r").exists()
        assert b"stopped" in err
