"""The workload axis of the DCD path: per workload kind, what runs a component's pods (the DCD
controller's choice). The Grove pathway renders the whole graph as one PodCliqueSet (`grove`)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render.context import ComponentContext
from dynamo_infra.render.features.autoscaling import hpa
from dynamo_infra.render.features.ingress import ingress, virtual_service
from dynamo_infra.render.features.pullsecrets import PullSecret, with_workload_pull_secrets
from dynamo_infra.render.rendered import DEPLOYMENT
from dynamo_infra.render.workloads import lws
from dynamo_infra.render.workloads.deployment import deployment, service

# The workload kind of a multinode component when LWS is available.
LEADER_WORKER_SET = lws.KIND


def workload_kind(ctx: ComponentContext) -> str:
    """The DCD controller's choice: LeaderWorkerSet for multinode when LWS is available."""
    return LEADER_WORKER_SET if ctx.options.lws_enabled and ctx.node_count > 1 else DEPLOYMENT


# Workload renderers of the DCD path, by kind (every DCD pod uses LWS addressing).
WORKLOADS: Mapping[str, Callable[[ComponentContext], Manifest]] = {
    DEPLOYMENT: functools.partial(deployment, deployer=lws.DEPLOYER),
    LEADER_WORKER_SET: lws.leader_worker_set,
}


def component_objects(
    ctx: ComponentContext, kind: str, pull_secrets: Sequence[PullSecret] | None = None
) -> list[Manifest]:
    """What the component controller creates for one DCD with its workload `kind` (model Service excluded)."""
    workload = WORKLOADS[kind](ctx)
    objects = [workload, service(ctx), ingress(ctx), virtual_service(ctx), hpa(ctx)]
    out = [o for o in objects if o is not None]
    if pull_secrets and ctx.options.image_pull_secret_discovery:
        out = [with_workload_pull_secrets(o, pull_secrets) for o in out]
    return out
