"""Regenerate dynamo_infra/render/go_types.json: how Go's encoding/json writes the operator's
DynamoComponentDeploymentSpec (fields in order, omitempty/omitzero, types), by reflection over the
operator's own API types at the parity pin and the Kubernetes modules they use.

    python -m tools.gojson_table --operator-git DIR [--commit SHA] [--out FILE]

DIR is a git repository (bare is fine) of ai-dynamo/dynamo holding the commit; the module proxy does
not serve the operator module, so its `deploy/operator` source is taken from there. Needs Go and the
Go module proxy (or a warm module cache) for k8s.io/api and the other modules tools/gojsontable/go.sum
pins.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROGRAM = Path(__file__).with_name("gojsontable")
TABLE = REPO / "dynamo_infra" / "render" / "go_types.json"
# The operator commit of our parity pin (release 1.4.0).
PARITY_COMMIT = "cdf9267d27ac12e6424a515e9169694a3a152556"
# What the generator needs from the operator tree: its API types, the constants they import and
# the module files (deploy/snapshot only for the operator's go.mod requirement on it).
OPERATOR_PATHS = (
    "deploy/operator/go.mod",
    "deploy/operator/go.sum",
    "deploy/operator/api",
    "deploy/operator/internal/consts",
    "deploy/snapshot/go.mod",
)
COMMAND = "python -m tools.gojson_table --operator-git DIR"


def generate(operator_git: Path, commit: str = PARITY_COMMIT) -> str:
    """The table's text, generated from `commit` of the operator repository at `operator_git`."""
    with tempfile.TemporaryDirectory(prefix="gojsontable-") as tmp:
        work = Path(tmp)
        for name in ("main.go", "go.mod", "go.sum"):
            shutil.copy(PROGRAM / name, work / name)
        archive = subprocess.run(
            ["git", f"--git-dir={operator_git}", "archive", commit, *OPERATOR_PATHS],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(work)], input=archive, check=True)
        env_cmd = ["go", "run", ".", f"-operator-commit={commit}", f"-generator={COMMAND}"]
        return subprocess.run(
            env_cmd, cwd=work, check=True, capture_output=True, text=True, env=_go_env()
        ).stdout


def _go_env() -> dict[str, str]:
    import os

    return {**os.environ, "GOFLAGS": "-mod=readonly", "GOTOOLCHAIN": "local", "CGO_ENABLED": "0"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.gojson_table", description=__doc__.splitlines()[0])
    parser.add_argument("--operator-git", type=Path, required=True, help="git dir of ai-dynamo/dynamo")
    parser.add_argument("--commit", default=PARITY_COMMIT)
    parser.add_argument("--out", type=Path, default=TABLE)
    args = parser.parse_args(argv)
    try:
        text = generate(args.operator_git, args.commit)
    except subprocess.CalledProcessError as e:
        sys.stderr.write((e.stderr or b"").decode() if isinstance(e.stderr, bytes) else e.stderr or "")
        return 1
    args.out.write_text(text, encoding="utf-8")
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
