"""Team state on S3: one stack whose state lives in a bucket of moto's standalone S3 server, through
Pulumi's self-managed (DIY) backend: up, a second `up` refused by the stack's lock while the first
runs, the state intact after it, refresh and destroy; the bucket holds no plaintext secret."""

from __future__ import annotations

import contextlib
import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer
from pulumi import automation as auto

from tests.integration.harness import TAIL, copy_project, destroy, make_stack, unique, up
from tests.wait import wait_until
from tools.localcluster import LocalCluster, port_is_free

# Region of the fake S3 endpoint (any region: moto serves them all).
REGION = "us-east-1"
# Dummy credentials: moto accepts any, and nothing reaches AWS.
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_REGION": REGION,
    "AWS_EC2_METADATA_DISABLED": "true",
}
# moto's port: below Linux's ephemeral range (32768+), where outgoing connections take theirs.
PORTS = range(20000, 32768)
# Where the DIY backend keeps a stack's lock files (`.pulumi/locks/<project>/<stack>/<id>.json`).
LOCKS = ".pulumi/locks/"
# How long to wait for the first `up` to hold the stack's lock.
LOCK_WAIT = 60.0
# What the DIY backend says when a stack is locked by another update.
LOCKED = "the stack is currently locked"


def moto_port() -> int:
    """A free loopback port from PORTS."""
    for port in random.sample(PORTS, 50):
        if port_is_free(port):
            return port
    raise RuntimeError(f"no free port in {PORTS}")


@dataclass
class Bucket:
    """A bucket of the moto server, read with boto3."""

    client: Any
    name: str

    def objects(self) -> dict[str, bytes]:
        """Every object in the bucket, by key."""
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.name)
        keys = [o["Key"] for page in pages for o in page.get("Contents", [])]
        return {k: self.client.get_object(Bucket=self.name, Key=k)["Body"].read() for k in keys}

    def keys(self, prefix: str) -> list[str]:
        listed = self.client.list_objects_v2(Bucket=self.name, Prefix=prefix)
        return [o["Key"] for o in listed.get("Contents", [])]


@contextlib.contextmanager
def moto_bucket() -> Iterator[tuple[Bucket, str]]:
    """moto's S3 server on loopback with one bucket, and the bucket's DIY backend URL."""
    port = moto_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{port}"
        client = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name=REGION,
            aws_access_key_id=AWS_ENV["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=AWS_ENV["AWS_SECRET_ACCESS_KEY"],
        )
        name = unique("state")
        client.create_bucket(Bucket=name)
        # gocloud.dev's s3blob (AWS SDK v2) options: endpoint, path-style addressing, region.
        yield Bucket(client, name), f"s3://{name}?endpoint={endpoint}&use_path_style=true&region={REGION}"
    finally:
        server.stop()


@dataclass
class S3Stack:
    stack: auto.Stack
    bucket: Bucket
    token: str
    state_dir: Path
    # Set by the last test, so the fixture's teardown need not destroy again.
    destroyed: bool = False


@pytest.fixture(scope="module")
def s3_stack(tmp_path_factory: pytest.TempPathFactory, cluster: LocalCluster) -> Iterator[S3Stack]:
    """The mocker graph's stack, its state in the bucket and its kubeconfig a secret config value."""
    project = copy_project(tmp_path_factory.mktemp("s3"))
    with moto_bucket() as (bucket, url):
        graph = project / "examples" / "mocker-agg.yaml"
        stack = make_stack(
            project,
            cluster,
            "s3",
            unique("s3"),
            [graph],
            backend_url=url,
            env_vars=AWS_ENV,
            **{"await": {"mode": "skip"}},
        )
        stack.remove_config("dynamo-infra:kubeconfigPath")
        stack.set_config(
            "dynamo-infra:kubeconfig", auto.ConfigValue(cluster.kubeconfig.read_text(), secret=True)
        )
        token = (cluster.root / "pki" / "admin.token").read_text().strip()
        deployed = S3Stack(stack, bucket, token, project.parent / "state")
        try:
            yield deployed
        finally:
            if not deployed.destroyed:
                stack.destroy(on_output=lambda _: None)


def resource_count(stack: auto.Stack) -> int:
    return len(stack.export_stack().deployment.get("resources", []))


def test_up_keeps_the_state_in_the_bucket(s3_stack: S3Stack) -> None:
    up(s3_stack.stack)
    keys = set(s3_stack.bucket.objects())
    assert ".pulumi/stacks/dynamo-infra/s3.json" in keys, sorted(keys)
    assert resource_count(s3_stack.stack) > 1
    assert not any(s3_stack.state_dir.iterdir()), "the file backend was used"
    assert not s3_stack.bucket.keys(LOCKS), "the lock outlived the update"


def test_the_bucket_holds_no_plaintext_secret(s3_stack: S3Stack) -> None:
    objects = s3_stack.bucket.objects()
    checkpoint = objects[".pulumi/stacks/dynamo-infra/s3.json"]
    # The kubeconfig is in the state, as ciphertext of the passphrase provider.
    assert b'"ciphertext"' in checkpoint and b'"passphrase"' in checkpoint
    leaks = [key for key, body in objects.items() if s3_stack.token.encode() in body]
    assert not leaks, f"the kubeconfig's token in plaintext: {leaks}"


def test_a_second_up_is_refused_by_the_lock(s3_stack: S3Stack) -> None:
    stack, bucket = s3_stack.stack, s3_stack.bucket
    before = resource_count(stack)
    lines: list[str] = []
    first: dict[str, BaseException | auto.UpResult] = {}

    def run_first() -> None:
        try:
            first["result"] = stack.up(on_output=lines.append)
        except BaseException as e:  # noqa: BLE001 - reported by the test thread
            first["error"] = e

    thread = threading.Thread(target=run_first)
    thread.start()
    try:
        wait_until(lambda: bucket.keys(LOCKS) or not thread.is_alive(), LOCK_WAIT, 0.05,
                   what="the first up to take the lock")  # fmt: skip
        assert bucket.keys(LOCKS), f"the first up never held the lock: {first}"
        with pytest.raises(auto.errors.CommandError) as refused:
            stack.up(on_output=lambda _: None)
        assert LOCKED in str(refused.value)
    finally:
        thread.join()
    assert "error" not in first, "\n".join(lines[-TAIL:])
    assert first["result"].summary.result == "succeeded"  # type: ignore[union-attr]
    assert not bucket.keys(LOCKS)

    preview = stack.preview()
    assert set(preview.change_summary) == {"same"}, preview.stdout
    assert resource_count(stack) == before
    refresh = stack.refresh(on_output=lambda _: None)
    assert refresh.summary.result == "succeeded"
    assert resource_count(stack) == before


def test_destroy_empties_the_stack(s3_stack: S3Stack) -> None:
    destroy(s3_stack.stack)
    s3_stack.destroyed = True
    assert resource_count(s3_stack.stack) == 0
    assert not s3_stack.bucket.keys(LOCKS)
