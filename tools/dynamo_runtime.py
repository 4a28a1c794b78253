"""NVIDIA's Dynamo runtime (PyPI `ai-dynamo`, `ai-dynamo-runtime`) in a virtualenv of its own.

The end-to-end tests run a deployed graph's pods as processes of this runtime: the CPU-only frontend
(`python -m dynamo.frontend`) and the mocker engine (`python -m dynamo.mocker`). Its pins differ
from ours, so it never shares our virtualenv. Later releases pull an optional dependency that cannot
be installed here, so the two Dynamo wheels go in with `--no-deps`, beside their declared runtime
requirements pinned in `dynamo-runtime-requirements.txt`. Built once per requirements into the
toolchain cache (next to the Go programs), so clones and CI reuse it.

    python -m tools.dynamo_runtime          # install if missing; prints the interpreter's path
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tools import toolchain

# The release of our parity pin (ai-dynamo/dynamo cdf9267d).
DYNAMO_VERSION = "1.4.0"
DYNAMO_PACKAGES = (f"ai-dynamo=={DYNAMO_VERSION}", f"ai-dynamo-runtime=={DYNAMO_VERSION}")
REQUIREMENTS = Path(__file__).with_name("dynamo-runtime-requirements.txt")
# The interpreter the runtime's pods' `python3` stands for (the images ship Python 3.12; 3.11 is ours).
BASE_PYTHON = sys.executable


def _key() -> str:
    text = "\n".join([*DYNAMO_PACKAGES, REQUIREMENTS.read_text(), f"{sys.version_info[:2]}"])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def root() -> Path:
    """The runtime virtualenv's folder for the current pins."""
    return toolchain.cache_root() / f"dynamo-runtime-{DYNAMO_VERSION}-{_key()}"


def bin_dir() -> Path:
    return root() / "bin"


def ensure() -> Path:
    """The runtime virtualenv's python, installed when missing (one installer at a time)."""
    venv = root()
    python = venv / "bin" / "python"
    marker = venv / ".complete"
    if marker.exists():
        return python
    with toolchain._lock(venv.name):
        if marker.exists():
            return python
        started = time.monotonic()
        toolchain.log(f"dynamo runtime {DYNAMO_VERSION}: installing into {venv}")
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([BASE_PYTHON, "-m", "venv", str(venv)], check=True)
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps"]
        subprocess.run([*pip, *DYNAMO_PACKAGES], check=True)
        subprocess.run([*pip, "-r", str(REQUIREMENTS)], check=True)
        subprocess.run(
            [
                str(python),
                "-c",
                "import dynamo.frontend, dynamo.mocker, dynamo.planner.core.adapters, dynamo.planner.core.load.predictors, dynamo._core",
            ],
            check=True,
        )
        marker.write_text(f"{time.monotonic() - started:.1f}\n")
        toolchain.log(f"dynamo runtime {DYNAMO_VERSION}: ready in {time.monotonic() - started:.0f}s")
    return python


def setup_seconds() -> float | None:
    """How long the installation took (None before it exists)."""
    marker = root() / ".complete"
    return float(marker.read_text()) if marker.exists() else None


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__).parse_args(argv)
    print(ensure())
    return 0


if __name__ == "__main__":
    sys.exit(main())
