"""ASGI middleware: request ids, microversion negotiation and the edge checks
of every request, and the one place an unexpected error becomes a 500.

It runs before routing, so even a 404 or 405 carries the request id and the
negotiated ``OpenStack-API-Version``.
"""

from __future__ import annotations

import logging
import re

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from placement_api import errors, microversion
from placement_api.serving.request_ids import new_request_id
from placement_api.web.input_checks import check_path_and_query
from placement_api.web.rendering import error_response

LOG = logging.getLogger(__name__)

REQUEST_ID_HEADER = "x-openstack-request-id"
_REQUEST_ID_RE = re.compile(r"^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


class PlacementRequestMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        incoming = headers.get(REQUEST_ID_HEADER, "")
        request_id = incoming if _REQUEST_ID_RE.match(incoming) else new_request_id()
        state = scope.setdefault("state", {})
        state["request_id"] = request_id
        version = microversion.MIN_VERSION
        try:
            version = microversion.negotiate(headers.get(microversion.HEADER))
            check_path_and_query(scope["path"], scope.get("query_string", b""))
        except errors.PlacementError as error:
            response = error_response(error, request_id, headers.get("accept"))
            await response(scope, receive, _Stamping(send, request_id, version))
            return
        state["microversion"] = version
        await self._call_app(scope, receive, _Stamping(send, request_id, version))

    async def _call_app(self, scope: Scope, receive: Receive, send: _Stamping) -> None:
        """Run the app; an exception it lets out becomes a Placement 500, logged once.

        Handled here rather than re-raised (as Starlette's outermost handler
        does), so the server sees a finished response and keeps the
        connection open for the client's next request.
        """
        try:
            await self.app(scope, receive, send)
        except Exception:
            if send.started:
                # Half a response is out: only closing the connection can end it.
                raise
            request_id = scope["state"]["request_id"]
            LOG.exception(
                "unexpected error handling %s %s (request %s)",
                scope["method"],
                scope["path"],
                request_id,
                extra={"request_id": request_id},
            )
            error = errors.PlacementError("An unexpected error occurred.")
            accept = Headers(scope=scope).get("accept")
            await error_response(error, request_id, accept)(scope, receive, send)


_VERSION_KEY = microversion.HEADER.lower().encode("latin-1")
_REQUEST_ID_KEY = REQUEST_ID_HEADER.encode("latin-1")
_STAMPED_KEYS = frozenset((_VERSION_KEY, _REQUEST_ID_KEY, b"vary"))


class _Stamping:
    """The server's send, adding the negotiated microversion and the request
    id to the start of the answer; it notes whether the answer has started."""

    __slots__ = ("_request_id", "_send", "_version", "started")

    def __init__(self, send: Send, request_id: str, version: microversion.Version) -> None:
        self._send = send
        self._request_id = request_id
        self._version = version
        self.started = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
            self._stamp(message)
        await self._send(message)

    def _stamp(self, message: Message) -> None:
        version = f"{microversion.SERVICE_TYPE} {self._version}"
        raw: list[tuple[bytes, bytes]] = list(message["headers"])
        if any(key in _STAMPED_KEYS for key, _ in raw):
            # Headers of these names already: replaced, or joined (Vary).
            headers = MutableHeaders(scope=message)
            headers[microversion.HEADER] = version
            headers.add_vary_header(microversion.HEADER.lower())
            headers[REQUEST_ID_HEADER] = self._request_id
            return
        # As the lines above would add them, in that order, without a search per header.
        raw.append((_VERSION_KEY, version.encode("latin-1")))
        raw.append((b"vary", _VERSION_KEY))
        raw.append((_REQUEST_ID_KEY, self._request_id.encode("latin-1")))
        message["headers"] = raw
