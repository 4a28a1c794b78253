"""Pinned toolchain: locate or build every Go program the project runs.

Each group of binaries (Pulumi, Kubernetes, etcd, kwok, ...) is built once from its Go module into
a per-user cache folder keyed by version, outside the work tree, and reused by every clone and CI
run. A binary already on PATH is used when its version matches the pin.

    python -m tools.toolchain            # build what is missing, print where it is
    python -m tools.toolchain --env      # print `export PATH=...` lines for a shell
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

VERSIONS_FILE = Path(__file__).with_name("toolchain.toml")
# Environment variable that moves the cache (default: $XDG_CACHE_HOME/dynamo-infra/toolchain).
CACHE_ENV = "DYNAMO_INFRA_TOOLCHAIN_DIR"
# Files written by a build that completed; a folder without it is rebuilt.
STAMP = ".complete"
# Go settings for reproducible, static, offline-friendly builds.
GO_ENV = {"CGO_ENABLED": "0", "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}
# Pulumi release commits are not all in the public checksum database; their sums are still
# recorded in each wrapper's go.sum on first download.
GO_NOSUMDB = "github.com/pulumi"


def versions() -> dict[str, dict[str, str]]:
    with VERSIONS_FILE.open("rb") as f:
        return tomllib.load(f)


def cache_root() -> Path:
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit).expanduser().resolve()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "dynamo-infra" / "toolchain"


class BuildError(RuntimeError):
    """A toolchain build failed; the message names the step and shows the log tail."""


def log(msg: str) -> None:
    print(f"[toolchain {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Group:
    """Binaries built together from one wrapper module at one pinned version."""

    name: str
    version: str
    binaries: tuple[str, ...]
    # Command and regex proving an ambient binary on PATH has the pinned version.
    version_probe: tuple[tuple[str, ...], str] | None
    build: Callable[[Group, Path, Path], None]

    @property
    def folder(self) -> Path:
        return cache_root() / f"{self.name}-{self.version}"

    @property
    def bin_dir(self) -> Path:
        return self.folder / "bin"

    def is_built(self) -> bool:
        return (self.folder / STAMP).exists() and all((self.bin_dir / b).exists() for b in self.binaries)

    def ambient_bin_dir(self) -> Path | None:
        """Folder on PATH holding every binary of the group at the pinned version, if any."""
        if self.version_probe is None:
            return None
        first = shutil.which(self.binaries[0])
        if first is None or Path(first).resolve().is_relative_to(cache_root()):
            return None
        folder = Path(first).parent
        if not all((folder / b).exists() for b in self.binaries):
            return None
        cmd, pattern = self.version_probe
        try:
            out = subprocess.run([str(folder / cmd[0]), *cmd[1:]], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return folder if re.search(pattern, out.stdout + out.stderr) else None


def _run(cmd: list[str], cwd: Path, logfile: Path, env: dict[str, str] | None = None) -> str:
    full_env = {**os.environ, **GO_ENV, **(env or {})}
    full_env["GONOSUMDB"] = ",".join(x for x in (os.environ.get("GONOSUMDB"), GO_NOSUMDB) if x)
    with logfile.open("a") as lf:
        lf.write(f"\n$ {' '.join(cmd)}\n")
        lf.flush()
        proc = subprocess.run(
            cmd, cwd=cwd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        lf.write(proc.stdout)
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-40:])
        raise BuildError(f"`{' '.join(cmd)}` failed (exit {proc.returncode}) in {cwd}; log {logfile}\n{tail}")
    return proc.stdout


def _wrapper(src: Path, module: str, go_version: str, replaces: list[str], logfile: Path) -> None:
    """A fresh wrapper module: pinned requires come from `go get`, never `go mod tidy`."""
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    lines = [f"module {module}", "", f"go {go_version}", ""]
    if replaces:
        lines += ["replace (", *[f"\t{r}" for r in replaces], ")", ""]
    (src / "go.mod").write_text("\n".join(lines))
    logfile.write_text(f"wrapper module {module} in {src}\n")


def _module_dir(src: Path, logfile: Path, mod: str) -> Path:
    out = _run(["go", "mod", "download", "-json", mod], src, logfile)
    info = json.loads(out)
    if "Error" in info:
        raise BuildError(f"cannot download {mod}: {info['Error']}")
    return Path(info["Dir"])


def _go_mod_file(src: Path, logfile: Path, mod: str) -> str:
    out = _run(["go", "mod", "download", "-json", mod], src, logfile)
    info = json.loads(out)
    if "Error" in info:
        raise BuildError(f"cannot download {mod}: {info['Error']}")
    return Path(info["GoMod"]).read_text()


def _go_build(src: Path, logfile: Path, out: Path, package: str, ldflags: str = "") -> None:
    """A static, stripped, path-trimmed build of `package` into `out`."""
    log(f"  go build {out.name}")
    _run(
        ["go", "build", "-trimpath", "-ldflags", f"-s -w {ldflags}".strip(), "-o", str(out), package],
        src,
        logfile,
    )


# --- builds ---------------------------------------------------------------------------------


def build_kubernetes(g: Group, src: Path, logfile: Path) -> None:
    ver = g.version
    _wrapper(src, "dynamo-infra.local/toolchain/kubernetes", "1.26", [], logfile)
    gomod = _go_mod_file(src, logfile, f"k8s.io/kubernetes@v{ver}")
    # Every staging module the release replaces locally is pinned to its published v0.<minor>.<patch>.
    staging = re.findall(r"^\s*(k8s\.io/[\w.-]+)\s+=>\s+\./staging/", gomod, re.M)
    if not staging:
        raise BuildError(f"no staging replace directives found in k8s.io/kubernetes@v{ver} go.mod")
    major, minor, patch = ver.split(".")
    staging_ver = f"v0.{minor}.{patch}"
    _wrapper(
        src,
        "dynamo-infra.local/toolchain/kubernetes",
        "1.26",
        [f"{m} => {m} {staging_ver}" for m in staging],
        logfile,
    )
    _run(["go", "get", f"k8s.io/kubernetes@v{ver}"], src, logfile)
    date = "2026-01-01T00:00:00Z"
    flags = []
    for p in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [
            f"-X {p}.gitVersion=v{ver}",
            f"-X {p}.gitMajor={major}",
            f"-X {p}.gitMinor={minor}",
            f"-X {p}.gitTreeState=clean",
            f"-X {p}.buildDate={date}",
        ]
    g.bin_dir.mkdir(parents=True, exist_ok=True)
    for b in g.binaries:
        _go_build(src, logfile, g.bin_dir / b, f"k8s.io/kubernetes/cmd/{b}", " ".join(flags))


def _build_main(
    g: Group, src: Path, logfile: Path, module: str, package: str, binary: str, ldflags: str = ""
) -> None:
    """`package` of `module` at the group's version, built into the group's bin folder as `binary`."""
    _wrapper(src, f"dynamo-infra.local/toolchain/{binary}", "1.26", [], logfile)
    _run(["go", "get", f"{module}@v{g.version}"], src, logfile)
    g.bin_dir.mkdir(parents=True, exist_ok=True)
    _go_build(src, logfile, g.bin_dir / binary, package, ldflags)


def _copy_from_module(mod: Path, files: Sequence[str], dest: Path, what: str) -> None:
    """Copy `files` (paths in the module) into `dest`; a missing one is a build error naming `what`."""
    dest.mkdir(exist_ok=True)
    for rel in files:
        f = mod / rel
        if not f.exists():
            raise BuildError(f"{rel} missing from {what}")
        shutil.copyfile(f, dest / f.name)


def build_etcd(g: Group, src: Path, logfile: Path) -> None:
    _build_main(g, src, logfile, "go.etcd.io/etcd/server/v3", "go.etcd.io/etcd/server/v3", "etcd")


# Stage files (node init/heartbeat, pod ready/complete/delete) ship in the kwok module, not the binary.
KWOK_STAGE_FILES = (
    "kustomize/stage/node/fast/node-initialize.yaml",
    "kustomize/stage/node/heartbeat/node-heartbeat.yaml",
    "kustomize/stage/pod/fast/pod-ready.yaml",
    "kustomize/stage/pod/fast/pod-complete.yaml",
    "kustomize/stage/pod/fast/pod-delete.yaml",
)


def build_kwok(g: Group, src: Path, logfile: Path) -> None:
    version_flag = f"-X sigs.k8s.io/kwok/pkg/consts.Version=v{g.version}"
    _build_main(g, src, logfile, "sigs.k8s.io/kwok", "sigs.k8s.io/kwok/cmd/kwok", "kwok", version_flag)
    module = f"sigs.k8s.io/kwok@v{g.version}"
    _copy_from_module(_module_dir(src, logfile, module), KWOK_STAGE_FILES, g.folder / "stages", module)


# The LWS module's webhook registrations and the JSON patches its kustomization applies to them.
LWS_WEBHOOK_FILES = tuple(
    f"config/webhook/{name}" for name in ("manifests.yaml", "mutating-patch.yaml", "validating-patch.yaml")
)


def build_lws(g: Group, src: Path, logfile: Path) -> None:
    """The LeaderWorkerSet controller manager (controllers and webhooks in one binary)."""
    version_flag = f"-X sigs.k8s.io/lws/pkg/version.GitVersion=v{g.version}"
    _build_main(
        g, src, logfile, "sigs.k8s.io/lws", "sigs.k8s.io/lws/cmd", "lws-controller-manager", version_flag
    )
    module = f"sigs.k8s.io/lws@v{g.version}"
    _copy_from_module(_module_dir(src, logfile, module), LWS_WEBHOOK_FILES, g.folder / "webhook", module)


def build_pulumi(g: Group, src: Path, logfile: Path) -> None:
    ver = g.version
    _wrapper(
        src,
        "dynamo-infra.local/toolchain/pulumi",
        "1.26",
        ["github.com/atotto/clipboard => github.com/tgummerer/clipboard v0.0.0-20241001131231-d02d263e614e"],
        logfile,
    )
    _run(
        ["go", "get", f"github.com/pulumi/pulumi/pkg/v3@v{ver}", f"github.com/pulumi/pulumi/sdk/v3@v{ver}"],
        src,
        logfile,
    )
    g.bin_dir.mkdir(parents=True, exist_ok=True)
    version_flag = f"-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v{ver}"
    _go_build(src, logfile, g.bin_dir / "pulumi", "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi", version_flag)
    # The dynamic-provider launcher and the language host's exec script ship in the sdk module.
    sdk = _module_dir(src, logfile, f"github.com/pulumi/pulumi/sdk/v3@v{ver}")
    for rel, name in (
        ("python/dist/pulumi-resource-pulumi-python", "pulumi-resource-pulumi-python"),
        ("python/cmd/pulumi-language-python-exec", "pulumi-language-python-exec"),
    ):
        dest = g.bin_dir / name
        shutil.copyfile(sdk / rel, dest)
        dest.chmod(0o755)


def build_pulumi_kubernetes(g: Group, src: Path, logfile: Path) -> None:
    """The Kubernetes provider plugin; its main embeds generated files missing from the module zip."""
    commit = versions()["pulumi_kubernetes"]["provider_module_version"]
    mod_path = "github.com/pulumi/pulumi-kubernetes/provider/v4"
    _wrapper(src, "dynamo-infra.local/toolchain/pulumi-kubernetes", "1.26", [], logfile)
    mod = _module_dir(src, logfile, f"{mod_path}@{commit}")
    cmd_dir = mod / "cmd" / "pulumi-resource-kubernetes"
    shutil.copyfile(cmd_dir / "main.go", src / "main.go")
    schema = json.loads((cmd_dir / "schema.json").read_text())
    schema["version"] = g.version
    (src / "schema-embed.json").write_text(json.dumps(schema))
    mapping = json.loads((cmd_dir / "terraform-mapping.json").read_text())
    (src / "terraform-mapping-embed.json").write_text(json.dumps(mapping))
    for extra in cmd_dir.glob("*-mapping.json"):
        if extra.name != "terraform-mapping.json":
            shutil.copyfile(extra, src / extra.name)
    _run(["go", "get", f"{mod_path}@{commit}"], src, logfile)
    g.bin_dir.mkdir(parents=True, exist_ok=True)
    version_flag = f"-X {mod_path}/pkg/version.Version={g.version}"
    _go_build(src, logfile, g.bin_dir / "pulumi-resource-kubernetes", ".", version_flag)


LANGUAGE_HOST = Path(__file__).with_name("pulumi_language_python.py")
# Plugins placed next to the `pulumi` binary, where the CLI finds them as bundled plugins.
BUNDLED = ("pulumi-resource-pulumi-python", "pulumi-language-python-exec", "pulumi-resource-kubernetes")


def _link(src: Path, dest: Path) -> None:
    """Hard link (no copy of a 100 MB binary) when on the same file system, else copy."""
    dest.unlink(missing_ok=True)
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)


def build_pulumi_bundle(g: Group, src: Path, logfile: Path) -> None:
    """`pulumi` with its plugins and our Python language host beside it (found as bundled, no
    ambient-plugin warnings); `path/` holds only a symlink to `pulumi` and goes on PATH."""
    from tools import pulumi_language_python

    by_name = {grp.name: grp for grp in groups()}
    sources = {
        "pulumi": by_name["pulumi"].bin_dir,
        "pulumi-resource-kubernetes": by_name["pulumi-kubernetes"].bin_dir,
    }
    g.bin_dir.mkdir(parents=True, exist_ok=True)
    for name in ("pulumi", *BUNDLED):
        _link(sources.get(name, by_name["pulumi"].bin_dir) / name, g.bin_dir / name)
    pulumi_language_python.install(g.bin_dir, sys.executable)
    path = g.folder / "path"
    path.mkdir(exist_ok=True)
    (path / "pulumi").unlink(missing_ok=True)
    (path / "pulumi").symlink_to(g.bin_dir / "pulumi")


def groups() -> list[Group]:
    v = versions()
    # The language host is versioned by its content: editing it re-installs it.
    # Longest builds first: two build at once.
    return [
        Group(
            "kubernetes",
            v["kubernetes"]["version"],
            ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"),
            (("kube-apiserver", "--version"), rf"Kubernetes v{re.escape(v['kubernetes']['version'])}\b"),
            build_kubernetes,
        ),
        Group(
            "pulumi-kubernetes",
            v["pulumi_kubernetes"]["version"],
            ("pulumi-resource-kubernetes",),
            None,
            build_pulumi_kubernetes,
        ),
        Group(
            "pulumi",
            v["pulumi"]["version"],
            ("pulumi", "pulumi-resource-pulumi-python", "pulumi-language-python-exec"),
            None,
            build_pulumi,
        ),
        Group(
            "lws",
            v["lws"]["version"],
            ("lws-controller-manager",),
            None,  # never found on PATH: always our build
            build_lws,
        ),
        Group(
            "kwok",
            v["kwok"]["version"],
            ("kwok",),
            None,  # stage files live beside our build only
            build_kwok,
        ),
        Group(
            "etcd",
            v["etcd"]["version"],
            ("etcd",),
            (("etcd", "--version"), rf"etcd Version: {re.escape(v['etcd']['version'])}\b"),
            build_etcd,
        ),
    ]


@contextlib.contextmanager
def _lock(name: str) -> Iterator[None]:
    """One builder per group at a time (concurrent test runs and bootstraps wait for each other)."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with (root / f".{name}.lock").open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _check_go(min_version: str) -> None:
    go = shutil.which("go")
    if go is None:
        raise BuildError(f"Go >= {min_version} is needed to build the toolchain; `go` is not on PATH")
    out = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True).stdout.strip()
    m = re.match(r"go(\d+)\.(\d+)", out)
    want = tuple(int(x) for x in min_version.split("."))
    if not m or (int(m[1]), int(m[2])) < want:
        raise BuildError(f"Go >= {min_version} is needed to build the toolchain; found {out or 'unknown'}")


