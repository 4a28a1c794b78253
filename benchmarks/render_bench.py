"""The `render` section: rendering throughput over the corpus, a 1,000-component fleet (wall time,
peak RSS), import times of `dynamo_infra` and `dynamo_infra.components` in fresh interpreters, a program's start
(one graph registered under Pulumi mocks), and the start-up of the dynamic-provider process every
`pulumi up`/`preview` with our resources pays.

Children run `python -m benchmarks.render_bench fleet|import MODULE|program` so memory and imports are fresh.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common import REPO, Figure, memory_mib

CORPUS = REPO / "tests" / "data" / "corpus" / "graphs"
# Timed passes over the corpus (after one warm-up pass); quick runs do fewer.
CORPUS_PASSES, CORPUS_PASSES_QUICK = 10, 2
# The fleet: graphs x components per graph (FLEET_TEMPLATE has 4 components).
FLEET_GRAPHS = 250
# Fleet runs (fresh child each; the median is reported); quick runs do one.
FLEET_RUNS, FLEET_RUNS_QUICK = 3, 1
# Fresh-interpreter runs per timed import / provider start (median reported).
FRESH_RUNS, FRESH_RUNS_QUICK = 5, 2
# Target: a 1,000-component fleet renders in at most 0.4 s.
FLEET_RENDER_TARGET_S = 0.4
# Target: `import dynamo_infra.components` (what the program pays before its first resource) under half a second.
IMPORT_TARGET_MS = 500.0
# Entries kept from `-X importtime` (largest self time first).
IMPORT_TOP = 5
# The graph of the program-start figure (a frontend and a worker).
PROGRAM_GRAPH = REPO / "examples" / "agg.yaml"
# Give up on a child that does not answer in this time.
CHILD_TIMEOUT_S = 300

FLEET_TEMPLATE = """\
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: {name}
spec:
  backendFramework: vllm
  services:
    Frontend:
      componentType: frontend
      replicas: 1
      extraPodSpec: {{mainContainer: {{image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0}}}}
    Planner:
      componentType: planner
      replicas: 1
      extraPodSpec: {{mainContainer: {{image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0}}}}
    VllmDecodeWorker:
      componentType: worker
      subComponentType: decode
      replicas: 2
      resources: {{limits: {{gpu: "1"}}}}
      extraPodSpec: {{mainContainer: {{image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0, command: [python3, -m, dynamo.vllm]}}}}
    VllmPrefillWorker:
      componentType: worker
      subComponentType: prefill
      replicas: 2
      resources: {{limits: {{gpu: "1"}}}}
      extraPodSpec: {{mainContainer: {{image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.4.0, command: [python3, -m, dynamo.vllm]}}}}
