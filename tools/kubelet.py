"""What a kubelet resolves for a container before it starts it, done for a local process.

Environment (envFrom, env with `$(VAR)` expansion, fieldRef / configMapKeyRef / secretKeyRef), the
service-account token bound to the pod, and the volumes a container mounts, each as a host folder
(claims: their bound hostPath volume; emptyDir: a folder per pod; configMap, secret and projected
volumes: their files written out, the projected token being the pod's bound token). Used by
tools/podprocs.py; reads with the harness's own client, as a kubelet reads with its node's.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from pathlib import Path

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube.client import KubeClient
from dynamo_infra.kube.connection import Connection

# Lifetime of the tokens handed to processes.
TOKEN_SECONDS = 3600
# Fields of the live pod a fieldRef may name, as a kubelet resolves them.
_FIELD_PATHS = {
    "metadata.name": ("metadata", "name"),
    "metadata.namespace": ("metadata", "namespace"),
    "metadata.uid": ("metadata", "uid"),
    "spec.nodeName": ("spec", "nodeName"),
    "spec.serviceAccountName": ("spec", "serviceAccountName"),
    "status.podIP": ("status", "podIP"),
    "status.hostIP": ("status", "hostIP"),
}
_LABEL_OR_ANNOTATION = re.compile(r"metadata\.(labels|annotations)\['([^']+)'\]")
_EXPANSION = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


class PodProcessError(RuntimeError):
    """A pod cannot be run as a process; the message names the pod and what is missing."""


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion: defined names are replaced, `$$` is a literal `$`."""

    def one(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))

    return _EXPANSION.sub(one, text)


def field_value(pod: Manifest, field_path: str) -> str:
    """A fieldRef of the live pod."""
    if field_path in _FIELD_PATHS:
        section, key = _FIELD_PATHS[field_path]
        return str((pod.get(section) or {}).get(key) or "")
    m = _LABEL_OR_ANNOTATION.fullmatch(field_path)
    if m:
        return str((pod["metadata"].get(m.group(1)) or {}).get(m.group(2), ""))
    raise PodProcessError(f"pod {pod['metadata']['name']}: fieldRef {field_path!r} is not supported")


def relocate(value: str, mounts: Mapping[str, Path]) -> str:
    """`value` with a leading mount path (or one right after a `=`) replaced by its host folder."""
    for mount in sorted(mounts, key=len, reverse=True):
        base = mount.rstrip("/")
        for cut in (0, *(i + 1 for i, c in enumerate(value) if c == "=")):
            rest = value[cut:]
            if rest == mount or rest.startswith(base + "/"):
                return value[:cut] + str(mounts[mount]) + rest[len(base) :]
    return value


