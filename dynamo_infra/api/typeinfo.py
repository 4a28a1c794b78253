"""Python type annotations of model fields, as the validators walk them."""

from __future__ import annotations

import types
import typing
from typing import Any


def unwrap(annotation: Any) -> Any:
    """`X | None` and `Annotated[X, ...]` -> X (other unions are kept)."""
    while True:
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if origin is typing.Annotated:
            annotation = args[0]
        elif origin in (typing.Union, types.UnionType):
            rest = [a for a in args if a is not type(None)]
            if len(rest) != 1:
                return annotation
            annotation = rest[0]
        else:
            return annotation
