"""uvicorn's HTTP protocol, with Placement-style errors for unparseable requests.

A request the HTTP parser rejects never reaches the application, so uvicorn
answers it with a plain-text 400. Clients of this API expect the Placement
JSON error body on every 4xx, and a detail that says what was wrong.
"""

from __future__ import annotations

import json

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from placement_api.middleware import new_request_id

_PARSER_DETAILS = {
    "content-length": "content-length header must be an integer",
}


def _detail(parser_message: str) -> str:
    lowered = parser_message.lower()
    for fragment, detail in _PARSER_DETAILS.items():
        if fragment in lowered:
            return detail
    return f"Invalid HTTP request: {parser_message}"


class PlacementHttpProtocol(HttpToolsProtocol):
    """Mirrors ``HttpToolsProtocol.data_received``, keeping the parser's reason."""

    def data_received(self, data: bytes) -> None:
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.logger.warning("Invalid HTTP request received: %s", exc)
            self._reject(str(exc))
        except httptools.HttpParserUpgrade:
            # This API serves no WebSockets; let uvicorn log and ignore it.
            self._unsupported_upgrade_warning()

    def _reject(self, parser_message: str) -> None:
        request_id = new_request_id()
        body = json.dumps(
            {
                "errors": [
                    {
                        "status": 400,
                        "title": "Bad Request",
                        "detail": _detail(parser_message),
                        "code": "placement.undefined_code",
                        "request_id": request_id,
                    }
                ]
            }
        ).encode()
        head = (
            "HTTP/1.1 400 Bad Request\r\n"
            "content-type: application/json\r\n"
            f"content-length: {len(body)}\r\n"
            f"x-openstack-request-id: {request_id}\r\n"
            "connection: close\r\n\r\n"
        )
        self.transport.write(head.encode("ascii") + body)
        self.transport.close()