# Cold builds run this many groups at once: compiles share the cores, links and downloads overlap.
PARALLEL_BUILDS = 2


def _ensure_group(g: Group) -> Path:
    with _lock(g.name):
        if g.is_built():
            return g.bin_dir
        ambient = g.ambient_bin_dir()
        if ambient is not None:
            log(f"{g.name} v{g.version}: using {ambient} from PATH")
            return ambient
        _check_go(versions()["go"]["min_version"])
        logs = cache_root() / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        logfile = logs / f"{g.name}-{g.version}.log"
        src = cache_root() / "src" / f"{g.name}-{g.version}"
        log(f"{g.name} v{g.version}: building (log: {logfile})")
        t0 = time.monotonic()
        if g.folder.exists():
            shutil.rmtree(g.folder)
        g.build(g, src, logfile)
        missing = [b for b in g.binaries if not (g.bin_dir / b).exists()]
        if missing:
            raise BuildError(f"{g.name}: build finished without {', '.join(missing)}")
        (g.folder / STAMP).write_text(json.dumps({"version": g.version, "built": time.time()}))
        log(f"{g.name} v{g.version}: built in {time.monotonic() - t0:.0f}s")
        return g.bin_dir


def bundle() -> Group:
    """The Pulumi bundle (CLI + plugins + language host), assembled from the built groups."""
    v = versions()
    version = hashlib.sha256(
        LANGUAGE_HOST.read_bytes()
        + v["pulumi"]["version"].encode()
        + v["pulumi_kubernetes"]["version"].encode()
    ).hexdigest()[:12]
    return Group(
        "pulumi-bundle", version, ("pulumi", "pulumi-language-python", *BUNDLED), None, build_pulumi_bundle
    )


