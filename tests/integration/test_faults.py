"""Faults during `pulumi up`, repeated on a three-graph stack (benchmarks/faults.py): `pulumi up`
SIGKILLed at seeded random points and the API server restarted during `up`; the next `up` (after
`dynamo-infra unlock` when Pulumi reports the stack locked) converges every time, with no orphaned
or duplicated object, the claim's data intact and nothing left to preview. The longer run with its
figures: `python -m benchmarks --only faults`."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.faults import KILL, RESTART, run_faults
from dynamo_infra.kube.client import KubeClient
from tests.integration.harness import unique
from tools.localcluster import LocalCluster

# Bounded and seeded: this many faults of each kind, in an order and at times drawn from SEED.
KILLS, RESTARTS, SEED = 2, 1, 1616
# Each run is three `pulumi up`s and a preview of a three-graph stack: ~1.5 min idle, 4 on a loaded
# machine; the suite's default limit (900 s) is too short for the loaded case.
TIMEOUT_S = 2400


@pytest.mark.timeout(TIMEOUT_S)
def test_faulted_ups_converge_on_the_next_up(tmp_path: Path, cluster: LocalCluster, kube: KubeClient) -> None:
    fs, outcomes = run_faults(tmp_path, cluster, kube, unique("faults"), KILLS, RESTARTS, SEED)
    try:
        assert [o.fault for o in outcomes].count(KILL) == KILLS
        assert [o.fault for o in outcomes].count(RESTART) == RESTARTS
        for o in outcomes:
            assert o.ok, o
        # A killed `up` leaves the stack locked: Pulumi says so, and `dynamo-infra unlock` removed the
        # lock because the process that took it was gone.
        killed = [o for o in outcomes if o.faulted == "killed"]
        assert killed, outcomes
        for o in killed:
            assert "the stack is currently locked" in o.lock_message and "pulumi cancel" in o.lock_message, o
            assert o.unlock_output.startswith("removed the lock of "), o
    finally:
        fs.stack.destroy(on_output=lambda _: None)
