"""A small Kubernetes REST client: discovery, server-side apply, get, list, delete, waits that watch.
Counts its requests."""

from __future__ import annotations

import collections
import ipaddress
import json
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from dynamo_infra import __version__
from dynamo_infra.api.manifest import Manifest
from dynamo_infra.kube import retry, watch
from dynamo_infra.kube.connection import Connection
from dynamo_infra.kube.errors import (
    DENIED,
    Conflict,
    Forbidden,
    KubeconfigError,
    KubeError,
    NotFound,
    forbidden_message,
)
from dynamo_infra.kube.exec_credential import Credential

# Field manager of every server-side apply we make.
FIELD_MANAGER = "dynamo-infra"
# User agent of every request (the API server's audit log tells our requests apart by it).
USER_AGENT = f"dynamo-infra/{__version__}"
# User agent of the Pulumi program's own reads (which namespace-level objects the stack owns).
PROGRAM_USER_AGENT = f"dynamo-infra-program/{__version__}"
# User agent of the platform's cluster-wide writes (its CRDs), made with the stack's own kubeconfig.
PLATFORM_USER_AGENT = f"dynamo-infra-platform/{__version__}"
# Accept header asking for an object's metadata only (PartialObjectMetadata: no spec, no status).
METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
# Per-request timeout against the API server.
REQUEST_TIMEOUT_S = 30.0
# A watch's read may be this much longer than its `timeoutSeconds` before it counts as broken.
WATCH_READ_MARGIN_S = 10.0
# Where a client asks who it is (allowed to every authenticated identity).
SELF_REVIEW_PATH = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
# Statuses after which this client stops trying watches and polls (the identity may not watch).
WATCH_REFUSED = frozenset({401, 403, 405})

# Whether the client may watch a resource (API group, plural): the default tries every one.
MayWatch = Callable[[str, str], bool]


@dataclass(frozen=True)
class ResourceInfo:
    api_version: str
    kind: str
    plural: str
    namespaced: bool

    def path(self, namespace: str | None, name: str | None = None) -> str:
        root = f"/api/{self.api_version}" if "/" not in self.api_version else f"/apis/{self.api_version}"
        if self.namespaced and namespace:
            root += f"/namespaces/{namespace}"
        root += f"/{self.plural}"
        return f"{root}/{name}" if name else root


def stub(api_version: str, kind: str, namespace: str, name: str) -> Manifest:
    """A minimal manifest addressing one object (namespace empty if cluster-scoped)."""
    meta: Manifest = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


def object_key(obj: Manifest) -> str:
    """`apiVersion/kind/namespace/name`, the key objects are tracked by (namespace empty if cluster-scoped)."""
    meta = obj.get("metadata") or {}
    return f"{obj['apiVersion']}/{obj['kind']}/{meta.get('namespace', '')}/{meta['name']}"


def proxied_from_environment(server: str) -> bool:
    """Whether HTTPS_PROXY/NO_PROXY apply to requests to `server`: as Go's ProxyFromEnvironment,
    never to localhost or a loopback address."""
    host = urllib.parse.urlsplit(server).hostname or ""
    if host == "localhost":
        return False
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return True


