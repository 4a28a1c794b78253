#!/usr/bin/env python3
"""Pulumi Python language host (`pulumi-language-python`) implemented in Python.

Stand-in for Pulumi's Go language host, which cannot be built here. It speaks the
`pulumirpc.LanguageRuntime` gRPC protocol with the stubs shipped in the `pulumi` PyPI
package, so the interpreter running this module needs `pulumi` and `grpcio` importable.

The version it reports (`GetPluginInfo`) is the pinned Pulumi CLI's, `[pulumi] version` in the
`toolchain.toml` beside this file (tools/toolchain.toml, the one source of the Pulumi version;
`install` copies it beside the installed module), read once at start.

Protocol (Pulumi 3.x at that pin): the engine starts `pulumi-language-python [--logtostderr] [-v=N]
[--tracing URL] <engine-address>` in the program directory and reads the gRPC port from the
first stdout line. Runtime options from Pulumi.yaml (`virtualenv`, `toolchain`, `typechecker`)
arrive in every request's `ProgramInfo.options`; the legacy `-virtualenv`/`-root`/... flags
are accepted as fallbacks. The engine stops the host with SIGINT (SIGKILL after 5 s).

`Run` executes `<python> -u pulumi-language-python-exec --monitor ... <entry point> [args]`,
where `pulumi-language-python-exec` is looked up beside this file (then on PATH) and
`<python>` is `<venv>/bin/python` with the virtualenv activated, else `$PULUMI_PYTHON_CMD`,
`python3` or `python` from PATH.

`RunPlugin` runs a plugin directory, the way `pulumi preview --policy-pack DIR` starts a Python
policy pack: `<venv>/bin/python -u DIR [engine-address]` (the virtualenv from PulumiPolicy.yaml's
runtime options, default `DIR/venv`), output streamed to the engine.

`install(bin_dir, python)` installs this module plus an `sh` wrapper named
`pulumi-language-python` into `bin_dir`; the wrapper runs the module with
`$PULUMI_LANGUAGE_HOST_PYTHON` if set, else with the `python` given to `install`.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The toolchain pins; its `[pulumi] version` is the version this host reports.
TOOLCHAIN_FILE = Path(__file__).with_name("toolchain.toml")
EXEC_NAME = "pulumi-language-python-exec"
# Exit code of the exec script meaning "an error was already shown to the user".
BAIL_EXIT_CODE = 32
# Packages named pulumi-* that never carry a resource plugin.
PACKAGES_WITHOUT_PLUGINS = frozenset({"pulumi-policy", "pulumi-esc-sdk"})
GRPC_MAX_MESSAGE = 400 * 1024 * 1024
# Flags (Go `flag` syntax, one or two dashes) that take a separate value.
VALUE_FLAGS = frozenset({"tracing", "virtualenv", "root", "typechecker", "toolchain", "use-executor", "v"})

# Lists installed distributions as JSON; run by the program's interpreter.
LIST_PACKAGES_SCRIPT = """
import json, importlib.metadata as md
out = []
for d in md.distributions():
    name = d.metadata["Name"]
    if name:
        out.append({"name": name, "version": d.version, "location": str(d.locate_file("")),
                    "requires": list(d.requires or [])})
