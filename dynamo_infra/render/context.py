"""The frozen inputs every render function receives."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from dynamo_infra.api import DynamoValidationError, Problem, releases, v1beta1
from dynamo_infra.api.admission import sidecar
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import names
from dynamo_infra.render.legacy import LegacyComponent, LegacyGraph

# Every Dynamo pod's runtime container.
MAIN_CONTAINER = "main"
# Kubernetes discovery unless the DGD (or component) annotation or the cluster says `etcd`.
DISCOVERY_KUBERNETES = "kubernetes"
DISCOVERY_ETCD = "etcd"
# Value of `nvidia.com/dynamo-kube-discovery-mode` that makes each container register itself.
DISCOVERY_MODE_CONTAINER = "container"
# GPU memory service / failover modes (v1beta1 spelling).
GMS_INTRA_POD = "IntraPod"
GMS_INTER_POD = "InterPod"


def runtime_version(options: ClusterOptions, image: str, override: str) -> releases.RuntimeVersion | None:
    """The runtime version a component's gates follow: `runtimeVersionOverride` when set, else the main
    container image's tag; None when it names no version or the cluster renders without gates."""
    return releases.resolve(image, override) if options.runtime_version_gates else None


def runtime_version_problem(image: str, override: str, where: str) -> Problem | None:
    """generateComponentContext's error: a set override that is no semantic version fails the render
    (michaelfeil/dynamo 0479b99f `internal/dynamo/graph.go`)."""
    if override and releases.resolve(image, override) is None:
        return Problem(where, f"resolve runtime version override: {releases.OVERRIDE_INVALID}")
    return None


@dataclass(frozen=True)
class GraphContext:
    """One graph being rendered: the hub-version DGD, where it goes, and the cluster options."""

    dgd: v1beta1.DynamoGraphDeployment
    namespace: str
    options: ClusterOptions
    annotations: Mapping[str, str] = field(default_factory=dict)
    legacy: LegacyGraph = field(default_factory=LegacyGraph)
    backend: str = ""
    restart_at: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.dgd.name

    @property
    def discovery_backend(self) -> str:
        """Graph-level discovery backend (DGD annotation, else the cluster default)."""
        return self.annotations.get(names.ANNOTATION_DISCOVERY_BACKEND) or self.options.discovery.backend

    @property
    def k8s_discovery(self) -> bool:
        return self.discovery_backend == DISCOVERY_KUBERNETES

    def runtime_version(self, c: v1beta1.Component) -> releases.RuntimeVersion | None:
        """A component's runtime version as its DCD's context resolves it (main image, override)."""
        main = (c.pod_template.container(MAIN_CONTAINER) if c.pod_template else None) or {}
        return runtime_version(
            self.options, str(main.get("image") or ""), str(c.runtime_version_override or "")
        )


