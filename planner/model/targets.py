"""The latency targets a workload sets, once: each one's name, how it reads, the closed-form
figure it is checked against, and the names it takes in the workload record, the plan, the
simulation and the latency band. Every list of targets elsewhere is derived from :data:`TARGETS`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Target:
    """One p95 latency target."""

    name: str
    """The latency as the simulation names it (``ttft``): ``ttft p95 0.081 s > 0.050 s``."""
    label: str
    """How a reader's table names it (``TTFT``)."""
    meaning: str
    """The latency in words (``time to first token``)."""
    adjective: str
    """The latency as a miss reason says it: ``latency: time-to-first-token p95 target``."""
    estimate: str
    """The closed-form figure checked against the target (``ttft_s``: no queue) [s]."""

    @property
    def field(self) -> str:
        """The workload record's field under ``targets`` (``ttft_p95``) [s]."""
        return f"{self.name}_p95"

    @property
    def column(self) -> str:
        """The plan's column of the target (``ttft_p95_target_s``) [s]."""
        return f"{self.name}_p95_target_s"

    @property
    def simulated(self) -> str:
        """The simulated p95 figure (``ttft_p95_s``), a SimResult field and a plan column [s]."""
        return f"{self.name}_p95_s"

    @property
    def meets(self) -> str:
        """The metric saying whether the closed form meets it (``meets_ttft_target``)."""
        return f"meets_{self.name}_target"

    @property
    def upper(self) -> str:
        """The figure as planned at the top of its latency band (``ttft_upper_s``) [s]."""
        return f"{self.name}_upper_s"

    @property
    def miss(self) -> str:
        """What a candidate missing it reads in ``target_miss_reason``."""
        return f"latency: {self.adjective} p95 target"


#: Every latency target, in the order misses are reported.
TARGETS = (
    Target("ttft", "TTFT", "time to first token", "time-to-first-token", "ttft_s"),
    Target("itl", "ITL", "inter-token latency", "inter-token", "itl_load_s"),
    Target("e2e", "end-to-end", "end-to-end latency", "end-to-end", "e2e_load_s"),
    Target("task", "task", "task latency", "task", "task_load_s"),
)


def taking(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a function over ``*args`` the named arguments ``names`` (in that order), so that a
    metric over every target reads its inputs from :data:`TARGETS` rather than a list of its
    own; the function is called with them positionally, as metrics are."""

    def rename(func: Callable[..., Any]) -> Callable[..., Any]:
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        func.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(n, kind) for n in names]
        )
        return func

    return rename
