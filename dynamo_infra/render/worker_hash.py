"""ComputeDGDWorkersSpecHash: the 8-hex worker hash that names a graph's worker generation.

The operator generates every component's DCD with the hash replaced by `worker-hash-placeholder`,
keeps the workers, and hashes the Go JSON of `component name -> {labels, annotations, runtimeVersion,
roleRuntimeVersions, spec}`: the labels and annotations its workloads would carry (GetDCDKubeLabels /
GetDCDKubeAnnotations), the resolved runtime version of the worker (and of each role template) from
1.5.0 on, and the DCD spec without the fields that do not change a worker's pods.

From runtime 1.5.0 on (RUNTIME_VERSION_IN_WORKER_HASH) the spec is also normalised so that equivalent
specs keep their generation (workerHashSpec). Ported from `internal/dynamo/hash.go` at michaelfeil/dynamo
eaf61940 (the 1.6.0 cut; resolved version from PR #12633, Aug-21 2a6da14c8). The operator normalises
every record; we normalise only the records it hashes a version for, so that every worker below 1.5.0
keeps the hash of our pin. This code has no v1 hash, so there are no v1 values to keep.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping

from dynamo_infra.api import releases
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render import names
from dynamo_infra.render.backends.table import BACKENDS
from dynamo_infra.render.context import MAIN_CONTAINER
from dynamo_infra.render.go import gojson
from dynamo_infra.render.legacy import LegacyComponent

# Stand-in for the hash while hashing the worker specs that will carry it.
PLACEHOLDER = names.WORKER_HASH_PLACEHOLDER
# Hex digits of SHA-256 kept.
LENGTH = 8
# DCD spec fields that do not start a new worker generation, cleared before hashing.
EXCLUDED_FIELDS = ("replicas", "minAvailable", "scalingAdapter", "runtimeVersionOverride")
# The hash's per-worker record (a struct local to the operator's hash function).
WORKER_TEMPLATE = "dynamo.workerTemplate"
# Labels of the DCD metadata that win over every other source of the workload labels.
DCD_LABELS_WIN = (
    names.LABEL_COMPONENT,
    names.LABEL_NAMESPACE,
    names.LABEL_GRAPH,
    names.LABEL_WORKER_HASH,
    names.LABEL_COMPONENT_CLASS,
)
# Sub-component types a v1beta1 component type stands for (v1alpha1 `worker` + subComponentType).
SUB_COMPONENT_TYPES = frozenset({"prefill", "decode"})
# Multinode role names and the replicas each has when implicit (`None`: nodeCount - 1).
ROLE_LEADER, ROLE_WORKER = "leader", "worker"
IMPLICIT_ROLE_REPLICAS: dict[str, int | None] = {ROLE_LEADER: 1, ROLE_WORKER: None}
# The Dynamo runtime container of sidecar mode (GetDynamoContainer), else the main container.
RUNTIME_SIDECAR = "runtime"

_SPEC_TYPE = "api/v1beta1.DynamoComponentDeploymentSpec"
_EXPERIMENTAL_TYPE = "api/v1beta1.ExperimentalSpec"
_PROVIDER_OVERRIDE = "api/v1beta1.ProviderOverride"
_ROLE = "api/v1beta1.ComponentRoleSpec"
_GROVE = "api/v1beta1.GroveSpec"
# Fields the 1.6.0 API adds to the pin's table (all omitempty: a spec without them encodes as at the
# pin): (struct, the field it follows, the field). From api/v1beta1 dynamocomponentdeployment_types.go
# at michaelfeil/dynamo eaf61940 and common.go at 86e34d1e; `lpx` is left out (LPX needs the
# operator's LPX feature, which we do not render).
SPEC_1_6_FIELDS: tuple[tuple[str, str, gojson.GoField], ...] = (
    (
        _SPEC_TYPE,
        "backendFramework",
        gojson.GoField("providerOverride", f"*{_PROVIDER_OVERRIDE}", omitempty=True),
    ),
    (_SPEC_TYPE, "multinode", gojson.GoField("roles", f"[]{_ROLE}", omitempty=True)),
    (_EXPERIMENTAL_TYPE, "failover", gojson.GoField("grove", f"*{_GROVE}", omitempty=True)),
)
STRUCTS_1_6: dict[str, tuple[gojson.GoField, ...]] = {
    _PROVIDER_OVERRIDE: (
        gojson.GoField("apiVersion", "string"),
        gojson.GoField("target", "string", omitempty=True),
        gojson.GoField("value", "encoding/json.RawMessage"),
    ),
    _ROLE: (
        gojson.GoField("name", "string"),
        gojson.GoField("replicas", "*int", omitempty=True),
        gojson.GoField("providerOverride", f"*{_PROVIDER_OVERRIDE}", omitempty=True),
        gojson.GoField("podTemplate", "*core/v1.PodTemplateSpec", omitempty=True),
    ),
    _GROVE: (gojson.GoField("forceScalingGroup", "*bool", omitempty=True),),
}


def _with_1_6_fields(structs: dict[str, tuple[gojson.GoField, ...]]) -> dict[str, tuple[gojson.GoField, ...]]:
    out = {**structs, **STRUCTS_1_6}
    for struct, after, new in SPEC_1_6_FIELDS:
        fields = list(out[struct])
        fields.insert(next(i for i, f in enumerate(fields) if f.name == after) + 1, new)
        out[struct] = tuple(fields)
    return out


@functools.cache
def _encoder() -> gojson.Encoder:
    types = gojson.go_types()
    structs = _with_1_6_fields(dict(types.structs))
    return gojson.Encoder(
        {
            **{k: v for k, v in structs.items() if k in STRUCTS_1_6 or v != types.structs.get(k)},
            WORKER_TEMPLATE: (
                gojson.GoField("labels", "map[string]string", omitempty=True),
                gojson.GoField("annotations", "map[string]string", omitempty=True),
                gojson.GoField("runtimeVersion", "string", omitempty=True),
                gojson.GoField("roleRuntimeVersions", "map[string]string", omitempty=True),
                gojson.GoField("spec", types.root),
            ),
        }
    )


def _template_metadata(dcd: Manifest) -> Manifest:
    return dict(((dcd.get("spec") or {}).get("podTemplate") or {}).get("metadata") or {})


def sub_component_type(dcd: Manifest, legacy: LegacyComponent) -> str:
    """GetDCDSubComponentType: the v1alpha1 subComponentType this DCD converts back to."""
    component_type = str((dcd.get("spec") or {}).get("type") or "")
    if component_type in SUB_COMPONENT_TYPES:
        return component_type
    return legacy.sub_component_type or ""


def kube_labels(dcd: Manifest, legacy: LegacyComponent) -> dict[str, str]:
    """GetDCDKubeLabels: the labels the DCD's workloads carry before role labels."""
    meta_labels = dict((dcd.get("metadata") or {}).get("labels") or {})
    dynamo_namespace = legacy.dynamo_namespace or meta_labels.get(names.LABEL_NAMESPACE)
    spec = dcd.get("spec") or {}
    labels = {**meta_labels, **legacy.labels, **(_template_metadata(dcd).get("labels") or {})}
    model = (spec.get("modelRef") or {}).get("name")
    if model:
        labels[names.LABEL_BASE_MODEL_HASH] = names.model_hash(model)
    sub_type = sub_component_type(dcd, legacy)
    if sub_type:
        labels[names.LABEL_SUB_COMPONENT_TYPE] = sub_type
    if spec.get("name"):
        labels[names.LABEL_COMPONENT] = spec["name"]
    if dynamo_namespace:
        labels[names.LABEL_NAMESPACE] = dynamo_namespace
    labels.update({k: meta_labels[k] for k in DCD_LABELS_WIN if meta_labels.get(k)})
    return labels


