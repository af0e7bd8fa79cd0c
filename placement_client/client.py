"""One async Placement client for the agent and the scheduler.

keystoneauth1 owns the credentials (token, its reuse and renewal, the
catalog); httpx sends the requests, so every request stays on the event
loop. The first request reads the root version document once and settles
the microversion; every error answer becomes a typed exception
(``errors``); connection failures and 503s are retried with backoff and
jitter (``retry``); a 401 drops the token and the request is sent once more
with a new one.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Self

import httpx
import orjson
from keystoneauth1 import adapter, session

from placement_client.auth import AuthOptions, from_static_token, load_adapter
from placement_client.credentials import Credentials
from placement_client.errors import (
    MicroversionUnsupported,
    PlacementError,
    PlacementUnavailable,
    error_from,
)
from placement_client.microversion import ServerVersions, Version, negotiate
from placement_client.retry import UNAVAILABLE, RetryPolicy, resendable

log = logging.getLogger(__name__)

MICROVERSION = "1.39"
# Idle connections are dropped before servers drop them (uvicorn: after 5 s), so a
# write is never sent on a connection being closed: its outcome would be unknown.
KEEPALIVE_SECONDS = 3.0

Sleep = Callable[[float], Awaitable[None]]
Params = Any  # what httpx takes as query parameters
EventHook = Callable[..., Any]  # httpx's: called with each request or response


class PlacementClient:
    def __init__(
        self,
        ks_adapter: adapter.Adapter,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        microversion: str = MICROVERSION,
        minimum_microversion: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        max_connections: int = 32,
        sleep: Sleep = asyncio.sleep,
        event_hooks: Mapping[str, list[EventHook]] | None = None,
    ) -> None:
        if ks_adapter.session.timeout is None:
            # A Keystone that hangs must not hang the caller's thread for ever.
            ks_adapter.session.timeout = timeout
        self._credentials = Credentials(ks_adapter)
        self._retry = retry or RetryPolicy()
        self._wanted = Version.parse(microversion)
        self._needed = Version.parse(minimum_microversion or microversion)
        self._sleep = sleep
        self._http = httpx.AsyncClient(
            headers={"accept": "application/json"},
            timeout=timeout,
            transport=transport,
            event_hooks=event_hooks,
            verify=_tls(ks_adapter.session),
            limits=httpx.Limits(
                max_connections=max_connections, keepalive_expiry=KEEPALIVE_SECONDS
            ),
        )
        self._endpoint: str | None = None
        self._version: Version | None = None
        self._setup = asyncio.Lock()

    @classmethod
    def connect(
        cls,
        options: AuthOptions,
        environ: Mapping[str, str] | None = None,
        **client_options: Any,
    ) -> Self:
        """A client configured as ``options`` and the ``OS_*`` variables of ``environ``
        (the process environment by default) say; see ``auth.load_adapter``."""
        return cls(load_adapter(options, environ), **client_options)

    @classmethod
    def with_token(cls, api_url: str | None, token: str | None, **client_options: Any) -> Self:
        """A client sending a static token (noauth2, development) to a known URL."""
        return cls(from_static_token(api_url, token), **client_options)

    @property
    def microversion(self) -> Version:
        """The version settled with the server; the wanted one until then."""
        return self._version or self._wanted

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    async def get(self, path: str, params: Params = None) -> Any:
        return _json(await self.request("GET", path, params=params))

    async def put(self, path: str, json: Any = None) -> Any:
        return _json(await self.request("PUT", path, json=json))

    async def post(self, path: str, json: Any = None, microversion: Version | None = None) -> Any:
        return _json(await self.request("POST", path, json=json, microversion=microversion))

    async def delete(self, path: str) -> None:
        await self.request("DELETE", path)

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Params = None,
        json: Any = None,
        microversion: Version | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """The answer of a 2xx; any other answer raises its ``PlacementError`` subclass.
        ``microversion`` asks for an older version than the settled one for this request."""
        endpoint, version = await self._negotiated()
        if microversion is not None:
            version = min(version, microversion)
        sent = {**(headers or {}), "openstack-api-version": version.header}
        body = None
        if json is not None:
            # orjson: a scheduler's claim batch of 50 costs stdlib json about 0.7 ms.
            body = orjson.dumps(json, option=orjson.OPT_NON_STR_KEYS)
            sent["content-type"] = "application/json"
        send = (method, endpoint + path, path)
        response = await self._send(*send, headers=sent, params=params, content=body)
        refused = response.request.headers.get("x-auth-token")
        if response.status_code == 401 and await self._credentials.renew(refused):
            response = await self._send(*send, headers=sent, params=params, content=body)
        if response.is_error:
            raise error_from(response)
        return response

    async def ping(self) -> bool:
        """Whether the root document answers now (no retries: for health checks)."""
        try:
            endpoint = await self._resolved_endpoint()
            response = await self._http.get(endpoint + "/")
        except (PlacementError, TimeoutError, httpx.HTTPError):
            return False
        return response.status_code == 200

    async def _negotiated(self) -> tuple[str, Version]:
        if self._version is not None and self._endpoint is not None:
            return self._endpoint, self._version
        async with self._setup:
            endpoint = await self._resolved_endpoint()
            if self._version is None:
                self._version = await self._negotiate(endpoint)
            return endpoint, self._version

    async def _resolved_endpoint(self) -> str:
        if self._endpoint is None:
            self._endpoint = await self._credentials.endpoint()
        return self._endpoint

    async def _negotiate(self, endpoint: str) -> Version:
        response = await self._send("GET", endpoint + "/", "/", authenticated=False)
        if response.is_error:
            raise error_from(response)
        try:
            server = ServerVersions.from_root_document(response.json())
        except ValueError as error:
            raise MicroversionUnsupported("GET", "/", response.status_code, str(error)) from None
        chosen = negotiate(self._wanted, self._needed, server)
        if chosen is None:
            raise MicroversionUnsupported(
                "GET",
                "/",
                response.status_code,
                f"the server at {endpoint} speaks {server.minimum} to {server.maximum}; "
                f"this client needs {self._needed} or newer",
            )
        log.debug("Placement at %s: microversion %s", endpoint, chosen)
        return chosen

    async def _send(
        self,
        method: str,
        url: str,
        path: str,
        *,
        headers: dict[str, str] | None = None,
        authenticated: bool = True,
        **options: Any,
    ) -> httpx.Response:
        """One request, sent again after a connection failure or a 503 while the
        retry policy allows; the last answer or failure is the caller's."""
        started = time.monotonic()
        retry = 0
        while True:
            sent = dict(headers or {})
            if authenticated:
                sent |= await self._credentials.headers()
            try:
                response = await self._http.request(method, url, headers=sent, **options)
            except (TimeoutError, httpx.HTTPError) as error:
                # The whole URL: which Placement did not answer is the first question.
                failure = f"cannot reach Placement at {url}: {type(error).__name__}: {error}"
                if not (resendable(method, error) and self._may_retry(retry, started)):
                    raise PlacementUnavailable(method, path, None, failure) from error
            else:
                if response.status_code != UNAVAILABLE or not self._may_retry(retry, started):
                    return response
                failure = f"{url} answered {response.status_code} {response.text[:200]}"
            delay = self._retry.delay(retry)
            log.warning("%s %s: %s; trying again in %.2fs", method, path, failure, delay)
            await self._sleep(delay)
            retry += 1

    def _may_retry(self, retry: int, started: float) -> bool:
        return self._retry.allows(retry, time.monotonic() - started)


def _json(response: httpx.Response) -> Any:
    if response.status_code == 204 or not response.content:
        return None
    # orjson: a scheduler decodes a change feed answer for every batch of writes.
    return orjson.loads(response.content)


def _tls(ks_session: session.Session) -> ssl.SSLContext | bool:
    """httpx's TLS settings from the keystoneauth1 session's (CA file, client cert)."""
    verify, cert = ks_session.verify, ks_session.cert
    if verify is False:
        return False
    if verify is True and not cert:
        return True
    context = ssl.create_default_context(cafile=verify if isinstance(verify, str) else None)
    if cert:
        certfile, keyfile = (cert, None) if isinstance(cert, str) else cert
        context.load_cert_chain(certfile, keyfile)
    return context
