"""ClusterOptions: defaults, effective orchestrators, and bad or contradictory settings rejected
with the config key path."""

from __future__ import annotations

from typing import Any

import pytest

from dynamo_infra.api import DynamoValidationError
from dynamo_infra.config import ClusterOptions, go_duration


def problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(DynamoValidationError) as e:
        ClusterOptions.from_config(data)
    return [str(p) for p in e.value.problems]


def test_defaults_are_the_operator_defaults() -> None:
    o = ClusterOptions()
    assert not o.grove_enabled and not o.lws_enabled and not o.dra.enabled
    assert o.grove_termination_delay == "15m0s" and o.mpi.ssh_secret_name == "mpi-run-ssh-secret"
    assert (
        o.dra.device_class == "gpu.nvidia.com"
        and o.service_mesh.provider == ""
        and o.virtual_service_gateway == ""
    )
    assert o.problems() == []


def test_operator_configuration_settings() -> None:
    o = ClusterOptions()
    assert o.discovery.backend == "kubernetes"
    assert o.grove.termination_delay == "15m" and o.grove.enabled is None  # None: follow the orchestrator
    assert not o.service_mesh.istio_enabled
    mesh = ClusterOptions.from_config(
        {"serviceMesh": {"provider": "istio", "istio": {"tlsMode": "ISTIO_MUTUAL"}}}
    )
    assert mesh.service_mesh.istio_enabled and mesh.service_mesh.istio.tls_mode == "ISTIO_MUTUAL"
    assert problems({"discovery": {"backend": "consul"}}) == [
        "discovery.backend: must be one of 'kubernetes' or 'etcd' (got 'consul')"
    ]


def test_orchestrator_enables_its_pathway() -> None:
    assert ClusterOptions.from_config({"multinode": {"orchestrator": "grove"}}).grove_enabled
    lws = ClusterOptions.from_config({"multinode": {"orchestrator": "lws"}})
    assert lws.lws_enabled and not lws.grove_enabled
    both = ClusterOptions.from_config({"multinode": {"orchestrator": "grove"}, "lws": {"enabled": True}})
    assert both.grove_enabled and both.lws_enabled


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {"multinode": {"orchestrator": "grove"}, "grove": {"enabled": False}},
            "grove.enabled: is false but multinode.orchestrator is grove",
        ),
        (
            {"multinode": {"orchestrator": "lws"}, "lws": {"enabled": False}},
            "lws.enabled: is false but multinode.orchestrator is lws",
        ),
        (
            {"multinode": {"orchestrator": "none"}, "lws": {"enabled": True}},
            "lws.enabled: is true but multinode.orchestrator is none",
        ),
        (
            {"multinode": {"orchestrator": "lws"}, "grove": {"enabled": True}},
            "multinode.orchestrator: is lws but grove.enabled is true",
        ),
        ({"grove": {"scheduler": "kai"}}, "grove.scheduler: kai scheduling needs Grove enabled"),
        (
            {"multinode": {"orchestrator": "grove"}, "grove": {"queue": "q"}},
            "grove.queue: needs grove.scheduler kai or volcano",
        ),
        ({"grove": {"terminationDelay": "soon"}}, "grove.terminationDelay: 'soon' is not a duration"),
        ({"dra": {"deviceClass": "Bad_Class"}}, "dra.deviceClass: 'Bad_Class' is not a DNS subdomain name"),
        ({"mpi": {"sshSecretName": "UPPER"}}, "mpi.sshSecretName: 'UPPER' is not a valid Secret name"),
        (
            {"mpi": {"sshSecretNamespace": "a.b"}},
            "mpi.sshSecretNamespace: 'a.b' is not a valid namespace name",
        ),
        ({"serviceMesh": {"gateway": "gw"}}, "serviceMesh.gateway: needs serviceMesh.provider istio"),
        (
            {
                "serviceMesh": {"provider": "istio", "gateway": "a/gw"},
                "ingress": {"virtualServiceGateway": "b/gw"},
            },
            "serviceMesh.gateway: 'a/gw' contradicts ingress.virtualServiceGateway 'b/gw'",
        ),
        (
            {"serviceMesh": {"provider": "istio", "istio": {"tlsMode": "MUTUAL"}}},
            "serviceMesh.istio.clientCertificate: is required when tlsMode is MUTUAL",
        ),
        (
            {"serviceMesh": {"istio": {"caCertificates": "/ca"}}},
            "serviceMesh.istio.tlsMode: client certificates are only used with MUTUAL",
        ),
        (
            {"checkpoint": {"storagePvc": "snaps"}},
            "checkpoint.storagePvc: is set but checkpoint.enabled is false",
        ),
        ({"multinode": {"orchestrator": "swarm"}}, "multinode.orchestrator"),
        ({"await": {"timeoutSeconds": 0}}, "await.timeoutSeconds"),
        ({"namespace": "Bad_NS"}, "namespace"),
        ({"grove": {"scheduler": "yunikorn"}}, "grove.scheduler"),
        ({"dra": {"enabled": "maybe"}}, "dra.enabled"),
        ({"lws": {"enable": True}}, "lws.enable"),
    ],
)
def test_bad_config_names_the_key(data: dict[str, Any], expected: str) -> None:
    assert any(p.startswith(expected) for p in problems(data)), problems(data)


def test_every_contradiction_is_reported_at_once() -> None:
    found = problems(
        {"multinode": {"orchestrator": "lws"}, "grove": {"enabled": True, "terminationDelay": "x"}}
    )
    assert [p.split(":")[0] for p in found] == ["grove.terminationDelay", "multinode.orchestrator"]


def test_mesh_gateway_spellings() -> None:
    o = ClusterOptions.from_config({"serviceMesh": {"provider": "istio", "gateway": "istio-system/gw"}})
    assert o.virtual_service_gateway == "istio-system/gw"
    o = ClusterOptions.from_config({"ingress": {"virtualServiceGateway": "istio-system/gw"}})
    assert o.virtual_service_gateway == "istio-system/gw"


@pytest.mark.parametrize(
    ("text", "go"),
    [
        ("15m", "15m0s"),
        ("1h30m", "1h30m0s"),
        ("90s", "1m30s"),
        ("0", "0s"),
        ("250ms", "250ms"),
        ("2h", "2h0m0s"),
    ],
)
def test_go_durations(text: str, go: str) -> None:
    assert go_duration(text) == go
