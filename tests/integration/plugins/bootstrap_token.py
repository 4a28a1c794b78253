"""An exec credential plugin (as EKS, GKE and AKS ship them) issuing short-lived tokens the local API
server accepts: each run creates a bootstrap token (a Secret `bootstrap-token-<id>` in kube-system
whose `expiration` the API server enforces) with the admin credentials of $ADMIN_KUBECONFIG, and
prints it as an ExecCredential once the API server accepts it (its bootstrap-token authenticator reads
Secrets through an informer: a token used the moment it is created may be refused on a loaded machine,
which a cloud's plugin never hands out).

Environment (the kubeconfig's `exec.env`): ADMIN_KUBECONFIG; TOKEN_SECONDS, the token's life;
TOKEN_GROUP, its extra group (`system:bootstrappers:...`); PLUGIN_LOG, a file that gets one JSON
line per run (time, cluster server seen in KUBERNETES_EXEC_INFO); TOKEN_HIDE_EXPIRY=1 leaves
`expirationTimestamp` out (the client learns of the expiry only from a 401); CLIENT_CERT_FILE and
CLIENT_KEY_FILE make it answer with that client certificate instead.
"""

from __future__ import annotations

import base64
import datetime
import json
import os
import pathlib
import secrets
import ssl
import string
import sys
import time
import urllib.error
import urllib.request

ALPHABET = string.ascii_lowercase + string.digits
# How long a new token may take to be accepted, and the pause between tries.
ACCEPT_TIMEOUT_S = 20.0
ACCEPT_POLL_S = 0.05


def await_accepted(server: str, token: str, ctx: ssl.SSLContext) -> None:
    """Return once the API server authenticates `token` (GET /api answers anything but 401)."""
    deadline = time.monotonic() + ACCEPT_TIMEOUT_S
    while True:
        req = urllib.request.Request(server + "/api", headers={"Authorization": f"Bearer {token}"})
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=10):
                return
        except urllib.error.HTTPError as e:
            if e.code != 401 or time.monotonic() > deadline:
                return
        time.sleep(ACCEPT_POLL_S)


def main() -> int:
    info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
    if os.environ.get("CLIENT_CERT_FILE"):
        # A client certificate instead of a token (as some plugins issue).
        status = {
            "clientCertificateData": pathlib.Path(os.environ["CLIENT_CERT_FILE"]).read_text(),
            "clientKeyData": pathlib.Path(os.environ["CLIENT_KEY_FILE"]).read_text(),
        }
        json.dump({"apiVersion": info["apiVersion"], "kind": "ExecCredential", "status": status}, sys.stdout)
        return 0
    admin = json.loads(pathlib.Path(os.environ["ADMIN_KUBECONFIG"]).read_text())
    cluster = admin["clusters"][0]["cluster"]
    token = admin["users"][0]["user"]["token"]
    ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    token_id = "".join(secrets.choice(ALPHABET) for _ in range(6))
    token_secret = "".join(secrets.choice(ALPHABET) for _ in range(16))
    # The expiration is written in whole seconds: rounded up, so the token lives at least TOKEN_SECONDS.
    expires = datetime.datetime.now(datetime.UTC) + datetime.timedelta(
        seconds=float(os.environ["TOKEN_SECONDS"]) + 1
    )
    expires = expires.replace(microsecond=0)
    stamp = expires.strftime("%Y-%m-%dT%H:%M:%SZ")
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "bootstrap.kubernetes.io/token",
        "metadata": {"name": f"bootstrap-token-{token_id}", "namespace": "kube-system"},
        "stringData": {
            "token-id": token_id,
            "token-secret": token_secret,
            "expiration": stamp,
            "usage-bootstrap-authentication": "true",
            "auth-extra-groups": os.environ["TOKEN_GROUP"],
        },
    }
    req = urllib.request.Request(
        cluster["server"] + "/api/v1/namespaces/kube-system/secrets",
        data=json.dumps(secret).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, context=ctx, timeout=30):
        pass
    await_accepted(cluster["server"], f"{token_id}.{token_secret}", ctx)
    with open(os.environ["PLUGIN_LOG"], "a") as log:
        seen = info.get("spec", {}).get("cluster", {}).get("server", "")
        log.write(json.dumps({"time": time.time(), "server": seen, "apiVersion": info["apiVersion"]}) + "\n")
    status = {"token": f"{token_id}.{token_secret}"}
    if os.environ.get("TOKEN_HIDE_EXPIRY") != "1":
        status["expirationTimestamp"] = stamp
    json.dump({"apiVersion": info["apiVersion"], "kind": "ExecCredential", "status": status}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
