"""Read-your-writes across a standby: the ``X-Placement-Read-After`` header.

A successful write answers with the header: with a standby to read from
(``database_read_url``), the primary's WAL position once it committed;
without one, ``primary``. A request that sends it back is answered from
data at least that fresh (``db.replica``). The value lives for one request
in ``CURRENT``, which ``web.deps.Database`` reads and fills.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER = "X-Placement-Read-After"


@dataclass
class ReadAfter:
    """One request's position: the one it asked for, the one its write reached."""

    wanted: str | None
    written: str | None = None


CURRENT: ContextVar[ReadAfter | None] = ContextVar("placement_read_after", default=None)


class ReadAfterMiddleware:
    """Innermost: the handler runs in this middleware's context, so what it
    sets in ``CURRENT`` is seen here when the answer starts."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = ReadAfter(Headers(scope=scope).get(HEADER))
        token = CURRENT.set(state)

        async def send_with_position(message: Message) -> None:
            if message["type"] == "http.response.start" and state.written is not None:
                MutableHeaders(scope=message).append(HEADER, state.written)
            await send(message)

        try:
            await self.app(scope, receive, send_with_position)
        finally:
            CURRENT.reset(token)
