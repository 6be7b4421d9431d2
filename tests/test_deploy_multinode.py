"""A replica that spans nodes, deployed as a LeaderWorkerSet (planner.deploy.multinode): its
pods validated as Kubernetes pods, its shape held against the LeaderWorkerSet project's own
examples (tests/fixtures/deploy, kept verbatim), each engine's command parsed against its own
option list, and catalog text kept out of the leader's shell line."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from test_deploy import _settings, parsed

from planner.deploy import deploy_files
from planner.deploy.engines import launch
from planner.deploy.multinode import (
    RAY_SCRIPT,
    VLLM_DP_RPC_PORT,
    VLLM_DP_WORKER,
    VLLM_LEADER,
    leader_worker_set,
    multinode_supported,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "deploy"
BASH = shutil.which("bash") or "bash"

#: A pipeline of two 8-device H100 nodes, five replicas: DeepSeek-V3 in FP8 as planned on
#: H100s (tests/test_pipeline_parallel.py).
PIPELINE = {
    "tensor_parallel": 8,
    "pipeline_parallel": 2,
    "devices_per_replica": 16,
    "nodes_per_replica": 2,
    "replicas": 5,
    "model": "deepseek-v3",
    "model_repository": "deepseek-ai/DeepSeek-V3",
}


def example(name: str) -> dict[str, Any]:
    """The LeaderWorkerSet of a kept example."""
    return next(d for d in yaml.safe_load_all((FIXTURES / name).read_text()) if d)


def pod(template: dict[str, Any]) -> dict[str, Any]:
    """A pod template as a Pod, for the Kubernetes schema."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": template["spec"]}


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_pipeline_is_a_leader_worker_set_of_valid_pods(engine: str) -> None:
    """Five replicas of two nodes: a LeaderWorkerSet of 5 groups of 2 pods, each pod 8 of its
    replica's 16 devices on nodes of the planned hardware, and a Service of the leaders; every
    pod a valid Kubernetes 1.33 pod (additional properties refused), the Service too."""
    settings = _settings(engine=engine, **PIPELINE)
    workload, service = leader_worker_set(settings, launch(settings))
    assert workload["kind"] == "LeaderWorkerSet"
    assert workload["spec"]["replicas"] == 5
    group = workload["spec"]["leaderWorkerTemplate"]
    assert group["size"] == 2
    for role in ("leaderTemplate", "workerTemplate"):
        kubernetes_validate.validate(pod(group[role]), "1.33", strict=True)
        spec = group[role]["spec"]
        assert spec["nodeSelector"] == {"planner.io/hardware": "h100-sxm-80gb"}
        (container,) = spec["containers"]
        assert container["resources"]["limits"] == {"nvidia.com/gpu": 8}
    kubernetes_validate.validate(service, "1.33", strict=True)
    assert service["spec"]["selector"] == {
        "leaderworkerset.sigs.k8s.io/name": workload["metadata"]["name"],
        "role": "leader",
    }
    leader = group["leaderTemplate"]["spec"]["containers"][0]
    assert leader["readinessProbe"]["httpGet"]["path"] == "/health"
    assert "readinessProbe" not in group["workerTemplate"]["spec"]["containers"][0]


@pytest.mark.parametrize("file", ["lws-vllm-gpu.yaml", "lws-sglang.yaml"])
def test_the_set_has_the_shape_of_the_projects_examples(file: str) -> None:
    """The LeaderWorkerSet's API and kind, its spec's and group's fields, are those the
    project's own example writes (its networkConfig aside: a Service is written instead)."""
    kept = example(file)
    settings = _settings(engine="vllm" if "vllm" in file else "sglang", **PIPELINE)
    ours, _ = leader_worker_set(settings, launch(settings))
    assert (ours["apiVersion"], ours["kind"]) == (kept["apiVersion"], kept["kind"])
    assert set(ours["spec"]) <= set(kept["spec"])
    group, theirs = ours["spec"]["leaderWorkerTemplate"], kept["spec"]["leaderWorkerTemplate"]
    assert set(group) == set(theirs) and group["restartPolicy"] == theirs["restartPolicy"]


def _flags(argv: list[str]) -> dict[str, str]:
    return dict(zip(argv[::2], argv[1::2], strict=False))