print(json.dumps(out))
"""


class HostError(Exception):
    """An error reported to the engine as a failed RPC."""


def pulumi_version(toolchain_file: Path = TOOLCHAIN_FILE) -> str:
    """The pinned Pulumi version: `[pulumi] version` of the toolchain file."""
    with open(toolchain_file, "rb") as f:
        version = tomllib.load(f).get("pulumi", {}).get("version")
    if not isinstance(version, str) or not version:
        raise HostError(f"{toolchain_file} has no [pulumi] version")
    return version


@dataclass(frozen=True)
class Package:
    """An installed Python distribution."""

    name: str  # PEP 503 normalised
    version: str
    location: str
    requires: tuple[str, ...]


def normalize(name: str) -> str:
    """PEP 503 normalised package name."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Python:
    """How to run the program's Python interpreter (pip toolchain semantics)."""

    virtualenv_option: str = ""
    virtualenv: str = ""  # absolute path, "" when no virtualenv is configured
    typechecker: str = ""

    @classmethod
    def from_info(cls, info: Any, fallback: Python) -> Python:
        """Resolve options from a `ProgramInfo` (falling back to the command-line flags)."""
        opts: dict[str, Any] = {}
        if info is not None and info.HasField("options"):
            from google.protobuf.json_format import MessageToDict

            opts = MessageToDict(info.options)
        venv = opts.get("virtualenv", fallback.virtualenv_option)
        if not isinstance(venv, str):
            raise HostError("virtualenv option must be a string")
        root = (info.root_directory if info is not None else "") or os.getcwd()
        path = os.path.normpath(os.path.join(root, venv)) if venv else ""
        if "virtualenv" not in opts and not (info is not None and info.root_directory):
            path = fallback.virtualenv  # legacy -virtualenv/-root flags
        toolchain = opts.get("toolchain", "pip")
        if toolchain != "pip":
            raise HostError(
                f"unsupported toolchain option {toolchain!r}: this language host only supports pip"
            )
        checker = opts.get("typechecker", fallback.typechecker)
        if checker not in ("", "mypy", "pyright"):
            raise HostError(f"unsupported typechecker option: {checker}")
        return cls(venv, path, checker)

    def is_venv(self) -> bool:
        """True when the configured virtualenv holds a python binary."""
        return os.path.isfile(os.path.join(self.virtualenv, "bin", "python"))

    def executable(self) -> str:
        """The interpreter to run."""
        if self.virtualenv:
            return os.path.join(self.virtualenv, "bin", "python")
        candidates = (
            [os.environ["PULUMI_PYTHON_CMD"]]
            if os.environ.get("PULUMI_PYTHON_CMD")
            else ["python3", "python"]
        )
        for cmd in candidates:
            found = shutil.which(cmd)
            if found:
                return found
        raise HostError(f"failed to locate any of {candidates} on your PATH. Have you installed Python 3?")

    def env(self) -> dict[str, str]:
        """Environment for the interpreter: the virtualenv activated, when there is one."""
        env = dict(os.environ)
        if self.virtualenv:
            env.pop("PYTHONHOME", None)
            env["PATH"] = os.path.join(self.virtualenv, "bin") + os.pathsep + env.get("PATH", "")
            env["VIRTUAL_ENV"] = self.virtualenv
            # Read by the dynamic-provider launcher `pulumi-resource-pulumi-python`.
            env["PULUMI_RUNTIME_VIRTUALENV"] = self.virtualenv
        return env

    def validate(self) -> None:
        """Fail with Pulumi's guidance when the configured virtualenv is unusable."""
        if self.virtualenv_option and not self.is_venv():
            what = (
                "doesn't exist"
                if not os.path.exists(self.virtualenv)
                else "doesn't appear to be a virtual environment"
            )
            py = os.path.join(self.virtualenv, "bin", "python")
            raise HostError(
                f"The 'virtualenv' option in Pulumi.yaml is set to {self.virtualenv_option!r}, but "
                f"{self.virtualenv!r} {what}; run the following commands to create the virtual environment "
                f"and install dependencies into it:\n\n    1. python3 -m venv {self.virtualenv}\n"
                f"    2. {py} -m pip install --upgrade pip setuptools wheel\n"
                f"    3. {py} -m pip install -r requirements.txt\n"
            )

    def output(self, *args: str) -> str:
        """Run the interpreter and return its stdout."""
        proc = subprocess.run([self.executable(), *args], env=self.env(), capture_output=True, text=True)
        if proc.returncode != 0:
            raise HostError(f"`python {' '.join(args)}` failed ({proc.returncode}): {proc.stderr.strip()}")
        return proc.stdout

    def packages(self) -> list[Package]:
        """Installed distributions, first occurrence on sys.path wins."""
        seen: dict[str, Package] = {}
        for d in json.loads(self.output("-c", LIST_PACKAGES_SCRIPT)):
            name = normalize(d["name"])
            seen.setdefault(name, Package(name, d["version"], d["location"], tuple(d["requires"])))
        return list(seen.values())


def plugin_version(version: str) -> str | None:
    """Translate a PEP 440 version (`N(.N)*[{a|b|rc}N][.postN][.devN]`) to semver, or None."""
    m = re.fullmatch(r"(\d+(?:\.\d+)*)(?:(a|b|rc)(\d*))?(?:\.post(\d*))?(?:\.dev(\d*))?", version)
    if not m:
        return None
    release, pre, pre_n, post, dev = m.groups()
    segments = release.split(".")
    segments += ["0"] * (3 - len(segments))
    out = ".".join(segments)
    if pre:
        out += "-" + {"a": "alpha", "b": "beta", "rc": "rc"}[pre] + "." + pre_n
    if post is not None:
        out += "+post" + post
    if dev is not None:
        out += ("" if post is not None else "+") + "dev" + dev
    return out


