"""Multinode rendering: one focused test per backend and orchestrator rule (ports, flags, probes)."""

from __future__ import annotations

from typing import Any

import pytest

from dynamo_infra.api import DynamoValidationError, v1beta1
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import RenderedGraph, render_graph
from dynamo_infra.render.workloads.grove import fnv32a, pcs_name
from tests.dcd import render_dcd

NS = "team"
IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0"
LWS = {"multinode": {"orchestrator": "lws"}}
GROVE = {"multinode": {"orchestrator": "grove"}}


def worker(
    name: str = "w", *, nodes: int = 2, gpus: int = 1, command: list[str] | None = None, **extra: Any
) -> dict[str, Any]:
    main: dict[str, Any] = {
        "name": "main",
        "image": IMAGE,
        "command": command or ["python3", "-m", "dynamo.vllm"],
        "args": extra.pop("args", ["--model", "m", "--tensor-parallel-size", "2"]),
        "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
    }
    c: dict[str, Any] = {
        "name": name,
        "type": "worker",
        "podTemplate": {"spec": {"containers": [main]}},
        **extra,
    }
    if nodes > 1:
        c["multinode"] = {"nodeCount": nodes}
    return c


def graph(
    *components: dict[str, Any], annotations: dict[str, str] | None = None, **spec: Any
) -> v1beta1.DynamoGraphDeployment:
    meta: dict[str, Any] = {"name": "g"}
    if annotations:
        meta["annotations"] = annotations
    return v1beta1.DynamoGraphDeployment.parse(
        {
            "apiVersion": v1beta1.API_VERSION,
            "kind": "DynamoGraphDeployment",
            "metadata": meta,
            "spec": {"components": list(components), **spec},
        }
    )


def render(dgd: v1beta1.DynamoGraphDeployment, **options: Any) -> RenderedGraph:
    return render_graph(dgd, ClusterOptions.parse(options), NS)


def lws_of(r: RenderedGraph, name: str = "w") -> dict[str, Any]:
    return next(o for o in r.components[name].objects if o["kind"] == "LeaderWorkerSet")


def lws_main(r: RenderedGraph, role: str, name: str = "w") -> dict[str, Any]:
    spec: dict[str, Any] = lws_of(r, name)["spec"]["leaderWorkerTemplate"][f"{role}Template"]["spec"]
    return spec


def clique(r: RenderedGraph, name: str) -> dict[str, Any]:
    return next(c for c in r.workloads[0]["spec"]["template"]["cliques"] if c["name"] == name)


