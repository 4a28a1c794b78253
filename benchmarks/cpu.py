"""CPU seconds by kind of process while a step runs, sampled from /proc (Linux): who a step's time goes
to on a machine where the engine, the program, the dynamic providers and the control plane share the
cores. A process's CPU is its last sample's, so one that exits between samples loses at most one
interval's worth; this process is left out.

    with CpuSampler() as cpu:
        stack.up()
    cpu.by_kind()  # {"pulumi": 66.3, "program": 13.4, "kube-apiserver": 33.2, ...}
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

# How often the sampler reads /proc.
SAMPLE_EVERY_S = 0.25
# Clock ticks per second of /proc's CPU times.
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# A process's kind by a marker in its arguments, first match: the Python processes of a Pulumi run.
PYTHON_KINDS = (
    ("pulumi-language-python-exec", "program"),
    ("pulumi.dynamic", "dynamic provider"),
    ("pulumi_language_python", "language host"),
)
# A process's kind by its executable's name (argv[0]'s base name), where it starts with one of these.
BINARY_KINDS = (
    ("pulumi-resource-kubernetes", "pulumi-kubernetes"),
    ("pulumi-language-", "language host"),
    ("pulumi", "pulumi"),
    ("kube-apiserver", "kube-apiserver"),
    ("kube-controller-manager", "kube-controller-manager"),
    ("kube-scheduler", "kube-scheduler"),
    ("etcd", "etcd"),
    ("kwok", "kwok"),
)
# Every other process.
OTHER = "other"


@dataclass(frozen=True)
class Sample:
    """One process as read once: its arguments and its CPU seconds so far."""

    argv: tuple[str, ...]
    cpu_s: float


def kind_of(argv: tuple[str, ...]) -> str:
    """The kind of a process with these arguments (OTHER when none fits)."""
    if not argv:
        return OTHER
    for marker, kind in PYTHON_KINDS:
        if any(marker in a for a in argv):
            return kind
    name = os.path.basename(argv[0])
    for prefix, kind in BINARY_KINDS:
        if name.startswith(prefix):
            return kind
    return OTHER


def read_process(pid: int, proc: Path = Path("/proc")) -> Sample | None:
    """The process `pid` now, or None once it is gone. A zombie has no arguments left: it keeps none."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])
    argv = tuple(a.decode(errors="replace") for a in raw.split(b"\0") if a)
    return Sample(argv, (utime + stime) / CLOCK_TICKS)


def merge(seen: dict[int, Sample], pid: int, sample: Sample) -> None:
    """Keep the latest CPU of `pid` and the first arguments it was seen with (a zombie's are empty)."""
    known = seen.get(pid)
    seen[pid] = sample if known is None else Sample(known.argv or sample.argv, max(known.cpu_s, sample.cpu_s))


def cpu_by_kind(before: dict[int, Sample], after: dict[int, Sample]) -> dict[str, float]:
    """CPU seconds spent between the two readings, summed by kind, largest first; a pid whose arguments
    changed is another process (its CPU counts from zero)."""
    out: dict[str, float] = {}
    for pid, sample in after.items():
        start = before.get(pid)
        base = start.cpu_s if start is not None and start.argv == sample.argv else 0.0
        spent = sample.cpu_s - base
        if spent > 0:
            kind = kind_of(sample.argv)
            out[kind] = out.get(kind, 0.0) + spent
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def read_all(proc: Path = Path("/proc")) -> dict[int, Sample]:
    """Every process but this one, now."""
    out: dict[int, Sample] = {}
    for entry in proc.iterdir() if proc.is_dir() else ():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            sample = read_process(int(entry.name), proc)
            if sample is not None:
                out[int(entry.name)] = sample
    return out


class CpuSampler:
    """Samples every process while its `with` block runs (a thread); `by_kind()` after it."""

    def __init__(self, every_s: float = SAMPLE_EVERY_S) -> None:
        self.every_s = every_s
        self.before: dict[int, Sample] = {}
        self.seen: dict[int, Sample] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        for pid, sample in read_all().items():
            merge(self.seen, pid, sample)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self._sample()

    def __enter__(self) -> CpuSampler:
        self.before = read_all()
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def by_kind(self) -> dict[str, float]:
        return cpu_by_kind(self.before, self.seen)
