"""No secret a stack handles ends up in plain text anywhere we write or print: the exported state and
every file of the backend (history, backups), the engine's verbose log with the providers' output
flowing into it, `preview --json`, the PR comment, and the messages of runs that fail. The secrets
are the kubeconfig's bearer token and client key, the MPI SSH key the platform copies, and a
registry password in a discovered image pull secret; the scan looks for each value as it is and
base64-encoded (0 hits)."""

from __future__ import annotations

import base64
import datetime
import json
import os
import re
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from pulumi import automation as auto

from dynamo_infra.api.manifest import PACKED_PREFIX, unpack
from dynamo_infra.kube.client import KubeClient
from tests.integration.harness import copy_project, make_stack, namespace_object, unique
from tools.localcluster import LocalCluster

# The MPI SSH key secret the platform copies into the graph namespace (its default name).
MPI_SECRET = "mpi-run-ssh-secret"
# Pulumi's engine log with every plugin's output flowing into it, at the highest level where Pulumi
# itself prints no property values: at 9 its RPC marshaling (in the engine and in pulumi-kubernetes,
# sdk/go/common/resource/plugin/rpc.go) logs every input, secrets included.
ENGINE_LOG = ["-v=8", "--logtostderr", "--logflow"]
# How long one Pulumi command may take on a loaded machine.
COMMAND_TIMEOUT_S = 600
# A packed output in any text scanned.
PACKED = re.compile(re.escape(PACKED_PREFIX) + "[A-Za-z0-9+/=]+")
# Characters shown before a secret found, to tell where it leaked.
HIT_CONTEXT = 200


