"""A volume provisioner for the local control plane: binds each pending claim of the `standard`
StorageClass to a new hostPath PersistentVolume, a folder under `--volume-root` (the pods-as-processes
harness, tools/podprocs.py, gives a process that folder where its pod mounts the claim).

    python -m tools.fakeprovisioner --kubeconfig .local/cluster/kubeconfig --volume-root .local/cluster/volumes
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from dynamo_infra.kube import connection
from dynamo_infra.kube.client import KubeClient
from dynamo_infra.kube.errors import KubeError

# The local cluster's default StorageClass and the provisioner name it is served by.
STORAGE_CLASS = "standard"
PROVISIONER = "dynamo-infra.local/hostpath"
# Its requests are told apart from the providers' in the API server's audit log.
USER_AGENT = "local-volume-provisioner/0.1.0"
# How often pending claims are looked for.
POLL_S = 1.0


def storage_class() -> dict:  # type: ignore[type-arg]
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": STORAGE_CLASS,
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Retain",
        "volumeBindingMode": "Immediate",
    }


def provision_once(client: KubeClient, volume_root: Path) -> int:
    """Create a volume for every pending claim of our class; returns how many were created."""
    made = 0
    for claim in client.list("v1", "PersistentVolumeClaim"):
        spec, meta = claim.get("spec") or {}, claim["metadata"]
        if (claim.get("status") or {}).get("phase") != "Pending" or spec.get("volumeName"):
            continue
        if spec.get("storageClassName", STORAGE_CLASS) != STORAGE_CLASS:
            continue
        name = f"pv-{meta['uid']}"
        volume = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": PROVISIONER}},
            "spec": {
                "capacity": {
                    "storage": ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
                },
                "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": STORAGE_CLASS,
                "hostPath": {"path": str(volume_root / name)},
                "claimRef": {"namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"]},
            },
        }
        try:
            client.apply(volume)
            made += 1
        except KubeError as e:
            print(f"fakeprovisioner: {e}", file=sys.stderr, flush=True)
    return made


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--volume-root", required=True, type=Path, help="folder holding the volumes' folders")
    args = ap.parse_args(argv)
    volume_root = args.volume_root.resolve()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with KubeClient(connection.load(args.kubeconfig), user_agent=USER_AGENT) as client:
        client.apply(storage_class())
        while True:
            try:
                provision_once(client, volume_root)
            except KubeError as e:
                print(f"fakeprovisioner: {e}", file=sys.stderr, flush=True)
            time.sleep(POLL_S)


if __name__ == "__main__":
    sys.exit(main())
