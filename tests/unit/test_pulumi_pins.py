"""tools/toolchain.toml is the one source of the Pulumi version; every pin that cannot read it agrees.

The language host reads `[pulumi] version` at start. requirements.txt, pyproject.toml's dependency
range and the CI examples are formats that cannot read another file, so these tests compare them.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

from tests.conftest import REPO
from tools import pulumi_language_python, toolchain

PINS = toolchain.versions()
PULUMI = PINS["pulumi"]["version"]
PULUMI_KUBERNETES = PINS["pulumi_kubernetes"]["version"]
# Files allowed to spell the Pulumi version out: the source and the pins checked below.
PIN_FILES = {"tools/toolchain.toml", "requirements.txt", "pyproject.toml"}
CI_EXAMPLES = REPO / "examples" / "ci"
# Where a stray copy of the version would be a pin (README prose and test fixtures are not).
SCANNED = ("tools", "dynamo_infra", "policy", "examples", "deploy", "stacks", "benchmarks", ".ci")
SCANNED_FILES = ("Dockerfile", "Pulumi.yaml", "requirements-dev.txt")
TEXT_SUFFIXES = {".py", ".toml", ".txt", ".yml", ".yaml", ".json", ".sh", ".cfg", ".ini", ".md", ""}


def requirement_pins(path: Path) -> dict[str, str]:
    """`name==version` lines of a requirements file, by name."""
    pins = {}
    for line in path.read_text().splitlines():
        m = re.fullmatch(r"([A-Za-z0-9._-]+)==(\S+)", line.split("#", 1)[0].strip())
        if m:
            pins[m[1].lower()] = m[2]
    return pins


def pyproject_requirement(name: str) -> Requirement:
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    (req,) = [Requirement(d) for d in deps if Requirement(d).name == name]
    return req


def test_requirements_pin_the_python_sdk_at_the_cli_version() -> None:
    assert requirement_pins(REPO / "requirements.txt")["pulumi"] == PULUMI


def test_pyprojects_floor_is_the_cli_version_within_its_major() -> None:
    spec = {(s.operator, s.version) for s in pyproject_requirement("pulumi").specifier}
    assert spec == {(">=", PULUMI), ("<", str(Version(PULUMI).major + 1))}


def test_the_kubernetes_sdk_pin_is_the_provider_plugin_version() -> None:
    # The SDK asks the engine for the plugin at its own version, as semver: the host's translation.
    pin = requirement_pins(REPO / "requirements.txt")["pulumi-kubernetes"]
    assert pulumi_language_python.plugin_version(pin) == PULUMI_KUBERNETES
    assert pyproject_requirement("pulumi-kubernetes").specifier.contains(pin, prereleases=True)


def test_the_ci_examples_install_the_pinned_cli() -> None:
    found = {
        str(p.relative_to(REPO)): m[1]
        for p in sorted(CI_EXAMPLES.rglob("*.yml"))
        for m in re.finditer(r"pulumi-version:\s*['\"]?([^\s'\"]+)", p.read_text())
    }
    assert found, "no pulumi-version in examples/ci"
    assert found == dict.fromkeys(found, PULUMI)


def test_the_language_host_reads_its_version_from_the_toolchain_file() -> None:
    assert pulumi_language_python.TOOLCHAIN_FILE.resolve() == toolchain.VERSIONS_FILE.resolve()
    assert pulumi_language_python.pulumi_version() == PULUMI
    assert PULUMI not in Path(pulumi_language_python.__file__).read_text()


def test_no_other_file_spells_the_version_out() -> None:
    files = [REPO / f for f in SCANNED_FILES if (REPO / f).is_file()]
    for top in SCANNED:
        files += [p for p in (REPO / top).rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES]
    stray = {
        rel
        for p in files
        if PULUMI in p.read_text(errors="replace")
        and (rel := str(p.relative_to(REPO))) not in PIN_FILES
        and not p.is_relative_to(CI_EXAMPLES)
    }
    assert not stray, f"read the Pulumi version from tools/toolchain.toml instead of writing {PULUMI} in"


def test_the_requirements_reader_sees_only_real_pins(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text("-r base.txt\n# pulumi==1.0.0\npulumi==3.1.0  # the SDK\nhttpx>=0.27\n")
    assert requirement_pins(path) == {"pulumi": "3.1.0"}
