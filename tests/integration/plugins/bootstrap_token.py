"""An exec credential plugin (as EKS, GKE and AKS ship them) issuing short-lived tokens the local API
server accepts: each run creates a bootstrap token (a Secret `bootstrap-token-<id>` in kube-system
whose `expiration` the API server enforces) with the admin credentials of $ADMIN_KUBECONFIG, and
prints it as an ExecCredential.

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
import urllib.request

ALPHABET = string.ascii_lowercase + string.digits


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
    expires = datetime.datetime.now(datetime.UTC) + datetime.timedelta(
        seconds=float(os.environ["TOKEN_SECONDS"])
    )
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
