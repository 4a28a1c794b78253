"""Image pull secret discovery as pure functions: which dockerconfigjson secrets match an image."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dynamo_infra.api.admission import sidecar
from dynamo_infra.api.manifest import Manifest

# Secret type and data key of a docker config secret.
DOCKERCONFIGJSON_TYPE = "kubernetes.io/dockerconfigjson"
DOCKERCONFIGJSON_KEY = ".dockerconfigjson"


@dataclass(frozen=True)
class PullSecret:
    """A dockerconfigjson secret of the namespace: its name and the registry hosts it authenticates."""

    name: str
    hosts: frozenset[str]


def registry_host(ref: str) -> str:
    """The host of a registry URL or image reference (scheme and path dropped, port kept)."""
    rest = ref.split("://", 1)[-1]
    return rest.split("/", 1)[0].lower()


def from_secret(secret: Mapping[str, Any]) -> PullSecret | None:
    """A PullSecret from a Secret object as the API returns it (base64 `data`), else None."""
    if secret.get("type") != DOCKERCONFIGJSON_TYPE:
        return None
    raw = (secret.get("data") or {}).get(DOCKERCONFIGJSON_KEY)
    try:
        auths = json.loads(base64.b64decode(raw or "")).get("auths") or {}
    except (ValueError, AttributeError):
        return None
    name = str((secret.get("metadata") or {}).get("name") or "")
    return PullSecret(name, frozenset(registry_host(a) for a in auths)) if name else None


def matching(images: Iterable[str], secrets: Sequence[PullSecret]) -> list[str]:
    """Names of the secrets whose registries serve any of the images (sorted, unique, image order)."""
    out: list[str] = []
    for image in images:
        host = registry_host(image)
        for name in sorted({s.name for s in secrets if host in s.hosts}):
            if name not in out:
                out.append(name)
    return out


def with_pull_secrets(pod_spec: Manifest, secrets: Sequence[PullSecret]) -> Manifest:
    """The pod spec with matching secrets appended to `imagePullSecrets` (no duplicates)."""
    images = [c["image"] for c in pod_spec.get("containers") or [] if c.get("image")]
    runtime = sidecar.runtime_sidecar(pod_spec, None)
    if runtime is not None:
        # Sidecar mode: the runtime init container's image is pulled with the pod's secrets too.
        images.append(str(runtime["image"]))
    current = list(pod_spec.get("imagePullSecrets") or [])
    names = {r.get("name") for r in current}
    extra = [{"name": n} for n in matching(images, secrets) if n not in names]
    return {**pod_spec, "imagePullSecrets": [*current, *extra]} if extra else pod_spec


def _template_paths(obj: Manifest) -> list[tuple[str, ...]]:
    """Where a workload keeps its pod templates (metadata + spec) or bare pod specs."""
    kind = obj.get("kind")
    if kind == "Deployment":
        return [("spec", "template")]
    if kind == "LeaderWorkerSet":
        return [
            ("spec", "leaderWorkerTemplate", "leaderTemplate"),
            ("spec", "leaderWorkerTemplate", "workerTemplate"),
        ]
    return []


def _disabled(annotations: Mapping[str, Any]) -> bool:
    return annotations.get("nvidia.com/disable-image-pull-secret-discovery") == "true"


def _set(obj: Manifest, path: tuple[str, ...], value: Any) -> Manifest:
    if len(path) == 1:
        return {**obj, path[0]: value}
    return {**obj, path[0]: _set(obj[path[0]], path[1:], value)}


def with_workload_pull_secrets(obj: Manifest, secrets: Sequence[PullSecret]) -> Manifest:
    """A rendered workload (Deployment, LeaderWorkerSet, PodCliqueSet) with discovered secrets on
    its pods, unless their annotations opt out; other kinds unchanged."""
    if obj.get("kind") == "PodCliqueSet":
        cliques = []
        for clique in obj["spec"]["template"].get("cliques") or []:
            if not _disabled(clique.get("annotations") or {}):
                clique = {
                    **clique,
                    "spec": {
                        **clique["spec"],
                        "podSpec": with_pull_secrets(clique["spec"]["podSpec"], secrets),
                    },
                }
            cliques.append(clique)
        return _set(obj, ("spec", "template", "cliques"), cliques)
    for path in _template_paths(obj):
        template = obj
        for key in path:
            template = template[key]
        if _disabled((template.get("metadata") or {}).get("annotations") or {}):
            continue
        spec = with_pull_secrets(template["spec"], secrets)
        if spec is not template["spec"]:
            obj = _set(obj, (*path, "spec"), spec)
    return obj
