"""Two commits side by side: a fleet's first `up` and `destroy`, alternated round by round on one
machine, so a change is measured against its base under the same load (a shared machine's speed
drifts between two runs hours apart by more than most changes move a figure).

    . tools/env.sh && python -m benchmarks.ab_bench BASE [HEAD] [--graphs 100] [--rounds 2]

Each commit is checked out in a temporary git worktree and measured there, in a process of its own
(its program, package and benchmark harness: `fleet_bench`'s graphs and stack, a fresh local control
plane each time); HEAD defaults to the checkout's commit. The order alternates (A B, then B A, ...).
Prints, per commit, each round's seconds, their median, and the state's bytes after `up`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# The steps timed in each round, in order.
STEPS = ("first up", "destroy")
# The line a measuring process prints its figures after.
RESULT_PREFIX = "ab-result: "


def order(commits: list[str], rounds: int) -> list[str]:
    """The runs, round by round: the commits in order, then reversed, and so on."""
    runs: list[str] = []
    for r in range(rounds):
        runs.extend(commits if r % 2 == 0 else list(reversed(commits)))
    return runs


def report(commits: list[str], results: dict[str, list[dict[str, float]]]) -> str:
    """A Markdown table: a row per step (every round's seconds, then the median) and the state's size."""
    head = "| | " + " | ".join(c[:8] for c in commits) + " |"
    lines = [head, "|---|" + "---|" * len(commits)]
    for step in STEPS:
        cells = []
        for c in commits:
            values = [r[step] for r in results[c]]
            rounds = ", ".join(f"{v:.1f}" for v in values)
            cells.append(f"{rounds} (median {statistics.median(values):.1f}) s")
        lines.append(f"| {step} | " + " | ".join(cells) + " |")
    sizes = [f"{statistics.median(r['state bytes'] for r in results[c]) / 1e6:.2f} MB" for c in commits]
    lines.append("| state after `up` | " + " | ".join(sizes) + " |")
    return "\n".join(lines)


def run_one(graphs: int) -> dict[str, float]:
    """One round in this process (the worktree's code on the path): the fleet's first `up` and `destroy`."""
    from benchmarks import harness
    from benchmarks.fleet_bench import fleet_stack, graph_files

    out: dict[str, float] = {}
    root = Path(tempfile.mkdtemp(prefix="ab-"))
    harness.offline_pulumi(root)
    with harness.local_cluster(root) as cluster:
        s = fleet_stack(root, cluster, f"ab{graphs}", graph_files(root / "graphs", graphs))
        out["first up"] = harness.timed(lambda: s.up(**harness.QUIET))
        out["state bytes"] = float(len(json.dumps(s.export_stack().deployment)))
        out["destroy"] = harness.timed(lambda: s.destroy(**harness.QUIET))
    return out


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, check=True, capture_output=True, text=True).stdout.strip()


def measure(worktree: Path, graphs: int) -> dict[str, float]:
    """One round of the commit checked out at `worktree`, in a process running its code."""
    env = {**os.environ, "PYTHONPATH": str(worktree)}
    done = subprocess.run(
        [sys.executable, __file__, "--run-one", str(graphs)],
        cwd=worktree, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if done.returncode or not lines:
        raise RuntimeError(f"round at {worktree.name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(lines[-1][len(RESULT_PREFIX) :])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", nargs="?")
    parser.add_argument("head", nargs="?", default="HEAD")
    parser.add_argument("--graphs", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--run-one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run_one:
        print(RESULT_PREFIX + json.dumps(run_one(args.run_one)), flush=True)
        return 0
    if not args.base:
        parser.error("BASE is required")
    commits = [git("rev-parse", args.base), git("rev-parse", args.head)]
    results: dict[str, list[dict[str, Any]]] = {c: [] for c in commits}
    with tempfile.TemporaryDirectory(prefix="ab-trees-") as d:
        trees = {c: Path(d) / c[:12] for c in commits}
        try:
            for c, tree in trees.items():
                git("worktree", "add", "--detach", str(tree), c)
                # The stacks' projects run the program with the checkout's virtualenv.
                (tree / ".venv").symlink_to(REPO / ".venv")
            for c in order(commits, args.rounds):
                results[c].append(measure(trees[c], args.graphs))
                print(f"[ab] {c[:8]}: {results[c][-1]}", file=sys.stderr, flush=True)
        finally:
            for tree in trees.values():
                (tree / ".venv").unlink(missing_ok=True)
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO, check=False)
    print(f"{args.graphs} graphs, {args.rounds} rounds")
    print(report(commits, results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
