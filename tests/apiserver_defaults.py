"""The defaults the Kubernetes API server adds to objects we render (for pure comparisons).

Covers the fields the operator's expected and rendered outputs show for Deployments, Services, pod
templates, LeaderWorkerSets, PodCliqueSets and InferencePools (CRD schema defaults; pod templates
inside custom resources get no core defaulting);
the integration tests compare against objects read back from a real API server instead.
"""

from __future__ import annotations

import copy
import re

from dynamo_infra.api.manifest import Manifest

PROBE_DEFAULTS = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
# Projected / configMap / secret / downwardAPI volumes default to mode 0644.
DEFAULT_MODE = 420


# A container image reference (distribution's grammar): optional registry, path, tag, digest.
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE_REFERENCE = re.compile(
    rf"^(?:(?P<domain>[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*"
    rf"(?::[0-9]+)?)/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}))?$"
)


def _pull_policy(image: str | None) -> str:
    """Always for the tag `latest` (implied when a valid reference has neither tag nor digest);
    IfNotPresent otherwise, a reference that does not parse included."""
    m = _IMAGE_REFERENCE.match(image or "")
    if not m:
        return "IfNotPresent"
    tag = m["tag"] or ("" if m["digest"] else "latest")
    return "Always" if tag == "latest" else "IfNotPresent"


def _probe(p: Manifest | None) -> Manifest | None:
    if not p:
        return p
    out = {**PROBE_DEFAULTS, **p}
    if "httpGet" in out:
        out["httpGet"] = {"scheme": "HTTP", **out["httpGet"]}
    if "grpc" in out:
        out["grpc"] = {"service": "", **out["grpc"]}
    return out


def _env(env: list[Manifest] | None) -> list[Manifest] | None:
    if env is None:
        return None
    out = []
    for e in env:
        ref = (e.get("valueFrom") or {}).get("fieldRef")
        if ref is not None:
            e = {**e, "valueFrom": {**e["valueFrom"], "fieldRef": {"apiVersion": "v1", **ref}}}
        out.append(e)
    return out


def container(c: Manifest) -> Manifest:
    out = {
        "imagePullPolicy": _pull_policy(c.get("image")),
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "resources": {},
        **c,
    }
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if out.get(probe):
            out[probe] = _probe(out[probe])
    if "ports" in out:
        out["ports"] = [{"protocol": "TCP", **p} for p in out["ports"]]
    if "env" in out:
        out["env"] = _env(out["env"])
    return out


def _volume(v: Manifest) -> Manifest:
    for kind in ("configMap", "secret", "downwardAPI"):
        if kind in v:
            src = {"defaultMode": DEFAULT_MODE, **v[kind]}
            if kind == "downwardAPI" and "items" in src:
                src["items"] = [
                    {**i, "fieldRef": {"apiVersion": "v1", **i["fieldRef"]}} if "fieldRef" in i else i
                    for i in src["items"]
                ]
            return {**v, kind: src}
    return v


def pod_spec(spec: Manifest) -> Manifest:
    out = {
        "dnsPolicy": "ClusterFirst",
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "terminationGracePeriodSeconds": 30,
        **spec,
    }
    if out.get("serviceAccountName"):
        out.setdefault("serviceAccount", out["serviceAccountName"])
    out["containers"] = [container(c) for c in out.get("containers") or []]
    if "initContainers" in out:
        out["initContainers"] = [container(c) for c in out["initContainers"]]
    if "volumes" in out:
        out["volumes"] = [_volume(v) for v in out["volumes"]]
    return out


def deployment(d: Manifest) -> Manifest:
    out = copy.deepcopy(d)
    spec = out["spec"]
    spec.setdefault("replicas", 1)
    spec.setdefault("progressDeadlineSeconds", 600)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault(
        "strategy", {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
    )
    spec["template"]["spec"] = pod_spec(spec["template"]["spec"])
    return out


def service(s: Manifest) -> Manifest:
    """Service defaults of a single-stack IPv4 cluster."""
    out = copy.deepcopy(s)
    spec = out["spec"]
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    if spec["type"] != "ExternalName":
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("ipFamilies", ["IPv4"])
    spec["ports"] = [{"protocol": "TCP", **p} for p in spec.get("ports") or []]
    return out


def leader_worker_set(obj: Manifest) -> Manifest:
    """LeaderWorkerSet CRD schema defaults, plus the LWS webhook's `networkConfig` default."""
    out = copy.deepcopy(obj)
    spec = out["spec"]
    spec.setdefault("replicas", 1)
    spec.setdefault("startupPolicy", "LeaderCreated")
    spec.setdefault("networkConfig", {"subdomainPolicy": "Shared"})
    rollout = spec.setdefault("rolloutStrategy", {})
    rollout.setdefault("type", "RollingUpdate")
    rolling = rollout.setdefault("rollingUpdateConfiguration", {})
    for key, value in (("maxSurge", 0), ("maxUnavailable", 1), ("partition", 0)):
        rolling.setdefault(key, value)
    template = spec["leaderWorkerTemplate"]
    template.setdefault("size", 1)
    template.setdefault("restartPolicy", "RecreateGroupOnPodRestart")
    return out


def pod_clique_set(obj: Manifest) -> Manifest:
    """PodCliqueSet CRD schema defaults."""
    out = copy.deepcopy(obj)
    spec = out["spec"]
    spec.setdefault("replicas", 0)
    template = spec["template"]
    template.setdefault("cliqueStartupType", "CliqueStartupTypeAnyOrder")
    if "headlessServiceConfig" in template:
        template["headlessServiceConfig"].setdefault("publishNotReadyAddresses", True)
    for group in template.get("podCliqueScalingGroups") or []:
        group.setdefault("replicas", 1)
        group.setdefault("minAvailable", 1)
    if "updateStrategy" in spec:
        spec["updateStrategy"].setdefault("type", "RollingRecreate")
    return out


def inference_pool(obj: Manifest) -> Manifest:
    """InferencePool (inference.networking.k8s.io/v1) CRD schema defaults of the endpoint picker."""
    out = copy.deepcopy(obj)
    picker = out["spec"].get("endpointPickerRef")
    if picker is not None:
        picker.setdefault("group", "")
        picker.setdefault("failureMode", "FailClose")
    return out


DEFAULTERS = {
    ("apps/v1", "Deployment"): deployment,
    ("v1", "Service"): service,
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): leader_worker_set,
    ("grove.io/v1alpha1", "PodCliqueSet"): pod_clique_set,
    ("inference.networking.k8s.io/v1", "InferencePool"): inference_pool,
}


def with_defaults(obj: Manifest) -> Manifest:
    """`obj` as the API server would store it (for the kinds listed in DEFAULTERS)."""
    fn = DEFAULTERS.get((obj.get("apiVersion", ""), obj.get("kind", "")))
    return fn(obj) if fn else obj
