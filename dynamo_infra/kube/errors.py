"""What a request to the API server can fail with; a 403 says which permission is missing and where."""

from __future__ import annotations

import re

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.errors import DynamoInfraError


class KubeconfigError(DynamoInfraError, ValueError):
    """The kubeconfig cannot be used; the message never contains credential values."""


class KubeError(DynamoInfraError):
    """An API request failed. `status` is the HTTP status (0 when the server was unreachable)."""

    def __init__(
        self,
        message: str,
        status: int = 0,
        reason: str = "",
        details: Manifest | None = None,
        *,
        method: str = "",
        path: str = "",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.details = details or {}
        # The request that failed (empty when the failure is not one request's).
        self.method = method
        self.path = path


class NotFound(KubeError):
    pass


class Forbidden(KubeError):
    """The identity lacks a permission; the message names the verb, the resource, the namespace and the
    identity, and the Role to add it to (`dynamo_infra.render.runtime.rbac`)."""


# Where the API server's 403 message names the identity and the denied attributes (RBAC's wording).
DENIED = re.compile(
    r'User "(?P<user>[^"]*)" cannot (?P<verb>\S+) resource "(?P<resource>[^"]+)"'
    r'(?: in API group "(?P<group>[^"]*)")?(?: in the namespace "(?P<namespace>[^"]+)")?'
)
# Request paths of resources: /api/v1/... or /apis/<group>/<version>/..., then the namespace, the
# plural, the name and the subresource.
_RESOURCE_PATH = re.compile(
    r"^/(?:api/[^/]+|apis/(?P<group>[^/]+)/[^/]+)(?:/namespaces/(?P<namespace>[^/]+))?"
    r"/(?P<plural>[^/]+)(?:/(?P<name>[^/]+)(?:/(?P<sub>[^/]+))?)?$"
)
# Verbs Kubernetes authorizes per HTTP method (on one object; a GET of a collection is `list`).
_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def forbidden_message(method: str, path: str, server_message: str, identity: str = "") -> str:
    """What a 403 means for us: `verb` on `plural.group[/subresource]` in a namespace (or the cluster),
    as whom, and where to add it. The API server's own message is preferred; the request fills gaps
    (a server-side apply that would create an object is denied `create` with no wording of its own)."""
    denied = DENIED.search(server_message)
    at = _RESOURCE_PATH.match(path.split("?")[0])
    group = (denied and denied["group"]) or (at and at["group"]) or ""
    namespace = (denied and denied["namespace"]) or (at and at["namespace"]) or ""
    if denied:
        verb, resource = denied["verb"], denied["resource"]
    else:
        plural, name, sub = (at["plural"], at["name"], at["sub"]) if at else (path, None, None)
        verb = "list" if method == "GET" and not name else _VERBS.get(method, method.lower())
        # Server-side apply is authorized as `patch`, and also as `create` when the object is new.
        if method == "PATCH" and not sub:
            verb = "create"
        resource = f"{plural}/{sub}" if sub else plural
    plural, _, sub = resource.partition("/")
    qualified = f"{plural}.{group}" if group else plural
    if sub:
        qualified += f"/{sub}"
    user = (denied and denied["user"]) or identity or "the kubeconfig's identity"
    where = f"in namespace `{namespace}`" if namespace else "at the cluster scope"
    role = "Role" if namespace else "ClusterRole"
    return (
        f"forbidden: dynamo-infra needs `{verb}` on `{qualified}` {where} (as {user}): add it to the "
        f"{role} (`dynamo-infra rbac` prints the least-privilege one) [{method} {path}]"
    )


class Conflict(KubeError):
    """A write lost: another field manager owns a field we apply, or the object changed since it was read."""
