"""generateSingleDCD: the DynamoComponentDeployment the graph controller writes for a component."""

from __future__ import annotations

from dynamo_infra.api import kube, v1beta1
from dynamo_infra.api.admission import sidecar
from dynamo_infra.api.manifest import Manifest, copy_json
from dynamo_infra.api.merge import merge_env
from dynamo_infra.render import names, roles
from dynamo_infra.render.components import epp
from dynamo_infra.render.components.table import defaults_for
from dynamo_infra.render.context import MAIN_CONTAINER, GraphContext
from dynamo_infra.render.features import kvtransfer
from dynamo_infra.render.go import gojson

# apiVersion/kind of the generated component objects.
DCD_API_VERSION = v1beta1.API_VERSION
DCD_KIND = "DynamoComponentDeployment"
# The DCD controller's finalizer, on every DCD it reconciles.
DCD_FINALIZER = "nvidia.com/finalizer"


def _low_priority(dst: dict[str, str], src: dict[str, str] | None) -> dict[str, str]:
    """mergeLowPriorityMetadata: keys already present win."""
    return {**(src or {}), **dst}


def _ensure_main(template: Manifest) -> Manifest:
    """ensureMainContainer: the `main` container of the template, created first when absent."""
    spec = template.setdefault("spec", {})
    containers = spec.setdefault("containers", [])
    for c in containers:
        if c.get("name") == MAIN_CONTAINER:
            return dict(c)
    containers.insert(0, {"name": MAIN_CONTAINER})
    return containers[0]  # type: ignore[no-any-return]


def _set_main(template: Manifest, main: Manifest) -> None:
    containers = template["spec"]["containers"]
    for i, c in enumerate(containers):
        if c.get("name") == MAIN_CONTAINER:
            containers[i] = main


def _template_defaults(g: GraphContext, component: v1beta1.Component, template: Manifest) -> None:
    """applyDGDTemplateDefaults: DGD env under main's, KV policy, propagated metadata (sidecar mode:
    the env under the runtime container's too, the KV policy on it instead of main)."""
    meta = template.setdefault("metadata", {})
    if g.dgd.spec.env:
        main = _ensure_main(template)
        _set_main(template, {**main, "env": merge_env(g.dgd.spec.env, main.get("env"))})
    runtime = sidecar.runtime_container(template.get("spec"), component.runtime_version_override)
    policy = kvtransfer.policy_of(g.dgd)
    if runtime != MAIN_CONTAINER:
        _template_sidecar_defaults(g, template, runtime, policy if component.is_worker else None)
    elif policy and component.is_worker:
        main = _ensure_main(template)
        main, spec = kvtransfer.apply_to_main(main, template["spec"], policy)
        template["spec"] = spec
        _set_main(template, main)
    _propagate_metadata(g, meta)


def _template_sidecar_defaults(
    g: GraphContext, template: Manifest, runtime: str, policy: Manifest | None
) -> None:
    """Sidecar mode: the graph's env also under the runtime init container's, the KV policy on it alone."""
    init = template["spec"]["initContainers"]
    i = next(i for i, c in enumerate(init) if c.get("name") == runtime)
    container = dict(init[i])
    if g.dgd.spec.env:
        container["env"] = merge_env(g.dgd.spec.env, container.get("env"))
    if policy:
        container, template["spec"] = kvtransfer.apply_to_main(container, template["spec"], policy)
        init = template["spec"]["initContainers"]
    init[i] = container


def _propagate_metadata(g: GraphContext, meta: Manifest) -> None:
    annotations = dict(meta.get("annotations") or {})
    for key in names.PROPAGATED_ANNOTATIONS:
        if key in g.annotations and key not in annotations:
            annotations[key] = g.annotations[key]
    meta["annotations"] = _low_priority(annotations, g.dgd.spec.annotations)
    meta["labels"] = _low_priority(dict(meta.get("labels") or {}), g.dgd.spec.labels)


def _prune_empty(template: Manifest) -> Manifest:
    """Go omits empty maps and slices; so do we."""
    meta = {k: v for k, v in (template.get("metadata") or {}).items() if v}
    out = {k: v for k, v in template.items() if k != "metadata"}
    if meta:
        out = {"metadata": meta, **out}
    if not out.get("spec"):
        out.pop("spec", None)
    return out


def _stamp_picker_config(g: GraphContext, component: v1beta1.Component, spec: Manifest) -> None:
    """The graph's EPP writes its inline config to the EPP ConfigMap before the DCDs are generated,
    stamping apiVersion and kind into the graph's copy, which the EPP's DCD then carries."""
    config = (spec.get("eppConfig") or {}).get("config")
    if config is None or spec["eppConfig"].get("configMapRef") or epp.epp_component(g.dgd) is not component:
        return
    spec["eppConfig"]["config"] = {
        **config,
        "apiVersion": epp.PICKER_CONFIG_API_VERSION,
        "kind": epp.PICKER_CONFIG_KIND,
    }


