"""Derive the Dynamo 1.6 CRDs from the upstream CRDs of 2026-08-21 (1.5.0 development).

The full 1.6-era CRD files are not at hand; the Aug-21 ones are (byte for byte in
tests/data/corpus/crds/dynamo-2026-08-21). This adds exactly what the 1.6-era Go types add after
Aug-21 (michaelfeil/dynamo `deploy/operator/api/v1beta1/{common,dynamocomponentdeployment_types,
dynamographdeployment_types,lpx_types}.go` at 80b177f2 / eaf61940 / 86e34d1e, and `api/v1alpha1/`
at 80b177f2):

- component `roles[]` (list map keyed by `name`, at most 2): `name`, `replicas` (≥ 1),
  `providerOverride` (DGD only: the standalone DCD schema omits provider overrides) and
  `podTemplate` (the component podTemplate's schema: the same Go type, PodTemplateSpec);
- component `lpx` {buildId, scheduling.attemptDeadlineSeconds} and `type` value `lpx`;
- `multinode` keeps only `nodeCount` (its Aug-21 `leader`/`worker` provider overrides became roles);
- the component CEL rules of 1.6 (type immutable, LPX rules, role pod templates), the graph's
  LPX restart rule and the standalone-DCD LPX rule;
- replica status `servedModelName`, `runtimeComponentName`, `gpuPowerLimitWatts` (≥ 1),
  `gpusPerEngine`, `gpusPerReplica` (≥ 0) in DGD and DCD status, both versions.

Every other CRD is copied byte for byte. The install set (`stacks/crds/dynamo/`) gets the files it
holds; the package's schemas (`dynamo_infra/api/schemas/`) are refreshed from all of them.

python -m tools.dynamo_crds_16 [--src DIR] [--stacks DIR] [--schemas DIR]
"""

from __future__ import annotations

import argparse
import copy
import tempfile
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "tests" / "data" / "corpus" / "crds" / "dynamo-2026-08-21"
STACKS = REPO / "stacks" / "crds" / "dynamo"
DGD_FILE = "nvidia.com_dynamographdeployments.yaml"
DCD_FILE = "nvidia.com_dynamocomponentdeployments.yaml"
# The CRD files of the platform's install set (the others only feed the package's schemas).
INSTALLED = (
    DGD_FILE,
    "nvidia.com_dynamographdeploymentscalingadapters.yaml",
    "nvidia.com_dynamomodels.yaml",
    "nvidia.com_dynamoworkermetadatas.yaml",
)
# The comment lines every upstream CRD file starts with.
HEADER = (
    "# SPDX-FileCopyrightText: Copyright (c) 2024-2026 NVIDIA CORPORATION & AFFILIATES. All rights reserved.\n"
    "# SPDX-License-Identifier: Apache-2.0\n\n---\n"
)
DNS_LABEL = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
MAX_ROLES = 2
# Largest LPX attempt deadline (seconds): what fits a Go time.Duration.
MAX_LPX_DEADLINE_SECONDS = 9223372036


def _int(minimum: int, fmt: str, description: str) -> dict[str, Any]:
    return {"description": description, "format": fmt, "minimum": minimum, "type": "integer"}


def _string(description: str) -> dict[str, Any]:
    return {"description": description, "type": "string"}


# Replica status fields the 1.6 planner reads (ComponentReplicaStatus / ServiceReplicaStatus).
STATUS_FIELDS: dict[str, dict[str, Any]] = {
    "gpuPowerLimitWatts": _int(
        1, "int64", "gpuPowerLimitWatts is the per-GPU power limit propagated to the component's Pods."
    ),
    "gpusPerEngine": _int(0, "int64", "gpusPerEngine is the number of GPUs of one inference engine."),
    "gpusPerReplica": _int(0, "int64", "gpusPerReplica is the GPU allocation one more replica adds."),
    "runtimeComponentName": _string("runtimeComponentName is an explicit Dynamo runtime component identity."),
    "servedModelName": _string("servedModelName is the primary model identity the component serves."),
}

