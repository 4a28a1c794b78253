"""The operator's merge rules (mergo.Merge WithOverride, env merged by name)."""

from __future__ import annotations

from dynamo_infra.api.manifest import Manifest


def merge_env(base: list[Manifest] | None, override: list[Manifest] | None) -> list[Manifest]:
    """Env vars merged by name (override wins), sorted by name, as the operator's MergeEnvs."""
    merged: dict[str, Manifest] = {e["name"]: e for e in base or []}
    merged.update({e["name"]: e for e in override or []})
    return [merged[k] for k in sorted(merged)]


def merge_override(dst: Manifest, src: Manifest) -> Manifest:
    """mergo.Merge(dst, src, WithOverride): non-empty source values replace, maps merge deeply."""
    out = dict(dst)
    for k, v in src.items():
        if v is None or v == {} or v == [] or v == "":
            continue
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge_override(out[k], v)
        else:
            out[k] = v
    return out
