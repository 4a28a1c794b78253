"""What every dynamic provider shares: typed inputs, the kube client, progress lines and the poll loop.

A provider's inputs are one frozen dataclass built from the Pulumi property dict; `diff` compares
those objects and the reconcile reads them, so what is diffed is what is applied. The client is
built from them in each call (decision 10: a pickled provider never holds a client).

Check and Diff run for every resource on every preview and `up`, in a provider process started for
that run, and need only the inputs: every provider module imports at load time only this module,
`reconcile.inputs` and `pulumi.dynamic`. What talks to the cluster or renders is in the provider's
`*_calls` module, which it names (`Provider.calls_module`) and `Provider.calls` imports on the first
create, update, delete or read; the calls module imports the inputs, never the provider.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Self, TypeVar, cast

from pulumi.dynamic import ConfigureRequest, ReadResult, ResourceProvider
from pulumi.dynamic.config import Config

from dynamo_infra.api.manifest import pack, unpack
from dynamo_infra.errors import DynamoInfraError

if TYPE_CHECKING:
    from dynamo_infra.kube.client import KubeClient

# How often a wait polls the cluster.
POLL_INTERVAL_S = 1.0
# How often a wait reports progress.
PROGRESS_EVERY_S = 10.0
# How long a delete waits for each object to be gone.
DELETE_TIMEOUT_S = 120.0
# Await policy when an input sets none: wait for readiness up to this long.
DEFAULT_AWAIT_TIMEOUT_S = 600.0
# Await mode that does not wait (clusters without kubelets).
AWAIT_SKIP = "skip"

T = TypeVar("T")
# The properties naming how a resource reaches the cluster.
CREDENTIAL_PROPS = ("kubeconfig", "kubeconfigFrom")
# The stack's configuration as the engine gave it to this provider process (`Provider.configure`).
_stack_config: Config | None = None


class AwaitTimeout(DynamoInfraError):
    """Objects did not become ready in time; the message names them and their last state."""


def log(message: str) -> None:
    """Progress lines; the engine shows a provider's stderr with the resource being worked on."""
    print(message, file=sys.stderr, flush=True)


def prop_name(field: str) -> str:
    """The Pulumi property name of an input field: camelCase, a trailing `_` dropped (`await_`)."""
    head, *rest = field.rstrip("_").split("_")
    return head + "".join(w.capitalize() for w in rest)


@dataclasses.dataclass(frozen=True)
class Inputs:
    """Inputs common to every provider: where the cluster is and which namespace.

    A missing property reads as the field's default; `diff` compares every field but `undiffed`.
    """

    kubeconfig: str = ""
    # The stack configuration key the kubeconfig is read from instead (`dynamo-infra:kubeconfigPath`):
    # the engine gives every dynamic provider the stack's configuration, so the credential is not kept
    # in each resource's state.
    kubeconfig_from: str = ""
    context: str = ""
    namespace: str = ""

    # Fields `diff` does not compare: how a resource is deleted, read from its stored outputs at delete
    # (a change to one alone updates nothing; existing resources keep their value until their next update).
    undiffed: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def props(cls) -> tuple[str, ...]:
        """Every input's Pulumi property name, in declaration order."""
        return tuple(prop_name(f.name) for f in dataclasses.fields(cls))

    @classmethod
    def diffed(cls) -> tuple[str, ...]:
        """The Pulumi property names `diff` compares: every input but `undiffed`, in declaration order."""
        return tuple(prop_name(f.name) for f in dataclasses.fields(cls) if f.name not in cls.undiffed)

    @classmethod
    def from_props(cls, props: dict[str, Any]) -> Self:
        """From inputs, or from outputs (where large inputs are packed: `Provider.outputs`)."""
        fields = dataclasses.fields(cls)
        return cls(**{f.name: unpack(props.get(prop_name(f.name), _default(f))) for f in fields})

    def to_props(self) -> dict[str, Any]:
        return {prop_name(f.name): getattr(self, f.name) for f in dataclasses.fields(self)}

    def changed(self, other: Inputs) -> list[str]:
        """Property names whose value differs between two sets of inputs (the diffed ones). A credential
        moving between the resource's inputs and the stack's configuration is no change."""
        mine, theirs = self.to_props(), other.to_props()
        moved = bool(self.kubeconfig_from) != bool(other.kubeconfig_from)
        return [k for k in self.diffed() if mine[k] != theirs[k] and not (moved and k in CREDENTIAL_PROPS)]

    def client(self, user_agent: str = "") -> KubeClient:
        """A client for this call (decision 10: never kept on the provider), with this user agent ("":
        the providers' own)."""
        # Here: Check and Diff stay light (module doc).
        from dynamo_infra.kube import client, connection
        from dynamo_infra.render.runtime import rbac

        def may_watch(group: str, plural: str) -> bool:
            # What the least-privilege Role grants is all the providers may count on (`dynamo-infra rbac`).
            return rbac.covers(group, plural, "list") and rbac.covers(group, plural, "watch")

        return client.KubeClient(
            connection.load(self.credential(), self.context or None),
            user_agent or client.USER_AGENT,
            may_watch=may_watch,
        )

    def credential(self) -> str:
        """The kubeconfig: the input's, or the stack configuration's value of `kubeconfig_from`."""
        if not self.kubeconfig_from:
            return self.kubeconfig
        from dynamo_infra.kube import kubeconfig  # here: Check and Diff stay light

        value = _stack_config.get(self.kubeconfig_from) if _stack_config else None
        if not value:
            raise DynamoInfraError(
                f"{self.kubeconfig_from}: not in the stack's configuration, where this resource reads its "
                "kubeconfig (set it again to reach the cluster)"
            )
        return kubeconfig.from_stack_value(self.kubeconfig_from, str(value))


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def kubeconfig_given(props: dict[str, Any]) -> bool:
    """Whether inputs say how to reach the cluster: a kubeconfig, or the stack configuration key of one."""
    return bool(props.get("kubeconfig") or props.get("kubeconfigFrom"))


