"""TensorRT-LLM backend, multinode: the leader launches every rank with mpirun over SSH (port 2222)
using the key pair of the MPI SSH secret; workers run only sshd."""

from __future__ import annotations

from dynamo_infra.api.manifest import Manifest
from dynamo_infra.render import roles
from dynamo_infra.render.context import ComponentContext
from dynamo_infra.render.multinode import Placement, Role, append_env, is_python_command, shell_quote

# backendFramework value (and `dynamo.trtllm` module) of this backend.
FRAMEWORK = "trtllm"
# SSH port mpirun reaches the workers on.
SSH_PORT = 2222
# Where the MPI SSH secret (keys `private.key`, `private.key.pub`) is mounted, and its file mode.
SSH_KEY_DIR = "/ssh-pk"
SSH_SECRET_MODE = 0o644
# Keep the FQDN host names mpirun is given (pods resolve each other by DNS).
FQDN_ENV = {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "1"}
# Worker readiness: sshd listening (liveness and startup probes are removed).
WORKER_READINESS = {
    "tcpSocket": {"port": SSH_PORT},
    "initialDelaySeconds": 20,
    "periodSeconds": 20,
    "timeoutSeconds": 5,
    "failureThreshold": 10,
}
# Environment mpirun forwards to every rank besides the container's own variables.
FORWARDED_ENV = frozenset(
    {
        "CPATH", "CUDA_VISIBLE_DEVICES", "MODEL_PATH", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
        "HF_ENDPOINT", "TOKENIZERS_PARALLELISM", "NCCL_DEBUG", "NCCL_IB_DISABLE", "NCCL_P2P_DISABLE",
        "TENSORRT_LLM_CACHE_DIR", "HF_HOME", "TRANSFORMERS_CACHE", "HF_DATASETS_CACHE", "PATH",
        "LD_LIBRARY_PATH", "PYTHONPATH", "HOME", "USER", "TRITON_PTXAS_PATH", "TRTLLM_USE_UCX_KVCACHE",
    }
)  # fmt: skip
# Seconds the LWS leader waits for every worker's DNS record before giving up.
DNS_WAIT_TIMEOUT_S = 300

_SSH_CLIENT_SETUP = [
    "mkdir -p $HOME/.ssh",
    "ls -la /ssh-pk/",
    "cp /ssh-pk/private.key $HOME/.ssh/id_rsa",
    "cp /ssh-pk/private.key.pub $HOME/.ssh/id_rsa.pub",
    "cp /ssh-pk/private.key.pub $HOME/.ssh/authorized_keys",
    "chmod 600 $HOME/.ssh/id_rsa $HOME/.ssh/authorized_keys",
    "chmod 644 $HOME/.ssh/id_rsa.pub",
    f"printf 'Host *\\nIdentityFile '$HOME'/.ssh/id_rsa\\nStrictHostKeyChecking no\\nPort {SSH_PORT}\\n' > $HOME/.ssh/config",
]
_SSHD_CONFIG = (
    f"printf 'Port {SSH_PORT}\\nHostKey '$HOME'/.ssh/host_keys/ssh_host_rsa_key\\nHostKey "
    "'$HOME'/.ssh/host_keys/ssh_host_ecdsa_key\\nHostKey '$HOME'/.ssh/host_keys/ssh_host_ed25519_key\\n"
    "PidFile '$HOME'/.ssh/run/sshd.pid\\nStrictModes no\\nPermitRootLogin yes\\nPasswordAuthentication no\\n"
    "PubkeyAuthentication yes\\nAuthorizedKeysFile '$HOME'/.ssh/authorized_keys\\n' > $HOME/.ssh/sshd_config"
)
_SSH_SERVER_SETUP = [
    "mkdir -p $HOME/.ssh $HOME/.ssh/host_keys $HOME/.ssh/run",
    *_SSH_CLIENT_SETUP[1:],
    "ssh-keygen -t rsa -f $HOME/.ssh/host_keys/ssh_host_rsa_key -N ''",
    "ssh-keygen -t ecdsa -f $HOME/.ssh/host_keys/ssh_host_ecdsa_key -N ''",
    "ssh-keygen -t ed25519 -f $HOME/.ssh/host_keys/ssh_host_ed25519_key -N ''",
    _SSHD_CONFIG,
    "/usr/sbin/sshd -D -f $HOME/.ssh/sshd_config",
]


