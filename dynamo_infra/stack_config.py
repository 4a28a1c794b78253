"""StackConfig: every `dynamo-infra:*` key of a stack, read and checked in one place.

Each problem is a StackConfigError whose message names the key (`dynamo-infra:graphs[1]: ...`); the
program fails with that message as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from dynamo_infra.api import AnyDGD, DynamoValidationError, to_hub
from dynamo_infra.api.autoscaling import Autoscaler
from dynamo_infra.config import AgentOptions, ClusterOptions
from dynamo_infra.errors import DynamoInfraError
from dynamo_infra.graph_source import load_graph
from dynamo_infra.kube import kubeconfig
from dynamo_infra.kube.errors import KubeconfigError
from dynamo_infra.platform_options import PlatformOptions
from dynamo_infra.render import cache
from dynamo_infra.render.components.epp import has_epp
from dynamo_infra.render.graph import has_multinode_component

# The stack configuration namespace of every key.
CONFIG_NAMESPACE = "dynamo-infra"


class StackConfigError(DynamoInfraError, ValueError):
    """A stack configuration value the program cannot use; the message names its key."""


class ConfigReader(Protocol):
    """What is read of a `pulumi.Config("dynamo-infra")` (values already parsed from YAML)."""

    def get(self, key: str) -> str | None: ...

    def get_bool(self, key: str) -> bool | None: ...

    def get_object(self, key: str) -> Any: ...


# Prefix of the keys of the graphs' providers' own kubeconfig (`graphKubeconfig`, `graphKubeconfigPath`,
# `graphContext`).
GRAPH_PREFIX = "graph"


def key(name: str) -> str:
    return f"{CONFIG_NAMESPACE}:{name}"


@dataclass(frozen=True)
class StackConfig:
    """A stack's configuration: how to reach the cluster, its options, its graphs and their autoscalers."""

    # The kubeconfig's content (from `kubeconfig`, or the file `kubeconfigPath` names).
    kubeconfig: str = field(repr=False)
    # The key the kubeconfig came from, to name it in connection errors.
    kubeconfig_key: str
    context: str | None
    cluster: ClusterOptions
    platform: PlatformOptions
    graphs: tuple[AnyDGD, ...]
    # Per graph and component: the autoscaler that owns its replicas.
    autoscalers: Mapping[str, Mapping[str, Autoscaler]]
    # Opt-in: `pulumi destroy` also deletes the claims (and the data) the graphs created.
    delete_pvcs_on_destroy: bool
    # The agent that carries run-time changes (None: the stack deploys none).
    agent: AgentOptions | None = None
    # The graphs' providers' kubeconfig (from `graphKubeconfig` or `graphKubeconfigPath`: a restricted
    # identity, see `dynamo_infra.render.runtime.rbac`) and context; "" and None: the platform's are used.
    graph_kubeconfig: str = field(default="", repr=False)
    graph_context: str | None = None
    # The key the graphs' providers' kubeconfig came from ("" when the platform's is used).
    graph_kubeconfig_key: str = ""
    # A graph creates or uses claims (seen in the render `read_graphs` makes of each graph).
    claims: bool = False

    @property
    def graphs_kubeconfig_key(self) -> str:
        """The key the graphs' providers' kubeconfig comes from."""
        return self.graph_kubeconfig_key if self.graph_kubeconfig else self.kubeconfig_key

    @property
    def graphs_context(self) -> str | None:
        """The context of the graphs' providers' kubeconfig."""
        return self.graph_context if self.graph_kubeconfig else self.context

    @classmethod
    def from_config(cls, config: ConfigReader, *, kubeconfig: bool = True) -> StackConfig:
        """Every key read and checked, in this order: cluster, platform, agent, kubeconfig, graphs,
        autoscalers. `kubeconfig=False` (rendering without a cluster) leaves the kubeconfig unread
        (empty); the program always reads it."""
        cluster = read_cluster(config)
        platform = read_platform(config, cluster)
        agent = read_agent(config)
        kubeconfig_key, content = read_kubeconfig(config) if kubeconfig else (key("kubeconfig"), "")
        graph_key, graph_content = (
            read_kubeconfig(config, GRAPH_PREFIX, required=False) if kubeconfig else ("", "")
        )
        graphs, claims = read_graphs(config, cluster)
        return cls(
            kubeconfig=content,
            kubeconfig_key=kubeconfig_key,
            context=config.get("context"),
            cluster=cluster,
            platform=platform,
            graphs=graphs,
            autoscalers=read_autoscalers(config, graphs),
            delete_pvcs_on_destroy=config.get_bool("deletePvcsOnDestroy") or False,
            agent=agent,
            graph_kubeconfig=graph_content,
            graph_kubeconfig_key=graph_key,
            graph_context=config.get(f"{GRAPH_PREFIX}Context"),
            claims=claims,
        )

    def keeps_namespace(self) -> bool:
        """Whether the namespace outlives the stack: a graph creates or uses claims, whose data is kept
        (claims the stack did not create always; those it did unless opted in)."""
        return self.claims

    def has_epp(self) -> bool:
        """A graph has an EPP component (its namespace then needs the EPP service account)."""
        return any(has_epp(to_hub(d)) for d in self.graphs)

    def has_multinode(self) -> bool:
        """A graph has a multinode component (its namespace then gets the MPI SSH key copy)."""
        return any(has_multinode_component(d) for d in self.graphs)


