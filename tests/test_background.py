"""A file written in a forked child (the report) fails as it would in process: the same
exception reaches the run, and a failed run leaves nothing behind."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from planner.outputs import background
from planner.outputs.background import Background, Forked


def test_a_value_worked_out_in_the_child_comes_back() -> None:
    import os

    job = Forked(lambda: (os.getpid(), [1.5, {"a": 2}]), "adding up").start()
    pid, value = job.result()
    assert value == [1.5, {"a": 2}]
    assert pid != os.getpid()  # it was worked out in the child


def test_the_child_starts_with_the_run_s_objects_frozen_and_collects_less_often() -> None:
    import gc

    job = Forked(lambda: (gc.get_freeze_count(), gc.get_threshold()[0]), "looking").start()
    frozen, threshold = job.result()
    assert frozen > 1000  # the run's objects, inherited frozen
    assert threshold == background.CHILD_GC_ALLOCATIONS == 20_000
    assert gc.get_freeze_count() == 0  # the run itself: as before
    assert gc.get_threshold()[0] != 20_000


def test_a_caller_s_own_freeze_is_left_as_it_was() -> None:
    import gc

    from planner.cleanup import frozen_for_fork

    gc.freeze()
    try:
        before = gc.get_freeze_count()
        with frozen_for_fork():
            assert gc.get_freeze_count() == before
        assert gc.get_freeze_count() == before  # not undone by the block
    finally:
        gc.unfreeze()


def test_a_value_that_cannot_travel_is_worked_out_again_in_process() -> None:
    import os

    job = Forked(lambda: (os.getpid(), lambda: None), "making a function").start()
    pid, _ = job.result()
    assert pid == os.getpid()


def test_a_failure_of_the_child_s_work_is_raised_with_what_it_was_doing() -> None:
    def fail() -> None:
        raise KeyError("no such input")

    job = Forked(fail, "re-planning").start()
    with pytest.raises(KeyError, match="no such input") as raised:
        job.result()
    assert any("re-planning in a child process" in note for note in raised.value.__notes__)


def test_the_child_writes_the_file(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    job = Background(lambda path: path.write_text("written"), target)
    job.start()
    job.wait()
    assert target.read_text() == "written"


def test_an_exception_in_the_child_is_raised_by_the_run(tmp_path: Path) -> None:
    def fail(path: Path) -> None:
        raise ValueError("no such option")

    job = Background(fail, tmp_path / "out.txt")
    job.start()
    with pytest.raises(ValueError, match="no such option"):
        job.wait()


def test_a_full_disk_in_the_child_stays_an_os_error(tmp_path: Path) -> None:
    def full(path: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    job = Background(full, tmp_path / "out.txt")
    job.start()
    with pytest.raises(OSError) as raised:
        job.wait()
    assert raised.value.errno == errno.ENOSPC
    assert raised.value.filename == str(tmp_path / "out.txt")


def test_an_exception_that_cannot_travel_is_raised_in_process(tmp_path: Path) -> None:
    class Local(Exception):  # a class defined in a function cannot be pickled
        pass

    def fail(path: Path) -> None:
        raise Local("local")

    job = Background(fail, tmp_path / "out.txt")
    job.start()
    with pytest.raises(Local):
        job.wait()


def test_a_killed_child_is_an_error(tmp_path: Path) -> None:
    import os
    import signal

    def die(path: Path) -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    job = Background(die, tmp_path / "out.txt")
    job.start()
    if job.process is None:
        pytest.skip("no fork here")
    with pytest.raises(RuntimeError, match="ended without finishing"):
        job.wait()


def test_without_fork_the_file_is_written_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(background, "forking", lambda: False)
    pid = []
    job = Background(lambda path: pid.append(__import__("os").getpid()), tmp_path / "x")
    job.start()
    job.wait()
    assert pid == [__import__("os").getpid()]


def test_a_report_that_fails_fails_the_run_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from planner.catalog import load_catalog
    from planner.outputs import report
    from planner.outputs.runs import write_run
    from planner.plan.sweep import evaluate
    from planner.resources import shipped_catalogs

    def broken(*args: object, **kwargs: object) -> None:
        raise LookupError("template missing")

    monkeypatch.setattr(report, "write_report", broken)
    catalog = load_catalog(shipped_catalogs())
    with pytest.raises(LookupError, match="template missing"):
        write_run(catalog, evaluate(catalog), tmp_path / "run")
    assert list(tmp_path.iterdir()) == []
