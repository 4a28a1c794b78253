"""1.6 multinode roles rendered as the operator does: role pod templates, the portable topology aliases,
Grove provider overrides and forced scaling groups.

Expectations are worked out from the 1.6-era operator source: tu-kim/dynamo@3f3d3dfa22e790642d10c1ffcf5d72750f4f91a8
`deploy/operator/internal/dynamo/graph.go` (buildCliqueForRole, generateBasePodSpec,
addMultinodeTopologyEnvVars, expandSingleNodeScalingGroupRoles, buildGroveScalingGroupConfig),
`backend_vllm.go` (UpdateContainer with role launch ownership, injectMpDistributedLaunchFlags,
UpdatePodSpec), `lws.go` / `grove.go` (GetLeaderHostname, GetPodRank); and
`deploy/operator/internal/provideroverride/grove.go` (ComposeGroveOverrides) at upstream 2a6da14c8.
The graph is the doc's example (tests/data/graphs/role_specific_multinode.yaml).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from dynamo_infra.api import DynamoValidationError, v1beta1
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import RenderedGraph, render_graph
from dynamo_infra.render.context import GraphContext
from dynamo_infra.render.workloads.dcd import generate_dcd
from tests.dcd import render_dcd

NS = "team"
EXAMPLE = Path(__file__).parents[1] / "data" / "graphs" / "role_specific_multinode.yaml"
LWS = {"multinode": {"orchestrator": "lws"}}
GROVE = {"multinode": {"orchestrator": "grove"}}
# A graph created by a 1.6 operator (the aliases' compatibility gate).
ORIGIN_16 = {"operatorOriginVersion": "1.6.0"}
GROVE_LEADER = "$(GROVE_PCSG_NAME)-$(GROVE_PCSG_INDEX)-decode-ldr-0.$(GROVE_HEADLESS_SERVICE)"
AUTHORED_ARGS = [
    "--model",
    "Qwen/Qwen3-8B",
    "--tensor-parallel-size",
    "2",
    "--distributed-executor-backend",
    "mp",
    "--nnodes",
    "2",
    "--node-rank",
    "$(DYNAMO_RANK)",
    "--master-addr",
    "$(DYNAMO_LEADER_ADDRESS)",
]
NIXL_HOST = {"fieldRef": {"fieldPath": "status.podIP"}}


def example() -> dict[str, Any]:
    raw: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    return raw


def render(raw: dict[str, Any], **options: Any) -> RenderedGraph:
    return render_graph(v1beta1.DynamoGraphDeployment.parse(raw), ClusterOptions.parse(options), NS)


def lws_templates(r: RenderedGraph) -> tuple[dict[str, Any], dict[str, Any]]:
    lws = next(o for o in r.components["decode"].objects if o["kind"] == "LeaderWorkerSet")
    t = lws["spec"]["leaderWorkerTemplate"]
    return t["leaderTemplate"], t["workerTemplate"]


def cliques(r: RenderedGraph) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in r.workloads[0]["spec"]["template"]["cliques"]}


def main(pod: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in pod["containers"] if c["name"] == "main")


def env(c: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env") or []}


# --- role pod templates -------------------------------------------------------------------------


def test_lws_leader_and_worker_pods_come_from_their_role_templates() -> None:
    leader, worker = lws_templates(render(example(), **LWS))
    assert leader["spec"]["nodeSelector"] == {"example.com/engine-role": "leader"}
    assert worker["spec"]["nodeSelector"] == {"example.com/engine-role": "worker"}
    assert leader["metadata"]["labels"]["role"] == "leader"
    assert worker["metadata"]["labels"]["role"] == "worker"
    for pod in (leader["spec"], worker["spec"]):
        assert main(pod)["image"] == "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.6.0"
        assert main(pod)["command"] == ["python3", "-m", "dynamo.vllm"]
        assert main(pod)["resources"] == {"limits": {"nvidia.com/gpu": "1"}}
        assert env(main(pod))["VLLM_NIXL_SIDE_CHANNEL_HOST"] == NIXL_HOST


def test_role_templates_own_the_vllm_launch_but_the_master_port() -> None:
    """roleLaunchOwnedByPodTemplate: no generated mp flags; `--master-port 29500` appended once."""
    leader, worker = lws_templates(render(example(), **LWS))
    assert main(leader["spec"])["args"] == [*AUTHORED_ARGS, "--master-port", "29500"]
    assert main(worker["spec"])["args"] == [*AUTHORED_ARGS, "--headless", "--master-port", "29500"]
    raw = example()
    for role in raw["spec"]["components"][0]["roles"]:
        role["podTemplate"]["spec"]["containers"][0]["args"] += ["--master-port", "29500"]
    leader, _ = lws_templates(render(raw, **LWS))
    assert main(leader["spec"])["args"] == [*AUTHORED_ARGS, "--master-port", "29500"]


def test_role_template_workers_keep_the_wait_for_leader_init_and_lose_probes() -> None:
    leader, worker = lws_templates(render(example(), **LWS))
    assert "livenessProbe" in main(leader["spec"])
    assert not {"livenessProbe", "readinessProbe", "startupProbe"} & set(main(worker["spec"]))
    init = worker["spec"]["initContainers"][0]
    assert init["name"] == "wait-for-leader-mp"
    assert init["command"][2].startswith('export LEADER_HOST="${LWS_LEADER_ADDRESS}" LEADER_PORT="29500"')
    assert "initContainers" not in leader["spec"]


def test_grove_cliques_come_from_their_role_templates() -> None:
    r = render(example(), **GROVE)
    cl = cliques(r)
    assert sorted(cl) == ["decode-ldr", "decode-wkr"]
    ldr, wkr = cl["decode-ldr"]["spec"], cl["decode-wkr"]["spec"]
    assert ldr["replicas"] == 1 and wkr["replicas"] == 1
    assert ldr["podSpec"]["nodeSelector"] == {"example.com/engine-role": "leader"}
    assert wkr["podSpec"]["nodeSelector"] == {"example.com/engine-role": "worker"}
    assert main(ldr["podSpec"])["args"] == [*AUTHORED_ARGS, "--master-port", "29500"]
    assert main(wkr["podSpec"])["args"] == [*AUTHORED_ARGS, "--headless", "--master-port", "29500"]
    init = wkr["podSpec"]["initContainers"][0]
    assert init["command"][2].startswith(
        'export LEADER_HOST="${GROVE_PCSG_NAME}-${GROVE_PCSG_INDEX}-decode-ldr-0.${GROVE_HEADLESS_SERVICE}"'
    )
    # Runtime 1.6.0 (the role templates' image) puts the worker hash on Grove worker cliques.
    whash = r.worker_hash
    assert whash and cl["decode-ldr"]["labels"]["nvidia.com/dynamo-worker-hash"] == whash
    assert env(main(wkr["podSpec"]))["DYN_NAMESPACE_WORKER_SUFFIX"] == whash


def generated_dcd() -> dict[str, Any]:
    dgd = v1beta1.DynamoGraphDeployment.parse(example())
    g = GraphContext(dgd=dgd, namespace=NS, options=ClusterOptions.parse(LWS))
    return generate_dcd(g, (dgd.spec.components or [])[0], "abcd1234")


def test_generated_dcd_stamps_each_role_template_not_a_component_template() -> None:
    """EnsureComponentPodTemplates: the worker hash goes on every role's template."""
    dcd = generated_dcd()
    assert "podTemplate" not in dcd["spec"]
    for role in dcd["spec"]["roles"]:
        assert role["podTemplate"]["metadata"]["labels"] == {"nvidia.com/dynamo-worker-hash": "abcd1234"}
        assert role["podTemplate"]["spec"]["nodeSelector"] == {"example.com/engine-role": role["name"]}


