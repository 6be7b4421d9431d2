"""Where independent units of work run: in this process, on a local process pool (the
default), or on a Dask cluster, behind one interface.

A unit is a module-level function called as ``function(shared, item)``: ``shared`` (the
catalog) is sent to each worker once, each ``item`` (a candidate to simulate) on its own.
Results come back in the items' order, and every unit carries its own seed, so the results are
the same whichever executor runs them. Stopping a run (Ctrl-C, SIGTERM) drops the queued units.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol

from planner import cleanup

Unit = Callable[[Any, Any], Any]


class ExecutorUnavailable(RuntimeError):
    """The executor asked for cannot run here: Dask is not installed, or its scheduler cannot
    be reached."""


class Executor(Protocol):
    """Runs ``function(shared, item)`` for each item; yields the results in the items' order."""

    def map(self, function: Unit, shared: Any, items: Sequence[Any]) -> Iterator[Any]: ...


@dataclass(frozen=True)
class InProcess:
    """Every unit in this process, one after another."""

    def map(self, function: Unit, shared: Any, items: Sequence[Any]) -> Iterator[Any]:
        for item in items:
            yield function(shared, item)


_SHARED: Any = None


def cores() -> int:
    """The processors this machine has (at least 1): the default number of workers."""
    return max(os.cpu_count() or 1, 1)


def _init_worker(shared: Any, parent: int) -> None:
    global _SHARED
    quiet_worker()
    cleanup.die_with_parent(parent)
    _SHARED = shared


