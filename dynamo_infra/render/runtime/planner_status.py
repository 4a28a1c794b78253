"""The fields of `status.components[name]` the 1.6 planner reads, projected from a component's spec and
its rendered pods (pure): `gpusPerEngine`, `gpusPerReplica`, `servedModelName`, `runtimeComponentName`,
`gpuPowerLimitWatts`. Only for components whose runtime is at or above the PlannerDGDComponentStatus
release (`api.releases`); below it the status stays as the operator at our pin writes it.

Ported from michaelfeil/dynamo at 80b177f2 (the 1.6.0 cut): `deploy/operator/internal/dynamo/runtime_status.go`
(`ResolveComponentRuntimeStatus`, `ResolveGroveComponentRuntimeStatuses`: the serving pod is the leader
pod of a multinode component, else its only pod), `internal/dynamo/gpu_shape.go` (`ResolveGPUShape`,
`ResolveGroveGPUShapes`) and the callers in `internal/controller/dynamocomponentdeployment_controller.go`
(Deployment: its pod template once; LeaderWorkerSet: the leader template once, the worker template
`nodeCount - 1` times). The 1.6.1 planner takes them only while `status.observedGeneration` equals
`metadata.generation` (`dynamo/planner/monitoring/dgd_services.py`, `Service.get_gpu_shape`).

These depend only on the spec and the rendering, so `up` computes them once per component (the records'
`plannerStatus`) and every status write (records provider, agent) merges them into the live counts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from dynamo_infra.api import releases
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render.names import LABEL_COMPONENT
from dynamo_infra.render.runtime.gpu_shape import (
    MAIN_CONTAINER,
    GPUShape,
    PodSet,
    claim_specs,
    engine_pods,
    node_count,
    pod_set_gpus,
)
from dynamo_infra.render.workloads.grove import LEADER_SUFFIX

# Pod-template annotation with the per-GPU power limit in watts (positive integer).
POWER_LIMIT_ANNOTATION = "dynamo.nvidia.com/gpu-power-limit"
# Flags naming the served model, in the order the operator looks for them.
SERVED_MODEL_FLAGS = ("--served-model-name", "--model-name", "--model", "--model-path")
# Flag naming the runtime endpoint `dyn://<namespace>.<component>.<endpoint>`.
ENDPOINT_FLAG = "--endpoint"
ENDPOINT_SCHEME = "dyn://"
# Shells whose `-c` script is read for flags too.
SHELLS = ("sh", "bash")
# What Go's strconv.ParseInt(s, 10, 64) accepts, and its largest value.
_DECIMAL = re.compile(r"[+-]?[0-9]+")
MAX_INT64 = 2**63 - 1
# GMS mode whose weight-server pods add the engine's GPUs to every replica (Grove).
GMS_INTER_POD = "InterPod"


def runtime_version(component: Manifest) -> releases.RuntimeVersion | None:
    """The runtime version the operator resolves for a (v1beta1) component: its override, else the main
    container's image tag."""
    containers = (((component.get("podTemplate") or {}).get("spec")) or {}).get("containers") or []
    image = next((c.get("image") for c in containers if c.get("name") == MAIN_CONTAINER), None)
    return releases.resolve(image, component.get("runtimeVersionOverride"))


def projected(component: Manifest) -> bool:
    """Whether the operator of this component's runtime publishes the planner's status fields."""
    return releases.PLANNER_DGD_COMPONENT_STATUS.enabled(runtime_version(component))


def split_shell_words(value: str) -> list[str]:
    """`splitShellWords`: words with quotes and backslash escapes removed (no expansion)."""
    words: list[str] = []
    current: list[str] = []
    quote = ""
    escaped = False
    for ch in value:
        if escaped:
            current.append(ch)
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            if ch == quote:
                quote = ""
            else:
                current.append(ch)
        elif ch in ("'", '"'):
            quote = ch
        elif ch.isspace():
            if current:
                words.append("".join(current))
            current = []
        else:
            current.append(ch)
    if escaped:
        current.append("\\")
    if current:
        words.append("".join(current))
    return words


def _tokens(value: str) -> list[str]:
    """A command-line part's words, followed by the words of every `sh|bash -c <script>` in it."""
    words = split_shell_words(value)
    out = list(words)
    for i in range(len(words) - 2):
        if words[i].rsplit("/", 1)[-1] in SHELLS and words[i + 1] == "-c":
            out.extend(_tokens(words[i + 2]))
    return out


def command_line_tokens(command: Sequence[str], args: Sequence[str]) -> list[str]:
    """`shellCommandLineTokens`: every part of command + args split into words."""
    return [t for part in [*command, *args] for t in _tokens(str(part))]


def first_flag_value(tokens: Sequence[str], *flags: str) -> str:
    """The value of the first of `flags` present (`--flag value` or `--flag=value`), flags in order."""
    for flag in flags:
        for i, token in enumerate(tokens):
            if token == flag and i + 1 < len(tokens):
                return tokens[i + 1]
            if token.startswith(flag + "="):
                return token[len(flag) + 1 :]
    return ""


def runtime_component(endpoint: str) -> str:
    """The component of `dyn://<namespace>.<component>.<endpoint>` ("" when not of that form)."""
    parts = endpoint.removeprefix(ENDPOINT_SCHEME).split(".")
    return parts[1] if len(parts) == 3 and parts[1] else ""