def _verify_failure(error: BaseException) -> ssl.SSLCertVerificationError | None:
    """The certificate verification failure behind a transport error (not worth retrying), if any."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


class KubeClient:
    def __init__(
        self, conn: Connection, user_agent: str = USER_AGENT, *, may_watch: MayWatch | None = None
    ) -> None:
        self.conn = conn
        self.user_agent = user_agent
        # Which resources waits watch (the others are polled); None: all, until a watch is refused.
        self.may_watch = may_watch
        self._watch_refused = False
        self._lock = threading.Lock()
        # Read now, so a kubeconfig whose credential cannot be had fails before the first request.
        credential = conn.credential()
        self._pair = credential.client_pair
        self._http = self._new_http(self._pair)
        # Clients replaced when an exec plugin issued a new certificate (closed with this one).
        self._retired: list[httpx.Client] = []
        self._resources: dict[str, dict[str, ResourceInfo]] = {}
        self.requests: collections.Counter[str] = collections.Counter()

    def _new_http(self, pair: tuple[bytes, bytes] | None) -> httpx.Client:
        verify = self.conn.ssl_context(pair)
        try:
            return httpx.Client(
                base_url=self.conn.server,
                verify=verify,
                timeout=REQUEST_TIMEOUT_S,
                proxy=self.conn.proxy_url or None,
                trust_env=proxied_from_environment(self.conn.server),
            )
        except (ImportError, ValueError) as e:
            # The URL is not quoted: a proxy's may hold a password.
            scheme = urllib.parse.urlsplit(self.conn.proxy_url).scheme
            raise KubeconfigError(
                f"kubeconfig proxy-url: {scheme!r} proxies are not supported here ({type(e).__name__}; "
                "socks5 needs the httpx[socks] extra)"
            ) from None

    def close(self) -> None:
        for client in (*self._retired, self._http):
            client.close()

    def __enter__(self) -> KubeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- transport ----------------------------------------------------------------------------

    def _http_for(self, credential: Credential) -> httpx.Client:
        """The HTTP client presenting the credential's client certificate."""
        with self._lock:
            if credential.client_pair != self._pair:
                self._retired.append(self._http)
                self._pair = credential.client_pair
                self._http = self._new_http(self._pair)
            return self._http

    def request(self, method: str, path: str, *, body: Any = None, params: dict[str, str] | None = None,
                content_type: str = "application/json", accept: str = "application/json") -> Manifest:  # fmt: skip
        headers = {"Accept": accept, "User-Agent": self.user_agent}
        data = None
        if body is not None:
            headers["Content-Type"] = content_type
            data = json.dumps(body).encode()
        extensions = {"sni_hostname": self.conn.tls_server_name} if self.conn.tls_server_name else None
        credential, renewed = self.conn.credential(), False
        attempt = 0
        while True:
            headers.pop("Authorization", None)
            if credential.token:
                headers["Authorization"] = f"Bearer {credential.token}"
            self.requests[method] += 1
            try:
                resp = self._http_for(credential).request(
                    method, path, content=data, params=params, headers=headers, extensions=extensions
                )
            except httpx.TransportError as e:
                untrusted = _verify_failure(e)
                if untrusted is not None:
                    raise KubeError(
                        f"{method} {path}: the API server at {self.conn.server} is not trusted: its certificate "
                        f"failed verification ({untrusted.verify_message}); check the kubeconfig cluster's "
                        "certificate-authority and tls-server-name"
                    ) from e
                if attempt == retry.RETRIES:
                    raise KubeError(
                        f"{method} {path}: API server unreachable at {self.conn.server} ({type(e).__name__})"
                    ) from e
                attempt += 1
                time.sleep(retry.backoff(attempt))
                continue
            if resp.status_code == 401 and not renewed:
                # As client-go: a refused credential is renewed once (an exec plugin runs again).
                renewed = True
                fresh = self.conn.renew(credential)
                if fresh is not None:
                    credential = fresh
                    continue
            if retry.retried(resp.status_code, method, content_type) and attempt < retry.RETRIES:
                attempt += 1
                wait = retry.retry_after(resp.headers.get("Retry-After"))
                time.sleep(retry.backoff(attempt) if wait is None else wait)
                continue
            return self._result(method, path, resp)

    def identity(self) -> str:
        """Who the API server takes us for (SelfSubjectReview; "" when it cannot say)."""
        review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        try:
            found = self.request("POST", SELF_REVIEW_PATH, body=review)
        except KubeError:
            return ""
        return str(((found.get("status") or {}).get("userInfo") or {}).get("username") or "")

    def _result(self, method: str, path: str, resp: httpx.Response) -> Manifest:
        try:
            payload: Manifest = resp.json() if resp.content else {}
        except ValueError:
            payload = {"message": resp.text[:500]}
        if resp.status_code < 400:
            return payload
        message = payload.get("message") or resp.reason_phrase
        reason = payload.get("reason", "")
        details = payload.get("details") or {}
        err = f"{method} {path}: {resp.status_code} {reason}: {message}"
        if resp.status_code == 403 and path != SELF_REVIEW_PATH:
            who = "" if DENIED.search(str(message)) else self.identity()
            raise Forbidden(
                forbidden_message(method, path, str(message), who),
                403,
                reason,
                details,
                method=method,
                path=path,
            )
        if resp.status_code == 404:
            raise NotFound(err, 404, reason, details, method=method, path=path)
        if resp.status_code == 409 and method == "PATCH":
            raise Conflict(err, 409, reason, details, method=method, path=path)
        raise KubeError(err, resp.status_code, reason, details, method=method, path=path)

    # --- discovery ------------------------------------------------------------------------------

    def resource(self, api_version: str, kind: str) -> ResourceInfo:
        known = self._resources.get(api_version)
        if known is None or kind not in known:
            path = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
            try:
                listing = self.request("GET", path)
            except NotFound as e:
                raise KubeError(
                    f"the API server does not serve {api_version} (is its CRD installed?)", 404
                ) from e
            known = {
                r["kind"]: ResourceInfo(api_version, r["kind"], r["name"], bool(r.get("namespaced")))
                for r in listing.get("resources", [])
                if "/" not in r["name"]
            }
            self._resources[api_version] = known
        if kind not in known:
            raise KubeError(f"the API server serves {api_version} but not kind {kind}", 404)
        return known[kind]

    def serves(self, api_version: str, kind: str) -> bool:
        try:
            self.resource(api_version, kind)
            return True
        except KubeError:
            return False

    def _info(self, obj: Manifest) -> tuple[ResourceInfo, str | None, str]:
        info = self.resource(obj["apiVersion"], obj["kind"])
        meta = obj.get("metadata") or {}
        return info, (meta.get("namespace") if info.namespaced else None), meta["name"]

    # --- verbs ----------------------------------------------------------------------------------

    def apply(
        self,
        obj: Manifest,
        *,
        force: bool = True,
        dry_run: bool = False,
        manager: str = FIELD_MANAGER,
        subresource: str | None = None,
    ) -> Manifest:
        """Server-side apply of the fields in `obj` under `manager` (ours by default), to the object or
        one of its subresources (`status`)."""
        info, ns, name = self._info(obj)
        params = {"fieldManager": manager, "force": "true" if force else "false"}
        if dry_run:
            params["dryRun"] = "All"
        path = info.path(ns, name) + (f"/{subresource}" if subresource else "")
        return self.request(
            "PATCH", path, body=obj, params=params, content_type="application/apply-patch+yaml"
        )

    def patch(self, obj: Manifest, operations: list[Manifest], *, manager: str = FIELD_MANAGER) -> Manifest:
        """JSON patch (RFC 6902). An operation setting `/metadata/resourceVersion` makes it conditional:
        Conflict when the object changed since it was read."""
        info, ns, name = self._info(obj)
        return self.request(
            "PATCH",
            info.path(ns, name),
            body=operations,
            params={"fieldManager": manager},
            content_type="application/json-patch+json",
        )

    def get(self, obj: Manifest) -> Manifest | None:
        info, ns, name = self._info(obj)
        try:
            return self.request("GET", info.path(ns, name))
        except NotFound:
            return None

    def get_metadata(self, obj: Manifest) -> Manifest | None:
        """The object's metadata (labels, annotations, managedFields) without its body, or None when absent."""
        info, ns, name = self._info(obj)
        try:
            return self.request("GET", info.path(ns, name), accept=METADATA_ONLY)
        except NotFound:
            return None

    def get_scale(self, obj: Manifest) -> Manifest | None:
        """The object's `scale` subresource (autoscaling/v1 Scale), or None when the object is absent."""
        info, ns, name = self._info(obj)
        try:
            return self.request("GET", f"{info.path(ns, name)}/scale")
        except NotFound:
            return None

    def set_scale(self, obj: Manifest, replicas: int, *, manager: str = FIELD_MANAGER) -> Manifest:
        """Set `spec.replicas` through the scale subresource, as `kubectl scale` and autoscalers do."""
        info, ns, name = self._info(obj)
        return self.request(
            "PATCH",
            f"{info.path(ns, name)}/scale",
            body={"spec": {"replicas": replicas}},
            params={"fieldManager": manager},
            content_type="application/merge-patch+json",
        )

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[Manifest]:
        info = self.resource(api_version, kind)
        selectors = (("labelSelector", label_selector), ("fieldSelector", field_selector))
        params = {k: v for k, v in selectors if v} or None
        items = self.request("GET", info.path(namespace), params=params).get("items", [])
        for item in items:
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
        return list(items)

    def delete(self, obj: Manifest, *, propagation: str = "Foreground") -> bool:
        """Delete; True if it existed. Foreground: dependents go first, the object last."""
        info, ns, name = self._info(obj)
        try:
            self.request(
                "DELETE",
                info.path(ns, name),
                body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation},
            )
        except NotFound:
            return False
        return True

    def events(self, path: str, params: dict[str, str], seconds: int) -> Iterator[Manifest]:
        """The watch events of the collection at `path` for up to `seconds` (its `timeoutSeconds`)."""
        headers = {"Accept": "application/json", "User-Agent": self.user_agent}
        credential = self.conn.credential()
        if credential.token:
            headers["Authorization"] = f"Bearer {credential.token}"
        extensions = {"sni_hostname": self.conn.tls_server_name} if self.conn.tls_server_name else None
        query = {**params, "watch": "1", "allowWatchBookmarks": "true", "timeoutSeconds": str(seconds)}
        timeout = httpx.Timeout(REQUEST_TIMEOUT_S, read=seconds + WATCH_READ_MARGIN_S)
        self.requests["WATCH"] += 1
        try:
            with self._http_for(credential).stream(
                "GET", path, params=query, headers=headers, extensions=extensions, timeout=timeout
            ) as resp:
                if resp.status_code == watch.GONE:
                    raise watch.Gone()
                if resp.status_code != 200:
                    raise watch.WatchUnavailable(f"watch {path}: {resp.status_code}", resp.status_code)
                for line in resp.iter_lines():
                    if line.strip():
                        yield json.loads(line)
        except (httpx.HTTPError, ValueError) as e:
            raise watch.WatchUnavailable(f"watch {path}: {type(e).__name__}") from e

    def watches(self, obj: Manifest) -> bool:
        """Whether waits for this object watch it (else they poll)."""
        if self._watch_refused:
            return False
        if self.may_watch is None:
            return True
        info = self.resource(obj["apiVersion"], obj["kind"])
        return self.may_watch(info.api_version.rpartition("/")[0], info.plural)

    def wait_for(
        self,
        obj: Manifest,
        until: Callable[[Manifest | None], bool],
        timeout: float,
        poll: float = 1.0,
    ) -> tuple[bool, Manifest | None]:
        """Whether `until(the object, or None when absent)` holds within `timeout`, and the object as
        last seen: watched (`dynamo_infra.kube.watch`), or polled every `poll` seconds at most when the
        resource may not be watched or the watch fails."""
        info, ns, name = self._info(obj)
        selector = {"fieldSelector": f"metadata.name={name}"}
        typed = {"apiVersion": info.api_version, "kind": info.kind}

        def list_named() -> Manifest:
            try:
                listing = self.request("GET", info.path(ns), params=selector)
            except Forbidden as e:
                raise watch.WatchUnavailable(str(e), 403) from e
            listing["items"] = [{**typed, **item} for item in listing.get("items") or []]
            return listing

        def events(version: str, seconds: int) -> Iterator[Manifest]:
            for event in self.events(info.path(ns), {**selector, "resourceVersion": version}, seconds):
                if isinstance(event.get("object"), dict) and event.get("type") != "ERROR":
                    event["object"] = {**typed, **event["object"]}
                yield event

        target = watch.Target(list_named=list_named, events=events, get=lambda: self.get(obj))
        met, last, failed = watch.wait_for(target, until, timeout, poll=poll, watch=self.watches(obj))
        if failed is not None and failed.status in WATCH_REFUSED:
            self._watch_refused = True
        return met, last

    def wait_deleted(self, obj: Manifest, timeout: float, poll: float = 0.5) -> bool:
        """Whether the object is gone within `timeout` (watched; polled with growing pauses up to `poll`
        when it cannot be)."""
        return self.wait_for(obj, lambda live: live is None, timeout, poll)[0]