@dataclass(frozen=True)
class ComponentContext:
    """One DynamoComponentDeployment being rendered into Kubernetes objects.

    `spec` is the DCD's v1beta1 spec (wire form) as the DGD controller generated it; `labels` and
    `annotations` are the DCD's metadata. Standalone DCDs (no parent graph) work the same way.
    """

    namespace: str
    options: ClusterOptions
    dcd_name: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    spec: Manifest
    legacy: LegacyComponent = field(default_factory=LegacyComponent)
    graph_spec_annotations: Mapping[str, str] = field(default_factory=dict)
    # Observed readiness of the component's checkpoint (None: absent or unknown).
    checkpoint_ready: bool | None = None

    @property
    def name(self) -> str:
        """GetDCDComponentName: spec name, else the component label, else the DCD name."""
        return str(self.spec.get("name") or self.labels.get(names.LABEL_COMPONENT) or self.dcd_name)

    @property
    def type(self) -> str:
        """The component type; a v1alpha1 `componentType` outside v1beta1's (`default`) as written."""
        return str(self.spec.get("type") or self.legacy.component_type or "")

    @property
    def is_worker(self) -> bool:
        return self.type in v1beta1.WORKER_TYPES

    @property
    def parent_name(self) -> str:
        """The owning graph's name; a standalone DCD stands in for its own graph."""
        return self.labels.get(names.LABEL_GRAPH) or self.dcd_name

    @property
    def has_parent(self) -> bool:
        return bool(self.labels.get(names.LABEL_GRAPH))

    @property
    def runtime_dynamo_namespace(self) -> str:
        """ComputeDynamoNamespace: what DYN_NAMESPACE says (ignores the legacy `dynamoNamespace`)."""
        return names.dynamo_namespace(
            self.namespace, self.parent_name, bool(self.spec.get("globalDynamoNamespace"))
        )

    @property
    def dynamo_namespace(self) -> str:
        """GetDCDDynamoNamespace: legacy `dynamoNamespace`, else the label, else computed."""
        return (
            self.legacy.dynamo_namespace
            or self.labels.get(names.LABEL_NAMESPACE)
            or self.runtime_dynamo_namespace
        )

    @property
    def worker_hash(self) -> str | None:
        if not self.is_worker:
            return None
        return self.labels.get(names.LABEL_WORKER_HASH) or self.template_labels.get(names.LABEL_WORKER_HASH)

    @cached_property
    def _template_parts(self) -> tuple[Manifest, Mapping[str, str], Mapping[str, str], Manifest]:
        """The pod template, its labels, its annotations and its spec as `spec` holds them, looked up
        once (the accessors below are read many times per component; each returns its own copy)."""
        template = self.spec.get("podTemplate") or {}
        metadata = template.get("metadata") or {}
        return (
            template,
            metadata.get("labels") or {},
            metadata.get("annotations") or {},
            template.get("spec") or {},
        )

    @property
    def pod_template(self) -> Manifest:
        return dict(self._template_parts[0])

    @property
    def template_labels(self) -> dict[str, str]:
        return dict(self._template_parts[1])

    @property
    def template_annotations(self) -> dict[str, str]:
        return dict(self._template_parts[2])

    @property
    def template_spec(self) -> Manifest:
        return dict(self._template_parts[3])

    def container(self, name: str) -> Manifest | None:
        for c in self._template_parts[3].get("containers") or []:
            if c.get("name") == name:
                return dict(c)
        return None

    @property
    def runtime_sidecar(self) -> Manifest | None:
        """Sidecar mode: the user's `runtime` init container that hosts Dynamo's runtime, else None."""
        return sidecar.runtime_sidecar(self.template_spec, self.spec.get("runtimeVersionOverride"))

    @property
    def runtime_container(self) -> str:
        """The container Dynamo injects into: `runtime` in sidecar mode, else `main`."""
        return sidecar.runtime_container(self.template_spec, self.spec.get("runtimeVersionOverride"))

    @property
    def _runtime_version_inputs(self) -> tuple[str, str]:
        """The image the operator reads the version from (the `runtime` sidecar's in sidecar mode), and
        the override."""
        runtime = self.runtime_sidecar or self.container(MAIN_CONTAINER) or {}
        image = str(runtime.get("image") or "")
        return image, str(self.spec.get("runtimeVersionOverride") or "")

    @property
    def runtime_version_problem(self) -> Problem | None:
        """Why the component's runtime version cannot be resolved, when the override is invalid."""
        return runtime_version_problem(
            *self._runtime_version_inputs, f"components[{self.name}].runtimeVersionOverride"
        )

    @cached_property
    def runtime_version(self) -> releases.RuntimeVersion | None:
        """generateComponentContext's RuntimeVersion (see `runtime_version`); an invalid override is an error."""
        problem = self.runtime_version_problem
        if problem is not None:
            raise DynamoValidationError([problem])
        return runtime_version(self.options, *self._runtime_version_inputs)

    @property
    def discovery_backend(self) -> str:
        """Discovery backend from the pod-template annotation, else the cluster default."""
        return (
            self.template_annotations.get(names.ANNOTATION_DISCOVERY_BACKEND)
            or self.options.discovery.backend
        )

    @property
    def k8s_discovery(self) -> bool:
        return self.discovery_backend == DISCOVERY_KUBERNETES

    @property
    def discovery_mode(self) -> str:
        return self.template_annotations.get(names.ANNOTATION_KUBE_DISCOVERY_MODE) or ""

    @property
    def model_ref(self) -> str | None:
        return ((self.spec.get("modelRef") or {}).get("name")) or None

    @property
    def node_count(self) -> int:
        """`multinode.nodeCount`, 1 when unset."""
        return int((self.spec.get("multinode") or {}).get("nodeCount") or 1)

    @property
    def experimental(self) -> Manifest:
        return dict(self.spec.get("experimental") or {})

    @property
    def gms(self) -> Manifest | None:
        """`experimental.gpuMemoryService` (presence enables it)."""
        gms = self.experimental.get("gpuMemoryService")
        return None if gms is None else dict(gms)

    @property
    def failover(self) -> Manifest | None:
        failover = self.experimental.get("failover")
        return None if failover is None else dict(failover)

    @property
    def inter_pod_gms(self) -> bool:
        return self.gms is not None and self.gms.get("mode") == GMS_INTER_POD

    @property
    def inter_pod_failover(self) -> bool:
        return self.failover is not None and self.failover.get("mode") == GMS_INTER_POD

    @property
    def intra_pod_failover(self) -> bool:
        return self.failover is not None and self.failover.get("mode", GMS_INTRA_POD) == GMS_INTRA_POD

    @property
    def total_engine_pods(self) -> int:
        """Engine pods per rank: primary plus shadows under inter-pod failover, else one."""
        if self.inter_pod_failover:
            return 1 + int((self.failover or {}).get("numShadows") or 1)
        return 1

    @property
    def force_scaling_group(self) -> bool:
        """`experimental.grove.forceScalingGroup`: a single-node component as a scaling group (1.6)."""
        return bool((self.experimental.get("grove") or {}).get("forceScalingGroup"))

    @property
    def uses_scaling_group(self) -> bool:
        """`UsesPCSG`: Grove renders the component as a PodCliqueScalingGroup (multinode, inter-pod GMS,
        or forced)."""
        return self.node_count > 1 or self.inter_pod_gms or self.force_scaling_group

    @property
    def checkpoint(self) -> Manifest | None:
        """`experimental.checkpoint` when enabled."""
        ckpt = self.experimental.get("checkpoint")
        return dict(ckpt) if ckpt and ckpt.get("enabled") else None


def component_context(
    dcd: Manifest,
    options: ClusterOptions,
    legacy: LegacyComponent | None = None,
    graph_spec_annotations: Mapping[str, str] | None = None,
    checkpoint_ready: bool | None = None,
) -> ComponentContext:
    meta = dcd.get("metadata") or {}
    return ComponentContext(
        namespace=str(meta.get("namespace") or options.namespace),
        options=options,
        dcd_name=str(meta["name"]),
        labels=dict(meta.get("labels") or {}),
        annotations=dict(meta.get("annotations") or {}),
        spec=dict(dcd.get("spec") or {}),
        legacy=legacy or LegacyComponent(),
        graph_spec_annotations=dict(graph_spec_annotations or {}),
        checkpoint_ready=checkpoint_ready,
    )
