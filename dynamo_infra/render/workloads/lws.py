"""LeaderWorkerSet pathway (DCD controller): one LeaderWorkerSet `{dcd}-0` per multinode component,
LWS scaling the groups natively. LWS addressing, which the DCD controller uses for every pod, is
`multinode.LWSDeployer`."""

from __future__ import annotations

from dynamo_infra.api import DynamoValidationError, Problem
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render import names, roles
from dynamo_infra.render.context import MAIN_CONTAINER, ComponentContext
from dynamo_infra.render.multinode import LWS_DEPLOYER, Role, with_empty_resources
from dynamo_infra.render.workloads.deployment import kube_labels, pod_template, replicas

API_VERSION = "leaderworkerset.x-k8s.io/v1"
KIND = "LeaderWorkerSet"
# Groups start as soon as their leader pod exists.
STARTUP_POLICY = "LeaderCreated"
# Label of the per-replica LeaderWorkerSets of older operators (pruned when found).
LEGACY_INSTANCE_ID_LABEL = "instance-id"
# The DCD controller renders every pod (Deployment or LWS) with LWS addressing.
DEPLOYER = LWS_DEPLOYER


def name(ctx: ComponentContext) -> str:
    return f"{ctx.dcd_name}-0"


def _check_main(ctx: ComponentContext, spec: Manifest) -> None:
    main = next((c for c in spec.get("containers") or [] if c.get("name") == MAIN_CONTAINER), None)
    problem = None
    if main is None:
        problem = "main container not found in pod spec"
    elif not main.get("command"):
        problem = "container Command cannot be nil for LWS pod"
    elif not main.get("args"):
        problem = "container Args cannot be empty for LWS pod"
    if problem:
        raise DynamoValidationError([Problem(f"components[{ctx.name}].podTemplate", problem)])


def _template(ctx: ComponentContext, role: Role) -> Manifest:
    """A leader or worker pod template, from the role's own template when the roles carry them."""
    template = pod_template(roles.for_role(ctx, role), DEPLOYER, role)
    labels = {k: v for k, v in template["metadata"]["labels"].items() if k != names.LABEL_SELECTOR}
    labels[names.LABEL_ROLE] = role.value
    _check_main(ctx, template["spec"])
    meta = {**template["metadata"], "labels": dict(sorted(labels.items()))}
    return {"metadata": meta, "spec": with_empty_resources(template["spec"])}


def leader_worker_set(ctx: ComponentContext) -> Manifest:
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name(ctx), "namespace": ctx.namespace, "labels": kube_labels(ctx)},
        "spec": {
            "replicas": replicas(ctx),
            "startupPolicy": STARTUP_POLICY,
            "leaderWorkerTemplate": {
                "leaderTemplate": _template(ctx, Role.LEADER),
                "workerTemplate": _template(ctx, Role.WORKER),
                "size": ctx.node_count,
            },
        },
    }
