"""Golden files: every corpus graph rendered to readable YAML under tests/golden/.

Each graph is rendered with the operator's default configuration (`{ver}__{file}`), and again for
every cluster kind its features call for (`{ver}__{stem}__{variant}.yaml`: LWS or Grove for
multinode, DRA for GPU memory service and failover, Istio for frontends and EPPs, checkpoints).
A render the operator would reject is golden-filed as its error. Graphs are rendered whether or not
the operator's webhook would admit them (as its controllers did in the parity run). Regenerate after an intended
change with `UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit/test_golden.py`, then review
the diff against the operator source.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from dynamo_infra.api import AnyDGD, DynamoValidationError, releases, to_hub
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render import RenderedGraph, render_graph
from tests.conftest import CORPUS, load_corpus

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
CORPUS_GRAPHS = CORPUS / "graphs"
# Namespace the goldens are rendered into (graphs name none).
NAMESPACE = "dynamo-golden"
# Every golden is a render of the operator at our pin, which had no runtime-version gates (the gated
# renders are tested in test_runtime_gates.py).
PIN_OPTIONS: dict[str, Any] = {"runtimeVersionGates": False}
# Cluster kinds (ClusterOptions data) a graph is also rendered for, by the features it uses.
ISTIO = {"provider": "istio", "gateway": "istio-system/dynamo-gateway"}
VARIANTS: dict[str, dict[str, Any]] = {
    "lws": {"multinode": {"orchestrator": "lws"}},
    "grove": {"multinode": {"orchestrator": "grove"}},
    "grove-kai": {"multinode": {"orchestrator": "grove"}, "grove": {"scheduler": "kai"}},
    "dra": {"dra": {"enabled": True}},
    "lws-dra": {"multinode": {"orchestrator": "lws"}, "dra": {"enabled": True}},
    "grove-dra": {"multinode": {"orchestrator": "grove"}, "dra": {"enabled": True}},
    "istio": {"serviceMesh": ISTIO},
    "grove-istio": {"multinode": {"orchestrator": "grove"}, "serviceMesh": ISTIO},
    "checkpoint": {"checkpoint": {"enabled": True}},
    "grove-checkpoint": {"multinode": {"orchestrator": "grove"}, "checkpoint": {"enabled": True}},
}


def graph_files() -> list[Path]:
    return sorted(p for d in ("v1alpha1", "v1beta1") for p in (CORPUS_GRAPHS / d).glob("*.yaml"))


def variants_for(graphs: list[AnyDGD]) -> list[str]:
    """The cluster kinds that exercise what the graphs use."""
    comps = [c for g in graphs for c in to_hub(g).spec.components or []]
    exp = [c.experimental.to_wire() if c.experimental else {} for c in comps]
    multinode = any(c.multinode is not None for c in comps)
    dra = any("gpuMemoryService" in e or "failover" in e for e in exp)
    out: list[str] = []
    if dra:
        out += ["lws-dra", "grove-dra"] if multinode else ["dra", "grove-dra"]
    elif multinode:
        out += ["lws", "grove", "grove-kai"]
    if any(c.type == "epp" for c in comps):
        out.append("istio")
    elif multinode and not dra:
        out.append("grove-istio")
    if any(e.get("checkpoint", {}).get("enabled") for e in exp):
        out += ["checkpoint", "grove-checkpoint"]
    return out


def as_document(r: RenderedGraph) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "graph": r.name,
        "namespace": r.namespace,
        "dynamoNamespace": r.dynamo_namespace,
        "workerHash": r.worker_hash,
        "backendFramework": r.backend_framework,
        "annotations": dict(r.annotations),
        "shared": list(r.shared),
        "pvcs": list(r.pvcs),
        "requiredPvcs": list(r.required_pvcs),
        "components": {
            name: {
                "type": c.type,
                "replicas": c.replicas,
                "dcd": c.dcd,
                "adapter": c.adapter,
                "objects": list(c.objects),
                **({"scaleTarget": c.scale_target} if c.scale_target else {}),
            }
            for name, c in r.components.items()
        },
    }
    extra = {
        "pathway": r.pathway if r.pathway != "components" else None,
        "workloads": list(r.workloads),
        "checkpoints": list(r.checkpoints),
        "checkpointStatus": dict(r.checkpoint_status),
        "requiredSecrets": list(r.required_secrets),
    }
    return {**doc, **{k: v for k, v in extra.items() if v}}


class _Dumper(yaml.SafeDumper):
    """Plain YAML: no anchors/aliases even where two objects carry equal sub-documents."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def render_file(path: Path, variant: str | None = None) -> str:
    options = ClusterOptions.parse({**PIN_OPTIONS, **(VARIANTS[variant] if variant else {})})
    rendered: list[dict[str, Any]] = []
    for g in load_corpus(path).graphs:
        try:
            rendered.append(as_document(render_graph(g, options, NAMESPACE)))
        except DynamoValidationError as e:
            rendered.append({"graph": g.name, "error": [str(p) for p in e.problems]})
    label = f" with cluster options {variant}" if variant else ""
    header = f"# Rendered from corpus/graphs/{path.parent.name}/{path.name}{label}; regenerate with UPDATE_GOLDEN=1.\n"
    return header + yaml.dump_all(rendered, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def cases() -> list[tuple[Path, str | None]]:
    return [(p, v) for p in graph_files() for v in [None, *variants_for(load_corpus(p).graphs)]]


def golden_name(path: Path, variant: str | None) -> str:
    if variant is None:
        return f"{path.parent.name}__{path.name}"
    return f"{path.parent.name}__{path.stem}__{variant}.yaml"


@pytest.mark.parametrize(
    ("path", "variant"), cases(), ids=lambda x: x if isinstance(x, str) else getattr(x, "name", "default")
)
def test_golden(path: Path, variant: str | None) -> None:
    text = render_file(path, variant)
    golden = GOLDEN / golden_name(path, variant)
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(text)
    assert golden.exists(), f"missing {golden.name}: run with UPDATE_GOLDEN=1"
    assert text == golden.read_text(), f"{golden.name} differs: review, then UPDATE_GOLDEN=1"


def test_every_golden_file_has_a_case() -> None:
    expected = {golden_name(p, v) for p, v in cases()}
    assert {p.name for p in GOLDEN.glob("*.yaml")} == expected


def _render_or_error(dgd: AnyDGD, options: ClusterOptions) -> object:
    try:
        return render_graph(dgd, options).all_objects()
    except DynamoValidationError as e:
        return str(e)


def _gated_components(dgd: AnyDGD) -> list[str]:
    """Components whose runtime resolves to 1.5.0 or later (where the gates change the render)."""
    out = []
    for c in to_hub(dgd).spec.components or []:
        main = (c.pod_template.container("main") if c.pod_template else None) or {}
        version = releases.resolve(str(main.get("image") or ""), c.runtime_version_override)
        if releases.RUNTIME_VERSION_IN_WORKER_HASH.enabled(version):
            out.append(c.name)
    return out


def test_goldens_hold_with_the_default_options_below_1_5() -> None:
    """The goldens are renders without the runtime-version gates; for every corpus graph whose images are
    below 1.5.0 the default options (gates on) render exactly the same, in every cluster variant."""
    gated: list[str] = []
    for path in graph_files():
        for dgd in load_corpus(path).graphs:
            if _gated_components(dgd):
                gated.append(f"{path.name}:{dgd.name}")
                continue
            for variant in (None, *VARIANTS):
                base = VARIANTS[variant] if variant else {}
                on, off = ClusterOptions.parse(base), ClusterOptions.parse({**base, **PIN_OPTIONS})
                assert _render_or_error(dgd, on) == _render_or_error(dgd, off), (path.name, variant)
    assert gated == ["vllm__agg_gms.yaml:vllm-agg-gms"], gated
