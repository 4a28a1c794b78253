"""The harness's Dynamo runtime matrix (tools/dynamo_runtime.py) and its aisimulate_core stand-in,
without installing anything."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from tools import dynamo_runtime
from tools.dynamo_runtime import RELEASES, for_image, requirements

FRONTEND = "nvcr.io/nvidia/ai-dynamo/dynamo-frontend"


def pins(text: str) -> dict[str, str]:
    return dict(
        line.split("==", 1) for line in text.splitlines() if "==" in line and not line.startswith("#")
    )


def test_the_harness_runs_the_pin_and_1_6_1() -> None:
    assert list(RELEASES) == ["1.4.0", "1.6.1"]
    assert RELEASES["1.6.1"].packages == ("ai-dynamo==1.6.1", "ai-dynamo-runtime==1.6.1")


def test_1_4_0_installs_the_base_pins_unchanged() -> None:
    """The pin's release installs exactly the base file (so its cached virtualenv keeps its key)."""
    assert requirements(RELEASES["1.4.0"]) == dynamo_runtime.REQUIREMENTS.read_text()


def test_a_release_file_replaces_and_adds_pins_by_name() -> None:
    base, new = pins(dynamo_runtime.REQUIREMENTS.read_text()), pins(requirements(RELEASES["1.6.1"]))
    # ai-dynamo 1.6.1 declares certifi>=2026.10.19 and redis>=6.2.0,<9.
    assert base["certifi"] == "2026.10.18" and new["certifi"] == "2026.10.19.post1"
    assert "redis" not in base and new["redis"] == "8.1.0"
    assert {k: v for k, v in new.items() if k not in ("certifi", "redis")} == {
        k: v for k, v in base.items() if k != "certifi"
    }
    # Never two pins of one package (pip refuses double requirements).
    names = [
        line.split("==")[0].lower() for line in requirements(RELEASES["1.6.1"]).splitlines() if "==" in line
    ]
    assert len(names) == len(set(names))


def test_releases_have_their_own_cached_virtualenvs() -> None:
    for version in RELEASES:
        assert dynamo_runtime.root(version).name.startswith(f"dynamo-runtime-{version}-")
    assert dynamo_runtime.root("1.4.0").parent == dynamo_runtime.root("1.6.1").parent


@pytest.mark.parametrize(
    ("image", "release"),
    [
        (f"{FRONTEND}:1.4.0", "1.4.0"),
        (f"{FRONTEND}:1.4.1", "1.4.0"),
        (f"{FRONTEND}:1.6.1", "1.6.1"),
        (f"{FRONTEND}:1.6.0", "1.6.1"),
        ("nvcr.io/nvidia/ai-dynamo/vllm-runtime:v1.6.1-cuda13", "1.6.1"),
        (f"{FRONTEND}:latest", "1.4.0"),
    ],
)
def test_an_image_runs_on_the_release_of_its_tags_major_minor(image: str, release: str) -> None:
    assert for_image(image).version == release


def test_an_image_of_a_release_the_harness_lacks_is_refused() -> None:
    with pytest.raises(ValueError, match=r"no Dynamo runtime 1\.5 .*1\.4\.0, 1\.6\.1"):
        for_image(f"{FRONTEND}:1.5.0")


def test_only_1_6_1_has_the_aisimulate_core_stand_in() -> None:
    assert RELEASES["1.4.0"].standins == () and RELEASES["1.6.1"].standins == ("aisimulate_core",)
    assert (dynamo_runtime.STANDINS / "aisimulate_core" / "__init__.py").is_file()


STANDIN_USE = """
import sys
from aisimulate_core.sdk import ForwardPassPerfModelConfig, RustForwardPassPerfModel
from aisimulate_core._native import RustForwardPassPerfModel as Native
import aisimulate_core
uses = [
    lambda: ForwardPassPerfModelConfig(max_num_seqs=1),
    lambda: ForwardPassPerfModelConfig.from_legacy_engine_config({}),
    lambda: RustForwardPassPerfModel.best_available(None),
    lambda: Native(),
]
for use in uses:
    try:
        try:
            use()
        except Exception:
            print("swallowed by except Exception")
    except aisimulate_core.StandInCalled as e:
        print("raised:", e)
"""


def test_the_stand_in_imports_but_every_use_raises_past_except_exception() -> None:
    """What the 1.6 planner imports at load resolves; any call into it raises StandInCalled (a
    BaseException: no `except Exception` nor the planner's `except (ImportError, RuntimeError)` hides
    it) and logs the marker line the e2e tests look for."""
    run = subprocess.run(
        [sys.executable, "-c", STANDIN_USE],
        env={"PYTHONPATH": str(dynamo_runtime.STANDINS)},
        capture_output=True,
        text=True,
        check=True,
    )
    out = run.stdout.splitlines()
    assert len(out) == 4 and all(
        line.startswith("raised: aisimulate_core stand-in called: ") for line in out
    ), out
    assert "aisimulate_core.sdk.ForwardPassPerfModelConfig(...)" in out[0]
    assert "aisimulate_core.sdk.ForwardPassPerfModelConfig.from_legacy_engine_config" in out[1]
    assert "aisimulate_core.sdk.RustForwardPassPerfModel.best_available" in out[2]
    assert run.stderr.count("aisimulate_core stand-in called") == 4


def test_the_stand_in_is_not_importable_from_our_virtualenv() -> None:
    """Only the 1.6 runtime's site-packages holds it."""
    assert str(Path(dynamo_runtime.STANDINS)) not in sys.path
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("aisimulate_core")
