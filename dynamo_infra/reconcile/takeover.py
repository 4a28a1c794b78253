"""Taking over a graph the Dynamo operator deployed, once the operator is gone (docs/how-to/take-over.md:
"Moving a graph from the operator").

The operator leaves, per graph: the DynamoGraphDeployment (DGD) the user created; one
DynamoComponentDeployment (DCD) per component, owned by the DGD; each component's workload and
Service, owned by its DCD; the graph's discovery RBAC, owned by the DGD; the operator's finalizer on
the DGD and every DCD. A component that first applies an object the operator left for the SAME graph
takes it over instead of refusing it (decision 3 still refuses everything else):

1. the caller applies what we render, forced: a render equal to the operator's changes nothing in a
   pod template, so no pod restarts;
2. `remove_finalizers`: the operator's finalizer goes from the graph's DCDs and its DGD (nothing
   removes it any more: deleting them would hang);
3. `release`: the object's ownerReferences to the graph's DGD and DCDs go (deleting the DGD later must
   not garbage-collect what is ours now), so do the annotations only the operator's change detection
   reads and the operator's managedFields entries, so that we alone own what we render (a field we
   stop rendering is removed, not kept by a stale owner); what only the operator set (server
   defaults) stays, unowned, as on the objects we create. Until then the object is still the
   operator's, so the next `up` takes it over again when one of these steps failed.

An object is the operator's for graph G when a managedFields entry names the operator's field
manager and its ownerReference names the live DGD G (same uid) or a live DCD whose controller is
that DGD. The DGD and DCDs themselves are not ours: they are read and their finalizer removed,
nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from dynamo_infra.api import v1alpha1, v1beta1
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.errors import DynamoInfraError
from dynamo_infra.kube.client import KubeClient, stub
from dynamo_infra.kube.errors import Conflict, KubeError
from dynamo_infra.render.names import LABEL_GRAPH

DGD_KIND = "DynamoGraphDeployment"
DCD_KIND = "DynamoComponentDeployment"
# The finalizer the operator puts on every DGD and DCD it reconciles.
OPERATOR_FINALIZER = "nvidia.com/finalizer"
# Field managers the operator writes under: controller-runtime names them after the binary, `/manager`
# in the operator's image and Helm chart, `dynamo-operator` where it is built under that name.
OPERATOR_FIELD_MANAGERS = ("manager", "dynamo-operator")
# Annotations only the operator's change detection reads (the spec hash and generation it last applied).
OPERATOR_ANNOTATIONS = ("nvidia.com/last-applied-hash", "nvidia.com/last-applied-generation")
# Versions a DGD or DCD is read in, the one 1.4.0 stores first: the operator serves the CRDs'
# conversion webhook, so once it is gone the API server reads them only in their stored version.
DYNAMO_API_VERSIONS = (v1alpha1.API_VERSION, v1beta1.API_VERSION)
# Fields of a workload's spec whose change replaces its pods (Deployment, StatefulSet, Job and Grove's
# PodCliqueSet: `template`; LeaderWorkerSet: `leaderWorkerTemplate`).
POD_TEMPLATE_FIELDS = ("template", "leaderWorkerTemplate")
# How the API server words a write refused because an admission webhook did not answer.
WEBHOOK_FAILURE = "failed calling webhook"
# Attempts of a conditional write whose object keeps changing under it (a controller's status updates).
CONDITIONAL_ATTEMPTS = 5

T = TypeVar("T")


class TakeOverFailed(DynamoInfraError):
    """A write taking over failed: its object kept changing, or the stopped operator's admission
    webhook is still registered."""


@dataclass(frozen=True)
class OperatorOwner:
    """A DGD or DCD that an ownerReference names."""

    kind: str
    name: str
    uid: str

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


def operator_owners(meta: Manifest) -> list[OperatorOwner]:
    """The ownerReferences of an object's metadata to a DGD or DCD, its controller first."""
    refs = [
        r
        for r in meta.get("ownerReferences") or []
        if r.get("kind") in (DGD_KIND, DCD_KIND) and str(r.get("apiVersion", "")).startswith("nvidia.com/")
    ]
    refs.sort(key=lambda r: not r.get("controller"))
    return [OperatorOwner(str(r["kind"]), str(r.get("name", "")), str(r.get("uid", ""))) for r in refs]


