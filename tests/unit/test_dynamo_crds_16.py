"""tools/dynamo_crds_16.py adds exactly the 1.6 fields to the upstream CRDs of 2026-08-21 and keeps
everything else (the shipped files and schemas are its output: test_stacks.py, test_api_models.py)."""

from __future__ import annotations

import functools
from typing import Any

import pytest
import yaml

from tools.dynamo_crds_16 import DCD_FILE, DGD_FILE, SRC, STATUS_FIELDS, derived_crds, dump_crd, load

# Properties the derivation adds (under a component or a replica status) and removes (multinode's).
ADDED = {"roles", "lpx", *STATUS_FIELDS}
REMOVED = {"leader", "worker"}


@functools.cache
def upstream(name: str) -> dict[str, Any]:
    return load((SRC / name).read_text(encoding="utf-8"))


@functools.cache
def derived() -> dict[str, dict[str, Any]]:
    return derived_crds(SRC)


def versions(crd: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"]}


def paths(schema: Any, at: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """Every property path of a schema, with its node less its properties/items."""
    out: dict[tuple[str, ...], Any] = {}
    if not isinstance(schema, dict):
        return out
    for key, sub in (schema.get("properties") or {}).items():
        out[(*at, key)] = {
            k: v for k, v in sub.items() if k not in ("properties", "items", "additionalProperties")
        }
        out.update(paths(sub, (*at, key)))
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            out.update(paths(schema[key], (*at, f"<{key}>")))
    return out


@pytest.mark.parametrize("name", [DGD_FILE, DCD_FILE])
def test_only_the_16_fields_change(name: str) -> None:
    for version, schema in versions(derived()[name]).items():
        before, after = paths(versions(upstream(name))[version]), paths(schema)
        added = {p for p in after.keys() - before.keys() if not any(q in ADDED for q in p)}
        removed = {p for p in before.keys() - after.keys() if not any(q in REMOVED for q in p)}
        assert (added, removed) == (set(), set()), version
        changed = {p for p in before.keys() & after.keys() if before[p] != after[p]}
        # The spec's CEL rules, and the v1beta1 type enum (`lpx`).
        type_path = ("spec", "type") if name == DCD_FILE else ("spec", "components", "<items>", "type")
        assert changed == ({("spec",), type_path} if version == "v1beta1" else {("spec",)})


def strip(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != "description"}


def _component(crd: dict[str, Any], version: str) -> dict[str, Any]:
    spec: dict[str, Any] = versions(crd)[version]["properties"]["spec"]
    if crd["spec"]["names"]["kind"] == "DynamoComponentDeployment":
        return spec
    entries = spec["properties"]["components" if version == "v1beta1" else "services"]
    comp: dict[str, Any] = entries["items" if version == "v1beta1" else "additionalProperties"]
    return comp


@pytest.mark.parametrize("name", [DGD_FILE, DCD_FILE])
@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1"])
def test_roles_multinode_lpx_and_rules(name: str, version: str) -> None:
    crd = derived()[name]
    comp = _component(crd, version)
    props = comp["properties"]
    roles = props["roles"]
    assert (roles["maxItems"], roles["x-kubernetes-list-type"], roles["x-kubernetes-list-map-keys"]) == (
        2,
        "map",
        ["name"],
    )
    role = roles["items"]["properties"]
    pod_template = _component(crd, "v1beta1")["properties"]["podTemplate"]
    # The role podTemplate is the component podTemplate's schema (the same Go type).
    assert strip(role["podTemplate"]) == strip(pod_template)
    assert role["replicas"]["minimum"] == 1 and roles["items"]["required"] == ["name"]
    # The standalone DCD schema omits provider overrides; the DGD's roles have the component's.
    standalone = name == DCD_FILE
    assert ("providerOverride" in role) is not standalone
    if not standalone:
        assert strip(role["providerOverride"]) == strip(props["providerOverride"])
    assert list(props["multinode"]["properties"]) == ["nodeCount"]
    assert props["lpx"]["required"] == ["buildId"]
    if version == "v1beta1":
        assert props["type"]["enum"][-1] == "lpx"
    messages = [r["message"] for r in comp["x-kubernetes-validations"]]
    assert "minAvailable is immutable after creation" in messages
    assert any("lpx is required" in m for m in messages)
    assert ("use either component podTemplate or complete role podTemplates" in messages) is (
        version == "v1beta1"
    )
    assert any("standalone LPX" in m for m in messages) is standalone


@pytest.mark.parametrize(("name", "at"), [(DGD_FILE, "graph"), (DCD_FILE, "component")])
@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1"])
def test_replica_status_has_the_planner_fields(name: str, at: str, version: str) -> None:
    status = versions(derived()[name])[version]["properties"]["status"]["properties"]
    if at == "graph":
        replica = status["components" if version == "v1beta1" else "services"]["additionalProperties"]
    else:
        replica = status["component" if version == "v1beta1" else "service"]
    props = replica["properties"]
    assert {k: (props[k]["type"], props[k].get("minimum")) for k in STATUS_FIELDS} == {
        "gpuPowerLimitWatts": ("integer", 1),
        "gpusPerEngine": ("integer", 0),
        "gpusPerReplica": ("integer", 0),
        "runtimeComponentName": ("string", None),
        "servedModelName": ("string", None),
    }


def test_other_crds_are_unchanged() -> None:
    for name, crd in derived().items():
        if name not in (DGD_FILE, DCD_FILE):
            assert crd == upstream(name), name


def test_dump_keeps_upstream_text_conventions() -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "xs.example.com"},
        "spec": {"names": {"shortNames": ["x"]}, "d": "two\nlines", "e": "", "t": "True", "n": "1"},
    }
    text = dump_crd(crd, "")
    assert "  names:\n    shortNames:\n      - x\n" in text
    assert "  d: |-\n    two\n    lines\n" in text and '  e: ""\n' in text and '  t: "True"\n' in text
    assert '  n: "1"\n' in text
    assert yaml.safe_load(text) == crd
