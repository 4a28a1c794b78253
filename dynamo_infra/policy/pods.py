"""The pods a set of rendered manifests asks for: each pod template with how many pods run it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from dynamo_infra.api.manifest import Manifest

# Kinds whose `spec.template` is one pod template run `spec.replicas` times (absent: 1, as the API server defaults).
REPLICATED_KINDS = frozenset({"Deployment", "StatefulSet", "ReplicaSet"})


@dataclass(frozen=True)
class PodTemplate:
    """One pod template of a workload and how many pods of it the workload runs."""

    workload: str  # `<kind>/<namespace>/<name>`
    role: str  # "" for a single-template workload; leader/worker, or the Grove clique's name
    pods: int
    spec: Manifest  # the pod spec


def workload_key(obj: Manifest) -> str:
    meta = obj.get("metadata") or {}
    return f"{obj.get('kind')}/{meta.get('namespace', '')}/{meta.get('name', '')}"


def _count(value: Any, default: int = 1) -> int:
    """A replica count (a whole float counts: Pulumi carries numbers as doubles)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        return default
    return int(value)


def _pod_spec(template: Any) -> Manifest:
    return dict((template or {}).get("spec") or {}) if isinstance(template, Mapping) else {}


def pod_templates(obj: Manifest) -> Iterator[PodTemplate]:
    """The pod templates of one object (none for kinds that run no pods)."""
    kind, spec, key = obj.get("kind"), obj.get("spec") or {}, workload_key(obj)
    if kind == "Pod":
        yield PodTemplate(key, "", 1, dict(spec))
    elif kind in REPLICATED_KINDS:
        yield PodTemplate(key, "", _count(spec.get("replicas")), _pod_spec(spec.get("template")))
    elif kind == "Job":
        yield PodTemplate(key, "", _count(spec.get("parallelism")), _pod_spec(spec.get("template")))
    elif kind == "LeaderWorkerSet":
        yield from _leader_worker_set(key, spec)
    elif kind == "PodCliqueSet":
        yield from _pod_clique_set(key, spec)


def _leader_worker_set(key: str, spec: Manifest) -> Iterator[PodTemplate]:
    """Each group: one leader (its own template, else the worker's) and `size - 1` workers."""
    replicas = _count(spec.get("replicas"))
    lwt = spec.get("leaderWorkerTemplate") or {}
    size = _count(lwt.get("size"))
    worker = _pod_spec(lwt.get("workerTemplate"))
    leader = _pod_spec(lwt.get("leaderTemplate")) if lwt.get("leaderTemplate") else worker
    yield PodTemplate(key, "leader", replicas, leader)
    if size > 1:
        yield PodTemplate(key, "worker", replicas * (size - 1), worker)


def _pod_clique_set(key: str, spec: Manifest) -> Iterator[PodTemplate]:
    """Grove: each clique's replicas, times its scaling group's replicas, times the set's replicas."""
    replicas = _count(spec.get("replicas"))
    template = spec.get("template") or {}
    group_replicas = {
        name: _count(group.get("replicas"))
        for group in template.get("podCliqueScalingGroups") or []
        for name in group.get("cliqueNames") or []
    }
    for clique in template.get("cliques") or []:
        name = str(clique.get("name", ""))
        clique_spec = clique.get("spec") or {}
        pods = replicas * group_replicas.get(name, 1) * _count(clique_spec.get("replicas"))
        yield PodTemplate(key, name, pods, dict(clique_spec.get("podSpec") or {}))


def all_pod_templates(objects: Iterable[Manifest]) -> list[PodTemplate]:
    return [t for obj in objects for t in pod_templates(obj)]


def containers(spec: Manifest) -> Iterator[tuple[str, Manifest]]:
    """("containers"|"initContainers", container) of a pod spec."""
    for field in ("initContainers", "containers"):
        for c in spec.get(field) or []:
            if isinstance(c, Mapping):
                yield field, dict(c)


def named_containers(templates: Iterable[PodTemplate]) -> Iterator[tuple[str, Manifest]]:
    """(`<workload> (<role>) container <name>`, container) of every container of the templates."""
    for t in templates:
        role = f" ({t.role})" if t.role else ""
        for _, c in containers(t.spec):
            yield f"{t.workload}{role} container {c.get('name')}", c