def test_roles_without_templates_render_as_the_component() -> None:
    """ExplicitMultinodeRolesMatchImplicit: roles that only restate the cardinality change no pod."""
    raw = example()
    c = raw["spec"]["components"][0]
    implicit = copy.deepcopy(raw)
    implicit["spec"]["components"][0] = {
        **{k: v for k, v in c.items() if k != "roles"},
        "podTemplate": c["roles"][0]["podTemplate"],
    }
    explicit = copy.deepcopy(implicit)
    explicit["spec"]["components"][0]["roles"] = [{"name": "leader", "replicas": 1}, {"name": "worker"}]
    for graph in (implicit, explicit):
        graph["spec"]["components"][0]["podTemplate"]["spec"]["containers"][0]["image"] = "img:1.4.0"
    assert cliques(render(explicit, **GROVE)) == cliques(render(implicit, **GROVE))


def with_backend(framework: str, args: list[str]) -> dict[str, Any]:
    raw = example()
    raw["spec"]["backendFramework"] = framework
    for role in raw["spec"]["components"][0]["roles"]:
        main = role["podTemplate"]["spec"]["containers"][0]
        main.update(command=["python3", "-m", f"dynamo.{framework}"], args=list(args))
    return raw


def test_sglang_role_templates_keep_the_authored_launch() -> None:
    """SGLangBackend.UpdateContainer: worker probes go, no generated --dist-init-addr flags."""
    args = ["--model-path", "m", "--tp", "2", "--dist-init-addr", "$(DYNAMO_LEADER_ADDRESS):5000"]
    leader, worker = lws_templates(render(with_backend("sglang", args), **LWS))
    assert main(leader["spec"])["args"] == args and main(worker["spec"])["args"] == args
    assert "livenessProbe" in main(leader["spec"]) and "livenessProbe" not in main(worker["spec"])