def read_plugin_json(pkg: Package) -> dict[str, Any] | None:
    """The package's `pulumi-plugin.json`, if it ships one."""
    path = Path(pkg.location) / pkg.name.replace("-", "_") / "pulumi-plugin.json"
    try:
        meta: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    return meta


def plugin_packages(python: Python) -> list[dict[str, Any]]:
    """Resource plugins required by the installed Pulumi packages (fields of `PackageDependency`)."""
    result = []
    for pkg in python.packages():
        meta = read_plugin_json(pkg)
        if (meta is None and not pkg.name.startswith("pulumi-")) or pkg.name in PACKAGES_WITHOUT_PLUGINS:
            continue
        meta = meta or {"resource": True}
        if not meta.get("resource"):
            continue
        name = meta.get("name") or pkg.name.removeprefix("pulumi-")
        version = meta.get("version") or plugin_version(pkg.version)
        if not version:
            continue
        dep: dict[str, Any] = {
            "name": name,
            "kind": "resource",
            "version": version if version.startswith("v") else "v" + version,
            "server": meta.get("server", ""),
        }
        for key, field in (
            ("parameterization", "parameterization"),
            ("extensionParameterization", "extension"),
        ):
            if meta.get(key):
                p = meta[key]
                dep[field] = {
                    "name": p["name"],
                    "version": p["version"],
                    "value": base64.b64decode(p.get("value", "")),
                }
        result.append(dep)
    return result


def pump_output(proc: subprocess.Popen[bytes]) -> Iterator[tuple[str, bytes]]:
    """Yield ("stdout"|"stderr", chunk) from a process's pipes as output arrives, until both close."""
    chunks: queue.Queue[tuple[str, bytes | None]] = queue.Queue()

    def pump(name: str, stream: Any) -> None:
        for chunk in iter(lambda: stream.read1(65536), b""):
            chunks.put((name, chunk))
        chunks.put((name, None))

    for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        threading.Thread(target=pump, args=(name, stream), daemon=True).start()
    open_streams = 2
    while open_streams:
        name, chunk = chunks.get()
        if chunk is None:
            open_streams -= 1
            continue
        yield name, chunk


def stream_command(argv: list[str], cwd: str, env: dict[str, str]) -> Iterator[tuple[str, bytes]]:
    """Run a command, yielding ("stdout"|"stderr", chunk) as output arrives; raise on failure."""
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    tail = b""
    for name, chunk in pump_output(proc):
        if name == "stderr":
            tail = (tail + chunk)[-4000:]
        yield name, chunk
    if proc.wait() != 0:
        raise HostError(
            f"`{shlex.join(argv)}` failed with exit code {proc.returncode}: {tail.decode(errors='replace').strip()}"
        )


def install_dependencies(python: Python, cwd: str) -> Iterator[tuple[str, bytes]]:
    """Create the virtualenv (if configured and missing) and pip install requirements.txt."""

    def msg(text: str) -> tuple[str, bytes]:
        return "stdout", (text + "\n").encode()

    if python.virtualenv and not python.is_venv():
        yield msg("Creating virtual environment...")
        yield from stream_command(
            [Python().executable(), "-m", "venv", python.virtualenv], cwd, dict(os.environ)
        )
        yield msg("Finished creating virtual environment")
    pip = [python.executable(), "-m", "pip", "install"]
    yield msg("Updating pip, setuptools, and wheel in virtual environment...")
    yield from stream_command([*pip, "--upgrade", "pip", "setuptools", "wheel"], cwd, python.env())
    yield msg("Finished updating")
    if os.path.exists(os.path.join(cwd, "requirements.txt")):
        yield msg("Installing dependencies in virtual environment...")
        yield from stream_command([*pip, "-r", "requirements.txt"], cwd, python.env())
        yield msg("Finished installing dependencies")


