"""KubernetesObject: a pulumi-kubernetes resource of a built-in kind, registered by its type token.

It is the resource pulumi-kubernetes' generated class of that kind registers (same type token, same
inputs, so the same state and URN; the provider does the work), without importing the class: the
generated modules are large (`core/v1` alone takes ~0.3 s to import), and every run of the program,
preview or no-op `up`, would pay for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi

# The API group pulumi-kubernetes names the core ("" group) API in its type tokens.
CORE_GROUP_TOKEN = "core"
# Outputs kept secret in the state whatever the inputs, per kind (as pulumi-kubernetes' classes mark them).
SECRET_OUTPUTS = {"Secret": ["data", "stringData"]}


def type_token(api_version: str, kind: str) -> str:
    """pulumi-kubernetes' type token of a kind (`v1` Namespace -> `kubernetes:core/v1:Namespace`)."""
    group_version = api_version if "/" in api_version else f"{CORE_GROUP_TOKEN}/{api_version}"
    return f"kubernetes:{group_version}:{kind}"


class KubernetesObject(pulumi.CustomResource):
    """One object through a Kubernetes provider: `inputs` are its fields besides apiVersion and kind
    (`metadata`, `spec`, `rules`, `roleRef`...) as the API names them."""

    def __init__(
        self,
        name: str,
        api_version: str,
        kind: str,
        inputs: Mapping[str, Any],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {"apiVersion": api_version, "kind": kind, **inputs}
        secret = SECRET_OUTPUTS.get(kind)
        if secret:
            opts = pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(additional_secret_outputs=secret)
            )
        super().__init__(type_token(api_version, kind), name, props, opts)