def kube_annotations(dcd: Manifest, legacy: LegacyComponent) -> dict[str, str]:
    """GetDCDKubeAnnotations: the annotations the DCD's workloads carry."""
    annotations = {**legacy.annotations, **(_template_metadata(dcd).get("annotations") or {})}
    model = ((dcd.get("spec") or {}).get("modelRef") or {}).get("name")
    if model:
        annotations[names.ANNOTATION_BASE_MODEL] = model
    annotations.pop(names.ANNOTATION_ORIGIN_VERSION, None)
    for key in names.TOPOLOGY_SOURCE_ANNOTATIONS:
        annotations.pop(key, None)
    meta_annotations = (dcd.get("metadata") or {}).get("annotations") or {}
    annotations.update(
        {k: meta_annotations[k] for k in names.TOPOLOGY_SOURCE_ANNOTATIONS if meta_annotations.get(k)}
    )
    return annotations


def _runtime_image(template: Manifest | None) -> str:
    """GetDynamoContainer's image: the sidecar-mode `runtime` init container, else `main`."""
    spec = (template or {}).get("spec") or {}
    for key, name in (("initContainers", RUNTIME_SIDECAR), ("containers", MAIN_CONTAINER)):
        for c in spec.get(key) or []:
            if c.get("name") == name:
                return str(c.get("image") or "")
    return ""


def hashed_runtime_version(template: Manifest | None, override: str) -> str:
    """resolvedRuntimeVersionForHash: the canonical resolved version from 1.5.0 on, else ""."""
    version = releases.resolve(_runtime_image(template), override)
    return str(version) if releases.RUNTIME_VERSION_IN_WORKER_HASH.enabled(version) else ""


