"""Pure rendering of Dynamo graphs into the Kubernetes objects the operator would create.

`graph.render_graph` is the entry: it builds the contexts (`context`), picks the pathway (one DCD per
component, or one PodCliqueSet), and returns a `rendered.RenderedGraph`. A component's pod spec is
built in the operator's merge order in `podspec.pod_spec`. The three axes are folders: `components/`
(component types), `backends/` (engines), `workloads/` (Deployment, LeaderWorkerSet, Grove); beside
them `features/`, `runtime/` (records, status, agent), `checks/` and `go/` (Go's writers).
"""

from dynamo_infra.render.graph import render_graph
from dynamo_infra.render.rendered import RenderedComponent, RenderedGraph

__all__ = ["RenderedComponent", "RenderedGraph", "render_graph"]
