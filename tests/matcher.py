"""Match actual Kubernetes objects against the operator's expected-output YAML (match directives).

Directives (see tests/data/corpus/operator-expected/README.md): mappings are strict unless they carry
`$strict: false` (`$$strict` names a real `$strict` field); scalar strings `$ignore`, `$exists`,
`$notexists`, `$glob:<glob>`, `$pattern:<regex>`; mapping-valued `{$ignore: true}`,
`{$exists: true}`, `{$notexists: true}`; sequences match element by element, in order.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

_MISSING = object()
STRICT = "$strict"
ESCAPED_STRICT = "$$strict"


def _key(k: str) -> str:
    return STRICT if k == ESCAPED_STRICT else k


def _existence(expected: Any) -> str | None:
    """`ignore`/`exists`/`notexists` when `expected` is such a directive, else None."""
    if isinstance(expected, str) and expected in ("$ignore", "$exists", "$notexists"):
        return expected[1:]
    if isinstance(expected, Mapping) and len(expected) == 1:
        ((k, v),) = expected.items()
        if k in ("$ignore", "$exists", "$notexists") and v is True:
            return k[1:]
    return None


def mismatches(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Every difference between `expected` (with directives) and `actual`, as `path: reason`."""
    where = path or "<root>"
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return [f"{where}: expected a mapping, got {actual!r}"]
        strict = expected.get(STRICT, True) is not False
        out: list[str] = []
        wanted = {_key(k): v for k, v in expected.items() if k != STRICT}
        for k, v in wanted.items():
            sub = f"{path}.{k}" if path else k
            value = actual.get(k, _MISSING)
            directive = _existence(v)
            if directive == "ignore":
                continue
            if directive == "exists":
                if value is _MISSING:
                    out.append(f"{sub}: must exist")
                continue
            if directive == "notexists":
                if value is not _MISSING:
                    out.append(f"{sub}: must not exist (got {value!r})")
                continue
            if value is _MISSING:
                out.append(f"{sub}: missing (expected {v!r})")
                continue
            out.extend(mismatches(v, value, sub))
        if strict:
            out.extend(
                f"{path}.{k}: unexpected field" if path else f"{k}: unexpected field"
                for k in actual
                if k not in wanted
            )
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{where}: expected a sequence, got {actual!r}"]
        if len(expected) != len(actual):
            return [f"{where}: expected {len(expected)} items, got {len(actual)}"]
        return [
            m
            for i, (e, a) in enumerate(zip(expected, actual, strict=True))
            for m in mismatches(e, a, f"{path}[{i}]")
        ]
    if isinstance(expected, str):
        if expected.startswith("$glob:"):
            ok = isinstance(actual, str) and fnmatch.fnmatchcase(actual, expected[len("$glob:") :])
            return [] if ok else [f"{where}: {actual!r} does not match glob {expected[6:]!r}"]
        if expected.startswith("$pattern:"):
            ok = isinstance(actual, str) and re.fullmatch(expected[len("$pattern:") :], actual) is not None
            return [] if ok else [f"{where}: {actual!r} does not match pattern {expected[9:]!r}"]
        if expected in ("$ignore", "$exists"):
            return []
    if expected != actual or type(expected) is not type(actual):
        if isinstance(expected, (int, float)) and isinstance(actual, (int, float)) and expected == actual:
            return []
        return [f"{where}: expected {expected!r}, got {actual!r}"]
    return []


def matches(expected: Any, actual: Any) -> bool:
    return not mismatches(expected, actual)


def match_sets(expected: Sequence[Mapping[str, Any]], actual: Iterable[Mapping[str, Any]]) -> list[str]:
    """Per kind, a one-to-one pairing of expected documents and actual objects; problems if none."""
    problems: list[str] = []
    by_kind: dict[str, list[Mapping[str, Any]]] = {}
    for obj in actual:
        by_kind.setdefault(str(obj.get("kind")), []).append(obj)
    kinds = {str(e.get("kind")) for e in expected}
    for kind in sorted(kinds):
        want = [e for e in expected if e.get("kind") == kind]
        have = list(by_kind.get(kind, []))
        if len(want) != len(have):
            names = [(o.get("metadata") or {}).get("name") for o in have]
            problems.append(f"{kind}: expected {len(want)} objects, got {len(have)} {names}")
        for e in want:
            pick = next((i for i, a in enumerate(have) if matches(e, a)), None)
            if pick is not None:
                have.pop(pick)
                continue
            name = (e.get("metadata") or {}).get("name")
            closest = min(have, key=lambda a: len(mismatches(e, a)), default=None)
            detail = mismatches(e, closest) if closest is not None else ["no candidate left"]
            problems.append(f"{kind} {name}: no match; closest differs at: " + "; ".join(detail[:15]))
    return problems
