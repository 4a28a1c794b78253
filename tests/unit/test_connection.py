"""Kubeconfig parsing: contexts with namespaces, cluster TLS and proxy settings, relative paths, and
exec credential plugins (versions, cluster info, expiry, missing commands) run as small scripts."""

from __future__ import annotations

import base64
import datetime
import json
import stat
import sys
import time
from pathlib import Path

import pytest

from dynamo_infra.kube import connection
from dynamo_infra.kube.client import KubeClient, proxied_from_environment
from dynamo_infra.kube.exec_credential import (
    EXPIRY_MARGIN_S,
    Credential,
    ExecCredentialError,
    ExecPlugin,
)
from dynamo_infra.kube.kubeconfig import with_absolute_paths

V1 = "client.authentication.k8s.io/v1"


def kubeconfig(user: dict[str, object], cluster: dict[str, object] | None = None, **context: str) -> str:
    entry = {"server": "https://10.0.0.1:6443/", **(cluster or {})}
    return json.dumps(
        {
            "clusters": [{"name": "c", "cluster": entry}],
            "users": [{"name": "u", "user": user}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", **context}}],
            "current-context": "x",
        }
    )


def plugin_script(folder: Path, answer: dict[str, object], name: str = "plugin") -> Path:
    """An executable plugin that records its environment and prints `answer` (JSON)."""
    path = folder / name
    path.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        f"open({str(folder / 'seen.jsonl')!r}, 'a').write(json.dumps(dict(os.environ)) + '\\n')\n"
        f"sys.stdout.write({json.dumps(answer)!r})\n"
    )
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def seen(folder: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in (folder / "seen.jsonl").read_text().splitlines()]


def stamp(seconds_from_now: float) -> str:
    when = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=seconds_from_now)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_context_namespace_tls_server_name_and_proxy_url() -> None:
    cluster = {"tls-server-name": "api.internal", "proxy-url": "socks5://proxy:1080"}
    conn = connection.parse(kubeconfig({"token": "t"}, cluster, namespace="team-a"))
    assert (conn.server, conn.namespace, conn.tls_server_name, conn.proxy_url) == (
        "https://10.0.0.1:6443", "team-a", "api.internal", "socks5://proxy:1080",
    )  # fmt: skip
    assert connection.parse(kubeconfig({"token": "t"})).namespace == ""


def test_relative_paths_resolve_against_the_kubeconfig_folder(tmp_path: Path) -> None:
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "ca.crt").write_bytes(b"CA")
    (tmp_path / "pki" / "u.crt").write_bytes(b"CERT")
    (tmp_path / "pki" / "u.key").write_bytes(b"KEY")
    (tmp_path / "token").write_text("from-file\n")
    user = {"client-certificate": "pki/u.crt", "client-key": "pki/u.key", "tokenFile": "token"}
    (tmp_path / "config").write_text(kubeconfig(user, {"certificate-authority": "pki/ca.crt"}))
    conn = connection.load(str(tmp_path / "config"))
    assert (conn.ca_pem, conn.client_cert_pem, conn.client_key_pem) == (b"CA", b"CERT", b"KEY")
    assert conn.credential().token == "from-file"
    # A rotated token file is read again after a 401; an unchanged one gives nothing new to try.
    refused = conn.credential()
    assert conn.renew(refused) is None
    (tmp_path / "token").write_text("rotated")
    renewed = conn.renew(refused)
    assert renewed is not None and renewed.token == "rotated"


def test_exec_plugin_gets_cluster_info_env_and_relative_command(tmp_path: Path) -> None:
    plugin_script(tmp_path, {"apiVersion": V1, "kind": "ExecCredential", "status": {"token": "tok"}})
    ca = base64.b64encode(b"CA").decode()
    extension = {"name": "client.authentication.k8s.io/exec", "extension": {"audience": "x"}}
    cluster = {"certificate-authority-data": ca, "extensions": [extension], "proxy-url": "http://p:3128"}
    user = {"exec": {"apiVersion": V1, "command": "./plugin", "env": [{"name": "REGION", "value": "eu"}],
                     "provideClusterInfo": True}}  # fmt: skip
    (tmp_path / "config").write_text(kubeconfig(user, cluster))
    conn = connection.load(str(tmp_path / "config"))
    assert conn.credential().token == "tok" and conn.credential().token == "tok"
    [env] = seen(tmp_path)  # one run: a credential without expiry is kept
    info = json.loads(env["KUBERNETES_EXEC_INFO"])
    assert env["REGION"] == "eu" and info["apiVersion"] == V1 and info["spec"]["interactive"] is False
    assert info["spec"]["cluster"] == {
        "server": "https://10.0.0.1:6443/",
        "certificate-authority-data": ca,
        "proxy-url": "http://p:3128",
        "config": {"audience": "x"},
    }


