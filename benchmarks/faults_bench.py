"""Faults during `pulumi up`, repeated (benchmarks/faults.py): `pulumi up` SIGKILLed at random points
and the API server restarted during `up` on a three-graph stack; how many runs converged on the next
`up` with no orphaned or duplicated object, the claim's data intact and no change left to preview.

    . tools/env.sh && python -m benchmarks.faults_bench [--quick] [--kills N] [--restarts N] [--seed S]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks import harness
from benchmarks.common import Figure, figure_name, table
from benchmarks.faults import KILL, RESTART, Outcome, run_faults
from dynamo_infra.kube import connection
from dynamo_infra.kube.client import KubeClient

# Runs of each fault (issue 16: >= 20 kills, >= 10 API server restarts); `--quick` runs fewer.
KILLS, RESTARTS = 20, 10
QUICK_KILLS, QUICK_RESTARTS = 3, 2
# The RNG seed of the strike times and the order of the faults.
SEED = 16
NAMESPACE = "faults"


def fault_figures(fault: str, outcomes: list[Outcome]) -> list[Figure]:
    """Counts of one fault's runs: runs, converged, orphaned, duplicated, claims intact, s/run."""
    runs = [o for o in outcomes if o.fault == fault]
    n = len(runs)
    detail = {"runs": [vars(o) | {"ok": o.ok} for o in runs]}
    return [
        Figure(figure_name("faults", fault, "runs"), n, "runs", detail=detail),
        Figure(
            figure_name("faults", fault, "converged"),
            sum(o.ok for o in runs),
            "runs",
            target=n,
            higher_is_better=True,
            note="next up: succeeded, all successful, no orphan/duplicate, claim intact, preview same",
        ),
        Figure(
            figure_name("faults", fault, "orphaned"), sum(len(o.orphaned) for o in runs), "objects", target=0
        ),
        Figure(
            figure_name("faults", fault, "duplicated"),
            sum(len(o.duplicated) for o in runs),
            "objects",
            target=0,
        ),
        Figure(
            figure_name("faults", fault, "claims_intact"),
            sum(o.claim_intact for o in runs),
            "runs",
            target=n,
            higher_is_better=True,
        ),
        Figure(
            figure_name("faults", fault, "struck_mid_up"),
            sum(o.faulted != "finished before the fault" for o in runs),
            "runs",
            note="the fault came while `pulumi up` ran",
        ),
        Figure(
            figure_name("faults", fault, "faulted_up_succeeded"),
            sum(o.faulted == "succeeded" for o in runs),
            "runs",
            note="the faulted `up` itself succeeded (retries outlived the outage)",
        ),
        Figure(
            figure_name("faults", fault, "locked_next_up"),
            sum(bool(o.lock_message) for o in runs),
            "runs",
            note="the next up found the stack locked (then: dynamo-infra unlock)",
        ),
        Figure(
            figure_name("faults", fault, "run_s"),
            statistics.median([o.seconds for o in runs]) if runs else float("nan"),
            "s",
            note="median: faulted up, recovery up(s), checks, preview",
        ),
    ]


def measure(kills: int, restarts: int, seed: int) -> list[Figure]:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        harness.offline_pulumi(root)
        with (
            harness.local_cluster(root) as cluster,
            KubeClient(connection.load(str(cluster.kubeconfig))) as kube,
        ):
            fs, outcomes = run_faults(root / "stack", cluster, kube, NAMESPACE, kills, restarts, seed)
            clean = [
                Figure(figure_name("faults", "clean_first_up_s"), fs.clean_up_s, "s"),
                Figure(
                    figure_name("faults", "clean_change_up_s"),
                    fs.change_up_s,
                    "s",
                    note="faults strike within this time after `pulumi up` starts",
                ),
            ]
            fs.stack.destroy(**harness.QUIET)
    return [*clean, *fault_figures(KILL, outcomes), *fault_figures(RESTART, outcomes)]


def figures(quick: bool) -> list[Figure]:
    return measure(*((QUICK_KILLS, QUICK_RESTARTS) if quick else (KILLS, RESTARTS)), SEED)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_KILLS} kills, {QUICK_RESTARTS} restarts")
    ap.add_argument("--kills", type=int)
    ap.add_argument("--restarts", type=int)
    ap.add_argument("--seed", type=int, default=SEED)
    args = ap.parse_args()
    kills, restarts = (QUICK_KILLS, QUICK_RESTARTS) if args.quick else (KILLS, RESTARTS)
    got = measure(
        args.kills if args.kills is not None else kills,
        args.restarts if args.restarts is not None else restarts,
        args.seed,
    )
    print(table(got))
    return 0 if all(f.met is not False for f in got) else 1


if __name__ == "__main__":
    sys.exit(main())
