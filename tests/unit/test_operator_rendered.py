"""Object by object, names included: our render equals what the real operator created for every file
of `tests/data/corpus/operator-rendered/` (see `tests.operator_rendered`).

Pure: the API server's defaults are added with `tests.apiserver_defaults`; the integration variant
(`tests/integration/test_operator_rendered.py`) applies our objects to a real API server and reads
them back instead. A graph the operator failed on must be refused for its reason, and what the
operator created for it before failing must equal what `render.partial` says.
"""

from __future__ import annotations

import pytest

from tests.apiserver_defaults import with_defaults
from tests.operator_rendered import DCD, Case, cases, compare, refusal_problems

CASES = cases()
# Files holding DCDs (the Grove pass has none: the PodCliqueSet replaces them).
WITH_DCDS = [c for c in CASES if any(o["kind"] == DCD for o in c.expected)]


def test_every_pass_has_its_files() -> None:
    by_pass = {p: [c for c in CASES if c.pass_ == p] for p in ("single", "lws", "grove")}
    assert {p: len(c) for p, c in by_pass.items()} == {"single": 29, "lws": 6, "grove": 28}
    assert all(c.source.exists() for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_objects_equal_the_operators(case: Case) -> None:
    ours = case.ours(with_defaults)
    comparison = compare(case, case.expected, ours, lambda kind: kind != DCD)
    problems = refusal_problems(case, ours) + comparison.problems()
    assert not problems, "\n".join(problems)
    assert comparison.equal, "nothing compared"


@pytest.mark.parametrize("case", WITH_DCDS, ids=lambda c: c.name)
def test_dcds_equal_the_operators(case: Case) -> None:
    comparison = compare(case, case.expected, case.ours(with_defaults), lambda kind: kind == DCD)
    assert not comparison.problems(), "\n".join(comparison.problems())