def power_limit(annotations: Manifest | None) -> int | None:
    """The POWER_LIMIT_ANNOTATION as a positive integer, else None."""
    raw = str((annotations or {}).get(POWER_LIMIT_ANNOTATION) or "").strip()
    if not _DECIMAL.fullmatch(raw):
        return None
    watts = int(raw)
    return watts if 0 < watts <= MAX_INT64 else None


def runtime_identity(pod_template: Manifest | None) -> Manifest:
    """`ResolveComponentRuntimeStatus`: model, runtime component and power limit of the serving pod."""
    template = pod_template or {}
    out: Manifest = {}
    containers = (template.get("spec") or {}).get("containers") or []
    main = next((c for c in containers if c.get("name") == MAIN_CONTAINER), None)
    if main is not None:
        tokens = command_line_tokens(main.get("command") or [], main.get("args") or [])
        model = first_flag_value(tokens, *SERVED_MODEL_FLAGS)
        if model:
            out["servedModelName"] = model
        component = runtime_component(first_flag_value(tokens, ENDPOINT_FLAG))
        if component:
            out["runtimeComponentName"] = component
    watts = power_limit((template.get("metadata") or {}).get("annotations"))
    if watts is not None:
        out["gpuPowerLimitWatts"] = watts
    return out


@dataclass(frozen=True)
class WorkloadPods:
    """The pods one replica of a component runs, its serving pod template, and whether Grove runs them."""

    pods: list[PodSet]
    serving: Manifest | None
    grove: bool = False


def _grove_pods(component: Manifest, graph_objects: Sequence[Manifest]) -> WorkloadPods | None:
    """The component's cliques in the graph's PodCliqueSet (each once, or its role's pod count in a
    scaling group) and its serving clique as a pod template."""
    pcs = next((o for o in graph_objects if o.get("kind") == "PodCliqueSet"), None)
    if pcs is None:
        return None
    template = (pcs.get("spec") or {}).get("template") or {}
    name = str(component.get("name") or "")
    cliques = [
        c for c in template.get("cliques") or [] if (c.get("labels") or {}).get(LABEL_COMPONENT) == name
    ]
    if not cliques:
        return None
    grouped = {
        str(n) for g in template.get("podCliqueScalingGroups") or [] for n in g.get("cliqueNames") or []
    }
    pods = []
    for c in cliques:
        spec = c.get("spec") or {}
        # The role's structural pod count (a checkpoint-gated clique has 0 replicas, not its minimum).
        count = int(spec.get("replicas") or spec.get("minAvailable") or 1) if c["name"] in grouped else 1
        pods.append(PodSet(spec.get("podSpec") or {}, count))
    serving = f"{name}-{LEADER_SUFFIX}" if node_count(component) > 1 else name
    clique = next((c for c in cliques if c.get("name") == serving.lower()), None)
    if clique is None:
        return WorkloadPods(pods, None, grove=True)
    meta = {"annotations": clique["annotations"]} if clique.get("annotations") else {}
    return WorkloadPods(
        pods, {"metadata": meta, "spec": (clique.get("spec") or {}).get("podSpec") or {}}, True
    )


def workload_pods(
    component: Manifest, objects: Sequence[Manifest], graph_objects: Sequence[Manifest] = ()
) -> WorkloadPods | None:
    """The pods one replica of the component runs, and its serving pod template; None without a
    workload (the Grove pathway's pods are in the graph's PodCliqueSet)."""
    for o in objects:
        spec = o.get("spec") or {}
        if o.get("kind") == "Deployment":
            template = spec.get("template") or {}
            return WorkloadPods([PodSet(template.get("spec") or {})], template)
        if o.get("kind") == "LeaderWorkerSet":
            lws = spec.get("leaderWorkerTemplate") or {}
            leader, worker = lws.get("leaderTemplate") or {}, lws.get("workerTemplate") or {}
            pods = [PodSet(leader.get("spec") or {})]
            if node_count(component) > 1:
                pods.append(PodSet(worker.get("spec") or {}, node_count(component) - 1))
            return WorkloadPods(pods, leader)
    return _grove_pods(component, graph_objects)


def planner_component_status(
    component: Manifest, objects: Sequence[Manifest], graph_objects: Sequence[Manifest] = ()
) -> Manifest:
    """The planner's fields of `status.components[name]` for a v1beta1 component and its rendered
    objects (`graph_objects`: the graph's shared objects and PodCliqueSet); {} below the gate. The GPU
    shape is left out when it cannot be resolved from the rendering (the planner then waits)."""
    if not projected(component):
        return {}
    found = workload_pods(component, objects, graph_objects)
    if found is None:
        return {}
    out = runtime_identity(found.serving)
    claims = claim_specs([*objects, *graph_objects])
    engine = pod_set_gpus(engine_pods(component), claims)
    replica = pod_set_gpus(found.pods, claims)
    if engine is not None and replica is not None:
        gms = (component.get("experimental") or {}).get("gpuMemoryService") or {}
        if found.grove and gms.get("mode") == GMS_INTER_POD:
            replica += engine
        out.update(GPUShape(engine, replica).to_dict())
    return out