class Kubelet:
    """Resolves one pod's containers, volumes and credential against the cluster."""

    def __init__(self, kube: KubeClient, conn: Connection, pod: Manifest, folder: Path) -> None:
        self.kube = kube
        self.conn = conn
        self.pod = pod
        self.folder = folder
        self.name = str(pod["metadata"]["name"])
        self.namespace = str(pod["metadata"]["namespace"])
        self._token: str | None = None

    # --- credential ---------------------------------------------------------------------------

    def token(self) -> str | None:
        """A token of the pod's service account bound to the pod (None: the pod opts out)."""
        if self.pod["spec"].get("automountServiceAccountToken") is False:
            return None
        if self._token is None:
            review = self.kube.request(
                "POST",
                f"/api/v1/namespaces/{self.namespace}/serviceaccounts/{self.account}/token",
                body={
                    "apiVersion": "authentication.k8s.io/v1",
                    "kind": "TokenRequest",
                    "spec": {
                        "expirationSeconds": TOKEN_SECONDS,
                        "boundObjectRef": {
                            "apiVersion": "v1",
                            "kind": "Pod",
                            "name": self.name,
                            "uid": self.pod["metadata"]["uid"],
                        },
                    },
                },
            )
            self._token = str(review["status"]["token"])
        return self._token

    @property
    def account(self) -> str:
        return str(self.pod["spec"].get("serviceAccountName") or "default")

    def kubeconfig(self) -> Path | None:
        """A kubeconfig to the API server holding only the pod's bound token."""
        token = self.token()
        if token is None:
            return None
        cluster: Manifest = {"server": self.conn.server}
        if self.conn.ca_pem:
            cluster["certificate-authority-data"] = base64.b64encode(self.conn.ca_pem).decode()
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "cluster", "cluster": cluster}],
            "users": [{"name": self.account, "user": {"token": token}}],
            "contexts": [
                {
                    "name": "pod",
                    "context": {"cluster": "cluster", "user": self.account, "namespace": self.namespace},
                }
            ],
            "current-context": "pod",
        }
        path = self.folder / "kubeconfig"
        self.folder.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(config, indent=2))
        path.chmod(0o600)
        return path

    # --- environment --------------------------------------------------------------------------

    def env(self, container: Manifest) -> dict[str, str]:
        """envFrom, then env (later entries win, `$(VAR)` expanded against the earlier ones)."""
        env: dict[str, str] = {}
        for source in container.get("envFrom") or []:
            prefix = source.get("prefix", "")
            for kind, key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
                ref = source.get(key)
                if ref:
                    for k, v in self.data(kind, ref["name"], ref.get("optional", False)).items():
                        env[prefix + k] = v
        for item in container.get("env") or []:
            src = item.get("valueFrom")
            if src is None:
                env[item["name"]] = expand(str(item.get("value", "")), env)
            elif "fieldRef" in src:
                env[item["name"]] = field_value(self.pod, src["fieldRef"]["fieldPath"])
            elif "configMapKeyRef" in src or "secretKeyRef" in src:
                kind, ref = (
                    ("ConfigMap", src["configMapKeyRef"])
                    if "configMapKeyRef" in src
                    else ("Secret", src["secretKeyRef"])
                )
                data = self.data(kind, ref["name"], ref.get("optional", False))
                if ref["key"] in data:
                    env[item["name"]] = data[ref["key"]]
                elif not ref.get("optional", False):
                    raise PodProcessError(f"pod {self.name}: {kind} {ref['name']} has no key {ref['key']}")
            else:
                raise PodProcessError(f"pod {self.name}: env {item['name']}: {sorted(src)} is not supported")
        return env

    def data(self, kind: str, name: str, optional: bool = False) -> dict[str, str]:
        """A ConfigMap's or Secret's data, decoded."""
        obj = self.kube.get(
            {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": self.namespace}}
        )
        if obj is None:
            if optional:
                return {}
            raise PodProcessError(
                f"pod {self.name}: {kind} {self.namespace}/{name} does not exist (the pod could not start)"
            )
        if kind == "Secret":
            return {k: base64.b64decode(v).decode() for k, v in (obj.get("data") or {}).items()}
        return dict(obj.get("data") or {})

    # --- volumes ------------------------------------------------------------------------------

    def mounts(self, container: Manifest) -> dict[str, Path]:
        """Each mount path of the container -> the host folder behind it."""
        volumes = {v["name"]: v for v in self.pod["spec"].get("volumes") or []}
        out: dict[str, Path] = {}
        for m in container.get("volumeMounts") or []:
            volume = volumes.get(m["name"])
            if volume is None:
                raise PodProcessError(f"pod {self.name}: no volume {m['name']!r}")
            host = self.volume(volume)
            out[m["mountPath"]] = host / m["subPath"] if m.get("subPath") else host
        return out

    def volume(self, volume: Manifest) -> Path:
        """The host folder of one of the pod's volumes."""
        name = str(volume["name"])
        if "persistentVolumeClaim" in volume:
            return claim_dir(self.kube, self.namespace, volume["persistentVolumeClaim"]["claimName"])
        if "hostPath" in volume:
            return Path(volume["hostPath"]["path"])
        local = self.folder / "volumes" / name
        local.mkdir(parents=True, exist_ok=True)
        if "emptyDir" in volume:
            return local
        if "configMap" in volume or "secret" in volume:
            kind, ref = (
                ("ConfigMap", volume["configMap"]) if "configMap" in volume else ("Secret", volume["secret"])
            )
            self._write_keys(local, kind, ref.get("name") or ref["secretName"], ref)
            return local
        if "projected" in volume:
            for source in volume["projected"].get("sources") or []:
                self._write_projection(local, source)
            return local
        raise PodProcessError(
            f"pod {self.name}: volume {name!r} of type {sorted(k for k in volume if k != 'name')} "
            "cannot be played by the harness"
        )

    def _write_keys(self, folder: Path, kind: str, name: str, ref: Manifest) -> None:
        data = self.data(kind, name, ref.get("optional", False))
        paths = {i["key"]: i["path"] for i in ref.get("items") or []} or {k: k for k in data}
        for key, path in paths.items():
            _write(folder / path, data[key])

    def _write_projection(self, folder: Path, source: Manifest) -> None:
        if "serviceAccountToken" in source:
            token = self.token()
            if token is not None:
                _write(folder / source["serviceAccountToken"]["path"], token)
        elif "configMap" in source or "secret" in source:
            kind, ref = (
                ("ConfigMap", source["configMap"]) if "configMap" in source else ("Secret", source["secret"])
            )
            self._write_keys(folder, kind, ref["name"], ref)
        elif "downwardAPI" in source:
            for item in source["downwardAPI"].get("items") or []:
                if "fieldRef" not in item:
                    raise PodProcessError(
                        f"pod {self.name}: downwardAPI {item['path']}: only fieldRef is played"
                    )
                _write(folder / item["path"], field_value(self.pod, item["fieldRef"]["fieldPath"]))
        else:
            raise PodProcessError(f"pod {self.name}: projected source {sorted(source)} is not played")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def claim_dir(kube: KubeClient, namespace: str, claim: str) -> Path:
    """The host folder of a bound claim's hostPath volume (what the local provisioner makes)."""
    pvc = kube.get(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "namespace": namespace},
        }
    )
    volume_name = ((pvc or {}).get("spec") or {}).get("volumeName")
    if not volume_name:
        raise PodProcessError(f"claim {namespace}/{claim} is not bound")
    pv = kube.get({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": volume_name}})
    path = (((pv or {}).get("spec") or {}).get("hostPath") or {}).get("path")
    if not path:
        raise PodProcessError(f"volume {volume_name} of claim {namespace}/{claim} is not a hostPath volume")
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder
