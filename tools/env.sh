# Source me: prepares the virtualenv and the pinned toolchain, and exports what Pulumi needs offline.
#   . tools/env.sh
# Environment: DYNAMO_INFRA_TOOLCHAIN_DIR moves the toolchain cache; PULUMI_BACKEND_URL another backend
# than .local/state; PULUMI_CONFIG_PASSPHRASE(_FILE) the passphrase (set only for .local/state by default).
DYNAMO_INFRA_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export DYNAMO_INFRA_ROOT

_dynamo_infra_env() {
  cd "$DYNAMO_INFRA_ROOT" || return 1
  # 1. Virtualenv with the pinned dependencies and this project installed (editable), reinstalled
  #    only when a requirements file or pyproject.toml changed.
  local want
  want="$(cat requirements.txt requirements-dev.txt policy/requirements.txt pyproject.toml | sha256sum | cut -c1-16)"
  if [ ! -x .venv/bin/python ] || [ "$(cat .venv/.deps 2>/dev/null)" != "$want" ]; then
    echo "[env] installing the virtualenv (.venv)" >&2
    python3 -m venv .venv || return 1
    .venv/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt || return 1
    .venv/bin/pip install -q --disable-pip-version-check --no-deps -e . || return 1
    echo "$want" > .venv/.deps
  fi
  export VIRTUAL_ENV="$DYNAMO_INFRA_ROOT/.venv"

  # 2. The Go toolchain (built once into the per-user cache; seconds when warm).
  local exports
  exports="$(.venv/bin/python -m tools.toolchain --env)" || return 1
  eval "$exports"
  export PATH="$VIRTUAL_ENV/bin:$PATH"

  # 3. Pulumi offline: no update checks, no plugin downloads, local file backend, passphrase secrets.
  export PULUMI_SKIP_UPDATE_CHECK=true
  export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
  export PULUMI_HOME="${PULUMI_HOME:-$DYNAMO_INFRA_ROOT/.local/pulumi-home}"
  local local_backend="file://$DYNAMO_INFRA_ROOT/.local/state"
  export PULUMI_BACKEND_URL="${PULUMI_BACKEND_URL:-$local_backend}"
  # The well-known passphrase is for the local backend's throwaway stacks only: any other backend's
  # stacks use the team's own PULUMI_CONFIG_PASSPHRASE(_FILE) or a secrets provider such as awskms.
  if [ "$PULUMI_BACKEND_URL" = "$local_backend" ] && [ -z "${PULUMI_CONFIG_PASSPHRASE+set}" ] \
    && [ -z "${PULUMI_CONFIG_PASSPHRASE_FILE:-}" ]; then
    export PULUMI_CONFIG_PASSPHRASE=dynamo-infra-local
  fi
  # Our Python language host runs on the project's virtualenv (it needs pulumi and grpcio).
  export PULUMI_LANGUAGE_HOST_PYTHON="$VIRTUAL_ENV/bin/python"
  mkdir -p "$PULUMI_HOME" "$DYNAMO_INFRA_ROOT/.local/state"
  .venv/bin/python -m tools.toolchain --install-plugins "$PULUMI_HOME" >/dev/null || return 1
}
_dynamo_infra_env
