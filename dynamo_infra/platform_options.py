"""PlatformOptions: what a stack's platform layer installs besides the namespace (`dynamo-infra:platform`).

`installCrds` names third-party CRD sets shipped with the project (`stacks/crds/<set>/`; the Dynamo
runtime's own set is installed by every stack, unlisted);
`deviceClass` creates the DRA DeviceClass of `dynamo-infra:cluster` `dra.deviceClass`. Problems
name their key path under `dynamo-infra:platform`; cross-checks against the cluster options name
the `dynamo-infra:cluster` key they contradict.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from dynamo_infra.api.base import WireModel
from dynamo_infra.api.errors import DynamoValidationError, Problem
from dynamo_infra.config import ClusterOptions

CrdSet = Literal["grove", "lws", "keda", "istio", "inference"]
# Every CRD set the project ships, in the order they are installed.
CRD_SETS: tuple[CrdSet, ...] = ("grove", "lws", "keda", "istio", "inference")
# The Dynamo runtime's CRDs (DynamoWorkerMetadata, the store of Kubernetes discovery): every stack
# installs them, so they are never listed.
DYNAMO_CRD_SET = "dynamo"


class PlatformOptions(WireModel):
    """The cluster layer of a stack. Defaults install nothing beyond namespace and service accounts."""

    install_crds: list[CrdSet] = Field(default_factory=list)
    # Create the DRA DeviceClass; None: exactly when `dynamo-infra:cluster` enables DRA.
    device_class: bool | None = None

    def creates_device_class(self, cluster: ClusterOptions) -> bool:
        return cluster.dra.enabled if self.device_class is None else self.device_class

    def problems_with(self, cluster: ClusterOptions) -> list[Problem]:
        """Contradictions within the platform options and with the cluster options."""
        out = [
            Problem(f"installCrds[{i}]", f"{name!r} is listed twice")
            for i, name in enumerate(self.install_crds)
            if name in self.install_crds[:i]
        ]
        if self.device_class and not cluster.dra.enabled:
            out.append(Problem("deviceClass", "is true but dynamo-infra:cluster dra.enabled is false"))
        return out

    @classmethod
    def from_config(cls, data: object, cluster: ClusterOptions) -> PlatformOptions:
        """From `pulumi config` (already parsed YAML); errors name `dynamo-infra:platform` keys."""
        try:
            options = cls.parse({} if data is None else data)
        except DynamoValidationError as e:
            raise e.with_prefix("dynamo-infra:platform") from None
        problems = options.problems_with(cluster)
        if problems:
            raise DynamoValidationError(problems).with_prefix("dynamo-infra:platform")
        return options