LPX_SCHEMA: dict[str, Any] = {
    "description": "lpx holds LPX integration configuration. Only meaningful when the type is lpx.",
    "properties": {
        "buildId": {
            "description": "buildId references the immutable model build.",
            "minLength": 1,
            "type": "string",
        },
        "scheduling": {
            "description": "scheduling configures this component's LPX scheduling attempts.",
            "properties": {
                "attemptDeadlineSeconds": {
                    **_int(
                        1, "int64", "attemptDeadlineSeconds limits how long each attempt may remain pending."
                    ),
                    "maximum": MAX_LPX_DEADLINE_SECONDS,
                }
            },
            "type": "object",
        },
    },
    "required": ["buildId"],
    "type": "object",
}


def _rule(rule: str, message: str) -> dict[str, str]:
    return {"message": message, "rule": rule}


def component_rules(type_key: str, beta: bool) -> list[dict[str, str]]:
    """The 1.6 CEL rules of a component (its type field is `type` in v1beta1, `componentType` in v1alpha1)."""
    t, lpx = type_key, f"has(self.{type_key}) && self.{type_key} == 'lpx'"
    rules = []
    if beta:
        rules.append(
            _rule(
                "!has(self.eppConfig) || (has(self.type) && self.type == 'epp')",
                "eppConfig may only be set when type is epp",
            )
        )
    rules += [
        _rule(
            f"!has(self.minAvailable) || (!has(self.replicas) && {lpx}) || (has(self.replicas) && self.replicas == 0)"
            " || self.minAvailable <= (has(self.replicas) ? self.replicas : 1)",
            "minAvailable must be less than or equal to replicas unless replicas is 0",
        ),
        _rule(
            "!has(oldSelf.minAvailable) || (has(self.minAvailable) && self.minAvailable == oldSelf.minAvailable)",
            "minAvailable is immutable after creation",
        ),
        _rule(
            f"!has(oldSelf.{t}) || (has(self.{t}) && self.{t} == oldSelf.{t})",
            f"{t} is immutable after it is set",
        ),
        _rule(f"!has(self.lpx) || ({lpx})", f"lpx may only be set when {t} is lpx"),
        _rule(f"!({lpx}) || has(self.lpx)", f"lpx is required when {t} is lpx"),
    ]
    if beta:
        rules.append(_rule(f"!({lpx}) || !has(self.podTemplate)", "LPX Pod templates belong to roles"))
    rules.append(
        _rule(
            f"!({lpx} && has(self.replicas) && self.replicas < 1)",
            f"replicas must be positive when {t} is lpx",
        )
    )
    if beta:
        rules += [
            _rule(
                f"!({lpx} && has(self.scalingAdapter))", "scalingAdapter is not supported when type is lpx"
            ),
            _rule(
                f"({lpx}) || !has(self.roles) || !self.roles.exists(r, has(r.podTemplate))"
                " || (!has(self.podTemplate) && self.roles.all(r, has(r.podTemplate)))",
                "use either component podTemplate or complete role podTemplates",
            ),
        ]
    else:
        rules.append(
            _rule(
                f"!({lpx} && has(self.scalingAdapter) && has(self.scalingAdapter.enabled)"
                " && self.scalingAdapter.enabled == true)",
                "scalingAdapter is not supported when componentType is lpx",
            )
        )
    return rules


def restart_rule(list_rule: str) -> dict[str, str]:
    return _rule(
        f"!has(self.restart) || {list_rule} || (has(self.restart.strategy) && has(self.restart.strategy.type)"
        " && self.restart.strategy.type == 'Parallel')",
        "spec.restart.strategy.type must be Parallel when the graph contains LPX components",
    )


