"""Where a field the webhook names (on the v1beta1 view it validates) lives in the document the user
wrote: `spec.components[<name>].…` in v1beta1, `spec.services.<name>.…` in v1alpha1."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from dynamo_infra.api.errors import join_path

# A field path inside a component or spec: wire keys and list indexes.
Part = str | int
# The path of a field of one component (or DCD spec), from its parts on the v1beta1 view.
At = Callable[..., str]

# v1beta1 component fields whose v1alpha1 home differs (longest prefix wins); a component's
# `name` is the v1alpha1 service's key.
_COMPONENT_TO_ALPHA: dict[tuple[str, ...], tuple[str, ...]] = {
    ("name",): (),
    ("type",): ("componentType",),
    ("sharedMemorySize",): ("sharedMemory", "size"),
    ("experimental", "gpuMemoryService"): ("gpuMemoryService",),
    ("experimental", "failover"): ("failover",),
    ("experimental", "checkpoint"): ("checkpoint",),
    ("podTemplate", "metadata"): ("extraPodMetadata",),
    ("podTemplate", "spec"): ("extraPodSpec",),
    ("podTemplate",): ("extraPodSpec",),
}
# The hub's main container (always first when converted from v1alpha1) and its v1alpha1 home.
_HUB_MAIN: tuple[Part, ...] = ("podTemplate", "spec", "containers", 0)
_ALPHA_MAIN: tuple[Part, ...] = ("extraPodSpec", "mainContainer")
# The same for a DCD spec (its component name is `serviceName` in v1alpha1).
_DCD_TO_ALPHA = {**_COMPONENT_TO_ALPHA, ("name",): ("serviceName",)}
# v1alpha1 service fields with a v1beta1 home of another name (the others keep their v1alpha1 name).
_ALPHA_TO_COMPONENT: dict[tuple[str, ...], tuple[str, ...]] = {
    ("componentType",): ("type",),
    ("sharedMemory",): ("sharedMemorySize",),
    ("gpuMemoryService",): ("experimental", "gpuMemoryService"),
    ("failover",): ("experimental", "failover"),
    ("checkpoint",): ("experimental", "checkpoint"),
    ("extraPodSpec",): ("podTemplate", "spec"),
}
# The same for a DCD spec.
_ALPHA_TO_DCD = {**_ALPHA_TO_COMPONENT, ("serviceName",): ("name",)}
# DGD spec fields whose v1alpha1 home differs.
_SPEC_TO_ALPHA: dict[tuple[str, ...], tuple[str, ...]] = {
    ("components",): ("services",),
    ("topologyConstraint", "clusterTopologyName"): ("topologyConstraint", "topologyProfile"),
}


def _renamed(parts: tuple[Part, ...], table: dict[tuple[str, ...], tuple[str, ...]]) -> tuple[Part, ...]:
    """`parts` with their longest prefix the table names replaced by its other home."""
    for n in range(len(parts), 0, -1):
        head = parts[:n]
        if all(isinstance(p, str) for p in head) and head in table:
            return (*table[head], *parts[n:])  # type: ignore[index]
    return parts


def _to_alpha(parts: tuple[Part, ...], table: dict[tuple[str, ...], tuple[str, ...]]) -> tuple[Part, ...]:
    """A component field's v1alpha1 home: the main container's fields under `extraPodSpec.mainContainer`."""
    if len(parts) > len(_HUB_MAIN) and parts[: len(_HUB_MAIN)] == _HUB_MAIN:
        return (*_ALPHA_MAIN, *parts[len(_HUB_MAIN) :])
    return _renamed(parts, table)


@dataclass(frozen=True)
class Paths:
    """Field paths in the user's document: `alpha` when it is v1alpha1."""

    alpha: bool

    def spec(self, *parts: Part) -> str:
        return join_path("spec", *(_renamed(parts, _SPEC_TO_ALPHA) if self.alpha else parts))

    def component(self, name: str) -> At:
        """The paths of one DGD component's fields."""
        if self.alpha:
            return lambda *parts: join_path("spec", "services", name, *_to_alpha(parts, _COMPONENT_TO_ALPHA))
        return lambda *parts: join_path(f"spec.components[{name}]", *parts)

    def legacy_component(self, name: str) -> At:
        """The paths of one service's fields named as on the v1alpha1 view."""
        if self.alpha:
            return lambda *parts: join_path("spec", "services", name, *parts)
        return lambda *parts: join_path(f"spec.components[{name}]", *_renamed(parts, _ALPHA_TO_COMPONENT))

    def legacy_dcd(self) -> At:
        """The paths of a DCD spec's fields named as on the v1alpha1 view."""
        if self.alpha:
            return lambda *parts: join_path("spec", *parts)
        return lambda *parts: join_path("spec", *_renamed(parts, _ALPHA_TO_DCD))

    def dcd(self) -> At:
        """The paths of a DCD spec's fields."""
        if self.alpha:
            return lambda *parts: join_path("spec", *_to_alpha(parts, _DCD_TO_ALPHA))
        return lambda *parts: join_path("spec", *parts)
