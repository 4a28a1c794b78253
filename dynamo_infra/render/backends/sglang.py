"""SGLang backend: multinode distributed init (`--dist-init-addr`, `--nnodes`, `--node-rank`)."""

from __future__ import annotations

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render import roles
from dynamo_infra.render.backends.defaults import EngineDefaults
from dynamo_infra.render.context import ComponentContext
from dynamo_infra.render.multinode import Placement, Role, inject_flags, without_probes

# Framework word the flag injector looks for in shell command lines.
FRAMEWORK = "sglang"
# Port of SGLang's distributed init rendezvous on the leader.
DIST_INIT_PORT = "29500"


def multinode_flags(ctx: ComponentContext, p: Placement) -> tuple[str, bool]:
    """The flags of one pod of the group, and whether a shell must evaluate them (new graphs address
    the leader and the rank through the topology aliases)."""
    if roles.uses_topology_aliases(ctx.template_annotations):
        leader, rank, needs_shell = roles.LEADER_ADDRESS_REF, roles.RANK_REF, False
    else:
        leader = p.deployer.leader_hostname(ctx.name)
        rank, needs_shell = ("0", False) if p.role == Role.LEADER else p.deployer.node_rank()
    return f"--dist-init-addr {leader}:{DIST_INIT_PORT} --nnodes {p.nodes} --node-rank {rank}", needs_shell


class SGLang(EngineDefaults):
    name = FRAMEWORK

    def container(self, ctx: ComponentContext, container: Manifest, placement: Placement) -> Manifest:
        if not placement.multinode:
            return container
        if placement.role == Role.WORKER:
            container = without_probes(container)
        if roles.has_role_pod_templates(ctx.spec):
            # A complete role template owns the launch (1.6-era `backend_sglang.go`, tu-kim/dynamo@3f3d3dfa).
            return container
        flags, needs_shell = multinode_flags(ctx, placement)
        return inject_flags(container, flags, needs_shell, FRAMEWORK)
