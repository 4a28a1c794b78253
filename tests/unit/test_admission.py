"""The operator's validating webhook, rule by rule: every document of tests/data/admission/create.yaml
(each exercising one rule or a few) and every update-old -> update-new pair is answered exactly as
the webhook at the parity pin answered it (verdicts.yaml: causes with our field paths and the
webhook's messages, and its warnings), under each set of feature gates."""

from __future__ import annotations

import functools
from typing import Any

import pytest
import yaml

from dynamo_infra.api import Resource, admission, v1alpha1, v1beta1
from dynamo_infra.api.admission import OperatorFeatures, Review
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render.checks.admission import grove_name_problems
from tests.conftest import DATA

ADMISSION = DATA / "admission"
# The operator's feature gates each recorded answer was given under.
FEATURES = {
    "default": OperatorFeatures(),
    "grove": OperatorFeatures(grove=True),
    "checkpoint": OperatorFeatures(checkpoint=True),
    "no-inference-pool": OperatorFeatures(inference_pool=False),
    "no-gpu-discovery": OperatorFeatures(gpu_discovery=False),
    "gms-snapshot": OperatorFeatures(checkpoint=True, gms_snapshot=True),
}
# Feature sets the update pairs were answered under.
UPDATE_FEATURES = ("default", "grove")
# Cluster options giving the Grove gate (for the Grove pod-name budget, which rendering knows).
GROVE = ClusterOptions.parse({"multinode": {"orchestrator": "grove"}})
# Every reason the webhook denies for, by a fragment of `path: message`: each must be exercised.
REASONS = (
    "must be valid semver",
    'must be "mp" or "ray"',
    'supported values: "RollingRecreate", "OnDelete"',
    'supported values: "pod", "container"',
    'must be "container" when intra-pod failover is configured',
    "requires the Grove pathway, but Grove is disabled",
    "requires the Grove pathway; remove or unset annotation",
    "must have at least one component",
    "combined resource name length",
    "the inter-pod GMS layout is currently supported only for vLLM",
    "is currently supported only for Grove-backed DynamoGraphDeployment components",
    "must be non-negative",
    "cannot deploy EPP component: InferencePool API group",
    "EPP component cannot be multinode",
    "EPP component must have exactly 1 replica",
    "is required for EPP components",
    "eppConfig.configMapRef.name: Required value: is required",
    "is required when frontendSidecar is set",
    "must not be empty",
    "must match a podTemplate.spec.containers name",
    "GPU memory service is only supported for worker, prefill, or decode components",
    "resources.limits.nvidia.com/gpu >= 1",
    "gpuMemoryService is required when failover mode is",
    "must match gpuMemoryService.mode",
    "failed to read main-container GPU limit",
    "GMS failover requires at least 1 GPU",
    "GMS failover is not supported for component type",
    "checkpoint functionality is disabled in the operator configuration",
    "requires gpuMemoryService to be set",
    "is only supported with gpuMemoryService.mode=IntraPod",
    "GMS + Snapshot is temporarily disabled",
    "Required value: is required",
    "has no parseable semantic-version tag",
    "cannot be specified when strategy is parallel",
    "must be unique",
    "must have the same number of unique components as the deployment",
    "spec.restart.strategy.order[",
    "is required when any component topology constraint is set",
    "is required because spec.topologyConstraint.packDomain is not set",
    "a lowercase RFC 1123 subdomain",
    "is required when useAsCompilationCache is false",
    "is required when ingress is enabled",
    "exactly one of configMapRef or config is required",
    "cannot inject frontend sidecar",
    'is invalid for mode="intraPod"',
    'is required when spec.modelType is "lora"',
    'must be specified when spec.modelType is "lora"',
    'must start with "s3://", "hf://", or "file:///"',
    "Required value: must not be empty",
    "does not name a container in spec.job.podTemplateSpec.spec.containers",
    "must contain the GMS shared volume",
    "must contain the GMS init sidecar",
    "must contain the GMS pod resource claim",
    "must contain the GMS resource claim",
    "must mount volume",
    "must contain GMS_SOCKET_DIR=",
    "does not name a container in podTemplateSpec.spec.containers",
    'supported values: "intraPod"',
    "GPU hardware configuration is required when GPU discovery is disabled",
    "is incompatible with spec.backend",
    "is required when spec.image has no parseable semantic-version tag",
    # Updates.
    "component topology is immutable",
    "cannot be modified directly when scaling adapter is enabled",
    "cannot change node topology between single-node and multi-node",
    "delete and recreate the DynamoGraphDeployment to change topology constraints",
    "the inter-pod GMS layout cannot be toggled after creation",
    "inter-pod GMS failover cannot be toggled after creation",
    "is immutable and cannot be changed after creation",
    "to change the KV transfer policy",
    "updates are forbidden while the resource is in phase",
)


