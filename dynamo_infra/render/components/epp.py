"""EPP (endpoint picker) component and the graph objects that serve it: ConfigMap, InferencePool,
DestinationRule.

Two launch contracts, chosen by the EPP's runtime version (NativeRustEPP, 1.5.0): below it the legacy
Go EPP as at our pin (CLI flags, config file from the ConfigMap); from it the native Rust EPP of the
1.6 operator (no flags, no config, `HOME` pinned and the model-config cache mounted under it; no
ConfigMap), from `internal/dynamo/component_epp.go` as its test at michaelfeil/dynamo eaf61940 pins it
and `internal/controller` dgdEPPReconciler. The 1.6 operator picks the contract by `eppConfig` being
set, which its webhook ties to the same release; it also drops the cache mount of the legacy EPP,
which we keep so that no EPP below 1.5.0 restarts.
"""

from __future__ import annotations

from collections.abc import Mapping

from dynamo_infra.api import DynamoValidationError, Problem, v1beta1
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.api.releases import NATIVE_RUST_EPP, RuntimeVersion
from dynamo_infra.render import names
from dynamo_infra.render.components.common import BaseComponentDefaults, base_pod_spec, common_container
from dynamo_infra.render.context import ComponentContext, GraphContext
from dynamo_infra.render.go import goyaml

# The component type this module renders.
TYPE = "epp"
# gRPC port the InferencePool calls the EPP on (Service port `grpc`, appProtocol http2).
GRPC_PORT = 9002
GRPC_PORT_NAME = "grpc"
# gRPC health port and the service name its probes ask for.
GRPC_HEALTH_PORT = 9003
GRPC_HEALTH_SERVICE = "inference-extension"
# Metrics port of the EPP.
METRICS_PORT = 9090
# Frontend port the InferencePool routes to on worker pods.
TARGET_PORT = 8000
# Probe timings (gRPC health): liveness/readiness, and a 30-minute startup allowance.
LIVENESS = {"initialDelaySeconds": 5, "periodSeconds": 10}
READINESS = {"initialDelaySeconds": 5, "periodSeconds": 10}
STARTUP = {"periodSeconds": 10, "failureThreshold": 180}
# The EPP's own environment at the pin.
ENV = (("USE_STREAMING", "true"), ("RUST_LOG", "info"), ("DYN_ENFORCE_DISAGG", "false"))
# Cluster-wide service account the EPP runs as (bound by the platform).
SERVICE_ACCOUNT = "epp-serviceaccount"
# The EPP drains in-flight streams before exiting.
TERMINATION_GRACE_PERIOD_S = 130
# ConfigMap key / mount of the EPP configuration.
CONFIG_KEY = "epp-config-dynamo.yaml"
CONFIG_VOLUME = "epp-config"
CONFIG_DIR = "/etc/epp"
# HuggingFace cache for model config downloads (the legacy Go EPP runs as nonroot).
HF_CACHE_VOLUME = "hf-cache"
HF_CACHE_PATH = "/home/nonroot/.cache"
# The native Rust EPP's HOME (the frontend image's user), pinned so its cache mount lands under it.
NATIVE_HOME = "/home/dynamo"
NATIVE_HF_CACHE_PATH = f"{NATIVE_HOME}/.cache"
# Verbosity and log format of the EPP.
LOG_VERBOSITY = "4"
LOG_ENCODER = "json"
# API group/version of the InferencePool (stable Gateway API inference extension).
POOL_GROUP = "inference.networking.k8s.io"
POOL_API_VERSION = f"{POOL_GROUP}/v1"
# apiVersion/kind stamped into the EndpointPickerConfig document.
PICKER_CONFIG_API_VERSION = "inference.networking.x-k8s.io/v1alpha1"
PICKER_CONFIG_KIND = "EndpointPickerConfig"
# Istio DestinationRule API and the TLS defaults towards the EPP.
DESTINATION_RULE_API_VERSION = "networking.istio.io/v1beta1"
DEFAULT_INSECURE_SKIP_VERIFY = True


def config_map_name(dgd: str) -> str:
    return f"{dgd}-epp-config"


def pool_name(dgd: str) -> str:
    return f"{dgd}-pool"


def _config_volume(ctx: ComponentContext) -> Manifest:
    ref = (ctx.spec.get("eppConfig") or {}).get("configMapRef")
    name, key = config_map_name(ctx.parent_name), CONFIG_KEY
    if ref:
        name, key = ref.get("name") or "", ref.get("key") or CONFIG_KEY
    return {"name": CONFIG_VOLUME, "configMap": {"name": name, "items": [{"key": key, "path": CONFIG_KEY}]}}


