"""Every corpus document, in each cluster of the operator-rendered passes: we admit it exactly when the
operator's webhook at the pin does, and deny it for the same reasons (tests/data/admission/verdicts.yaml)."""

from __future__ import annotations

from typing import Any

import pytest

from dynamo_infra.api import AnyDGD, Resource, admission, v1alpha1, v1beta1
from dynamo_infra.api.admission import Review
from dynamo_infra.config import ClusterOptions
from dynamo_infra.render.checks.admission import review_graph
from tests.conftest import CORPUS, load_corpus
from tests.unit.test_admission import answered, verdicts

# Namespace the corpus documents were answered in.
NAMESPACE = "corpus"
# The cluster of each operator-rendered pass (corpus/operator-rendered/README.md).
PASSES = {
    "single": {"dra": {"enabled": True}},
    "lws": {"dra": {"enabled": True}, "multinode": {"orchestrator": "lws"}},
    "grove": {"dra": {"enabled": True}, "multinode": {"orchestrator": "grove"}},
}


def documents() -> list[tuple[str, str]]:
    return [(file, name) for file, docs in verdicts()["corpus"].items() for name in docs]


def our_review(doc: Resource, options: ClusterOptions) -> Review:
    if isinstance(doc, v1alpha1.DynamoGraphDeployment | v1beta1.DynamoGraphDeployment):
        dgd: AnyDGD = doc
        return review_graph(dgd, options, NAMESPACE)
    return admission.review(doc, options.operator_features, namespace=NAMESPACE)


def test_every_corpus_document_has_a_recorded_answer() -> None:
    files = sorted(str(p.relative_to(CORPUS / "graphs")) for p in (CORPUS / "graphs").rglob("*.yaml"))
    assert sorted(verdicts()["corpus"]) == files
    for file in files:
        names = {d.name for d in load_corpus(CORPUS / "graphs" / file).documents}
        assert set(verdicts()["corpus"][file]) == names, file


@pytest.mark.parametrize("cluster", PASSES)
@pytest.mark.parametrize(("file", "name"), documents())
def test_corpus_document_is_admitted_as_the_webhook_admits_it(file: str, name: str, cluster: str) -> None:
    (doc,) = [d for d in load_corpus(CORPUS / "graphs" / file).documents if d.name == name]
    options = ClusterOptions.parse({"namespace": NAMESPACE, **PASSES[cluster]})
    recorded: dict[str, Any] = verdicts()["corpus"][file][name][cluster]
    review = our_review(doc, options)
    # The only causes we cannot give need the cluster's ClusterTopologyBinding; none denies alone.
    assert review.allowed == (not recorded["causes"] and not recorded.get("lookup"))
    assert answered(review) == {"causes": recorded["causes"], "warnings": recorded["warnings"]}


def test_how_many_corpus_documents_are_denied() -> None:
    """Of the 32 corpus documents (31 graphs, one DynamoModel), the webhook denies 21 on a cluster
    without Grove and 20 with it (the inter-pod GMS sample needs Grove)."""
    denied: dict[str, list[str]] = {}
    for cluster, options in PASSES.items():
        opts = ClusterOptions.parse({"namespace": NAMESPACE, **options})
        for file, name in documents():
            (doc,) = [d for d in load_corpus(CORPUS / "graphs" / file).documents if d.name == name]
            if not our_review(doc, opts).allowed:
                denied.setdefault(cluster, []).append(f"{file}:{name}")
    assert {cluster: len(names) for cluster, names in denied.items()} == {
        "single": 21,
        "lws": 21,
        "grove": 20,
    }
    assert denied["single"] == denied["lws"]
    assert set(denied["single"]) - set(denied["grove"]) == {
        "v1beta1/vllm__dgd-gms-failover-multinode.yaml:llm-serving-mn"
    }