def test_sglangs_pods_meet_at_the_leader_as_the_example_does() -> None:
    """Leader and workers run the same command, parsed against SGLang's own option list, with
    the example's rendezvous: the leader's address at port 20,000, the group's size and each
    pod's index, filled in by Kubernetes from the set's variables."""
    settings = _settings(engine="sglang", **PIPELINE)
    workload, _ = leader_worker_set(settings, launch(settings))
    group = workload["spec"]["leaderWorkerTemplate"]
    kept = example("lws-sglang.yaml")["spec"]["leaderWorkerTemplate"]
    theirs = _flags(kept["leaderTemplate"]["spec"]["containers"][0]["command"][3:])
    for role in ("leaderTemplate", "workerTemplate"):
        container = group[role]["spec"]["containers"][0]
        argv = (*container["command"], *container["args"])
        flags = parsed("sglang", argv)
        for flag in ("--dist-init-addr", "--nnodes", "--node-rank"):
            assert flags[flag] == theirs[flag]
        assert (flags["--tp-size"], flags["--pp-size"]) == ("8", "2")


def test_vllms_leader_starts_ray_then_the_engine_and_workers_join() -> None:
    """The leader runs the image's Ray script as the example does, then the engine's command
    (parsed against vLLM's own options) as the shell's positional parameters; each worker joins
    the leader's Ray head."""
    settings = _settings(engine="vllm", **PIPELINE)
    workload, _ = leader_worker_set(settings, launch(settings))
    group = workload["spec"]["leaderWorkerTemplate"]
    kept = example("lws-vllm-gpu.yaml")["spec"]["leaderWorkerTemplate"]
    their_leader = kept["leaderTemplate"]["spec"]["containers"][0]["command"][2]
    their_worker = kept["workerTemplate"]["spec"]["containers"][0]["command"][2]
    assert f"bash {RAY_SCRIPT} leader --ray_cluster_size=" in their_leader
    leader = group["leaderTemplate"]["spec"]["containers"][0]
    assert leader["command"] == ["bash"]
    assert leader["args"][:3] == ["-c", VLLM_LEADER, "engine"]
    flags = parsed("vllm", tuple(leader["args"][3:]))
    assert (flags["--tensor-parallel-size"], flags["--pipeline-parallel-size"]) == ("8", "2")
    assert flags["model"] == "deepseek-ai/DeepSeek-V3"
    worker = group["workerTemplate"]["spec"]["containers"][0]
    assert " ".join(worker["command"] + worker["args"]) == their_worker
    assert worker["command"] + worker["args"] == [
        "bash", RAY_SCRIPT, "worker", "--ray_address=$(LWS_LEADER_ADDRESS)",
    ]  # fmt: skip


def test_the_leaders_shell_line_keeps_catalog_text_as_words(tmp_path: Path) -> None:
    """The leader's line run by bash with the Ray script replaced by one that succeeds: the
    engine's arguments, a model name written with shell syntax among them, reach the command
    word for word, and nothing in them runs."""
    name = "Evil $(touch pwned) `touch pwned2`; touch pwned3"
    ray = tmp_path / "ray.sh"
    ray.write_text("exit 0\n")
    line = VLLM_LEADER.replace(RAY_SCRIPT, str(ray))
    done = subprocess.run(
        [BASH, "-c", line, "engine", "printf", "%s\\n", "--served-model-name", name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "LWS_GROUP_SIZE": "2"},
        check=True,
    )
    assert done.stdout.splitlines() == ["--served-model-name", name]
    assert not list(tmp_path.glob("pwned*"))


def test_a_run_writes_the_set_where_an_engine_starts_over_nodes() -> None:
    """The deploy folder of a pipeline line: its manifest the LeaderWorkerSet for vLLM and
    SGLang, none for TensorRT-LLM (which starts its ranks with MPI), whose launch script says
    how it is started; an expert-parallel replica of two nodes: SGLang's set and vLLM's."""
    for engine, written in (("vllm", True), ("sglang", True), ("tensorrt-llm", False)):
        settings = _settings(engine=engine, **PIPELINE)
        assert multinode_supported(settings) is written
    experts = dataclasses.replace(
        _settings(**PIPELINE), pipeline_parallel=1, tensor_parallel=16, expert_parallel=16
    )
    assert multinode_supported(dataclasses.replace(experts, engine="sglang"))
    assert multinode_supported(experts)
    assert not multinode_supported(dataclasses.replace(experts, engine="tensorrt-llm"))
    note = " ".join(launch(experts).notes)
    assert "spans 2 nodes of 8 devices" in note and "pipeline" not in note


