"""The webhook's multinode rules that arrived after our pin: only worker, prefill and decode components
may be multinode (an unchanged legacy violation is kept on update, and removing it is allowed), and
a multinode component's node count is fixed once created. A multinode EPP (node count ≥ 2 by the
CRD) keeps the pin's own answer ("EPP component cannot be multinode", `component`), which the
recorded verdicts hold.

Ported from 1.6-era `deploy/operator/internal/webhook/validation/shared_v1beta1.go`
(michaelfeil/dynamo@80b177f2c87c3c80dec88524bb0cda666cc3effc: `validateMultinodeComponentType`,
`removesUnsupportedMultinode`, `validateDynamoComponentDeploymentSharedSpecUpdate`)."""

from __future__ import annotations

from typing import Final

from dynamo_infra.api import v1beta1
from dynamo_infra.api.admission import field
from dynamo_infra.api.admission.paths import At
from dynamo_infra.api.errors import Problem

UNSUPPORTED_TYPE: Final = "multinode is supported only for worker, prefill, or decode components"
EPP: Final = "epp"
# `apivalidation.FieldImmutableErrorMsg`.
FIELD_IMMUTABLE: Final = "field is immutable"


def _unsupported(c: v1beta1.ComponentFields | None) -> bool:
    return c is not None and c.multinode is not None and not c.is_worker


def multinode_type_problems(
    c: v1beta1.ComponentFields, old: v1beta1.ComponentFields | None, at: At
) -> list[Problem]:
    """A multinode component of another type, unless the update keeps the old one's exactly."""
    if not _unsupported(c) or c.type == EPP:
        return []
    if old is not None and old.type == c.type and _unsupported(old) and old.multinode == c.multinode:
        return []
    return [field.forbidden(at("multinode"), UNSUPPORTED_TYPE)]


def removes_unsupported_multinode(new: v1beta1.ComponentFields, old: v1beta1.ComponentFields) -> bool:
    """The update drops a legacy multinode value from a component type that cannot be multinode."""
    return _unsupported(old) and new.multinode is None and new.type == old.type


def node_count_update(new: v1beta1.ComponentFields, old: v1beta1.ComponentFields, at: At) -> list[Problem]:
    """Both multinode (or both not): the node count may not change."""
    if _unsupported(new) or new.multinode is None or old.multinode is None:
        return []
    if new.multinode.node_count == old.multinode.node_count:
        return []
    return [field.invalid(at("multinode", "nodeCount"), new.multinode.node_count, FIELD_IMMUTABLE)]