def test_exec_credential_renewed_before_expiry_and_after_401(tmp_path: Path) -> None:
    answer = {"apiVersion": V1, "kind": "ExecCredential",
              "status": {"token": "tok", "expirationTimestamp": stamp(3600)}}  # fmt: skip
    plugin = ExecPlugin({"apiVersion": V1, "command": str(plugin_script(tmp_path, answer))})
    first = plugin.current()
    assert first.renew_after is not None
    assert first.renew_after == pytest.approx(time.time() + 3600 - EXPIRY_MARGIN_S, abs=5)
    assert plugin.current() is first and plugin.runs == 1
    renewed = plugin.renew(first)
    assert plugin.runs == 2 and renewed is not first
    # A credential refused after another thread renewed it: the newer one, without another run.
    assert plugin.renew(Credential(token="older")) is renewed and plugin.runs == 2
    # A short-lived credential is renewed a quarter of its life before it ends.
    short = {**answer, "status": {"token": "tok", "expirationTimestamp": stamp(-1)}}
    expired = ExecPlugin({"apiVersion": V1, "command": str(plugin_script(tmp_path, short, "short"))})
    expired.current()
    expired.current()
    assert expired.runs == 2


def test_exec_client_certificate_and_version_checks(tmp_path: Path) -> None:
    status = {"clientCertificateData": "CERT", "clientKeyData": "KEY"}
    answer = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "kind": "ExecCredential",
        "status": status,
    }
    command = str(plugin_script(tmp_path, answer))
    cred = ExecPlugin({"apiVersion": "client.authentication.k8s.io/v1beta1", "command": command}).current()
    assert (cred.token, cred.client_pair) == (None, (b"CERT", b"KEY"))
    with pytest.raises(
        ExecCredentialError, match=r"expected ExecCredential client\.authentication\.k8s\.io/v1"
    ):
        ExecPlugin({"apiVersion": V1, "command": command}).current()
    with pytest.raises(connection.KubeconfigError, match="v1alpha1' is not one of"):
        connection.parse(
            kubeconfig({"exec": {"apiVersion": "client.authentication.k8s.io/v1alpha1", "command": "x"}})
        )
    half = {**answer, "status": {"clientCertificateData": "CERT"}}
    with pytest.raises(ExecCredentialError, match="only one of"):
        ExecPlugin(
            {"apiVersion": answer["apiVersion"], "command": str(plugin_script(tmp_path, half, "h"))}
        ).current()


def test_exec_failures_name_the_plugin_never_its_output(tmp_path: Path) -> None:
    missing = {
        "apiVersion": V1,
        "command": "aws-iam-authenticator-not-here",
        "installHint": "brew install it",
    }
    with pytest.raises(ExecCredentialError, match="not installed\n\nbrew install it"):
        ExecPlugin(missing).current()
    failing = tmp_path / "failing"
    failing.write_text("#!/bin/sh\necho secret-token-123\necho secret-token-123 >&2\nexit 3\n")
    failing.chmod(0o755)
    with pytest.raises(ExecCredentialError, match="exited with status 3") as e:
        ExecPlugin({"apiVersion": V1, "command": str(failing), "args": ["--password=hunter2"]}).current()
    assert "secret-token-123" not in str(e.value) and "hunter2" not in str(e.value)
    garbage = plugin_script(tmp_path, {"token": "secret-token-123"}, "garbage")
    with pytest.raises(ExecCredentialError) as e:
        ExecPlugin({"apiVersion": V1, "command": str(garbage)}).current()
    assert "secret-token-123" not in str(e.value)


def test_environment_proxies_skip_loopback_servers() -> None:
    assert not proxied_from_environment("https://127.0.0.1:6443")
    assert not proxied_from_environment("https://[::1]:6443")
    assert not proxied_from_environment("https://localhost:6443")
    assert proxied_from_environment("https://10.0.0.1:6443")
    assert proxied_from_environment("https://api.example.com")


def test_clients_of_one_kubeconfig_share_the_plugin_credential(tmp_path: Path) -> None:
    plugin_script(tmp_path, {"apiVersion": V1, "kind": "ExecCredential", "status": {"token": "tok"}})
    text = kubeconfig({"exec": {"apiVersion": V1, "command": str(tmp_path / "plugin")}})
    for _ in range(3):
        with KubeClient(connection.parse(text)) as client:
            assert client.conn.bearer_token() == "tok"
    assert len(seen(tmp_path)) == 1  # as client-go's cache of exec authenticators


def test_unsupported_proxy_fails_without_quoting_its_url() -> None:
    for url in ("socks5://user:pw0rd@proxy:1080", "ftp://user:pw0rd@proxy:21"):
        conn = connection.parse(kubeconfig({"token": "t"}, {"proxy-url": url}))
        with pytest.raises(connection.KubeconfigError, match="kubeconfig proxy-url") as e:
            KubeClient(conn)
        assert "pw0rd" not in str(e.value)