def roles_schema(pod_template: dict[str, Any], provider_override: dict[str, Any] | None) -> dict[str, Any]:
    props: dict[str, Any] = {
        "name": {
            "description": "name identifies the role within the enclosing component.",
            "maxLength": 63,
            "minLength": 1,
            "pattern": DNS_LABEL,
            "type": "string",
        },
        "podTemplate": {
            **copy.deepcopy(pod_template),
            "description": "podTemplate defines the Pod configuration for this role.",
        },
        "replicas": _int(
            1, "int32", "replicas is the logical cardinality of this role in one component instance."
        ),
    }
    if provider_override is not None:
        props["providerOverride"] = {
            **copy.deepcopy(provider_override),
            "description": "providerOverride configures the provider workload unit generated for this role.",
        }
    return {
        "description": "roles expose the named Pod-producing parts inside a compound component.",
        "items": {
            "description": "ComponentRoleSpec configures one named Pod-producing role inside a compound component.",
            "properties": dict(sorted(props.items())),
            "required": ["name"],
            "type": "object",
        },
        "maxItems": MAX_ROLES,
        "type": "array",
        "x-kubernetes-list-map-keys": ["name"],
        "x-kubernetes-list-type": "map",
    }


def derive_component(
    comp: dict[str, Any], pod_template: dict[str, Any], *, beta: bool, standalone: bool
) -> None:
    """A component schema (DGD entry or DCD spec), in place, as 1.6 has it."""
    props = comp["properties"]
    type_key = "type" if beta else "componentType"
    multinode = props["multinode"]["properties"]
    for role in ("leader", "worker"):
        multinode.pop(role, None)
    override = None if standalone else props.get("providerOverride")
    props["roles"] = roles_schema(pod_template, override)
    props["lpx"] = copy.deepcopy(LPX_SCHEMA)
    if beta and "lpx" not in props["type"]["enum"]:
        props["type"]["enum"] = [*props["type"]["enum"], "lpx"]
    comp["properties"] = dict(sorted(props.items()))
    rules = component_rules(type_key, beta)
    if standalone:
        rules.insert(
            0,
            _rule(
                f"!(has(self.{type_key}) && self.{type_key} == 'lpx')",
                "standalone LPX DynamoComponentDeployments are not supported; use DynamoGraphDeployment",
            ),
        )
    comp["x-kubernetes-validations"] = rules


def add_status_fields(replica_status: dict[str, Any]) -> None:
    replica_status["properties"] = dict(
        sorted({**replica_status["properties"], **copy.deepcopy(STATUS_FIELDS)}.items())
    )