def test_a_pipeline_lines_deploy_folder_holds_its_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """deploy_files writes LINE.yaml as the set where the settings span nodes."""
    import planner.deploy as deploy

    settings = _settings(engine="sglang", **PIPELINE)
    monkeypatch.setattr(deploy, "line_settings", lambda catalog, lines: [settings])
    files = deploy_files(None, [])  # type: ignore[arg-type]
    kinds = [d["kind"] for d in yaml.safe_load_all(files["chat.yaml"])]
    assert kinds == ["LeaderWorkerSet", "Service"]
    tensorrt = dataclasses.replace(settings, engine="tensorrt-llm")
    monkeypatch.setattr(deploy, "line_settings", lambda catalog, lines: [tensorrt])
    assert "chat.yaml" not in deploy_files(None, [])  # type: ignore[arg-type]


#: An expert-parallel replica of four 8-device nodes (EP 32, data-parallel attention), two
#: replicas: SGLang's prefill layout of DeepSeek-V3 on H100s, served by vLLM.
EXPERTS = PIPELINE | {
    "pipeline_parallel": 1,
    "tensor_parallel": 32,
    "expert_parallel": 32,
    "devices_per_replica": 32,
    "nodes_per_replica": 4,
    "replicas": 2,
}


def _guide() -> tuple[dict[str, Any], dict[str, Any]]:
    """The flags of vLLM's own two-node start-up (the guide's node 0 and node 1), parsed."""
    text = (FIXTURES / "vllm-data-parallel-deployment.md").read_text()
    block = text.split("```bash\n")[1].split("```")[0].replace("\\\n", " ")
    nodes = [line.split() for line in block.splitlines() if line.startswith("vllm serve")]
    head, other = (parsed("vllm", ("vllm", "serve", *words[2:])) for words in nodes)
    assert head.pop("model") == other.pop("model") == "$MODEL"
    return head, other


def test_vllms_expert_parallel_ranks_start_over_nodes_as_its_guide_does() -> None:
    """Every pod runs ``vllm serve`` (parsed against vLLM's own options) with the flags of the
    guide's node 0 (the leader) or node 1 (a worker): the replica's data-parallel size, its
    node's 8 ranks, the leader's address and the guide's RPC port; a worker headless, from the
    rank its index gives. No Ray."""
    head, other = _guide()
    assert set(head) == {"--data-parallel-size", "--data-parallel-size-local",
                         "--data-parallel-address", "--data-parallel-rpc-port"}  # fmt: skip
    assert set(other) == set(head) | {"--headless", "--data-parallel-start-rank"}
    assert head["--data-parallel-rpc-port"] == str(VLLM_DP_RPC_PORT)
    settings = _settings(engine="vllm", **EXPERTS)
    workload, _ = leader_worker_set(settings, launch(settings))
    group = workload["spec"]["leaderWorkerTemplate"]
    assert (workload["spec"]["replicas"], group["size"]) == (2, 4)
    leader = group["leaderTemplate"]["spec"]["containers"][0]
    flags = parsed("vllm", (*leader["command"], *leader.get("args", [])))
    assert set(head) <= set(flags) and "--headless" not in flags
    assert flags["--data-parallel-size"] == "32" and flags["--data-parallel-size-local"] == "8"
    assert flags["--data-parallel-address"] == "$(LWS_LEADER_ADDRESS)"
    assert "--enable-expert-parallel" in flags
    worker = group["workerTemplate"]["spec"]["containers"][0]
    words = [*worker["command"], *worker.get("args", [])]
    assert words[:5] == ["bash", "-c", VLLM_DP_WORKER, "engine", "8"]
    theirs = parsed("vllm", tuple(words[5:]))
    assert set(other) - {"--data-parallel-start-rank"} <= set(theirs)
    assert {k: theirs[k] for k in head} == {k: flags[k] for k in head}
    for template in (group["leaderTemplate"], group["workerTemplate"]):
        assert template["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 8


@pytest.mark.parametrize(("index", "rank"), [(1, "8"), (3, "24")])
def test_a_vllm_workers_first_rank_is_its_index_times_its_nodes_ranks(
    tmp_path: Path, index: int, rank: str
) -> None:
    """The worker's shell line run by bash, the engine replaced by printf: the engine's words
    arrive as they are (a model name written with shell syntax runs nothing), then the start
    rank, the group index × 8."""
    name = "Evil $(touch pwned) `touch pwned2`; touch pwned3"
    done = subprocess.run(
        [BASH, "-c", VLLM_DP_WORKER, "engine", "8", "printf", "%s\\n", "--served-model-name", name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "LWS_WORKER_INDEX": str(index)},
        check=True,
    )
    start = ["--data-parallel-start-rank", rank]
    assert done.stdout.splitlines() == ["--served-model-name", name, *start]
    assert not list(tmp_path.glob("pwned*"))
