"""Our rendered objects (and DCDs) against the operator's own expected outputs at the parity pin.

Server-side defaults are added with `tests.apiserver_defaults`; the integration variant applies the
render to a real API server and reads it back instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dynamo_infra.api import v1beta1
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import render_graph
from tests.apiserver_defaults import with_defaults
from tests.dcd import render_dcd
from tests.matcher import match_sets, mismatches
from tests.operator_expected import docs, expected_of, generated_dgd

# The operator's tests ran in namespaces named `clusterenv-…`.
NAMESPACE = "clusterenv-unit"


def check(expected: list[dict[str, Any]], actual: list[dict[str, Any]]) -> None:
    problems = match_sets(expected, [with_defaults(o) for o in actual])
    assert not problems, "\n".join(problems)


def test_dcd_deployment(corpus: Path) -> None:
    scenario = corpus / "operator-expected" / "dcd" / "deployment"
    (dcd,) = docs(scenario / "input.yaml")
    dcd = {**dcd, "metadata": {**dcd["metadata"], "namespace": NAMESPACE}}
    objects = render_dcd(dcd, ClusterOptions())
    check(expected_of(scenario, {"Deployment"}), [o for o in objects if o["kind"] == "Deployment"])


# Cluster options of the operator's LWS and Grove test environments.
LWS = ClusterOptions.parse({"multinode": {"orchestrator": "lws"}})
GROVE = ClusterOptions.parse({"multinode": {"orchestrator": "grove"}})
# Kinds each expected output lists, compared as sets of objects in the namespace.
WORKLOAD_KINDS = {"Deployment", "LeaderWorkerSet", "PodCliqueSet"}


def _graph_objects(
    dgd: v1beta1.DynamoGraphDeployment, options: ClusterOptions | None = None
) -> list[dict[str, Any]]:
    rendered = render_graph(dgd, options or ClusterOptions(), NAMESPACE)
    out = [c.dcd for c in rendered.components.values() if c.dcd is not None]
    out += [o for o in rendered.all_objects() if o["kind"] in WORKLOAD_KINDS]
    return out


def test_dgd_components(corpus: Path) -> None:
    scenario = corpus / "operator-expected" / "dgd" / "components"
    (dgd,) = docs(scenario / "input.yaml")
    actual = _graph_objects(v1beta1.DynamoGraphDeployment.parse(dgd))
    check(expected_of(scenario, {"Deployment", "DynamoComponentDeployment"}), actual)


def test_dgdr_deployment_path(corpus: Path) -> None:
    scenario = corpus / "operator-expected" / "dgdr" / "deployment"
    actual = _graph_objects(generated_dgd(scenario))
    check(expected_of(scenario, {"Deployment", "DynamoComponentDeployment"}), actual)


def test_dcd_lws(corpus: Path) -> None:
    """A multinode DCD becomes one LeaderWorkerSet `{dcd}-0` with LWS available."""
    scenario = corpus / "operator-expected" / "dcd" / "lws"
    (dcd,) = docs(scenario / "input.yaml")
    dcd = {**dcd, "metadata": {**dcd["metadata"], "namespace": NAMESPACE}}
    objects = render_dcd(dcd, LWS)
    check(expected_of(scenario, {"LeaderWorkerSet"}), [o for o in objects if o["kind"] == "LeaderWorkerSet"])


def test_dgd_grove(corpus: Path) -> None:
    scenario = corpus / "operator-expected" / "dgd" / "grove"
    (dgd,) = docs(scenario / "input.yaml")
    actual = _graph_objects(v1beta1.DynamoGraphDeployment.parse(dgd), GROVE)
    check(expected_of(scenario, {"PodCliqueSet"}), actual)


def test_dgdr_lws_path(corpus: Path) -> None:
    """Grove opted out by annotation: DCDs, a Deployment per single-node component, one LWS."""
    scenario = corpus / "operator-expected" / "dgdr" / "lws"
    options = ClusterOptions.parse({"multinode": {"orchestrator": "grove"}, "lws": {"enabled": True}})
    actual = _graph_objects(generated_dgd(scenario), options)
    check(expected_of(scenario, {"Deployment", "DynamoComponentDeployment", "LeaderWorkerSet"}), actual)


def test_dgdr_grove_path(corpus: Path) -> None:
    scenario = corpus / "operator-expected" / "dgdr" / "grove"
    actual = _graph_objects(generated_dgd(scenario), GROVE)
    check(expected_of(scenario, {"PodCliqueSet", "Deployment", "DynamoComponentDeployment"}), actual)


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