def _grpc_probe(**timing: int) -> Manifest:
    return {"grpc": {"port": GRPC_HEALTH_PORT, "service": GRPC_HEALTH_SERVICE}, **timing}


def native_rust_epp(version: RuntimeVersion | None) -> bool:
    """Whether an EPP of this runtime version runs the native Rust EPP contract."""
    return NATIVE_RUST_EPP.enabled(version)


class EPP(BaseComponentDefaults):
    def container(self, ctx: ComponentContext) -> Manifest:
        base = common_container(ctx)
        base.pop("command")
        env = [
            *base["env"],
            *({"name": k, "value": v} for k, v in ENV),
            {"name": "DYN_NAMESPACE_PREFIX", "value": ctx.runtime_dynamo_namespace},
        ]
        if native_rust_epp(ctx.runtime_version):
            return {
                **base,
                "env": [*env, {"name": "HOME", "value": NATIVE_HOME}],
                **self._ports_and_probes(),
                "volumeMounts": [{"name": HF_CACHE_VOLUME, "mountPath": NATIVE_HF_CACHE_PATH}],
            }
        args = [
            "--pool-name", pool_name(ctx.parent_name),
            "--pool-namespace", ctx.namespace,
            "--pool-group", POOL_GROUP,
            "-v", LOG_VERBOSITY,
            "--zap-encoder", LOG_ENCODER,
            "--grpc-port", str(GRPC_PORT),
            "--grpc-health-port", str(GRPC_HEALTH_PORT),
            "--config-file", f"{CONFIG_DIR}/{CONFIG_KEY}",
        ]  # fmt: skip
        return {
            **base,
            "args": args,
            "env": env,
            **self._ports_and_probes(),
            "volumeMounts": [
                {"name": CONFIG_VOLUME, "mountPath": CONFIG_DIR, "readOnly": True},
                {"name": HF_CACHE_VOLUME, "mountPath": HF_CACHE_PATH},
            ],
        }

    @staticmethod
    def _ports_and_probes() -> Manifest:
        return {
            "ports": [
                {"name": GRPC_PORT_NAME, "containerPort": GRPC_PORT, "protocol": "TCP"},
                {"name": "grpc-health", "containerPort": GRPC_HEALTH_PORT, "protocol": "TCP"},
                {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
            ],
            "livenessProbe": _grpc_probe(**LIVENESS),
            "readinessProbe": _grpc_probe(**READINESS),
            "startupProbe": _grpc_probe(**STARTUP),
        }

    def pod_spec(self, ctx: ComponentContext) -> Manifest:
        cache = {"name": HF_CACHE_VOLUME, "emptyDir": {}}
        native = native_rust_epp(ctx.runtime_version)
        return {
            **base_pod_spec(),
            "serviceAccountName": SERVICE_ACCOUNT,
            "terminationGracePeriodSeconds": TERMINATION_GRACE_PERIOD_S,
            "volumes": [cache] if native else [_config_volume(ctx), cache],
        }

    def service_port(self, ctx: ComponentContext) -> Manifest:
        return {
            "name": GRPC_PORT_NAME,
            "port": GRPC_PORT,
            "targetPort": GRPC_PORT,
            "protocol": "TCP",
            "appProtocol": "http2",
        }

    def dcd_annotations(self) -> Mapping[str, str]:
        """The EPP serves its own TLS: no mesh sidecar."""
        return {names.ANNOTATION_ISTIO_INJECT: "false"}


def _scheduling_plugin(p: Manifest) -> Manifest:
    return {"pluginRef": p.get("pluginRef") or "", "weight": p.get("weight")}


def _saturation_detector(d: Manifest) -> Manifest:
    """Zero thresholds omitted; the staleness threshold always written, as Go's Duration spells it."""
    out = {k: d[k] for k in ("queueDepthThreshold", "kvCacheUtilThreshold") if d.get(k)}
    staleness = goyaml.parse_duration(str(d.get("metricsStalenessThreshold") or "0s"))
    return {**out, "metricsStalenessThreshold": goyaml.format_duration(staleness)}


def picker_config_document(config: Manifest) -> Manifest:
    """The inline config as the operator's Go type (EndpointPickerConfig, gateway-api-inference-extension
    v1.2.0) holds it: its fields only; a plugin's `name` "" and `parameters` null, a scheduling
    plugin's `weight` null when unset; empty `featureGates` left out."""
    plugins = config.get("plugins")
    profiles = config.get("schedulingProfiles")
    doc: Manifest = {
        "apiVersion": PICKER_CONFIG_API_VERSION,
        "kind": PICKER_CONFIG_KIND,
        "plugins": None
        if plugins is None
        else [
            {"name": p.get("name") or "", "type": p.get("type") or "", "parameters": p.get("parameters")}
            for p in plugins
        ],
        "schedulingProfiles": None
        if profiles is None
        else [
            {
                "name": sp.get("name") or "",
                "plugins": None
                if sp.get("plugins") is None
                else [_scheduling_plugin(p) for p in sp["plugins"]],
            }
            for sp in profiles
        ],
    }
    if config.get("featureGates"):
        doc["featureGates"] = list(config["featureGates"])
    if config.get("saturationDetector") is not None:
        doc["saturationDetector"] = _saturation_detector(config["saturationDetector"])
    return doc


def picker_config_yaml(config: Manifest) -> str:
    """The inline EndpointPickerConfig as the operator writes it (`sigs.k8s.io/yaml.Marshal`)."""
    return goyaml.marshal(picker_config_document(config))


def epp_component(dgd: v1beta1.DynamoGraphDeployment) -> v1beta1.Component | None:
    """The graph's EPP component (at most one)."""
    return next((c for c in dgd.spec.components or [] if c.type == TYPE), None)


def has_epp(dgd: v1beta1.DynamoGraphDeployment) -> bool:
    """HasEPPComponent: workers then carry the worker component class the InferencePool selects."""
    return epp_component(dgd) is not None


def _labels(g: GraphContext, component: str) -> dict[str, str]:
    return {names.LABEL_GRAPH: g.name, names.LABEL_COMPONENT: component, names.LABEL_COMPONENT_TYPE: TYPE}


def epp_objects(g: GraphContext) -> list[Manifest]:
    """ConfigMap (legacy EPP with inline config only), InferencePool and, with Istio, the DestinationRule."""
    epp = epp_component(g.dgd)
    if epp is None:
        return []
    out: list[Manifest] = []
    cfg = epp.epp_config.to_wire() if epp.epp_config else {}
    legacy = not native_rust_epp(g.runtime_version(epp))
    if legacy and not cfg.get("configMapRef"):
        if cfg.get("config") is None:
            raise DynamoValidationError(
                [
                    Problem(
                        f"spec.components[{epp.name}].eppConfig",
                        "EPP configuration is required: set eppConfig.configMapRef or eppConfig.config",
                    )
                ]
            )
        out.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": config_map_name(g.name),
                    "namespace": g.namespace,
                    "labels": _labels(g, epp.name),
                },
                "data": {CONFIG_KEY: picker_config_yaml(cfg["config"])},
            }
        )
    service = names.component_base_name(g.name, epp.name)
    dyn_ns = names.dynamo_namespace(g.namespace, g.name, bool(epp.global_dynamo_namespace))
    out.append(
        {
            "apiVersion": POOL_API_VERSION,
            "kind": "InferencePool",
            "metadata": {"name": pool_name(g.name), "namespace": g.namespace, "labels": _labels(g, epp.name)},
            "spec": {
                "targetPorts": [{"number": TARGET_PORT}],
                "selector": {
                    "matchLabels": {
                        names.LABEL_COMPONENT_CLASS: names.COMPONENT_CLASS_WORKER,
                        names.LABEL_NAMESPACE: dyn_ns,
                    }
                },
                "endpointPickerRef": {"kind": "Service", "name": service, "port": {"number": GRPC_PORT}},
            },
        }
    )
    if g.options.service_mesh.provider == "istio":
        out.append(destination_rule(service, g))
    return out


def destination_rule(service: str, g: GraphContext) -> Manifest:
    """How mesh sidecars reach the EPP's own TLS endpoint (avoids double TLS)."""
    istio = g.options.service_mesh.istio
    skip = DEFAULT_INSECURE_SKIP_VERIFY if istio.insecure_skip_verify is None else istio.insecure_skip_verify
    tls: Manifest = {"mode": istio.tls_mode, "insecureSkipVerify": skip}
    if istio.tls_mode == "MUTUAL":
        tls.update(
            {
                k: v
                for k, v in (
                    ("clientCertificate", istio.client_certificate),
                    ("privateKey", istio.private_key),
                    ("caCertificates", istio.ca_certificates),
                )
                if v
            }
        )
    name = names.service_name(service)
    return {
        "apiVersion": DESTINATION_RULE_API_VERSION,
        "kind": "DestinationRule",
        "metadata": {"name": name, "namespace": g.namespace},
        "spec": {"host": f"{name}.{g.namespace}.svc.cluster.local", "trafficPolicy": {"tls": tls}},
    }
