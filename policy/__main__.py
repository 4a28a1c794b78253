"""dynamo-infra's policy pack for pull-request pipelines: `pulumi preview --policy-pack policy`.

Policies (decisions in `dynamo_infra.policy`, see docs/how-to/pull-requests.md "Policy pack"):
- `gpu-fit` (mandatory): the stack's GPU requests fit the cluster's allocatable GPUs, read at preview;
- `images-pinned` (advisory): no image without a tag, with `latest` or a placeholder tag;
- `no-literal-secret-env` (mandatory): no secret-looking literal env value (use secretKeyRef).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyPack,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.errors import DynamoInfraError
from dynamo_infra.kube import kubeconfig as kubeconfig_files
from dynamo_infra.policy import gpus, images, pods, secrets
from dynamo_infra.policy.cluster import read_cluster_gpus

# The policy pack's name (as `pulumi preview` prints it).
PACK = "dynamo-infra"

# Manifests each resource's inputs asked for, by URN (a stack validation sees outputs; previews of
# updates may not carry the new inputs there).
_inputs: dict[str, list[Manifest]] = {}
# The stack's kubeconfig and context, from the first resource that carries them.
_connection: dict[str, str] = {}


def plain(value: Any) -> Any:
    """A deep copy of a policy SDK proxy as plain dicts and lists (Pulumi's numbers are doubles:
    whole ones become ints again, as in the manifests the program rendered)."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return [plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def manifests(props: Mapping[str, Any]) -> list[Manifest]:
    """Kubernetes objects a resource applies: our providers' `objects` (keyed apiVersion/kind/namespace/name),
    or a pulumi-kubernetes object's own properties. Objects not known yet at preview (rendered from
    another resource's outputs) are skipped."""
    try:
        objects = props.get("objects")
        if not isinstance(objects, Mapping):
            is_object = isinstance(props.get("apiVersion"), str) and isinstance(props.get("kind"), str)
            return [plain(props)] if is_object else []
        values = list(objects.values())
    except UnknownValueError:
        return []
    found = []
    for obj in values:
        try:
            found.append(plain(obj))
        except UnknownValueError:
            continue
    return [o for o in found if isinstance(o, dict)]


def remember_connection(props: Mapping[str, Any]) -> None:
    """Keep the first kubeconfig (a secret input, which the analyzer sees in plain text) and context."""
    if "kubeconfig" in _connection:
        return
    try:
        kubeconfig, context = props.get("kubeconfig"), props.get("context")
    except UnknownValueError:
        return
    if isinstance(kubeconfig, str) and kubeconfig:
        _connection["kubeconfig"] = kubeconfig
        _connection["context"] = context if isinstance(context, str) else ""


def per_resource(check: Callable[[list[pods.PodTemplate]], list[str]]) -> Callable[..., None]:
    """A resource validation reporting `check`'s findings over the resource's pod templates."""

    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        found = manifests(args.props)
        _inputs[args.urn] = found
        remember_connection(args.props)
        for message in check(pods.all_pod_templates(found)):
            report_violation(message, None)

    return validate


def gpu_fit(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    objects: list[Manifest] = []
    for resource in args.resources:
        remember_connection(resource.props)
        objects.extend(_inputs[resource.urn] if resource.urn in _inputs else manifests(resource.props))
    demand = gpus.demands(pods.all_pod_templates(objects), objects)
    if not demand:
        return
    config = args.get_config()
    kubeconfig = (
        str(config.get("kubeconfigPath") or "")
        or _connection.get("kubeconfig")
        # The KUBECONFIG list merged as kubectl merges it.
        or kubeconfig_files.merged_text(os.environ.get("KUBECONFIG", ""))
    )
    if not kubeconfig:
        report_violation(
            "no kubeconfig to read the cluster's GPUs: set the policy config kubeconfigPath or KUBECONFIG",
            None,
        )
        return
    context = str(config.get("context") or "") or _connection.get("context") or None
    try:
        cluster = read_cluster_gpus(kubeconfig, context)
    except DynamoInfraError as e:
        report_violation(str(e), None)
        return
    for message in gpus.fit_violations(demand, cluster):
        report_violation(message, None)


PolicyPack(
    name=PACK,
    enforcement_level=EnforcementLevel.MANDATORY,
    policies=[
        StackValidationPolicy(
            name="gpu-fit",
            description="The stack's GPU requests fit the cluster's allocatable GPUs (largest node, total).",
            validate=gpu_fit,
            enforcement_level=EnforcementLevel.MANDATORY,
            config_schema=PolicyConfigSchema(
                properties={
                    "kubeconfigPath": {"type": "string", "description": "kubeconfig of the cluster to check"},
                    "context": {
                        "type": "string",
                        "description": "its context (default: the stack's, else current)",
                    },
                }
            ),
        ),
        ResourceValidationPolicy(
            name="images-pinned",
            description="Container images name a version tag or a digest (no latest, no missing tag, no placeholder).",
            validate=per_resource(images.image_violations),
            enforcement_level=EnforcementLevel.ADVISORY,
        ),
        ResourceValidationPolicy(
            name="no-literal-secret-env",
            description="No secret in a literal env value (use valueFrom.secretKeyRef).",
            validate=per_resource(secrets.secret_env_violations),
            enforcement_level=EnforcementLevel.MANDATORY,
        ),
    ],
)
