"""Inputs of a resource as one Args object or as keyword arguments (one or the other, not both)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar, cast

import pulumi

A = TypeVar("A")


@dataclass(frozen=True)
class StackKubeconfig:
    """A kubeconfig the dynamic providers read from the stack's configuration, by its key
    (`dynamo-infra:kubeconfigPath`): the engine gives them the configuration, so each resource keeps the
    key, not the credential (`pulumi destroy` reads the configuration the stack last ran with)."""

    key: str


# How a resource reaches the cluster: the kubeconfig's content, or the stack configuration key of it.
Kubeconfig: TypeAlias = "pulumi.Input[str] | StackKubeconfig"


def kubeconfig_props(kubeconfig: Kubeconfig) -> dict[str, Any]:
    """A dynamic resource's credential properties: the content as a secret, or the configuration key."""
    if isinstance(kubeconfig, StackKubeconfig):
        return {"kubeconfigFrom": kubeconfig.key}
    return {"kubeconfig": pulumi.Output.secret(kubeconfig)}


def stack_id() -> str:
    """The running stack as its objects name it: `project/stack`."""
    return f"{pulumi.get_project()}/{pulumi.get_stack()}"


def args_of(resource: str, args_type: type[A], first: object, keywords: dict[str, Any]) -> A:
    """`first` when it is the resource's Args; else Args built from `first` (the first field, if the
    resource takes one positionally) and the keywords that were given (None: not given, the Args'
    default applies)."""
    given = {k: v for k, v in keywords.items() if v is not None}
    if isinstance(first, args_type):
        if given:
            raise TypeError(
                f"{resource}: pass {args_type.__name__} or keyword arguments, not both "
                f"(also given: {', '.join(sorted(given))})"
            )
        return first
    build = cast(Any, args_type)
    try:
        return cast(A, build(**given) if first is None else build(first, **given))
    except TypeError as e:
        raise TypeError(f"{resource}: {e}") from e