def written_by_operator(meta: Manifest) -> bool:
    return any(m.get("manager") in OPERATOR_FIELD_MANAGERS for m in meta.get("managedFields") or [])


def _pointer(key: str) -> str:
    """A map key as a JSON-pointer token (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


def owner_operations(meta: Manifest, owners: Collection[str]) -> list[Manifest]:
    """JSON-patch operations dropping an object's ownerReferences to the uids in `owners`."""
    refs = meta.get("ownerReferences") or []
    kept = [r for r in refs if r.get("uid") not in owners]
    if len(kept) == len(refs):
        return []
    if not kept:
        return [{"op": "remove", "path": "/metadata/ownerReferences"}]
    return [{"op": "replace", "path": "/metadata/ownerReferences", "value": kept}]


def release_operations(meta: Manifest, owners: Collection[str]) -> list[Manifest]:
    """JSON-patch operations dropping what ties an object to the operator: ownerReferences to the
    uids in `owners`, the operator's annotations and managedFields entries (none: nothing to drop)."""
    ops = owner_operations(meta, owners)
    annotations = meta.get("annotations") or {}
    ops.extend(
        {"op": "remove", "path": f"/metadata/annotations/{_pointer(k)}"}
        for k in OPERATOR_ANNOTATIONS
        if k in annotations
    )
    entries = meta.get("managedFields") or []
    others = [m for m in entries if m.get("manager") not in OPERATOR_FIELD_MANAGERS]
    # An empty list would leave managedFields as they are: only ever drop entries beside others.
    if others and len(others) < len(entries):
        ops.append({"op": "replace", "path": "/metadata/managedFields", "value": others})
    return ops


def finalizer_operations(meta: Manifest) -> list[Manifest]:
    """JSON-patch operations removing the operator's finalizer (none: it is not there)."""
    finalizers = meta.get("finalizers") or []
    if OPERATOR_FINALIZER not in finalizers:
        return []
    kept = [f for f in finalizers if f != OPERATOR_FINALIZER]
    return [{"op": "replace", "path": "/metadata/finalizers", "value": kept}]


def changed_paths(before: Any, after: Any, path: str = "", limit: int = 5) -> list[str]:
    """Where two values differ, as dotted paths (at most `limit`; a list differing in length is one path)."""
    if before == after:
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        found: list[str] = []
        for k in sorted(set(before) | set(after)):
            found += changed_paths(before.get(k), after.get(k), f"{path}.{k}" if path else k, limit)
            if len(found) >= limit:
                break
        return found[:limit]
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        found = []
        for i, (b, a) in enumerate(zip(before, after, strict=True)):
            found += changed_paths(b, a, f"{path}[{i}]", limit)
        return found[:limit]
    return [path]


def pod_template_changes(before: Manifest, after: Manifest) -> list[str]:
    """Paths of a workload's pod templates that our apply changed: its pods are replaced."""

    def templates(obj: Manifest) -> dict[str, Any]:
        spec = obj.get("spec") or {}
        return {k: spec[k] for k in POD_TEMPLATE_FIELDS if k in spec}

    return [f"spec.{p}" for p in changed_paths(templates(before), templates(after))]


def _kind_and_name(key: str) -> str:
    parts = key.split("/")
    return f"{parts[-3]} {parts[-1]}"


