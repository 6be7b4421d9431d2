"""The measurement kit: a script per pool, ``deploy/measure-LINE.sh``, that starts the engine
as planned, saves its start-up log, runs the benchmark at the loads calibration needs, and
appends to ``measurements/index.yaml`` the entries that tie each file to its hardware, model,
precision, parallel sizes and engine settings, so that ``planner calibrate`` and ``planner
run`` read the folder as it is and ``planner measure check`` can tell a measurement of other
settings from the plan's.

The loads: one request at a time (the step at batch one, the time to first token without a
queue) and the batch the plan runs a replica at (``load_batch``), each with the workload's mean
prompt and output lengths, outputs not stopped early (``--ignore-eos``), so the lengths the
entry states are the lengths measured. The benchmark is vLLM's ``vllm bench serve`` for every
engine (each serves the OpenAI completions API it drives): its JSON is the ``vllm-bench``
format calibration reads. The start-up log is indexed for vLLM, whose log planner reads; the
others' logs are kept beside it.

``measure-LINE.sh --dry-run`` prints every command and the index entries instead of running
them. Catalog strings reach the script only as quoted words or inside a quoted here-document,
never as shell syntax.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

import yaml

from planner.deploy.engines import MODEL, OPTIONS_FILE, PORT, Launch, shell_line, shell_word
from planner.deploy.settings import LaunchSettings

__all__ = [
    "MEMORY_KEYS",
    "Load",
    "benchmark_argv",
    "index_entries",
    "launch_script",
    "loads",
    "options_here",
    "plain_yaml",
    "script",
]

#: The engine profile's key for its memory fraction, per engine.
MEMORY_KEYS = {
    "vllm": "gpu_memory_utilization",
    "sglang": "mem_fraction_static",
    "tensorrt-llm": "free_gpu_memory_fraction",
}

#: The stamp in file names and ids the script replaces with the time it runs: in the index
#: entries a mark ``sed`` fills, in commands the shell's variable.
STAMP = "@STAMP@"
STAMP_VARIABLE = "${STAMP}"

#: Requests a benchmark sends per request in flight, and at least.
PROMPTS_PER_SLOT = 4
LEAST_PROMPTS = 20


@dataclass(frozen=True)
class Load:
    """One benchmark run: requests in flight, the prompt length, its name in file names."""

    concurrency: int
    prompt_tokens: int
    name: str


def loads(settings: LaunchSettings) -> list[Load]:
    """The loads measured: one request and the planned batch at the workload's mean lengths,
    and, where the plan reserves prompts at least twice the mean, one request of the longest
    (:attr:`LaunchSettings.long_prompt_tokens`)."""
    mean = settings.prompt_tokens
    out = [Load(c, mean, f"c{c}") for c in sorted({1, settings.planned_batch})]
    if settings.long_prompt_tokens:
        out.append(Load(1, settings.long_prompt_tokens, f"c1-p{settings.long_prompt_tokens}"))
    return out


def _file(settings: LaunchSettings, what: str, stamp: str = STAMP) -> str:
    return f"{settings.line}-{stamp}-{what}"


def benchmark_argv(settings: LaunchSettings, load: Load) -> list[str]:
    """``vllm bench serve`` at one load, its result saved where the index points."""
    prompts = max(PROMPTS_PER_SLOT * load.concurrency, LEAST_PROMPTS)
    return [
        "vllm", "bench", "serve",
        "--backend", "vllm",
        "--base-url", f"http://127.0.0.1:{PORT}",
        "--model", MODEL,
        "--served-model-name", settings.model,
        "--dataset-name", "random",
        "--random-input-len", str(load.prompt_tokens),
        "--random-output-len", str(settings.output_tokens),
        "--num-prompts", str(prompts),
        "--max-concurrency", str(load.concurrency),
        "--ignore-eos",
        "--percentile-metrics", "ttft,tpot,itl,e2el",
        "--save-result",
        "--result-dir", "${OUT}",
        "--result-filename", _file(settings, f"{load.name}.json", STAMP_VARIABLE),
    ]  # fmt: skip


def _engine(settings: LaunchSettings) -> dict[str, Any]:
    return {
        "name": settings.engine,
        "version": settings.engine_version,
        MEMORY_KEYS[settings.engine]: settings.memory_fraction,
        "max_num_batched_tokens": settings.max_num_batched_tokens,
        "max_model_len": settings.max_model_len,
        "max_num_seqs": settings.max_num_seqs,
        "chunked_prefill": settings.chunked_prefill,
        "prefix_caching": settings.prefix_caching,
        "cuda_graphs": settings.cuda_graphs,
    }


def index_entries(settings: LaunchSettings) -> list[dict[str, Any]]:
    """The ``measurements/index.yaml`` entries the script appends (``@STAMP@`` filled when it
    runs)."""
    common = {
        "hardware": settings.hardware,
        "model": settings.model,
        "precision": settings.precision,
        "tensor_parallel": settings.tensor_parallel,
        "engine": _engine(settings),
    }
    source = f"measured with deploy/measure-{settings.line}.sh"
    entries = []
    if settings.engine == "vllm":
        name = _file(settings, "startup.log")
        entries.append({"id": name.removesuffix(".log"), "file": name, "format": "vllm-log",
                        **common, "source": source})  # fmt: skip
    for load in loads(settings):
        name = _file(settings, f"{load.name}.json")
        entries.append(
            {
                "id": name.removesuffix(".json"),
                "file": name,
                "format": "vllm-bench",
                **common,
                "concurrency": load.concurrency,
                "prompt_tokens": load.prompt_tokens,
                "output_tokens": settings.output_tokens,
                "workload": settings.workload,
                "source": source,
            }
        )
    return entries


_HEAD = """#!/usr/bin/env bash
# Measure {line} as the plan assumed it: start {engine} {version} with the plan's settings,
# save its start-up log, benchmark it at {loads} requests in flight and append the index
# entries planner calibrate reads. Written by planner; the settings are in deploy/settings.json.
#
#   deploy/measure-{line}.sh            run it (on a machine with the devices)
#   deploy/measure-{line}.sh --dry-run  print what it would run and the index entries
#
# OUT (default: measurements) is the folder the files and index.yaml go to.
set -euo pipefail
DRY_RUN=0
if [ "${{1:-}}" = "--dry-run" ]; then DRY_RUN=1; fi
OUT="${{OUT:-measurements}}"
STAMP="$(date -u +%Y%m%dT%H%M%SZ)"
if [ "$DRY_RUN" = 1 ]; then STAMP=dry-run; fi
{model}
run() {{
  if [ "$DRY_RUN" = 1 ]; then printf '%q ' "$@"; printf '\\n'; else "$@"; fi
}}
"""


def _model_line(settings: LaunchSettings) -> str:
    """Shell lines setting MODEL: the repository unless the user gives one, or, where the
    plan needs a checkpoint quantised ahead of time, the user's, required."""
    if settings.model_repository:
        return f'MODEL="${{MODEL:-{shlex.quote(settings.model_repository)}}}"'
    need = shlex.quote(f"set MODEL to {settings.checkpoint}")
    return (
        'MODEL="${MODEL:-}"\n'
        'if [ -z "$MODEL" ] && [ "${DRY_RUN:-0}" = 1 ]; then MODEL="<MODEL>"; fi\n'
        f'if [ -z "$MODEL" ]; then echo {need} >&2; exit 2; fi'
    )


