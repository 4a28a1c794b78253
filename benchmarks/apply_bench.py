"""One graph through three appliers on the same local API server, in the same run, each in its own
namespace: (o) this program (its dynamic providers, `await: {mode: skip}`), (a) `kubectl apply
--server-side` of the same rendered objects (the floor), (b) a pulumi-kubernetes `yaml/v2` ConfigGroup
of the same objects in the same engine (same Pulumi CLI, same provider plugin; every object annotated
`pulumi.com/skipAwait: "true"`, so neither Pulumi applier awaits readiness). Times of the first `up`,
a no-op `up` and a `preview` with no changes, median of REPEATS; ratios and overhead per object.

The Dynamo CRDs (as the platform installs them) are applied once beforehand by another field manager, so the program uses them as
they are (no applier installs CRDs). Figures on a shared machine are upper bounds.

    . tools/env.sh && python -m benchmarks.apply_bench [--quick]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pulumi import automation as auto

from benchmarks import harness
from benchmarks.common import Figure, figure_name, table
from dynamo_infra.cli.rendering import cluster_options, dump_yaml, render_files
from dynamo_infra.components.crd_files import crd_documents
from dynamo_infra.components.platform_plan import DEFAULT_CRD_DIR, installable
from tools.localcluster import LocalCluster

# A 3-component disaggregated mocker graph (frontend, prefill and decode workers; no claims).
GRAPH = """\
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: bench
spec:
  services:
    Frontend:
      componentType: frontend
      replicas: 1
      extraPodSpec: {mainContainer: {image: nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.4.0}}
    prefill:
      componentType: worker
      subComponentType: prefill
      replicas: 1
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.4.0
          command: [python3, -m, dynamo.mocker]
          args: [--model-path, /models/tiny-chat, --disaggregation-mode, prefill]
    decode:
      componentType: worker
      subComponentType: decode
      replicas: 1
      extraPodSpec:
        mainContainer:
          image: nvcr.io/nvidia/ai-dynamo/dynamo-frontend:1.4.0
          command: [python3, -m, dynamo.mocker]
          args: [--model-path, /models/tiny-chat, --disaggregation-mode, decode]
"""
# Attempts at waiting for the CRDs, a second apart.
CRD_WAIT_TRIES = 10
# Field manager of the kubectl applier and of the CRDs applied beforehand.
KUBECTL_MANAGER = "bench-kubectl"
CRD_MANAGER = "bench-crds"
# The ConfigGroup project: one provider, one ConfigGroup of the rendered file (without a file: the
# provider alone, the engine's floor).
CONFIG_GROUP_PROJECT = {
    "Pulumi.yaml": "name: configgroup-bench\nruntime:\n  name: python\n  options:\n    virtualenv: .venv\n",
    "__main__.py": """\
import pulumi
import pulumi_kubernetes as k8s
from pulumi_kubernetes.yaml.v2 import ConfigGroup

config = pulumi.Config()
provider = k8s.Provider("cluster", kubeconfig=open(config.require("kubeconfigPath")).read())
if config.get("file"):
    ConfigGroup("bench", files=[config.require("file")], opts=pulumi.ResourceOptions(provider=provider))
""",
}
# Target (issue 29): our `up`, no-op `up` and `preview` at most 0.9 of a ConfigGroup of the same objects.
CONFIGGROUP_RATIO_TARGET = 0.9
# Name of the engine's floor (a Pulumi program of one provider and no objects).
FLOOR = "pulumi engine floor (provider only)"
# Steps timed for each applier, in the order they run.
STEPS = ("up", "no-op up", "preview")


def rendered(graph: Path, namespace: str, skip_await: bool) -> tuple[str, int]:
    """The namespace and the graph's rendered objects as one YAML stream, and the object count."""
    result = render_files([graph], cluster_options({"await": {"mode": "skip"}}, namespace))
    objects: list[Any] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}]
    objects += [dict(o) for o in result.objects()]
    if skip_await:
        for o in objects:
            o.setdefault("metadata", {}).setdefault("annotations", {})["pulumi.com/skipAwait"] = "true"
    # Written as Go's YAML writes it (kubectl reads `n`, `y`... as booleans).
    return dump_yaml(objects), len(objects)


def kubectl(cluster: LocalCluster, *args: str) -> None:
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(cluster.kubeconfig), *args], capture_output=True, text=True
    )
    if done.returncode:
        raise RuntimeError(f"kubectl {' '.join(args)}: {done.stderr.strip()}")


def established(cluster: LocalCluster) -> None:
    """Wait until every CRD is Established (`kubectl wait` fails while one has no conditions yet)."""
    for _ in range(CRD_WAIT_TRIES):
        try:
            kubectl(cluster, "wait", "--for=condition=Established", "crd", "--all", "--timeout=30s")
            return
        except RuntimeError:
            time.sleep(1)
    kubectl(cluster, "wait", "--for=condition=Established", "crd", "--all", "--timeout=30s")


def stack_steps(s: auto.Stack) -> dict[str, float]:
    """Seconds of a stack's first `up`, a no-op `up` and a `preview`, in that order."""
    return {
        "up": harness.timed(lambda: s.up(**harness.QUIET)),
        "no-op up": harness.timed(lambda: s.up(**harness.QUIET)),
        "preview": harness.timed(lambda: s.preview(**harness.QUIET)),
    }