def test_trtllm_role_templates_keep_the_authored_launch_and_the_ssh_wiring() -> None:
    """TRTLLMBackend.UpdateContainer: SSH key mount, FQDN env and the worker's sshd readiness probe
    stay; no mpirun leader or sshd worker command is generated."""
    args = ["--model-path", "m"]
    leader, worker = lws_templates(render(with_backend("trtllm", args), **LWS))
    for pod in (leader["spec"], worker["spec"]):
        assert main(pod)["command"] == ["python3", "-m", "dynamo.trtllm"] and main(pod)["args"] == args
        assert {"name": "mpi-run-ssh-secret", "mountPath": "/ssh-pk", "readOnly": True} in main(pod)[
            "volumeMounts"
        ]
        assert env(main(pod))["OMPI_MCA_orte_keep_fqdn_hostnames"] == "1"
    assert main(worker["spec"])["readinessProbe"]["tcpSocket"] == {"port": 2222}


def test_role_templates_render_no_deployment() -> None:
    dcd = generated_dcd()
    with pytest.raises(DynamoValidationError, match="LeaderWorkerSet or a Grove PodCliqueSet"):
        render_dcd(dcd, ClusterOptions.parse({}))


# --- portable topology aliases ------------------------------------------------------------------


def test_aliases_on_lws_for_graphs_of_a_16_operator() -> None:
    leader, worker = lws_templates(render(example(), **LWS, **ORIGIN_16))
    for pod in (leader["spec"], worker["spec"]):
        e = env(main(pod))
        assert e["DYNAMO_LEADER_ADDRESS"] == "$(LWS_LEADER_ADDRESS)"
        assert e["DYNAMO_RANK"] == "$(LWS_WORKER_INDEX)"


def test_aliases_on_grove_use_the_scaling_group_pod_index() -> None:
    cl = cliques(render(example(), **GROVE, **ORIGIN_16))
    for name in ("decode-ldr", "decode-wkr"):
        e = env(main(cl[name]["spec"]["podSpec"]))
        assert e["DYNAMO_LEADER_ADDRESS"] == GROVE_LEADER
        assert e["DYNAMO_RANK"] == "$(GROVE_PCSG_POD_INDEX)"


