"""JSON Schema export for editors, and the CRD schemas shipped with the package.

python -m dynamo_infra.api.schema [--out DIR]          JSON Schemas of every kind/version (editor completion)
python -m dynamo_infra.api.schema --update-from DIR    refresh dynamo_infra/api/schemas/ from the CRD YAMLs in DIR

The shipped schemas are Dynamo 1.6's (`python -m tools.dynamo_crds_16` derives the CRDs and writes
them); DynamoCheckpoint's and the snapshot kinds' stay those of the parity pin (images < 1.5).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

# Largest schema file we ship; the CRDs' descriptions are pruned to stay under it.
MAX_SCHEMA_BYTES = 2 * 1024 * 1024
SCHEMA_DIR = Path(__file__).parent / "schemas"
# Keys of the CRD schemas that validation does not need.
_PRUNED_KEYS = frozenset({"description", "x-kubernetes-validations"})
# Integer formats of the Kubernetes schemas, checked as ranges.
_INT_BITS = {"int32": 32, "int64": 64}


def strict_openapi(node: Any) -> Any:
    """A CRD OpenAPI schema as a JSON Schema: descriptions pruned, `nullable` honoured and unknown
    keys rejected where the CRD does not preserve them (as `kubectl apply --validate=strict`)."""
    if isinstance(node, list):
        return [strict_openapi(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: strict_openapi(v) for k, v in node.items() if k not in _PRUNED_KEYS}
    bits = _INT_BITS.get(str(out.get("format")))
    if out.get("type") == "integer" and bits:
        out.setdefault("minimum", -(2 ** (bits - 1)))
        out.setdefault("maximum", 2 ** (bits - 1) - 1)
    if out.get("nullable") and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    if (
        out.get("type") == "object"
        and "properties" in out
        and "additionalProperties" not in out
        and not out.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def update_from(crd_dir: Path, out_dir: Path = SCHEMA_DIR) -> list[Path]:
    """Write `<Kind>.<version>.json` for every Dynamo CRD version found in `crd_dir`."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crds = [yaml.load(f.read_text(encoding="utf-8"), Loader=loader) for f in sorted(crd_dir.glob("*.yaml"))]
    return write_schemas(crds, out_dir)


def write_schemas(crds: list[Any], out_dir: Path = SCHEMA_DIR) -> list[Path]:
    """Write `<Kind>.<version>.json` for every version of the CustomResourceDefinitions in `crds`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for crd in crds:
        if not isinstance(crd, dict) or crd.get("kind") != "CustomResourceDefinition":
            continue
        kind = crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schema = strict_openapi(version["schema"]["openAPIV3Schema"])
            path = out_dir / f"{kind}.{version['name']}.json"
            text = json.dumps(schema, separators=(",", ":"), sort_keys=True)
            if len(text.encode()) > MAX_SCHEMA_BYTES:
                raise SystemExit(f"{path.name}: {len(text)} bytes is over the {MAX_SCHEMA_BYTES} byte limit")
            path.write_text(text + "\n", encoding="utf-8")
            written.append(path)
    return written


def editor_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schema (from the pydantic models) of every kind and version, keyed `Kind.version`."""
    from dynamo_infra.api.loader import KINDS

    out: dict[str, dict[str, Any]] = {}
    for (api_version, kind), model in sorted(KINDS.items()):
        schema = model.model_json_schema(by_alias=True, mode="validation")
        schema["title"] = f"{kind} ({api_version})"
        out[f"{kind}.{api_version.split('/')[-1]}"] = schema
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dynamo_infra.api.schema", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--update-from", type=Path, help="CRD folder to refresh the shipped schemas from")
    parser.add_argument("--out", type=Path, help="write one <Kind>.<version>.schema.json per kind here")
    args = parser.parse_args(argv)
    if args.update_from:
        for p in update_from(args.update_from):
            print(f"{p} ({p.stat().st_size} bytes)")
        return 0
    schemas = editor_schemas()
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, schema in schemas.items():
            (args.out / f"{name}.schema.json").write_text(
                json.dumps(schema, indent=2) + "\n", encoding="utf-8"
            )
            print(args.out / f"{name}.schema.json")
    else:
        json.dump(schemas, sys.stdout, indent=2)
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
