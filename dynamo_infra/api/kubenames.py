"""The API server's rules for object names, label keys and label values (k8s.io/apimachinery
`validation`), as messages that say which rule a value breaks.

The renderer checks the names it derives with the same rules (`render.checks.name_check`); loading checks
what the user wrote: `metadata` of a custom resource here, component names in the version models.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dynamo_infra.api.errors import Problem, join_path

# DNS-1123 label / DNS-1035 label / label value: at most this many characters.
LABEL_MAX = 63
# DNS-1123 subdomain: at most this many characters.
SUBDOMAIN_MAX = 253
# The prefix of a qualified name (label or annotation key) is a DNS-1123 subdomain of this length.
KEY_PREFIX_MAX = 253

_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"


@dataclass(frozen=True)
class Rule:
    """One naming rule: `words` names it in messages, `chars` says what it allows."""

    words: str
    max_length: int
    pattern: re.Pattern[str]
    chars: str

    def broken(self, value: str) -> str | None:
        """Why `value` breaks the rule (None when it does not)."""
        if len(value) > self.max_length:
            return f"is {len(value)} characters; {self.words} has at most {self.max_length}"
        if not self.pattern.fullmatch(value):
            return f"is not {self.words} ({self.chars})"
        return None


DNS1123_LABEL = Rule(
    "a DNS-1123 label",
    LABEL_MAX,
    re.compile(_DNS1123_LABEL),
    "lowercase letters, digits and '-', starting and ending with a letter or digit",
)
DNS1123_SUBDOMAIN = Rule(
    "a DNS-1123 subdomain",
    SUBDOMAIN_MAX,
    re.compile(rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*"),
    "lowercase letters, digits, '-' and '.', starting and ending with a letter or digit",
)
DNS1035_LABEL = Rule(
    "a DNS-1035 label",
    LABEL_MAX,
    re.compile("[a-z]([-a-z0-9]*[a-z0-9])?"),
    "lowercase letters, digits and '-', starting with a letter and ending with a letter or digit",
)
LABEL_VALUE = Rule(
    "a label value",
    LABEL_MAX,
    re.compile("([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]|"),
    "letters, digits, '-', '_' and '.', starting and ending with a letter or digit",
)
# The name part of a qualified name (label and annotation keys).
QUALIFIED_NAME = Rule(
    "a qualified name",
    LABEL_MAX,
    re.compile("[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"),
    "letters, digits, '-', '_' and '.', starting and ending with a letter or digit, after an optional "
    "DNS-1123 subdomain prefix and '/'",
)
# Roles and RoleBindings: any name usable as a URL path segment.
PATH_SEGMENT = Rule("a path segment name", SUBDOMAIN_MAX, re.compile(r"(?!\.\.?$)[^/%]+"), "no '/' or '%'")
# Job names also become the value of the `job-name` label of its pods.
JOB_NAME = Rule(
    "a Job name (a DNS-1123 subdomain that is also a label value)",
    LABEL_MAX,
    DNS1123_SUBDOMAIN.pattern,
    DNS1123_SUBDOMAIN.chars,
)

# A Dynamo component's name (v1beta1 CRD: `spec.components[].name`); a v1alpha1 service's key
# becomes it.
COMPONENT_NAME_PATTERN = "[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?"
COMPONENT_NAME = Rule(
    "a component name",
    LABEL_MAX,
    re.compile(COMPONENT_NAME_PATTERN),
    "letters, digits and '-', starting and ending with a letter or digit",
)

# The rule for metadata.name of each kind we render (others: a DNS-1123 subdomain, as the API
# server requires of most kinds and of every custom resource).
NAME_RULES: Mapping[str, Rule] = {
    "Service": DNS1035_LABEL,
    "Namespace": DNS1123_LABEL,
    "Role": PATH_SEGMENT,
    "RoleBinding": PATH_SEGMENT,
    "ClusterRole": PATH_SEGMENT,
    "ClusterRoleBinding": PATH_SEGMENT,
    "Job": JOB_NAME,
}


def name_rule(kind: str) -> Rule:
    """The rule the API server applies to metadata.name of `kind`."""
    return NAME_RULES.get(kind, DNS1123_SUBDOMAIN)


@functools.lru_cache(maxsize=1024)
def key_broken(key: str) -> str | None:
    """Why `key` is not a qualified name (a label or annotation key), or None."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or DNS1123_SUBDOMAIN.broken(prefix)):
        return f"has a prefix {prefix!r} that is not {DNS1123_SUBDOMAIN.words}"
    return QUALIFIED_NAME.broken(name)


def label_problems(at: str, labels: Any) -> list[Problem]:
    """Problems of a label map at `at` (keys qualified names, values label values)."""
    if not isinstance(labels, dict):
        return []
    out = []
    for key, value in labels.items():
        if why := key_broken(str(key)):
            out.append(Problem(at, f"label key {key!r} {why}"))
        if isinstance(value, str) and (why := LABEL_VALUE.broken(value)):
            out.append(Problem(join_path(at, str(key)), f"label value {value!r} {why}"))
    return out


def metadata_problems(metadata: Any, *, at: str = "metadata") -> list[Problem]:
    """What the API server would reject in a custom resource's metadata: its name (a DNS-1123
    subdomain), namespace (a DNS-1123 label), label keys and values, annotation keys."""
    if not isinstance(metadata, dict):
        return []
    out = []
    for field, rule in (("name", DNS1123_SUBDOMAIN), ("namespace", DNS1123_LABEL)):
        value = metadata.get(field)
        if isinstance(value, str) and (why := rule.broken(value)):
            out.append(Problem(join_path(at, field), f"{value!r} {why}, as the API server requires"))
    out += label_problems(join_path(at, "labels"), metadata.get("labels"))
    annotations = metadata.get("annotations")
    if isinstance(annotations, dict):
        for key in annotations:
            if why := key_broken(str(key)):
                out.append(Problem(join_path(at, "annotations"), f"annotation key {key!r} {why}"))
    return out