def ensure(only: list[str] | None = None) -> dict[str, Path]:
    """Build missing groups (two at a time), then the Pulumi bundle; return the folders for PATH."""
    wanted = [g for g in groups() if not only or g.name in only]
    with concurrent.futures.ThreadPoolExecutor(PARALLEL_BUILDS) as pool:
        futures = {g.name: pool.submit(_ensure_group, g) for g in wanted}
        found = {name: f.result() for name, f in futures.items()}
    if only and "pulumi-bundle" not in only:
        return found
    b = bundle()
    _ensure_group(b)
    return {**found, "pulumi-bundle": b.folder / "path"}


# Groups whose binaries reach PATH only through the Pulumi bundle (never as ambient plugins).
BUNDLED_GROUPS = ("pulumi", "pulumi-kubernetes")


def path_dirs(found: dict[str, Path]) -> list[Path]:
    """Folders to put on PATH: the Kubernetes programs, and `pulumi` through the bundle."""
    return [p for name, p in found.items() if name not in BUNDLED_GROUPS]


def bin_dirs() -> list[Path]:
    """PATH folders of an already bootstrapped toolchain (raises if anything is missing)."""
    found: dict[str, Path] = {}
    for g in [*groups(), bundle()]:
        if g.is_built():
            found[g.name] = g.folder / "path" if g.name == "pulumi-bundle" else g.bin_dir
            continue
        ambient = g.ambient_bin_dir()
        if ambient is None:
            raise BuildError(f"{g.name} v{g.version} is not built yet: run `python -m tools.toolchain`")
        found[g.name] = ambient
    return path_dirs(found)