def env(c: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env") or []}


# --- vLLM -------------------------------------------------------------------------------------


def test_vllm_mp_leader_and_worker_flags_on_lws() -> None:
    r = render(graph(worker()), **LWS)
    leader = lws_main(r, "leader")["containers"][0]
    w = lws_main(r, "worker")["containers"][0]
    mp = [
        "--distributed-executor-backend",
        "mp",
        "--nnodes",
        "2",
        "--master-addr",
        "$(LWS_LEADER_ADDRESS)",
        "--master-port",
        "29500",
    ]
    assert leader["args"][4:] == [*mp, "--node-rank", "0"]
    assert w["args"][4:] == [*mp, "--node-rank", "$(LWS_WORKER_INDEX)", "--headless"]
    assert env(leader)["VLLM_NIXL_SIDE_CHANNEL_HOST"] == {"fieldRef": {"fieldPath": "status.podIP"}}
    assert "readinessProbe" in leader and "livenessProbe" in leader and "startupProbe" in leader
    assert not any(k.endswith("Probe") for k in w)


def test_vllm_mp_worker_waits_for_leader() -> None:
    r = render(graph(worker()), **LWS)
    spec = lws_main(r, "worker")
    (init,) = spec["initContainers"]
    assert init["name"] == "wait-for-leader-mp" and init["image"] == IMAGE
    assert init["command"] == [
        "sh",
        "-c",
        'export LEADER_HOST="${LWS_LEADER_ADDRESS}" LEADER_PORT="29500" && exec python3 /scripts/wait-for-leader.py',
    ]
    assert {"name": "wait-leader-script", "configMap": {"name": "g-wait-leader-script"}} in spec["volumes"]
    assert "initContainers" not in lws_main(r, "leader")
    cm = next(o for o in r.shared if o["kind"] == "ConfigMap")
    assert cm["metadata"]["name"] == "g-wait-leader-script" and "wait-for-leader.py" in cm["data"]


def test_vllm_ray_executor_before_origin_1_0_or_by_annotation() -> None:
    for meta in (
        {"nvidia.com/dynamo-operator-origin-version": "0.9.0"},
        {"nvidia.com/vllm-distributed-executor-backend": "ray"},
    ):
        r = render(graph(worker(), annotations=meta), **LWS)
        leader = lws_main(r, "leader")["containers"][0]
        w = lws_main(r, "worker")["containers"][0]
        assert leader["command"] == ["/bin/sh", "-c"]
        assert leader["args"] == [
            "ray start --head --port=6379 && python3 -m dynamo.vllm --model m --tensor-parallel-size 2 --distributed-executor-backend ray"
        ]
        assert w["args"] == ["ray start --address=$(LWS_LEADER_ADDRESS):6379 --block"]
        assert "VLLM_NIXL_SIDE_CHANNEL_HOST" not in env(leader)
        assert "initContainers" not in lws_main(r, "worker")


def test_vllm_no_flags_when_the_model_fits_one_node() -> None:
    r = render(graph(worker(gpus=2)), **LWS)
    assert lws_main(r, "leader")["containers"][0]["args"] == ["--model", "m", "--tensor-parallel-size", "2"]


def test_vllm_data_parallel_hybrid_lb() -> None:
    args = ["--model", "m", "-tp", "1", "--data-parallel-size", "4"]
    r = render(graph(worker(gpus=2, args=args)), **LWS)
    leader = lws_main(r, "leader")["containers"][0]
    w = lws_main(r, "worker")["containers"][0]
    common = ["--data-parallel-address", "$(LWS_LEADER_ADDRESS)", "--data-parallel-rpc-port", "13445"]
    assert leader["args"][len(args) :] == [
        "--data-parallel-hybrid-lb", "--data-parallel-size-local", "2", "--data-parallel-start-rank", "0", *common
    ]  # fmt: skip
    assert w["command"] == ["sh", "-c"]
    assert w["args"] == [
        "exec python3 -m dynamo.vllm --model m -tp 1 --data-parallel-size 4 --data-parallel-hybrid-lb "
        "--data-parallel-size-local 2 --data-parallel-start-rank $(( 2 * $(LWS_WORKER_INDEX) )) "
        "--data-parallel-address $(LWS_LEADER_ADDRESS) --data-parallel-rpc-port 13445"
    ]


def test_vllm_flags_go_after_the_engine_in_a_shell_line() -> None:
    shell = worker(command=["/bin/sh", "-c"], args=["python3 -m dynamo.vllm --model m -tp 2 && echo done"])
    r = render(graph(shell), **LWS)
    (line,) = lws_main(r, "leader")["containers"][0]["args"]
    assert line.startswith("python3 -m dynamo.vllm --distributed-executor-backend mp --nnodes 2 ")
    assert line.endswith("--node-rank 0 --model m -tp 2 && echo done")


def test_vllm_grove_worker_rank_needs_a_shell() -> None:
    r = render(graph(worker()), **GROVE)
    w = clique(r, "w-wkr")["spec"]["podSpec"]["containers"][0]
    assert w["command"] == ["sh", "-c"]
    assert w["args"][0].endswith(
        "--master-addr $(GROVE_PCSG_NAME)-$(GROVE_PCSG_INDEX)-w-ldr-0.$(GROVE_HEADLESS_SERVICE) --master-port 29500 "
        "--node-rank $((GROVE_PCLQ_POD_INDEX + 1)) --headless"
    )
    init = clique(r, "w-wkr")["spec"]["podSpec"]["initContainers"][0]
    assert "${GROVE_PCSG_NAME}-${GROVE_PCSG_INDEX}-w-ldr-0.${GROVE_HEADLESS_SERVICE}" in init["command"][2]


# --- SGLang -----------------------------------------------------------------------------------


def sglang() -> dict[str, Any]:
    return worker(command=["python3", "-m", "dynamo.sglang"], args=["--model-path", "m"])


def test_sglang_dist_init_on_lws() -> None:
    r = render(graph(sglang()), **LWS)
    leader = lws_main(r, "leader")["containers"][0]
    w = lws_main(r, "worker")["containers"][0]
    flags = ["--dist-init-addr", "$(LWS_LEADER_ADDRESS):29500", "--nnodes", "2", "--node-rank"]
    assert leader["args"] == ["--model-path", "m", *flags, "0"]
    assert w["args"] == ["--model-path", "m", *flags, "$(LWS_WORKER_INDEX)"]
    assert "readinessProbe" in leader and not any(k.endswith("Probe") for k in w)


def test_sglang_grove_worker_rank_arithmetic() -> None:
    r = render(graph(sglang()), **GROVE)
    w = clique(r, "w-wkr")["spec"]["podSpec"]["containers"][0]
    assert w["args"] == [
        "exec python3 -m dynamo.sglang --model-path m --dist-init-addr "
        "$(GROVE_PCSG_NAME)-$(GROVE_PCSG_INDEX)-w-ldr-0.$(GROVE_HEADLESS_SERVICE):29500 --nnodes 2 "
        "--node-rank $((GROVE_PCLQ_POD_INDEX + 1))"
    ]


# --- TRT-LLM ----------------------------------------------------------------------------------


def trtllm(gpus: int = 4) -> dict[str, Any]:
    return worker(gpus=gpus, command=["python3", "-m", "dynamo.trtllm"], args=["--model-path", "m"])


def test_trtllm_ssh_secret_mount_env_and_worker_readiness() -> None:
    r = render(graph(trtllm()), **LWS)
    for role in ("leader", "worker"):
        spec = lws_main(r, role)
        main = spec["containers"][0]
        assert {
            "name": "mpi-run-ssh-secret",
            "secret": {"secretName": "mpi-run-ssh-secret", "defaultMode": 420},
        } in spec["volumes"]
        assert {"name": "mpi-run-ssh-secret", "mountPath": "/ssh-pk", "readOnly": True} in main[
            "volumeMounts"
        ]
        assert env(main)["OMPI_MCA_orte_keep_fqdn_hostnames"] == "1"
    w = lws_main(r, "worker")["containers"][0]
    assert "livenessProbe" not in w and "startupProbe" not in w
    assert w["readinessProbe"] == {
        "tcpSocket": {"port": 2222},
        "initialDelaySeconds": 20,
        "periodSeconds": 20,
        "timeoutSeconds": 5,
        "failureThreshold": 10,
    }
    assert w["args"][0].endswith("/usr/sbin/sshd -D -f $HOME/.ssh/sshd_config")
    assert "Port 2222" in w["args"][0]
    assert r.required_secrets == ("mpi-run-ssh-secret",)


def test_trtllm_leader_runs_mpirun_over_all_ranks() -> None:
    r = render(graph(trtllm()), **LWS)
    (line,) = lws_main(r, "leader")["containers"][0]["args"]
    assert "for worker in $(echo \"$LWS_LEADER_ADDRESS\" | sed 's/\\./-1\\./'); do" in line
    assert '--oversubscribe -n 8 -H $(LWS_LEADER_ADDRESS),$(echo "$LWS_LEADER_ADDRESS" | sed' in line
    assert '--mca plm_rsh_args "-p 2222 -o StrictHostKeyChecking=no -i $HOME/.ssh/id_rsa"' in line
    assert line.endswith("bash -c 'trtllm-llmapi-launch python3 -m dynamo.trtllm --model-path m'")
    assert "-x OMPI_MCA_orte_keep_fqdn_hostnames" in line and "-x HF_TOKEN" in line


def test_trtllm_grove_leader_starts_after_workers_without_dns_wait() -> None:
    r = render(graph(trtllm()), **GROVE)
    template = r.workloads[0]["spec"]["template"]
    assert template["cliqueStartupType"] == "CliqueStartupTypeExplicit"
    assert clique(r, "w-ldr")["spec"]["startsAfter"] == ["w-wkr"]
    assert "getent" not in clique(r, "w-ldr")["spec"]["podSpec"]["containers"][0]["args"][0]


def test_trtllm_custom_ssh_secret() -> None:
    r = render(graph(trtllm()), **LWS, mpi={"sshSecretName": "my-keys"})
    assert {"name": "my-keys", "secret": {"secretName": "my-keys", "defaultMode": 420}} in lws_main(
        r, "worker"
    )["volumes"]
    assert r.required_secrets == ("my-keys",)


# --- LeaderWorkerSet --------------------------------------------------------------------------


def test_lws_object_and_leader_service() -> None:
    r = render(graph(worker(replicas=3)), **LWS)
    obj = lws_of(r)
    dcd = r.components["w"].dcd_name
    assert obj["metadata"]["name"] == f"{dcd}-0"
    assert obj["spec"]["replicas"] == 3 and obj["spec"]["startupPolicy"] == "LeaderCreated"
    assert obj["spec"]["leaderWorkerTemplate"]["size"] == 2
    labels = obj["spec"]["leaderWorkerTemplate"]["workerTemplate"]["metadata"]["labels"]
    assert labels["role"] == "worker" and "nvidia.com/selector" not in labels
    svc = next(o for o in r.components["w"].objects if o["kind"] == "Service")
    assert svc["spec"]["selector"]["role"] == "leader"
    assert r.components["w"].workload_kind == "LeaderWorkerSet"


def test_lws_needs_command_and_args() -> None:
    dcd = {
        "apiVersion": v1beta1.API_VERSION,
        "kind": "DynamoComponentDeployment",
        "metadata": {"name": "d", "namespace": NS},
        "spec": {"type": "worker", "multinode": {"nodeCount": 2}},
    }
    with pytest.raises(DynamoValidationError, match="container Args cannot be empty for LWS pod"):
        render_dcd(dcd, ClusterOptions.parse(LWS))


def test_multinode_dcd_without_lws_is_a_deployment() -> None:
    dcd = {
        "apiVersion": v1beta1.API_VERSION,
        "kind": "DynamoComponentDeployment",
        "metadata": {"name": "d", "namespace": NS},
        "spec": {"type": "worker", "multinode": {"nodeCount": 2}, "backendFramework": "vllm"},
    }
    assert next(o["kind"] for o in render_dcd(dcd)) == "Deployment"


def test_no_multinode_orchestrator() -> None:
    with pytest.raises(DynamoValidationError, match="no multinode orchestrator available"):
        render(graph(worker()))
    grove_off = graph(worker(), annotations={"nvidia.com/enable-grove": "false"})
    with pytest.raises(DynamoValidationError, match="no multinode orchestrator available"):
        render(grove_off, **GROVE)
    assert render(grove_off, **GROVE, lws={"enabled": True}).pathway == "components"


# --- Grove ------------------------------------------------------------------------------------


def test_grove_cliques_and_scaling_group() -> None:
    fe = {
        "name": "fe",
        "type": "frontend",
        "replicas": 2,
        "minAvailable": 2,
        "podTemplate": {"spec": {"containers": [{"name": "main", "image": IMAGE}]}},
    }
    r = render(graph(worker(nodes=3, replicas=2), fe), **GROVE)
    pcs = r.workloads[0]
    assert r.pathway == "grove" and pcs["metadata"]["name"] == "g" and pcs["spec"]["replicas"] == 1
    template = pcs["spec"]["template"]
    assert template["terminationDelay"] == "15m0s" and template["headlessServiceConfig"] == {
        "publishNotReadyAddresses": True
    }
    assert clique(r, "fe")["spec"] | {"podSpec": None} == {
        "roleName": "fe",
        "replicas": 2,
        "minAvailable": 2,
        "podSpec": None,
    }
    assert (clique(r, "w-ldr")["spec"]["replicas"], clique(r, "w-ldr")["spec"]["minAvailable"]) == (1, 1)
    assert (clique(r, "w-wkr")["spec"]["replicas"], clique(r, "w-wkr")["spec"]["minAvailable"]) == (2, 2)
    (group,) = template["podCliqueScalingGroups"]
    assert group == {"name": "w", "cliqueNames": ["w-ldr", "w-wkr"], "replicas": 2, "minAvailable": 1}
    assert r.components["w"].scale_target == {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueScalingGroup",
        "name": "g-0-w",
        "replicas": 2,
    }
    assert r.components["fe"].scale_target["kind"] == "PodClique"
    svc = next(o for o in r.components["fe"].objects if o["kind"] == "Service")
    assert svc["metadata"]["name"] == "g-fe" and r.components["w"].dcd is None


def test_grove_pcs_name_truncation() -> None:
    long = "a-very-long-graph-name-for-grove-clusters"
    members = render(graph(worker(name="decode-worker")), **GROVE)
    assert members.workloads[0]["metadata"]["name"] == "g"
    name = pcs_name(long, [])
    assert name == long[:40] or len(name) <= 45
    r = render_graph(
        v1beta1.DynamoGraphDeployment.parse(
            {
                "apiVersion": v1beta1.API_VERSION,
                "kind": "DynamoGraphDeployment",
                "metadata": {"name": long},
                "spec": {"components": [worker(name="decode-worker")]},
            }
        ),
        ClusterOptions.parse(GROVE),
        NS,
    )
    got = r.workloads[0]["metadata"]["name"]
    budget = 45 - len("decode-worker") - len("decode-worker-wkr")
    assert got == f"{long[: budget - 5]}-{fnv32a(long) & 0xFFFF:04x}" and len(got) == budget


def test_fnv32a_matches_the_reference_vectors() -> None:
    assert fnv32a("") == 0x811C9DC5 and fnv32a("a") == 0xE40C292C and fnv32a("foobar") == 0xBF9CF968


def test_grove_update_strategy_annotation() -> None:
    r = render(graph(worker(), annotations={"nvidia.com/grove-update-strategy": "OnDelete"}), **GROVE)
    assert r.workloads[0]["spec"]["updateStrategy"] == {"type": "OnDelete"}
    with pytest.raises(DynamoValidationError, match='supported values are "RollingRecreate" and "OnDelete"'):
        render(graph(worker(), annotations={"nvidia.com/grove-update-strategy": "Rolling"}), **GROVE)


def test_grove_kai_and_volcano_schedulers() -> None:
    kai = render(
        graph(worker(), annotations={"nvidia.com/kai-scheduler-queue": "team-a"}),
        **GROVE,
        grove={"scheduler": "kai"},
    )
    c = clique(kai, "w-ldr")
    assert (
        c["spec"]["podSpec"]["schedulerName"] == "kai-scheduler"
        and c["labels"]["kai.scheduler/queue"] == "team-a"
    )
    default_queue = render(graph(worker()), **GROVE, grove={"scheduler": "kai"})
    assert clique(default_queue, "w-ldr")["labels"]["kai.scheduler/queue"] == "dynamo"
    volcano = render(
        graph(worker(), annotations={"nvidia.com/volcano-queue": "q1"}),
        **GROVE,
        grove={"scheduler": "volcano"},
    )
    assert clique(volcano, "w-wkr")["spec"]["podSpec"]["schedulerName"] == "volcano"
    assert volcano.workloads[0]["metadata"]["annotations"]["scheduling.grove.io/volcano-queue"] == "q1"


def test_grove_topology_constraints() -> None:
    w = worker(topologyConstraint={"packDomain": "rack"})
    r = render(graph(w, topologyConstraint={"clusterTopologyName": "topo"}), **GROVE)
    assert "topologyConstraint" not in r.workloads[0]["spec"]["template"]
    (group,) = r.workloads[0]["spec"]["template"]["podCliqueScalingGroups"]
    assert group["topologyConstraint"] == {"topologyName": "topo", "pack": {"required": "rack"}}
    packed = render(
        graph(w, topologyConstraint={"clusterTopologyName": "topo", "packDomain": "zone"}), **GROVE
    )
    assert packed.workloads[0]["spec"]["template"]["topologyConstraint"] == {
        "topologyName": "topo",
        "pack": {"required": "zone"},
    }
    (group,) = packed.workloads[0]["spec"]["template"]["podCliqueScalingGroups"]
    assert group["topologyConstraint"] == {"pack": {"required": "rack"}}


def test_grove_termination_delay_from_config() -> None:
    r = render(graph(worker()), **GROVE, grove={"terminationDelay": "1h30m"})
    assert r.workloads[0]["spec"]["template"]["terminationDelay"] == "1h30m0s"
    r = render(graph(worker()), **GROVE, grove={"terminationDelay": "0s"})
    assert "terminationDelay" not in r.workloads[0]["spec"]["template"]


def test_grove_scale_target_replicas_as_the_operator_scales() -> None:
    """Set replicas go to the PodClique / scaling group; unset ones are left alone; a component
    waiting for its checkpoint is held at 0 until the checkpoint is Ready."""
    fe = {
        "name": "fe",
        "type": "frontend",
        "podTemplate": {"spec": {"containers": [{"name": "main", "image": IMAGE}]}},
    }
    r = render(graph(worker(nodes=2, replicas=3), fe), **GROVE)
    assert r.components["w"].scale_target["replicas"] == 3  # type: ignore[index]
    assert r.components["fe"].scale_target["replicas"] is None  # type: ignore[index]
    waiting = worker(
        nodes=1,
        gpus=1,
        replicas=2,
        experimental={"checkpoint": {"enabled": True, "startupPolicy": "WaitForCheckpoint"}},
    )
    opts = ClusterOptions.parse({**GROVE, "checkpoint": {"enabled": True}})
    gated = render_graph(graph(waiting), opts, NS, checkpoint_ready={"w": False})
    assert gated.components["w"].scale_target["replicas"] == 0  # type: ignore[index]
    ready = render_graph(graph(waiting), opts, NS, checkpoint_ready={"w": True})
    assert ready.components["w"].scale_target["replicas"] == 2  # type: ignore[index]
