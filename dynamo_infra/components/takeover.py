"""The base of our dynamic resources whose providers take over what a stopped Dynamo operator left."""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.dynamic import Resource


class TakingOverResource(Resource):
    """A dynamic resource with the `takenOver` output its provider fills (docs/how-to/take-over.md: "Moving
    a graph from the operator")."""

    @property
    def taken_over(self) -> pulumi.Output[dict[str, Any]]:
        """What was taken over from the Dynamo operator ({} when nothing)."""
        value: pulumi.Output[dict[str, Any]] = self.__dict__["takenOver"]
        return value
