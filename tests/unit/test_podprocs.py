"""The pods-as-processes harness makes only its listed substitutions (tools/podprocs.py)."""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dynamo_infra.kube.connection import Connection
from tools.kubelet import PodProcessError, expand, field_value, relocate
from tools.podprocs import (
    MOUNT_SCRIPT,
    PORT_MAX,
    PORT_MIN,
    SUBSTITUTIONS,
    PodProcess,
    PodProcesses,
    free_port,
    with_var_run,
)

POD: dict[str, Any] = {
    "metadata": {
        "name": "g-worker-abc-0",
        "namespace": "ns",
        "uid": "1234-uid",
        "labels": {"nvidia.com/dynamo-component": "Worker", "app": "x"},
    },
    "spec": {
        "nodeName": "kwok-gpu-0",
        "serviceAccountName": "g-k8s-service-discovery",
        "volumes": [
            {"name": "models", "persistentVolumeClaim": {"claimName": "model-store"}},
            {"name": "shared-memory", "emptyDir": {"medium": "Memory"}},
            {"name": "cfg", "configMap": {"name": "settings"}},
            {
                "name": "kube-api-access-x",
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
                        {
                            "configMap": {
                                "name": "kube-root-ca.crt",
                                "items": [{"key": "ca.crt", "path": "ca.crt"}],
                            }
                        },
                        {
                            "downwardAPI": {
                                "items": [
                                    {"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}
                                ]
                            }
                        },
                    ]
                },
            },
        ],
        "containers": [
            {
                "name": "main",
                "command": ["python3", "-m", "dynamo.mocker"],
                "args": ["--model-path", "/models/tiny", "--config=/etc/cfg/a.json", "$(DYN_NAMESPACE)"],
                "workingDir": "/workspace",
                "env": [
                    {"name": "DYN_NAMESPACE", "value": "ns-g"},
                    {"name": "DYN_SYSTEM_PORT", "value": "9090"},
                    {"name": "DYN_FORWARDPASS_METRIC_PORT", "value": "20380"},
                    {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
                    {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}},
                    {"name": "GREETING", "value": "hi $(POD_NAME) $$(POD_NAME)"},
                ],
                "envFrom": [{"configMapRef": {"name": "settings"}, "prefix": "CFG_"}],
                "ports": [{"name": "system", "containerPort": 9090}],
                "volumeMounts": [
                    {"name": "models", "mountPath": "/models"},
                    {"name": "shared-memory", "mountPath": "/dev/shm"},
                    {"name": "cfg", "mountPath": "/etc/cfg"},
                    {
                        "name": "kube-api-access-x",
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                    },
                ],
            },
            {"name": "sidecar", "command": ["sleep", "1d"]},
        ],
    },
    "status": {"phase": "Running", "podIP": "10.244.0.7"},
}


