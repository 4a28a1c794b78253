"""Property: any DynamoGraphDeployment document, planned as the program plans it (YAML text ->
`load_yaml` -> `plan_graph`) with no multinode orchestrator, Grove or LWS, either plans or raises
DynamoValidationError whose every problem names a field; and every object of a plan has a name and
label values the API server accepts (checked here by rules written independently of the package).

Documents are generated (both API versions; random component names, types, backends, multinode,
PVCs, probes, env, graph names and namespaces, valid and not) and mutated from the corpus graphs.
Derandomized and bounded; the number of cases run is printed in the terminal summary.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynamo_infra.api import DynamoValidationError, load_yaml
from dynamo_infra.components import plan_graph
from dynamo_infra.config import ClusterOptions
from tests.conftest import CORPUS

# Cases run and how they ended, by test (printed by the terminal summary hook in conftest).
CASES: Counter[str] = Counter()
# Examples per property (each is planned three times: no orchestrator, Grove, LWS).
GENERATED_EXAMPLES = 200
CORPUS_EXAMPLES = 80
SETTINGS = settings(
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
OPTIONS = {
    "none": ClusterOptions(),
    "grove": ClusterOptions.parse({"multinode": {"orchestrator": "grove"}}),
    "lws": ClusterOptions.parse({"multinode": {"orchestrator": "lws"}}),
}
IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0"
BACKENDS = {
    "vllm": ["python3", "-m", "dynamo.vllm"],
    "sglang": ["python3", "-m", "dynamo.sglang"],
    "trtllm": ["python3", "-m", "dynamo.trtllm"],
    "mocker": ["python3", "-m", "dynamo.mocker"],
}
CORPUS_GRAPHS = sorted(
    p for p in (CORPUS / "graphs").rglob("*.yaml") if "kind: DynamoGraphDeployment" in p.read_text()
)
# A tag the webhook can read a runtime version from (the corpus holds placeholders such as `my-tag`).
_SEMVER_TAG = re.compile(r":v?[0-9]+\.[0-9]+\.[0-9]+[^/]*$")

# --- The API server's rules, written out here (k8s.io/apimachinery/pkg/util/validation) ---------

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_LABEL = re.compile(_LABEL)
DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
DNS1035_LABEL = re.compile("[a-z]([-a-z0-9]*[a-z0-9])?")
LABEL_VALUE = re.compile("(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


def name_ok(kind: str, name: str) -> bool:
    if kind == "Service":
        return len(name) <= 63 and bool(DNS1035_LABEL.fullmatch(name))
    if kind in ("Role", "RoleBinding"):
        return bool(name) and name not in (".", "..") and not re.search("[/%]", name)
    limit = 63 if kind == "Job" else 253
    return len(name) <= limit and bool(DNS1123_SUBDOMAIN.fullmatch(name))


def label_values(node: Any) -> list[tuple[str, Any]]:
    """Every (key, value) of every `labels` / `matchLabels` map anywhere in `node`."""
    out: list[tuple[str, Any]] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("labels", "matchLabels") and isinstance(value, dict):
                out.extend(value.items())
            out.extend(label_values(value))
    elif isinstance(node, list):
        for item in node:
            out.extend(label_values(item))
    return out


# --- Strategies ------------------------------------------------------------------------------------

_text = st.text(st.characters(exclude_categories=["Cs", "Cc"]), max_size=12)
_valid_graph_names = st.one_of(
    st.sampled_from(["g", "my-graph", "vllm-agg.v2", "1abc", "x" * 40, "x" * 50]),
    st.from_regex(r"[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?", fullmatch=True),
)
_invalid_graph_names = st.one_of(
    st.sampled_from(["Bad_Name!", "UPPER", "-g", "g-", "x" * 63, "x" * 64, "x" * 254, "a..b", "ünï"]),
    st.from_regex(r"[a-z0-9][-a-z0-9.]{0,70}", fullmatch=True),
    _text,
)
# Two thirds names the API server accepts for the graph itself (its derived names may still be too long).
GRAPH_NAMES = st.one_of(_valid_graph_names, _valid_graph_names, _invalid_graph_names)
_valid_component_names = st.one_of(
    st.sampled_from(["Frontend", "VllmWorker", "decode", "Prefill", "planner", "w", "9lives", "W" * 40]),
    st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9]{0,30}[A-Za-z0-9])?", fullmatch=True),
)
_invalid_component_names = st.one_of(
    st.sampled_from(["Bad_Name!", "a.b", "-w", "w-", "W" * 60, "W" * 64]),
    st.from_regex(r"[A-Za-z0-9][-A-Za-z0-9_.]{0,66}", fullmatch=True),
)
COMPONENT_NAMES = st.one_of(_valid_component_names, _valid_component_names, _invalid_component_names)
NAMESPACES = st.sampled_from([None, None, None, "team", "t" * 40, "t" * 63, "t" * 64, "Bad_NS", "team.b"])
ENV_NAMES = st.sampled_from(["HF_HOME", "MODEL", "A_B", "1BAD", "with space", ""])
PROBES = st.sampled_from(
    [
        None,
        None,
        {"httpGet": {"path": "/live", "port": 9090}, "periodSeconds": 5},
        {"exec": {"command": ["true"]}},
        {"httpGet": {"path": "/live", "port": "http"}},
        {"httpGet": {"path": "/live"}},
    ]
)


@st.composite
def components(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "name": draw(COMPONENT_NAMES),
        "type": draw(st.sampled_from([None, "frontend", "worker", "prefill", "decode", "planner"])),
        "backend": draw(st.sampled_from(sorted(BACKENDS))),
        "nodes": draw(st.sampled_from([None, None, None, 2, 4, 1])),
        "gpus": draw(st.integers(0, 2)),
        "replicas": draw(st.integers(0, 3)),
        "env": draw(st.lists(st.tuples(ENV_NAMES, _text), max_size=2)),
        "probe": draw(PROBES),
        "pvc": draw(st.one_of(st.none(), GRAPH_NAMES)),
    }


def main_container(c: dict[str, Any]) -> dict[str, Any]:
    main: dict[str, Any] = {"image": IMAGE, "command": BACKENDS[c["backend"]], "args": ["--model", "m"]}
    if c["env"]:
        main["env"] = [{"name": n, "value": v} for n, v in c["env"]]
    if c["probe"]:
        main["livenessProbe"] = c["probe"]
    if c["pvc"] is not None:
        main["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    return main


def v1beta1_component(c: dict[str, Any]) -> dict[str, Any]:
    main = {"name": "main", **main_container(c)}
    if c["gpus"]:
        main["resources"] = {"limits": {"nvidia.com/gpu": str(c["gpus"])}}
    pod: dict[str, Any] = {"containers": [main]}
    if c["pvc"] is not None:
        pod["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": c["pvc"]}}]
    out: dict[str, Any] = {"name": c["name"], "replicas": c["replicas"], "podTemplate": {"spec": pod}}
    if c["type"]:
        out["type"] = c["type"]
    if c["nodes"]:
        out["multinode"] = {"nodeCount": c["nodes"]}
    return out


def v1alpha1_service(c: dict[str, Any]) -> dict[str, Any]:
    main = main_container(c)
    main.pop("volumeMounts", None)
    out: dict[str, Any] = {"replicas": c["replicas"], "extraPodSpec": {"mainContainer": main}}
    if c["gpus"]:
        out["resources"] = {"limits": {"gpu": str(c["gpus"])}}
    if c["type"]:
        out["componentType"] = c["type"]
    if c["nodes"]:
        out["multinode"] = {"nodeCount": c["nodes"]}
    if c["pvc"] is not None:
        out["volumeMounts"] = [{"name": c["pvc"], "mountPoint": "/data"}]
    return out


@st.composite
def graphs(draw: st.DrawFn) -> dict[str, Any]:
    """A DGD document in either version."""
    comps = draw(st.lists(components(), min_size=1, max_size=2))
    metadata: dict[str, Any] = {"name": draw(GRAPH_NAMES)}
    if (ns := draw(NAMESPACES)) is not None:
        metadata["namespace"] = ns
    if draw(st.booleans()):
        metadata["annotations"] = {"nvidia.com/enable-grove": draw(st.sampled_from(["true", "false"]))}
    if draw(st.booleans()):
        return {
            "apiVersion": "nvidia.com/v1beta1",
            "kind": "DynamoGraphDeployment",
            "metadata": metadata,
            "spec": {"components": [v1beta1_component(c) for c in comps]},
        }
    claims = sorted({c["pvc"] for c in comps if c["pvc"] is not None})
    spec: dict[str, Any] = {"services": {c["name"]: v1alpha1_service(c) for c in comps}}
    spec["backendFramework"] = comps[0]["backend"] if comps[0]["backend"] != "mocker" else "vllm"
    if claims:
        create = draw(st.booleans())
        spec["pvcs"] = [
            {
                "name": n,
                "create": create,
                "size": "1Gi",
                "storageClass": "standard",
                "volumeAccessMode": "ReadWriteOnce",
            }
            for n in claims
        ]
    return {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoGraphDeployment",
        "metadata": metadata,
        "spec": spec,
    }


@st.composite
def corpus_mutants(draw: st.DrawFn) -> dict[str, Any]:
    """A corpus graph with a new name, maybe a namespace, and one component renamed."""
    path: Path = draw(st.sampled_from(CORPUS_GRAPHS))
    text = re.sub(
        r"(image:\s*)(\S+)", lambda m: m[1] + (m[2] if _SEMVER_TAG.search(m[2]) else IMAGE), path.read_text()
    )
    doc = next(d for d in yaml.safe_load_all(text) if d and d.get("kind") == "DynamoGraphDeployment")
    doc["metadata"] = {**doc["metadata"], "name": draw(GRAPH_NAMES)}
    if (ns := draw(NAMESPACES)) is not None:
        doc["metadata"]["namespace"] = ns
    if draw(st.booleans()):
        new = draw(COMPONENT_NAMES)
        spec = doc["spec"]
        if "services" in spec:
            old = sorted(spec["services"])[0]
            spec["services"] = {(new if k == old else k): v for k, v in spec["services"].items()}
        else:
            spec["components"][0]["name"] = new
    return doc


# --- The property -----------------------------------------------------------------------------------


def plan_or_fail(doc: dict[str, Any], test: str) -> None:
    """Plan `doc` with each orchestrator option: a plan whose names are valid, or our error with paths."""
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    for option, options in OPTIONS.items():
        CASES[f"{test} cases"] += 1
        try:
            (dgd,) = load_yaml(text).graphs
            plan = plan_graph("g", dgd, options)
        except DynamoValidationError as e:
            assert e.problems and all(p.path for p in e.problems), f"{option}: a problem without a field: {e}"
            CASES[f"{test} rejected"] += 1
            if any("DNS-1" in p.message or "label value" in p.message for p in e.problems):
                CASES[f"{test} rejected by a name rule"] += 1
            continue
        CASES[f"{test} planned"] += 1
        r = plan.rendered
        objects = [*r.all_objects(), *r.pvcs, *r.checkpoints]
        for obj in objects:
            kind, name = obj["kind"], obj["metadata"]["name"]
            assert name_ok(kind, name), f"{option}: {kind} name {name!r} would be rejected"
            for key, value in label_values(obj):
                assert isinstance(value, str) and len(value) <= 63 and LABEL_VALUE.fullmatch(value), (
                    f"{option}: {kind} {name!r}: label {key}={value!r} would be rejected"
                )


def run_property(strategy: st.SearchStrategy[dict[str, Any]], test: str, examples: int) -> None:
    """Run the property on `examples` derandomized documents, then check both outcomes were reached."""

    @settings(SETTINGS, max_examples=examples)
    @given(strategy)
    def check(doc: dict[str, Any]) -> None:
        plan_or_fail(doc, test)

    check()
    assert CASES[f"{test} planned"] > 0 and CASES[f"{test} rejected by a name rule"] > 0, dict(CASES)


def test_generated_graphs_plan_or_fail_naming_a_field() -> None:
    run_property(graphs(), "generated", GENERATED_EXAMPLES)


def test_mutated_corpus_graphs_plan_or_fail_naming_a_field() -> None:
    run_property(corpus_mutants(), "corpus", CORPUS_EXAMPLES)
