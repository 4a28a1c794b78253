"""Whose objects are whose: our inventory label and owner annotation, and refusing someone else's.

Decision 3: an object that already exists and belongs to someone else (another resource or stack,
the Dynamo operator, a hand-made object) is never taken over; applying it fails naming its owner.
The one exception is a graph moving from the operator: what the operator left for the same graph is
taken over, loudly (`takeover`). Two stacks deploying a graph of the same name into one namespace
render the same owner: the stack annotation tells them apart. Fields others edit on our own objects
are drift, restored by the next forced apply.
"""

from __future__ import annotations

import hashlib

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.errors import DynamoInfraError
from dynamo_infra.kube.client import FIELD_MANAGER, KubeClient
from dynamo_infra.reconcile.takeover import DCD_KIND, DGD_KIND, OperatorGraph, operator_owners

# Label on every object a provider applies: which resource (namespace/graph/component) owns it,
# so objects left behind by an interrupted run are found and pruned by the next one.
INVENTORY_LABEL = "dynamo-infra.io/inventory"
# The owner spelled out, for people reading the object (and for telling ours from others').
INVENTORY_ANNOTATION = "dynamo-infra.io/owner"
# The stack (`project/stack`) that applied an object (the platform's objects carry the same one).
STACK_ANNOTATION = "dynamo-infra.io/owner-stack"
# Owners whose ownerReference makes an object the Dynamo operator's.
OPERATOR_KINDS = (DGD_KIND, DCD_KIND)


class ForeignObject(DynamoInfraError):
    """An object to be applied already exists and belongs to someone else."""


def inventory_id(namespace: str, graph: str, component: str) -> str:
    """A label value naming the owning resource (12 hex of SHA-256 of `namespace/graph/component`)."""
    return hashlib.sha256(f"{namespace}/{graph}/{component}".encode()).hexdigest()[:12]


def with_inventory(obj: Manifest, owner: str, inventory: str, stack: str = "") -> Manifest:
    """The manifest with our inventory label and owner (and stack, when known) annotations on its
    metadata (not its pods)."""
    meta = dict(obj.get("metadata") or {})
    meta["labels"] = {**(meta.get("labels") or {}), INVENTORY_LABEL: inventory}
    stamps = {INVENTORY_ANNOTATION: owner, **({STACK_ANNOTATION: stack} if stack else {})}
    meta["annotations"] = {**(meta.get("annotations") or {}), **stamps}
    return {**obj, "metadata": meta}


def owner_of(obj: Manifest | None) -> str:
    """The owner annotation we put on an object ("" when it has none)."""
    meta = (obj or {}).get("metadata") or {}
    return str((meta.get("annotations") or {}).get(INVENTORY_ANNOTATION) or "")


def stack_of(obj: Manifest | None) -> str:
    """The stack annotation we put on an object ("" when it has none)."""
    meta = (obj or {}).get("metadata") or {}
    return str((meta.get("annotations") or {}).get(STACK_ANNOTATION) or "")


def foreign_owner(live: Manifest | None, owner: str, stack: str = "") -> str | None:
    """Who else owns an existing object, in words; None when it is absent or `owner`'s (in `stack`,
    when both it and the object name one).

    An object without our annotation that our field manager wrote is ours (applied before owners
    were recorded).
    """
    if live is None:
        return None
    meta = live.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") in OPERATOR_KINDS:
            return f"the Dynamo operator ({ref['kind']} {ref.get('name')})"
        if ref.get("controller"):
            return f"{ref.get('kind')} {ref.get('name')} (its controller)"
    theirs, their_stack = owner_of(live), stack_of(live)
    if theirs:
        if theirs == owner and (not stack or not their_stack or their_stack == stack):
            return None
        return f"dynamo-infra resource {theirs}" + (f" of stack {their_stack}" if their_stack else "")
    managers = sorted(
        {str(m.get("manager")) for m in meta.get("managedFields") or [] if not m.get("subresource")}
    )
    if FIELD_MANAGER in managers:
        return None
    return f"field manager {', '.join(managers)}" if managers else "someone outside dynamo-infra"


def refuse_foreign(
    client: KubeClient,
    objects: dict[str, Manifest],
    owner: str,
    operator: OperatorGraph | None = None,
    stack: str = "",
) -> dict[str, Manifest]:
    """Fail, naming each owner, when any of `objects` exists and belongs to someone else (another
    stack's `owner` too), but for what the Dynamo operator left for `operator`'s graph: those are
    returned (key: metadata as found). Nothing is written: a refusal comes before any write."""
    found: list[str] = []
    adopted: dict[str, Manifest] = {}
    for key, obj in objects.items():
        live = client.get_metadata(obj)
        who = foreign_owner(live, owner, stack)
        if live is None or who is None:
            continue
        meta = live.get("metadata") or {}
        why = operator.refusal(meta) if operator is not None and operator_owners(meta) else ""
        if why is None:
            adopted[key] = meta
        else:
            found.append(f"{key} belongs to {who}" + (f", {why}" if why else ""))
    if found:
        raise ForeignObject(
            f"{owner}: not taking over objects that exist already: {'; '.join(found)} "
            "(delete them, or rename the graph or component)"
        )
    return adopted
