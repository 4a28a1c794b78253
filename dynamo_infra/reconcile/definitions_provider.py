"""The dynamic provider of the platform's CustomResourceDefinitions (the Dynamo runtime's, and the
third-party sets a stack installs), as one resource.

A CRD's schema is large (the DynamoGraphDeployment CRD alone is ~57,000 property values), and the
self-managed backend serializes every value of the state after every step of every `up` and
`destroy`. This resource keeps one digest per CRD readable (what `diff` compares and
`pulumi preview --diff` shows) and the manifests packed (`reconcile.base.pack`: one string).

Inputs: kubeconfig (secret) or kubeconfigFrom, context, definitions ({name: digest}),
manifests ({name: manifest}, packed, not diffed), fieldManager (the cluster-wide field manager).
Outputs: the inputs (`manifests` packed); after a refresh, `definitions` without the CRDs gone from
the cluster and with `definitions_calls.DRIFTED` for those another writer changed.

Never deletes a CRD (`definitions_calls`); Check and Diff need only the inputs.
"""

from __future__ import annotations

from typing import Any

from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ReadResult, UpdateResult
from pulumi.output import Unknown

from dynamo_infra.api.manifest import unpack
from dynamo_infra.reconcile.base import Provider, kubeconfig_given, log
from dynamo_infra.reconcile.inputs import DefinitionsInputs

# The resource's id: one per stack (CRDs are cluster-wide, named by their manifests).
DEFINITIONS_ID = "customresourcedefinitions"


class CustomResourceDefinitionsProvider(Provider[DefinitionsInputs]):
    """Applies a set of CRDs with server-side apply and keeps them, digests only, in the state."""

    inputs = DefinitionsInputs
    calls_module = "dynamo_infra.reconcile.definitions_calls"
    packed = ("manifests",)

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures = []
        definitions, manifests = news.get("definitions"), news.get("manifests")
        if not isinstance(definitions, Unknown | type(None)) and not isinstance(manifests, Unknown):
            names = set(unpack(manifests) or {})
            missing = [name for name in definitions or {} if name not in names]
            if missing:
                failures.append(CheckFailure("manifests", f"no manifest for {', '.join(missing)}"))
        if not kubeconfig_given(news):
            failures.append(CheckFailure("kubeconfig", "a kubeconfig (content or path) is required"))
        return CheckResult(news, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(changes=bool(self.changes(olds, news)), replaces=[], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        ins = self.typed(props)
        return CreateResult(id_=DEFINITIONS_ID, outs=self.outputs(self.calls(ins).apply(ins, props, None)))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        ins = self.typed(news)
        return UpdateResult(outs=self.outputs(self.calls(ins).apply(ins, news, self.typed(olds))))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        """Kept: deleting a CRD deletes every resource of its kind, in every namespace."""
        names = ", ".join(self.typed(props).definitions)
        log(f"CustomResourceDefinitions kept in the cluster: {names}")

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """The CRDs as the cluster has them; the inputs keep the manifests (packed), so a preview after
        a refresh still shows per-field changes."""
        ins = self.typed(props)
        outs = self.outputs(self.calls(ins).read(ins, props))
        inputs = {k: outs[k] for k in (*self.inputs.diffed(), "manifests") if k in outs}
        return ReadResult(id_, outs, inputs)
