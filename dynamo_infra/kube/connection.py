"""Kubeconfig -> connection settings (server, TLS, credentials), including exec credential plugins."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import functools
import os
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dynamo_infra.kube import kubeconfig
from dynamo_infra.kube.errors import KubeconfigError as KubeconfigError
from dynamo_infra.kube.exec_credential import Credential, ExecCredentialError, ExecPlugin, cluster_info

# SSL contexts kept, by the CA bundle and client pair they hold: each loads the system CA store (~0.1 s), and a
# program, a provider process or the agent opens several clients of one kubeconfig; an exec plugin's new
# certificate is a new entry.
SSL_CONTEXTS_KEPT = 16
# Where a pod's service-account token and the cluster's CA are mounted (in-cluster configuration).
SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass(frozen=True)
class Connection:
    """Where the API server is, how it is trusted, and who we are to it (one kubeconfig context)."""

    server: str
    ca_pem: bytes | None = None
    insecure: bool = False
    client_cert_pem: bytes | None = None
    client_key_pem: bytes | None = None
    token: str | None = None
    exec_config: dict[str, Any] | None = None
    context: str = ""
    # The context's namespace (empty when it names none).
    namespace: str = ""
    # The name the server's certificate is checked against (and sent as SNI) instead of the host.
    tls_server_name: str = ""
    # The cluster's `proxy-url` (http, https or socks5); without it HTTPS_PROXY/NO_PROXY apply.
    proxy_url: str = ""
    # A file the bearer token is read from again when the API server refuses the one read before.
    token_file: str = ""
    # The exec plugin with its cached credential (built from exec_config when not given).
    plugin: ExecPlugin | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.exec_config and self.plugin is None:
            try:
                object.__setattr__(self, "plugin", ExecPlugin(self.exec_config))
            except ExecCredentialError as e:
                raise KubeconfigError(str(e)) from None

    def ssl_context(self, client_pair: tuple[bytes, bytes] | None = None) -> ssl.SSLContext | bool:
        """Verification of the server (CA bundle) and the client certificate pair (default: the
        kubeconfig's own)."""
        if self.insecure:
            return False
        pair = client_pair or (
            (self.client_cert_pem, self.client_key_pem)
            if self.client_cert_pem and self.client_key_pem
            else None
        )
        return _ssl_context(self.ca_pem, pair)

    def credential(self) -> Credential:
        """What the next request authenticates with: the exec plugin's (run when it has none, or its
        one is about to expire), the token or token file, and the client certificate."""
        if self.token:
            return Credential(self.token, self.client_cert_pem, self.client_key_pem)
        if self.plugin is not None:
            return self._from_plugin(self.plugin.current())
        return Credential(self._read_token_file(), self.client_cert_pem, self.client_key_pem)

    def renew(self, refused: Credential) -> Credential | None:
        """A new credential after the API server answered 401 to `refused`, or None when there is no
        other to try (a static token or certificate)."""
        if self.plugin is not None and not self.token:
            return self._from_plugin(self.plugin.renew(refused))
        if self.token_file and not self.token:
            renewed = Credential(self._read_token_file(), self.client_cert_pem, self.client_key_pem)
            return renewed if renewed != refused else None
        return None

    def bearer_token(self) -> str | None:
        return self.credential().token

    def _from_plugin(self, cred: Credential) -> Credential:
        if cred.client_pair or not (self.client_cert_pem and self.client_key_pem):
            return cred
        return dataclasses.replace(
            cred, client_cert_pem=self.client_cert_pem, client_key_pem=self.client_key_pem
        )

    def _read_token_file(self) -> str | None:
        if not self.token_file:
            return None
        try:
            return Path(self.token_file).read_text().strip() or None
        except OSError as e:
            raise KubeconfigError(f"kubeconfig tokenFile: cannot read {self.token_file}: {e.strerror}") from e


def _resolve(path: str, base: Path | None) -> Path:
    """A kubeconfig path: `~` expanded, relative ones against the kubeconfig's folder."""
    p = Path(path).expanduser()
    return base / p if not p.is_absolute() and base is not None else p


def _data_or_file(entry: dict[str, Any], key: str, base: Path | None) -> bytes | None:
    data = entry.get(f"{key}-data")
    if data:
        return base64.b64decode(data)
    path = entry.get(key)
    if path:
        p = _resolve(path, base)
        try:
            return p.read_bytes()
        except OSError as e:
            raise KubeconfigError(f"kubeconfig {key}: cannot read {p}: {e.strerror}") from e
    return None


def parse(text: str, context: str | None = None, base_dir: Path | None = None) -> Connection:
    """Connection for `context` (default: current-context) of a kubeconfig given as YAML/JSON text."""
    try:
        cfg = yaml.safe_load(text)
    except yaml.YAMLError:
        # Not chained: the parser's message quotes the kubeconfig, credentials included.
        raise KubeconfigError("kubeconfig is not valid YAML") from None
    if not isinstance(cfg, dict):
        raise KubeconfigError("kubeconfig must be a mapping")
    return from_config(cfg, context, base_dir)


def from_config(cfg: dict[str, Any], context: str | None = None, base_dir: Path | None = None) -> Connection:
    """Connection for `context` (default: current-context) of a parsed kubeconfig; relative paths
    against `base_dir`."""
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
    ca_pem = _data_or_file(cluster, "certificate-authority", base_dir)
    plugin = None
    if user.get("exec"):
        try:
            plugin = ExecPlugin.shared(user["exec"], cluster_info(cluster, ca_pem), base_dir)
        except ExecCredentialError as e:
            raise KubeconfigError(str(e)) from None
    return Connection(
        server=str(cluster["server"]).rstrip("/"),
        ca_pem=ca_pem,
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
        client_cert_pem=_data_or_file(user, "client-certificate", base_dir),
        client_key_pem=_data_or_file(user, "client-key", base_dir),
        token=user.get("token") or None,
        exec_config=user.get("exec"),
        context=name,
        namespace=str(ctx.get("namespace") or ""),
        tls_server_name=str(cluster.get("tls-server-name") or ""),
        proxy_url=str(cluster.get("proxy-url") or ""),
        token_file=str(_resolve(user["tokenFile"], base_dir)) if user.get("tokenFile") else "",
        plugin=plugin,
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
    namespace = ""
    with contextlib.suppress(OSError):
        namespace = (account_dir / "namespace").read_text().strip()
    return Connection(
        server=server,
        ca_pem=ca,
        token=token,
        context="in-cluster",
        namespace=namespace,
    )


def from_environment(env: dict[str, str] | None = None) -> Connection:
    """$KUBECONFIG's files merged as kubectl merges them (`kubeconfig.merge`; current context) when it
    is set, else the in-cluster configuration."""
    env = dict(os.environ) if env is None else env
    paths = kubeconfig.files(env.get("KUBECONFIG", ""))
    if not paths:
        return in_cluster(env)
    cfg = kubeconfig.merge(paths)
    if cfg is None:
        raise KubeconfigError(f"none of the KUBECONFIG files exists: {', '.join(map(str, paths))}")
    return from_config(cfg)


@functools.lru_cache(maxsize=SSL_CONTEXTS_KEPT)
def _ssl_context(ca_pem: bytes | None, pair: tuple[bytes, bytes] | None) -> ssl.SSLContext:
    """The system CA store, `ca_pem` and the client pair in one context (kept: see SSL_CONTEXTS_KEPT)."""
    ctx = ssl.create_default_context()
    if ca_pem:
        try:
            ctx.load_verify_locations(cadata=ca_pem.decode(errors="replace"))
        except ssl.SSLError:
            raise KubeconfigError("kubeconfig certificate-authority is not a valid PEM bundle") from None
    if pair:
        # ssl needs files for the client pair; they live only while being loaded.
        with tempfile.TemporaryDirectory() as d:
            cert, key = Path(d) / "c.pem", Path(d) / "k.pem"
            cert.write_bytes(pair[0])
            key.write_bytes(pair[1])
            key.chmod(0o600)
            try:
                ctx.load_cert_chain(str(cert), str(key))
            except ssl.SSLError:
                raise KubeconfigError("kubeconfig client certificate or key is not valid PEM") from None
    return ctx
