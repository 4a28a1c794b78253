"""Fast paths agree with the general code they shortcut."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from dynamo_infra.api import kube, load_yaml
from dynamo_infra.api.manifest import copy_json
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render.go.gojson import quote
from tests.conftest import CORPUS

# Characters quote passes through and characters it escapes.
PLAIN = [chr(c) for c in range(0x20, 0x7F) if chr(c) not in '"\\<>&'] + ["é", "日", "\u00a0"]
ESCAPED = ['"', "\\", "<", ">", "&", "\n", "\x01", "\u2028", "\u2029", "\ud800"]


def test_quote_without_escapes_is_the_general_quote() -> None:
    rng = random.Random(15)
    for _ in range(2000):
        s = "".join(rng.choice(PLAIN + ESCAPED) for _ in range(rng.randint(0, 12)))
        # A trailing control character sends the string through the general loop.
        assert quote(s + "\x01") == quote(s)[:-1] + '\\u0001"'
    assert quote("a<b") == '"a\\u003cb"'
    assert quote("plain-text_1.0") == '"plain-text_1.0"'


def test_copy_json_is_a_deep_copy() -> None:
    class Opaque:
        pass

    value = {"a": [1, 2.5, {"b": None, "c": True}], "d": "x", "e": Opaque()}
    copied = copy_json(value)
    assert copied == {**value, "e": copied["e"]}
    copied["a"][2]["b"] = "changed"
    copied["a"].append(3)
    assert value["a"] == [1, 2.5, {"b": None, "c": True}]
    assert copied["e"] is not value["e"] and isinstance(copied["e"], Opaque)
    assert copy_json(copy.deepcopy(value["a"])) == value["a"]


def _schema_walk(data: Any, schema: dict[str, Any]) -> None:
    """Structural defaulting as a plain walk of the schema (what `kube.apply_defaults` does from its
    per-node tables)."""
    if isinstance(data, dict):
        properties = schema.get("properties") or {}
        for key, prop in properties.items():
            null = key in data and data[key] is None and not kube._nullable(prop)
            if "default" in prop and (key not in data or null):
                data[key] = copy.deepcopy(prop["default"])
            elif null:
                del data[key]
        extra = schema.get("additionalProperties")
        for key, value in data.items():
            sub = properties.get(key, extra)
            if isinstance(sub, dict):
                _schema_walk(value, sub)
    elif isinstance(data, list) and isinstance(schema.get("items"), dict):
        for value in data:
            _schema_walk(value, schema["items"])


def _corpus_documents() -> list[tuple[dict[str, Any], str, str]]:
    """(wire document, kind, version) of every corpus graph, with nulls sprinkled in, and its DCDs."""
    out: list[tuple[dict[str, Any], str, str]] = []
    for path in sorted((CORPUS / "graphs").glob("*/*.yaml"))[:60]:
        for dgd in load_yaml(path, admission=False).graphs:
            wire = dgd.to_manifest()
            version = dgd.api_version.split("/")[-1]
            out.append((wire, dgd.kind, version))
            nulled = copy.deepcopy(wire)
            nulled["spec"]["backendFramework"] = None
            out.append((nulled, dgd.kind, version))
    return out


def test_table_defaulting_is_the_schema_walk_and_reports_changes() -> None:
    documents = _corpus_documents()
    assert len(documents) > 20
    changed_any = unchanged_any = False
    for wire, kind, version in documents:
        schema = kube.crd_schema(kind, version)
        assert schema is not None
        walked, tabled = copy.deepcopy(wire), copy.deepcopy(wire)
        _schema_walk(walked, schema)
        changed = kube.apply_defaults(tabled, schema)
        assert json.dumps(tabled) == json.dumps(walked)  # same values, same key order
        assert changed == (walked != wire)
        changed_any, unchanged_any = changed_any or changed, unchanged_any or not changed
    assert changed_any


def test_a_parsed_model_is_the_model_of_its_data() -> None:
    for path in sorted((CORPUS / "graphs").glob("*/*.yaml"))[:40]:
        for dgd in load_yaml(path, admission=False).graphs:
            data = dgd.to_manifest()
            assert type(dgd).parse(data, kube_schema=False) == type(dgd).model_validate(data)


def _every_validator_problems(model: Any, data: dict[str, Any]) -> list[Any]:
    """`kube.validate` as a loop that compiles the validator of every sub-object path, matched or not."""
    version = model.API_VERSION.split("/")[-1]
    problems: list[Any] = []
    for pattern in kube.kube_patterns(model):
        validator = kube._validator(model.KIND, version, pattern)
        if validator is not None:
            for at, value in kube._matches(data, pattern):
                problems.extend(kube._problems(validator, at, value))
    return problems


def test_sub_object_validation_compiles_only_matched_paths_and_finds_the_same_problems(
    monkeypatch: Any,
) -> None:
    checked = with_problems = 0
    for path in sorted((CORPUS / "graphs").glob("*/*.yaml"))[:40]:
        for dgd in load_yaml(path, admission=False).graphs:
            model, wire = type(dgd), dgd.to_manifest()
            broken = copy.deepcopy(wire)
            for service in (broken["spec"].get("services") or {}).values():
                service.setdefault("extraPodSpec", {}).setdefault("mainContainer", {})["ports"] = "80"
            for data in (wire, broken):
                problems = kube.validate(model, data)
                assert problems == _every_validator_problems(model, data)
                checked, with_problems = checked + 1, with_problems + bool(problems)
    assert checked > 20 and with_problems > 10

    dgd = load_yaml(CORPUS / "graphs" / "v1alpha1" / "mocker__agg.yaml", admission=False).graphs[0]
    compiled: list[Any] = []
    monkeypatch.setattr(kube, "_validator", lambda *key: compiled.append(key[2]))
    kube.validate(type(dgd), dgd.to_manifest())
    matched = [p for p in kube.kube_patterns(type(dgd)) if list(kube._matches(dgd.to_manifest(), p))]
    assert compiled == matched and len(matched) < len(kube.kube_patterns(type(dgd)))


# Documents with and without values that have no JSON form, and with nulls in mappings or lists only.
_JSON_DOCS: list[Any] = [
    {"a": [1, 2.5, {"b": None, "c": True}], "d": "x"},
    {"a": [1, {"b": float("nan")}]},
    {"a": {1: "x", "y": [float("inf")]}},
    {"a": [{"b": {"c": {1, 2}}}], "d": b"bytes"},
    [None, [None, {"a": []}]],
    [None, {"a": [{"b": None}]}],
    {"a": (1, 2)},
    float("-inf"),
    "text",
    None,
]


def test_json_problems_fast_path_is_the_walk_with_paths() -> None:
    from dynamo_infra.api import base

    docs = [*_JSON_DOCS, *(d for d, _, _ in _corpus_documents())]
    for doc in docs:
        assert base.json_problems(doc) == base._json_problems(doc, ())
        assert base.json_problems(doc, ("spec",)) == base._json_problems(doc, ("spec",))
    assert any(base.json_problems(d) for d in _JSON_DOCS)


def test_has_null_counts_mapping_nulls_not_list_items() -> None:
    def walk(data: Any) -> bool:
        if isinstance(data, dict):
            return any(v is None or walk(v) for v in data.values())
        return isinstance(data, list) and any(walk(v) for v in data)

    for doc in [*_JSON_DOCS, *(d for d, _, _ in _corpus_documents())]:
        assert kube._has_null(doc) == walk(doc)
    assert not kube._has_null([None, [None, {"a": []}]])
    assert kube._has_null([None, {"a": [{"b": None}]}])


def _stored_the_long_way(dcd: dict[str, Any]) -> dict[str, Any]:
    """as_stored by the text: Go's JSON parsed, normalised, defaulted, then ordered like the DCD."""
    from dynamo_infra.render.go import gojson
    from dynamo_infra.render.workloads import dcd as dcds

    encoder, root = gojson.default_encoder(), gojson.go_types().root
    spec = encoder.strip_empty_structs(json.loads(encoder.marshal(dcd["spec"], root)), root)
    stored = {**dcd, "metadata": {**copy_json(dcd["metadata"]), "finalizers": [dcds.DCD_FINALIZER]}}
    stored["spec"] = spec
    schema = kube.crd_schema(dcds.DCD_KIND, "v1beta1")
    assert schema is not None
    kube.apply_defaults(stored, schema)
    ordered: dict[str, Any] = gojson.ordered_like(dcd, stored)
    return ordered


