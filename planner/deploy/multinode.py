"""A replica that spans nodes as a LeaderWorkerSet: one pod a node, started together.

A pipeline's stages, a node each, or an expert-parallel replica larger than a node cannot be one
pod, since a pod's devices are one node's. The LeaderWorkerSet API (kubernetes-sigs/lws, the
``leaderworkerset.x-k8s.io/v1`` custom resource) keeps each replica's pods as a group: a leader
pod and ``size − 1`` workers, created, scheduled and restarted together, each told the leader's
address (``LWS_LEADER_ADDRESS``), the group's size (``LWS_GROUP_SIZE``) and its own index
(``LWS_WORKER_INDEX``). The engines start over those as the project's own examples do
(``tests/fixtures/deploy/``, kept verbatim):

- SGLang: every pod runs the same command with ``--nnodes``, ``--node-rank`` and
  ``--dist-init-addr`` (the leader's address); the leader serves.
- vLLM, a pipeline: a Ray cluster, the leader its head (the image's ``multi-node-serving.sh
  leader``, which waits for the workers to join), then the server on the leader; each worker
  joins the head (``multi-node-serving.sh worker``).
- vLLM, an expert-parallel replica (data-parallel attention over nodes): ``vllm serve`` on every
  pod with the replica's data-parallel size, the ranks of its own node
  (``--data-parallel-size-local``) and the leader's address and RPC port; the leader serves,
  each worker runs ``--headless`` from its first rank, index × ranks a node
  (``--data-parallel-start-rank``), as vLLM's data-parallel deployment guide starts one over
  two nodes (``tests/fixtures/deploy/vllm-data-parallel-deployment.md``).
- TensorRT-LLM starts its ranks with MPI over ssh between the pods, which needs an image of its
  own: not written.

The shell lines are constants of this module, and the engine's arguments follow them as
positional parameters (``"$@"``), so no catalog text is ever shell syntax. A Service selects each
group's leader.
"""

from __future__ import annotations

from typing import Any

from planner.deploy.engines import Launch
from planner.deploy.manifests import (
    annotations_of,
    engine_container,
    labels_of,
    resource_name,
    service,
    serving,
    shared_memory,
)
from planner.deploy.settings import NODE_LABEL, LaunchSettings

__all__ = ["LWS_API", "leader_worker_set", "multinode_supported"]

#: The LeaderWorkerSet custom resource's API version.
LWS_API = "leaderworkerset.x-k8s.io/v1"

#: The label LeaderWorkerSet puts on every pod of a set, its name.
SET_LABEL = "leaderworkerset.sigs.k8s.io/name"

#: vLLM's script that starts or joins a Ray cluster, as its images carry it.
RAY_SCRIPT = "/vllm-workspace/examples/online_serving/multi-node-serving.sh"

#: The vLLM leader's shell line: the Ray head, waiting for the group, then the engine's own
#: command, given as the positional parameters (never parsed by the shell).
VLLM_LEADER = f'bash {RAY_SCRIPT} leader --ray_cluster_size="$LWS_GROUP_SIZE" && exec "$@"'

#: The port SGLang's ranks meet on at the leader.
SGLANG_INIT_PORT = 20000

#: The port vLLM's data-parallel ranks reach the leader's coordinator on (the guide's).
VLLM_DP_RPC_PORT = 13345

#: A vLLM worker's shell line for an expert-parallel replica: its first data-parallel rank is
#: its index in the group × the ranks a node (the first positional parameter, a number the
#: plan writes), then the engine's command as the remaining parameters (never parsed).
VLLM_DP_WORKER = 'n="$1"; shift; exec "$@" --data-parallel-start-rank "$((LWS_WORKER_INDEX * n))"'


def multinode_supported(settings: LaunchSettings) -> bool:
    """Whether a LeaderWorkerSet is written for a replica of several nodes: SGLang's and
    vLLM's (a pipeline over Ray, or an expert-parallel replica's data-parallel ranks)."""
    return settings.engine in ("sglang", "vllm")


def _commands(
    settings: LaunchSettings, argv: list[str], devices: int
) -> tuple[list[str], list[str]]:
    """The leader's and a worker's command lines (the first word the command); ``devices``
    the devices of each node of the replica."""
    if settings.engine == "sglang":
        ranks = ["--nnodes", "$(LWS_GROUP_SIZE)", "--node-rank", "$(LWS_WORKER_INDEX)"]
        meet = ["--dist-init-addr", f"$(LWS_LEADER_ADDRESS):{SGLANG_INIT_PORT}"]
        both = [*argv, *meet, *ranks]
        return both, both
    if settings.expert_parallel > 1:
        local = str(devices)  # a data-parallel rank a device
        meet = ["--data-parallel-size-local", local]
        meet += ["--data-parallel-address", "$(LWS_LEADER_ADDRESS)"]
        meet += ["--data-parallel-rpc-port", str(VLLM_DP_RPC_PORT)]
        worker = ["bash", "-c", VLLM_DP_WORKER, "engine", local, *argv, "--headless", *meet]
        return [*argv, *meet], worker
    leader = ["bash", "-c", VLLM_LEADER, "engine", *argv]
    return leader, ["bash", RAY_SCRIPT, "worker", "--ray_address=$(LWS_LEADER_ADDRESS)"]


def _pod(settings: LaunchSettings, container: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeSelector": {NODE_LABEL: settings.hardware},
        "containers": [container],
        "volumes": [shared_memory()],
    }


def leader_worker_set(settings: LaunchSettings, command: Launch) -> list[dict[str, Any]]:
    """The LeaderWorkerSet of a pool whose replicas span nodes, and the Service of its leaders:
    the replicas planned, each a group of one pod a node holding that node's share of its
    devices. Only where :func:`multinode_supported`."""
    if not multinode_supported(settings):
        raise ValueError(f"no multi-node manifest is written for {settings.engine}'s layout")
    name = resource_name(settings.line)
    labels = labels_of(settings)
    nodes = settings.nodes_per_replica
    devices = settings.devices_per_replica // nodes
    leads, works = _commands(settings, list(command.argv), devices)
    leader = serving(engine_container(settings, leads, devices))
    worker = engine_container(settings, works, devices)
    group = {
        "size": nodes,
        "restartPolicy": "RecreateGroupOnPodRestart",
        "leaderTemplate": {
            "metadata": {"labels": labels | {"role": "leader"}},
            "spec": _pod(settings, leader),
        },
        "workerTemplate": {
            "metadata": {"labels": labels | {"role": "worker"}},
            "spec": _pod(settings, worker),
        },
    }
    workload = {
        "apiVersion": LWS_API,
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "labels": labels, "annotations": annotations_of(settings)},
        "spec": {"replicas": settings.replicas, "leaderWorkerTemplate": group},
    }
    return [workload, service(settings, {SET_LABEL: name, "role": "leader"})]
