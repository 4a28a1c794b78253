"""Pure rendering of Dynamo graphs into the Kubernetes objects the operator would create."""

from dynamo_infra.render.graph import RenderedComponent, RenderedGraph, render_graph

__all__ = ["RenderedComponent", "RenderedGraph", "render_graph"]
