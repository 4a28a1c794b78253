"""Go's encoding/json for the operator's types: hand-checked cases (each expected text is what Go's
json.Marshal writes after json.Unmarshal of the input into the same Go type, k8s.io/api v0.36.2),
and the type table the serialiser reads."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from dynamo_infra.render.go import gojson
from tools import gojson_table

SPEC = gojson.go_types().root
CONTAINER = "core/v1.Container"
POD_SPEC = "core/v1.PodSpec"
OBJECT_META = "meta/v1.ObjectMeta"
RESOURCES = "core/v1.ResourceRequirements"
PROBE = "core/v1.Probe"
REPO = Path(__file__).resolve().parents[2]

CASES: list[tuple[str, str, Any, str]] = [
    (
        "struct fields in Go declaration order, whatever the manifest's order",
        CONTAINER,
        {"image": "img", "name": "main"},
        '{"name":"main","image":"img","resources":{}}',
    ),
    (
        "omitempty drops empty strings and empty lists; an empty value struct stays",
        CONTAINER,
        {"name": "main", "image": "", "args": []},
        '{"name":"main","resources":{}}',
    ),
    (
        "a pointer to zero is not empty; a pointer to an empty struct is kept",
        SPEC,
        {"name": "w", "replicas": 0, "scalingAdapter": {}},
        '{"name":"w","replicas":0,"scalingAdapter":{}}',
    ),
    (
        "an empty pod template: metadata {} (value struct), creationTimestamp omitted (omitzero), "
        "containers null (no omitempty, nil slice)",
        SPEC,
        {"name": "w", "podTemplate": {}},
        '{"name":"w","podTemplate":{"metadata":{},"spec":{"containers":null}}}',
    ),
    ("a nil slice without omitempty is null", POD_SPEC, {}, '{"containers":null}'),
    ("an empty slice without omitempty is []", POD_SPEC, {"containers": []}, '{"containers":[]}'),
    (
        "quantities in canonical form, map keys sorted",
        RESOURCES,
        {"limits": {"nvidia.com/gpu": 1, "memory": "1024Mi", "cpu": "1000m"}, "requests": {"cpu": 0.5}},
        '{"limits":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":"1"},"requests":{"cpu":"500m"}}',
    ),
    (
        "map keys in byte order; a null creationTimestamp is the zero time, omitted",
        OBJECT_META,
        {"labels": {"b": "2", "a": "1", "B": "0"}, "creationTimestamp": None},
        '{"labels":{"B":"0","a":"1","b":"2"}}',
    ),
    (
        "a time is written in UTC, RFC 3339",
        OBJECT_META,
        {"creationTimestamp": "2024-05-01T10:00:00+02:00"},
        '{"creationTimestamp":"2024-05-01T08:00:00Z"}',
    ),
    (
        "IntOrString keeps its kind",
        PROBE,
        {"httpGet": {"port": 8080, "path": "/health"}, "tcpSocket": {"port": "http"}, "periodSeconds": 10},
        '{"httpGet":{"path":"/health","port":8080},"tcpSocket":{"port":"http"},"periodSeconds":10}',
    ),
    (
        "the Dynamo fields in their Go order, an empty experimental feature kept",
        SPEC,
        {
            "name": "w",
            "sharedMemorySize": "8Gi",
            "multinode": {"nodeCount": 2},
            "experimental": {"failover": {}},
        },
        '{"name":"w","multinode":{"nodeCount":2},"sharedMemorySize":"8Gi","experimental":{"failover":{}}}',
    ),
]


@pytest.mark.parametrize(("why", "type_", "value", "expected"), CASES, ids=[c[0][:40] for c in CASES])
def test_marshal_writes_what_go_writes(why: str, type_: str, value: Any, expected: str) -> None:
    assert gojson.default_encoder().marshal(value, type_) == expected, why


def test_strings_are_html_safe_and_escaped_as_go_does() -> None:
    env = {"name": "main", "env": [{"name": "A", "value": "a<b>&c\u2028\n\t\b\x01"}]}
    assert gojson.default_encoder().marshal(env, CONTAINER) == (
        '{"name":"main","env":[{"name":"A","value":"a\\u003cb\\u003e\\u0026c\\u2028\\n\\t\\b\\u0001"}],'
        '"resources":{}}'
    )
    assert gojson.quote('"\\é\ud800') == '"\\"\\\\é\\ufffd"'


def test_a_value_of_the_wrong_kind_is_an_error() -> None:
    with pytest.raises(gojson.GoJSONError, match=r"\.name"):
        gojson.default_encoder().marshal({"name": 5}, CONTAINER)
    with pytest.raises(gojson.GoJSONError, match="not a list"):
        gojson.default_encoder().marshal({"containers": {}}, POD_SPEC)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1.0, "1"),
        (0.5, "0.5"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (-0.0, "-0"),
    ],
)
def test_floats_as_go_writes_them(value: float, expected: str) -> None:
    assert gojson.go_float(value) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("90s", "1m30s"),
        ("1.5h", "1h30m0s"),
        ("100us", "100µs"),
        ("1500ms", "1.5s"),
        ("0", "0s"),
        ("-2m", "-2m0s"),
    ],
)
def test_durations_as_go_writes_them(text: str, expected: str) -> None:
    assert gojson.format_duration(gojson.parse_duration(text)) == expected


def test_v1beta1_normaliser_drops_empty_value_structs_only() -> None:
    spec = {
        "name": "w",
        "podTemplate": {"metadata": {}, "spec": {"containers": [{"name": "main", "resources": {}}]}},
        "scalingAdapter": {},
    }
    assert gojson.default_encoder().strip_empty_structs(spec, SPEC) == {
        "name": "w",
        "podTemplate": {"spec": {"containers": [{"name": "main"}]}},
        "scalingAdapter": {},
    }
    assert gojson.v1beta1_wire(
        {"name": "w", "podTemplate": {"spec": {"containers": [{"name": "main"}]}}}
    ) == {
        "name": "w",
        "podTemplate": {"spec": {"containers": [{"name": "main"}]}},
    }


def test_table_is_generated_from_the_parity_pin() -> None:
    types = gojson.go_types()
    assert types.sources["github.com/ai-dynamo/dynamo/deploy/operator"] == gojson_table.PARITY_COMMIT
    assert types.sources["k8s.io/api"] == "v0.36.2"
    assert types.root == "api/v1beta1.DynamoComponentDeploymentSpec"
    assert set(types.marshalers) <= set(gojson.MARSHALERS)
    go_mod = (REPO / "tools" / "gojsontable" / "go.mod").read_text(encoding="utf-8")
    assert re.search(r"^\s*k8s\.io/api v0\.36\.2\b", go_mod, re.M)
    fields = [f.name for f in types.structs["core/v1.Container"]]
    assert fields[:4] == ["name", "image", "command", "args"]


def test_every_type_the_table_names_is_known() -> None:
    types = gojson.go_types()
    scalars = {"string", "bool", "int", "float32", "float64"}
    for struct, fields in types.structs.items():
        for f in fields:
            base = re.sub(r"^(\*|\[\]|map\[string\])+", "", f.type)
            assert base in scalars | set(types.structs) | set(gojson.MARSHALERS), (
                f"{struct}.{f.name}: {f.type}"
            )


@pytest.mark.skipif(
    not os.environ.get("DYNAMO_OPERATOR_GIT"),
    reason="set DYNAMO_OPERATOR_GIT to an ai-dynamo/dynamo git dir (needs Go and the module proxy)",
)
def test_table_is_what_the_generator_writes() -> None:
    text = gojson_table.generate(Path(os.environ["DYNAMO_OPERATOR_GIT"]))
    assert text == gojson.TABLE_PATH.read_text(encoding="utf-8")


def _text_way(value: Any, type_: str) -> Any:
    encoder = gojson.default_encoder()
    return encoder.strip_empty_structs(json.loads(encoder.marshal(value, type_)), type_)


WIRE_VALUES: list[tuple[str, Any]] = [
    *((type_, value) for _, type_, value, _ in CASES),
    (CONTAINER, {"name": "m\ud800", "env": [{"name": "A", "value": "<&>\u2028\x01"}], "resources": {}}),
    (SPEC, {"replicas": 2.0, "annotations": {"z": "1", "b\udc00": "2", "a": "3"}, "scalingAdapter": {}}),
    (SPEC, {"resources": {"limits": {"gpu": "1", "cpu": 0.5}}, "podTemplate": {"metadata": {}}}),
    (POD_SPEC, {"containers": [{"name": "m", "ports": [{"containerPort": 8.0}]}], "overhead": {}}),
    (PROBE, {"httpGet": {"port": "http"}, "terminationGracePeriodSeconds": 0}),
]


@pytest.mark.parametrize(("type_", "value"), WIRE_VALUES)
def test_wire_value_is_the_parsed_marshal_text_normalised(type_: str, value: Any) -> None:
    got = gojson.default_encoder().wire_value(value, type_)
    # Same values and the same key order.
    assert json.dumps(got) == json.dumps(_text_way(value, type_))


def test_wire_value_of_a_misfit_raises_what_marshal_raises() -> None:
    with pytest.raises(gojson.GoJSONError, match=r"^\.name: 5 is not a str$"):
        gojson.default_encoder().wire_value({"name": 5}, CONTAINER)
    with pytest.raises(gojson.GoJSONError, match=r"^\.containers\[0\]\.ports\[0\]\.containerPort: True"):
        gojson.default_encoder().wire_value({"containers": [{"ports": [{"containerPort": True}]}]}, POD_SPEC)


@pytest.mark.parametrize(("type_", "value"), WIRE_VALUES)
def test_wire_value_keeping_order_is_the_document_ordered_like_the_value(type_: str, value: Any) -> None:
    got = gojson.default_encoder().wire_value(value, type_, keep_order=True)
    assert json.dumps(got) == json.dumps(gojson.ordered_like(value, _text_way(value, type_)))


def test_wire_value_keeps_the_values_key_order() -> None:
    container = {"resources": {}, "image": "i", "env": [{"value": "v", "name": "A"}], "name": "m"}
    got = gojson.default_encoder().wire_value(container, CONTAINER, keep_order=True)
    assert list(got) == ["image", "env", "name"]
    assert list(got["env"][0]) == ["value", "name"]
    template = {"metadata": {"labels": {"b": "1", "a": "2"}}, "spec": {"containers": []}}
    spec = gojson.v1beta1_wire({"podTemplate": template, "name": "w"}, keep_order=True)
    assert list(spec)[:2] == ["podTemplate", "name"]
    assert list(spec["podTemplate"]["metadata"]["labels"]) == ["b", "a"]
