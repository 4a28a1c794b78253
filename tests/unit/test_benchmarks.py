"""The benchmark harness's pure parts: target evaluation, the table, section selection, and the
parsers of `-X importtime` output and audit events."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.__main__ import SECTIONS, select
from benchmarks.ab_bench import order, report
from benchmarks.common import Figure, format_value, memory_mib, table
from benchmarks.compare import change, markdown, rows
from benchmarks.cpu import CLOCK_TICKS, Sample, cpu_by_kind, kind_of, merge, read_all, read_process
from benchmarks.render_bench import parse_importtime, top_imports
from benchmarks.requests_bench import reads_writes, tally


@pytest.mark.parametrize(
    ("value", "target", "higher", "met"),
    [
        (0.4, 0.5, False, True),
        (0.5, 0.5, False, True),
        (0.6, 0.5, False, False),
        (900.0, 1000.0, True, False),
        (1000.0, 1000.0, True, True),
        (3.0, None, False, None),
        (math.nan, 1.0, False, None),
    ],
)
def test_target(value: float, target: float | None, higher: bool, met: bool | None) -> None:
    assert Figure("f", value, "s", target, higher_is_better=higher).met is met


def test_json_has_met_and_no_nan() -> None:
    assert Figure("f", math.nan, "s", 1.0).to_json()["value"] is None
    assert Figure("f", 2.0, "s", 1.0).to_json()["met"] is False


@pytest.mark.parametrize(
    ("value", "text"), [(0.0, "0"), (20.0, "20"), (0.4531, "0.453"), (1653.2, "1653"), (math.nan, "n/a")]
)
def test_format_value(value: float, text: str) -> None:
    assert format_value(value) == text


def test_table_aligns_and_marks_misses() -> None:
    lines = table(
        [Figure("render.fleet_s", 0.6, "s", 0.5), Figure("requests.noop.reads", 15, "requests")]
    ).splitlines()
    assert lines[0].split() == ["figure", "value", "unit", "target", "met?"]
    assert lines[2].split() == ["render.fleet_s", "0.6", "s", "≤", "0.5", "NO"]
    assert lines[3].split() == ["requests.noop.reads", "15", "requests"]
    unit_column = lines[0].index("unit")
    assert lines[2].index(" s ") + 1 == unit_column == lines[3].index("requests", len("requests.noop.reads"))


def test_select_keeps_table_order_and_refuses_unknown() -> None:
    first, *rest = SECTIONS
    assert select(None) == list(SECTIONS)
    assert select(",".join([*rest, first])) == list(SECTIONS)
    with pytest.raises(ValueError, match="nope"):
        select("nope")


def test_importtime_top() -> None:
    stderr = (
        "import time: self [us] | cumulative | imported package\n"
        "import time:       100 |        100 |   a.x\n"
        "import time:       300 |        400 | a\n"
        "import time:      2000 |       2000 | b\n"
    )
    entries = parse_importtime(stderr)
    assert entries == [("a.x", 100, 100), ("a", 300, 400), ("b", 2000, 2000)]
    top = top_imports(entries, 2)
    assert top["modules_self_ms"] == {"b": 2.0, "a": 0.3}
    assert top["packages_self_ms"] == {"b": 2.0, "a": 0.4}


def test_requests_by_client_reads_and_writes() -> None:
    events = [
        {"userAgent": "dynamo-infra/0.1.0", "verb": "get", "objectRef": {"resource": "deployments"}},
        {"userAgent": "dynamo-infra/0.1.0", "verb": "patch", "objectRef": {"resource": "deployments"}},
        {
            "userAgent": "pulumi-kubernetes/4",
            "verb": "patch",
            "objectRef": {"resource": "dgd", "subresource": "status"},
        },
        {"userAgent": "kube-controller-manager/v1", "verb": "update", "objectRef": {"resource": "leases"}},
    ]
    by_client = tally(events)
    assert by_client["dynamo-infra"] == {"get deployments": 1, "patch deployments": 1}
    assert by_client["pulumi-kubernetes"] == {"patch dgd/status": 1}
    assert reads_writes(by_client) == (1, 2)


def test_ab_rounds_alternate_the_order() -> None:
    assert order(["a", "b"], 3) == ["a", "b", "b", "a", "a", "b"]
    assert order(["a", "b"], 0) == []


def test_ab_report_lists_every_round_and_the_median() -> None:
    def run(up: float, destroy: float) -> dict[str, float]:
        return {"first up": up, "destroy": destroy, "state bytes": 2.5e6}

    text = report(["a" * 40, "b" * 40], {"a" * 40: [run(3, 1), run(1, 2)], "b" * 40: [run(2, 2), run(4, 4)]})
    lines = text.splitlines()
    assert lines[0] == "| | aaaaaaaa | bbbbbbbb |"
    assert lines[2] == "| first up | 3.0, 1.0 (median 2.0) s | 2.0, 4.0 (median 3.0) s |"
    assert lines[3] == "| destroy | 1.0, 2.0 (median 1.5) s | 2.0, 4.0 (median 3.0) s |"
    assert lines[4] == "| state after `up` | 2.50 MB | 2.50 MB |"


def test_cpu_kinds_by_arguments_then_executable() -> None:
    assert (
        kind_of(("/venv/bin/python", "-u", "/bin/pulumi-language-python-exec", "--engine", "x")) == "program"
    )
    assert kind_of(("/venv/bin/python", "-u", "-m", "pulumi.dynamic", "127.0.0.1:1")) == "dynamic provider"
    assert kind_of(("/tools/bin/pulumi", "up", "--yes")) == "pulumi"
    assert kind_of(("/tools/bin/pulumi-resource-kubernetes", "127.0.0.1:1")) == "pulumi-kubernetes"
    assert kind_of(("/tools/bin/kube-apiserver", "--etcd-servers=x")) == "kube-apiserver"
    assert kind_of(("/tools/bin/etcd",)) == "etcd"
    assert kind_of(("/usr/bin/bash", "-c", "pulumi")) == "other"
    assert kind_of(()) == "other"


def test_cpu_spent_between_readings_by_kind(tmp_path: Path) -> None:
    cli, program = ("/bin/pulumi", "up"), ("python", "pulumi-language-python-exec")
    before = {1: Sample(("/bin/etcd",), 10.0), 2: Sample(cli, 5.0)}
    seen: dict[int, Sample] = {}
    merge(seen, 1, Sample(("/bin/etcd",), 12.5))
    merge(seen, 3, Sample(program, 4.0))
    # An exited process is read as a zombie (no arguments) with its final CPU: it keeps its kind.
    merge(seen, 3, Sample((), 6.0))
    # Pid 2 now belongs to another process: its CPU counts from zero.
    merge(seen, 2, Sample(("/bin/kube-apiserver",), 1.5))
    assert cpu_by_kind(before, seen) == {"program": 6.0, "etcd": 2.5, "kube-apiserver": 1.5}
    # /proc as Linux lays it out: utime and stime after the command name in parentheses.
    proc = tmp_path / "proc"
    (proc / "42").mkdir(parents=True)
    (proc / "42" / "stat").write_text(
        "42 (pulumi (x)) S " + " ".join(["0"] * 10) + f" {CLOCK_TICKS * 3} {CLOCK_TICKS}"
    )
    (proc / "42" / "cmdline").write_bytes(b"/bin/pulumi\0up\0")
    assert read_process(42, proc) == Sample(("/bin/pulumi", "up"), 4.0)
    assert read_process(43, proc) is None
    assert read_all(proc) == {42: Sample(("/bin/pulumi", "up"), 4.0)}


def _report(load: float, *figs: Figure) -> dict[str, object]:
    return {
        "machine": {"cores": 2, "load_average": [load, 0.5, 0.25]},
        "toolchain": {"pulumi_cli": "v3.260.0", "pulumi_sdk": "3.260.0"},
        "sections": {"fleet": {"figures": [f.to_json() for f in figs]}},
    }


def test_compare_change_is_relative_to_before() -> None:
    assert change(80.0, 60.0) == "-25%"
    assert change(2.0, 3.0) == "+50%"
    assert change(0.5, 0.5) == "="
    assert change(None, 1.0) == "—"
    assert change(0.0, 1.0) == "+1"
    assert change(-0.08, 0.04) == "+0.12"
    assert change(0.613, 0.345, "fraction") == "-0.27"


def test_compare_rows_join_both_reports_in_the_after_order() -> None:
    before = _report(
        0.1,
        Figure("fleet.100.first_up_s", 298.0, "s", target=90),
        Figure("fleet.gone", 1.0, "s"),
        Figure("apply.up.ours_per_configgroup", 1.2, "ratio", target=0.9),
    )
    after = _report(
        1.5,
        Figure("apply.up.ours_per_configgroup", 1.37, "ratio", target=0.9),
        Figure("fleet.100.first_up_s", 80.2, "s", target=90),
        Figure("fleet.new", float("nan"), "s"),
    )
    assert rows(before, after) == [
        ["`apply.up.ours_per_configgroup`", "ratio", "≤ 0.9", "1.2", "1.37", "+14%", "NO"],
        ["`fleet.100.first_up_s`", "s", "≤ 90", "298", "80.2", "-73%", "yes"],
        ["`fleet.new`", "s", "", "—", "—", "—", ""],
        ["`fleet.gone`", "s", "", "1", "—", "—", ""],
    ]
    assert [r[0] for r in rows(before, after, ["fleet.100"])] == ["`fleet.100.first_up_s`"]
    text = markdown(before, after, ("4edcc7e", "f32cd27"), ["apply"]).splitlines()
    assert (
        text[0]
        == "- 4edcc7e: 2 cores, load average at start 0.10 / 0.50 / 0.25; Pulumi v3.260.0, SDK 3.260.0"
    )
    assert text[1].startswith("- f32cd27: 2 cores, load average at start 1.50 ")
    assert text[3] == "| figure | unit | target | 4edcc7e | f32cd27 | change | met? |"
    assert text[5] == "| `apply.up.ours_per_configgroup` | ratio | ≤ 0.9 | 1.2 | 1.37 | +14% | NO |"
    assert len(text) == 6


def test_child_peak_memory_excludes_its_parent() -> None:
    own = memory_mib()
    assert 0 < own["VmRSS"] <= own["VmHWM"]
    ballast = b"x" * (256 << 20)  # the parent's pages, touched
    child = subprocess.run(
        [sys.executable, "-c", "from benchmarks.common import memory_mib; print(memory_mib()['VmHWM'])"],
        capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert len(ballast) == 256 << 20
    assert 0 < float(child.stdout) < 128