def test_agent_login_carries_expiry_namespace_proxy_and_renews_after_a_refusal(tmp_path: Path) -> None:
    from dynamo_infra.agent.app import Login

    answer = {"apiVersion": V1, "kind": "ExecCredential",
              "status": {"token": "tok", "expirationTimestamp": stamp(600)}}  # fmt: skip
    plugin_script(tmp_path, answer)
    user = {"exec": {"apiVersion": V1, "command": "./plugin"}}
    (tmp_path / "config").write_text(kubeconfig(user, {"proxy-url": "http://p:3128"}, namespace="team-a"))
    login = Login(lambda: connection.load(str(tmp_path / "config")))
    info = login()
    assert (info.token, info.default_namespace, info.proxy_url, info.trust_env) == (
        "tok",
        "team-a",
        "http://p:3128",
        True,
    )
    assert info.expiration is not None
    assert info.expiration.timestamp() == pytest.approx(time.time() + 600 - EXPIRY_MARGIN_S, abs=5)
    assert len(seen(tmp_path)) == 1
    login()  # kopf logs in again before the credential expired: it was refused, the plugin runs again
    assert len(seen(tmp_path)) == 2


def test_relative_paths_made_absolute_for_content_read_elsewhere(tmp_path: Path) -> None:
    (tmp_path / "pki").mkdir()
    for name in ("ca.crt", "u.crt", "u.key"):
        (tmp_path / "pki" / name).write_text(name)
    user = {"client-certificate": "pki/u.crt", "client-key": str(tmp_path / "pki" / "u.key"), "tokenFile": "~/tok",
            "exec": {"apiVersion": V1, "command": "bin/plugin", "args": ["rel/arg"]}}  # fmt: skip
    text = kubeconfig(user, {"certificate-authority": "pki/ca.crt"})
    out = with_absolute_paths(text, tmp_path)
    conn = connection.parse(out)  # read from no folder: the paths hold
    assert (conn.ca_pem, conn.client_cert_pem, conn.client_key_pem) == (b"ca.crt", b"u.crt", b"u.key")
    assert conn.plugin is not None and conn.plugin.command == str(tmp_path / "bin" / "plugin")
    assert conn.plugin.args == ["rel/arg"]  # arguments are the plugin's business
    assert conn.token_file == str(Path("~/tok").expanduser())
    again = connection.parse(out).exec_config
    assert again is not None and again["command"] == str(tmp_path / "bin" / "plugin")
    absolute = kubeconfig({"token": "t"}, {"certificate-authority": "/etc/ca.crt"})
    assert with_absolute_paths(absolute, tmp_path) is absolute  # unchanged, byte for byte
    assert with_absolute_paths("{not yaml", tmp_path) == "{not yaml"


def test_invalid_pem_is_named_not_quoted() -> None:
    ca = base64.b64encode(b"not-a-cert-s3cr3t").decode()
    conn = connection.parse(kubeconfig({"token": "t"}, {"certificate-authority-data": ca}))
    with pytest.raises(connection.KubeconfigError, match="certificate-authority is not a valid PEM") as e:
        KubeClient(conn)
    assert "s3cr3t" not in str(e.value)
    pair = {"client-certificate-data": ca, "client-key-data": ca}
    with pytest.raises(connection.KubeconfigError, match="client certificate or key is not valid PEM"):
        KubeClient(connection.parse(kubeconfig(pair)))


def test_connections_of_one_kubeconfig_share_one_ssl_context() -> None:
    """Each context loads the system CA store (~0.1 s): a program's reads, each loading the kubeconfig
    again, share one; another CA bundle or client pair is another context, and a bad PEM fails every time."""
    import ssl

    import certifi

    bundle = Path(certifi.where()).read_text()
    ca_pem = bundle[bundle.index("-----BEGIN CERTIFICATE-----") :].split("-----END CERTIFICATE-----")[0]
    ca_pem += "-----END CERTIFICATE-----\n"
    ca = base64.b64encode(ca_pem.encode()).decode()
    text = kubeconfig({"token": "t"}, {"certificate-authority-data": ca})
    ctx = connection.parse(text).ssl_context()
    assert isinstance(ctx, ssl.SSLContext)
    assert connection.parse(text).ssl_context() is ctx
    assert ssl.PEM_cert_to_DER_cert(ca_pem) in ctx.get_ca_certs(binary_form=True)
    other = connection.parse(kubeconfig({"token": "t"})).ssl_context()
    assert isinstance(other, ssl.SSLContext) and other is not ctx
    assert (
        connection.parse(kubeconfig({"token": "t"}, {"insecure-skip-tls-verify": True})).ssl_context()
        is False
    )
    bad = connection.parse(kubeconfig({"token": "t"}, {"certificate-authority-data": "bm90LXBlbQ=="}))
    for _ in range(2):
        with pytest.raises(connection.KubeconfigError, match="certificate-authority is not a valid PEM"):
            bad.ssl_context()