def test_stored_dcd_is_the_text_way_defaulted_and_ordered() -> None:
    from dynamo_infra.render import render_graph
    from dynamo_infra.render.graph import generated_dcds, graph_context, graph_worker_hash
    from dynamo_infra.render.workloads.dcd import DCD_API_VERSION, DCD_KIND, as_stored

    # A default filling a key the DCD has but Go leaves out (`protocol: ""`) goes back to its place.
    port_first = {
        "apiVersion": DCD_API_VERSION,
        "kind": DCD_KIND,
        "metadata": {"name": "g-w", "namespace": "n", "labels": {"b": "1", "a": "2"}},
        "spec": {
            "replicas": 1,
            "podTemplate": {
                "spec": {"containers": [{"ports": [{"protocol": "", "containerPort": 80}], "name": "main"}]}
            },
        },
    }
    stored = as_stored(port_first)
    assert list(stored["spec"]["podTemplate"]["spec"]["containers"][0]["ports"][0]) == [
        "protocol",
        "containerPort",
    ]
    dcds = [port_first]
    for path in sorted((CORPUS / "graphs").glob("*/*.yaml"))[:60]:
        for dgd in load_yaml(path, admission=False).graphs:
            try:
                render_graph(dgd)
            except Exception:  # noqa: BLE001 - graphs the default options refuse have no DCDs to compare
                continue
            g = graph_context(dgd, ClusterOptions())
            dcds.extend(generated_dcds(g, graph_worker_hash(g)).values())
    assert len(dcds) > 20
    for dcd in dcds:
        assert json.dumps(as_stored(dcd)) == json.dumps(_stored_the_long_way(dcd))


def test_served_hub_converts_from_the_defaulting_dump_as_from_the_model() -> None:
    from dynamo_infra.api import conversion, v1beta1
    from dynamo_infra.api.loader import served_hub, to_hub, with_server_defaults

    for path in sorted((CORPUS / "graphs").glob("*/*.yaml"))[:60]:
        for dgd in load_yaml(path, admission=False).graphs:
            long_way = with_server_defaults(to_hub(with_server_defaults(dgd)))
            served = served_hub(dgd)
            assert served.model_dump_json() == long_way.model_dump_json()
            assert json.dumps(served.to_wire()) == json.dumps(long_way.to_wire())
            if not isinstance(dgd, v1beta1.DynamoGraphDeployment):
                given = conversion.convert_to(dgd, v1beta1.DynamoGraphDeployment, wire=dgd.to_wire())
                assert given == conversion.convert_to(dgd, v1beta1.DynamoGraphDeployment)
