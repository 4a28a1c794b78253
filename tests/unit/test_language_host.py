"""Our Python language host (tools/pulumi_language_python.py) answers the engine as Pulumi's does.

Its RPCs are called directly with a stand-in gRPC context, on requests built from the `pulumi`
SDK's generated messages; one test starts the installed host as a real gRPC server on loopback and
calls it through the SDK's generated `LanguageRuntimeStub`. Programs, executors and plugins are
small scripts run by this interpreter, so nothing here needs the Go toolchain or the network.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
from google.protobuf import empty_pb2, struct_pb2  # type: ignore[import-untyped]
from pulumi.runtime.proto import language_pb2, language_pb2_grpc

from tools import pulumi_language_python as host_module
from tools import toolchain
from tools.pulumi_language_python import HostError, LanguageHost, Package, Python

# The RPCs of pulumirpc.LanguageRuntime this host implements; the generated servicer answers
# UNIMPLEMENTED for the others (codegen, packing, linking, templates, Cancel).
IMPLEMENTED = {
    "Handshake",
    "GetPluginInfo",
    "GetRequiredPackages",
    "GetRequiredPlugins",
    "Run",
    "RunPlugin",
    "InstallDependencies",
    "RuntimeOptionsPrompts",
    "About",
    "GetProgramDependencies",
}
SERVICE = language_pb2.DESCRIPTOR.services_by_name["LanguageRuntime"]
# Records what the executor was started with, then exits with $EXIT.
EXECUTOR = """\
import json, os, sys
keys = ("PULUMI_CONFIG", "PULUMI_CONFIG_SECRET_KEYS", "VIRTUAL_ENV", "PULUMI_RUNTIME_VIRTUALENV")
record = {"argv": sys.argv[1:], "cwd": os.getcwd(), **{k: os.environ.get(k) for k in keys}}
with open(os.environ["RECORD"], "w") as f:
    json.dump(record, f)
sys.exit(int(os.environ.get("EXIT", "0")))
"""


class Aborted(Exception):
    """What grpc's `ServicerContext.abort` raises."""


class Context:
    """Stand-in for grpc.ServicerContext: abort raises, callbacks are kept."""

    def __init__(self) -> None:
        self.code: grpc.StatusCode | None = None
        self.details = ""
        self.callbacks: list[Any] = []

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        self.code, self.details = code, details
        raise Aborted(details)

    def add_callback(self, callback: Any) -> bool:
        self.callbacks.append(callback)
        return True


def info(root: Path, entry_point: str = "", **options: Any) -> language_pb2.ProgramInfo:
    opts = struct_pb2.Struct()
    opts.update(options)
    return language_pb2.ProgramInfo(
        root_directory=str(root), program_directory=str(root), entry_point=entry_point, options=opts
    )


def fake_venv(path: Path) -> Path:
    """A folder that passes for a virtualenv: bin/python is this interpreter."""
    (path / "bin").mkdir(parents=True)
    (path / "bin" / "python").symlink_to(sys.executable)
    return path


@pytest.fixture
def executor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    script = tmp_path / "exec.py"
    script.write_text(EXECUTOR)
    monkeypatch.setenv("RECORD", str(tmp_path / "record.json"))
    monkeypatch.setenv("PULUMI_PYTHON_CMD", sys.executable)
    monkeypatch.delenv("EXIT", raising=False)
    return script


@pytest.fixture
def host(executor: Path) -> LanguageHost:
    return LanguageHost(str(executor), "127.0.0.1:7000", "", Python(), "9.9.9")


def recorded(tmp_path: Path) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((tmp_path / "record.json").read_text())
    return record


# -- the protocol surface ------------------------------------------------------------------------


def test_every_rpc_it_defines_is_a_language_runtime_rpc() -> None:
    # A misspelt RPC would silently answer UNIMPLEMENTED through the generated servicer.
    rpcs = {name for name in vars(LanguageHost) if name[0].isupper()}
    assert rpcs == IMPLEMENTED
    assert rpcs <= {m.name for m in SERVICE.methods}


