"""Neighbours: another stack's objects of the same owner, a namespace the Dynamo operator manages, and
who changed the fields we own (the refresh's drift message)."""

from __future__ import annotations

from typing import Any

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.components.neighbours import neighbour_problems, read_versions
from dynamo_infra.reconcile.drift import NO_MANAGER, changed_paths, drift_lines, drifted
from dynamo_infra.reconcile.ownership import (
    INVENTORY_ANNOTATION,
    STACK_ANNOTATION,
    foreign_owner,
    with_inventory,
)

OURS = "n/g/c"
SVC = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "w", "namespace": "n"}}


def stamped(stack: str) -> Manifest:
    return with_inventory(SVC, OURS, "inv", stack)


def test_the_same_owner_in_another_stack_is_foreign() -> None:
    assert stamped("p/a")["metadata"]["annotations"] == {INVENTORY_ANNOTATION: OURS, STACK_ANNOTATION: "p/a"}
    assert foreign_owner(stamped("p/a"), OURS, "p/a") is None
    assert foreign_owner(stamped("p/a"), OURS, "p/b") == f"dynamo-infra resource {OURS} of stack p/a"
    # Objects stamped before stacks were recorded, and callers that name no stack, match on the owner.
    assert foreign_owner(with_inventory(SVC, OURS, "inv"), OURS, "p/b") is None
    assert foreign_owner(stamped("p/a"), OURS) is None
    assert foreign_owner(stamped("p/a"), "n/h/c", "p/a") == "dynamo-infra resource n/g/c of stack p/a"


def dgd(name: str, **meta: Any) -> Manifest:
    return {"name": name, "namespace": "n", **meta}


def record(name: str, stack: str) -> Manifest:
    return dgd(name, annotations={INVENTORY_ANNOTATION: f"n/{name}/#records", STACK_ANNOTATION: stack})


def test_neighbour_problems() -> None:
    operator = dgd("op", managedFields=[{"manager": "manager"}])
    assert neighbour_problems([], "n", "p/a", ["g"]) == []
    # Our own record, another stack's graph of another name, the operator's graph being taken over.
    assert neighbour_problems([record("g", "p/a"), record("h", "p/b"), dgd("g")], "n", "p/a", ["g"]) == []
    # A record from before stacks were recorded (our field manager, no annotation) is ours.
    assert (
        neighbour_problems([dgd("h", managedFields=[{"manager": "dynamo-infra"}])], "n", "p/a", ["g"]) == []
    )
    (same,) = neighbour_problems([record("g", "p/b")], "n", "p/a", ["g"])
    assert "graph g: namespace n runs a graph of that name deployed by stack p/b" in same
    assert "(dynamo-infra resource n/g/#records)" in same
    problems = neighbour_problems([dgd("z"), record("g", "p/b"), operator], "n", "p/a", ["g"])
    assert len(problems) == 2
    assert problems[0].startswith(
        "namespace n: the Dynamo operator manages graphs there (DynamoGraphDeployment op, z)"
    )


def deployment(value: str, managers: list[Manifest]) -> Manifest:
    env = [{"name": "A", "value": "1"}, {"name": "PORT", "value": value}]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "n", "managedFields": managers},
        "spec": {
            "replicas": 1,
            "template": {"spec": {"containers": [{"name": "main", "image": "i", "env": env}]}},
        },
    }


def entry(manager: str, fields: Manifest, subresource: str = "") -> Manifest:
    return {"manager": manager, "fieldsV1": fields, **({"subresource": subresource} if subresource else {})}


PORT_VALUE = {
    "f:spec": {
        "f:template": {
            "f:spec": {
                "f:containers": {'k:{"name":"main"}': {"f:env": {'k:{"name":"PORT"}': {"f:value": {}}}}}
            }
        }
    }
}


def test_drift_names_the_managers_now_owning_each_changed_field() -> None:
    wanted = deployment("8000", [])
    assert changed_paths(wanted, wanted) == []
    managers = [
        entry("dynamo-infra", {"f:spec": {"f:replicas": {}}}),
        entry("kubectl-edit", PORT_VALUE),
        entry("kube-controller-manager", {"f:status": {}}, "status"),
        entry("hpa-controller", {"f:spec": {"f:replicas": {}}}),
    ]
    live = deployment("9999", managers)
    live["spec"]["replicas"] = 3
    del live["spec"]["template"]["spec"]["containers"][0]["image"]
    changes = drifted(live, wanted, live)
    assert changes == {
        "spec.replicas": ["hpa-controller"],
        "spec.template.spec.containers[0].image": [NO_MANAGER],
        "spec.template.spec.containers[0].env[1].value": ["kubectl-edit"],
    }
    (line, *_) = drift_lines("n/g/c", "apps/v1/Deployment/n/d", changes)
    assert line == (
        "n/g/c: apps/v1/Deployment/n/d: field spec.replicas was changed by hpa-controller; "
        "the next `up` puts it back"
    )


def test_dgds_are_listed_first_in_the_version_their_crd_serves() -> None:
    assert read_versions(platform_crd=True) == ("nvidia.com/v1beta1", "nvidia.com/v1alpha1")
    assert read_versions(platform_crd=False) == ("nvidia.com/v1alpha1", "nvidia.com/v1beta1")
