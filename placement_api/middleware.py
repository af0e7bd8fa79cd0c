"""ASGI middleware: request ids and microversion negotiation for every request.

It runs before routing, so even a 404 or 405 carries the request id and the
negotiated ``OpenStack-API-Version``.
"""

from __future__ import annotations

import re
import uuid

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from placement_api import errors, microversion
from placement_api.rendering import error_response

REQUEST_ID_HEADER = "x-openstack-request-id"
_REQUEST_ID_RE = re.compile(r"^req-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def new_request_id() -> str:
    return f"req-{uuid.uuid4()}"


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
        try:
            version = microversion.negotiate(headers.get(microversion.HEADER))
        except errors.PlacementError as error:
            version = microversion.MIN_VERSION
            response = error_response(error, request_id, headers.get("accept"))
            await response(scope, receive, _with_headers(send, request_id, version))
            return
        state["microversion"] = version
        await self.app(scope, receive, _with_headers(send, request_id, version))


def _with_headers(send: Send, request_id: str, version: microversion.Version) -> Send:
    async def send_with_headers(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            headers[microversion.HEADER] = f"{microversion.SERVICE_TYPE} {version}"
            headers.add_vary_header(microversion.HEADER.lower())
            headers[REQUEST_ID_HEADER] = request_id
        await send(message)

    return send_with_headers
