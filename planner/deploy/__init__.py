"""From the plan to a running engine: per line of the ask, the engine command, a Kubernetes
manifest and a measurement kit, all from the settings the line was planned with
(:mod:`planner.deploy.settings`).

:func:`deploy_files` gives the files of a run folder's ``deploy/`` (name → text), and
:func:`write_deploy` writes them; lines answered by a hosted API have none. Per pool of a line
(one, or a disaggregated line's prefill and decode pools):

- ``launch-LINE.sh``: one replica started as planned;
- ``LINE.yaml``: a Deployment (the replicas planned, the devices of one, nodes of the planned
  hardware) and a Service; for a replica of several nodes (a pipeline's stages, an
  expert-parallel replica larger than a node), which one pod cannot hold, a LeaderWorkerSet of
  one pod a node (:mod:`planner.deploy.multinode`), where the engine's multi-node launch is
  written (SGLang's and vLLM's), else none (its launch script says how it is started);
- ``measure-LINE.sh``: the measurement kit (:mod:`planner.deploy.kit`);
- ``settings.json``: every pool's settings, which ``planner measure check`` compares
  measurements with.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from planner.deploy.engines import launch
from planner.deploy.kit import launch_script, script
from planner.deploy.manifests import manifest, manifest_text
from planner.deploy.multinode import leader_worker_set, multinode_supported
from planner.deploy.settings import LaunchSettings, launch_settings

if TYPE_CHECKING:
    from planner.catalog import Catalog
    from planner.plan.deployment import Line

__all__ = [
    "FOLDER",
    "SETTINGS",
    "deploy_files",
    "line_settings",
    "write_deploy",
    "write_deploy_files",
]

#: The run folder's folder of launch files, and its settings file.
FOLDER = "deploy"
SETTINGS = "settings.json"


def line_settings(catalog: Catalog, lines: Iterable[Line]) -> list[LaunchSettings]:
    """The settings of every pool of the lines that run on devices (an API line has none)."""
    from planner.plan.deployment import API

    return [s for line in lines if line.advice != API for s in launch_settings(catalog, line.row)]


def deploy_files(catalog: Catalog, lines: Iterable[Line]) -> dict[str, str]:
    """The files of ``deploy/``, name → text (see the module docstring)."""
    pools = line_settings(catalog, lines)
    files: dict[str, str] = {}
    for settings in pools:
        command = launch(settings)
        files[f"launch-{settings.line}.sh"] = launch_script(settings, command)
        if settings.nodes_per_replica == 1:  # a pod is one node's devices at most
            files[f"{settings.line}.yaml"] = manifest_text(manifest(settings, command))
        elif multinode_supported(settings):
            files[f"{settings.line}.yaml"] = manifest_text(leader_worker_set(settings, command))
        files[f"measure-{settings.line}.sh"] = script(settings, command)
    files[SETTINGS] = json.dumps([s.to_dict() for s in pools], indent=2) + "\n"
    return files


def write_deploy(catalog: Catalog, lines: Iterable[Line], folder: Path) -> None:
    """Write ``deploy/`` at ``folder`` (a new folder); the scripts executable."""
    write_deploy_files(deploy_files(catalog, lines), folder)


def write_deploy_files(files: dict[str, str], folder: Path) -> None:
    """Write the files (name → text) into ``folder``, a new folder; the scripts executable."""
    folder.mkdir()
    for name, text in files.items():
        path = folder / name
        path.write_text(text)
        if name.endswith(".sh"):
            os.chmod(path, 0o755)
