"""Restart propagation (`spec.restart`): which components get `nvidia.com/restartAt`, and its value."""

from __future__ import annotations

from collections.abc import Mapping

from dynamo_infra.api import v1beta1

# Restart phases of `status.restart` that change what is annotated.
PHASE_PENDING = "Pending"
PHASE_COMPLETED = "Completed"
PHASE_SUPERSEDED = "Superseded"
# Strategy that restarts every component at once.
STRATEGY_PARALLEL = "Parallel"


def restart_order(dgd: v1beta1.DynamoGraphDeployment) -> list[str]:
    """The explicit sequential order, else component names sorted."""
    restart = dgd.spec.restart
    if restart and restart.strategy and restart.strategy.order:
        return list(restart.strategy.order)
    return sorted(c.name for c in dgd.spec.components or [])


def restart_annotations(
    dgd: v1beta1.DynamoGraphDeployment, status: Mapping[str, object] | None = None
) -> dict[str, str]:
    """DetermineRestartState as `component -> restartAt value`.

    `status` is the DGD's `status.restart` (observedID, phase, inProgress). Without one (a stateless
    render) a requested restart is shown as completed: every component carries the restart id, which
    is where the operator's sequence ends.
    """
    restart = dgd.spec.restart
    all_names = [c.name for c in dgd.spec.components or []]
    observed = str((status or {}).get("observedID") or "")
    phase = str((status or {}).get("phase") or "")
    if restart is None or not restart.id:
        return dict.fromkeys(all_names, observed) if observed else {}
    if status is None:
        return dict.fromkeys(all_names, restart.id)
    is_new = not observed or observed != restart.id
    if not is_new and phase == PHASE_SUPERSEDED:
        return {}
    parallel = bool(restart.strategy and restart.strategy.type == STRATEGY_PARALLEL)
    if (not is_new and phase == PHASE_COMPLETED) or parallel:
        return dict.fromkeys(all_names, restart.id)
    order = restart_order(dgd)
    in_progress = [str(n) for n in (status.get("inProgress") or [])]  # type: ignore[attr-defined]
    if not order:
        return {}
    if phase == PHASE_PENDING or not in_progress:
        return {order[0]: restart.id}
    last = max((i for i, n in enumerate(order) if n in in_progress), default=-1)
    return {n: restart.id for n in order[: last + 1]}