def await_skipped(policy: dict[str, Any]) -> bool:
    """Whether an await policy ({mode, timeoutSeconds}) says not to wait."""
    return bool(policy.get("mode", "wait") == AWAIT_SKIP)


def await_timeout(policy: dict[str, Any]) -> float:
    return float(policy.get("timeoutSeconds", DEFAULT_AWAIT_TIMEOUT_S))


def await_until(
    current: T,
    fetch: Callable[[], T],
    done: Callable[[T], bool],
    *,
    timeout: float,
    expired: Callable[[T], DynamoInfraError],
    progress: Callable[[T, float], str] | None = None,
    wait: Callable[[T, float], None] | None = None,
) -> T:
    """Look again with `fetch` until `done`; raise `expired(last seen)` after `timeout` seconds.

    `current` is what was last seen (no request is made for it); `progress(last, elapsed)` is
    logged every PROGRESS_EVERY_S. Between looks, `wait(last seen, at most seconds)` returns when
    something may have changed (a watch), or the loop sleeps POLL_INTERVAL_S.
    """
    start = time.monotonic()
    next_report = start + PROGRESS_EVERY_S
    while not done(current):
        now = time.monotonic()
        if now - start >= timeout:
            raise expired(current)
        if progress is not None and now >= next_report:
            log(progress(current, now - start))
            next_report = now + PROGRESS_EVERY_S
        if wait is None:
            time.sleep(POLL_INTERVAL_S)
        else:
            wait(current, max(min(start + timeout, next_report) - now, POLL_INTERVAL_S))
        current = fetch()
    return current


InputsT = TypeVar("InputsT", bound=Inputs)


class Provider(ResourceProvider, Generic[InputsT]):
    """A dynamic provider over typed inputs (subclasses set `inputs` to their Inputs class)."""

    serialize_as_secret_always = False
    inputs: ClassVar[type[Inputs]]
    # The module (dotted name) that creates, updates, deletes and reads: imported by `calls` only.
    calls_module: ClassVar[str]
    # The input properties whose outputs are packed (`pack`): the large ones, read back through `typed`.
    packed: ClassVar[tuple[str, ...]] = ()

    def calls_module_for(self, ins: InputsT) -> str:
        """The calls module for these inputs (a provider with more than one chooses here)."""
        return self.calls_module

    def calls(self, ins: InputsT) -> ModuleType:
        """The module that writes, deletes and reads these inputs, imported on first use: a process
        that only checks and diffs never loads it (module doc)."""
        return importlib.import_module(self.calls_module_for(ins))

    def configure(self, req: ConfigureRequest) -> None:
        """Keep the stack's configuration: a resource's `kubeconfigFrom` names a key of it."""
        global _stack_config
        _stack_config = req.config

    def typed(self, props: dict[str, Any]) -> InputsT:
        return cast(InputsT, self.inputs.from_props(props))

    def changes(self, olds: dict[str, Any], news: dict[str, Any]) -> list[str]:
        return self.typed(olds).changed(self.typed(news))

    def outputs(self, outs: dict[str, Any]) -> dict[str, Any]:
        """Outputs as the state keeps them: the `packed` properties packed."""
        return {k: pack(unpack(v)) if k in self.packed and v is not None else v for k, v in outs.items()}

    def read_result(self, id_: str, outs: dict[str, Any]) -> ReadResult:
        """Outputs as read, with the inputs they imply (so refresh shows drift, and an undiffed input such
        as a graph's admission stays for the next `check`)."""
        inputs = {k: unpack(outs[k]) for k in self.inputs.props() if k in outs}
        return ReadResult(id_, self.outputs(outs), inputs)