"""
FLEET_COMPONENTS_PER_GRAPH = 4


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, check=True
    )


# --- corpus throughput -------------------------------------------------------------------------


def corpus_graphs() -> list[Any]:
    """Every corpus graph (admission off: the corpus holds graphs the webhook denies)."""
    from dynamo_infra.api import load_yaml

    return [g for p in sorted(CORPUS.glob("*/*.yaml")) for g in load_yaml(p, admission=False).graphs]


def corpus_figures(quick: bool) -> list[Figure]:
    from dynamo_infra.api import DynamoValidationError
    from dynamo_infra.render import render_graph

    renderable = []
    rejected = 0
    for dgd in corpus_graphs():
        try:
            rendered = render_graph(dgd, None, "bench")
        except DynamoValidationError:
            rejected += 1  # needs cluster kinds the default options lack
            continue
        renderable.append((dgd, len(rendered.components), len(rendered.all_objects())))
    components = sum(c for _, c, _ in renderable)
    objects = sum(o for _, _, o in renderable)
    passes = CORPUS_PASSES_QUICK if quick else CORPUS_PASSES
    times = []
    for _ in range(passes):
        t0 = time.perf_counter()
        for dgd, _, _ in renderable:
            render_graph(dgd, None, "bench")
        times.append(time.perf_counter() - t0)
    best = statistics.median(times)
    detail = {"graphs": len(renderable), "rejected_default_options": rejected, "components": components,
              "objects": objects, "passes": passes, "pass_s": [round(t, 4) for t in times]}  # fmt: skip
    return [
        Figure("render.corpus_components_per_s", round(components / best, 1), "components/s",
               note=f"{len(renderable)} corpus graphs, {components} components, default options",
               detail=detail),
        Figure("render.corpus_objects_per_s", round(objects / best, 1), "objects/s", detail=detail),
    ]  # fmt: skip


# --- the fleet -----------------------------------------------------------------------------------


def write_fleet(folder: Path, graphs: int = FLEET_GRAPHS) -> list[Path]:
    """`graphs` graph files from FLEET_TEMPLATE with distinct names."""
    paths = []
    for i in range(graphs):
        path = folder / f"graph-{i:04d}.yaml"
        path.write_text(FLEET_TEMPLATE.format(name=f"fleet-{i:04d}"))
        paths.append(path)
    return paths


def fleet_child(folder: Path) -> dict[str, Any]:
    """In a fresh process: load (with admission) and render every graph in `folder`; times, RSS."""
    from dynamo_infra.api import load_yaml
    from dynamo_infra.render import render_graph

    paths = sorted(folder.glob("*.yaml"))
    rss_before = memory_mib()["VmHWM"]
    t0 = time.perf_counter()
    graphs = [g for p in paths for g in load_yaml(p).graphs]
    t1 = time.perf_counter()
    rendered = [render_graph(g, None, "fleet") for g in graphs]
    t2 = time.perf_counter()
    return {
        "graphs": len(graphs),
        "components": sum(len(r.components) for r in rendered),
        "objects": sum(len(r.all_objects()) for r in rendered),
        "load_s": t1 - t0,
        "render_s": t2 - t1,
        "rss_after_imports_mib": rss_before,
        "peak_rss_mib": memory_mib()["VmHWM"],
    }


def fleet_figures(quick: bool) -> list[Figure]:
    runs = []
    with tempfile.TemporaryDirectory(prefix="fleet-") as d:
        write_fleet(Path(d))
        for _ in range(FLEET_RUNS_QUICK if quick else FLEET_RUNS):
            runs.append(json.loads(_python("-m", "benchmarks.render_bench", "fleet", d).stdout))
    first = runs[0]
    n = first["components"]
    render_s = statistics.median(r["render_s"] for r in runs)
    load_s = statistics.median(r["load_s"] for r in runs)
    peak = max(r["peak_rss_mib"] for r in runs)
    base = min(r["rss_after_imports_mib"] for r in runs)
    detail = {"runs": runs}
    return [
        Figure(f"render.fleet_{n}_render_s", round(render_s, 3), "s", FLEET_RENDER_TARGET_S,
               note=f"{first['graphs']} graphs x {FLEET_COMPONENTS_PER_GRAPH} components, "
                    f"{first['objects']} objects", detail=detail),
        Figure(f"render.fleet_{n}_load_s", round(load_s, 3), "s",
               note="parse + validate + admission of the fleet's files"),
        Figure(f"render.fleet_{n}_peak_rss", round(peak, 1), "MiB",
               note=f"whole process; {base:.0f} MiB after imports"),
        Figure(f"render.fleet_{n}_rss_growth", round(peak - base, 1), "MiB",
               note="peak RSS minus RSS after imports"),
    ]  # fmt: skip


# --- imports -------------------------------------------------------------------------------------


def import_child(module: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    __import__(module)
    return {"seconds": time.perf_counter() - t0}


def parse_importtime(stderr: str) -> list[tuple[str, int, int]]:
    """`-X importtime` lines as (module, self µs, cumulative µs)."""
    out = []
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative_us, name = line.removeprefix("import time:").split("|", 2)
        out.append((name.strip(), int(self_us), int(cumulative_us)))
    return out


def top_imports(entries: list[tuple[str, int, int]], n: int = IMPORT_TOP) -> dict[str, Any]:
    """Where import time goes: the `n` modules and top-level packages with the most self time (ms)."""
    by_package: Counter[str] = Counter()
    for name, self_us, _ in entries:
        by_package[name.split(".")[0]] += self_us
    modules = sorted(entries, key=lambda e: e[1], reverse=True)[:n]
    return {
        "modules_self_ms": {name: round(s / 1000, 1) for name, s, _ in modules},
        "packages_self_ms": {name: round(s / 1000, 1) for name, s in by_package.most_common(n)},
    }


def import_figures(quick: bool) -> list[Figure]:
    figures = []
    runs = FRESH_RUNS_QUICK if quick else FRESH_RUNS
    # (figure label, module): the labels stay those of earlier runs' figures.
    imports = (
        ("dynamo_infra", "dynamo_infra", None),
        ("components", "dynamo_infra.components", IMPORT_TARGET_MS),
    )
    for label, module, target in imports:
        times = [
            json.loads(_python("-m", "benchmarks.render_bench", "import", module).stdout)["seconds"]
            for _ in range(runs)
        ]
        traced = _python("-X", "importtime", "-c", f"import {module}")
        figures.append(
            Figure(f"render.import_{label}_ms", round(statistics.median(times) * 1000, 1), "ms", target,
                   note=f"fresh interpreter, median of {runs}",
                   detail={"runs_ms": [round(t * 1000, 1) for t in times], **top_imports(parse_importtime(traced.stderr))})
        )  # fmt: skip
    return figures


# --- a program's start -------------------------------------------------------------------------------


def program_child(graph: Path) -> dict[str, Any]:
    """In a fresh process: a program registering `graph` under Pulumi mocks (resources echo their inputs,
    workloads report ready); seconds from the first import to `pulumi` imported, `dynamo_infra.components`
    imported, the graph registered and the run's end."""
    t0 = time.perf_counter()
    import asyncio

    import pulumi

    class Mocks(pulumi.runtime.Mocks):
        def new_resource(self, args: Any) -> tuple[str, dict[str, Any]]:
            outs = dict(args.inputs)
            if "objects" in outs:
                outs["status"] = {"ready": True, "replicas": 1, "readyReplicas": 1}
            return f"{args.name}-id", outs

        def call(self, args: Any) -> tuple[dict[str, Any], None]:
            return {}, None

    asyncio.set_event_loop(asyncio.new_event_loop())
    pulumi.runtime.set_mocks(Mocks(), preview=False)
    t1 = time.perf_counter()
    from dynamo_infra.components import DynamoGraphDeployment

    t2 = time.perf_counter()
    marks: dict[str, Any] = {}

    @pulumi.runtime.test  # type: ignore[untyped-decorator]
    def program() -> Any:
        registered = DynamoGraphDeployment("g", graph, kubeconfig="kc", namespace="ns")
        marks["registered"] = time.perf_counter()
        return registered.state.apply(lambda state: marks.setdefault("state", state))

    program()
    t3 = time.perf_counter()
    return {
        "import_pulumi_s": t1 - t0,
        "import_components_s": t2 - t1,
        "register_s": marks["registered"] - t2,
        "run_s": t3 - t0,
        "state": marks.get("state"),
    }


