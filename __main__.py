"""The program: stack config -> cluster options -> platform layer (namespace, CRDs, DRA) -> graphs."""

from __future__ import annotations

from typing import NoReturn

import pulumi
import pulumi_kubernetes as k8s

from dynamo_infra.api import DynamoValidationError
from dynamo_infra.components import (
    DynamoGraphDeployment,
    Platform,
    PlatformArgs,
    StackKubeconfig,
    linear_output_wait,
    read_mpi_ssh_secret,
    read_ownership,
    trim_stack_traces,
)
from dynamo_infra.components.neighbours import (
    DGD_CRD,
    neighbour_problems,
    read_graph_records,
    running_worker_hashes,
)
from dynamo_infra.kube.errors import KubeError
from dynamo_infra.stack_config import StackConfig, StackConfigError


def fail(message: str) -> NoReturn:
    raise pulumi.RunError(message)


# Each resource's state keeps the frames of this package and the program line, not the interpreter's.
trim_stack_traces()
# The program's end-of-run wait for its outputs takes time linear in their number (the SDK's: quadratic).
linear_output_wait()


try:
    stack = StackConfig.from_config(pulumi.Config("dynamo-infra"))
except StackConfigError as e:
    fail(str(e))
options = stack.cluster
kubeconfig: pulumi.Input[str] = pulumi.Output.secret(stack.kubeconfig)
# The graphs' providers may use a restricted identity (`graphKubeconfig`: the Role of `dynamo-infra rbac`).
# They read it from the stack's configuration, by its key: each graph resource keeps the key, not the
# credential.
graph_kubeconfig = StackKubeconfig(stack.graphs_kubeconfig_key)

# The stack creates (and may delete) the namespace and service accounts only if they are absent or
# its own; those of a user or another stack are used as they are, as are Dynamo CRDs another tool
# (a Helm-installed operator) installed.
try:
    ownership = read_ownership(
        stack.kubeconfig,
        stack.context,
        options.namespace,
        f"{pulumi.get_project()}/{pulumi.get_stack()}",
        mpi_ssh_secret_name=options.mpi.ssh_secret_name,
        agent_namespace=stack.agent.namespace_in(options) if stack.agent else None,
    )
except (KubeError, ValueError) as e:
    fail(f"{stack.kubeconfig_key}: cannot read namespace {options.namespace} or the Dynamo CRDs: {e}")
if ownership.agent_blocked:
    fail(f"dynamo-infra:agent: {ownership.agent_blocked}")
# A namespace where the Dynamo operator manages graphs, or where another stack deploys a graph of the
# same name, is refused here: before any resource is registered, so nothing is written.
# The same list gives each deployed graph's running worker generation: one an earlier dynamo-infra
# rendered keeps running until the graph's workers change (`keep_running_generation`).
stack_name = f"{pulumi.get_project()}/{pulumi.get_stack()}"
try:
    records = read_graph_records(
        stack.kubeconfig, stack.context, options.namespace, platform_crd=DGD_CRD not in ownership.foreign_crds
    )
except (KubeError, ValueError) as e:
    fail(f"{stack.kubeconfig_key}: cannot read the graphs of namespace {options.namespace}: {e}")
neighbours = neighbour_problems(records, options.namespace, stack_name, [dgd.name for dgd in stack.graphs])
running = running_worker_hashes(records, stack_name)
if neighbours:
    fail("; ".join(neighbours))
# As the operator copies its MPI SSH key secret into a graph namespace with multinode graphs.
mpi = options.mpi
mpi_ssh_secret = None
if mpi.ssh_secret_namespace and mpi.ssh_secret_namespace != options.namespace and stack.has_multinode():
    try:
        mpi_ssh_secret = read_mpi_ssh_secret(
            stack.kubeconfig, stack.context, mpi.ssh_secret_namespace, mpi.ssh_secret_name
        )
    except (KubeError, ValueError) as e:
        fail(
            f"{stack.kubeconfig_key}: cannot read secret {mpi.ssh_secret_namespace}/{mpi.ssh_secret_name}: {e}"
        )
    if mpi_ssh_secret is None:
        fail(
            f"dynamo-infra:cluster mpi.sshSecretNamespace: secret {mpi.ssh_secret_namespace}/"
            f"{mpi.ssh_secret_name} does not exist (multinode graphs mount its SSH key pair)"
        )
provider = k8s.Provider(
    "cluster", kubeconfig=kubeconfig, context=stack.context, enable_server_side_apply=True
)
platform = Platform(
    "platform",
    PlatformArgs(
        namespace=options.namespace,
        ownership=ownership,
        # A namespace holding claims is never deleted with the stack (their data is kept).
        keep_namespace=stack.keeps_namespace(),
        crds=stack.platform.install_crds,
        device_class=options.dra.device_class if stack.platform.creates_device_class(options) else None,
        epp=stack.has_epp(),
        mpi_ssh_secret=mpi_ssh_secret,
        mpi_ssh_secret_name=mpi.ssh_secret_name,
        agent=stack.agent,
        # Where workloads are not awaited (no kubelets), neither is the agent.
        agent_await=options.await_policy.mode != "skip",
    ),
    provider=provider,
    # The CRDs are applied with the stack's own kubeconfig (cluster-wide objects), read by its key.
    kubeconfig=StackKubeconfig(stack.kubeconfig_key),
    context=stack.context,
)

graphs = {}
for dgd in stack.graphs:
    try:
        graphs[dgd.name] = DynamoGraphDeployment(
            dgd.name,
            dgd,
            kubeconfig=graph_kubeconfig,
            context=stack.graphs_context,
            options=options,
            namespace=options.namespace,
            delete_pvcs_on_destroy=stack.delete_pvcs_on_destroy,
            autoscalers=stack.autoscalers.get(dgd.name),
            agent=stack.agent is not None,
            running_worker_hash=running.get(dgd.name),
            opts=pulumi.ResourceOptions(depends_on=[platform]),
        )
    except DynamoValidationError as e:
        fail(f"graph {dgd.name}: {e}")

pulumi.export("namespace", options.namespace)
pulumi.export(
    "graphs",
    {
        n: {
            "state": g.state,
            "conditions": g.conditions,
            "components": g.component_statuses,
            "checkpoints": g.checkpoint_statuses,
            "takenOver": g.taken_over,
            "recorded": g.records.recorded,
        }
        for n, g in graphs.items()
    },
)
