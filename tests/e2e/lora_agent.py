"""A minimal agent process for the LoRA end-to-end test: kopf with only `dynamo_infra.agent.lora`'s
handlers, the settings the agent runs with (standalone, no events posted, no state in objects), logged
in with our own kubeconfig loader. `python -m tests.e2e.lora_agent --namespace NS [--requeue-after S]`."""

from __future__ import annotations

import argparse
import logging
from typing import Any

import kopf

from dynamo_infra.agent import lora
from dynamo_infra.reconcile.connection import Connection


def login_info(conn: Connection) -> kopf.ConnectionInfo:
    return kopf.ConnectionInfo(
        server=conn.server,
        ca_data=conn.ca_pem,
        insecure=conn.insecure,
        token=conn.bearer_token(),
        certificate_data=conn.client_cert_pem,
        private_key_data=conn.client_key_pem,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--namespace", action="append", required=True)
    parser.add_argument("--requeue-after", type=float, default=lora.REQUEUE_AFTER_S)
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    registry = kopf.OperatorRegistry()

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = False
        settings.scanning.disabled = True

    @kopf.on.login(registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return login_info(lora.default_connection())

    lora.register(registry, requeue_after=args.requeue_after)
    kopf.run(registry=registry, standalone=True, namespaces=args.namespace)


if __name__ == "__main__":
    main()
