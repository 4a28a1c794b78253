"""`dynamo-infra validate`: field paths mapped back to YAML lines, every problem, exit codes."""

from __future__ import annotations

import json

import pytest

from dynamo_infra.cli import main as cli
from dynamo_infra.cli.yamlmarks import Position, compose, locate, syntax_position
from tests.conftest import CORPUS, DATA

BROKEN = DATA / "broken"
# The corpus holds graphs the operator's webhook denies (placeholder tags): checked without it here.
NO_ADMISSION = '{"admission": {"enabled": false}}'

TEXT = """\
apiVersion: nvidia.com/v1beta1
metadata:
  name: g
  annotations:
    nvidia.com/a.b: x
spec:
  components:
    - name: Frontend
      replicas: 1
    - name: worker
      podTemplate:
        spec: {}
"""


@pytest.mark.parametrize(
    ("path", "where"),
    [
        ("metadata.name", Position(3, 3)),
        ("metadata.annotations.nvidia.com/a.b", Position(5, 5)),  # a key holding dots
        ("metadata.annotations[nvidia.com/a.b]", Position(5, 5)),
        ("spec.components[0].replicas", Position(9, 7)),
        ("spec.components[worker].podTemplate.spec", Position(12, 9)),
        ("spec.components[worker]", Position(10, 7)),
        ("spec.components[worker].missing.deeper", Position(10, 7)),  # the deepest node there is
        ("spec.components[9]", Position(7, 3)),
    ],
)
def test_a_field_path_maps_to_its_line(path: str, where: Position) -> None:
    assert locate(compose(TEXT), path) == where


def test_paths_of_a_multi_document_file_pick_their_document() -> None:
    docs = compose("a: 1\n---\nb:\n  c: 2\n")
    assert locate(docs, "documents[1].b.c") == Position(4, 3)
    assert locate(docs, "a") == Position(1, 1)


def test_syntax_errors_keep_their_position() -> None:
    assert compose("a: [") == []
    assert syntax_position("invalid YAML: line 8, column 1: did not find") == Position(8, 1)


def findings(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[dict[str, object]]]:
    code = cli.main(["validate", "--format", "json", *argv])
    return code, json.loads(capsys.readouterr().out)


def test_every_corpus_graph_passes(capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted(str(p) for p in (CORPUS / "graphs").rglob("*.yaml"))
    code, found = findings(capsys, "--cluster", NO_ADMISSION, *files)
    assert [f for f in found if f["severity"] == "error"] == []
    assert code == cli.EXIT_OK and len(files) == 30


def test_with_admission_the_corpus_placeholders_are_denied_at_their_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, found = findings(capsys, str(CORPUS / "graphs" / "v1beta1" / "mocker__disagg.yaml"))
    assert code == cli.EXIT_FINDINGS
    assert [(f["line"], f["path"]) for f in found] == [
        (16, "spec.components[Frontend].runtimeVersionOverride"),
        (24, "spec.components[decode].runtimeVersionOverride"),
        (51, "spec.components[prefill].runtimeVersionOverride"),
    ]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("wrong-types", [(10, 7, "spec.services.Frontend.replicas", "must be an integer (got string)")]),
        (
            "unknown-field",
            [
                (11, 7, "spec.services.Frontend.replica", "unknown field"),
                (
                    15,
                    11,
                    "spec.services.Frontend.extraPodSpec.mainContainer.imagePullPolicyy",
                    "unknown field",
                ),
            ],
        ),
        (
            "webhook-denial",
            [
                (
                    8,
                    7,
                    "spec.components[Frontend].runtimeVersionOverride",
                    "Required value: is required when the specified main container image has no parseable "
                    "semantic-version tag",
                )
            ],
        ),
        ("bad-syntax", [(8, 1, "", "invalid YAML: line 8, column 1: did not find expected ',' or '}'")]),
        (
            "derived-name",
            [
                (
                    9,
                    5,
                    "spec.services.FrontendWithAVeryLongName",
                    "Deployment 'a-graph-name-of-forty-characters-exactly-frontendwithaverylongname': label nvidia.com/selector value 'a-graph-name-of-forty-characters-exactly-frontendwithaverylongname' would be 66 characters; "
                    "a label value has at most 63",
                ),
                (
                    9,
                    5,
                    "spec.services.FrontendWithAVeryLongName",
                    "Service name 'a-graph-name-of-forty-characters-exactly-frontendwithaverylongname' would be 66 characters; a DNS-1035 label has at most 63",
                ),
            ],
        ),
        (
            "several-errors",
            [
                (19, 7, "documents[1].spec.components[0].replicas", "must be ≥ 0 (got -1)"),
                (27, 7, "documents[1].spec.components[1].replicas", "must be an integer (got string)"),
                (28, 7, "documents[1].spec.components[1].bogus", "unknown field"),
                (
                    40,
                    5,
                    "documents[2].metadata.annotations[nvidia.com/vllm-distributed-executor-backend]",
                    'Invalid value: "foo": must be "mp" or "ray"',
                ),
            ],
        ),
    ],
)
def test_broken_files_report_every_problem_at_its_line(
    capsys: pytest.CaptureFixture[str], name: str, expected: list[tuple[int, int, str, str]]
) -> None:
    path = str(BROKEN / f"{name}.yaml")
    code, found = findings(capsys, path)
    assert code == cli.EXIT_FINDINGS
    assert [(f["line"], f["column"], f["path"], f["message"]) for f in found] == expected
    assert {f["file"] for f in found} == {path}


def test_text_and_github_formats_name_file_and_line(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(BROKEN / "wrong-types.yaml")
    assert cli.main(["validate", path]) == cli.EXIT_FINDINGS
    assert (
        capsys.readouterr().out
        == f"{path}:10:7: spec.services.Frontend.replicas: must be an integer (got string)\n"
    )
    assert cli.main(["validate", "--format", "github", path]) == cli.EXIT_FINDINGS
    assert capsys.readouterr().out.startswith(
        f"::error file={path},line=10,col=7::spec.services.Frontend.replicas:"
    )