def _versions(crd: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {v["name"]: v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"]}


def derive_dgd(crd: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(crd)
    schemas = _versions(out)
    beta_spec = schemas["v1beta1"]["properties"]["spec"]
    pod_template = copy.deepcopy(beta_spec["properties"]["components"]["items"]["properties"]["podTemplate"])
    for version, schema in schemas.items():
        beta = version == "v1beta1"
        spec = schema["properties"]["spec"]
        field = "components" if beta else "services"
        entries = spec["properties"][field]
        derive_component(
            entries["items" if beta else "additionalProperties"], pod_template, beta=beta, standalone=False
        )
        exists = (
            "!has(self.components) || !self.components.exists(c, has(c.type) && c.type == 'lpx')"
            if beta
            else "!has(self.services) || !self.services.exists(name, has(self.services[name].componentType)"
            " && self.services[name].componentType == 'lpx')"
        )
        spec["x-kubernetes-validations"] = [*spec.get("x-kubernetes-validations", []), restart_rule(exists)]
        add_status_fields(schema["properties"]["status"]["properties"][field]["additionalProperties"])
    return out


def derive_dcd(crd: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(crd)
    schemas = _versions(out)
    pod_template = copy.deepcopy(schemas["v1beta1"]["properties"]["spec"]["properties"]["podTemplate"])
    for version, schema in schemas.items():
        beta = version == "v1beta1"
        derive_component(schema["properties"]["spec"], pod_template, beta=beta, standalone=True)
        add_status_fields(schema["properties"]["status"]["properties"]["component" if beta else "service"])
    return out


DERIVE = {DGD_FILE: derive_dgd, DCD_FILE: derive_dcd}


class _Dumper(yaml.SafeDumper):
    """Block YAML as controller-gen writes it: sequences indented under their key, multi-line
    strings as literal blocks, no line folding."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = None
    resolved = dumper.resolve(yaml.ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
    if value == "" or resolved != "tag:yaml.org,2002:str":
        style = '"'
    elif "\n" in value and not any(c in value for c in "\t\r") and value == value.rstrip(" "):
        style = "|"
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


# Where the hand-written conversion stanza (with its comment) starts in an upstream CRD file.
CONVERSION = "\n  conversion:\n"


def dump_crd(crd: dict[str, Any], upstream: str) -> str:
    """`crd` as YAML; the upstream file's conversion stanza is kept as written (it has a comment)."""
    spec = dict(crd["spec"])
    tail = ""
    if CONVERSION in upstream:
        assert yaml.load(upstream, Loader=yaml.CSafeLoader)["spec"].get("conversion") == spec.pop(
            "conversion"
        )
        tail = upstream[upstream.index(CONVERSION) + 1 :]
    body = yaml.dump(
        {**crd, "spec": spec}, Dumper=_Dumper, sort_keys=False, width=1 << 30, allow_unicode=True
    )
    return HEADER + body + tail


def load(text: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.load(text, Loader=yaml.CSafeLoader)
    return loaded


def derived_crds(src: Path) -> dict[str, dict[str, Any]]:
    """Every CRD of `src` as 1.6 has it, by file name."""
    out = {}
    for path in sorted(src.glob("*.yaml")):
        crd = load(path.read_text(encoding="utf-8"))
        out[path.name] = DERIVE.get(path.name, copy.deepcopy)(crd)
    return out


def derive_dir(src: Path, out: Path) -> list[Path]:
    """Every CRD of `src` into `out`: the two 1.6-changed ones derived, the others byte for byte."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sorted(src.glob("*.yaml")):
        target = out / path.name
        derive = DERIVE.get(path.name)
        if derive is None:
            target.write_bytes(path.read_bytes())
        else:
            upstream = path.read_text(encoding="utf-8")
            target.write_text(dump_crd(derive(load(upstream)), upstream), encoding="utf-8")
        written.append(target)
    return written


def shipped(crd: dict[str, Any]) -> dict[str, Any]:
    """A derived CRD as the install set ships it: without its schemas' descriptions (what the platform
    installs anyway, `installable`), which keeps the 3 MB DGD CRD under the repository's 2 MB file limit."""
    from dynamo_infra.components.platform_plan import without_descriptions

    versions = [
        {
            **v,
            "schema": {
                **v["schema"],
                "openAPIV3Schema": without_descriptions(v["schema"]["openAPIV3Schema"]),
            },
        }
        for v in crd["spec"]["versions"]
    ]
    return {**crd, "spec": {**crd["spec"], "versions": versions}}


def main(argv: list[str] | None = None) -> int:
    from dynamo_infra.api.schema import SCHEMA_DIR, update_from

    parser = argparse.ArgumentParser(
        prog="python -m tools.dynamo_crds_16", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--src", type=Path, default=SRC, help="the upstream CRDs of 2026-08-21")
    parser.add_argument("--stacks", type=Path, default=STACKS, help="the platform's Dynamo install set")
    parser.add_argument("--schemas", type=Path, default=SCHEMA_DIR, help="the package's CRD schemas")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        derived = derive_dir(args.src, Path(tmp))
        for path in derived:
            if path.name in INSTALLED:
                target = args.stacks / path.name
                if path.name in DERIVE:
                    upstream = (args.src / path.name).read_text(encoding="utf-8")
                    text = dump_crd(shipped(DERIVE[path.name](load(upstream))), upstream)
                    target.write_text(text, encoding="utf-8")
                else:
                    target.write_bytes(path.read_bytes())
                print(target)
        for p in update_from(Path(tmp), args.schemas):
            print(p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
