"""A graph as users give it: a typed DGD, or a YAML file holding exactly one."""

from __future__ import annotations

from pathlib import Path

from dynamo_infra.api import AnyDGD, DynamoValidationError, Problem, load_yaml

# A DGD (v1alpha1 or v1beta1 object) or the path of a YAML file with one DynamoGraphDeployment.
GraphSource = str | Path | AnyDGD


def load_graph(source: GraphSource, *, admission: bool = True) -> AnyDGD:
    """A typed DGD, or the single DynamoGraphDeployment of a YAML file (its documents checked by the
    webhook's rules that need no cluster unless `admission` is false; see `load_yaml`)."""
    if not isinstance(source, str | Path):
        return source
    loaded = load_yaml(Path(source), admission=admission)
    if len(loaded.graphs) != 1:
        raise DynamoValidationError(
            [Problem("", f"expected one DynamoGraphDeployment, found {len(loaded.graphs)}")], str(source)
        )
    return loaded.graphs[0]
