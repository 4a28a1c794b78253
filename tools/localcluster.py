"""A local Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, kwok (fake kubelets whose nodes advertise `nvidia.com/gpu`, their GPUs also published
as DRA devices of driver `gpu.nvidia.com`) and the LeaderWorkerSet controller with its webhooks.

The LeaderWorkerSet CRD is installed by the cluster itself (the file the platform layer ships, under
the platform's field manager, so a stack's `installCrds: [lws]` adopts it unchanged) before the
controller starts: the controller needs its kind served, and its webhooks must answer before the
first LeaderWorkerSet is created.

Its state (etcd data, keys, tokens) lives in one folder, so a stopped cluster starts again with
its objects; every start picks new free ports and rewrites the kubeconfig.

    python -m tools.localcluster start --dir .local/cluster     # start (or restart) and wait ready
    python -m tools.localcluster stop --dir .local/cluster      # stop every process it started
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime
import ipaddress
import json
import os
import secrets
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from dynamo_infra.api.manifest import Manifest
from tools import localpki, toolchain

REPO = Path(__file__).resolve().parent.parent
# Fake nodes kwok manages; each advertises this capacity so GPU pods schedule. Four hold the `lws`
# example stack (three groups of two 4-GPU pods: 24 GPUs) with room to spare.
DEFAULT_NODES = 4
NODE_CAPACITY = {
    "cpu": "64",
    "memory": "512Gi",
    "pods": "110",
    "nvidia.com/gpu": "8",
    "ephemeral-storage": "1Ti",
}
# Service and pod address ranges (never routed: pods are fake).
SERVICE_CIDR = "10.96.0.0/16"
POD_CIDR = "10.244.0.1/16"
# How long each component may take to become healthy.
READY_TIMEOUT_S = 90.0
ADMIN_USER = "dynamo-infra-admin"
# DRA driver whose devices the fake nodes' GPUs are published as (the NVIDIA GPU DRA driver's name).
GPU_DRA_DRIVER = "gpu.nvidia.com"
# What each fake GPU looks like to DRA: attributes and capacity as the NVIDIA driver publishes them.
GPU_PRODUCT = "NVIDIA H100 80GB HBM3"
GPU_ATTRIBUTES = {
    "type": {"string": "gpu"},
    "productName": {"string": GPU_PRODUCT},
    "brand": {"string": "Nvidia"},
    "architecture": {"string": "Hopper"},
    "cudaComputeCapability": {"version": "9.0.0"},
    "driverVersion": {"version": "580.95.5"},
    "cudaDriverVersion": {"version": "13.0.0"},
    "addressingMode": {"string": "None"},
}
GPU_MEMORY = "80Gi"
# Field manager of the published ResourceSlices (the part of the DRA driver the cluster plays).
GPU_DRA_FIELD_MANAGER = "fake-gpu-dra-driver"
# The LeaderWorkerSet CRD set the cluster installs before starting the LWS controller.
LWS_CRD_SET = "lws"
LWS_CRD = "leaderworkersets.leaderworkerset.x-k8s.io"
# Webhook configurations, named as the LWS chart names them.
LWS_WEBHOOK_PREFIX = "lws-"
# Validity of the LWS webhook's serving certificate (a new one is made at every start).
LWS_CERT_DAYS = 365


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _json(body: bytes) -> dict:  # type: ignore[type-arg]
    """JSON bodies as dicts; plain-text ones (`/readyz` says `ok`) as {"text": ...}."""
    try:
        value = json.loads(body or b"{}")
    except ValueError:
        return {"text": body.decode(errors="replace")}
    return value if isinstance(value, dict) else {"value": value}


def port_is_free(port: int) -> bool:
    """Whether a listener can bind it (with SO_REUSEADDR, as Go's listeners do)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


class ClusterError(RuntimeError):
    """The local control plane failed to start; the message points at the component's log."""


@dataclass
class LocalCluster:
    root: Path
    nodes: int = DEFAULT_NODES
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    commands: dict[str, tuple[list[str], Path | None]] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def audit_log(self) -> Path:
        """Every API request (metadata level, JSON lines): who asked what, with its user agent."""
        return self.root / "logs" / "audit.log"

    def _audit_policy(self) -> Path:
        policy = self.root / "audit-policy.yaml"
        policy.write_text(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n"
        )
        return policy

    def audit_events(self, user_agent_prefix: str = "") -> list[dict]:  # type: ignore[type-arg]
        """Audited requests so far whose user agent starts with `user_agent_prefix`."""
        if not self.audit_log.exists():
            return []
        events = []
        for line in self.audit_log.read_text().splitlines():
            with contextlib.suppress(ValueError):
                e = json.loads(line)
                if str(e.get("userAgent", "")).startswith(user_agent_prefix):
                    events.append(e)
        return events

    @property
    def pidfile(self) -> Path:
        return self.root / "pids.json"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    # --- set-up -------------------------------------------------------------------------------

    def _keys(self) -> tuple[str, Path, Path]:
        """Admin token and service-account key pair, created once and kept with the data."""
        pki = self.root / "pki"
        pki.mkdir(parents=True, exist_ok=True)
        token_file = pki / "admin.token"
        if not token_file.exists():
            token_file.write_text(secrets.token_hex(24))
            token_file.chmod(0o600)
        sa_key, sa_pub = pki / "sa.key", pki / "sa.pub"
        if not sa_key.exists():
            from cryptography.hazmat.primitives import serialization
            from cryptography.hazmat.primitives.asymmetric import rsa

            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            sa_key.write_bytes(
                key.private_bytes(
                    serialization.Encoding.PEM,
                    serialization.PrivateFormat.TraditionalOpenSSL,
                    serialization.NoEncryption(),
                )
            )
            sa_key.chmod(0o600)
            sa_pub.write_bytes(
                key.public_key().public_bytes(
                    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
                )
            )
        token = token_file.read_text().strip()
        (pki / "tokens.csv").write_text(f'{token},{ADMIN_USER},{ADMIN_USER},"system:masters"\n')
        return token, sa_key, sa_pub

    def _client_ca(self) -> Path:
        """The CA the API server trusts client certificates of (created once, kept with the data)."""
        pki = self.root / "pki"
        crt, key = pki / "client-ca.crt", pki / "client-ca.key"
        if not crt.exists():
            cert_pem, key_pem = localpki.certificate("local-client-ca", [], None, ca=True)
            key.write_bytes(key_pem)
            key.chmod(0o600)
            crt.write_bytes(cert_pem)
        return crt

    def issue_client_cert(self, user: str, groups: list[str]) -> tuple[bytes, bytes]:
        """A client certificate (PEM certificate, PEM key) the API server authenticates as `user` in
        `groups` (CN and O, as Kubernetes reads them), signed by the cluster's client CA."""
        pki = self.root / "pki"
        signer = ((pki / "client-ca.crt").read_bytes(), (pki / "client-ca.key").read_bytes())
        return localpki.certificate(user, groups, signer, ca=False)

    def _ports(self) -> dict[str, int]:
        """The ports of the previous start when all are still free (so the kubeconfig stays the same)."""
        saved = self.root / "ports.json"
        names = ("etcd", "etcd-peer", "apiserver", "kcm", "scheduler", "kwok", "lws-webhook", "lws-health")
        with contextlib.suppress(OSError, ValueError):
            previous = {k: int(v) for k, v in json.loads(saved.read_text()).items()}
            if set(previous) == set(names) and all(port_is_free(p) for p in previous.values()):
                return previous
        ports = {n: free_port() for n in names}
        saved.write_text(json.dumps(ports))
        return ports

    def _spawn(self, name: str, args: list[str], cwd: Path | None = None) -> None:
        self.commands[name] = (args, cwd)
        logs = self.root / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        out = (logs / f"{name}.log").open("ab")
        self.procs[name] = subprocess.Popen(
            args,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=cwd,
        )
        self._write_pids()

    def _write_pids(self) -> None:
        self.pidfile.write_text(json.dumps({n: p.pid for n, p in self.procs.items()}))

    def _wait(self, name: str, probe: callable, timeout: float = READY_TIMEOUT_S) -> None:  # type: ignore[valid-type]
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            proc = self.procs.get(name)
            if proc is not None and proc.poll() is not None:
                raise ClusterError(
                    f"{name} exited with {proc.returncode}; see {self.root / 'logs' / (name + '.log')}"
                )
            try:
                if probe():
                    return
            except Exception as e:  # noqa: BLE001 - any failure means "not ready yet"
                last = str(e)
            time.sleep(0.3)
        raise ClusterError(
            f"{name} not ready after {timeout:.0f}s ({last}); see {self.root / 'logs' / (name + '.log')}"
        )

    def _ssl(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.root / "pki" / "apiserver.crt"))
        return ctx

    def request(
        self, method: str, path: str, body: Manifest | None = None, content_type: str = "application/json"
    ) -> tuple[int, Manifest]:
        token = (self.root / "pki" / "admin.token").read_text().strip()
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {token}")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, context=self._ssl(), timeout=10) as r:
                return r.status, _json(r.read())
        except urllib.error.HTTPError as e:
            return e.code, _json(e.read())

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> LocalCluster:
        self.root.mkdir(parents=True, exist_ok=True)
        self.stop()  # a previous run's processes, if any
        bins = {p.name: p for d in toolchain.bin_dirs() for p in d.iterdir()}
        token, sa_key, sa_pub = self._keys()
        pki = self.root / "pki"
        self.ports = self._ports()
        etcd_url = f"http://127.0.0.1:{self.ports['etcd']}"
        self._spawn(
            "etcd",
            [
                str(bins["etcd"]),
                f"--data-dir={self.root / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls=http://127.0.0.1:{self.ports['etcd-peer']}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{self.ports['etcd-peer']}",
                f"--initial-cluster=default=http://127.0.0.1:{self.ports['etcd-peer']}",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
        )
        self._wait("etcd", lambda: urllib.request.urlopen(f"{etcd_url}/health", timeout=2).status == 200)
        self._spawn(
            "kube-apiserver",
            [
                str(bins["kube-apiserver"]),
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={self.ports['apiserver']}",
                f"--cert-dir={pki}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--allow-privileged=true",
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={sa_pub}",
                f"--service-account-signing-key-file={sa_key}",
                f"--token-auth-file={pki / 'tokens.csv'}",
                f"--client-ca-file={self._client_ca()}",
                "--enable-bootstrap-token-auth=true",
                f"--audit-policy-file={self._audit_policy()}",
                f"--audit-log-path={self.audit_log}",
                "--audit-log-format=json",
                "--audit-log-maxsize=200",
                "--endpoint-reconciler-type=none",
                "--v=1",
            ],
        )
        self._wait(
            "kube-apiserver",
            lambda: (pki / "apiserver.crt").exists() and self.request("GET", "/readyz")[0] == 200,
        )
        self._write_kubeconfig(token)
        common = [f"--kubeconfig={self.kubeconfig}", "--leader-elect=false", "--bind-address=127.0.0.1"]
        self._spawn(
            "kube-controller-manager",
            [
                str(bins["kube-controller-manager"]),
                *common,
                f"--secure-port={self.ports['kcm']}",
                f"--service-account-private-key-file={sa_key}",
                f"--root-ca-file={pki / 'apiserver.crt'}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--controllers=*,-nodeipam,-cloud-node-lifecycle",
                "--v=1",
            ],
        )
        self._spawn(
            "kube-scheduler",
            [str(bins["kube-scheduler"]), *common, f"--secure-port={self.ports['scheduler']}", "--v=1"],
        )
        stages = toolchain.kwok_stages()
        self._spawn(
            "kwok",
            [
                str(bins["kwok"]),
                f"--kubeconfig={self.kubeconfig}",
                "--manage-all-nodes=false",
                "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
                f"--cidr={POD_CIDR}",
                "--node-ip=127.0.0.1",
                f"--server-address=127.0.0.1:{self.ports['kwok']}",
                *[f"--config={f}" for f in sorted(stages.glob("*.yaml"))],
            ],
        )
        # Their serving certificates are throw-away self-signed ones: health checks skip verification.
        insecure = ssl._create_unverified_context()
        for name in ("kube-controller-manager", "kube-scheduler"):
            port = self.ports["kcm" if name == "kube-controller-manager" else "scheduler"]
            self._wait(
                name,
                lambda p=port: (
                    urllib.request.urlopen(
                        f"https://127.0.0.1:{p}/healthz", context=insecure, timeout=2
                    ).status
                    == 200
                ),
            )
        self._spawn(
            "fakeprovisioner",
            [
                sys.executable,
                "-m",
                "tools.fakeprovisioner",
                f"--kubeconfig={self.kubeconfig}",
                f"--volume-root={self.root / 'volumes'}",
            ],
            cwd=REPO,
        )
        self._create_nodes()
        self._wait("kwok", self._nodes_ready)
        self._publish_gpus_as_dra_devices()
        self._start_lws(bins["lws-controller-manager"])
        self._wait(
            "fakeprovisioner",
            lambda: self.request("GET", "/apis/storage.k8s.io/v1/storageclasses/standard")[0] == 200,
        )
        # The controller manager creates each namespace's `default` ServiceAccount; pods need it.
        self._wait(
            "kube-controller-manager",
            lambda: self.request("GET", "/api/v1/namespaces/default/serviceaccounts/default")[0] == 200,
        )
        return self

    def _write_kubeconfig(self, token: str) -> None:
        ca = base64.b64encode((self.root / "pki" / "apiserver.crt").read_bytes()).decode()
        cfg = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "local", "cluster": {"server": self.server, "certificate-authority-data": ca}}
            ],
            "users": [{"name": ADMIN_USER, "user": {"token": token}}],
            "contexts": [{"name": "local", "context": {"cluster": "local", "user": ADMIN_USER}}],
            "current-context": "local",
        }
        tmp = self.kubeconfig.with_suffix(".tmp")
        tmp.write_text(json.dumps(cfg, indent=2))
        tmp.chmod(0o600)
        tmp.replace(self.kubeconfig)

    def _create_nodes(self) -> None:
        for i in range(self.nodes):
            name = f"kwok-gpu-{i}"
            node = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                    "labels": {
                        "kubernetes.io/hostname": name,
                        "kubernetes.io/os": "linux",
                        "kubernetes.io/arch": "amd64",
                        "type": "kwok",
                        "nvidia.com/gpu.present": "true",
                    },
                },
                "spec": {},
                "status": {"capacity": NODE_CAPACITY, "allocatable": NODE_CAPACITY},
            }
            code, body = self.request("POST", "/api/v1/nodes", node)
            if code not in (201, 409):
                raise ClusterError(f"creating node {name}: HTTP {code} {body.get('message', '')}")

    def apply(self, obj: Manifest, field_manager: str = ADMIN_USER) -> Manifest:
        """Server-side apply of one object (forced); its resource is the kind's lower-case plural
        (`<kind>s`, true of every kind the cluster applies)."""
        group, _, version = obj["apiVersion"].rpartition("/")
        base = f"/apis/{group}/{version}" if group else f"/api/{version}"
        meta = obj["metadata"]
        ns = f"/namespaces/{meta['namespace']}" if meta.get("namespace") else ""
        path = f"{base}{ns}/{obj['kind'].lower()}s/{meta['name']}?fieldManager={field_manager}&force=true"
        code, body = self.request("PATCH", path, obj, content_type="application/apply-patch+yaml")
        if code not in (200, 201):
            raise ClusterError(
                f"applying {obj['kind']} {meta['name']}: HTTP {code} {body.get('message', '')}"
            )
        return body

    def wait_established(self, crd: str) -> None:
        """Until the API server serves the kind of CustomResourceDefinition `crd`."""
        path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}"
        self._wait("kube-apiserver", lambda: _established(self.request("GET", path)[1]))

    def _publish_gpus_as_dra_devices(self) -> None:
        """Each fake node's GPUs as a ResourceSlice of the NVIDIA GPU DRA driver (pool = node), so the
        scheduler allocates ResourceClaims of the DeviceClass `gpu.nvidia.com` on them."""
        code, body = self.request("GET", "/api/v1/nodes?labelSelector=type%3Dkwok")
        if code != 200:
            raise ClusterError(f"listing nodes: HTTP {code} {body.get('message', '')}")
        for node in body.get("items", []):
            self.apply(fake_gpu_resource_slice(node), field_manager=GPU_DRA_FIELD_MANAGER)

    # --- LeaderWorkerSet controller ------------------------------------------------------------

    def _start_lws(self, binary: Path) -> None:
        """The CRD, serving certificate and webhook registrations, then the controller; ready once a
        dry-run LeaderWorkerSet passes its webhooks."""
        from dynamo_infra.components.crd_files import crd_documents
        from dynamo_infra.components.platform_plan import CLUSTER_FIELD_MANAGER, DEFAULT_CRD_DIR, installable

        for crd in crd_documents(REPO / DEFAULT_CRD_DIR, LWS_CRD_SET):
            self.apply(installable(crd), field_manager=CLUSTER_FIELD_MANAGER)
        self.wait_established(LWS_CRD)
        certs = self.root / "pki" / "lws"
        ca = _serving_cert(certs)
        port = self.ports["lws-webhook"]
        config = self.root / "lws-config.yaml"
        config.write_text(
            json.dumps(
                {
                    "apiVersion": "config.lws.x-k8s.io/v1alpha1",
                    "kind": "Configuration",
                    "leaderElection": {"leaderElect": False},
                    "internalCertManagement": {"enable": False},
                    "webhook": {"host": "127.0.0.1", "port": port, "certDir": str(certs)},
                    "health": {"healthProbeBindAddress": f"127.0.0.1:{self.ports['lws-health']}"},
                    "metrics": {"bindAddress": "0"},  # "0": no metrics endpoint
                },
                indent=2,
            )
        )
        for webhook_config in lws_webhook_configurations(
            toolchain.lws_webhooks(), f"https://127.0.0.1:{port}", ca
        ):
            self.apply(webhook_config)
        self._spawn(
            "lws-controller-manager",
            [str(binary), f"--kubeconfig={self.kubeconfig}", f"--config={config}", "--zap-log-level=info"],
        )
        self._wait("lws-controller-manager", self._lws_admits)

    def _lws_admits(self) -> bool:
        """A dry-run LeaderWorkerSet goes through both LWS webhooks (and gets their defaults)."""
        probe = {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "metadata": {"name": "lws-webhook-probe", "namespace": "default"},
            "spec": {
                "leaderWorkerTemplate": {
                    "size": 1,
                    "workerTemplate": {"spec": {"containers": [{"name": "c", "image": "probe.invalid/c"}]}},
                }
            },
        }
        code, body = self.request(
            "POST", "/apis/leaderworkerset.x-k8s.io/v1/namespaces/default/leaderworkersets?dryRun=All", probe
        )
        if code != 201:
            raise ClusterError(f"HTTP {code} {body.get('message', '')}")
        return "networkConfig" in body.get("spec", {})

    def _nodes_ready(self) -> bool:
        code, body = self.request("GET", "/api/v1/nodes")
        if code != 200:
            return False
        ready = 0
        for n in body.get("items", []):
            conds = {c["type"]: c["status"] for c in n.get("status", {}).get("conditions", [])}
            gpus = n.get("status", {}).get("allocatable", {}).get("nvidia.com/gpu")
            if conds.get("Ready") == "True" and gpus:
                ready += 1
        return ready >= self.nodes

    def stop(self) -> None:
        """Stop every process this cluster folder started (also those of an earlier run)."""
        pids: dict[str, int] = {n: p.pid for n, p in self.procs.items()}
        if self.pidfile.exists():
            with contextlib.suppress(ValueError):
                pids.update(json.loads(self.pidfile.read_text()))
        order = [
            "lws-controller-manager",
            "fakeprovisioner",
            "kwok",
            "kube-scheduler",
            "kube-controller-manager",
            "kube-apiserver",
            "etcd",
        ]
        for name in sorted(pids, key=lambda n: order.index(n) if n in order else -1):
            _terminate(pids[name], self.procs.get(name))
        self.procs.clear()
        self.pidfile.unlink(missing_ok=True)

    def kill(self, name: str) -> None:
        """Stop one component abruptly (SIGKILL), as a crash or an outage would."""
        proc = self.procs.pop(name)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        self._write_pids()

    def restart(self, name: str) -> None:
        """Start a stopped component again with its previous command line and ports."""
        args, cwd = self.commands[name]
        self._spawn(name, args, cwd)
        if name == "kube-apiserver":
            self._wait(name, lambda: self.request("GET", "/readyz")[0] == 200)

    def env(self) -> dict[str, str]:
        return {"KUBECONFIG": str(self.kubeconfig)}