class LanguageHost:
    """Implementation of the `pulumirpc.LanguageRuntime` service."""

    def __init__(
        self, executor: str, engine_address: str, tracing: str, defaults: Python, version: str
    ) -> None:
        self.executor = executor
        self.engine_address = engine_address
        self.tracing = tracing
        self.defaults = defaults
        self.version = version  # reported by GetPluginInfo
        # Plugin processes started by RunPlugin and still running (stopped with the host).
        self.plugins: set[subprocess.Popen[bytes]] = set()

    # -- helpers ---------------------------------------------------------------------------------

    def _python(self, info: Any) -> Python:
        return Python.from_info(info, self.defaults)

    def _engine_log(self, severity: Any, message: str, stream_id: int) -> None:
        """Send an ephemeral log message to the engine (best effort)."""
        import grpc
        from pulumi.runtime.proto import engine_pb2, engine_pb2_grpc

        if not self.engine_address:
            sys.stderr.write(message)
            return
        request = engine_pb2.LogRequest(
            severity=severity, message=message, ephemeral=True, streamId=stream_id
        )
        try:
            with grpc.insecure_channel(self.engine_address) as channel:
                engine_pb2_grpc.EngineStub(channel).Log(request, timeout=30)
        except grpc.RpcError:
            sys.stderr.write(message)

    def _ensure_venv(self, python: Python, cwd: str) -> None:
        """Create and populate a configured-but-missing virtualenv, logging to the engine."""
        from pulumi.runtime.proto import engine_pb2

        if not python.virtualenv_option or python.is_venv():
            return
        if os.path.exists(python.virtualenv):
            if not os.path.isdir(python.virtualenv):
                raise HostError(
                    f"the 'virtualenv' option in Pulumi.yaml is set to {python.virtualenv!r} but it is not a directory"
                )
            if os.listdir(python.virtualenv):
                python.validate()
        stream_id = int.from_bytes(os.urandom(4), "big") >> 1
        for name, chunk in install_dependencies(python, cwd):
            severity = engine_pb2.INFO if name == "stdout" else engine_pb2.ERROR
            self._engine_log(severity, chunk.decode(errors="replace"), stream_id)
        python.validate()

    @staticmethod
    def _fail(context: Any, err: Exception) -> None:
        import grpc

        context.abort(grpc.StatusCode.UNKNOWN, str(err))

    # -- RPCs -----------------------------------------------------------------------------------

    def Handshake(self, request: Any, context: Any) -> Any:
        from pulumi.runtime.proto import language_pb2

        self.engine_address = request.engine_address
        return language_pb2.LanguageHandshakeResponse()

    def GetPluginInfo(self, request: Any, context: Any) -> Any:
        from pulumi.runtime.proto import plugin_pb2

        return plugin_pb2.PluginInfo(version=self.version)

    def GetRequiredPackages(self, request: Any, context: Any) -> Any:
        from pulumi.runtime.proto import language_pb2, plugin_pb2

        try:
            python = self._python(request.info)
            self._ensure_venv(python, request.info.program_directory or os.getcwd())
            deps = plugin_packages(python)
        except (HostError, OSError, ValueError) as err:
            return self._fail(context, err)
        packages = []
        for dep in deps:
            extra = {
                k: plugin_pb2.PackageParameterization(**dep.pop(k))
                for k in ("parameterization", "extension")
                if k in dep
            }
            packages.append(plugin_pb2.PackageDependency(**dep, **extra))
        return language_pb2.GetRequiredPackagesResponse(packages=packages)

    def GetRequiredPlugins(self, request: Any, context: Any) -> Any:
        from pulumi.runtime.proto import language_pb2, plugin_pb2

        try:
            python = self._python(request.info if request.HasField("info") else None)
            self._ensure_venv(python, request.pwd or os.getcwd())
            deps = plugin_packages(python)
        except (HostError, OSError, ValueError) as err:
            return self._fail(context, err)
        plugins = [
            plugin_pb2.PluginDependency(
                name=d["name"], kind=d["kind"], version=d["version"], server=d["server"]
            )
            for d in deps
        ]
        return language_pb2.GetRequiredPluginsResponse(plugins=plugins)

    def Run(self, request: Any, context: Any) -> Any:
        from pulumi.runtime.proto import language_pb2

        try:
            python = self._python(request.info)
            python.validate()
            if request.attach_debugger:
                return language_pb2.RunResponse(
                    error="attaching a debugger is not supported by this Python language host"
                )
            if python.typechecker:
                self._typecheck(python, request.info.program_directory or request.pwd or os.getcwd())
            env = python.env()
            if request.config:
                env["PULUMI_CONFIG"] = json.dumps(dict(request.config))
            env["PULUMI_CONFIG_SECRET_KEYS"] = json.dumps(list(request.configSecretKeys))
            argv = [python.executable(), "-u", self.executor, *self._exec_args(request)]
        except (HostError, OSError, ValueError) as err:
            return self._fail(context, err)
        try:
            proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL)
        except OSError as err:
            return language_pb2.RunResponse(
                error=f"problem executing program (could not run language executor): {err}"
            )
        context.add_callback(lambda: None if proc.poll() is not None else proc.terminate())
        code = proc.wait()
        sys.stdout.flush()
        sys.stderr.flush()
        if code == 0:
            return language_pb2.RunResponse()
        if code == BAIL_EXIT_CODE:
            return language_pb2.RunResponse(bail=True)
        if code < 0:
            return language_pb2.RunResponse(error=f"program exited unexpectedly: signal {-code}")
        return language_pb2.RunResponse(error=f"program exited with non-zero exit code: {code}")

    def RunPlugin(self, request: Any, context: Any) -> Iterator[Any]:
        """Run a plugin directory (a policy pack: `PulumiPolicy.yaml` `runtime: python`) as Pulumi's
        host does for a bare directory: `<venv python> -u <directory> [args]` in the engine's working
        directory, its output streamed back, a non-zero exit code sent last. The virtualenv defaults
        to `venv` in the plugin directory (never the ambient Python)."""
        from pulumi.runtime.proto import language_pb2

        try:
            python = self._python(request.info)
            if not python.virtualenv:
                root = request.info.root_directory or request.info.program_directory
                python = Python("venv", os.path.join(root, "venv"), python.typechecker)
            python.validate()
            program = request.info.program_directory
            if not os.path.isfile(os.path.join(program, "__main__.py")):
                raise HostError(f"plugin {program} is not runnable: it has no __main__.py")
            env = python.env()
            env.update(entry.partition("=")[::2] for entry in request.env)
            argv = [python.executable(), "-u", program, *request.args]
            proc = subprocess.Popen(
                argv,
                cwd=request.pwd or None,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except (HostError, OSError, ValueError) as err:
            self._fail(context, err)
            return
        self.plugins.add(proc)
        # The engine stops a plugin by cancelling this call.
        context.add_callback(lambda: None if proc.poll() is not None else proc.terminate())
        try:
            for name, chunk in pump_output(proc):
                if name == "stdout":
                    yield language_pb2.RunPluginResponse(stdout=chunk)
                else:
                    yield language_pb2.RunPluginResponse(stderr=chunk)
            code = proc.wait()
        finally:
            self.plugins.discard(proc)
        if code != 0:
            yield language_pb2.RunPluginResponse(exitcode=code)

    def stop_plugins(self) -> None:
        """Terminate the plugin processes still running."""
        for proc in list(self.plugins):
            if proc.poll() is None:
                proc.terminate()

    def _exec_args(self, request: Any) -> list[str]:
        """Command line for `pulumi-language-python-exec` (same flags as the Go host)."""
        args: list[str] = []
        for flag, value in (
            ("monitor", request.monitor_address),
            ("engine", self.engine_address),
            ("project", request.project),
            ("root_directory", request.info.root_directory),
            ("stack", request.stack),
            ("pwd", request.pwd),
            ("dry_run", "true" if request.dryRun else "false"),
            ("parallel", str(request.parallel)),
            ("tracing", self.tracing),
            ("organization", request.organization),
        ):
            if value:
                args += ["--" + flag, value]
        args.append(request.info.entry_point or request.program or ".")
        return args + list(request.args)

    def _typecheck(self, python: Python, program_dir: str) -> None:
        names = {p.name for p in python.packages()}
        if python.typechecker not in names:
            raise HostError(
                f"The typechecker option is set to {python.typechecker}, but {python.typechecker} is not installed. "
                "Please add it to requirements.txt and install it."
            )
        argv = [python.executable(), "-m", python.typechecker]
        if python.typechecker == "mypy" and python.virtualenv:
            argv += ["--exclude", os.path.relpath(python.virtualenv, program_dir)]
        if subprocess.run([*argv, program_dir], cwd=program_dir, env=python.env()).returncode != 0:
            raise HostError(f"{python.typechecker} failed")

    def InstallDependencies(self, request: Any, context: Any) -> Iterator[Any]:
        from pulumi.runtime.proto import language_pb2

        try:
            python = self._python(request.info)
            if request.is_plugin and not python.virtualenv:
                python = Python(
                    "venv",
                    os.path.join(request.info.root_directory or request.directory, "venv"),
                    python.typechecker,
                )
            cwd = request.info.program_directory or request.directory or os.getcwd()
            yield language_pb2.InstallDependenciesResponse(stdout=b"Installing dependencies...\n\n")
            for name, chunk in install_dependencies(python, cwd):
                yield language_pb2.InstallDependenciesResponse(**{name: chunk})
            yield language_pb2.InstallDependenciesResponse(stdout=b"Finished installing dependencies\n\n")
        except (HostError, OSError, ValueError) as err:
            self._fail(context, err)

    def RuntimeOptionsPrompts(self, request: Any, context: Any) -> Any:
        from pulumi.runtime.proto import language_pb2

        return language_pb2.RuntimeOptionsResponse()

    def About(self, request: Any, context: Any) -> Any:
        from pulumi.runtime.proto import language_pb2

        try:
            python = self._python(request.info if request.HasField("info") else None)
            out = python.output(
                "-c", "import sys, platform; print(sys.executable); print(platform.python_version())"
            )
        except (HostError, OSError, ValueError) as err:
            return self._fail(context, err)
        executable, version = out.split("\n")[:2]
        return language_pb2.AboutResponse(executable=executable, version=version)

    def GetProgramDependencies(self, request: Any, context: Any) -> Any:
        from pulumi.runtime.proto import language_pb2

        try:
            pkgs = self._python(request.info).packages()
        except (HostError, OSError, ValueError) as err:
            return self._fail(context, err)
        if not request.transitiveDependencies:
            # Like `pip list --not-required`: requirements behind an extra don't count.
            required = {
                normalize(m.group(0))
                for p in pkgs
                for r in p.requires
                if "extra" not in r.partition(";")[2] and (m := re.match(r"[A-Za-z0-9._-]+", r))
            }
            pkgs = [p for p in pkgs if p.name not in required]
        deps = [
            language_pb2.DependencyInfo(name=p.name, version=p.version)
            for p in sorted(pkgs, key=lambda p: p.name)
        ]
        return language_pb2.GetProgramDependenciesResponse(dependencies=deps)


def parse_args(argv: list[str]) -> tuple[dict[str, str], str]:
    """Parse Go-style flags tolerantly; return (flags, engine address)."""
    flags: dict[str, str] = {}
    positional: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--":
            positional += argv[i:]
            break
        if not arg.startswith("-") or arg == "-":
            positional.append(arg)
            continue
        name, eq, value = arg.lstrip("-").partition("=")
        if not eq and name in VALUE_FLAGS and i < len(argv):
            value, i = argv[i], i + 1
        flags[name] = value if (eq or name in VALUE_FLAGS) else "true"
    addresses = [p for p in positional if re.fullmatch(r"[^\s]*:\d+", p)]
    return flags, (addresses or positional or [""])[-1]


def find_executor(flags: dict[str, str]) -> str:
    """Locate `pulumi-language-python-exec`: -use-executor, beside this file, then PATH."""
    if flags.get("use-executor"):
        return flags["use-executor"]
    for here in {Path(__file__).absolute().parent, Path(__file__).resolve().parent}:
        if (here / EXEC_NAME).is_file():
            return str(here / EXEC_NAME)
    found = shutil.which(EXEC_NAME)
    if not found:
        sys.exit(
            f"error: missing executor {EXEC_NAME} (expected beside {Path(__file__).absolute()} or on PATH)"
        )
    return found


def engine_alive(address: str) -> bool:
    """Health-check the engine; UNIMPLEMENTED counts as alive."""
    import grpc

    with grpc.insecure_channel(address) as channel:
        check = channel.unary_unary(
            "/grpc.health.v1.Health/Check", request_serializer=bytes, response_deserializer=bytes
        )
        try:
            check(b"", timeout=30)
        except grpc.RpcError as err:
            return bool(err.code() == grpc.StatusCode.UNIMPLEMENTED)
    return True


def serve(argv: list[str]) -> None:
    """Start the gRPC server, print its port, and serve until signalled or the engine goes away."""
    import grpc
    from pulumi.runtime.proto import language_pb2_grpc

    flags, engine_address = parse_args(argv)
    try:
        version = pulumi_version()
    except (HostError, OSError, ValueError) as err:
        sys.exit(f"error: cannot read the Pulumi version: {err}")
    root = flags.get("root") or os.getcwd()
    venv = flags.get("virtualenv", "")
    defaults = Python(
        venv, os.path.normpath(os.path.join(root, venv)) if venv else "", flags.get("typechecker", "")
    )
    # The generated servicer answers UNIMPLEMENTED for every RPC LanguageHost does not define.
    servicer = type("Servicer", (LanguageHost, language_pb2_grpc.LanguageRuntimeServicer), {})
    host: LanguageHost = servicer(
        find_executor(flags), engine_address, flags.get("tracing", ""), defaults, version
    )

    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=32),
        options=[
            ("grpc.max_receive_message_length", GRPC_MAX_MESSAGE),
            ("grpc.max_send_message_length", GRPC_MAX_MESSAGE),
        ],
    )
    language_pb2_grpc.add_LanguageRuntimeServicer_to_server(host, server)  # type: ignore[arg-type]
    stopping = threading.Event()

    def stop(*_: Any) -> None:
        stopping.set()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    parent = os.getppid()
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)

    def watchdog() -> None:
        """Stop when our parent (the engine) exits or the engine stops answering health checks."""
        last = time.monotonic()
        while not stopping.wait(1.0):
            if os.getppid() != parent:
                stopping.set()
            elif host.engine_address and time.monotonic() - last > 60:
                last = time.monotonic()
                if not engine_alive(host.engine_address):
                    stopping.set()

    threading.Thread(target=watchdog, daemon=True).start()
    while not stopping.wait(0.5):
        pass
    server.stop(grace=2).wait()
    host.stop_plugins()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # don't wait on handler threads still blocked on a program


