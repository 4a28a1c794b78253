"""The program's render cache: each graph admitted and rendered once per process.

The stack program renders every graph when it reads the stack (`stack_config.read_graphs`, to fail
naming the file) and again when it plans the graph's resources (`components.graph_plan`); both ask
here. Entries are keyed by what the rendering can observe: the graph's model (its class, every
field's value and which fields were set, in the order written, since key order reaches the output),
the effective cluster options (`keep_running_generation` may change them), the namespace and the
checkpoints' readiness. Results are kept pickled (a copy in ~0.1 ms, where rendering takes ms), so
every caller gets its own and none can change what another gets.

In-process only: a disk cache shared by `up`'s two runs of the program would have to be keyed by
the code that renders, which an editable install's version number does not identify.
"""

from __future__ import annotations

import json
import pickle
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

from dynamo_infra.api import AnyDGD
from dynamo_infra.api.admission import Review
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render.checks.admission import review_graph
from dynamo_infra.render.graph import graph_context, graph_worker_hash, keep_running_generation, render_graph
from dynamo_infra.render.rendered import RenderedGraph

# Entries kept (least recently used dropped first): far more graphs than a stack holds.
MAX_ENTRIES = 512

T = TypeVar("T")
_entries: OrderedDict[tuple[Any, ...], bytes] = OrderedDict()


def fingerprint(model: BaseModel) -> tuple[str, str, str]:
    """What identifies a model for rendering: its class, every value, and the fields set (as written)."""
    cls = type(model)
    values = json.dumps(model.model_dump(mode="json", by_alias=True), separators=(",", ":"))
    written = json.dumps(
        model.model_dump(mode="json", by_alias=True, exclude_unset=True), separators=(",", ":")
    )
    return f"{cls.__module__}.{cls.__qualname__}", values, written


def _cached(key: tuple[Any, ...], compute: Callable[[], T]) -> T:
    """`compute()`, or a copy of what it returned for `key` before. Entries are kept pickled: every
    hit is a new object, and no caller can change what another gets."""
    blob = _entries.get(key)
    if blob is not None:
        _entries.move_to_end(key)
        return pickle.loads(blob)  # type: ignore[no-any-return]
    value = compute()
    _entries[key] = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    while len(_entries) > MAX_ENTRIES:
        _entries.popitem(last=False)
    return value


def _key(kind: str, dgd: AnyDGD, options: ClusterOptions, namespace: str | None) -> tuple[Any, ...]:
    return (kind, fingerprint(dgd), fingerprint(options), namespace)


def rendered(
    dgd: AnyDGD,
    options: ClusterOptions,
    namespace: str | None = None,
    *,
    checkpoint_ready: Mapping[str, bool] | None = None,
) -> RenderedGraph:
    """`render_graph(dgd, options, namespace, checkpoint_ready=...)`, once per distinct input."""
    ready = tuple(sorted((checkpoint_ready or {}).items()))
    return _cached(
        (*_key("render", dgd, options, namespace), ready),
        lambda: render_graph(dgd, options, namespace, checkpoint_ready=dict(ready) or None),
    )


def reviewed(dgd: AnyDGD, options: ClusterOptions, namespace: str | None = None) -> Review:
    """`review_graph(dgd, options, namespace)` (the admission webhook's answer), once per distinct input."""
    return _cached(_key("review", dgd, options, namespace), lambda: review_graph(dgd, options, namespace))


def clear() -> None:
    """Forget every entry."""
    _entries.clear()


def worker_hash(dgd: AnyDGD, options: ClusterOptions, namespace: str | None = None) -> str:
    """The graph's worker hash with `options`: its cached rendering's, or (a graph these options do
    not render) computed alone."""
    try:
        whash = rendered(dgd, options, namespace).worker_hash
    except Exception:  # noqa: BLE001 - whatever the rendering refuses, the hash alone may still be found
        whash = None
    return whash if whash is not None else graph_worker_hash(graph_context(dgd, options, namespace))


def effective_options(
    dgd: AnyDGD, options: ClusterOptions, namespace: str | None, running_worker_hash: str | None
) -> ClusterOptions:
    """`keep_running_generation`, its worker hashes taken from the cached renderings."""
    return keep_running_generation(
        dgd,
        options,
        namespace,
        running_worker_hash,
        worker_hash_of=lambda o: worker_hash(dgd, o, namespace),
    )
