# The run-time agent's image: `dynamo-infra agent` from this repository.
#   docker build -t <registry>/dynamo-infra-agent:<tag> .
# The agent imports no Pulumi (an import-linter contract), so the image holds every pinned runtime
# dependency but Pulumi's, and this package installed without its dependency resolution.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY requirements.txt ./
RUN grep -v -E '^(pulumi|pulumi-kubernetes)==' requirements.txt > /tmp/agent-requirements.txt \
    && pip install -r /tmp/agent-requirements.txt \
    && rm /tmp/agent-requirements.txt
COPY pyproject.toml ./
COPY dynamo_infra ./dynamo_infra
RUN pip install --no-deps . && cd / && rm -rf /src

WORKDIR /
# The non-root user the rendered Deployment runs it as (render/agent.py AGENT_UID).
USER 65532:65532
CMD ["dynamo-infra", "agent"]