class _Plain(yaml.SafeDumper):
    """PyYAML's safe dumper writing every repeated value out (no anchors and aliases)."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def plain_yaml(data: object) -> str:
    """``data`` as block YAML, keys in their order, repeated values written out."""
    return yaml.dump(data, Dumper=_Plain, sort_keys=False, default_flow_style=False)


def options_here(command: Launch) -> str:
    """Shell lines writing TensorRT-LLM's options file from a quoted here-document ("" for an
    engine without one)."""
    if command.options_file is None:
        return ""
    options = plain_yaml(command.options_file)
    return f"cat > {OPTIONS_FILE} <<'PLANNER_OPTIONS_END'\n{options}PLANNER_OPTIONS_END\n"


def launch_script(settings: LaunchSettings, command: Launch) -> str:
    """The text of ``launch-LINE.sh``: one replica of the pool started as planned."""
    notes = "".join(f"# {note}\n" for note in command.notes)
    return (
        "#!/usr/bin/env bash\n"
        f"# One replica of {settings.line}: {settings.engine} {settings.engine_version} with the "
        "plan's settings\n# (deploy/settings.json). Written by planner.\n"
        f"{notes}set -euo pipefail\n{_model_line(settings)}\n{options_here(command)}"
        f"exec {shell_line(command.argv)}\n"
    )


def script(settings: LaunchSettings, command: Launch) -> str:
    """The text of ``measure-LINE.sh`` for one pool."""
    parts = [
        _HEAD.format(
            line=settings.line,
            engine=settings.engine,
            version=settings.engine_version,
            loads=" and ".join(
                str(c) for c in sorted({load.concurrency for load in loads(settings)})
            ),
            model=_model_line(settings),
        )
    ]
    log = shell_word(f"${{OUT}}/{_file(settings, 'startup.log', STAMP_VARIABLE)}")
    parts.append('run mkdir -p "$OUT"\n')
    if command.options_file is not None:
        parts.append(f'if [ "$DRY_RUN" = 0 ]; then\n{options_here(command)}fi\n')
    parts.append(
        f'echo "starting the engine; its log:" {log}\n'
        'if [ "$DRY_RUN" = 1 ]; then\n'
        f"  run {shell_line(command.argv)}\n"
        "else\n"
        f"  {shell_line(command.argv)} > {log} 2>&1 &\n"
        "  ENGINE=$!\n"
        "  trap 'kill \"$ENGINE\" 2>/dev/null || true' EXIT\n"
        f"  until curl -sf http://127.0.0.1:{PORT}/health > /dev/null; do\n"
        '    if ! kill -0 "$ENGINE" 2>/dev/null; then\n'
        '      echo "the engine stopped; see its log" >&2; exit 1\n'
        "    fi\n"
        "    sleep 5\n"
        "  done\n"
        "fi\n"
    )
    for load in loads(settings):
        parts.append(f"run {shell_line(benchmark_argv(settings, load))}\n")
    entries = plain_yaml(index_entries(settings))
    parts.append(
        "entries() {\n"
        f"  sed \"s/{STAMP}/${{STAMP}}/g\" <<'PLANNER_INDEX_END'\n"
        f"{entries}PLANNER_INDEX_END\n"
        "}\n"
        'if [ "$DRY_RUN" = 1 ]; then echo "# index entries:"; entries; exit 0; fi\n'
        'if [ ! -s "$OUT/index.yaml" ]; then echo "measurements:" > "$OUT/index.yaml"; fi\n'
        'entries | sed "s/^/  /" >> "$OUT/index.yaml"\n'
        'echo "measured; the files and index entries are in $OUT"\n'
    )
    return "".join(parts)
