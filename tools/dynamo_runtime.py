"""NVIDIA's Dynamo runtime (PyPI `ai-dynamo`, `ai-dynamo-runtime`) in a virtualenv of its own, per release.

The end-to-end tests run a deployed graph's pods as processes of this runtime: the CPU-only frontend
(`python -m dynamo.frontend`), the mocker engine (`python -m dynamo.mocker`) and the planner. Its pins
differ from ours, so it never shares our virtualenv. Each release in RELEASES gets a virtualenv: the
two Dynamo wheels go in with `--no-deps` (later releases pull optional dependencies that cannot be
installed here), beside their declared runtime requirements pinned in `dynamo-runtime-requirements.txt`
(the 1.4.0 set) with the release's own pins replacing or adding to it
(`dynamo-runtime-requirements-<release>.txt`), plus the release's import stand-ins
(tools/runtime_standins/). An image runs on the release of its tag's major.minor (`for_image`). Built
once per release and pins into the toolchain cache (next to the Go programs), so clones and CI reuse it.

    python -m tools.dynamo_runtime                   # 1.4.0: install if missing; prints the interpreter
    python -m tools.dynamo_runtime --release 1.6.1   # another release (or `all`)
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from dynamo_infra.api.releases import RuntimeVersion
from tools import toolchain

# The release of our parity pin (ai-dynamo/dynamo cdf9267d): what an image that names no release runs.
DYNAMO_VERSION = "1.4.0"
# The base pins (the 1.4.0 set); a release's own file replaces or adds pins by package name.
REQUIREMENTS = Path(__file__).with_name("dynamo-runtime-requirements.txt")
# Import stand-ins for packages a release imports that cannot be installed here (tools/podprocs.py
# lists them among the harness's substitutions).
STANDINS = Path(__file__).with_name("runtime_standins")
# The interpreter the runtime's pods' `python3` stands for (the images ship Python 3.12; 3.11 is ours).
BASE_PYTHON = sys.executable
# What a runtime must import once installed.
IMPORTS = (
    "dynamo.frontend",
    "dynamo.mocker",
    "dynamo.planner.core.adapters",
    "dynamo.planner.core.load.predictors",
    "dynamo._core",
)


@dataclass(frozen=True)
class Release:
    """One Dynamo runtime release the harness runs: its pins on top of the base set, its stand-ins."""

    version: str
    # Requirements files (tools/) whose pins replace or add to the base set's.
    requirements: tuple[str, ...] = ()
    # Top-level packages of tools/runtime_standins/ copied into its site-packages.
    standins: tuple[str, ...] = ()
    # Modules it must import beyond IMPORTS.
    imports: tuple[str, ...] = ()

    @property
    def packages(self) -> tuple[str, ...]:
        return (f"ai-dynamo=={self.version}", f"ai-dynamo-runtime=={self.version}")

    @property
    def series(self) -> tuple[int, int]:
        major, minor, _ = self.version.split(".")
        return int(major), int(minor)


# The releases the harness runs; an image runs on the release of its tag's major.minor.
RELEASES = {
    r.version: r
    for r in (
        Release(DYNAMO_VERSION),
        Release(
            "1.6.1",
            requirements=("dynamo-runtime-requirements-1.6.1.txt",),
            standins=("aisimulate_core",),
            imports=("dynamo.planner.core.state_machine",),
        ),
    )
}
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _name(line: str) -> str | None:
    m = _REQUIREMENT_NAME.match(line)
    return re.sub(r"[-_.]+", "-", m.group(1)).lower() if m and not line.lstrip().startswith("#") else None


def requirements(release: Release) -> str:
    """The release's pins: the base file with each of its files' pins replacing or adding to it (the
    base text itself for a release with none)."""
    text = REQUIREMENTS.read_text()
    for file in release.requirements:
        extra = {n: line for line in Path(__file__).with_name(file).read_text().splitlines()
                 if (n := _name(line))}  # fmt: skip
        lines = [extra.pop(n) if (n := _name(line)) in extra else line for line in text.splitlines()]
        text = "\n".join([*lines, *extra.values()]) + "\n"
    return text


def _standin_files(release: Release) -> list[Path]:
    return sorted(f for pkg in release.standins for f in (STANDINS / pkg).rglob("*.py"))


def _key(release: Release) -> str:
    parts = [*release.packages, requirements(release), f"{sys.version_info[:2]}"]
    parts += [f"{f.relative_to(STANDINS)}\n{f.read_text()}" for f in _standin_files(release)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def release(version: str = DYNAMO_VERSION) -> Release:
    try:
        return RELEASES[version]
    except KeyError:
        raise ValueError(f"no Dynamo runtime {version} (the harness runs {', '.join(RELEASES)})") from None


def for_image(image: str) -> Release:
    """The release an image runs on: the one of its tag's major.minor; the pin's when the tag names none."""
    tag = RuntimeVersion.of_image(image)
    if tag is None:
        return release()
    for r in RELEASES.values():
        if r.series == (tag.major, tag.minor):
            return r
    raise ValueError(f"image {image}: no Dynamo runtime {tag.major}.{tag.minor} (the harness runs "
                     f"{', '.join(RELEASES)})")  # fmt: skip


def root(version: str = DYNAMO_VERSION) -> Path:
    """The runtime virtualenv's folder for a release's current pins."""
    r = release(version)
    return toolchain.cache_root() / f"dynamo-runtime-{r.version}-{_key(r)}"


def bin_dir(version: str = DYNAMO_VERSION) -> Path:
    return root(version) / "bin"


def image_bin(image: str) -> Path:
    """The bin folder of the runtime an image runs on (installed when missing)."""
    return ensure(for_image(image).version).parent


def ensure(version: str = DYNAMO_VERSION) -> Path:
    """The release's runtime virtualenv's python, installed when missing (one installer at a time)."""
    r = release(version)
    venv = root(version)
    python = venv / "bin" / "python"
    marker = venv / ".complete"
    if marker.exists():
        return python
    with toolchain._lock(venv.name):
        if marker.exists():
            return python
        started = time.monotonic()
        toolchain.log(f"dynamo runtime {r.version}: installing into {venv}")
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([BASE_PYTHON, "-m", "venv", str(venv)], check=True)
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps"]
        subprocess.run([*pip, *r.packages], check=True)
        pins = venv / "requirements.txt"
        pins.write_text(requirements(r))
        subprocess.run([*pip, "-r", str(pins)], check=True)
        if r.standins:
            site = subprocess.run(
                [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                check=True, capture_output=True, text=True,
            ).stdout.strip()  # fmt: skip
            for pkg in r.standins:
                shutil.copytree(
                    STANDINS / pkg, Path(site) / pkg, ignore=shutil.ignore_patterns("__pycache__")
                )
        subprocess.run([str(python), "-c", "import " + ", ".join([*IMPORTS, *r.imports])], check=True)
        marker.write_text(f"{time.monotonic() - started:.1f}\n")
        toolchain.log(f"dynamo runtime {r.version}: ready in {time.monotonic() - started:.0f}s")
    return python


def setup_seconds(version: str = DYNAMO_VERSION) -> float | None:
    """How long the release's installation took (None before it exists)."""
    marker = root(version) / ".complete"
    return float(marker.read_text()) if marker.exists() else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--release", choices=[*RELEASES, "all"], default=DYNAMO_VERSION)
    args = ap.parse_args(argv)
    for version in RELEASES if args.release == "all" else [args.release]:
        print(ensure(version))
    return 0


if __name__ == "__main__":
    sys.exit(main())