def read_cluster(config: ConfigReader) -> ClusterOptions:
    try:
        return ClusterOptions.from_config(config.get_object("cluster") or {})
    except DynamoValidationError as e:
        raise StackConfigError(str(e.with_prefix(key("cluster")))) from None


def read_platform(config: ConfigReader, cluster: ClusterOptions) -> PlatformOptions:
    try:
        return PlatformOptions.from_config(config.get_object("platform"), cluster)
    except DynamoValidationError as e:
        raise StackConfigError(str(e)) from None


def read_agent(config: ConfigReader) -> AgentOptions | None:
    """`dynamo-infra:agent` (`{image, namespace?}`); None when absent."""
    data = config.get_object("agent")
    if data is None:
        return None
    try:
        return AgentOptions.parse(data)
    except DynamoValidationError as e:
        raise StackConfigError(str(e.with_prefix(key("agent")))) from None


def read_kubeconfig(config: ConfigReader, prefix: str = "", *, required: bool = True) -> tuple[str, str]:
    """The key the kubeconfig comes from and its content (`<prefix>kubeconfig` wins over
    `<prefix>kubeconfigPath`; `graphKubeconfig...` with GRAPH_PREFIX). Not `required`: ("", "") when unset."""
    name = f"{prefix}Kubeconfig" if prefix else "kubeconfig"
    text = config.get(name)
    if text is not None:
        return key(name), text
    path_value = config.get(f"{name}Path")
    if not path_value:
        if not required:
            return "", ""
        raise StackConfigError(f"set {key(name)} (secret content) or {key(name + 'Path')}")
    try:
        # Its relative paths as the file's folder gives them, so the content reads the same anywhere.
        return key(f"{name}Path"), kubeconfig.from_stack_value(key(f"{name}Path"), path_value)
    except KubeconfigError as e:
        raise StackConfigError(str(e)) from None


def read_graphs(config: ConfigReader, cluster: ClusterOptions) -> tuple[tuple[AnyDGD, ...], bool]:
    """The graph files, each admitted as the operator's webhook would with the stack's cluster options
    (unless `cluster.admission` is off) and rendered once: what the webhook or the operator's
    controllers would refuse (a multinode component with no orchestrator, a feature the cluster lacks,
    a derived name the API server would reject: `render.checks.name_check`) fails here, naming the file and
    the field, before the program declares anything. With the graphs: whether one creates or uses
    claims. Reviews and renderings are kept (`render.cache`) for the graphs' plans to reuse."""
    graphs = []
    claims = False
    for i, source in enumerate(config.get_object("graphs") or []):
        try:
            dgd = load_graph(str(source), admission=cluster.admission.enabled)
            try:
                if cluster.admission.enabled:
                    cache.reviewed(dgd, cluster, cluster.namespace).raise_denied()
                rendered = cache.rendered(dgd, cluster, cluster.namespace)
            except DynamoValidationError as e:
                raise e.with_source(str(source)) from None
            graphs.append(dgd)
            claims = claims or bool(rendered.pvcs or rendered.required_pvcs)
        except DynamoValidationError as e:
            raise StackConfigError(str(e if e.source else e.with_prefix(key(f"graphs[{i}]")))) from None
    return tuple(graphs), claims


def read_autoscalers(config: ConfigReader, graphs: tuple[AnyDGD, ...]) -> dict[str, dict[str, Autoscaler]]:
    """`{graph: {component: {kind: hpa|keda, maxReplicas, ...}}}`, for graphs of `graphs` only."""
    autoscalers: dict[str, dict[str, Autoscaler]] = {}
    for graph_name, per_component in (config.get_object("autoscalers") or {}).items():
        for component, spec in (per_component or {}).items():
            try:
                autoscalers.setdefault(graph_name, {})[component] = Autoscaler.parse(spec)
            except DynamoValidationError as e:
                raise StackConfigError(
                    str(e.with_prefix(key(f"autoscalers.{graph_name}.{component}")))
                ) from None
    unknown = sorted(set(autoscalers) - {d.name for d in graphs})
    if unknown:
        raise StackConfigError(
            f"{key('autoscalers')}: no graph named {', '.join(unknown)} in {key('graphs')}"
        )
    return autoscalers
