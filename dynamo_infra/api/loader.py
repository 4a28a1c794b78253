"""Load Dynamo custom resources from YAML (files may hold other Kubernetes documents too)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dynamo_infra.api import conversion, v1alpha1, v1beta1
from dynamo_infra.api.errors import DynamoValidationError, Problem

AnyDGD = v1alpha1.DynamoGraphDeployment | v1beta1.DynamoGraphDeployment

_MODELS: dict[tuple[str, str], type[v1alpha1.DynamoGraphDeployment] | type[v1beta1.DynamoGraphDeployment]] = {
    (v1alpha1.API_VERSION, "DynamoGraphDeployment"): v1alpha1.DynamoGraphDeployment,
    (v1beta1.API_VERSION, "DynamoGraphDeployment"): v1beta1.DynamoGraphDeployment,
}


@dataclass
class Loaded:
    """The Dynamo documents of a YAML stream, and every other document kept as it was."""

    graphs: list[AnyDGD] = field(default_factory=list)
    others: list[dict[str, Any]] = field(default_factory=list)


def load_yaml(source: str | Path, *, lenient: bool = False) -> Loaded:
    """Parse a path or YAML text. Errors carry the file name and `documents[i]` when multi-document."""
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source and source.endswith((".yaml", ".yml"))):
        path = Path(source)
        name = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise DynamoValidationError([Problem("", f"cannot read file: {e.strerror}")], name) from None
    else:
        name, text = "<yaml>", str(source)
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise DynamoValidationError([Problem("", f"invalid YAML: {where}{problem}")], name) from None
    if not docs:
        raise DynamoValidationError([Problem("", "no YAML documents found")], name)
    out = Loaded()
    problems: list[Problem] = []
    for i, doc in enumerate(docs):
        prefix = f"documents[{i}]" if len(docs) > 1 else ""
        if not isinstance(doc, dict):
            problems.append(Problem(prefix, f"must be a mapping (got {type(doc).__name__})"))
            continue
        model = _MODELS.get((str(doc.get("apiVersion")), str(doc.get("kind"))))
        if model is None:
            out.others.append(doc)
            continue
        try:
            out.graphs.append(model.parse(doc, lenient=lenient))
        except DynamoValidationError as e:
            problems.extend(e.with_prefix(prefix).problems)
    if problems:
        raise DynamoValidationError(problems, name)
    return out


def to_hub(dgd: AnyDGD) -> v1beta1.DynamoGraphDeployment:
    """The graph in the hub version (v1beta1) the renderer works on."""
    if isinstance(dgd, v1beta1.DynamoGraphDeployment):
        return dgd
    return conversion.dgd_to_v1beta1(dgd)
