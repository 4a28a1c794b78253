"""Exec credential plugins (`users[].user.exec`), run as client-go runs them: the plugin's credential
is kept until shortly before its `status.expirationTimestamp`, and run again when the API server
answers 401 to it."""

from __future__ import annotations

import base64
import datetime
import json
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dynamo_infra.errors import DynamoInfraError

# The ExecCredential versions client-go still speaks (v1alpha1 is gone from it).
API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
# A plugin that runs longer than this is stopped (it may be waiting for input it will never get).
PLUGIN_TIMEOUT_S = 60.0
# A credential is renewed this long before it expires (at most a quarter of its lifetime).
EXPIRY_MARGIN_S = 30.0
# Key of a cluster's extension passed to the plugin as `spec.cluster.config`.
EXEC_EXTENSION = "client.authentication.k8s.io/exec"


class ExecCredentialError(DynamoInfraError, ValueError):
    """The plugin failed or answered something unusable; the message never holds its output."""


@dataclass(frozen=True)
class Credential:
    """What a request authenticates with: a bearer token, a client certificate pair, or both."""

    token: str | None = None
    client_cert_pem: bytes | None = None
    client_key_pem: bytes | None = None
    # Wall-clock seconds after which it is renewed before use (None: until the API server refuses it).
    renew_after: float | None = None

    @property
    def client_pair(self) -> tuple[bytes, bytes] | None:
        if self.client_cert_pem and self.client_key_pem:
            return self.client_cert_pem, self.client_key_pem
        return None