def fake_gpu_resource_slice(node: Manifest) -> Manifest:
    """The ResourceSlice the NVIDIA GPU DRA driver's kubelet plugin would publish for `node`: one
    device `gpu-<i>` per `nvidia.com/gpu` of its capacity, owned by the node."""
    name = node["metadata"]["name"]
    count = int(node.get("status", {}).get("capacity", {}).get("nvidia.com/gpu", 0))
    devices = [
        {
            "name": f"gpu-{i}",
            "attributes": {
                **GPU_ATTRIBUTES,
                "uuid": {"string": f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{name}.gpu-{i}')}"},
                "pcieBusID": {"string": f"0000:{0x18 + i * 0x10:02x}:00.0"},
            },
            "capacity": {"memory": {"value": GPU_MEMORY}},
        }
        for i in range(count)
    ]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {
            "name": f"{name}-{GPU_DRA_DRIVER}",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"]["uid"]}
            ],
        },
        "spec": {
            "driver": GPU_DRA_DRIVER,
            "nodeName": name,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def lws_webhook_configurations(folder: Path, url: str, ca: bytes) -> list[Manifest]:
    """The LWS module's webhook registrations with its kustomize patches applied (the pod webhooks
    see only pods labelled with an LWS name), served at `url` with the certificate of `ca`."""
    import yaml

    configs = [d for d in yaml.safe_load_all((folder / "manifests.yaml").read_text()) if d]
    for config, patch in zip(configs, ("mutating-patch.yaml", "validating-patch.yaml"), strict=True):
        for op in yaml.safe_load((folder / patch).read_text()):
            index = int(op["path"].removeprefix("/webhooks/"))
            if op["op"] != "replace" or not op["path"].startswith("/webhooks/"):
                raise ClusterError(f"unexpected LWS webhook patch {op['op']} {op['path']} in {patch}")
            config["webhooks"][index] = op["value"]
        config["metadata"]["name"] = LWS_WEBHOOK_PREFIX + config["metadata"]["name"]
        for webhook in config["webhooks"]:
            path = webhook["clientConfig"]["service"]["path"]
            webhook["clientConfig"] = {"url": url + path, "caBundle": base64.b64encode(ca).decode()}
    return configs


def _serving_cert(folder: Path) -> bytes:
    """A new CA and a serving certificate for 127.0.0.1 signed by it (`tls.crt`, `tls.key` in
    `folder`, as controller-runtime's webhook server reads them); returns the CA certificate."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    until = now + datetime.timedelta(days=LWS_CERT_DAYS)

    def cert(subject: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name, signer: ec.EllipticCurvePrivateKey, ca: bool) -> x509.Certificate:  # fmt: skip
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(issuer)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(until)
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False,
            )
        return builder.sign(signer, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lws-webhook-ca")])
    ca_cert = cert("lws-webhook-ca", ca_key, ca_name, ca_key, ca=True)
    key = ec.generate_private_key(ec.SECP256R1())
    serving = cert("127.0.0.1", key, ca_name, ca_key, ca=False)
    folder.mkdir(parents=True, exist_ok=True)
    pem = serialization.Encoding.PEM
    (folder / "tls.key").write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    (folder / "tls.key").chmod(0o600)
    (folder / "tls.crt").write_bytes(serving.public_bytes(pem))
    return ca_cert.public_bytes(pem)


def _established(crd: Manifest) -> bool:
    conditions = {c["type"]: c["status"] for c in crd.get("status", {}).get("conditions", [])}
    return conditions.get("Established") == "True"


def _terminate(pid: int, proc: subprocess.Popen[bytes] | None, grace: float = 10.0) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc is not None:
            if proc.poll() is not None:
                return
        else:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    if proc is not None:
        proc.wait(5)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["start", "stop"])
    ap.add_argument("--dir", default=".local/cluster", type=Path, help="cluster state folder")
    ap.add_argument("--nodes", type=int, default=DEFAULT_NODES)
    args = ap.parse_args(argv)
    cluster = LocalCluster(args.dir.resolve(), nodes=args.nodes)
    if args.action == "stop":
        cluster.stop()
        return 0
    t0 = time.monotonic()
    try:
        cluster.start()
    except ClusterError as e:
        print(f"local cluster: {e}", file=sys.stderr)
        cluster.stop()
        return 1
    print(
        f"local cluster ready in {time.monotonic() - t0:.1f}s: {cluster.server} (KUBECONFIG={cluster.kubeconfig})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
