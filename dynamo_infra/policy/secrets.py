"""Secrets written as literal env values: by the variable's name, or by the value's known token format.
A `valueFrom` (secretKeyRef) never is one, nor a `$(VAR)` reference to another variable."""

from __future__ import annotations

import re

from dynamo_infra.policy.pods import PodTemplate, named_containers

# Words of a variable name (split at `_`, `-`, `.`) that say it holds a secret.
SECRET_WORDS = frozenset(
    {
        "TOKEN",
        "TOKENS",
        "KEY",
        "APIKEY",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "SECRET",
        "SECRETS",
        "CREDENTIAL",
        "CREDENTIALS",
        "PRIVATEKEY",
    }
)
# Value formats of well-known credentials (the value is never printed, only the format's name).
TOKEN_FORMATS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{20,}")),
    ("an OpenAI-style API key", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}")),
    ("an NVIDIA NGC API key", re.compile(r"\bnvapi-[A-Za-z0-9_-]{20,}")),
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})")),
    ("a Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("a PEM private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
)
# A value that only references another variable (Kubernetes expands `$(NAME)`).
VARIABLE_REFERENCE = re.compile(r"\$\([A-Za-z_][A-Za-z0-9_]*\)")


def secret_reason(name: str, value: str) -> str | None:
    """Why a literal env entry looks like a secret, or None."""
    if not value or VARIABLE_REFERENCE.fullmatch(value):
        return None
    for what, pattern in TOKEN_FORMATS:
        if pattern.search(value):
            return f"its value looks like {what}"
    words = set(re.split(r"[_.-]+", name.upper()))
    if words & SECRET_WORDS:
        return "its name says it holds a secret"
    return None


def secret_env_violations(templates: list[PodTemplate]) -> list[str]:
    """One line per env entry with a literal value that looks like a secret (the value never shown)."""
    out = []
    for where, c in named_containers(templates):
        for entry in c.get("env") or []:
            value = entry.get("value")
            if "valueFrom" in entry or not isinstance(value, str):
                continue
            reason = secret_reason(str(entry.get("name", "")), value)
            if reason:
                out.append(
                    f"{where}: env {entry.get('name')} has a literal value and {reason}; use valueFrom.secretKeyRef"
                )
    return out