def test_generated_sglang_flags_use_the_aliases_in_new_graphs() -> None:
    """SGLangBackend.getMultinodeFlags(useTopologyAliases): the same flags on every pod, no shell."""
    raw = with_backend("sglang", ["--model-path", "m", "--tp", "2"])
    c = raw["spec"]["components"][0]
    c["podTemplate"] = c.pop("roles")[0]["podTemplate"]
    flags = [
        "--dist-init-addr",
        "$(DYNAMO_LEADER_ADDRESS):29500",
        "--nnodes",
        "2",
        "--node-rank",
        "$(DYNAMO_RANK)",
    ]
    leader, worker = lws_templates(render(raw, **LWS, **ORIGIN_16))
    for pod in (leader["spec"], worker["spec"]):
        assert main(pod)["args"] == ["--model-path", "m", "--tp", "2", *flags]


@pytest.mark.parametrize("origin", ["1.4.0", "1.5.1", "1.6.0-rc1", "not-semver"])
def test_no_aliases_for_graphs_of_older_operators(origin: str) -> None:
    raw = example()
    c = raw["spec"]["components"][0]
    c["podTemplate"] = c.pop("roles")[0]["podTemplate"]
    leader, _ = lws_templates(render(raw, **LWS, operatorOriginVersion=origin))
    assert not {"DYNAMO_LEADER_ADDRESS", "DYNAMO_RANK"} & set(env(main(leader["spec"])))


@pytest.mark.parametrize("origin", ["1.4.0", "not-semver"])
def test_role_pod_templates_get_the_aliases_whatever_the_stamped_origin(origin: str) -> None:
    """Role pod templates are 1.6 API: only a 1.6 operator (stamping 1.6) admitted such a graph."""
    leader, worker = lws_templates(render(example(), **LWS, operatorOriginVersion=origin))
    for pod in (leader["spec"], worker["spec"]):
        assert env(main(pod))["DYNAMO_RANK"] == "$(LWS_WORKER_INDEX)"


def test_operator_values_replace_template_aliases() -> None:
    raw = example()
    for role in raw["spec"]["components"][0]["roles"]:
        role["podTemplate"]["spec"]["containers"][0]["env"] = [{"name": "DYNAMO_RANK", "value": "7"}]
    _, worker = lws_templates(render(raw, **LWS, **ORIGIN_16))
    assert env(main(worker["spec"]))["DYNAMO_RANK"] == "$(LWS_WORKER_INDEX)"


def test_generated_mp_flags_use_the_aliases_in_new_graphs() -> None:
    """injectMpDistributedLaunchFlags(useTopologyAliases): no shell for the Grove worker rank."""
    raw = example()
    c = raw["spec"]["components"][0]
    template = copy.deepcopy(c.pop("roles")[0]["podTemplate"])
    template["spec"]["containers"][0]["args"] = ["--model", "Qwen/Qwen3-8B", "--tensor-parallel-size", "2"]
    c["podTemplate"] = template
    base = ["--model", "Qwen/Qwen3-8B", "--tensor-parallel-size", "2"]
    mp = ["--distributed-executor-backend", "mp", "--nnodes", "2"]
    cl = cliques(render(raw, **GROVE, **ORIGIN_16))
    ldr, wkr = main(cl["decode-ldr"]["spec"]["podSpec"]), main(cl["decode-wkr"]["spec"]["podSpec"])
    aliases = ["--master-addr", "$(DYNAMO_LEADER_ADDRESS)", "--master-port", "29500", "--node-rank"]
    assert ldr["args"] == [*base, *mp, *aliases, "$(DYNAMO_RANK)"]
    assert wkr["command"] == ["python3", "-m", "dynamo.vllm"]
    assert wkr["args"] == [*base, *mp, *aliases, "$(DYNAMO_RANK)", "--headless"]
    old = main(cliques(render(raw, **GROVE))["decode-wkr"]["spec"]["podSpec"])
    assert old["command"] == ["sh", "-c"] and "$((GROVE_PCLQ_POD_INDEX + 1))" in old["args"][0]


# --- Grove provider overrides and forced scaling groups -----------------------------------------


