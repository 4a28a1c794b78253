"""The webhook's rules for a DynamoComponentDeployment, a DynamoModel and a DynamoGraphDeploymentRequest."""

from __future__ import annotations

from dynamo_infra.api import conversion, v1alpha1, v1beta1
from dynamo_infra.api.admission import field
from dynamo_infra.api.admission.component import Scope, component_problems
from dynamo_infra.api.admission.elastic import elastic_ep_problems
from dynamo_infra.api.admission.features import OperatorFeatures
from dynamo_infra.api.admission.legacy import Legacy, both_views, dynamo_namespace, has_legacy_fields
from dynamo_infra.api.admission.multinode import multinode_type_problems
from dynamo_infra.api.admission.override import dcd_override_problems
from dynamo_infra.api.admission.paths import Paths
from dynamo_infra.api.admission.review import Review
from dynamo_infra.api.admission.runtimeversion import runtime_version_override_required
from dynamo_infra.api.errors import Problem

# DynamoModel source URI schemes (a LoRA adapter must name one); the URI itself is never echoed.
MODEL_SOURCE_SCHEMES = ("s3://", "hf://", "file:///")
REDACTED = "<redacted>"
LORA = "lora"
# DGDR: the search strategy that needs a named backend, and the backend that names none.
SEARCH_THOROUGH = "thorough"
BACKEND_AUTO = "auto"
DGDR_OVERRIDE_REQUIRED = "is required when spec.image has no parseable semantic-version tag"
DGDR_HARDWARE_REQUIRED = "GPU hardware configuration is required when GPU discovery is disabled"


def _parent_graph(meta: object) -> str:
    refs = getattr(meta, "owner_references", None) or []
    return next(
        (
            str(r.get("name", ""))
            for r in refs
            if isinstance(r, dict) and r.get("kind") == "DynamoGraphDeployment"
        ),
        "",
    )


def dcd_review(
    dcd: v1alpha1.DynamoComponentDeployment | v1beta1.DynamoComponentDeployment,
    features: OperatorFeatures | None,
    namespace: str | None = None,
    *,
    creating: bool = True,
    old: v1beta1.DynamoComponentDeploymentSpec | None = None,
) -> Review:
    """The webhook's answer to creating a DCD (standalone: never on Grove, no InferencePool lookup);
    an update (`creating` false) checks the runtime version against the old object instead, and `old`
    (its v1beta1 spec) keeps an unchanged legacy multinode component."""
    alpha = isinstance(dcd, v1alpha1.DynamoComponentDeployment)
    paths = Paths(alpha)
    hub, view = both_views(dcd, v1alpha1.DynamoComponentDeployment, v1beta1.DynamoComponentDeployment)
    runtime = creating and not alpha
    scope = Scope(
        features, grove=False, inference_pool=False, runtime_version=runtime, allow_missing_override=True
    )
    problems = []
    if hub is not None:
        problems += elastic_ep_problems(hub.spec.backend_framework, hub.spec, paths.dcd())
        problems += component_problems(hub.spec, paths.dcd(), scope)
        problems += multinode_type_problems(hub.spec, old, paths.dcd())
        problems += dcd_override_problems(hub.spec, paths.dcd())
    legacy = Legacy(runtime_version=alpha and creating, allow_missing_override=True)
    if view is not None and (legacy.runtime_version or has_legacy_fields(view.spec, graph=False)):
        ns = namespace if namespace is not None else dcd.metadata.namespace or ""
        graph = _parent_graph(dcd.metadata)
        legacy.component(
            view.spec, paths.legacy_dcd(), dynamo_namespace(view.spec.global_dynamo_namespace, ns, graph)
        )
    return Review(tuple(problems + legacy.problems), tuple(legacy.warnings))


def model_review(model: v1alpha1.DynamoModel) -> Review:
    spec, out = model.spec, []
    if not spec.model_name:
        out.append(field.required("spec.modelName", "must not be empty"))
    if not spec.base_model_name:
        out.append(field.required("spec.baseModelName", "must not be empty"))
    if spec.model_type == LORA:
        if spec.source is None:
            out.append(field.required("spec.source", f'is required when spec.modelType is "{LORA}"'))
        elif not spec.source.uri:
            out.append(
                field.required("spec.source.uri", f'must be specified when spec.modelType is "{LORA}"')
            )
        elif not spec.source.uri.startswith(MODEL_SOURCE_SCHEMES):
            out.append(
                field.invalid(
                    "spec.source.uri", field.Text(REDACTED), 'must start with "s3://", "hf://", or "file:///"'
                )
            )
    return Review(tuple(out))


def request_review(
    request: v1alpha1.DynamoGraphDeploymentRequest | v1beta1.DynamoGraphDeploymentRequest,
    features: OperatorFeatures | None,
) -> Review:
    """The webhook's answer to creating a DGDR (checked on its v1beta1 form)."""
    hub = (
        conversion.convert_to(request, v1beta1.DynamoGraphDeploymentRequest)
        if isinstance(request, v1alpha1.DynamoGraphDeploymentRequest)
        else request
    )
    spec, out = hub.spec, []
    if needs_hardware(spec, features):
        out.append(hardware_required())
    if search_incompatible(spec):
        out.append(search_invalid(spec))
    if request_override_required(spec):
        out.append(field.required("spec.runtimeVersionOverride", DGDR_OVERRIDE_REQUIRED))
    return Review(tuple(out))


def needs_hardware(spec: v1beta1.DynamoGraphDeploymentRequestSpec, features: OperatorFeatures | None) -> bool:
    """GPU discovery is off and the request names no hardware."""
    return features is not None and not features.gpu_discovery and not _manual_hardware(spec.hardware)


def hardware_required() -> Problem:
    return field.required("spec.hardware", DGDR_HARDWARE_REQUIRED)


def search_incompatible(spec: v1beta1.DynamoGraphDeploymentRequestSpec) -> bool:
    return spec.search_strategy == SEARCH_THOROUGH and spec.backend == BACKEND_AUTO


def search_invalid(spec: v1beta1.DynamoGraphDeploymentRequestSpec) -> Problem:
    return field.invalid(
        "spec.searchStrategy",
        spec.search_strategy,
        f"is incompatible with spec.backend {field.go_quote(spec.backend)}; set spec.backend to a specific backend "
        "(sglang, trtllm, or vllm)",
    )


def request_override_required(spec: v1beta1.DynamoGraphDeploymentRequestSpec) -> bool:
    return bool(spec.image) and runtime_version_override_required(
        spec.image or "", spec.runtime_version_override
    )


def _manual_hardware(hardware: v1beta1.Hardware | None) -> bool:
    return hardware is not None and bool(
        hardware.gpu_sku or hardware.vram_mb is not None or hardware.num_gpus_per_node is not None
    )
