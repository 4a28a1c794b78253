"""Kubeconfig -> connection settings (server, TLS, credentials), including exec credential plugins."""

from __future__ import annotations

import base64
import json
import os
import ssl
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dynamo_infra.errors import DynamoInfraError

# Where a pod's service-account token and the cluster's CA are mounted (in-cluster configuration).
SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class KubeconfigError(DynamoInfraError, ValueError):
    """The kubeconfig cannot be used; the message never contains credential values."""


@dataclass(frozen=True)
class Connection:
    server: str
    ca_pem: bytes | None = None
    insecure: bool = False
    client_cert_pem: bytes | None = None
    client_key_pem: bytes | None = None
    token: str | None = None
    exec_config: dict[str, Any] | None = None
    context: str = ""

    def ssl_context(self) -> ssl.SSLContext | bool:
        if self.insecure:
            return False
        ctx = ssl.create_default_context()
        if self.ca_pem:
            ctx.load_verify_locations(cadata=self.ca_pem.decode())
        if self.client_cert_pem and self.client_key_pem:
            # ssl needs files for the client pair; they live only while being loaded.
            with tempfile.TemporaryDirectory() as d:
                cert, key = Path(d) / "c.pem", Path(d) / "k.pem"
                cert.write_bytes(self.client_cert_pem)
                key.write_bytes(self.client_key_pem)
                key.chmod(0o600)
                ctx.load_cert_chain(str(cert), str(key))
        return ctx

    def bearer_token(self) -> str | None:
        if self.token:
            return self.token
        if self.exec_config:
            return _exec_token(self.exec_config)
        return None


def _data_or_file(entry: dict[str, Any], key: str, base: Path | None) -> bytes | None:
    data = entry.get(f"{key}-data")
    if data:
        return base64.b64decode(data)
    path = entry.get(key)
    if path:
        p = Path(path)
        if not p.is_absolute() and base is not None:
            p = base / p
        try:
            return p.read_bytes()
        except OSError as e:
            raise KubeconfigError(f"kubeconfig {key}: cannot read {p}: {e.strerror}") from e
    return None


def _exec_token(cfg: dict[str, Any]) -> str:
    cmd = [cfg["command"], *(cfg.get("args") or [])]
    env = {**os.environ, **{e["name"]: e["value"] for e in cfg.get("env") or []}}
    env["KUBERNETES_EXEC_INFO"] = json.dumps(
        {
            "apiVersion": cfg.get("apiVersion", "client.authentication.k8s.io/v1"),
            "kind": "ExecCredential",
            "spec": {"interactive": False},
        }
    )
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError) as e:
        # Not chained: the plugin's arguments and output may hold credentials.
        raise KubeconfigError(
            f"kubeconfig exec credential plugin {cfg['command']!r} failed: {type(e).__name__}"
        ) from None
    try:
        token = json.loads(out)["status"]["token"]
    except (ValueError, KeyError, TypeError):
        raise KubeconfigError(
            f"kubeconfig exec credential plugin {cfg['command']!r} returned no status.token"
        ) from None
    return str(token)


def parse(text: str, context: str | None = None, base_dir: Path | None = None) -> Connection:
    """Connection for `context` (default: current-context) of a kubeconfig given as YAML/JSON text."""
    try:
        cfg = yaml.safe_load(text)
    except yaml.YAMLError:
        # Not chained: the parser's message quotes the kubeconfig, credentials included.
        raise KubeconfigError("kubeconfig is not valid YAML") from None
    if not isinstance(cfg, dict):
        raise KubeconfigError("kubeconfig must be a mapping")
    name = context or cfg.get("current-context")
    if not name:
        raise KubeconfigError("kubeconfig has no current-context and no context was given")

    def find(section: str, key: str) -> dict[str, Any]:
        for item in cfg.get(section) or []:
            if item.get("name") == key:
                return dict(item.get(section[:-1]) or {})
        raise KubeconfigError(f"kubeconfig has no {section[:-1]} named {key!r}")

    ctx = find("contexts", name)
    cluster = find("clusters", ctx.get("cluster", ""))
    user = find("users", ctx["user"]) if ctx.get("user") else {}
    if not cluster.get("server"):
        raise KubeconfigError(f"kubeconfig cluster {ctx.get('cluster')!r} has no server")
    token = user.get("token")
    if not token and user.get("tokenFile"):
        try:
            token = Path(user["tokenFile"]).read_text().strip()
        except OSError as e:
            raise KubeconfigError(
                f"kubeconfig tokenFile: cannot read {user['tokenFile']}: {e.strerror}"
            ) from e
    return Connection(
        server=str(cluster["server"]).rstrip("/"),
        ca_pem=_data_or_file(cluster, "certificate-authority", base_dir),
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        client_cert_pem=_data_or_file(user, "client-certificate", base_dir),
        client_key_pem=_data_or_file(user, "client-key", base_dir),
        token=token,
        exec_config=user.get("exec"),
        context=name,
    )


def load(source: str, context: str | None = None) -> Connection:
    """From kubeconfig content, or a path to one (`~` expanded)."""
    stripped = source.strip()
    if stripped and "\n" not in stripped and not stripped.startswith("{"):
        path = Path(stripped).expanduser()
        try:
            return parse(path.read_text(), context, path.parent)
        except OSError as e:
            raise KubeconfigError(f"cannot read kubeconfig {path}: {e.strerror}") from e
    return parse(source, context)


def in_cluster(env: dict[str, str] | None = None, account_dir: Path = SERVICE_ACCOUNT_DIR) -> Connection:
    """The pod's own connection: the API server from KUBERNETES_SERVICE_HOST/PORT, its service-account
    token and the cluster CA as mounted (read now: call again after a 401, the kubelet rotates the token)."""
    env = dict(os.environ) if env is None else env
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise KubeconfigError("not in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set, and no KUBECONFIG")
    try:
        token = (account_dir / "token").read_text().strip()
        ca = (account_dir / "ca.crt").read_bytes()
    except OSError as e:
        raise KubeconfigError(f"in-cluster credentials: cannot read {e.filename}: {e.strerror}") from e
    server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    return Connection(server=server, ca_pem=ca, token=token, context="in-cluster")


def from_environment(env: dict[str, str] | None = None) -> Connection:
    """$KUBECONFIG's first file (current context) when set, else the in-cluster configuration."""
    env = dict(os.environ) if env is None else env
    path = next((p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p), "")
    return load(path) if path else in_cluster(env)