def quiet_worker() -> None:
    """In a worker process: leave Ctrl-C to the run (the terminal sends SIGINT to the whole
    process group, and the run stops its workers itself), end at once on SIGTERM and SIGHUP
    without the run's handlers inherited by the fork, and forget the run's staging folders,
    which are the run's to remove."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    cleanup.forget_registered()


def _call(function: Unit, item: Any) -> Any:
    return function(_SHARED, item)


@dataclass(frozen=True)
class ProcessPool:
    """The units spread over ``workers`` local processes, which end with this one: started
    for each :meth:`map`, or once for every :meth:`map` of the same ``shared`` input inside
    :meth:`kept` (each start forks the run, which costs CPU in each worker as it touches the
    pages it shares with the run)."""

    workers: int = field(default_factory=cores)
    # inside kept(): [the shared input, the pool started for it] (None, None before any)
    _kept: list[Any] = field(default_factory=list, compare=False, repr=False)

    def map(self, function: Unit, shared: Any, items: Sequence[Any]) -> Iterator[Any]:
        if self.workers <= 1 or len(items) <= 1:
            yield from InProcess().map(function, shared, items)
            return
        keeping = bool(self._kept)
        if keeping and self._kept[1] is not None and self._kept[0] is shared:
            pool = self._kept[1]
        else:
            pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=min(self.workers, len(items)),  # no process without a unit to run
                initializer=_init_worker,
                initargs=(shared, os.getpid()),
            )
            if keeping:
                self._release()
                self._kept[:] = [shared, pool]
        try:
            with cleanup.frozen_for_fork():  # the workers are forked as the units are sent
                results = pool.map(_call, [function] * len(items), items, chunksize=1)
            yield from results
        except BaseException:  # stopped or failed: drop the queued units
            pool.shutdown(wait=False, cancel_futures=True)
            if keeping:
                self._kept[:] = [None, None]
            raise
        if not keeping:
            pool.shutdown()

    @contextmanager
    def kept(self) -> Iterator[ProcessPool]:
        """Keep the workers started between the :meth:`map` calls inside (those of one
        ``shared`` input); shut them down on leaving."""
        self._kept[:] = [None, None]
        try:
            yield self
        finally:
            self._release()
            self._kept.clear()

    def _release(self) -> None:
        if self._kept and self._kept[1] is not None:
            self._kept[1].shutdown()


def _dask_call(function: Unit, shared: Any, item: Any) -> Any:
    return function(shared, item)


@dataclass(frozen=True)
class Dask:
    """The units on a Dask cluster: the scheduler at ``address`` (``tcp://HOST:8786``), or a
    ``LocalCluster`` of ``workers`` processes started for the run and closed after it."""

    address: str | None = None
    workers: int = 2

    def map(self, function: Unit, shared: Any, items: Sequence[Any]) -> Iterator[Any]:
        try:
            from dask.distributed import Client, LocalCluster  # optional, and slow to import
        except ImportError:
            raise ExecutorUnavailable(
                "--scheduler needs Dask: pip install 'planner[dask]' (or dask[distributed])"
            ) from None
        cluster = None
        if self.address is None:
            cluster = LocalCluster(
                n_workers=self.workers, threads_per_worker=1, processes=True, dashboard_address=None
            )
        try:
            client = Client(self.address if cluster is None else cluster, timeout="10s")
        except (OSError, TimeoutError, ValueError) as exc:
            if cluster is not None:
                cluster.close()
            raise ExecutorUnavailable(
                f"cannot reach the Dask scheduler at {self.address}: {exc}"
            ) from None
        try:
            scattered = client.scatter(shared, broadcast=True)
            futures = client.map(
                _dask_call, [function] * len(items), [scattered] * len(items), items, pure=False
            )
            try:
                for future in futures:
                    yield future.result()
            except BaseException:
                client.cancel(futures)
                raise
        finally:
            client.close()
            if cluster is not None:
                cluster.close()


#: A Dask scheduler's address: an optional protocol, a host name or address (IPv6 in
#: brackets) and a port.
SCHEDULER_ADDRESS = re.compile(
    r"^(?:(?:tcp|tls|ucx|ws|wss)://)?(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])"
    r":(\d{1,5})/?$"
)

#: Local worker processes allowed per core: more only add memory (each holds the catalogs).
WORKERS_PER_CORE = 4


class BadExecutor(ValueError):
    """An executor asked for in a way that cannot work: a scheduler address that is not one, or
    more local processes than the machine can use."""


def check_scheduler(scheduler: str) -> None:
    """Refuse, before any work, a ``--scheduler`` that is neither ``local`` nor a Dask
    scheduler's address (``tcp://HOST:8786``); say so when Dask is not installed.

    Raises :class:`BadExecutor` or :class:`ExecutorUnavailable`.
    """
    if scheduler != "local":
        match = SCHEDULER_ADDRESS.match(scheduler)
        if match is None or not 1 <= int(match.group(1)) <= 65535:
            raise BadExecutor(
                f"{scheduler!r} is not a Dask scheduler: expected 'local' or an address such "
                "as tcp://HOST:8786 (a host and a port from 1 to 65535)"
            )
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        raise ExecutorUnavailable(
            "--scheduler needs Dask: pip install 'planner[dask]' (or dask[distributed])"
        ) from None


def check_workers(workers: int, scheduler: str | None = None) -> None:
    """Refuse more local worker processes than :data:`WORKERS_PER_CORE` × the :func:`cores`
    here (a remote scheduler's workers are its own).

    Raises :class:`BadExecutor`.
    """
    if scheduler not in (None, "local"):
        return
    most = WORKERS_PER_CORE * cores()
    if workers > most:
        raise BadExecutor(
            f"{workers:,} worker processes on {cores()} core(s): at most {most} "
            f"({WORKERS_PER_CORE} per core) are started here; more only add memory"
        )


def executor(workers: int | None = None, scheduler: str | None = None) -> Executor:
    """The executor a run asks for: Dask when given a ``scheduler`` (an address, or ``local``
    for a LocalCluster of ``workers``), else a process pool of ``workers`` (1: in process);
    ``workers`` defaults to the :func:`cores` there are."""
    workers = workers or cores()
    if scheduler is not None:
        return Dask(None if scheduler == "local" else scheduler, workers)
    return ProcessPool(workers) if workers > 1 else InProcess()


def kept(runner: Executor) -> Any:
    """A context in which ``runner`` keeps its workers between calls (:meth:`ProcessPool.kept`;
    the other executors start nothing of their own per call)."""
    return runner.kept() if isinstance(runner, ProcessPool) else nullcontext(runner)


def as_executor(processes: int | Executor) -> Executor:
    """An executor as given, or :func:`executor` of that many workers."""
    return executor(processes) if isinstance(processes, int) else processes