@dataclass
class TakeOver:
    """What a reconcile took over from the operator: objects (key: former owner), the objects the
    operator's finalizer was removed from, and workloads whose pods are replaced (paths that changed)."""

    objects: dict[str, str] = field(default_factory=dict)
    finalizers_removed: list[str] = field(default_factory=list)
    pods_replaced: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The output form: empty when nothing was taken over."""
        if not (self.objects or self.finalizers_removed):
            return {}
        return {
            "objects": dict(sorted(self.objects.items())),
            "finalizersRemoved": sorted(set(self.finalizers_removed)),
            "podsReplaced": dict(sorted(self.pods_replaced.items())),
        }

    def lines(self, label: str) -> list[str]:
        """Progress lines in Dynamo's words."""
        out = []
        by_owner: dict[str, list[str]] = {}
        for key, owner in sorted(self.objects.items()):
            by_owner.setdefault(owner, []).append(_kind_and_name(key))
        for owner, objects in by_owner.items():
            out.append(
                f"{label}: took over {', '.join(objects)} from the Dynamo operator "
                f"({owner} no longer owns them)"
            )
        for key, paths in sorted(self.pods_replaced.items()):
            out.append(
                f"{label}: {_kind_and_name(key)} differs from what the operator rendered at "
                f"{', '.join(paths)}: its pods are replaced"
            )
        if self.objects and not self.pods_replaced:
            out.append(f"{label}: no pod template changed: the operator's pods keep running")
        if self.finalizers_removed:
            out.append(
                f"{label}: removed the operator's finalizer {OPERATOR_FINALIZER} from "
                f"{', '.join(sorted(set(self.finalizers_removed)))}"
            )
        return out


def merged_take_overs(reports: Iterable[Mapping[str, Any] | None]) -> dict[str, Any]:
    """Several `TakeOver.to_dict()` outputs as one (components of a graph, or successive updates)."""
    total = TakeOver()
    for r in reports:
        total.objects.update((r or {}).get("objects") or {})
        total.finalizers_removed.extend((r or {}).get("finalizersRemoved") or [])
        total.pods_replaced.update((r or {}).get("podsReplaced") or {})
    return total.to_dict()


