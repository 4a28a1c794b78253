"""The program: cluster options from stack config -> platform layer (namespace, CRDs, DRA) -> graphs."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import pulumi
import pulumi_kubernetes as k8s

from components import DynamoGraphDeployment, load_graph
from components.platform import Platform, read_ownership
from dynamo_infra.api import DynamoValidationError
from dynamo_infra.api.autoscaling import Autoscaler
from dynamo_infra.config import ClusterOptions
from dynamo_infra.platform_options import PlatformOptions
from dynamo_infra.reconcile.kube import KubeError
from dynamo_infra.render import render_graph

config = pulumi.Config("dynamo-infra")


def fail(message: str) -> NoReturn:
    raise pulumi.RunError(message)


try:
    options = ClusterOptions.from_config(config.get_object("cluster") or {})
except DynamoValidationError as e:
    fail(str(e.with_prefix("dynamo-infra:cluster")))
try:
    platform_options = PlatformOptions.from_config(config.get_object("platform"), options)
except DynamoValidationError as e:
    fail(str(e))

kubeconfig_path = config.get("kubeconfigPath")
kubeconfig_text = config.get("kubeconfig")
if kubeconfig_text is not None:
    kubeconfig_key = "dynamo-infra:kubeconfig"
elif kubeconfig_path:
    kubeconfig_key = "dynamo-infra:kubeconfigPath"
    path = Path(kubeconfig_path).expanduser()
    if not path.exists():
        fail(f"{kubeconfig_key}: {path} does not exist (is the cluster up?)")
    kubeconfig_text = path.read_text()
else:
    fail("set dynamo-infra:kubeconfig (secret content) or dynamo-infra:kubeconfigPath")
kubeconfig: pulumi.Input[str] = pulumi.Output.secret(kubeconfig_text)
context = config.get("context")
# Opt-in: `pulumi destroy` also deletes the claims (and the data) the graphs created.
delete_pvcs_on_destroy = config.get_bool("deletePvcsOnDestroy") or False

dgds = []
for i, source in enumerate(config.get_object("graphs") or []):
    try:
        dgds.append(load_graph(str(source)))
    except DynamoValidationError as e:
        fail(str(e if e.source else e.with_prefix(f"dynamo-infra:graphs[{i}]")))

# A namespace holding claims is never deleted with the stack: claims the stack did not create (and,
# unless opted in, those it did) keep their data.
keeps_claims = any(
    r.pvcs or r.required_pvcs for r in (render_graph(d, options, options.namespace) for d in dgds)
)
# The stack creates (and may delete) the namespace and service accounts only if they are absent or
# its own; those of a user or another stack are used as they are, as are Dynamo CRDs another tool
# (a Helm-installed operator) installed.
try:
    ownership = read_ownership(
        kubeconfig_text, context, options.namespace, f"{pulumi.get_project()}/{pulumi.get_stack()}"
    )
except (KubeError, ValueError) as e:
    fail(f"{kubeconfig_key}: cannot read namespace {options.namespace} or the Dynamo CRDs: {e}")
provider = k8s.Provider("cluster", kubeconfig=kubeconfig, context=context, enable_server_side_apply=True)
platform = Platform(
    "platform",
    namespace=options.namespace,
    provider=provider,
    ownership=ownership,
    keep_namespace=keeps_claims,
    crds=platform_options.install_crds,
    device_class=options.dra.device_class if platform_options.creates_device_class(options) else None,
)

# Autoscalers per graph and component: {graph: {component: {kind: hpa|keda, maxReplicas, ...}}}.
autoscalers: dict[str, dict[str, Autoscaler]] = {}
for graph_name, per_component in (config.get_object("autoscalers") or {}).items():
    for component, spec in (per_component or {}).items():
        try:
            autoscalers.setdefault(graph_name, {})[component] = Autoscaler.parse(spec)
        except DynamoValidationError as e:
            fail(str(e.with_prefix(f"dynamo-infra:autoscalers.{graph_name}.{component}")))

unknown = sorted(set(autoscalers) - {d.name for d in dgds})
if unknown:
    fail(f"dynamo-infra:autoscalers: no graph named {', '.join(unknown)} in dynamo-infra:graphs")

graphs = {}
for dgd in dgds:
    try:
        graph = DynamoGraphDeployment(
            dgd.name,
            dgd,
            kubeconfig=kubeconfig,
            context=context,
            options=options,
            namespace=options.namespace,
            delete_pvcs_on_destroy=delete_pvcs_on_destroy,
            autoscalers=autoscalers.get(dgd.name),
            opts=pulumi.ResourceOptions(depends_on=[platform]),
        )
    except DynamoValidationError as e:
        fail(f"graph {dgd.name}: {e}")
    graphs[dgd.name] = graph

pulumi.export("namespace", options.namespace)
pulumi.export(
    "graphs",
    {
        n: {
            "state": g.state,
            "conditions": g.conditions,
            "components": g.component_statuses,
            "checkpoints": g.checkpoint_statuses,
        }
        for n, g in graphs.items()
    },
)