def test_handshake_keeps_the_engine_address_for_the_program(host: LanguageHost) -> None:
    request = language_pb2.LanguageHandshakeRequest(engine_address="127.0.0.1:9999")
    assert host.Handshake(request, Context()) == language_pb2.LanguageHandshakeResponse()
    assert host.engine_address == "127.0.0.1:9999"
    run = language_pb2.RunRequest(info=language_pb2.ProgramInfo())
    assert host._exec_args(run)[:2] == ["--engine", "127.0.0.1:9999"]


def test_plugin_info_is_the_version_it_was_started_with(host: LanguageHost) -> None:
    assert host.GetPluginInfo(empty_pb2.Empty(), Context()).version == "9.9.9"


def test_runtime_options_prompts_asks_nothing(host: LanguageHost) -> None:
    request = language_pb2.RuntimeOptionsRequest()
    assert host.RuntimeOptionsPrompts(request, Context()) == language_pb2.RuntimeOptionsResponse()


# -- command line --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "flags", "address"),
    [
        (["127.0.0.1:4000"], {}, "127.0.0.1:4000"),
        (
            ["--logtostderr", "-v=5", "--tracing", "http://t:1", "127.0.0.1:4000"],
            {"logtostderr": "true", "v": "5", "tracing": "http://t:1"},
            "127.0.0.1:4000",
        ),
        (
            ["-virtualenv", "venv", "-root=/p", "localhost:1"],
            {"virtualenv": "venv", "root": "/p"},
            "localhost:1",
        ),
        # The engine address is the last host:port, wherever it stands.
        (["127.0.0.1:1", "--typechecker", "mypy", "extra"], {"typechecker": "mypy"}, "127.0.0.1:1"),
        (["--", "-not-a-flag"], {}, "-not-a-flag"),
        (["127.0.0.1:1", "127.0.0.1:2"], {}, "127.0.0.1:2"),
        ([], {}, ""),
    ],
)
def test_parse_args_reads_go_style_flags(argv: list[str], flags: dict[str, str], address: str) -> None:
    assert host_module.parse_args(argv) == (flags, address)


def test_the_executor_is_the_flag_else_beside_the_host_else_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert host_module.find_executor({"use-executor": "/x/exec"}) == "/x/exec"
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SystemExit, match="missing executor"):
        host_module.find_executor({})
    on_path = tmp_path / host_module.EXEC_NAME
    on_path.write_text("#!/bin/sh\n")
    on_path.chmod(0o755)
    assert host_module.find_executor({}) == str(on_path)


def test_the_version_comes_from_the_toolchain_file(tmp_path: Path) -> None:
    assert host_module.pulumi_version() == toolchain.versions()["pulumi"]["version"]
    other = tmp_path / "toolchain.toml"
    other.write_text('[pulumi]\nversion = "1.2.3"\n')
    assert host_module.pulumi_version(other) == "1.2.3"
    other.write_text('[kubernetes]\nversion = "1.2.3"\n')
    with pytest.raises(HostError, match=r"no \[pulumi\] version"):
        host_module.pulumi_version(other)


# -- the program's interpreter: virtualenv and toolchain options ---------------------------------


