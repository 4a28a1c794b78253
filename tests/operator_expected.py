"""Reading the operator's expected-output scenarios (`tests/data/corpus/operator-expected/`)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from dynamo_infra.api import v1beta1

# Image standing in for `$ignore` images when an expected DGD is used as input.
STAND_IN_IMAGE = "test.invalid/dynamo:1.4.0-test"


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader) if d]


def expected_of(scenario: Path, kinds: set[str]) -> list[dict[str, Any]]:
    """The expected documents of `kinds` in the scenario's `output.yaml`."""
    return [d for d in docs(scenario / "output.yaml") if d["kind"] in kinds]


def replace_ignored_images(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: STAND_IN_IMAGE if k == "image" and v == "$ignore" else replace_ignored_images(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [replace_ignored_images(v) for v in node]
    return node


def generated_dgd(scenario: Path) -> v1beta1.DynamoGraphDeployment:
    """The DGD the profiler generated (its expected form), with the request's metadata overrides."""
    (generated,) = [d for d in docs(scenario / "output.yaml") if d["kind"] == "DynamoGraphDeployment"]
    request = docs(scenario / "input.yaml")[0]
    overrides = ((request["spec"].get("overrides") or {}).get("dgd") or {}).get("metadata") or {}
    metadata: dict[str, Any] = {"name": generated["metadata"]["name"]}
    if overrides.get("annotations"):
        metadata["annotations"] = overrides["annotations"]
    dgd = {
        "apiVersion": generated["apiVersion"],
        "kind": generated["kind"],
        "metadata": metadata,
        "spec": replace_ignored_images(copy.deepcopy(generated["spec"])),
    }
    return v1beta1.DynamoGraphDeployment.parse(dgd)
