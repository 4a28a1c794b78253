"""vLLM backend: compilation cache, GMS weight loading, and the multinode launch (mp or Ray executor,
data-parallel hybrid load balancing, elastic EP on Ray, the workers' wait-for-leader init container)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from dynamo_infra.api import DynamoValidationError, Problem
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render import names, roles
from dynamo_infra.render.backends.wait_leader import WAIT_LEADER_SCRIPT
from dynamo_infra.render.context import ComponentContext
from dynamo_infra.render.multinode import (
    Placement,
    Role,
    append_env,
    command_line_has_arg,
    field_ref_env,
    fields,
    has_arg,
    inject_flags,
    shell_quote,
    shell_quote_posix,
    without_probes,
)

# vLLM's compilation cache default mount point.
DEFAULT_CACHE_PATH = "/root/.cache/vllm"
# Env var telling vLLM where its cache root is.
CACHE_ENV = "VLLM_CACHE_ROOT"
# Framework word the flag injector looks for in shell command lines.
FRAMEWORK = "vllm"
# Ray head port of the multinode Ray cluster.
RAY_PORT = "6379"
# torch.distributed master port of the mp executor (also what workers wait for).
MP_MASTER_PORT = "29500"
# RPC port of data-parallel coordination between nodes.
DATA_PARALLEL_RPC_PORT = "13445"
# Dynamo system port the elastic-EP worker health-gate polls on the leader.
SYSTEM_PORT = 9090
# Annotation values choosing the executor explicitly; otherwise the origin-version gate decides.
EXECUTOR_MP = "mp"
EXECUTOR_RAY = "ray"
# First operator release whose DGDs default to the mp executor.
MP_MIN_ORIGIN_VERSION = (1, 0, 0)
# Env var telling NIXL which address its side channel binds (the pod IP under mp).
NIXL_SIDE_CHANNEL_HOST_ENV = "VLLM_NIXL_SIDE_CHANNEL_HOST"
# Inter-pod GMS: engines load weights from the GMS weight server; shadows run in shadow mode.
GMS_LOAD_FORMAT = "gms"
GMS_SHADOW_MODE_ENV = "DYN_VLLM_GMS_SHADOW_MODE"
# The wait-for-leader script: ConfigMap `{dgd}-wait-leader-script`, key and mount.
WAIT_LEADER_CONFIGMAP_SUFFIX = "wait-leader-script"
WAIT_LEADER_SCRIPT_KEY = "wait-for-leader.py"
WAIT_LEADER_VOLUME = "wait-leader-script"
WAIT_LEADER_MOUNT_PATH = "/scripts"
WAIT_LEADER_INIT_CONTAINER = "wait-for-leader-mp"
# Intra-pod failover engine N: NIXL side channel 5600+N, KV events 20080+N, master port 29500+100N.
FAILOVER_NIXL_SIDE_CHANNEL_BASE = 5600
FAILOVER_KV_EVENT_PORT_BASE = 20080
FAILOVER_MASTER_PORT = 29500
FAILOVER_MASTER_PORT_STRIDE = 100
# Flag whose port a failover engine N > 0 moves by N strides (appended when absent).
MASTER_PORT_FLAG = "--master-port"

TP, PP, DP, DP_LOCAL = (
    "--tensor-parallel-size",
    "--pipeline-parallel-size",
    "--data-parallel-size",
    "--data-parallel-size-local",
)
EXECUTOR, ELASTIC_EP, DP_BACKEND = (
    "--distributed-executor-backend",
    "--enable-elastic-ep",
    "--data-parallel-backend",
)
# vLLM's short flag spellings.
SHORT_FLAGS = {"-tp": TP, "-pp": PP, "-dp": DP, "-dpl": DP_LOCAL, "-dpb": DP_BACKEND}
# Flags read here (underscore spellings are normalised to dashes) and those that take a value.
KNOWN_FLAGS = frozenset({TP, PP, DP, DP_LOCAL, DP_BACKEND, ELASTIC_EP, EXECUTOR})
VALUE_FLAGS = KNOWN_FLAGS - {ELASTIC_EP}
# Flags whose string value ends at a shell operator glued to it (`ray;`).
STRING_VALUE_FLAGS = frozenset({DP_BACKEND, EXECUTOR})
_SHELL_CONTROL = re.compile(r"[;&|<>()]")
_K8S_VAR = re.compile(r"\$\((\w+)\)")
# A direct `vllm serve` launch inside a command line (injectFlagsIntoDirectCommand).
_DIRECT_VLLM = re.compile(
    r"(^|[\t\n\f\r ])((?:exec[\t\n\f\r ]+)?vllm serve(?:[\t\n\f\r ]+[^|&;]*)?)([\t\n\f\r ]|\Z|[|&;])"
)


def _trim_shell(value: str) -> str:
    m = _SHELL_CONTROL.search(value)
    return value[: m.start()] if m else value


def normalize(tokens: list[str]) -> list[str]:
    """Canonical `--long-flag value` tokens: short aliases, underscores and `=` pairs resolved."""
    out: list[str] = []
    trim_next = False
    for token in tokens:
        if trim_next:
            trim_next = False
            if not token.startswith("-"):
                out.append(_trim_shell(token))
                continue
        flag, eq, value = token.partition("=")
        if flag in SHORT_FLAGS:
            flag = SHORT_FLAGS[flag]
        elif flag.replace("_", "-") in KNOWN_FLAGS:
            flag = flag.replace("_", "-")
        if eq and (flag not in VALUE_FLAGS or value.startswith("--")):
            out.append(token)
            continue
        if eq:
            out.extend([flag, _trim_shell(value) if flag in STRING_VALUE_FLAGS else value])
            continue
        out.append(flag)
        trim_next = flag == EXECUTOR
    return out


def _int_value(tokens: list[str], flag: str) -> int:
    """The first integer following `flag` (1 when absent, like vLLM's default)."""
    for i, token in enumerate(tokens[:-1]):
        if token == flag:
            try:
                return int(tokens[i + 1])
            except ValueError:
                continue
    return 1


@dataclass(frozen=True)
class LaunchArgs:
    tp: int
    pp: int
    dp: int
    has_dp: bool
    elastic_ep: bool
    mp_executor: bool

    @property
    def world_size(self) -> int:
        return self.tp * self.pp

    @classmethod
    def parse(cls, tokens: list[str]) -> LaunchArgs:
        t = normalize(fields(tokens))
        return cls(
            tp=_int_value(t, TP),
            pp=_int_value(t, PP),
            dp=_int_value(t, DP),
            has_dp=DP in t,
            elastic_ep=ELASTIC_EP in t,
            mp_executor=has_arg(t, EXECUTOR, EXECUTOR_MP),
        )


def _version(text: str) -> tuple[int, int, int] | None:
    m = re.match(r"^v?(\d+)\.(\d+)\.(\d+)", text.strip())
    return (int(m[1]), int(m[2]), int(m[3])) if m else None


def uses_mp(ctx: ComponentContext) -> bool:
    """mp executor: explicit annotation, else origin version >= 1.0.0 (absent/invalid: Ray)."""
    annotations = ctx.template_annotations
    override = (annotations.get(names.ANNOTATION_VLLM_EXECUTOR) or "").lower()
    if override in (EXECUTOR_MP, EXECUTOR_RAY):
        return override == EXECUTOR_MP
    version = _version(annotations.get(names.ANNOTATION_ORIGIN_VERSION) or "")
    return version is not None and version >= MP_MIN_ORIGIN_VERSION


def _mp_flags(container: Manifest, p: Placement, component: str, aliases: bool) -> Manifest:
    """injectMpDistributedLaunchFlags: new graphs (topology aliases) address the leader and the rank
    through `$(DYNAMO_LEADER_ADDRESS)` / `$(DYNAMO_RANK)`, older ones through the orchestrator's env."""
    leader = roles.LEADER_ADDRESS_REF if aliases else p.deployer.leader_hostname(component)
    flags = f"{EXECUTOR} mp --nnodes {p.nodes} --master-addr {leader} --master-port {MP_MASTER_PORT}"
    needs_shell = False
    if p.role == Role.LEADER:
        flags += f" --node-rank {roles.RANK_REF if aliases else 0}"
    elif p.role == Role.WORKER:
        rank, needs_shell = (roles.RANK_REF, False) if aliases else p.deployer.node_rank()
        flags += f" --node-rank {rank} --headless"
    return inject_flags(container, flags, needs_shell, FRAMEWORK)


def _command_line(container: Manifest) -> list[str]:
    """getExpandedCommandLine: command and args, every token split on whitespace, normalised."""
    return normalize(fields([*(container.get("command") or []), *(container.get("args") or [])]))


def _ensure_master_port(ctx: ComponentContext, container: Manifest) -> Manifest:
    """ensureContainerCommandLineFlag for `--master-port 29500` on an authored launch: after the
    `python… vllm…` words, else after a `vllm serve` command line, else appended to args unless a shell
    runs the command."""
    if has_arg(_command_line(container), MASTER_PORT_FLAG, MP_MASTER_PORT):
        return container
    flags = f"{MASTER_PORT_FLAG} {MP_MASTER_PORT}"
    out = inject_flags(container, flags, False, FRAMEWORK)
    for key in ("args", "command"):
        if has_arg(_command_line(out), MASTER_PORT_FLAG, MP_MASTER_PORT):
            break
        tokens = list(out.get(key) or [])
        for i, token in enumerate(tokens):
            injected = _DIRECT_VLLM.sub(lambda m: f"{m[1]}{m[2].strip()} {flags}{m[3]}", token)
            if injected != token:
                out = {**out, key: [*tokens[:i], injected, *tokens[i + 1 :]]}
                break
    command = list(out.get("command") or [])
    shell = bool(command) and command[0].rsplit("/", 1)[-1] in ("sh", "bash")
    if not has_arg(_command_line(out), MASTER_PORT_FLAG, MP_MASTER_PORT) and not shell:
        out = {**out, "args": [*(out.get("args") or []), MASTER_PORT_FLAG, MP_MASTER_PORT]}
    if not has_arg(_command_line(out), MASTER_PORT_FLAG, MP_MASTER_PORT):
        problem = f'could not add operator-owned flag "{MASTER_PORT_FLAG}" to the container command line'
        raise DynamoValidationError([Problem(f"components[{ctx.name}].roles", problem)])
    return out


def _ray_launch(container: Manifest, p: Placement, component: str) -> Manifest:
    args = list(container.get("args") or [])
    if p.role == Role.LEADER:
        cmd = " ".join(shell_quote(t) for t in container.get("command") or [])
        quoted = " ".join(shell_quote(a) for a in args)
        args = [f"ray start --head --port={RAY_PORT} && {cmd} {quoted} {EXECUTOR} ray"]
    elif p.role == Role.WORKER:
        args = [f"ray start --address={p.deployer.leader_hostname(component)}:{RAY_PORT} --block"]
    return {**container, "command": ["/bin/sh", "-c"], "args": args}


def _elastic_ep_launch(container: Manifest, p: Placement, component: str) -> Manifest:
    """A Ray cluster across nodes; workers join once the leader's engine is live."""
    if p.role == Role.LEADER:
        if not container.get("command"):
            return container
        line = " ".join(shell_quote_posix(t) for t in [*container["command"], *(container.get("args") or [])])
        probe = f"import socket; s=socket.create_connection(('127.0.0.1',{RAY_PORT}),timeout=1); s.close()"
        args = [
            f"ray start --head --port={RAY_PORT} --block & "
            f'i=0; until python3 -c "{probe}" 2>/dev/null; '
            'do i=$((i+1)); [ "$i" -ge 150 ] && { echo "ERROR: Ray head did not start within 300s" >&2; '
            f"exit 1; }}; sleep 2; done && {line}"
        ]
    elif p.role == Role.WORKER:
        leader = p.deployer.leader_hostname(component)
        gate = (
            f"i=0; until python3 -c \"import urllib.request; urllib.request.urlopen('http://{leader}:{SYSTEM_PORT}/live', "
            'timeout=5)" 2>/dev/null; do i=$((i+1)); [ "$i" -ge 720 ] && { echo "ERROR: leader /live did not '
            "become ready within 3h\" >&2; exit 1; }; echo 'waiting for leader dynamo.vllm /live to return 200...'; "
            "sleep 15; done"
        )
        args = [f"{gate} && ray start --address={leader}:{RAY_PORT} --block"]
    else:
        return container
    return {**container, "command": ["/bin/sh", "-c"], "args": args}


def _data_parallel(container: Manifest, p: Placement, component: str, a: LaunchArgs) -> Manifest:
    leader = p.deployer.leader_hostname(component)
    local = p.gpus // a.world_size
    total = local * p.nodes if a.dp == 1 else a.dp
    needs_shell = False
    start = "0"
    if p.role == Role.WORKER:
        rank, _ = p.deployer.node_rank()
        start, needs_shell = f"$(( {local} * {rank} ))", True
    elif p.role != Role.LEADER:
        return container
    flags = ["--data-parallel-hybrid-lb"]
    if not a.has_dp:
        flags += [DP, str(total)]
    flags += [DP_LOCAL, str(local), "--data-parallel-start-rank", start]
    flags += ["--data-parallel-address", leader, "--data-parallel-rpc-port", DATA_PARALLEL_RPC_PORT]
    return inject_flags(container, " ".join(flags), needs_shell, FRAMEWORK)


def multinode_launch(ctx: ComponentContext, container: Manifest, p: Placement) -> Manifest:
    """updateVLLMMultinodeArgs: TP/PP across nodes (mp or Ray), elastic EP, or hybrid-LB data parallel."""
    a = LaunchArgs.parse(list(container.get("args") or []))
    distributed = p.gpus != 0 and a.world_size > p.gpus
    if distributed and uses_mp(ctx):
        return _mp_flags(container, p, ctx.name, roles.uses_topology_aliases(ctx.template_annotations))
    if distributed:
        return _ray_launch(container, p, ctx.name)
    if a.elastic_ep:
        return _elastic_ep_launch(container, p, ctx.name)
    if p.gpus != 0 and a.world_size * a.dp > p.gpus:
        return _data_parallel(container, p, ctx.name, a)
    return container


def _stagger_master_port(container: Manifest, offset: int) -> Manifest:
    args = list(container.get("args") or [])
    for i, arg in enumerate(args[:-1]):
        if arg == MASTER_PORT_FLAG and args[i + 1].isdigit():
            args[i + 1] = str(int(args[i + 1]) + offset)
            return {**container, "args": args}
    embedded = re.compile(rf"{MASTER_PORT_FLAG} (\d+)")
    for key in ("args", "command"):
        tokens = list(container.get(key) or [])
        for i, token in enumerate(tokens):
            m = embedded.search(token)
            if m:
                tokens[i] = token[: m.start(1)] + str(int(m[1]) + offset) + token[m.end(1) :]
                return {**container, key: tokens}
    return container


def _has_master_port(container: Manifest) -> bool:
    args = container.get("args") or []
    return any(a == MASTER_PORT_FLAG or f"{MASTER_PORT_FLAG} " in a for a in args) or any(
        f"{MASTER_PORT_FLAG} " in c for c in container.get("command") or []
    )


def failover_engine(engine: Manifest, n: int, nodes: int) -> Manifest:
    """applyVLLMOverrides: engine N's own NIXL, KV-event and master ports, in shadow mode."""
    env = [
        {"name": GMS_SHADOW_MODE_ENV, "value": "true"},
        {"name": "VLLM_NIXL_SIDE_CHANNEL_PORT", "value": str(FAILOVER_NIXL_SIDE_CHANNEL_BASE + n)},
        {"name": "DYN_VLLM_KV_EVENT_PORT", "value": str(FAILOVER_KV_EVENT_PORT_BASE + n)},
    ]
    engine = {**engine, "env": [*engine["env"], *env]}
    if n > 0:
        offset = n * FAILOVER_MASTER_PORT_STRIDE
        if _has_master_port(engine):
            engine = _stagger_master_port(engine, offset)
        else:
            engine = {
                **engine,
                "args": [*(engine.get("args") or []), MASTER_PORT_FLAG, str(FAILOVER_MASTER_PORT + offset)],
            }
    if nodes > 1:
        engine = {**engine, "env": [*engine["env"], {"name": "NNODES", "value": str(nodes)}]}
    return engine


def wait_leader_config_map_name(graph: str) -> str:
    return f"{graph}-{WAIT_LEADER_CONFIGMAP_SUFFIX}"


def wait_leader_config_map(graph: str, namespace: str) -> Manifest:
    """One per multinode graph; only mp workers mount it."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": wait_leader_config_map_name(graph),
            "namespace": namespace,
            "labels": {names.LABEL_GRAPH: graph},
        },
        "data": {WAIT_LEADER_SCRIPT_KEY: WAIT_LEADER_SCRIPT},
    }


class VLLM:
    name = FRAMEWORK
    leader_starts_after_workers = False

    def container(self, ctx: ComponentContext, container: Manifest, placement: Placement) -> Manifest:
        if ctx.inter_pod_gms:
            if not has_arg(list(container.get("args") or []), "--load-format", GMS_LOAD_FORMAT):
                container = inject_flags(container, f"--load-format {GMS_LOAD_FORMAT}", False, FRAMEWORK)
            if ctx.inter_pod_failover:
                container = append_env(container, {"name": GMS_SHADOW_MODE_ENV, "value": "true"})
        if placement.multinode:
            # A complete role template owns the launch; the operator adds only the mp master port
            # (1.6-era `backend_vllm.go` UpdateContainer, tu-kim/dynamo@3f3d3dfa).
            preserve = roles.has_role_pod_templates(ctx.spec)
            line = [*(container.get("command") or []), *(container.get("args") or [])]
            role_template_mp = preserve and LaunchArgs.parse(line).mp_executor
            if role_template_mp:
                container = _ensure_master_port(ctx, container)
            if not preserve:
                container = multinode_launch(ctx, container, placement)
            if role_template_mp or (not preserve and uses_mp(ctx)):
                container = append_env(container, field_ref_env(NIXL_SIDE_CHANNEL_HOST_ENV, "status.podIP"))
            if placement.role == Role.WORKER:
                container = without_probes(container)
        cache = ctx.spec.get("compilationCache") or {}
        path = cache.get("mountPath") or (DEFAULT_CACHE_PATH if cache else None)
        if path:
            container = append_env(container, {"name": CACHE_ENV, "value": path})
        return container

    def pod_spec(self, ctx: ComponentContext, pod: Manifest, placement: Placement) -> Manifest:
        """Workers of an mp group wait in an init container until the leader's master port opens."""
        containers = pod.get("containers") or []
        if not (placement.graph and placement.multinode and placement.role == Role.WORKER and containers):
            return pod
        main = containers[0]
        if (
            not command_line_has_arg(main, EXECUTOR, EXECUTOR_MP)
            and not LaunchArgs.parse([*(main.get("command") or []), *(main.get("args") or [])]).mp_executor
        ):
            return pod
        host = _K8S_VAR.sub(r"${\1}", placement.deployer.leader_hostname(ctx.name))
        script = f"{WAIT_LEADER_MOUNT_PATH}/{WAIT_LEADER_SCRIPT_KEY}"
        init = {
            "name": WAIT_LEADER_INIT_CONTAINER,
            "image": main.get("image"),
            "command": [
                "sh",
                "-c",
                f'export LEADER_HOST="{host}" LEADER_PORT="{MP_MASTER_PORT}" && exec python3 {script}',
            ],
            "volumeMounts": [
                {"name": WAIT_LEADER_VOLUME, "mountPath": WAIT_LEADER_MOUNT_PATH, "readOnly": True}
            ],
        }
        if init["image"] is None:
            init.pop("image")
        volume = {
            "name": WAIT_LEADER_VOLUME,
            "configMap": {"name": wait_leader_config_map_name(placement.graph)},
        }
        return {
            **pod,
            "volumes": [*(pod.get("volumes") or []), volume],
            "initContainers": [*(pod.get("initContainers") or []), init],
        }

    def default_compilation_cache_path(self) -> str | None:
        return DEFAULT_CACHE_PATH

    def multinode_secret(self, ctx: ComponentContext) -> str | None:
        return None

    def failover_engine(self, engine: Manifest, n: int, nodes: int) -> Manifest | None:
        return failover_engine(engine, n, nodes)