def client_pair() -> tuple[bytes, bytes]:
    """A self-signed client certificate and its private key (PEM). The local API server asks for no
    client certificate, so the pair is loaded and never sent: it is there to be leaked or not."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "secret-scan")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def kubeconfig_with(cluster: LocalCluster, *, token: str, cert: bytes, key: bytes, server: str = "") -> str:
    """The local cluster's kubeconfig with `token` and the client pair as its user's credentials."""
    cfg = yaml.safe_load(cluster.kubeconfig.read_text())
    user = cfg["users"][0]["user"]
    user["token"] = token
    user["client-certificate-data"] = base64.b64encode(cert).decode()
    user["client-key-data"] = base64.b64encode(key).decode()
    if server:
        cfg["clusters"][0]["cluster"]["server"] = server
    return yaml.safe_dump(cfg)


def forms(value: str) -> set[str]:
    """How a secret value can appear in text: as it is, base64-encoded, and for a PEM block its
    longest body line (which survives re-wrapping and JSON escaping)."""
    found = {value, base64.b64encode(value.encode()).decode()}
    lines = [line for line in value.splitlines() if line and not line.startswith("-----")]
    if lines:
        found.add(max(lines, key=len))
    return {f for f in found if len(f) >= 16}


class Scan:
    """The secrets in play and every text to scan, by where it came from."""

    def __init__(self) -> None:
        self.secrets: dict[str, set[str]] = {}
        self.texts: dict[str, str] = {}

    def secret(self, name: str, value: str) -> str:
        self.secrets[name] = forms(value)
        return value

    def add(self, where: str, text: str) -> None:
        # Outputs our providers pack (`reconcile.base.pack`) are scanned as what they hold.
        inside = "".join(f"\n{json.dumps(unpack(m))}" for m in PACKED.findall(text))
        self.texts[where] = self.texts.get(where, "") + text + inside

    def hits(self) -> list[str]:
        """Each secret found, where, with the start of its line and what precedes it (the value left out)."""
        found = []
        for where, text in self.texts.items():
            for name, values in self.secrets.items():
                for value in values:
                    at = text.find(value)
                    if at >= 0:
                        line = text.rfind("\n", 0, at) + 1
                        head = text[line : min(at, line + HIT_CONTEXT)]
                        before = text[max(line, at - HIT_CONTEXT) : at]
                        found.append(f"{name} in {where}: {head} ... {before}<here>")
        return found


class Rig:
    """A stack whose kubeconfig (a secret config value) carries a token and a client key, deploying a
    graph into a namespace with a registry pull secret, and an LWS graph that gets the MPI key copy."""

    def __init__(self, root: Path, cluster: LocalCluster, kube: KubeClient, scan: Scan) -> None:
        self.root, self.kube, self.scan = root, kube, scan
        self.project = copy_project(root)
        self.ns, self.keys_ns = unique("scan"), unique("scan-keys")
        admin_token = (cluster.root / "pki" / "admin.token").read_text().strip()
        cert, key = client_pair()
        scan.secret("kubeconfig token", admin_token)
        scan.secret("client key", key.decode())
        self.kubeconfig = kubeconfig_with(cluster, token=admin_token, cert=cert, key=key)
        mpi_key = scan.secret("MPI SSH key", f"ssh-private-key-{secrets.token_hex(16)}")
        password = scan.secret("registry password", f"registry-password-{secrets.token_hex(16)}")
        for ns in (self.ns, self.keys_ns):
            kube.apply(namespace_object(ns))
        kube.apply(secret_object(self.keys_ns, MPI_SECRET, "Opaque", {"private.key": mpi_key}))
        auth = base64.b64encode(f"robot:{password}".encode()).decode()
        dockerconfig = json.dumps({"auths": {"nvcr.io": {"auth": auth}}})
        kube.apply(
            secret_object(
                self.ns, "registry", "kubernetes.io/dockerconfigjson", {".dockerconfigjson": dockerconfig}
            )
        )
        graphs = [
            self.project / "examples" / "mocker-agg.yaml",
            self.project / "examples" / "sglang-multinode.yaml",
        ]
        options = {
            "await": {"mode": "skip"},
            "multinode": {"orchestrator": "lws"},
            "mpi": {"sshSecretNamespace": self.keys_ns},
        }
        self.stack = make_stack(self.project, cluster, "scan", self.ns, graphs, **options)
        self.stack.remove_config("dynamo-infra:kubeconfigPath")
        # The graphs' providers run as the least-privilege account: its token is a secret too.
        graphs = yaml.safe_load(
            Path(self.stack.get_config("dynamo-infra:graphKubeconfigPath").value).read_text()
        )
        scan.secret("graphs' token", graphs["users"][0]["user"]["token"])
        self.set_kubeconfig(self.kubeconfig)
        self.env = {**os.environ, "PULUMI_BACKEND_URL": f"file://{root / 'state'}"}

    def set_kubeconfig(self, text: str) -> None:
        self.stack.set_config("dynamo-infra:kubeconfig", auto.ConfigValue(text, secret=True))

    def pulumi(self, where: str, *args: str, ok: bool = True) -> str:
        """A Pulumi command of the stack as a user runs it; stdout and stderr go to the scan."""
        done = subprocess.run(
            ["pulumi", *args, "--stack", "scan", "--non-interactive"],
            cwd=self.project, env=self.env, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S,
        )  # fmt: skip
        self.scan.add(where, done.stdout + done.stderr)
        assert (done.returncode == 0) == ok, (
            f"{where}: exit {done.returncode}\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
        return done.stdout + done.stderr

    def state_files(self) -> Iterator[tuple[str, str]]:
        for path in sorted((self.root / "state").rglob("*")):
            if path.is_file():
                yield str(path.relative_to(self.root)), path.read_bytes().decode(errors="replace")


def secret_object(namespace: str, name: str, kind: str, data: dict[str, str]) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "type": kind,
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


@pytest.fixture()
def scanned(tmp_path: Path, cluster: LocalCluster, kube: KubeClient) -> Iterator[tuple[Rig, Scan]]:
    scan = Scan()
    rig = Rig(tmp_path, cluster, kube, scan)
    try:
        yield rig, scan
    finally:
        rig.set_kubeconfig(rig.kubeconfig)
        subprocess.run(
            ["pulumi", "destroy", "--yes", "--stack", "scan", "--non-interactive"],
            cwd=rig.project, env=rig.env, capture_output=True, timeout=COMMAND_TIMEOUT_S,
        )  # fmt: skip
        for ns in (rig.ns, rig.keys_ns):
            kube.delete(namespace_object(ns), propagation="Background")


def test_no_secret_in_state_logs_or_errors(scanned: tuple[Rig, Scan], cluster: LocalCluster) -> None:
    rig, scan = scanned
    rig.pulumi("up (engine log)", "up", "--yes", "--skip-preview", *ENGINE_LOG)
    # The copies the stack made hold the secrets: what is scanned below had them in hand.
    copy = rig.kube.get(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": MPI_SECRET, "namespace": rig.ns}}
    )
    assert copy is not None and copy["data"]["private.key"], "the platform did not copy the MPI key"
    pods = rig.kube.list("apps/v1", "Deployment", rig.ns)
    assert any(
        s.get("name") == "registry"
        for d in pods
        for s in d["spec"]["template"]["spec"].get("imagePullSecrets") or []
    ), "the registry pull secret was not discovered"

    # The key rotates: the preview of a secret change, as JSON and as the PR comment.
    rotated = scan.secret("rotated MPI SSH key", f"ssh-private-key-{secrets.token_hex(16)}")
    rig.kube.apply(secret_object(rig.keys_ns, MPI_SECRET, "Opaque", {"private.key": rotated}))
    preview = rig.pulumi("preview --json", "preview", "--json", "--diff")
    assert MPI_SECRET in preview
    comment = rig.root / "comment.md"
    (rig.root / "preview.json").write_text(preview[preview.index("{") :])
    done = subprocess.run(
        ["dynamo-infra", "preview-summary", "--json", str(rig.root / "preview.json"), "--out", str(comment)],
        capture_output=True, text=True, timeout=120, env=rig.env,
    )  # fmt: skip
    scan.add("preview-summary", done.stdout + done.stderr + (comment.read_text() if comment.exists() else ""))
    assert done.returncode == 0, done.stderr[-2000:]
    rig.pulumi("up after rotation (engine log)", "up", "--yes", "--skip-preview", *ENGINE_LOG)
    rig.pulumi("refresh", "refresh", "--yes", "--skip-preview")

    # Runs that fail, with the secrets in the kubeconfig: a token the API server refuses, and an API
    # server that cannot be reached.
    cert, key = client_pair()
    wrong = scan.secret("refused token", f"refused-{secrets.token_hex(20)}")
    scan.secret("second client key", key.decode())
    rig.set_kubeconfig(kubeconfig_with(cluster, token=wrong, cert=cert, key=key))
    refused = rig.pulumi("up with a refused token", "up", "--yes", "--skip-preview", *ENGINE_LOG, ok=False)
    assert "401" in refused or "Unauthorized" in refused, refused[-2000:]
    admin_token = (cluster.root / "pki" / "admin.token").read_text().strip()
    unreachable = kubeconfig_with(
        cluster, token=admin_token, cert=cert, key=key, server="https://127.0.0.1:9"
    )
    rig.set_kubeconfig(unreachable)
    rig.pulumi("preview with the API server unreachable", "preview", *ENGINE_LOG, ok=False)
    rig.set_kubeconfig(rig.kubeconfig)

    scan.add("stack export", rig.pulumi("stack export", "stack", "export"))
    for where, text in rig.state_files():
        scan.add(where, text)
    assert any("history" in where for where in scan.texts), "the backend kept no history to scan"
    hits = scan.hits()
    print(
        f"\nsecret scan: {len(scan.secrets)} secrets in {len(scan.texts)} texts "
        f"({sum(map(len, scan.texts.values())) / 1e6:.1f} MB): {len(hits)} found"
    )
    assert hits == [], "\n".join(hits)
    # The scan finds what is there: the state decrypted holds the token and both MPI keys.
    shown = Scan()
    shown.secrets = scan.secrets
    shown.add("stack export --show-secrets", rig.pulumi("stack export", "stack", "export", "--show-secrets"))
    assert {h.split(" in ")[0] for h in shown.hits()} >= {"kubeconfig token", "rotated MPI SSH key"}
