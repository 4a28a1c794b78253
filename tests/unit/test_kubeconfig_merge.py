"""A KUBECONFIG list merged as kubectl merges it: entries by name (first file wins whole entries), the
first current-context, relative paths against the folder of the file that holds them, missing files
and empty elements skipped."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dynamo_infra.kube import connection, kubeconfig
from dynamo_infra.kube.errors import KubeconfigError


def write(path: Path, cfg: dict[str, object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(cfg))
    return path


def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Three kubeconfigs in three folders. `a` names the context to use and its user; `b` defines that
    context's cluster (its CA relative to b's folder), another `current-context`, and a user of the same
    name as a's; `c` defines another cluster of the same name as b's."""
    (tmp_path / "a" / "pki").mkdir(parents=True)
    (tmp_path / "a" / "pki" / "token").write_text("token-from-a\n")
    (tmp_path / "b" / "pki").mkdir(parents=True)
    (tmp_path / "b" / "pki" / "ca.crt").write_bytes(b"CA OF B")
    a = write(
        tmp_path / "a" / "config",
        {
            "current-context": "dev",
            "users": [{"name": "me", "user": {"tokenFile": "pki/token"}}],
            "contexts": [
                {"name": "dev", "context": {"cluster": "shared", "user": "me", "namespace": "a-ns"}}
            ],
        },
    )
    b = write(
        tmp_path / "b" / "config",
        {
            "current-context": "prod",
            "clusters": [
                {
                    "name": "shared",
                    "cluster": {"server": "https://b:6443", "certificate-authority": "pki/ca.crt"},
                }
            ],
            "users": [{"name": "me", "user": {"token": "token-from-b"}}],
            "contexts": [
                {"name": "dev", "context": {"cluster": "other", "user": "other"}},
                {"name": "prod", "context": {"cluster": "shared", "user": "me"}},
            ],
        },
    )
    c = write(
        tmp_path / "c" / "config",
        {
            "clusters": [
                {"name": "shared", "cluster": {"server": "https://c:6443", "insecure-skip-tls-verify": True}}
            ]
        },
    )
    return a, b, c


def kubeconfig_env(*paths: Path | str) -> dict[str, str]:
    return {"KUBECONFIG": os.pathsep.join(str(p) for p in paths)}


def test_entries_merge_by_name_and_the_first_current_context_wins(tmp_path: Path) -> None:
    a, b, c = files(tmp_path)
    conn = connection.from_environment(kubeconfig_env(a, "", tmp_path / "missing", b, c))
    # a's current-context and its context `dev` (not b's), b's cluster `shared` (not c's), a's user.
    assert (conn.context, conn.namespace, conn.server) == ("dev", "a-ns", "https://b:6443")
    # b's relative CA path read from b's folder, a's relative token file from a's.
    assert conn.ca_pem == b"CA OF B" and not conn.insecure
    assert conn.token_file == str(tmp_path / "a" / "pki" / "token")
    assert conn.credential().token == "token-from-a"


def test_a_later_file_sets_current_context_when_the_earlier_ones_do_not(tmp_path: Path) -> None:
    _, b, c = files(tmp_path)
    conn = connection.from_environment(kubeconfig_env(c, b))
    # c comes first: its cluster `shared` wins; b gives the current-context `prod` and the user.
    assert (conn.context, conn.server, conn.insecure, conn.token) == (
        "prod",
        "https://c:6443",
        True,
        "token-from-b",
    )


def test_the_merged_config_has_each_name_once_with_paths_absolute(tmp_path: Path) -> None:
    a, b, c = files(tmp_path)
    merged = kubeconfig.merge(kubeconfig.files(os.pathsep.join(map(str, (a, b, a, c)))))
    assert merged is not None
    assert [e["name"] for e in merged["contexts"]] == ["dev", "prod"]
    assert [e["name"] for e in merged["clusters"]] == ["shared"]
    assert [e["name"] for e in merged["users"]] == ["me"]
    assert merged["clusters"][0]["cluster"]["certificate-authority"] == str(tmp_path / "b" / "pki" / "ca.crt")


def test_an_exec_command_with_a_path_is_relative_to_its_file(tmp_path: Path) -> None:
    exec_user = {"apiVersion": "client.authentication.k8s.io/v1", "command": "./bin/login", "args": ["x"]}
    on_path = {"apiVersion": "client.authentication.k8s.io/v1", "command": "gcloud-login"}
    cfg = write(
        tmp_path / "d" / "config",
        {"users": [{"name": "e", "user": {"exec": exec_user}}, {"name": "p", "user": {"exec": on_path}}]},
    )
    merged = kubeconfig.merge([cfg])
    assert merged is not None
    assert merged["users"][0]["user"]["exec"]["command"] == str(tmp_path / "d" / "bin" / "login")
    assert merged["users"][1]["user"]["exec"]["command"] == "gcloud-login"  # looked up on PATH


def test_no_existing_file_or_an_unreadable_one_fails_by_name(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match="none of the KUBECONFIG files exists"):
        connection.from_environment(kubeconfig_env(tmp_path / "x", tmp_path / "y"))
    (tmp_path / "bad").write_text("{token: secret-value")
    with pytest.raises(KubeconfigError, match="bad is not valid YAML") as e:
        connection.from_environment(kubeconfig_env(tmp_path / "bad"))
    assert "secret-value" not in str(e.value)
    # An empty KUBECONFIG (only separators) is no KUBECONFIG: the in-cluster configuration.
    with pytest.raises(KubeconfigError, match="not in a cluster"):
        connection.from_environment({"KUBECONFIG": os.pathsep})


def test_the_merged_text_reads_as_the_merged_connection(tmp_path: Path) -> None:
    """What the policy pack reads the cluster with when it has only $KUBECONFIG."""
    a, b, c = files(tmp_path)
    value = os.pathsep.join(map(str, (a, b, c)))
    text = kubeconfig.merged_text(value)
    assert connection.load(text) == connection.from_environment({"KUBECONFIG": value})
    assert kubeconfig.merged_text(str(tmp_path / "missing")) == ""