class OperatorGraph:
    """The operator's objects of one graph as the API server holds them: its DGD and DCDs, read when
    first needed (metadata only, once per reconcile) in the first Dynamo API version served."""

    def __init__(self, client: KubeClient, namespace: str, graph: str) -> None:
        self.client, self.namespace, self.graph = client, namespace, graph
        self._read: dict[tuple[str, str], tuple[str, Manifest | None]] = {}
        # uids of this graph's DGD and DCDs that objects taken over were owned by.
        self.owners: set[str] = set()

    def _readable(self, read: Callable[[str], T]) -> tuple[str, T]:
        """`read(apiVersion)` in the first Dynamo API version the API server answers it in."""
        failed: KubeError | None = None
        for version in DYNAMO_API_VERSIONS:
            try:
                return version, read(version)
            except KubeError as e:
                failed = failed or e
        assert failed is not None
        raise failed

    def _metadata(self, kind: str, name: str) -> tuple[str, Manifest | None]:
        """(version read in, metadata or None when absent)."""
        if (kind, name) not in self._read:
            version, found = self._readable(
                lambda v: self.client.get_metadata(stub(v, kind, self.namespace, name))
            )
            self._read[(kind, name)] = (version, found["metadata"] if found else None)
        return self._read[(kind, name)]

    def _dgd_refusal(self, ref: OperatorOwner) -> str | None:
        if ref.name != self.graph:
            return f"of graph {ref.name}, not {self.graph}"
        _, dgd = self._metadata(DGD_KIND, self.graph)
        if dgd is None:
            return f"whose {DGD_KIND} {self.graph} no longer exists"
        if dgd.get("uid") != ref.uid:
            return f"of an earlier {DGD_KIND} {self.graph} (uid {ref.uid})"
        self.owners.add(ref.uid)
        return None

    def refusal(self, meta: Manifest) -> str | None:
        """Why an object (its metadata) is not the operator's object of this graph; None: it is."""
        owners = operator_owners(meta)
        if not owners:
            return "not the Dynamo operator's"
        if not written_by_operator(meta):
            managers = " or ".join(OPERATOR_FIELD_MANAGERS)
            return f"but never written by the operator (no managedFields entry of {managers})"
        ref = owners[0]
        if ref.kind == DGD_KIND:
            return self._dgd_refusal(ref)
        _, dcd = self._metadata(DCD_KIND, ref.name)
        if dcd is None or dcd.get("uid") != ref.uid:
            return f"whose {ref} no longer exists"
        parents = [o for o in operator_owners(dcd) if o.kind == DGD_KIND]
        if not parents:
            return f"whose {ref} belongs to no {DGD_KIND}"
        why = self._dgd_refusal(parents[0])
        if why is None:
            self.owners.add(ref.uid)
        return why

    def _conditionally(
        self, target: Manifest, meta: Manifest, operations: Callable[[Manifest], list[Manifest]]
    ) -> bool:
        """Patch `target` with `operations(its metadata)`, conditional on the metadata read; re-read
        and retried when it changed meanwhile. False when there was nothing to change."""
        for _ in range(CONDITIONAL_ATTEMPTS):
            ops = operations(meta)
            if not ops:
                return False
            version = {"op": "replace", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]}
            try:
                self.client.patch(target, [version, *ops])
                return True
            except Conflict:
                live = self.client.get_metadata(target)
                if live is None:
                    return False
                meta = live["metadata"]
            except KubeError as e:
                if WEBHOOK_FAILURE in str(e):
                    raise TakeOverFailed(
                        f"{target['kind']} {target['metadata']['name']}: the operator's admission webhook "
                        f"does not answer ({e}); the operator is stopped but its webhook configurations are "
                        "still registered: uninstall its Helm release (its CRDs stay), or delete its "
                        "ValidatingWebhookConfiguration and MutatingWebhookConfiguration, and run `up` again"
                    ) from e
                raise
        name = target["metadata"]["name"]
        raise TakeOverFailed(f"{target['kind']} {name} changed under {CONDITIONAL_ATTEMPTS} writes in a row")

    def release(
        self,
        live: Manifest,
        operations: Callable[[Manifest, Collection[str]], list[Manifest]] = release_operations,
    ) -> None:
        """Untie an object (as the API server returned it) from the operator: `operations` (all of
        `release_operations` by default) against the graph's DGD and DCDs it was found owned by."""
        self._conditionally(live, live["metadata"], lambda meta: operations(meta, self.owners))

    def remove_finalizers(self) -> list[str]:
        """Remove the operator's finalizer from this graph's DCDs and DGD; those it was removed from."""
        version, dgd = self._metadata(DGD_KIND, self.graph)
        if dgd is None:
            return []
        uid = dgd.get("uid")
        selector = f"{LABEL_GRAPH}={self.graph}"
        dcd_version, dcds = version, list[Manifest]()
        # The DCD CRD is the operator's alone (the platform installs none): without it, no DCDs.
        if any(self.client.serves(v, DCD_KIND) for v in DYNAMO_API_VERSIONS):
            dcd_version, dcds = self._readable(
                lambda v: self.client.list(v, DCD_KIND, self.namespace, label_selector=selector)
            )
        targets = [
            (stub(dcd_version, DCD_KIND, self.namespace, d["metadata"]["name"]), d["metadata"])
            for d in dcds
            if uid in {o.uid for o in operator_owners(d["metadata"])}
        ]
        targets.append((stub(version, DGD_KIND, self.namespace, self.graph), dgd))
        return [
            f"{target['kind']} {target['metadata']['name']}"
            for target, meta in targets
            if self._conditionally(target, meta, finalizer_operations)
        ]


def take_over(
    operator: OperatorGraph,
    adopted: Mapping[str, Manifest],
    before: Mapping[str, Manifest | None],
    stored: Mapping[str, Manifest],
) -> TakeOver:
    """Finish taking over the `adopted` objects (key: metadata as found) once we applied them
    (`stored`: as the API server returned them): remove the operator's finalizers, release each
    object, tell which workloads' pods are replaced (`before`: workloads as found).

    Finalizers go first: until an object is released, the next `up` takes it over again, so a
    failure here is retried there.
    """
    report = TakeOver()
    if not adopted:
        return report
    report.finalizers_removed = operator.remove_finalizers()
    for key, meta in adopted.items():
        report.objects[key] = str(operator_owners(meta)[0])
        operator.release(stored[key])
        found = before.get(key)
        changes = pod_template_changes(found, stored[key]) if found else []
        if changes:
            report.pods_replaced[key] = changes
    return report
