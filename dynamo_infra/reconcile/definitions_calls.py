"""What the platform's CustomResourceDefinitions provider does in the cluster: server-side apply of
each CRD under the cluster-wide field manager, a wait for the API server to establish it, and the
read of refresh. A CRD is never deleted (deleting one deletes every resource of its kind in the
cluster): one dropped from the set, or the whole set at `pulumi destroy`, stays as it is.
"""

from __future__ import annotations

import time
from typing import Any

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube.client import PLATFORM_USER_AGENT
from dynamo_infra.reconcile.base import AwaitTimeout, log
from dynamo_infra.reconcile.inputs import DefinitionsInputs

# How long a create or update waits for the API server to establish the CRDs (serve their kinds).
ESTABLISH_TIMEOUT_S = 120.0
# The CRD condition saying its names are accepted and its kind is served.
ESTABLISHED = "Established"
# The digest the outputs hold for a CRD whose live fields differ from its manifest (refresh): the
# next `up` sees a change and applies it again.
DRIFTED = "drifted"


def established(live: Manifest | None) -> bool:
    conditions = ((live or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == ESTABLISHED and c.get("status") == "True" for c in conditions)


def apply(ins: DefinitionsInputs, props: dict[str, Any], olds: DefinitionsInputs | None) -> dict[str, Any]:
    """Apply every CRD of the inputs, then wait until each is established; the outputs are the inputs."""
    with ins.client(PLATFORM_USER_AGENT) as client:
        applied = [client.apply(ins.manifests[name], manager=ins.field_manager) for name in ins.definitions]
        deadline = time.monotonic() + ESTABLISH_TIMEOUT_S
        for live in applied:
            if established(live):
                continue
            met, last = client.wait_for(live, established, max(deadline - time.monotonic(), 0.0))
            if not met:
                conditions = ((last or {}).get("status") or {}).get("conditions")
                raise AwaitTimeout(
                    f"CustomResourceDefinition {live['metadata']['name']} not established after "
                    f"{ESTABLISH_TIMEOUT_S:.0f}s: {conditions}"
                )
    for name in sorted(set(olds.definitions if olds else ()) - set(ins.definitions)):
        log(f"CustomResourceDefinition {name}: no longer installed by this stack, kept in the cluster")
    return dict(props)


def read(ins: DefinitionsInputs, props: dict[str, Any]) -> dict[str, Any]:
    """The outputs as the cluster has them: a CRD deleted by hand leaves `definitions`; one whose fields
    another writer changed reads DRIFTED (a dry-run apply of its manifest would change it)."""
    definitions: dict[str, str] = {}
    with ins.client(PLATFORM_USER_AGENT) as client:
        for name, digest in ins.definitions.items():
            manifest = ins.manifests.get(name)
            live = client.get(manifest) if manifest else None
            if manifest is None or live is None:
                log(f"CustomResourceDefinition {name} is gone from the cluster")
                continue
            after = client.apply(manifest, manager=ins.field_manager, dry_run=True)
            definitions[name] = digest if _seen(live) == _seen(after) else DRIFTED
    return {**props, "definitions": definitions}


def _seen(obj: Manifest) -> tuple[Any, Any, Any]:
    """What an apply that changes a CRD changes: labels, annotations, spec."""
    meta = obj.get("metadata") or {}
    return meta.get("labels"), meta.get("annotations"), obj.get("spec")
