"""The agent's failures, named so that an operator can act on them (a 403 names the missing rule)."""

from __future__ import annotations

from dynamo_infra.errors import DynamoInfraError
from dynamo_infra.kube.errors import KubeError

# RBAC verbs of the HTTP methods the agent uses (a GET of a collection is a list).
_VERBS = {"PATCH": "patch", "POST": "create", "PUT": "update", "DELETE": "delete"}


class AgentError(DynamoInfraError):
    """The agent could not act on a graph; the next event (or resync) tries again."""


class Forbidden(AgentError):
    """The agent's Role lacks a rule it needs."""


def request_rule(method: str, path: str) -> tuple[str, str, str]:
    """(verb, resource, namespace) of an API request path, as RBAC names them:
    `PATCH /apis/apps/v1/namespaces/ns/deployments/w/scale` -> ("patch", "deployments/scale", "ns")."""
    parts = [p for p in path.split("?")[0].split("/") if p]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
    namespace = ""
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        namespace, rest = rest[1], rest[2:]
    resource = rest[0] if rest else ""
    if len(rest) > 2:
        resource += f"/{rest[2]}"
    verb = _VERBS.get(method) or ("get" if len(rest) > 1 else "list")
    return verb, resource, namespace


def named(err: KubeError) -> AgentError:
    """An API failure as the agent reports it; a 403 as the rule that is missing."""
    if err.status == 403 and err.path:
        verb, resource, namespace = request_rule(err.method, err.path)
        where = f" in namespace {namespace}" if namespace else " (cluster scope)"
        return Forbidden(f"forbidden: {verb} {resource}{where} (the agent's Role lacks this rule)")
    return AgentError(str(err))
