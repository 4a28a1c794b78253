"""The root of every exception dynamo-infra raises (a leaf module: it imports nothing of the package)."""

from __future__ import annotations


class DynamoInfraError(Exception):
    """Something dynamo-infra cannot do; the message says what, where, and what to change."""
