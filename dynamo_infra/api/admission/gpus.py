"""The GPU count of a container's resources, as the webhook reads it (`dra.ExtractGPUCountFromResourceRequirements`)."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

from dynamo_infra.api.manifest import Manifest

# Resource quantity suffixes: binary and decimal multipliers.
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1)}
_DECIMAL |= {"k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12)}
_DECIMAL |= {"P": Fraction(10**15), "E": Fraction(10**18)}
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE]?)")


def quantity(value: Any) -> Fraction | None:
    """The exact value of a Kubernetes quantity (`500m`, `2Gi`, `1e3`, 4), None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Fraction(value)
    m = _QUANTITY.fullmatch(str(value).strip())
    if m is None:
        return None
    number, suffix = Fraction(m.group(1)), m.group(2)
    if suffix[:1] in ("e", "E"):
        return number * Fraction(10) ** int(suffix[1:])
    return number * _BINARY.get(suffix, _DECIMAL.get(suffix, Fraction(1)))


def _is_gpu(name: str) -> bool:
    n = name.lower()
    return n in ("nvidia.com/gpu", "gpu") or n.endswith("/gpu") or "/mig-" in n or n.startswith("gpu.")


def gpu_count(resources: Manifest | None) -> int:
    """The first GPU resource (by name) of `limits`, else `requests`; 0 without one.

    ValueError (with the webhook's wording) when that quantity is not a whole number.
    """
    for section in ("limits", "requests"):
        found = sorted(n for n in ((resources or {}).get(section) or {}) if _is_gpu(n))
        if not found:
            continue
        raw = resources[section][found[0]]  # type: ignore[index]
        exact = quantity(raw) or Fraction(0)
        if exact != math.ceil(exact):
            raise ValueError(f'GPU resource "{found[0]}" quantity "{raw}" must be a whole number')
        return int(exact)
    return 0
