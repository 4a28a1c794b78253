"""The preservation engine of v1alpha1 ⇄ v1beta1 conversion: what the target version cannot hold.

What a native field mapping cannot carry is kept, as in the operator, in one private spec annotation
and one status annotation per kind (`nvidia.com/dgd-spec`, `nvidia.com/dgd-status`, ...): a sparse
JSON copy, in the source version's wire shape, of each field whose native round trip differs (`null`
marks a field the source did not have).

Restoring follows the operator's invariants: live fields are the source of truth; preserved data is
applied only where it is consistent with them (the restored object converts back to exactly the
live object, checked per named entry), so a stale annotation never overrides an edit.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from dynamo_infra.api.base import Resource
from dynamo_infra.api.manifest import Manifest, copy_json

R = TypeVar("R", bound=Resource)

# Fields of named entries, by key, and how each keeps them: "map" (v1alpha1 `services`) or "list"
# (v1beta1 `components`).
Keyed = dict[str, str]


def sparse_diff(orig: Manifest, back: Manifest, keyed: Keyed | None = None) -> Manifest:
    """Fields of `orig` whose native round trip (`back`) differs; `None` marks a field `orig` lacked."""
    keyed = keyed or {}
    out: Manifest = {}
    for key in sorted(set(orig) | set(back)):
        a, b = orig.get(key), back.get(key)
        if a == b:
            continue
        if key in keyed and isinstance(a, dict | list) and isinstance(b, dict | list):
            entries = _entries_diff(a, b, keyed[key])
            if entries:
                out[key] = entries
            continue
        out[key] = copy_json(a)
    return out


def _entries_diff(a: Any, b: Any, shape: str) -> Any:
    if shape == "map":
        out_map: Manifest = {}
        for name in sorted(set(a) | set(b)):
            d = sparse_diff(a.get(name) or {}, b.get(name) or {}) if name in a and name in b else a.get(name)
            if d or name not in b:
                out_map[name] = d
        return out_map
    by_name = {e.get("name"): e for e in b if isinstance(e, dict)}
    names = [str(e.get("name")) for e in a if isinstance(e, dict)]
    ordered = names != sorted(names)
    out_list: list[Manifest] = []
    for entry in a:
        other = by_name.get(entry.get("name"))
        d = sparse_diff(entry, other) if other is not None else copy_json(entry)
        d.pop("name", None)
        if d or ordered:
            out_list.append({"name": entry.get("name"), **d})
    return out_list


def overlay(base: Manifest, saved: Manifest, keyed: Keyed | None = None) -> Manifest:
    """`base` with the preserved fields of `saved` applied."""
    keyed = keyed or {}
    out: Manifest = copy_json(base)
    for key, value in saved.items():
        if value is None:
            out.pop(key, None)
        elif key in keyed and keyed[key] == "map" and isinstance(value, dict):
            entries = dict(out.get(key) or {})
            for name, d in value.items():
                if name in entries and isinstance(d, dict):
                    entries[name] = overlay(entries[name], d)
            out[key] = entries
        elif key in keyed and keyed[key] == "list" and isinstance(value, list):
            out[key] = _overlay_list(out.get(key) or [], value)
        else:
            out[key] = copy_json(value)
    return out


def _overlay_list(live: list[Manifest], saved: list[Manifest]) -> list[Manifest]:
    by_name = {e.get("name"): e for e in live}
    restored = {s.get("name"): overlay(by_name[s["name"]], s) for s in saved if s.get("name") in by_name}
    order = [s.get("name") for s in saved if s.get("name") in by_name]
    if len(order) == len(live):  # the saved entries record the full original order
        return [restored.get(n) or by_name[n] for n in order]
    return [restored.get(e.get("name")) or e for e in live]


def restore(
    native: Manifest,
    saved: Manifest | None,
    live: Manifest,
    back: Callable[[Manifest], Manifest],
    keyed: Keyed | None = None,
    live_keys: dict[str, str] | None = None,
) -> Manifest:
    """`native` with `saved` applied where the result still converts `back` to `live`.

    Tried for the whole spec, then per named entry (a stale entry is skipped), then natively.
    `live_keys` names, per `keyed` field, the field of `live` holding the same entries.
    """
    if not saved:
        return native
    candidate = overlay(native, saved, keyed)
    if back(candidate) == live:
        return candidate
    keyed = keyed or {}
    out = native
    for key, value in saved.items():
        trial = overlay(out, {key: value}, keyed)
        if key in keyed and isinstance(value, dict | list):
            entries = value.items() if isinstance(value, dict) else [(e.get("name"), e) for e in value]
            for name, entry in entries:
                one = {name: entry} if isinstance(value, dict) else [entry]
                trial = overlay(out, {key: one}, keyed)
                if _entry_consistent(back(trial), live, key, (live_keys or {}).get(key, key), name):
                    out = trial
        elif back(trial) == live:
            out = trial
    return out


def _entry_consistent(converted: Manifest, live: Manifest, key: str, live_key: str, name: Any) -> bool:
    def pick(d: Manifest) -> Any:
        coll = d.get(live_key) if live_key in d else d.get(key)
        if isinstance(coll, dict):
            return coll.get(name)
        return next((e for e in coll or [] if isinstance(e, dict) and e.get("name") == name), None)

    rest_a = {k: v for k, v in converted.items() if k not in (key, live_key)}
    rest_b = {k: v for k, v in live.items() if k not in (key, live_key)}
    return pick(converted) == pick(live) and rest_a == rest_b


def _load_saved(annotations: dict[str, str], key: str) -> Manifest | None:
    raw = annotations.get(key)
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None  # a corrupt payload is ignored, as the operator does
    return value if isinstance(value, dict) else None


def _annotations(obj: Resource, drop: tuple[str, ...], add: dict[str, Manifest]) -> dict[str, str]:
    out = {k: v for k, v in (obj.metadata.annotations or {}).items() if k not in drop}
    for key, payload in add.items():
        if key and payload:
            out[key] = json.dumps(payload, separators=(",", ":"), sort_keys=True)
    return out


def convert(
    src: Resource,
    dst_model: type[R],
    spec_fn: Callable[[Manifest], Manifest],
    back_spec_fn: Callable[[Manifest], Manifest],
    status_fn: Callable[[Manifest], Manifest],
    back_status_fn: Callable[[Manifest], Manifest],
    ann: tuple[str, str],
    keyed_src: Keyed,
    keyed_dst: Keyed,
    *,
    wire: Manifest | None = None,
) -> R:
    """`src` as `dst_model`: native mapping, restore of `dst`-only fields, save of `src`-only fields.

    `ann` names the spec and status annotations ("" for none); `keyed_*` the fields of named entries,
    in the same order in both versions. `wire` is `src.to_wire()` when the caller has it (only read).
    """
    live_keys = dict(zip(keyed_dst, keyed_src, strict=True))
    annotations = src.metadata.annotations or {}
    if wire is None:
        wire = src.to_wire()
    spec_src: Manifest = wire.get("spec") or {}
    saved = _load_saved(annotations, ann[0])
    spec = restore(spec_fn(spec_src), saved, spec_src, back_spec_fn, keyed_dst, live_keys)
    spec_save = sparse_diff(spec_src, back_spec_fn(spec), keyed_src)
    out: Manifest = {"apiVersion": dst_model.API_VERSION, "kind": dst_model.KIND, "spec": spec}
    status_save: Manifest = {}
    if "status" in wire:
        status_src: Manifest = wire["status"]
        status = restore(status_fn(status_src), _load_saved(annotations, ann[1]), status_src, back_status_fn)
        status_save = sparse_diff(status_src, back_status_fn(status))
        out["status"] = status
    meta = src.metadata.to_wire()
    meta.pop("annotations", None)
    new_annotations = _annotations(src, ann, {ann[0]: spec_save, ann[1]: status_save})
    if new_annotations:
        meta["annotations"] = new_annotations
    out["metadata"] = meta
    # Kubernetes sub-objects were checked when `src` was loaded; conversion only moves them.
    return dst_model.parse(out, kube_schema=False)
