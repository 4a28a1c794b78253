"""Names the API server would reject fail at load, naming the field: the graph's own name and
namespace, component names, and the names and label values rendering derives from them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dynamo_infra.api import DynamoValidationError, Problem, load_yaml, v1beta1
from dynamo_infra.api.kubenames import DNS1035_LABEL, DNS1123_SUBDOMAIN, LABEL_VALUE, key_broken, name_rule
from dynamo_infra.components import plan_graph
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import render_graph
from dynamo_infra.render.checks.name_check import DerivedNameError
from dynamo_infra.stack_config import StackConfig, StackConfigError
from tests.unit.test_stack_config import Config

IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0"
MAIN = {"name": "main", "image": IMAGE, "command": ["python3", "-m", "dynamo.frontend"]}


def beta(name: str, component: str = "Frontend", **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "nvidia.com/v1beta1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": name, **metadata},
        "spec": {
            "components": [
                {
                    "name": component,
                    "type": "frontend",
                    "replicas": 1,
                    "podTemplate": {"spec": {"containers": [MAIN]}},
                }
            ]
        },
    }


def alpha(name: str, service: str = "Frontend") -> dict[str, Any]:
    main = {k: v for k, v in MAIN.items() if k != "name"}
    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": name},
        "spec": {
            "services": {service: {"componentType": "frontend", "extraPodSpec": {"mainContainer": main}}}
        },
    }


def problems(doc: dict[str, Any]) -> list[Problem]:
    """The problems of planning `doc` as the program does (YAML text, load, plan)."""
    with pytest.raises(DynamoValidationError) as e:
        (dgd,) = load_yaml(yaml.safe_dump(doc)).graphs
        plan_graph("g", dgd, ClusterOptions())
    return e.value.problems


def test_the_rules_are_the_api_servers() -> None:
    assert DNS1123_SUBDOMAIN.broken("a.b-c") is None and DNS1123_SUBDOMAIN.broken("a" * 253) is None
    assert DNS1123_SUBDOMAIN.broken("a" * 254) == "is 254 characters; a DNS-1123 subdomain has at most 253"
    assert DNS1123_SUBDOMAIN.broken("Bad_Name!") and DNS1123_SUBDOMAIN.broken("a..b")
    assert (
        DNS1035_LABEL.broken("1abc")
        and DNS1035_LABEL.broken("a.b")
        and DNS1035_LABEL.broken("a" * 63) is None
    )
    assert LABEL_VALUE.broken("") is None and LABEL_VALUE.broken("A_b.c") is None and LABEL_VALUE.broken("-a")
    assert key_broken("nvidia.com/dynamo-component") is None and key_broken("Bad/Key") and key_broken("/x")
    assert name_rule("Service") is DNS1035_LABEL and name_rule("Deployment") is DNS1123_SUBDOMAIN
    assert name_rule("RoleBinding").broken("a_b") is None and name_rule("Job").broken("j" * 64)


@pytest.mark.parametrize("version", [beta, alpha])
def test_a_graph_named_bad_name_fails_at_load(version: Any) -> None:
    with pytest.raises(DynamoValidationError) as e:
        load_yaml(yaml.safe_dump(version("Bad_Name!")))
    assert [p.path for p in e.value.problems] == ["metadata.name"]
    assert "'Bad_Name!' is not a DNS-1123 subdomain" in e.value.problems[0].message


def test_a_bad_namespace_or_label_fails_at_load() -> None:
    doc = beta("g", namespace="Team_A", labels={"team": "a b"})
    with pytest.raises(DynamoValidationError) as e:
        load_yaml(yaml.safe_dump(doc))
    assert [p.path for p in e.value.problems] == ["metadata.labels.team", "metadata.namespace"]
    assert "is not a DNS-1123 label" in e.value.problems[1].message


def test_a_64_character_component_name_fails_at_load_in_both_versions() -> None:
    (beta_problem,) = problems(beta("g", "F" * 64))
    assert beta_problem == Problem("spec.components[0].name", "must be at most 63 characters long")
    (alpha_problem,) = problems(alpha("g", "F" * 64))
    assert alpha_problem.path == f"spec.services.{'F' * 64}"
    assert (
        alpha_problem.message
        == f"service name {'F' * 64!r} is 64 characters; a component name has at most 63"
    )
    (dotted,) = problems(alpha("g", "a.b"))
    assert dotted.path == "spec.services.a.b" and "is not a component name" in dotted.message


def test_a_service_name_over_63_characters_names_the_component() -> None:
    found = problems(beta("g" * 30, "F" * 33))
    service = f"{'g' * 30}-{'f' * 33}"
    assert (
        Problem(
            f"spec.components[{'F' * 33}].name",
            f"Service name {service!r} would be 64 characters; a DNS-1035 label has at most 63",
        )
        in found
    )


def test_a_service_name_that_starts_with_a_digit_is_rejected() -> None:
    (found,) = [p for p in problems(beta("1abc")) if p.message.startswith("Service name")]
    assert found.path == "spec.components[Frontend].name"
    assert found.message.startswith("Service name '1abc-frontend' would not be a DNS-1035 label")


def test_a_graph_name_whose_derived_label_exceeds_63_names_metadata_name() -> None:
    # Valid as a name (a subdomain), but `nvidia.com/dynamo-namespace: <namespace>-<name>` is a label value.
    name = "g" * 60
    found = problems(beta(name))
    by_path = {p.path for p in found}
    assert by_path == {"metadata.name", "spec.components[Frontend].name"}
    namespace_label = [p for p in found if "nvidia.com/dynamo-namespace" in p.message]
    assert namespace_label and all(p.path == "metadata.name" for p in namespace_label)
    assert (
        f"value 'default-{name}' would be 68 characters; a label value has at most 63"
        in namespace_label[0].message
    )


def test_grove_and_lws_names_are_checked_too() -> None:
    worker = {
        "name": "w" * 50,
        "type": "worker",
        "multinode": {"nodeCount": 2},
        "podTemplate": {
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": IMAGE,
                        "command": ["python3", "-m", "dynamo.vllm"],
                        "args": ["--model", "m"],
                        "resources": {"limits": {"nvidia.com/gpu": "1"}},
                    }
                ]
            }
        },
    }
    doc = {**beta("g" * 20), "spec": {"components": [worker]}}
    (dgd,) = load_yaml(yaml.safe_dump(doc), admission=False).graphs
    for orchestrator in ("lws", "grove"):
        options = ClusterOptions.parse({"multinode": {"orchestrator": orchestrator}})
        with pytest.raises(DynamoValidationError) as e:
            render_graph(dgd, options)
        service = f"Service name '{'g' * 20}-{'w' * 50}"
        assert any(p.message.startswith(service) for p in e.value.problems), orchestrator
        assert {p.path for p in e.value.problems} == {f"spec.components[{'w' * 50}].name"}, orchestrator


def test_the_stack_fails_at_load_before_the_program_declares_anything(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(yaml.safe_dump(beta("g" * 30, "F" * 33)))
    with pytest.raises(StackConfigError) as e:
        StackConfig.from_config(Config(kubeconfig="apiVersion: v1", graphs=[str(path)]))
    assert f"spec.components[{'F' * 33}].name: Service name" in str(e.value)
    assert str(path) in str(e.value)


def test_a_graph_built_in_python_is_checked_by_what_it_renders() -> None:
    # `model_validate` skips the load-time checks; the names the rendering derives still fail.
    dgd = v1beta1.DynamoGraphDeployment.model_validate(beta("Bad_Name!"))
    with pytest.raises(DerivedNameError) as e:
        plan_graph("g", dgd, ClusterOptions(), admission=False)
    assert {p.path for p in e.value.problems} == {"metadata.name", "spec.components[Frontend].name"}
    assert "ServiceAccount name 'Bad_Name!-k8s-service-discovery' would not be a DNS-1123 subdomain" in str(
        e.value
    )


def test_a_namespace_given_to_the_plan_is_checked() -> None:
    (dgd,) = load_yaml(yaml.safe_dump(beta("g"))).graphs
    with pytest.raises(DerivedNameError) as e:
        plan_graph("g", dgd, ClusterOptions(), "Team_A")
    assert e.value.problems[0].path == "metadata.namespace"
    assert e.value.problems[0].message.startswith("namespace 'Team_A' is not a DNS-1123 label")
