"""plan_agent: the dynamo-infra agent's objects (`render.runtime.agent`) as the platform's pulumi-kubernetes
children, marked as the stack's own. Pure (no Pulumi).

The agent runs in its namespace (`dynamo-infra:agent` `namespace`, default the graphs') with a Role and
RoleBinding in the graphs' namespace; `pulumi destroy` deletes them all with the stack.
"""

from __future__ import annotations

from dataclasses import dataclass

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.config import AgentOptions
from dynamo_infra.render.runtime.agent import agent_objects

# pulumi-kubernetes does not wait for the Deployment to become available with this annotation (for
# clusters whose workloads are not awaited: `cluster.await.mode: skip`).
SKIP_AWAIT_ANNOTATION = "pulumi.com/skipAwait"


@dataclass(frozen=True)
class AgentObjectPlan:
    """One agent object: its Pulumi name, apiVersion, kind, metadata and other fields."""

    name: str
    api_version: str
    kind: str
    metadata: Manifest
    inputs: Manifest


def plan_agent(
    platform: str,
    graphs_namespace: str,
    agent: AgentOptions,
    labels: Manifest,
    annotations: Manifest,
    *,
    await_ready: bool = True,
) -> tuple[AgentObjectPlan, ...]:
    """The agent's objects for the graphs of `graphs_namespace`, with the stack's `labels` and
    `annotations` added (the rendering's own labels win); named `<platform>-agent[-<namespace>]`."""
    home = agent.namespace or graphs_namespace
    out = []
    for obj in agent_objects(home, [graphs_namespace], agent.image):
        meta = obj["metadata"]
        extra = {} if await_ready or obj["kind"] != "Deployment" else {SKIP_AWAIT_ANNOTATION: "true"}
        metadata = {
            **meta,
            "labels": {**labels, **(meta.get("labels") or {})},
            "annotations": {**(meta.get("annotations") or {}), **annotations, **extra},
        }
        suffix = "" if meta["namespace"] == home else f"-{meta['namespace']}"
        inputs = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
        out.append(
            AgentObjectPlan(f"{platform}-agent{suffix}", obj["apiVersion"], obj["kind"], metadata, inputs)
        )
    return tuple(out)