def test_the_virtualenv_option_is_relative_to_the_project_root(tmp_path: Path) -> None:
    python = Python.from_info(info(tmp_path, virtualenv="venv"), Python())
    assert (python.virtualenv_option, python.virtualenv) == ("venv", str(tmp_path / "venv"))
    # The legacy -virtualenv flag is the fallback, resolved against the project root too.
    legacy = Python("old", "/legacy/old", "")
    assert Python.from_info(info(tmp_path), legacy).virtualenv == str(tmp_path / "old")
    assert Python.from_info(info(tmp_path, virtualenv="venv"), legacy).virtualenv == str(tmp_path / "venv")
    assert Python.from_info(info(tmp_path), Python()).virtualenv == ""  # none: the ambient interpreter
    # No program info at all (an old engine): the -virtualenv/-root flags decide.
    assert Python.from_info(None, legacy).virtualenv == "/legacy/old"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"toolchain": "uv"}, "only supports pip"),
        ({"toolchain": "poetry"}, "only supports pip"),
        ({"typechecker": "pytype"}, "unsupported typechecker option: pytype"),
        ({"virtualenv": 3}, "virtualenv option must be a string"),
    ],
)
def test_unsupported_runtime_options_are_refused(
    tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(HostError, match=message):
        Python.from_info(info(tmp_path, **options), Python())


def test_the_virtualenv_is_activated_for_the_program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONHOME", "/elsewhere")
    monkeypatch.setenv("PATH", "/usr/bin")
    venv = str(tmp_path / "venv")
    python = Python("venv", venv, "")
    assert python.executable() == f"{venv}/bin/python"
    env = python.env()
    assert "PYTHONHOME" not in env
    assert env["PATH"] == f"{venv}/bin{os.pathsep}/usr/bin"
    assert env["VIRTUAL_ENV"] == env["PULUMI_RUNTIME_VIRTUALENV"] == venv


def test_without_a_virtualenv_the_interpreter_comes_from_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("PULUMI_PYTHON_CMD", raising=False)
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    with pytest.raises(HostError, match=r"failed to locate any of \['python3', 'python'\]"):
        Python().executable()
    python3 = tmp_path / "python3"
    python3.write_text("#!/bin/sh\n")
    python3.chmod(0o755)
    assert Python().executable() == str(python3)
    assert "VIRTUAL_ENV" not in Python().env()
    monkeypatch.setenv("PULUMI_PYTHON_CMD", sys.executable)
    assert Python().executable() == sys.executable


def test_an_unusable_virtualenv_fails_with_pulumis_guidance(tmp_path: Path) -> None:
    missing = Python("venv", str(tmp_path / "venv"), "")
    with pytest.raises(HostError, match=r"(?s)doesn't exist;.*python3 -m venv"):
        missing.validate()
    (tmp_path / "venv").mkdir()
    with pytest.raises(HostError, match="doesn't appear to be a virtual environment"):
        missing.validate()
    fake_venv(tmp_path / "good")
    Python("good", str(tmp_path / "good"), "").validate()
    Python("", "", "").validate()  # no virtualenv configured: nothing to check


# -- plugins the program needs -------------------------------------------------------------------


def test_pep440_versions_become_the_plugin_semver() -> None:
    cases = {
        "3.259.0": "3.259.0",
        "4": "4.0.0",
        "4.25.0a1768448096": "4.25.0-alpha.1768448096",
        "1.2b3": "1.2.0-beta.3",
        "1.0rc1": "1.0.0-rc.1",
        "1.0.post2": "1.0.0+post2",
        "1.0.dev4": "1.0.0+dev4",
        "1.0.post2.dev4": "1.0.0+post2dev4",
        "1.0.0+local": None,
        "banana": None,
    }
    assert {v: host_module.plugin_version(v) for v in cases} == cases


def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plugins: dict[str, dict[str, Any] | None]) -> None:
    """Installed packages, some with a pulumi-plugin.json, as the listing script would report them."""
    packages = []
    for name, meta in plugins.items():
        if meta is not None:
            folder = tmp_path / "site" / name.replace("-", "_")
            folder.mkdir(parents=True)
            (folder / "pulumi-plugin.json").write_text(json.dumps(meta))
        packages.append(Package(name, "1.2.0", str(tmp_path / "site"), ()))
    monkeypatch.setattr(Python, "packages", lambda self: packages)


PARAMETERIZED = {
    "resource": True,
    "name": "terraform-provider",
    "version": "0.8.0",
    "server": "https://plugins.example",
    "parameterization": {"name": "aws", "version": "5.0.0", "value": base64.b64encode(b"{}").decode()},
}


