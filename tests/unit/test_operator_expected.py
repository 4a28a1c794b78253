"""Our rendered objects (and DCDs) against the operator's own expected outputs at the parity pin.

Server-side defaults are added with `tests.apiserver_defaults`; the integration variant applies the
render to a real API server and reads it back instead.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from dynamo_infra.api import v1beta1
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import render_graph
from dynamo_infra.render.graph import render_dcd
from tests.apiserver_defaults import with_defaults
from tests.matcher import match_sets, mismatches

# The operator's tests ran in namespaces named `clusterenv-…`.
NAMESPACE = "clusterenv-unit"
# Image standing in for `$ignore` images when an expected DGD is used as input.
STAND_IN_IMAGE = "test.invalid/dynamo:1.4.0-test"


def docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def expected_of(scenario: Path, kinds: set[str]) -> list[dict[str, Any]]:
    return [d for d in docs(scenario / "output.yaml") if d["kind"] in kinds]


def check(expected: list[dict[str, Any]], actual: list[dict[str, Any]]) -> None:
    problems = match_sets(expected, [with_defaults(o) for o in actual])
    assert not problems, "\n".join(problems)


def test_dcd_deployment(corpus: Path) -> None:
    scenario = corpus / "operator-expected" / "dcd" / "deployment"
    (dcd,) = docs(scenario / "input.yaml")
    dcd = {**dcd, "metadata": {**dcd["metadata"], "namespace": NAMESPACE}}
    objects = render_dcd(dcd, ClusterOptions())
    check(expected_of(scenario, {"Deployment"}), [o for o in objects if o["kind"] == "Deployment"])


def _graph_objects(dgd: v1beta1.DynamoGraphDeployment) -> list[dict[str, Any]]:
    rendered = render_graph(dgd, ClusterOptions(), NAMESPACE)
    out = [c.dcd for c in rendered.components.values()]
    out += [o for o in rendered.all_objects() if o["kind"] == "Deployment"]
    return out


def test_dgd_components(corpus: Path) -> None:
    scenario = corpus / "operator-expected" / "dgd" / "components"
    (dgd,) = docs(scenario / "input.yaml")
    actual = _graph_objects(v1beta1.DynamoGraphDeployment.parse(dgd))
    check(expected_of(scenario, {"Deployment", "DynamoComponentDeployment"}), actual)


def _replace_ignored_images(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: STAND_IN_IMAGE if k == "image" and v == "$ignore" else _replace_ignored_images(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_replace_ignored_images(v) for v in node]
    return node


def test_dgdr_deployment_path(corpus: Path) -> None:
    """The DGD the profiler generated (its expected form, as input) renders the expected objects."""
    scenario = corpus / "operator-expected" / "dgdr" / "deployment"
    (generated,) = [d for d in docs(scenario / "output.yaml") if d["kind"] == "DynamoGraphDeployment"]
    request = docs(scenario / "input.yaml")[0]
    overrides = request["spec"]["overrides"]["dgd"]["metadata"]
    dgd = {
        "apiVersion": generated["apiVersion"],
        "kind": generated["kind"],
        "metadata": {"name": generated["metadata"]["name"], "annotations": overrides["annotations"]},
        "spec": _replace_ignored_images(copy.deepcopy(generated["spec"])),
    }
    actual = _graph_objects(v1beta1.DynamoGraphDeployment.parse(dgd))
    check(expected_of(scenario, {"Deployment", "DynamoComponentDeployment"}), actual)


@pytest.mark.parametrize(
    ("expected", "actual", "ok"),
    [
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ({"$strict": False, "a": 1}, {"a": 1, "b": 2}, True),
        ({"$strict": False, "m": {"a": 1}}, {"m": {"a": 1, "b": 2}}, False),
        ({"a": "$ignore"}, {}, True),
        ({"a": "$exists"}, {}, False),
        ({"a": "$notexists"}, {"a": 1}, False),
        ({"a": {"$notexists": True}}, {}, True),
        ({"a": "$glob:x-*"}, {"a": "x-1"}, True),
        ({"a": "$pattern:[0-9a-f]{8}"}, {"a": "0123abcd"}, True),
        ({"a": "$pattern:[0-9a-f]{8}"}, {"a": "0123abcdX"}, False),
        ({"a": [1, 2]}, {"a": [2, 1]}, False),
        ({"$$strict": 1}, {"$strict": 1}, True),
    ],
)
def test_matcher_directives(expected: Any, actual: Any, ok: bool) -> None:
    assert (not mismatches(expected, actual)) is ok