class FakeKube:
    """The few reads and the TokenRequest the harness makes, answered from a dict."""

    def __init__(self, volume_root: Path) -> None:
        self.objects: dict[tuple[str, str], dict[str, Any]] = {
            ("ConfigMap", "settings"): {"data": {"a.json": "{}", "MODE": "fast"}},
            ("ConfigMap", "kube-root-ca.crt"): {"data": {"ca.crt": "CA"}},
            ("Secret", "creds"): {"data": {"token": base64.b64encode(b"s3cret").decode()}},
            ("PersistentVolumeClaim", "model-store"): {"spec": {"volumeName": "pv-1"}},
            ("PersistentVolume", "pv-1"): {"spec": {"hostPath": {"path": str(volume_root / "pv-1")}}},
        }
        self.token_requests: list[tuple[str, dict[str, Any]]] = []

    def get(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        return self.objects.get((obj["kind"], obj["metadata"]["name"]))

    def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> dict[str, Any]:
        self.token_requests.append((path, body))
        return {"status": {"token": "bound-token"}}


@pytest.fixture()
def prepared(tmp_path: Path) -> Iterator[tuple[Any, FakeKube, Path]]:
    kube = FakeKube(tmp_path / "volumes")
    conn = Connection(server="https://127.0.0.1:6443", ca_pem=b"CA")
    pods = PodProcesses(
        kube,  # type: ignore[arg-type]
        conn,
        namespace="ns",
        selector="x",
        root=tmp_path / "pods",
        runtime_bin=tmp_path / "venv" / "bin",
    )
    with pods:
        yield pods.prepare(POD), kube, tmp_path


def test_expansion_follows_kubernetes() -> None:
    env = {"A": "1", "B": "two"}
    assert expand("$(A)-$(B)-$(C)-$$(A)", env) == "1-two-$(C)-$(A)"


def test_relocate_only_rewrites_paths_under_a_mount() -> None:
    mounts = {"/models": Path("/host/pv"), "/models/big": Path("/host/big")}
    assert relocate("/models/tiny", mounts) == "/host/pv/tiny"
    assert relocate("/models", mounts) == "/host/pv"
    assert relocate("/models/big/x", mounts) == "/host/big/x"
    assert relocate("--path=/models/tiny", mounts) == "--path=/host/pv/tiny"
    assert relocate("/modelsX/tiny", mounts) == "/modelsX/tiny"
    assert relocate("dyn://ns.backend.generate", mounts) == "dyn://ns.backend.generate"


def test_field_refs_come_from_the_live_pod() -> None:
    assert field_value(POD, "metadata.uid") == "1234-uid"
    assert field_value(POD, "status.podIP") == "10.244.0.7"
    assert field_value(POD, "metadata.labels['app']") == "x"
    with pytest.raises(PodProcessError, match="not supported"):
        field_value(POD, "spec.containers[0].name")


def test_free_ports_stay_below_the_runtimes_limit() -> None:
    taken: set[int] = set()
    ports = [free_port(taken) for _ in range(50)]
    assert len(set(ports)) == 50
    assert all(PORT_MIN <= p < PORT_MAX <= 32768 for p in ports)


def test_a_process_is_the_main_container_with_the_listed_substitutions(
    prepared: tuple[Any, FakeKube, Path],
) -> None:
    proc, kube, tmp = prepared
    host_models = tmp / "volumes" / "pv-1"
    cfg = proc.folder / "volumes" / "cfg"
    # The rendered command and args, with paths under mounts relocated and $(VAR) expanded, run in a
    # mount namespace whose /var/run holds the service-account volume at its mount path.
    command = proc.argv[proc.argv.index("--") + 1 :]
    assert command == [
        "python3", "-m", "dynamo.mocker", "--model-path", f"{host_models}/tiny",
        f"--config={cfg}/a.json", "ns-g",
    ]  # fmt: skip
    projected = proc.folder / "volumes" / "kube-api-access-x"
    assert proc.argv[0] == "unshare" and "--mount" in proc.argv
    mounts = proc.argv[proc.argv.index(MOUNT_SCRIPT) + 3 : proc.argv.index("--")]
    assert mounts == [str(projected), "secrets/kubernetes.io/serviceaccount"]
    env = proc.env
    # fieldRefs from the live pod, secrets and envFrom read as the kubelet would.
    assert (env["POD_NAME"], env["POD_UID"], env["TOKEN"]) == ("g-worker-abc-0", "1234-uid", "s3cret")
    assert (env["CFG_MODE"], env["GREETING"]) == ("fast", "hi g-worker-abc-0 $(POD_NAME)")
    # The container port becomes a free port below 32768, and so does the env naming it; a port
    # that is not a container port is left as it is.
    assert proc.ports["system"] == int(env["DYN_SYSTEM_PORT"]) < 32768
    assert env["DYN_FORWARDPASS_METRIC_PORT"] == "20380"
    assert env["DYN_TCP_RPC_HOST"] == "127.0.0.1"
    assert env["HF_HUB_OFFLINE"] == "1"
    assert env["PATH"].split(":")[0] == str(tmp / "venv" / "bin")
    # The only credential: a token of the pod's service account, bound to the pod.
    (path, body), = kube.token_requests  # fmt: skip
    assert path == "/api/v1/namespaces/ns/serviceaccounts/g-k8s-service-discovery/token"
    assert body["spec"]["boundObjectRef"] == {
        "apiVersion": "v1", "kind": "Pod", "name": "g-worker-abc-0", "uid": "1234-uid",
    }  # fmt: skip
    config = json.loads(Path(env["KUBECONFIG"]).read_text())
    assert config["users"][0]["user"] == {"token": "bound-token"}
    assert config["clusters"][0]["cluster"]["server"] == "https://127.0.0.1:6443"
    # Nothing else of ours leaks in: exactly the container's env plus the listed additions.
    container_env = {e["name"] for e in POD["spec"]["containers"][0]["env"]} | {"CFG_a.json", "CFG_MODE"}
    added = {"DYN_TCP_RPC_HOST", "HF_HUB_OFFLINE", "HOME", "PATH", "KUBECONFIG", "PWD"}
    proxy = {"HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"}
    assert set(env) == container_env | added | proxy
    # Pod addresses go through the harness's pod network; loopback (the API server) stays direct.
    assert env["HTTP_PROXY"] == env["http_proxy"] and env["HTTP_PROXY"].startswith("http://127.0.0.1:")
    assert env["NO_PROXY"] == env["no_proxy"] == "127.0.0.1,localhost"
    assert (
        proc.pod == "g-worker-abc-0"
        and proc.pod_ip == "10.244.0.7"
        and proc.container_ports == {9090: proc.ports["system"]}
    )
    assert (cfg / "a.json").read_text() == "{}"
    # The projected service-account volume holds the same bound token (one TokenRequest per pod).
    assert (projected / "token").read_text() == "bound-token"
    assert (projected / "namespace").read_text() == "ns" and (projected / "ca.crt").read_text() == "CA"
    assert len(SUBSTITUTIONS) == 10
    # What is shown of the process: the container's own command and args, as the pod holds them.
    assert proc.command == [
        "python3", "-m", "dynamo.mocker", "--model-path", "/models/tiny", "--config=/etc/cfg/a.json",
        "$(DYN_NAMESPACE)",
    ]  # fmt: skip


def test_the_log_begins_with_what_the_harness_runs(tmp_path: Path) -> None:
    """The wrapper (here a multi-line script) goes to the process's log, on one line, before its output."""
    argv = ["/bin/sh", "-c", "echo one\necho two", "sh"]
    proc = PodProcess(pod="p", uid="u", component="c", folder=tmp_path, argv=argv, env={}, ports={},
                      command=["echo"])  # fmt: skip
    proc.start()
    assert proc.popen is not None and proc.popen.wait(10) == 0
    first, *output = proc.log.read_text().splitlines()
    assert json.loads(first.removeprefix("[harness] exec ")) == argv
    assert output == ["one", "two"]


def test_no_token_when_the_pod_opts_out(tmp_path: Path) -> None:
    kube = FakeKube(tmp_path)
    pod = {**POD, "spec": {**POD["spec"], "automountServiceAccountToken": False}}
    pods = PodProcesses(
        kube,  # type: ignore[arg-type]
        Connection(server="https://127.0.0.1:1"),
        namespace="ns",
        selector="x",
        root=tmp_path,
        runtime_bin=tmp_path,
    )
    assert "KUBECONFIG" not in pods.prepare(pod).env
    assert kube.token_requests == []


def test_unsupported_volumes_are_named(tmp_path: Path) -> None:
    pod = {**POD, "spec": {**POD["spec"], "volumes": [{"name": "models", "nfs": {"server": "x"}}]}}
    pods = PodProcesses(
        FakeKube(tmp_path),  # type: ignore[arg-type]
        Connection(server="https://127.0.0.1:1"),
        namespace="ns",
        selector="x",
        root=tmp_path,
        runtime_bin=tmp_path,
    )
    with pytest.raises(PodProcessError, match="volume 'models' of type \\['nfs'\\]"):
        pods.prepare(pod)


def test_var_run_mounts_are_the_containers_own(tmp_path: Path) -> None:
    """Nothing to mount: the command as it is; else the folder is readable at its mount path, and only
    in the process's own mount namespace (needs unshare)."""
    assert with_var_run(["true"], {"/models": tmp_path}) == ["true"]
    (tmp_path / "namespace").write_text("ns")
    argv = with_var_run(
        ["cat", "/var/run/secrets/kubernetes.io/serviceaccount/namespace"],
        {"/var/run/secrets/kubernetes.io/serviceaccount": tmp_path},
    )
    run = subprocess.run(argv, capture_output=True, text=True, check=False)
    if run.returncode != 0 and "unshare" in run.stderr:
        pytest.skip(f"no mount namespaces here: {run.stderr.strip()}")
    assert run.stdout == "ns", run.stderr
    assert not Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace").exists()


def test_an_image_of_image_bins_runs_with_its_own_bin_folder(tmp_path: Path) -> None:
    """The agent's image runs with this repository's virtualenv; every other image with the runtime's."""
    agent = tmp_path / "agent-venv" / "bin"
    main = {**POD["spec"]["containers"][0], "image": "registry.local/dynamo-infra-agent:0.1.0"}
    pod = {**POD, "spec": {**POD["spec"], "containers": [main]}}
    pods = PodProcesses(
        FakeKube(tmp_path),  # type: ignore[arg-type]
        Connection(server="https://127.0.0.1:1"),
        namespace="ns",
        selector="x",
        root=tmp_path / "pods",
        runtime_bin=tmp_path / "venv" / "bin",
        image_bins={"registry.local/dynamo-infra-agent:0.1.0": agent},
    )
    with pods:
        assert pods.prepare(pod).env["PATH"].split(":")[0] == str(agent)
        assert pods.prepare(POD).env["PATH"].split(":")[0] == str(tmp_path / "venv" / "bin")


def test_a_container_runs_on_the_runtime_release_of_its_image(tmp_path: Path) -> None:
    """Given a function, the runtime's bin folder is the one for the container's image; an image no
    runtime stands for is refused by name."""
    asked: list[str] = []

    def runtime_for(image: str) -> Path:
        asked.append(image)
        if image.endswith(":1.5.0"):
            raise ValueError(f"image {image}: no Dynamo runtime 1.5")
        return tmp_path / image.rsplit(":", 1)[1] / "bin"

    def with_image(image: str) -> dict[str, Any]:
        main = {**POD["spec"]["containers"][0], "image": image}
        return {**POD, "spec": {**POD["spec"], "containers": [main]}}

    pods = PodProcesses(
        FakeKube(tmp_path),  # type: ignore[arg-type]
        Connection(server="https://127.0.0.1:1"),
        namespace="ns",
        selector="x",
        root=tmp_path / "pods",
        runtime_bin=runtime_for,
    )
    with pods:
        proc = pods.prepare(with_image("nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.6.1"))
        assert proc.env["PATH"].split(":")[0] == str(tmp_path / "1.6.1" / "bin") == str(proc.bin)
        assert proc.image == "nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.6.1"
        with pytest.raises(PodProcessError, match=r"no Dynamo runtime 1\.5"):
            pods.prepare(with_image("nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.5.0"))
    assert asked[-2:] == [
        "nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.6.1",
        "nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.5.0",
    ]