def generate_dcd(
    g: GraphContext, component: v1beta1.Component, worker_hash: str | None, *, grove: bool = False
) -> Manifest:
    """The v1beta1 DCD for one component (`worker_hash` names worker generations).

    With `grove`, the component as the Grove pathway renders it (no DCD exists there): no worker
    hash, no EPP mesh opt-out, the Dynamo namespace label and effective discovery backend on the
    pod template, and only an explicit backendFramework.
    """
    # `to_wire` dumps a new document: the component's own data is never changed.
    spec: Manifest = component.to_wire()
    template = spec.get("podTemplate") or {}
    template_labels = dict((template.get("metadata") or {}).get("labels") or {})
    base = names.component_base_name(g.name, component.name)
    dcd_name = f"{base}-{worker_hash}" if component.is_worker and worker_hash else base
    labels = {
        **template_labels,
        names.LABEL_COMPONENT: component.name,
        names.LABEL_NAMESPACE: names.dynamo_namespace(
            g.namespace, g.name, bool(component.global_dynamo_namespace)
        ),
        names.LABEL_GRAPH: g.name,
    }
    annotations: dict[str, str] = {}
    # EnsureComponentPodTemplates: the roles' complete templates when they carry them, else the component's.
    role_templates = roles.role_pod_templates(spec)
    templates = role_templates or [template]
    metas = [t.setdefault("metadata", {}) for t in templates]
    meta = template.setdefault("metadata", {}) if not role_templates else {}
    if component.is_worker and not grove:
        labels[names.LABEL_WORKER_HASH] = worker_hash or ""
        for m in metas:
            m["labels"] = {**(m.get("labels") or {}), names.LABEL_WORKER_HASH: worker_hash or ""}
        if epp.has_epp(g.dgd):
            labels[names.LABEL_COMPONENT_CLASS] = names.COMPONENT_CLASS_WORKER
            for m in metas:
                m["labels"][names.LABEL_COMPONENT_CLASS] = names.COMPONENT_CLASS_WORKER
    defaults = defaults_for(component.type)
    type_annotations = defaults.dcd_annotations()
    if type_annotations and not grove and not role_templates:
        meta["annotations"] = {**type_annotations, **(meta.get("annotations") or {})}
    for t in templates:
        _template_defaults(g, component, t)
    if grove:
        for m in metas:
            m["labels"] = {**m.get("labels", {}), names.LABEL_NAMESPACE: labels[names.LABEL_NAMESPACE]}
            m["annotations"] = {
                **m.get("annotations", {}),
                names.ANNOTATION_DISCOVERY_BACKEND: g.discovery_backend,
            }
    policy = kvtransfer.policy_of(g.dgd)
    if policy and component.is_worker:
        annotations.update(kvtransfer.topology_annotations(policy))
    restart_at = g.restart_at.get(component.name)
    if restart_at:
        for m in metas:
            m["annotations"] = {**m.get("annotations", {}), names.ANNOTATION_RESTART_AT: restart_at}
    if defaults.dcd_service_account and not role_templates:
        template.setdefault("spec", {})["serviceAccountName"] = defaults.dcd_service_account
    if role_templates:
        spec["roles"] = [
            {**r, "podTemplate": _prune_empty(r["podTemplate"])} if r.get("podTemplate") is not None else r
            for r in spec["roles"]
        ]
    else:
        spec["podTemplate"] = _prune_empty(template)
        if not spec["podTemplate"]:
            spec.pop("podTemplate")
    _stamp_picker_config(g, component, spec)
    backend = (g.dgd.spec.backend_framework or "") if grove else g.backend
    if backend:
        spec["backendFramework"] = backend
    metadata: Manifest = {"name": dcd_name, "namespace": g.namespace, "labels": dict(sorted(labels.items()))}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": DCD_API_VERSION,
        "kind": DCD_KIND,
        "metadata": metadata,
        "spec": dict(sorted(spec.items())),
    }


def as_stored(dcd: Manifest) -> Manifest:
    """A generated DCD as the API server returns it once the operator created it: the spec as Go
    writes it (zero values of fields without omitempty, empty value structs dropped by the v1beta1
    normaliser), the CRD schema's defaults, and the DCD controller's finalizer. Keys keep the
    generated DCD's order; what Go or defaulting adds follows."""
    metadata = {**copy_json(dcd["metadata"]), "finalizers": [DCD_FINALIZER]}
    # A new document (the spec is built from Go's JSON, in the DCD's key order), defaulted in place.
    stored = {**dcd, "metadata": metadata, "spec": gojson.v1beta1_wire(dcd["spec"], keep_order=True)}
    schema = kube.crd_schema(DCD_KIND, DCD_API_VERSION.split("/")[-1])
    if schema and kube.apply_defaults(stored, schema):
        # A default may fill a key the DCD has but Go left out: back to the DCD's place.
        ordered: Manifest = gojson.ordered_like(dcd, stored)
        return ordered
    return stored
