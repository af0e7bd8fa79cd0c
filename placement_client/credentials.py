"""Auth headers from a keystoneauth1 session, without blocking the event loop.

keystoneauth1 is synchronous: fetching a token or the catalog is a blocking
HTTP call to Keystone, so those run in a thread. The headers are kept while
the token is good for longer than keystoneauth1's own margin, so the hot
path (every Placement request) costs no thread hop and no Keystone call.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TypeVar

from keystoneauth1 import adapter, exceptions
from keystoneauth1.identity import base as identity

from placement_client.errors import AuthenticationFailed, PlacementUnavailable

log = logging.getLogger(__name__)
TOKEN_HEADER = "X-Auth-Token"
T = TypeVar("T")


class Credentials:
    def __init__(self, ks_adapter: adapter.Adapter) -> None:
        self._adapter = ks_adapter
        self._headers: dict[str, str] | None = None
        self._lock = asyncio.Lock()

    @property
    def _plugin(self) -> object:
        return self._adapter.auth or self._adapter.session.auth

    async def headers(self) -> dict[str, str]:
        cached = self._headers
        if cached is not None and self._fresh():
            return cached
        async with self._lock:
            if self._headers is None or not self._fresh():
                found = await _keystone(
                    lambda: self._adapter.session.get_auth_headers(self._adapter.auth),
                    "authenticate",
                )
                self._headers = dict(found or {})
            return self._headers

    async def endpoint(self) -> str:
        found = await _keystone(self._adapter.get_endpoint, "find the Placement endpoint")
        if not found:
            raise AuthenticationFailed(
                "GET", "catalog", None, "no Placement endpoint (service type placement) found"
            )
        return str(found).rstrip("/")

    async def renew(self, refused: str | None) -> bool:
        """Drop the token Placement refused; True when a new one may be fetched.
        Requests refused together renew it once: the first drops it, the others
        find it dropped or replaced already."""
        async with self._lock:
            if self._headers is None or self._headers.get(TOKEN_HEADER) != refused:
                return True
            self._headers = None
            renewable = bool(self._adapter.invalidate())
        if renewable:
            log.info("Placement refused the token; authenticating again")
        return renewable

    def _fresh(self) -> bool:
        plugin = self._plugin
        if not isinstance(plugin, identity.BaseIdentityPlugin):
            return True  # a static token, or none: nothing expires
        token = plugin.auth_ref
        return token is not None and not token.will_expire_soon(plugin.MIN_TOKEN_LIFE_SECONDS)


async def _keystone(call: Callable[[], T], what: str) -> T:
    try:
        return await asyncio.to_thread(call)
    except exceptions.ConnectionError as error:
        raise PlacementUnavailable("POST", "keystone", None, f"cannot {what}: {error}") from error
    except exceptions.ClientException as error:
        raise AuthenticationFailed("POST", "keystone", None, f"cannot {what}: {error}") from error