def install_plugins(pulumi_home: Path) -> None:
    """Put the Kubernetes provider plugin into PULUMI_HOME's plugin cache at the version the SDK asks for."""
    version = versions()["pulumi_kubernetes"]["version"]
    target = pulumi_home / "plugins" / f"resource-kubernetes-v{version}" / "pulumi-resource-kubernetes"
    if target.exists():
        return
    b = bundle()
    subprocess.run(
        [str(b.bin_dir / "pulumi"), "plugin", "install", "resource", "kubernetes", f"v{version}",
         "--file", str(b.bin_dir / "pulumi-resource-kubernetes")],
        env={**os.environ, "PULUMI_HOME": str(pulumi_home), "PULUMI_SKIP_UPDATE_CHECK": "true"},
        check=True, capture_output=True,
    )  # fmt: skip


def kwok_stages() -> Path:
    return next(g for g in groups() if g.name == "kwok").folder / "stages"


def lws_webhooks() -> Path:
    """Folder of LWS_WEBHOOK_FILES, copied from the LWS module by its build."""
    return next(g for g in groups() if g.name == "lws").folder / "webhook"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--env", action="store_true", help="print shell exports for the toolchain")
    ap.add_argument("--only", action="append", help="build only this group (repeatable)")
    ap.add_argument("--install-plugins", type=Path, metavar="PULUMI_HOME", help="also fill this plugin cache")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    try:
        found = ensure(args.only)
    except BuildError as e:
        log(f"FAILED: {e}")
        return 1
    if args.install_plugins:
        install_plugins(args.install_plugins)
    if args.env:
        path = ":".join(str(p) for p in dict.fromkeys(path_dirs(found)))
        print(f'export PATH="{path}:$PATH"')
    else:
        for name, p in found.items():
            log(f"{name}: {p}")
        log(f"toolchain ready in {time.monotonic() - t0:.1f}s (cache {cache_root()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
