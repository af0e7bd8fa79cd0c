"""uvicorn's HTTP protocol, with Placement-style errors for unparseable
requests, and limits on how slowly and how much a client may send.

A request the HTTP parser rejects never reaches the application, so uvicorn
answers it with a plain-text 400. Clients of this API expect the Placement
JSON error body on every 4xx, and a detail that says what was wrong.

uvicorn bounds neither the time a client takes to send its headers and body
nor (with httptools) the size of the headers: a client that connects and
sends nothing, half its headers, or less body than its Content-Length would
hold the connection, and its request, forever. Here the headers must arrive
within ``header_read_timeout`` and the body within ``body_read_timeout``,
else the client gets a 408 and the connection is closed (a request under way
is cancelled); headers past ``max_header_bytes`` get a 431.

An answer sent before the request's body was read (a 401, a 403) leaves the
rest of the body to come: it is read and dropped, up to ``max_body_bytes``,
and the connection then serves the client's next request; past that the
connection is closed, after a moment's draining so that the client, still
sending, is not reset before it reads the answer.

A client that stops reading its answer (its receive window full) holds at
most the transport's write buffer (64 KiB); after ``send_stall_timeout``
without progress the connection is dropped, and the request under way sees
its client gone (an event stream ends quietly).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from placement_api.serving.request_ids import new_request_id
from placement_api.settings import get_settings

_PARSER_DETAILS = {
    "content-length": "content-length header must be an integer",
}

# How long a connection closed with a body still arriving keeps reading it,
# so that the client sees the answer before the close.
LINGER_SECONDS = 2.0

_REASONS = {
    400: "Bad Request",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
}


def _detail(parser_message: str) -> str:
    lowered = parser_message.lower()
    for fragment, detail in _PARSER_DETAILS.items():
        if fragment in lowered:
            return detail
    return f"Invalid HTTP request: {parser_message}"


class _HeadersTooLarge(Exception):
    """Raised from a parser callback to stop parsing."""


class PlacementHttpProtocol(HttpToolsProtocol):
    """Mirrors ``HttpToolsProtocol.data_received``, keeping the parser's
    reason; times the reading of each request and sizes its headers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        settings = get_settings()
        self.header_read_timeout = settings.header_read_timeout
        self.body_read_timeout = settings.body_read_timeout
        self.max_header_bytes = settings.max_header_bytes
        self.max_drain_bytes = settings.max_body_bytes
        self.send_stall_timeout = settings.send_stall_timeout
        self._read_timer: asyncio.TimerHandle | None = None
        self._stall_timer: asyncio.TimerHandle | None = None
        # Between a request's headers and its body's end; the body bytes
        # dropped since its answer went out; closing once past the bound.
        self._in_body = False
        self._dropped = 0
        self._lingering = False
        # Between requests and while headers arrive: their bytes so far.
        self._reading_headers = True
        self._header_bytes = 0
        self._parsed_header_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.header_read_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._stop_stall_timer()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._stall_timer is None:
            self._stall_timer = self.loop.call_later(self.send_stall_timeout, self._stalled)

    def resume_writing(self) -> None:
        self._stop_stall_timer()
        super().resume_writing()

    def _stop_stall_timer(self) -> None:
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None

    def _stalled(self) -> None:
        self._stall_timer = None
        self.logger.info(
            "Client read nothing of its answer for %gs: connection dropped",
            self.send_stall_timeout,
        )
        self.transport.abort()

    def data_received(self, data: bytes) -> None:
        if self._lingering:
            return  # the rest of a body being drained before the close
        self._unset_keepalive_if_required()
        if self._in_body and self.cycle is not None and self.cycle.response_complete:
            self._dropped += len(data)
            if self._dropped > self.max_drain_bytes:
                self._linger()
                return
        if self._reading_headers:
            self._header_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            if isinstance(exc.__context__, _HeadersTooLarge):
                self._reject(431, self._headers_too_large())
                return
            self.logger.warning("Invalid HTTP request received: %s", exc)
            self._reject(400, _detail(str(exc)))
            return
        except httptools.HttpParserUpgrade:
            # This API serves no WebSockets; let uvicorn log and ignore it.
            self._unsupported_upgrade_warning()
        if self._reading_headers and self._header_bytes > self.max_header_bytes:
            self._reject(431, self._headers_too_large())

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading_headers = True
        self._parsed_header_bytes = 0
        if self._read_timer is None:
            self._arm(self.header_read_timeout)

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        self._count_header_bytes(len(url))

    def on_header(self, name: bytes, value: bytes) -> None:
        super().on_header(name, value)
        self._count_header_bytes(len(name) + len(value))

    def on_headers_complete(self) -> None:
        self._reading_headers = False
        self._in_body = True
        self._dropped = 0
        self._header_bytes = 0
        self._arm(self.body_read_timeout)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._disarm()
        self._in_body = False
        super().on_message_complete()

    def on_response_complete(self) -> None:
        # Answered before its body ended: what still comes is that body, not headers.
        self._reading_headers = not self._in_body
        super().on_response_complete()

    def _linger(self) -> None:
        """Close a connection whose answer went out while more body than we
        drain still comes: stop writing, drop what arrives a moment longer
        (closing on unread data would reset the connection), then close."""
        self._lingering = True
        self._disarm()
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(LINGER_SECONDS, self.transport.close)

    def _count_header_bytes(self, count: int) -> None:
        # data_received counts what arrives before the headers end; this
        # catches headers that arrived whole, with more, in one read.
        self._parsed_header_bytes += count
        if self._parsed_header_bytes > self.max_header_bytes:
            raise _HeadersTooLarge

    def _headers_too_large(self) -> str:
        return f"The request line and headers are larger than {self.max_header_bytes} bytes."

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._read_timer = self.loop.call_later(seconds, self._read_timed_out)

    def _disarm(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _read_timed_out(self) -> None:
        self._read_timer = None
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if self._reading_headers:
            if self._header_bytes == 0:
                # Nothing sent since the connection opened: no request to answer.
                self.transport.close()
                return
            detail = f"The request headers did not arrive within {self.header_read_timeout:g}s."
        elif cycle is not None and not cycle.response_started:
            detail = f"The request body did not arrive within {self.body_read_timeout:g}s."
        else:
            self.transport.close()
            return
        self.logger.warning("Slow client cut off: %s", detail)
        self._reject(408, detail)

    def _reject(self, status: int, detail: str) -> None:
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            # The request under way sees its client gone (and is cancelled);
            # nothing it sends from now on is written.
            cycle.disconnected = True
            cycle.message_event.set()
        request_id = new_request_id()
        body = json.dumps(
            {
                "errors": [
                    {
                        "status": status,
                        "title": _REASONS[status],
                        "detail": detail,
                        "code": "placement.undefined_code",
                        "request_id": request_id,
                    }
                ]
            }
        ).encode()
        head = (
            f"HTTP/1.1 {status} {_REASONS[status]}\r\n"
            "content-type: application/json\r\n"
            f"content-length: {len(body)}\r\n"
            f"x-openstack-request-id: {request_id}\r\n"
            "connection: close\r\n\r\n"
        )
        self.transport.write(head.encode("ascii") + body)
        self.transport.close()