def cluster_info(cluster: dict[str, Any], ca_pem: bytes | None) -> dict[str, Any]:
    """`spec.cluster` of KUBERNETES_EXEC_INFO for a plugin with `provideClusterInfo` (client-go's
    clientauthentication Cluster: the kubeconfig cluster entry, its CA inline)."""
    info: dict[str, Any] = {"server": cluster.get("server", "")}
    for key in ("tls-server-name", "insecure-skip-tls-verify", "proxy-url", "disable-compression"):
        if cluster.get(key):
            info[key] = cluster[key]
    if ca_pem:
        info["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    for ext in cluster.get("extensions") or []:
        if ext.get("name") == EXEC_EXTENSION:
            info["config"] = ext.get("extension")
    return info


# The process's plugins, by their kubeconfig entries (ExecPlugin.shared).
_SHARED: dict[str, ExecPlugin] = {}
_SHARED_LOCK = threading.Lock()


class ExecPlugin:
    """One kubeconfig user's plugin and its current credential (shared by the threads of a client,
    and by every client of the process built from the same kubeconfig entries: see `shared`)."""

    @classmethod
    def shared(cls, config: dict[str, Any], cluster: dict[str, Any], base_dir: Path | None) -> ExecPlugin:
        """The process's plugin for these entries, as client-go's cache of exec authenticators: a
        provider that builds a client per call runs the plugin once per credential, not per call."""
        key = json.dumps([config, cluster, str(base_dir)], sort_keys=True, default=str)
        with _SHARED_LOCK:
            plugin = _SHARED.get(key)
            if plugin is None:
                plugin = _SHARED[key] = cls(config, cluster, base_dir)
            return plugin

    def __init__(self, config: dict[str, Any], cluster: dict[str, Any] | None = None, base_dir: Path | None = None) -> None:  # fmt: skip
        if not config.get("command"):
            raise ExecCredentialError("kubeconfig exec credential plugin has no command")
        self.api_version = str(config.get("apiVersion", ""))
        if self.api_version not in API_VERSIONS:
            raise ExecCredentialError(
                f"kubeconfig exec credential plugin apiVersion {self.api_version!r} is not one of {', '.join(API_VERSIONS)}"
            )
        command = str(config["command"])
        # As client-go: a command with a path separator is relative to the kubeconfig's folder.
        if os.sep in command and not os.path.isabs(command) and base_dir is not None:
            command = str(base_dir / command)
        self.command = command
        self.args = [str(a) for a in config.get("args") or []]
        self.env = {str(e["name"]): str(e["value"]) for e in config.get("env") or []}
        self.install_hint = str(config.get("installHint") or "")
        self.cluster = cluster if config.get("provideClusterInfo") else None
        self.runs = 0
        self._current: Credential | None = None
        self._lock = threading.Lock()

    def current(self) -> Credential:
        """The cached credential, or a new one when there is none or it is about to expire."""
        with self._lock:
            cred = self._current
            if cred is None or (cred.renew_after is not None and time.time() >= cred.renew_after):
                cred = self._current = self._run()
            return cred

    def renew(self, refused: Credential) -> Credential:
        """A new credential after the API server refused `refused` (kept if another thread already renewed)."""
        with self._lock:
            cur = self._current
            if cur is None or (cur.token == refused.token and cur.client_pair in (None, refused.client_pair)):
                cur = self._current = self._run()
            return cur

    def _exec_info(self) -> str:
        spec: dict[str, Any] = {"interactive": False}
        if self.cluster is not None:
            spec["cluster"] = self.cluster
        return json.dumps({"apiVersion": self.api_version, "kind": "ExecCredential", "spec": spec})

    def _run(self) -> Credential:
        name = self.command
        if shutil.which(name) is None:
            hint = f"\n\n{self.install_hint}" if self.install_hint else ""
            raise ExecCredentialError(
                f"kubeconfig exec credential plugin {name!r} not found: it looks like you are trying to "
                f"use a client-go credential plugin that is not installed{hint}"
            )
        env = {**os.environ, **self.env, "KUBERNETES_EXEC_INFO": self._exec_info()}
        self.runs += 1
        started = time.time()
        try:
            done = subprocess.run(
                [name, *self.args],
                env=env,
                capture_output=True,
                text=True,
                timeout=PLUGIN_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError) as e:
            # Not chained: the plugin's arguments and output may hold credentials.
            raise ExecCredentialError(
                f"kubeconfig exec credential plugin {name!r} failed: {type(e).__name__}"
            ) from None
        if done.returncode != 0:
            raise ExecCredentialError(
                f"kubeconfig exec credential plugin {name!r} exited with status {done.returncode}"
            )
        return self._credential(done.stdout, started)

    def _credential(self, out: str, started: float) -> Credential:
        name = self.command
        try:
            answer = json.loads(out)
            status = answer["status"]
            kind, version = answer.get("kind"), answer.get("apiVersion")
        except (ValueError, KeyError, TypeError, AttributeError):
            raise ExecCredentialError(f"kubeconfig exec credential plugin {name!r} returned no ExecCredential status") from None  # fmt: skip
        if kind != "ExecCredential" or version != self.api_version:
            raise ExecCredentialError(
                f"kubeconfig exec credential plugin {name!r} returned {kind} {version}, expected ExecCredential {self.api_version}"
            )
        token = status.get("token") or None
        cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
        if bool(cert) != bool(key):
            raise ExecCredentialError(
                f"kubeconfig exec credential plugin {name!r} returned only one of clientCertificateData and clientKeyData"
            )
        if not token and not cert:
            raise ExecCredentialError(f"kubeconfig exec credential plugin {name!r} returned neither a token nor a client certificate")  # fmt: skip
        return Credential(
            token=str(token) if token else None,
            client_cert_pem=str(cert).encode() if cert else None,
            client_key_pem=str(key).encode() if key else None,
            renew_after=self._renew_after(status.get("expirationTimestamp"), started),
        )

    def _renew_after(self, stamp: Any, started: float) -> float | None:
        if not stamp:
            return None
        try:
            expires = datetime.datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise ExecCredentialError(
                f"kubeconfig exec credential plugin {self.command!r} returned an expirationTimestamp that is not RFC 3339"
            ) from None
        return expires - min(EXPIRY_MARGIN_S, max(expires - started, 0.0) / 4)
