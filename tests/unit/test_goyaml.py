"""YAML text as the operator's Go writes it (`dynamo_infra.render.go.goyaml`), and the EPP ConfigMap's
EndpointPickerConfig document.

The expected texts are what Go printed at the operator's versions (sigs.k8s.io/yaml v1.6.0, go-yaml
v2.4.3, gateway-api-inference-extension v1.2.0): `tools/goyamlref` reads one JSON case per line
(`{"mode": "json"|"epp", "value": ...}`) and prints each YAML document followed by `----`; run it
with `cd tools/goyamlref && go run .` to check a case.
"""

from __future__ import annotations

from typing import Any

import pytest

from dynamo_infra.render.components.epp import picker_config_yaml
from dynamo_infra.render.go import goyaml

# (value, what Go printed)
MARSHAL_CASES = [
    ({"k": ""}, 'k: ""\n'),
    ({"k": "y"}, 'k: "y"\n'),
    ({"k": "no"}, 'k: "no"\n'),
    ({"k": "on"}, 'k: "on"\n'),
    ({"k": "true"}, 'k: "true"\n'),
    ({"k": "null"}, 'k: "null"\n'),
    ({"k": "~"}, 'k: "~"\n'),
    ({"k": "1"}, 'k: "1"\n'),
    ({"k": "-1"}, 'k: "-1"\n'),
    ({"k": "0x1F"}, 'k: "0x1F"\n'),
    ({"k": "017"}, 'k: "017"\n'),
    ({"k": "08"}, 'k: "08"\n'),
    ({"k": "1_000"}, 'k: "1_000"\n'),
    ({"k": "1e3"}, 'k: "1e3"\n'),
    ({"k": ".5"}, 'k: ".5"\n'),
    ({"k": "+.5"}, 'k: "+.5"\n'),
    ({"k": "2024-01-01"}, 'k: "2024-01-01"\n'),
    ({"k": "2024-13-01"}, "k: 2024-13-01\n"),
    ({"k": "1:20"}, 'k: "1:20"\n'),
    ({"k": "<<"}, "k: <<\n"),
    ({"k": "a: b"}, "k: 'a: b'\n"),
    ({"k": "#x"}, "k: '#x'\n"),
    ({"k": "- x"}, "k: '- x'\n"),
    ({"k": "'x"}, "k: '''x'\n"),
    ({"k": "a\nb"}, "k: |-\n  a\n  b\n"),
    ({"k": "a\nb\n"}, "k: |\n  a\n  b\n"),
    ({"k": "a\n\n"}, "k: |+\n  a\n\n"),
    ({"k": "ü"}, "k: ü\n"),
    ({"k": "v1"}, "k: v1\n"),
    (
        {
            "k": "word word word word word word word word word word word word word word word word word word word word"
        },
        "k: word word word word word word word word word word word word word word word word\n  word word word word\n",
    ),
    (
        {"b": 1, "a": 2, "a10": 1, "a9": 2, "a09": 3, "A": 1, "_x": 1, "1": 1, "10": 2, "9": 3},
        '_x: 1\n"1": 1\n"9": 3\n"10": 2\nA: 1\na: 2\na9: 2\na09: 3\na10: 1\nb: 1\n',
    ),
    (
        {
            "f": [
                0.5,
                1.0,
                1e20,
                1.5e-07,
                0.0001,
                123456.7,
                1234567.5,
                9223372036854775808,
                10000000000000000000000000,
            ]
        },
        "f:\n- 0.5\n- 1\n- 1e+20\n- 1.5e-07\n- 0.0001\n- 123456.7\n- 1.2345675e+06\n- 9223372036854776000\n- 1e+25\n",
    ),
    (
        {"e": {}, "l": [], "n": None, "t": True, "nested": {"x": [{"a": 1, "b": [1, 2]}, [3, [4]]]}},
        'e: {}\nl: []\n"n": null\nnested:\n  x:\n  - a: 1\n    b:\n    - 1\n    - 2\n  - - 3\n    - - 4\nt: true\n',
    ),
]
PICKER_CASES = [
    (
        {
            "plugins": [
                {"type": "single-profile-handler"},
                {"name": "picker", "type": "max-score-picker", "parameters": {"maxNumOfEndpoints": 2}},
            ],
            "schedulingProfiles": [
                {"name": "default", "plugins": [{"pluginRef": "picker"}, {"pluginRef": "x", "weight": 3}]}
            ],
        },
        'apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- name: ""\n  parameters: null\n  type: single-profile-handler\n- name: picker\n  parameters:\n    maxNumOfEndpoints: 2\n  type: max-score-picker\nschedulingProfiles:\n- name: default\n  plugins:\n  - pluginRef: picker\n    weight: null\n  - pluginRef: x\n    weight: 3\n',
    ),
    (
        {},
        "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins: null\nschedulingProfiles: null\n",
    ),
    (
        {
            "plugins": [{"type": "a"}],
            "schedulingProfiles": [{"name": "p", "plugins": []}],
            "featureGates": ["dataLayer"],
            "saturationDetector": {},
        },
        'apiVersion: inference.networking.x-k8s.io/v1alpha1\nfeatureGates:\n- dataLayer\nkind: EndpointPickerConfig\nplugins:\n- name: ""\n  parameters: null\n  type: a\nsaturationDetector:\n  metricsStalenessThreshold: 0s\nschedulingProfiles:\n- name: p\n  plugins: []\n',
    ),
    (
        {
            "plugins": [{"type": "a"}],
            "schedulingProfiles": [{"name": "p"}],
            "featureGates": [],
            "saturationDetector": {
                "queueDepthThreshold": 5,
                "kvCacheUtilThreshold": 0.8,
                "metricsStalenessThreshold": "90s",
            },
        },
        'apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- name: ""\n  parameters: null\n  type: a\nsaturationDetector:\n  kvCacheUtilThreshold: 0.8\n  metricsStalenessThreshold: 1m30s\n  queueDepthThreshold: 5\nschedulingProfiles:\n- name: p\n  plugins: null\n',
    ),
    (
        {
            "apiVersion": "x/v9",
            "kind": "Other",
            "unknown": 1,
            "plugins": [{"type": "a", "extra": 2}],
            "schedulingProfiles": [{"name": "on", "plugins": [{"pluginRef": "1.5"}]}],
        },
        'apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n- name: ""\n  parameters: null\n  type: a\nschedulingProfiles:\n- name: "on"\n  plugins:\n  - pluginRef: "1.5"\n    weight: null\n',
    ),
]


@pytest.mark.parametrize(("value", "expected"), MARSHAL_CASES)
def test_marshal_as_go(value: Any, expected: str) -> None:
    assert goyaml.marshal(value) == expected


@pytest.mark.parametrize(("config", "expected"), PICKER_CASES)
def test_picker_config_as_the_operator_writes_it(config: Any, expected: str) -> None:
    assert picker_config_yaml(config) == expected


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.5, "0.5"), (1e-7, "1e-07"), (1234567.0, "1.234567e+06"), (123456.0, "123456"), (-0.25, "-0.25")],
)
def test_go_float_format(value: float, text: str) -> None:
    assert goyaml.format_float(value) == text


@pytest.mark.parametrize(
    ("duration", "text"),
    [("0", "0s"), ("90s", "1m30s"), ("1h", "1h0m0s"), ("1500us", "1.5ms"), ("0.5s", "500ms"), ("-3s", "-3s")],
)
def test_go_duration(duration: str, text: str) -> None:
    assert goyaml.format_duration(goyaml.parse_duration(duration)) == text


@pytest.mark.parametrize("bad", ["", "5", "1x", "s", "1.s."])
def test_go_duration_refuses_what_go_refuses(bad: str) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        goyaml.parse_duration(bad)