def role_runtime_versions(spec: Manifest) -> dict[str, str]:
    """resolvedRoleRuntimeVersionsForHash: with role pod templates, each role's hashed version (a role
    without a template runs the component's)."""
    roles = list(spec.get("roles") or [])
    if not any(r.get("podTemplate") for r in roles):
        return {}
    override = str(spec.get("runtimeVersionOverride") or "")
    out = {
        str(r.get("name") or ""): hashed_runtime_version(
            r.get("podTemplate") or spec.get("podTemplate"), override
        )
        for r in roles
    }
    return {k: v for k, v in out.items() if v}


def _explicit_roles_match_implicit(spec: Manifest, roles: list[Manifest]) -> bool:
    """ExplicitMultinodeRolesMatchImplicit: exactly a leader and a worker, no provider overrides,
    replicas (if any) as the implicit layout has them."""
    multinode = spec.get("multinode")
    if multinode is None or len(roles) != 2:
        return False
    node_count = int(multinode.get("nodeCount") or 0)
    if len({r.get("name") for r in roles}) != 2:
        return False
    for r in roles:
        name = r.get("name")
        if name not in IMPLICIT_ROLE_REPLICAS or r.get("providerOverride") is not None:
            return False
        expected = IMPLICIT_ROLE_REPLICAS[name]
        expected = node_count - 1 if expected is None else expected
        if r.get("replicas") is not None and r["replicas"] != expected:
            return False
    return True


def _present(value: Manifest) -> Manifest:
    return {k: v for k, v in value.items() if v is not None}


def normalised_spec(spec: Manifest) -> Manifest:
    """workerHashSpec's normalisations of equivalent specs (a new dict; `spec` is not changed)."""
    out = dict(spec)
    roles = [dict(r) for r in out.get("roles") or []]
    if out.get("multinode") is not None:
        roles = [{k: v for k, v in r.items() if k != "replicas"} for r in roles]
    if "roles" in out:
        out["roles"] = (
            None
            if _explicit_roles_match_implicit(out, roles)
            else sorted(roles, key=lambda r: str(r.get("name") or ""))
        )
    if out.get("experimental") is not None:
        experimental = _present(dict(out["experimental"]))
        if experimental.get("grove") is not None:
            grove = _present(dict(experimental["grove"]))
            if grove.get("forceScalingGroup") is not True:
                grove.pop("forceScalingGroup", None)
            experimental["grove"] = grove or None
        checkpoint = experimental.get("checkpoint")
        if isinstance(checkpoint, dict) and not checkpoint.get("enabled"):
            experimental["checkpoint"] = None
        out["experimental"] = _present(experimental) or None
    cache = out.get("compilationCache")
    if cache is not None:
        backend = BACKENDS.get(str(out.get("backendFramework") or ""))
        default = backend.default_compilation_cache_path() if backend else None
        if default and cache.get("mountPath") == default:
            out["compilationCache"] = {**cache, "mountPath": ""}
    return out


def worker_record(dcd: Manifest, legacy: LegacyComponent, *, runtime_version_gates: bool = True) -> Manifest:
    """One worker's entry of the hash input."""
    spec = dict(dcd.get("spec") or {})
    record: dict[str, object] = {
        "labels": kube_labels(dcd, legacy),
        "annotations": kube_annotations(dcd, legacy),
    }
    hashed = {k: v for k, v in spec.items() if k not in EXCLUDED_FIELDS}
    if runtime_version_gates:
        override = str(spec.get("runtimeVersionOverride") or "")
        record["runtimeVersion"] = hashed_runtime_version(spec.get("podTemplate"), override) or None
        record["roleRuntimeVersions"] = role_runtime_versions(spec) or None
        if record["runtimeVersion"] or record["roleRuntimeVersions"]:
            hashed = normalised_spec(hashed)
    record["spec"] = hashed
    return record


def hash_input(
    workers: Mapping[str, tuple[Manifest, LegacyComponent]], *, runtime_version_gates: bool = True
) -> str:
    """The Go JSON the hash is taken of: component -> (its DCD with the placeholder, its v1alpha1 leftovers).
    `runtime_version_gates` false hashes as the operator at our pin (no version, no normalisation)."""
    records = {
        name: worker_record(dcd, legacy, runtime_version_gates=runtime_version_gates)
        for name, (dcd, legacy) in workers.items()
    }
    return _encoder().marshal(records, f"map[string]{WORKER_TEMPLATE}")


def worker_hash(
    workers: Mapping[str, tuple[Manifest, LegacyComponent]], *, runtime_version_gates: bool = True
) -> str:
    """First 8 hex of SHA-256 of `hash_input` (a graph without workers hashes `{}`)."""
    digest = hashlib.sha256(hash_input(workers, runtime_version_gates=runtime_version_gates).encode())
    return digest.hexdigest()[:LENGTH]