def test_plugin_packages_are_pulumi_packages_and_those_with_a_plugin_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site(
        tmp_path,
        monkeypatch,
        {
            "pulumi-random": None,  # no json: named after the package, at its version
            "pulumi-policy": None,  # never a plugin
            "pulumi-esc-sdk": None,  # never a plugin
            "requests": None,  # not a Pulumi package
            "pulumi-command": {"resource": False},  # says it has no plugin
            "pulumi-aws": {"resource": True, "version": "v6.0.0"},
            "terraform-aws": PARAMETERIZED,
        },
    )
    assert host_module.plugin_packages(Python()) == [
        {"name": "random", "kind": "resource", "version": "v1.2.0", "server": ""},
        {"name": "aws", "kind": "resource", "version": "v6.0.0", "server": ""},
        {
            "name": "terraform-provider",
            "kind": "resource",
            "version": "v0.8.0",
            "server": "https://plugins.example",
            "parameterization": {"name": "aws", "version": "5.0.0", "value": b"{}"},
        },
    ]


def test_required_packages_and_plugins_answer_in_the_engines_messages(
    host: LanguageHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site(tmp_path, monkeypatch, {"pulumi-random": None, "terraform-aws": PARAMETERIZED})
    program = info(tmp_path)
    packages = host.GetRequiredPackages(language_pb2.GetRequiredPackagesRequest(info=program), Context())
    assert [(p.name, p.version, p.server) for p in packages.packages] == [
        ("random", "v1.2.0", ""),
        ("terraform-provider", "v0.8.0", "https://plugins.example"),
    ]
    assert packages.packages[1].parameterization.name == "aws"
    assert packages.packages[1].parameterization.value == b"{}"
    assert not packages.packages[0].HasField("parameterization")
    assert not packages.packages[1].HasField("extension")
    plugins = host.GetRequiredPlugins(language_pb2.GetRequiredPluginsRequest(info=program), Context())
    assert [(p.name, p.kind, p.version) for p in plugins.plugins] == [
        ("random", "resource", "v1.2.0"),
        ("terraform-provider", "resource", "v0.8.0"),
    ]


def test_an_extension_parameterization_is_the_packages_extension(
    host: LanguageHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    meta = {k: v for k, v in PARAMETERIZED.items() if k != "parameterization"}
    meta["extensionParameterization"] = PARAMETERIZED["parameterization"]
    site(tmp_path, monkeypatch, {"terraform-aws": meta})
    request = language_pb2.GetRequiredPackagesRequest(info=info(tmp_path))
    (package,) = host.GetRequiredPackages(request, Context()).packages
    assert not package.HasField("parameterization")
    assert (package.extension.name, package.extension.version, package.extension.value) == (
        "aws",
        "5.0.0",
        b"{}",
    )


def test_this_projects_interpreter_asks_for_the_kubernetes_plugin_the_toolchain_installs(
    host: LanguageHost, tmp_path: Path
) -> None:
    # Runs the package listing in a real interpreter (this one, through PULUMI_PYTHON_CMD).
    response = host.GetRequiredPlugins(language_pb2.GetRequiredPluginsRequest(info=info(tmp_path)), Context())
    plugins = {p.name: p.version for p in response.plugins}
    assert plugins["kubernetes"] == "v" + toolchain.versions()["pulumi_kubernetes"]["version"]


def test_a_bad_runtime_option_fails_the_rpc(host: LanguageHost, tmp_path: Path) -> None:
    context = Context()
    request = language_pb2.GetRequiredPackagesRequest(info=info(tmp_path, toolchain="uv"))
    with pytest.raises(Aborted):
        host.GetRequiredPackages(request, context)
    assert context.code == grpc.StatusCode.UNKNOWN
    assert "only supports pip" in context.details


def test_a_virtualenv_path_that_is_a_file_is_refused(host: LanguageHost, tmp_path: Path) -> None:
    (tmp_path / "venv").write_text("")
    context = Context()
    request = language_pb2.GetRequiredPackagesRequest(info=info(tmp_path, virtualenv="venv"))
    with pytest.raises(Aborted):
        host.GetRequiredPackages(request, context)
    assert "is not a directory" in context.details


def test_program_dependencies_are_the_top_level_ones_unless_transitive(
    host: LanguageHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    packages = [
        Package("pulumi", "3.0.0", "", ("grpcio>=1", "protobuf")),
        Package("grpcio", "1.0.0", "", ()),
        Package("protobuf", "5.0.0", "", ()),
        Package("app", "0.1.0", "", ("pulumi", "rich; extra == 'pretty'")),
        Package("rich", "13.0.0", "", ()),
    ]
    monkeypatch.setattr(Python, "packages", lambda self: packages)

    def names(transitive: bool) -> list[str]:
        request = language_pb2.GetProgramDependenciesRequest(
            info=info(tmp_path), transitiveDependencies=transitive
        )
        return [d.name for d in host.GetProgramDependencies(request, Context()).dependencies]

    assert names(False) == ["app", "rich"]  # rich is wanted only behind an extra
    assert names(True) == ["app", "grpcio", "protobuf", "pulumi", "rich"]


def test_about_names_the_programs_interpreter(host: LanguageHost, tmp_path: Path) -> None:
    about = host.About(language_pb2.AboutRequest(info=info(tmp_path)), Context())
    assert about.executable == sys.executable
    assert about.version == ".".join(map(str, sys.version_info[:3]))


def test_the_first_distribution_of_a_name_on_the_path_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    listed = [
        {"name": "Foo_Bar", "version": "2.0", "location": "/first", "requires": ["b"]},
        {"name": "foo-bar", "version": "1.0", "location": "/second", "requires": []},
        {"name": "pulumi", "version": "3.0", "location": "/first", "requires": []},
    ]
    monkeypatch.setattr(Python, "output", lambda self, *args: json.dumps(listed))
    assert Python().packages() == [
        Package("foo-bar", "2.0", "/first", ("b",)),
        Package("pulumi", "3.0", "/first", ()),
    ]


def test_packages_lists_the_interpreters_distributions_normalised(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    monkeypatch.setenv("PULUMI_PYTHON_CMD", sys.executable)

    packages = {p.name: p for p in Python().packages()}
    assert packages["pulumi"].version == importlib.metadata.version("pulumi")
    assert packages["pulumi-kubernetes"].version == importlib.metadata.version("pulumi_kubernetes")
    assert "jsonschema-rs" in packages  # jsonschema_rs, PEP 503 normalised


# -- running the program -------------------------------------------------------------------------


def run_request(root: Path, **fields: Any) -> language_pb2.RunRequest:
    defaults: dict[str, Any] = {
        "project": "proj",
        "stack": "dev",
        "pwd": str(root),
        "monitor_address": "127.0.0.1:7001",
        "parallel": 4,
        "info": info(root),
    }
    return language_pb2.RunRequest(**{**defaults, **fields})


def test_the_exec_command_line_carries_the_go_hosts_flags(host: LanguageHost, tmp_path: Path) -> None:
    request = run_request(tmp_path, dryRun=True, organization="org", args=["a", "b"])
    assert host._exec_args(request) == [
        "--monitor", "127.0.0.1:7001",
        "--engine", "127.0.0.1:7000",
        "--project", "proj",
        "--root_directory", str(tmp_path),
        "--stack", "dev",
        "--pwd", str(tmp_path),
        "--dry_run", "true",
        "--parallel", "4",
        "--organization", "org",
        ".", "a", "b",
    ]  # fmt: skip
    quiet = LanguageHost("exec", "", "", Python(), "9.9.9")._exec_args(
        language_pb2.RunRequest(info=language_pb2.ProgramInfo())
    )
    assert quiet == ["--dry_run", "false", "--parallel", "0", "."]  # empty values are left out


@pytest.mark.parametrize(
    ("entry_point", "program", "expected"),
    [("main.py", "legacy", "main.py"), ("", "legacy", "legacy"), ("", "", ".")],
)
def test_the_entry_point_is_the_program_info_then_the_legacy_program_then_the_directory(
    host: LanguageHost, tmp_path: Path, entry_point: str, program: str, expected: str
) -> None:
    request = run_request(tmp_path, info=info(tmp_path, entry_point=entry_point), program=program)
    assert host._exec_args(request)[-1] == expected


def test_run_starts_the_executor_with_config_and_the_virtualenv(host: LanguageHost, tmp_path: Path) -> None:
    venv = fake_venv(tmp_path / "venv")
    request = run_request(
        tmp_path,
        info=info(tmp_path, virtualenv="venv"),
        config={"proj:replicas": "2"},
        configSecretKeys=["proj:token"],
    )
    context = Context()
    assert host.Run(request, context) == language_pb2.RunResponse()
    record = recorded(tmp_path)
    assert record["argv"][:2] == ["--monitor", "127.0.0.1:7001"]
    assert record["argv"][-1] == "."
    assert json.loads(record["PULUMI_CONFIG"]) == {"proj:replicas": "2"}
    assert json.loads(record["PULUMI_CONFIG_SECRET_KEYS"]) == ["proj:token"]
    assert record["VIRTUAL_ENV"] == record["PULUMI_RUNTIME_VIRTUALENV"] == str(venv)
    assert len(context.callbacks) == 1  # stops the program when the engine cancels


@pytest.mark.parametrize(
    ("code", "response"),
    [
        (0, language_pb2.RunResponse()),
        (host_module.BAIL_EXIT_CODE, language_pb2.RunResponse(bail=True)),
        (3, language_pb2.RunResponse(error="program exited with non-zero exit code: 3")),
    ],
)
def test_the_programs_exit_code_is_the_run_response(
    host: LanguageHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, response: Any
) -> None:
    monkeypatch.setenv("EXIT", str(code))
    assert host.Run(run_request(tmp_path), Context()) == response


def test_run_refuses_a_debugger_and_a_missing_virtualenv(host: LanguageHost, tmp_path: Path) -> None:
    debug = host.Run(run_request(tmp_path, attach_debugger=True), Context())
    assert "debugger is not supported" in debug.error and not debug.bail
    context = Context()
    with pytest.raises(Aborted):
        host.Run(run_request(tmp_path, info=info(tmp_path, virtualenv="missing")), context)
    assert "'virtualenv' option in Pulumi.yaml is set to 'missing'" in context.details
    assert not (tmp_path / "record.json").exists()


# -- plugins (policy packs) ----------------------------------------------------------------------


def plugin_request(plugin: Path, **fields: Any) -> language_pb2.RunPluginRequest:
    program = language_pb2.ProgramInfo(root_directory=str(plugin), program_directory=str(plugin))
    return language_pb2.RunPluginRequest(info=program, pwd=str(plugin), **fields)


def test_run_plugin_streams_the_plugins_output_and_exit_code(host: LanguageHost, tmp_path: Path) -> None:
    fake_venv(tmp_path / "venv")  # the plugin's own virtualenv, by default DIR/venv
    (tmp_path / "__main__.py").write_text(
        textwrap.dedent("""\
            import os, sys
            print("args", sys.argv[1:], os.environ["POLICY"], flush=True)
            sys.stderr.write("warning\\n")
            sys.exit(4)
        """)
    )
    responses = list(
        host.RunPlugin(plugin_request(tmp_path, args=["127.0.0.1:1"], env=["POLICY=on"]), Context())
    )
    stdout = b"".join(r.stdout for r in responses)
    stderr = b"".join(r.stderr for r in responses)
    assert stdout == b"args ['127.0.0.1:1'] on\n"
    assert stderr == b"warning\n"
    assert responses[-1] == language_pb2.RunPluginResponse(exitcode=4)
    assert not host.plugins  # forgotten once it exited


@pytest.mark.parametrize(
    ("prepare", "message"),
    [
        (lambda d: (d / "__main__.py").write_text(""), r"venv' doesn't exist"),
        (lambda d: fake_venv(d / "venv"), "has no __main__.py"),
    ],
)
def test_run_plugin_needs_a_virtualenv_and_a_main(
    host: LanguageHost, tmp_path: Path, prepare: Any, message: str
) -> None:
    prepare(tmp_path)
    context = Context()
    with pytest.raises(Aborted):
        list(host.RunPlugin(plugin_request(tmp_path), context))
    assert context.code == grpc.StatusCode.UNKNOWN
    assert re.search(message, context.details)


# -- installing dependencies ---------------------------------------------------------------------


@pytest.fixture
def commands(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Commands install_dependencies runs, each answering one line of output."""
    ran: list[list[str]] = []

    def fake(argv: list[str], cwd: str, env: dict[str, str]) -> Iterator[tuple[str, bytes]]:
        ran.append(argv)
        yield "stdout", b"ran\n"

    monkeypatch.setattr(host_module, "stream_command", fake)
    return ran


def test_install_dependencies_creates_the_virtualenv_then_pip_installs_requirements(
    host: LanguageHost, tmp_path: Path, commands: list[list[str]]
) -> None:
    (tmp_path / "requirements.txt").write_text("pulumi\n")
    request = language_pb2.InstallDependenciesRequest(
        directory=str(tmp_path), info=info(tmp_path, virtualenv="venv")
    )
    responses = list(host.InstallDependencies(request, Context()))
    venv_python = str(tmp_path / "venv" / "bin" / "python")
    assert commands == [
        [sys.executable, "-m", "venv", str(tmp_path / "venv")],
        [venv_python, "-m", "pip", "install", "--upgrade", "pip", "setuptools", "wheel"],
        [venv_python, "-m", "pip", "install", "-r", "requirements.txt"],
    ]
    out = b"".join(r.stdout for r in responses)
    assert out.startswith(b"Installing dependencies...") and out.endswith(
        b"Finished installing dependencies\n\n"
    )


def test_a_plugin_without_requirements_gets_its_own_virtualenv_and_no_install(
    host: LanguageHost, tmp_path: Path, commands: list[list[str]]
) -> None:
    fake_venv(tmp_path / "venv")
    request = language_pb2.InstallDependenciesRequest(
        directory=str(tmp_path), info=info(tmp_path), is_plugin=True
    )
    list(host.InstallDependencies(request, Context()))
    assert commands == [
        [
            str(tmp_path / "venv" / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--upgrade",
            "pip",
            "setuptools",
            "wheel",
        ]
    ]


def test_a_failing_command_ends_the_stream_with_its_stderr(tmp_path: Path) -> None:
    argv = [sys.executable, "-c", "import sys; print('out'); sys.stderr.write('boom'); sys.exit(3)"]
    chunks: list[tuple[str, bytes]] = []
    with pytest.raises(HostError, match="failed with exit code 3: boom"):
        for chunk in host_module.stream_command(argv, str(tmp_path), dict(os.environ)):
            chunks.append(chunk)
    assert b"".join(c for name, c in chunks if name == "stdout") == b"out\n"


# -- the installed host as a gRPC server ---------------------------------------------------------


def test_the_installed_host_serves_the_language_runtime_over_grpc(
    executor: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PULUMI_LANGUAGE_HOST_PYTHON", raising=False)
    wrapper = host_module.install(tmp_path / "bin", sys.executable, executor)
    assert (tmp_path / "bin" / host_module.EXEC_NAME).read_text() == executor.read_text()
    program = tmp_path / "program"
    program.mkdir()
    monkeypatch.setenv("RECORD", str(program / "record.json"))
    proc = subprocess.Popen(
        [str(wrapper), "--logtostderr", "127.0.0.1:1"], cwd=program, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = language_pb2_grpc.LanguageRuntimeStub(channel)
            version = stub.GetPluginInfo(empty_pb2.Empty(), timeout=10).version
            assert version == toolchain.versions()["pulumi"]["version"]
            assert stub.About(language_pb2.AboutRequest(info=info(program)), timeout=10).version
            run = stub.Run(run_request(program, config={"proj:a": "1"}), timeout=30)
            assert run == language_pb2.RunResponse()
            assert json.loads(recorded(program)["PULUMI_CONFIG"]) == {"proj:a": "1"}
            with pytest.raises(grpc.RpcError) as err:
                stub.Template(language_pb2.TemplateRequest(), timeout=10)
            assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
            with pytest.raises(grpc.RpcError) as err:
                stub.About(language_pb2.AboutRequest(info=info(program, toolchain="uv")), timeout=10)
            assert err.value.code() == grpc.StatusCode.UNKNOWN
            assert "only supports pip" in (err.value.details() or "")
        proc.send_signal(signal.SIGINT)  # how the engine stops it
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