def run_ours(root: Path, cluster: LocalCluster, graph: Path, i: int) -> dict[str, float]:
    s = harness.program_stack(
        root / "ours", cluster, f"o{i}", [graph], {"namespace": f"o-{i}", "await": {"mode": "skip"}}
    )
    return {**stack_steps(s), "resources": len((s.export_stack().deployment or {}).get("resources") or [])}


def run_kubectl(root: Path, cluster: LocalCluster, graph: Path, i: int) -> dict[str, float]:
    file = root / f"kubectl-{i}.yaml"
    file.write_text(rendered(graph, f"a-{i}", skip_await=False)[0])
    apply = ["apply", "--server-side", f"--field-manager={KUBECTL_MANAGER}", "-f", str(file)]
    return {
        "up": harness.timed(lambda: kubectl(cluster, *apply)),
        "no-op up": harness.timed(lambda: kubectl(cluster, *apply)),
        "preview": harness.timed(lambda: kubectl(cluster, *apply, "--dry-run=server")),
    }


def run_config_group(root: Path, cluster: LocalCluster, graph: Path, i: int) -> dict[str, float]:
    file = root / f"configgroup-{i}.yaml"
    file.write_text(rendered(graph, f"b-{i}", skip_await=True)[0])
    config = {
        "configgroup-bench:kubeconfigPath": str(cluster.kubeconfig),
        "configgroup-bench:file": str(file),
    }
    s = harness.stack(root / "configgroup", f"b{i}", config, CONFIG_GROUP_PROJECT)
    return {**stack_steps(s), "resources": len((s.export_stack().deployment or {}).get("resources") or [])}


def run_engine_floor(root: Path, cluster: LocalCluster, graph: Path, i: int) -> dict[str, float]:
    """The ConfigGroup project without objects: the Pulumi engine, language host and provider alone."""
    del graph
    config = {"configgroup-bench:kubeconfigPath": str(cluster.kubeconfig)}
    s = harness.stack(root / "configgroup", f"floor{i}", config, CONFIG_GROUP_PROJECT)
    return stack_steps(s)


def figures(quick: bool) -> list[Figure]:
    """Times, ratios and per-object overhead of the three appliers (quick: the same; it is small)."""
    del quick  # one small graph: the full measurement is already quick
    out: list[Figure] = []
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        harness.offline_pulumi(root)
        graph = root / "bench.yaml"
        graph.write_text(GRAPH)
        objects = rendered(graph, "x", skip_await=False)[1]
        with harness.local_cluster(root) as cluster:
            crds = root / "crds.yaml"
            crds.write_text(dump_yaml([installable(c) for c in crd_documents(DEFAULT_CRD_DIR, "dynamo")]))
            kubectl(cluster, "apply", "--server-side", f"--field-manager={CRD_MANAGER}", "-f", str(crds))
            established(cluster)
            samples: dict[str, dict[str, list[float]]] = {}
            runners = {
                "ours": run_ours,
                "kubectl": run_kubectl,
                "configgroup": run_config_group,
                FLOOR: run_engine_floor,
            }
            for i in range(harness.REPEATS):
                for applier, run in runners.items():
                    for step, t in run(root, cluster, graph, i).items():
                        samples.setdefault(applier, {}).setdefault(step, []).append(t)
        med = {a: {s: harness.median(v) for s, v in steps.items()} for a, steps in samples.items()}
        detail = {
            "objects": objects,
            "repeats": harness.REPEATS,
            "await": "skip (ours), skipAwait (ConfigGroup)",
        }
        for step in STEPS:
            for applier in runners:
                out.append(
                    Figure(
                        figure_name("apply", step, f"{applier}_s"),
                        med[applier][step],
                        "s",
                        detail={**detail, "samples": samples[applier][step]},
                    )
                )
            out.append(
                Figure(
                    figure_name("apply", step, "ours_per_configgroup"),
                    med["ours"][step] / med["configgroup"][step],
                    "ratio",
                    target=CONFIGGROUP_RATIO_TARGET,
                    detail=detail,
                )
            )
            out.append(
                Figure(
                    figure_name("apply", step, "ours_per_kubectl"),
                    med["ours"][step] / med["kubectl"][step],
                    "ratio",
                    detail=detail,
                )
            )
            for applier in ("ours", "configgroup"):
                above = med[applier][step] - med[FLOOR][step]
                out.append(
                    Figure(
                        figure_name("apply", step, f"{applier}_above_engine_floor_per_object"),
                        1000 * above / objects,
                        "ms",
                    )
                )
            out.append(
                Figure(
                    figure_name("apply", step, "ours_over_kubectl_per_object"),
                    1000 * (med["ours"][step] - med["kubectl"][step]) / objects,
                    "ms",
                    detail=detail,
                )
            )
        out.append(
            Figure(
                figure_name("apply", "objects"), objects, "objects", note="the graph's, with its namespace"
            )
        )
        for applier in ("ours", "configgroup"):
            resources = med[applier]["resources"]
            out.append(Figure(figure_name("apply", "state_resources", applier), resources, "resources"))
    return out


def main() -> int:
    print(table(figures("--quick" in sys.argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