def program_figures(quick: bool) -> list[Figure]:
    runs_n = FRESH_RUNS_QUICK if quick else FRESH_RUNS
    runs = [
        json.loads(_python("-m", "benchmarks.render_bench", "program", str(PROGRAM_GRAPH)).stdout)
        for _ in range(runs_n)
    ]
    if any(r["state"] != "successful" for r in runs):
        raise RuntimeError(f"the program's graph did not come up under mocks: {[r['state'] for r in runs]}")
    start = [r["import_pulumi_s"] + r["import_components_s"] + r["register_s"] for r in runs]
    detail = {
        "runs_ms": [{k[:-2]: round(v * 1000, 1) for k, v in r.items() if k.endswith("_s")} for r in runs]
    }
    return [
        Figure("render.program_first_graph_ms", round(statistics.median(start) * 1000, 1), "ms",
               note=f"fresh interpreter to {PROGRAM_GRAPH.name} registered under Pulumi mocks, median of {runs_n}",
               detail=detail),
        Figure("render.program_run_ms", round(statistics.median(r["run_s"] for r in runs) * 1000, 1), "ms",
               note="the same program's whole run (its outputs resolved)"),
    ]  # fmt: skip


# --- the dynamic-provider process ------------------------------------------------------------------


def provider_start_s() -> float:
    """Exec of `pulumi-resource-pulumi-python` (as the engine starts it) until it prints its port."""
    pulumi = shutil.which("pulumi")
    if pulumi is None:
        raise RuntimeError("no `pulumi` on PATH: run through benchmarks/run (it sources tools/env.sh)")
    # The bundle keeps the plugin beside the real `pulumi` binary (PATH holds a symlink to it).
    plugin = Path(pulumi).resolve().parent / "pulumi-resource-pulumi-python"
    env = {**os.environ, "PULUMI_RUNTIME_VIRTUALENV": str(REPO / ".venv")}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [str(plugin), "127.0.0.1:1"], cwd=REPO, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        port = proc.stdout.readline().strip()
        elapsed = time.perf_counter() - t0
        if not port.isdigit():
            raise RuntimeError(f"the dynamic provider printed {port!r}, not its port")
    finally:
        # The plugin is a shell script running Python as its child: stop the whole process group.
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return elapsed


def provider_figures(quick: bool) -> list[Figure]:
    runs = FRESH_RUNS_QUICK if quick else FRESH_RUNS
    starts = [provider_start_s() for _ in range(runs)]
    module = "dynamo_infra.reconcile.provider"
    imports = [
        json.loads(_python("-m", "benchmarks.render_bench", "import", module).stdout)["seconds"]
        for _ in range(runs)
    ]
    return [
        Figure("render.dynamic_provider_start_ms", round(statistics.median(starts) * 1000, 1), "ms",
               note="exec of pulumi-resource-pulumi-python to its port (once per pulumi run)",
               detail={"runs_ms": [round(t * 1000, 1) for t in starts]}),
        Figure("render.dynamic_provider_import_ms", round(statistics.median(imports) * 1000, 1), "ms",
               note=f"`import {module}`: the first call's unpickle of our providers",
               detail={"runs_ms": [round(t * 1000, 1) for t in imports]}),
    ]  # fmt: skip


def figures(quick: bool) -> list[Figure]:
    # Children import our packages byte-compiled, as an installed package is (not in the children: it imports
    # Pulumi's automation API).
    from benchmarks import harness

    harness.compiled_sources()
    return [
        *corpus_figures(quick),
        *fleet_figures(quick),
        *import_figures(quick),
        *program_figures(quick),
        *provider_figures(quick),
    ]


def main(argv: list[str]) -> int:
    """Child entry points: `fleet FOLDER`, `import MODULE` and `program GRAPH` print JSON."""
    if argv[:1] == ["fleet"]:
        print(json.dumps(fleet_child(Path(argv[1]))))
    elif argv[:1] == ["import"]:
        print(json.dumps(import_child(argv[1])))
    elif argv[:1] == ["program"]:
        print(json.dumps(program_child(Path(argv[1]))))
    else:
        print("usage: python -m benchmarks --only render", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