def original_command(container: Manifest) -> str:
    """The engine command the leader wraps: quoted python argv, else the shell line as written."""
    command = list(container.get("command") or [])
    args = list(container.get("args") or [])
    if command and is_python_command(command[0]):
        return " ".join(shell_quote(t) for t in [*command, *args])
    return " ".join(args) if args else " ".join(command)


def env_flags(env: list[Manifest]) -> str:
    names = sorted(FORWARDED_ENV | {e["name"] for e in env})
    return " ".join(f"-x {n}" for n in names)


def dns_wait(workers: list[str]) -> str:
    return (
        f"TIMEOUT={DNS_WAIT_TIMEOUT_S}; START_TIME=$(date +%s); for worker in {' '.join(workers)}; do "
        'echo "Waiting for DNS: $worker"; until getent hosts $worker >/dev/null 2>&1; do '
        "CURRENT_TIME=$(date +%s); if [ $((CURRENT_TIME - START_TIME)) -gt $TIMEOUT ]; then "
        'echo "ERROR: Timeout waiting for DNS: $worker"; exit 1; fi; echo "DNS not ready for $worker, '
        'retrying..."; sleep 2; done; echo "✓ DNS resolved: $worker"; done; echo "All workers DNS ready"'
    )


def leader_command(ctx: ComponentContext, container: Manifest, p: Placement) -> str:
    hosts = p.deployer.host_names(ctx.name, p.nodes)
    mpirun = (
        'mpirun $([ "$(id -u)" = "0" ] && echo --allow-run-as-root) --oversubscribe '
        f"-n {p.nodes * p.gpus} -H {','.join(hosts)} --mca pml ob1 "
        f'--mca plm_rsh_args "-p {SSH_PORT} -o StrictHostKeyChecking=no -i $HOME/.ssh/id_rsa" '
        f"{env_flags(container.get('env') or [])} bash -c 'trtllm-llmapi-launch {original_command(container)}'"
    )
    steps = [*_SSH_CLIENT_SETUP, *([dns_wait(hosts[1:])] if p.deployer.needs_dns_wait() else []), mpirun]
    return " && ".join(steps)


class TRTLLM:
    name = FRAMEWORK
    # mpirun on the leader needs every worker's sshd listening.
    leader_starts_after_workers = True

    def secret(self, ctx: ComponentContext) -> str:
        """The MPI SSH key pair (the operator config's `mpi.sshSecretName`)."""
        return ctx.options.mpi.ssh_secret_name

    def container(self, ctx: ComponentContext, container: Manifest, placement: Placement) -> Manifest:
        if not placement.multinode:
            return container
        if placement.role == Role.WORKER:
            container = {k: v for k, v in container.items() if k not in ("livenessProbe", "startupProbe")} | {
                "readinessProbe": dict(WORKER_READINESS)
            }
        mount = {"name": self.secret(ctx), "mountPath": SSH_KEY_DIR, "readOnly": True}
        container = {**container, "volumeMounts": [*(container.get("volumeMounts") or []), mount]}
        container = append_env(container, dict(FQDN_ENV))
        if roles.has_role_pod_templates(ctx.spec):
            # A complete role template owns the launch; its worker command must start sshd on the port
            # the readiness probe checks (1.6-era `backend_trtllm.go`, michaelfeil/dynamo@80b177f2).
            return container
        if placement.role == Role.LEADER:
            line = leader_command(ctx, container, placement)
            return {**container, "command": ["/bin/sh", "-c"], "args": [line]}
        if placement.role == Role.WORKER:
            return {**container, "command": ["/bin/sh", "-c"], "args": [" && ".join(_SSH_SERVER_SETUP)]}
        return container

    def pod_spec(self, ctx: ComponentContext, pod: Manifest, placement: Placement) -> Manifest:
        if not placement.multinode:
            return pod
        secret = self.secret(ctx)
        volume = {"name": secret, "secret": {"secretName": secret, "defaultMode": SSH_SECRET_MODE}}
        return {**pod, "volumes": [*(pod.get("volumes") or []), volume]}

    def default_compilation_cache_path(self) -> str | None:
        return None

    def multinode_secret(self, ctx: ComponentContext) -> str | None:
        return self.secret(ctx)

    def failover_engine(self, engine: Manifest, n: int, nodes: int) -> Manifest | None:
        return None
