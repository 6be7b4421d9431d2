"""A Kubernetes Deployment and Service per pool of a line: the replicas planned, each with its
devices, on nodes labelled with the planned hardware (``planner.io/hardware``), running the
engine command of :mod:`planner.deploy.engines`.

The manifest is built as data and written with PyYAML's safe dumper, so every catalog string is
a YAML string; the tests validate it against the Kubernetes API's own schema.
"""

from __future__ import annotations

import re
from typing import Any

from planner.deploy.engines import IMAGES, MODEL, OPTIONS_FILE, PORT, Launch
from planner.deploy.kit import plain_yaml
from planner.deploy.settings import NODE_LABEL, LaunchSettings

__all__ = ["manifest", "manifest_text", "release", "resource_name"]

#: Memory for the engine's pages of shared memory (tensor-parallel workers exchange through it).
SHARED_MEMORY = "16Gi"

#: Where a TensorRT-LLM container finds its options file.
OPTIONS_FOLDER = "/etc/planner"


def resource_name(line: str) -> str:
    """A line's name as Kubernetes names an object: lower case letters, digits and hyphens, at
    most 63 characters, starting and ending with a letter or digit."""
    name = re.sub(r"[^a-z0-9-]+", "-", line.lower()).strip("-")[:63].strip("-")
    return name or "line"


def release(version: str) -> str:
    """A release as the engines tag their images: three numbers (``0.11`` is ``0.11.0``)."""
    parts = version.split(".")
    return ".".join(parts + ["0"] * (3 - len(parts)))


def labels_of(settings: LaunchSettings) -> dict[str, str]:
    """The labels every object of a pool carries."""
    return {
        "app.kubernetes.io/name": resource_name(settings.line),
        "app.kubernetes.io/part-of": "planner",
    }


def annotations_of(settings: LaunchSettings) -> dict[str, str]:
    """What the plan assumed of a pool's engine, as its workload object's annotations."""
    return {
        "planner.io/workload": settings.workload,
        "planner.io/model": settings.model,
        "planner.io/precision": settings.precision,
        "planner.io/engine": f"{settings.engine} {settings.engine_version}",
    }


def engine_container(settings: LaunchSettings, argv: list[str], devices: int) -> dict[str, Any]:
    """The engine's container running ``argv`` (its first word the command) with ``devices``
    devices and the shared memory mounted; the model its repository, else ``$(MODEL)``, a
    variable the user sets to the checkpoint planned. No port or probe: a server adds them
    (:func:`serving`)."""
    model = settings.model_repository or "$(MODEL)"
    container: dict[str, Any] = {
        "name": "engine",
        "image": IMAGES[settings.engine].format(version=release(settings.engine_version)),
        "command": argv[:1],
        "args": [model if a == MODEL else a for a in argv[1:]],
        "resources": {
            "limits": {settings.device_resource: devices},
            "requests": {settings.device_resource: devices},
        },
        "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
    }
    if settings.model_repository is None:
        container["env"] = [{"name": "MODEL", "value": f"set to {settings.checkpoint}"}]
    return container


def serving(container: dict[str, Any]) -> dict[str, Any]:
    """The container with the engine's HTTP port and a readiness probe on its health."""
    probe = {
        "httpGet": {"path": "/health", "port": PORT},
        "periodSeconds": 10,
        "failureThreshold": 60,
    }
    return container | {"ports": [{"name": "http", "containerPort": PORT}], "readinessProbe": probe}


def shared_memory() -> dict[str, Any]:
    """The volume of the engine's shared memory."""
    return {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": SHARED_MEMORY}}


def service(settings: LaunchSettings, selector: dict[str, str]) -> dict[str, Any]:
    """The Service in front of a pool's serving pods (those ``selector`` picks)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": resource_name(settings.line), "labels": labels_of(settings)},
        "spec": {
            "selector": selector,
            "ports": [{"name": "http", "port": PORT, "targetPort": "http"}],
        },
    }


def manifest(settings: LaunchSettings, command: Launch) -> list[dict[str, Any]]:
    """The Deployment and the Service of one pool (after a ConfigMap of TensorRT-LLM's
    options)."""
    name = resource_name(settings.line)
    labels = labels_of(settings)
    container = serving(
        engine_container(settings, list(command.argv), settings.devices_per_replica)
    )
    volumes: list[dict[str, Any]] = [shared_memory()]
    documents: list[dict[str, Any]] = []
    if command.options_file is not None:  # TensorRT-LLM's options, from a ConfigMap
        documents.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"{name}-options"[:63], "labels": labels},
                "data": {OPTIONS_FILE: plain_yaml(command.options_file)},
            }
        )
        volumes.append({"name": "options", "configMap": {"name": f"{name}-options"[:63]}})
        container["volumeMounts"].append({"name": "options", "mountPath": OPTIONS_FOLDER})
        placed = f"{OPTIONS_FOLDER}/{OPTIONS_FILE}"
        container["args"] = [placed if a == OPTIONS_FILE else a for a in container["args"]]
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels, "annotations": annotations_of(settings)},
        "spec": {
            "replicas": settings.replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": {NODE_LABEL: settings.hardware},
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }
    return [*documents, deployment, service(settings, labels)]


def manifest_text(documents: list[dict[str, Any]]) -> str:
    """The documents as one YAML stream."""
    return "---\n".join(plain_yaml(d) for d in documents)
