"""`dynamo-infra rbac`: the least-privilege Role (and small ClusterRole) of the graphs' providers."""

from __future__ import annotations

import argparse
import sys

NAME = "rbac"
HELP = "print the RBAC a restricted identity needs to deploy graphs into one namespace"
DESCRIPTION = """\
Print, as YAML to apply with admin credentials, a ServiceAccount, the Role holding every permission
the graphs' providers use in NAMESPACE (each rule commented with what it is for), its RoleBinding,
and the ClusterRole of the two cluster-scoped reads (the Dynamo record CRDs by name, StorageClasses)
with its binding. Give the account's token to the stack as `dynamo-infra:graphKubeconfig`
(or `graphKubeconfigPath`); the platform layer keeps `kubeconfig`.
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--namespace", required=True, help="the graphs' namespace")
    parser.add_argument(
        "--service-account", default=None, help="the account to bind (default: dynamo-infra-graphs)"
    )


def run(args: argparse.Namespace) -> int:
    from dynamo_infra.render.runtime.rbac import GRAPHS_NAME, rbac_yaml

    sys.stdout.write(rbac_yaml(args.namespace, args.service_account or GRAPHS_NAME))
    return 0