def override(target: str | None, topology: dict[str, Any], graph: bool = False) -> dict[str, Any]:
    value = (
        {"spec": {"template": {"topologyConstraint": topology}}}
        if graph
        else {"topologyConstraint": topology}
    )
    out: dict[str, Any] = {"apiVersion": "grove.io/v1alpha1", "value": value}
    if target:
        out["target"] = target
    return out


def test_provider_overrides_replace_topology_at_their_destinations() -> None:
    raw = example()
    rack, block, host = (
        {"pack": {"required": "rack"}},
        {"pack": {"required": "block"}},
        {"pack": {"required": "host"}},
    )
    raw["spec"]["providerOverride"] = override("PodCliqueSet", {"topologyName": "t", **block}, graph=True)
    c = raw["spec"]["components"][0]
    c["providerOverride"] = override(None, rack)
    c["roles"][1]["providerOverride"] = override("PodCliqueTemplateSpec", host)
    template = render(raw, **GROVE).workloads[0]["spec"]["template"]
    assert template["topologyConstraint"] == {"topologyName": "t", **block}
    assert template["podCliqueScalingGroups"][0]["topologyConstraint"] == rack
    cl = {x["name"]: x for x in template["cliques"]}
    assert cl["decode-wkr"]["topologyConstraint"] == host
    assert "topologyConstraint" not in cl["decode-ldr"]


def test_force_scaling_group_renders_a_single_node_component_as_a_pcsg() -> None:
    raw = example()
    c = raw["spec"]["components"][0]
    template = c.pop("roles")[0]["podTemplate"]
    template["spec"]["containers"][0]["args"] = ["--model", "Qwen/Qwen3-8B"]
    c.pop("multinode")
    c.update(podTemplate=template, replicas=3, experimental={"grove": {"forceScalingGroup": True}})
    c["providerOverride"] = override(None, {"pack": {"required": "rack"}})
    r = render(raw, **GROVE)
    template = r.workloads[0]["spec"]["template"]
    (clique,) = template["cliques"]
    assert (clique["name"], clique["spec"]["replicas"], clique["spec"]["minAvailable"]) == ("decode", 1, 1)
    assert template["podCliqueScalingGroups"] == [
        {
            "name": "decode",
            "cliqueNames": ["decode"],
            "replicas": 3,
            "minAvailable": 1,
            "topologyConstraint": {"pack": {"required": "rack"}},
        }
    ]
    assert r.components["decode"].workload_kind == "PodCliqueScalingGroup"


def test_inter_pod_gms_rank_alias_is_the_engine_rank() -> None:
    """GetPodRank of the inter-pod GMS deployer: the static engine rank; weight servers get no aliases
    (rendered as single-node main pods)."""
    corpus = Path(__file__).parents[1] / "data" / "corpus" / "graphs" / "v1beta1"
    raw = yaml.safe_load((corpus / "vllm__dgd-gms-failover-multinode.yaml").read_text())
    r = render(raw, **GROVE, **ORIGIN_16, dra={"enabled": True})
    ranks = {name: env(main(c["spec"]["podSpec"])).get("DYNAMO_RANK") for name, c in cliques(r).items()}
    assert ranks == {"agg-gms-0": None, "agg-ldr": "0", "agg-gms-1": None, "agg-wkr-1": "1", "frontend": None}


def test_master_port_goes_after_a_direct_vllm_serve_launch() -> None:
    """ensureContainerCommandLineFlag: a shell line running `vllm serve` gets the flag after it."""
    raw = example()
    for role in raw["spec"]["components"][0]["roles"]:
        main_container = role["podTemplate"]["spec"]["containers"][0]
        main_container.update(
            command=["sh", "-c"], args=["exec vllm serve Qwen/Qwen3-8B --distributed-executor-backend mp"]
        )
    leader, _ = lws_templates(render(raw, **LWS))
    assert main(leader["spec"])["args"] == [
        "exec vllm serve Qwen/Qwen3-8B --distributed-executor-backend mp --master-port 29500"
    ]