def install(bin_dir: Path, python: str, exec_script: Path | None = None) -> Path:
    """Install this host into `bin_dir` as `pulumi-language-python` and return the wrapper's path.

    Copies this module and the toolchain file it reads the Pulumi version from to `bin_dir` (so the
    install does not depend on the work tree) and writes a `#!/bin/sh` wrapper that execs it with
    `$PULUMI_LANGUAGE_HOST_PYTHON` when set, else `python`. That interpreter must import `pulumi` and
    `grpcio`. The wrapper finds `pulumi-language-python-exec` beside itself; pass `exec_script` to
    copy it there too.
    """
    bin_dir = Path(bin_dir).absolute()
    bin_dir.mkdir(parents=True, exist_ok=True)
    module = bin_dir / "pulumi_language_python.py"
    source = Path(__file__).resolve()
    if source != module.resolve():
        shutil.copyfile(source, module)
    module.chmod(0o755)
    if TOOLCHAIN_FILE.resolve() != (bin_dir / TOOLCHAIN_FILE.name).resolve():
        shutil.copyfile(TOOLCHAIN_FILE, bin_dir / TOOLCHAIN_FILE.name)
    if exec_script is not None and Path(exec_script).resolve() != (bin_dir / EXEC_NAME).resolve():
        shutil.copyfile(exec_script, bin_dir / EXEC_NAME)
        (bin_dir / EXEC_NAME).chmod(0o755)
    wrapper = bin_dir / "pulumi-language-python"
    tmp = wrapper.with_name(wrapper.name + ".tmp")
    tmp.write_text(
        "#!/bin/sh\n"
        "# Pulumi Python language host (pure-Python implementation, see pulumi_language_python.py).\n"
        "# Runs under $PULUMI_LANGUAGE_HOST_PYTHON if set, else the interpreter below; it needs pulumi + grpcio.\n"
        f"py={shlex.quote(python)}\n"
        'if [ -n "${PULUMI_LANGUAGE_HOST_PYTHON:-}" ]; then py=$PULUMI_LANGUAGE_HOST_PYTHON; fi\n'
        f'exec "$py" {shlex.quote(str(module))} "$@"\n'
    )
    tmp.chmod(0o755)
    tmp.replace(wrapper)
    return wrapper


if __name__ == "__main__":
    serve(sys.argv[1:])
