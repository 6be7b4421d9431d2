"""planner: a memory and latency model for buying LLM inference capacity.

The library is usable without the CLI: load a catalog folder with
:func:`planner.catalog.load_catalog`, evaluate it with :func:`planner.plan.sweep.evaluate`, and
write a run folder with :func:`planner.outputs.runs.write_run`.
"""

__version__ = "0.1.0"
