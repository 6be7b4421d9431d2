"""The figures the serving simulation reports per candidate, once: each one's column (in the
sizing table, on the Simulated sheet and in the plan), the field of the simulation's result it
is read from, its unit and meaning. Every list of simulated figures elsewhere derives from
:data:`SIMULATED_FIGURES`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SimulatedFigure:
    """One simulated figure."""

    name: str
    """Its column in the sizing table, the Simulated sheet and the plan."""
    unit: str
    description: str
    result: str = ""
    """The simulation result's field it is read from (empty: the same name)."""
    optional: bool = False
    """A Simulated sheet row may lack it (a table sized before it was reported)."""

    @property
    def field(self) -> str:
        """The simulation result's field it is read from."""
        return self.result or self.name


#: Every simulated figure, in the order of the sizing table and the Simulated sheet.
SIMULATED_FIGURES = (
    SimulatedFigure("ttft_p50_s", "s", "simulated median time to first token"),
    SimulatedFigure("ttft_p95_s", "s", "simulated p95 time to first token"),
    SimulatedFigure("ttft_p99_s", "s", "simulated p99 time to first token"),
    SimulatedFigure("itl_p50_s", "s", "simulated median inter-token latency"),
    SimulatedFigure("itl_p95_s", "s", "simulated p95 inter-token latency"),
    SimulatedFigure("itl_p99_s", "s", "simulated p99 inter-token latency"),
    SimulatedFigure("e2e_p50_s", "s", "simulated median end-to-end latency"),
    SimulatedFigure("e2e_p95_s", "s", "simulated p95 end-to-end latency"),
    SimulatedFigure("e2e_p99_s", "s", "simulated p99 end-to-end latency"),
    SimulatedFigure("task_p95_s", "s", "simulated p95 task latency"),
    SimulatedFigure(
        "sim_throughput_tokens_per_s",
        "tokens/s",
        "simulated output tokens per second per replica",
        result="throughput_tokens_per_s",
    ),
    SimulatedFigure("queued_fraction", "fraction", "share of requests that waited for admission"),
    SimulatedFigure(
        "rejected_fraction",
        "fraction",
        "share of requests rejected (queue full, timeout, never fits)",
    ),
    SimulatedFigure("preempted_fraction", "fraction", "share of requests preempted at least once"),
    SimulatedFigure(
        "sim_utilisation",
        "fraction",
        "share of the time the simulated replica runs a step",
        result="utilisation",
        optional=True,
    ),
    SimulatedFigure(
        "sim_prefill_utilisation",
        "fraction",
        "share of the time it prefills: the load of the queue a first token waits in",
        result="prefill_utilisation",
        optional=True,
    ),
    SimulatedFigure(
        "sim_mean_batch",
        "sequences",
        "time-average of the sequences the simulated replica runs (compare load_batch)",
        result="mean_concurrency",
        optional=True,
    ),
    SimulatedFigure(
        "sim_prefix_hit_ratio",
        "fraction",
        "share of prompt tokens the simulated replica found in its prefix cache (compare "
        "prefix_hit_ratio)",
        result="prefix_hit_ratio",
        optional=True,
    ),
)