@functools.cache
def verdicts() -> dict[str, Any]:
    return yaml.safe_load((ADMISSION / "verdicts.yaml").read_text())  # type: ignore[no-any-return]


@functools.cache
def documents(name: str) -> dict[str, Resource]:
    from dynamo_infra.api import load_yaml

    return {d.name: d for d in load_yaml(ADMISSION / name, admission=False).documents}


def answered(review: Review) -> dict[str, Any]:
    return {
        "causes": sorted([p.path, p.message] for p in review.problems),
        "warnings": sorted(review.warnings),
    }


def recorded(entry: dict[str, Any], features: str) -> dict[str, Any]:
    """The recorded answer, without causes that need a ClusterTopologyBinding lookup."""
    answer = entry.get(features, entry["default"])
    return {"causes": answer["causes"], "warnings": answer["warnings"]}


def create_review(doc: Resource, features: OperatorFeatures) -> Review:
    review = admission.review(doc, features)
    on_grove, _ = admission.grove_pathway(features, doc.metadata.annotations)
    if isinstance(doc, v1alpha1.DynamoGraphDeployment | v1beta1.DynamoGraphDeployment) and on_grove:
        review += Review(tuple(grove_name_problems(doc, GROVE)))
    return review


@pytest.mark.parametrize("features", FEATURES)
@pytest.mark.parametrize("name", list(verdicts()["create"]))
def test_create_is_answered_as_the_webhook_answers(name: str, features: str) -> None:
    doc = documents("create.yaml")[name]
    assert answered(create_review(doc, FEATURES[features])) == recorded(verdicts()["create"][name], features)


@pytest.mark.parametrize("features", UPDATE_FEATURES)
@pytest.mark.parametrize("name", list(verdicts()["update"]))
def test_update_is_answered_as_the_webhook_answers(name: str, features: str) -> None:
    old, new = documents("update-old.yaml")[name], documents("update-new.yaml")[name]
    review = admission.review_update(old, new, FEATURES[features])
    assert answered(review) == recorded(verdicts()["update"][name], features)


def test_every_denial_reason_is_exercised() -> None:
    messages = [
        f"{path}: {message}"
        for section in ("create", "update")
        for entry in verdicts()[section].values()
        for answer in entry.values()
        for path, message in answer["causes"]
    ]
    missing = [reason for reason in REASONS if not any(reason in m for m in messages)]
    assert not missing
    # And no recorded message is left without a reason naming it.
    unnamed = sorted({m for m in messages if not any(reason in m for reason in REASONS)})
    assert not unnamed


def test_without_features_the_cluster_rules_wait() -> None:
    """At load the gates are unknown: Grove, checkpoint and InferencePool rules are left out."""
    docs = documents("create.yaml")
    for name in ("b-priority-class", "b-min-available", "b-checkpoint-disabled", "ck-plain"):
        assert admission.review(docs[name]).allowed, name
    assert not admission.review(docs["b-origin-bad"]).allowed


def test_denied_and_warned_problems_read_as_the_webhook_writes_them() -> None:
    docs = documents("create.yaml")
    (problem,) = admission.review(docs["b-image-no-tag"]).problems
    assert str(problem) == (
        "spec.components[w].runtimeVersionOverride: Required value: is required when the specified main "
        "container image has no parseable semantic-version tag"
    )
    review = admission.review(docs["a-legacy"], namespace="team")
    assert (
        'spec.services.Frontend.dynamoNamespace is deprecated and ignored. Value "old" will be replaced with '
        '"team-a-legacy". Remove this field from your configuration'
    ) in review.warnings
    with pytest.raises(admission.AdmissionDenied) as denied:
        review.raise_denied("g.yaml")
    assert str(denied.value).startswith("g.yaml: 7 problems:")
