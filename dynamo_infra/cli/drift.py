"""Drift between rendered objects and the cluster, on the fields we set (as server-side apply owns them).

`field_changes` walks the rendered object: a field the server added (a default) is not drift; a field
we set that is absent or different is. Quantities compare by value (`1000m` is `1`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dynamo_infra.api.errors import join_path
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.errors import DynamoInfraError
from dynamo_infra.render.go import quantity

# Top-level keys that address an object rather than describe it.
ADDRESS_KEYS = ("apiVersion", "kind")
MISSING = "missing"
EXTRA = "extra"
CHANGED = "changed"


@dataclass(frozen=True)
class Drift:
    """One difference: an object missing or extra, or one field of it changed."""

    object: str
    change: str
    field: str = ""
    rendered: Any = None
    live: Any = None

    def text(self) -> str:
        if self.change != CHANGED:
            return f"{self.change:8} {self.object}"
        return f"{self.change:8} {self.object}: {self.field}: {_short(self.rendered)} -> {_short(self.live)}"


def _short(value: Any) -> str:
    return "<absent>" if value is None else repr(value)


def _same_scalar(want: Any, got: Any) -> bool:
    if want == got:
        return True
    if isinstance(want, bool) or isinstance(got, bool) or not isinstance(want, str | int | float):
        return False
    if not isinstance(got, str | int | float):
        return False
    try:
        return quantity.parse(str(want)).nanos == quantity.parse(str(got)).nanos
    except DynamoInfraError:
        return False


def field_changes(rendered: Any, live: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(field path, rendered value, live value) for every field `rendered` sets that `live` lacks or
    holds differently; lists of another length differ as a whole."""
    if isinstance(rendered, dict):
        if not isinstance(live, dict):
            return [(path, rendered, live)]
        out = []
        for k, v in rendered.items():
            sub = join_path(path, k) if path else str(k)
            if k not in live:
                if v not in (None, {}, []):
                    out.append((sub, v, None))
                continue
            out.extend(field_changes(v, live[k], sub))
        return out
    if isinstance(rendered, list):
        if not isinstance(live, list) or len(live) != len(rendered):
            return [(path, rendered, live)]
        return [
            c
            for i, (r, lv) in enumerate(zip(rendered, live, strict=True))
            for c in field_changes(r, lv, f"{path}[{i}]")
        ]
    return [] if _same_scalar(rendered, live) else [(path, rendered, live)]


def object_drift(
    key: str,
    rendered: Manifest,
    live: Manifest | None,
    *,
    replicas_external: bool = False,
    create_only: bool = False,
) -> list[Drift]:
    """The drift of one rendered object against its live state (None: missing)."""
    if live is None:
        return [Drift(key, MISSING)]
    if create_only:
        return []
    body = {k: v for k, v in rendered.items() if k not in ADDRESS_KEYS}
    if replicas_external and isinstance(body.get("spec"), dict):
        body["spec"] = {k: v for k, v in body["spec"].items() if k != "replicas"}
    return [Drift(key, CHANGED, f, r, lv) for f, r, lv in field_changes(body, live)]
