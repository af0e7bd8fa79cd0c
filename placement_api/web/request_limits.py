"""ASGI middleware bounding what one request may cost, and answering for the
database when it cannot.

- A query string or a declared body past its limit is refused before the
  application runs (414, 413); a chunked body is counted as it arrives and
  refused (413) once past the limit, without reading further.
- Each request runs under a deadline; past it, it is cancelled (its
  transaction rolled back) and answered with a 503.
- The body is read, and then the connection watched, by a task of its own:
  when the client goes away, the request is cancelled at once, so its
  database work stops and is rolled back rather than finishing for no one.
- An error that says the database is down or too slow is a 503 with
  ``Retry-After``, whichever layer raised it.

Every refusal of an unread body closes the connection (``Connection:
close``): what the client still sends is never read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from placement_api import errors
from placement_api.db.outage import UNAVAILABLE_DETAIL, is_unavailable
from placement_api.settings import Settings
from placement_api.web.rendering import error_response

LOG = logging.getLogger(__name__)
CLOSE = {"Connection": "close"}


def body_too_large(limit: int) -> errors.PayloadTooLarge:
    return errors.PayloadTooLarge(
        f"The request body is larger than {limit} bytes, the most this service accepts.",
        headers=CLOSE,
    )


@dataclass
class _Exchange:
    """One request's body and connection, read by the pump task; the
    application reads the body from it."""

    receive_raw: Receive
    limit: int
    app_task: asyncio.Task[None] | None = None
    pending: list[Message] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    received: int = 0
    too_large: bool = False
    disconnected: bool = False
    response_started: bool = False
    response_complete: bool = False
    # Set once the middleware answers instead: the application's late sends are dropped.
    silenced: bool = False

    async def pump(self) -> None:
        while True:
            message = await self.receive_raw()
            if message["type"] == "http.disconnect":
                self.disconnected = True
                self.arrived.set()
                if not self.response_complete and self.app_task is not None:
                    self.app_task.cancel()
                return
            self.received += len(message.get("body", b""))
            if self.received > self.limit:
                # Stop reading: the transport pauses, nothing more is buffered.
                self.too_large = True
                self.arrived.set()
                return
            self.pending.append(message)
            self.arrived.set()

    async def receive(self) -> Message:
        while not self.pending:
            if self.too_large:
                raise body_too_large(self.limit)
            if self.disconnected:
                return {"type": "http.disconnect"}
            self.arrived.clear()
            await self.arrived.wait()
        return self.pending.pop(0)

    def watch(self, send: Send) -> Send:
        async def send_watched(message: Message) -> None:
            if self.silenced:
                return
            if message["type"] == "http.response.start":
                self.response_started = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                self.response_complete = True
            await send(message)

        return send_watched


class RequestLimitsMiddleware:
    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            await self._respond(scope, send, refusal)
            return
        exchange = _Exchange(receive, self.settings.max_body_bytes)
        # When the deadline cuts the request: a wait may end in time to answer.
        deadline = asyncio.get_running_loop().time() + self.settings.request_timeout
        scope.setdefault("state", {})["deadline"] = deadline
        app_task = asyncio.ensure_future(self.app(scope, exchange.receive, exchange.watch(send)))
        exchange.app_task = app_task
        pump = asyncio.ensure_future(exchange.pump())
        try:
            await self._answer(scope, exchange, app_task, send)
        finally:
            pump.cancel()
            if not app_task.done():
                app_task.cancel()
            # A cancelled request's rollback may wait for the database (a
            # frozen server, SQLite's busy wait); its answer is sent already.
            with contextlib.suppress(BaseException):
                await app_task

    async def _answer(
        self, scope: Scope, exchange: _Exchange, app_task: asyncio.Task[None], send: Send
    ) -> None:
        """Wait for the application within the deadline; answer for it when
        it ran out of time or found the database unavailable."""
        if not await _finished_within(app_task, self.settings.request_timeout):
            app_task.cancel()
            exchange.silenced = True
            if not exchange.response_started:
                detail = (
                    f"The request did not finish within {self.settings.request_timeout:g}s "
                    "and was cancelled; retry later."
                )
                await self._respond(scope, send, self._unavailable(detail))
            return
        try:
            app_task.result()
        except asyncio.CancelledError:
            return  # its client went away: nobody is left to answer
        except Exception as exc:
            if exchange.response_started or not is_unavailable(exc):
                raise
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            LOG.warning("database unavailable: %s %s: %s", scope["method"], scope["path"], reason)
            await self._respond(scope, send, self._unavailable(UNAVAILABLE_DETAIL))

    def _refusal(self, scope: Scope) -> errors.PlacementError | None:
        query: bytes = scope.get("query_string", b"")
        if len(query) > self.settings.max_query_length:
            return errors.UriTooLong(
                f"The query string is {len(query)} bytes long; at most "
                f"{self.settings.max_query_length} are accepted.",
            )
        declared = Headers(scope=scope).get("content-length")
        limit = self.settings.max_body_bytes
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return body_too_large(limit)
        return None

    def _unavailable(self, detail: str) -> errors.ServiceUnavailable:
        return errors.ServiceUnavailable(
            detail, headers={"Retry-After": str(self.settings.retry_after)}
        )

    @staticmethod
    async def _respond(scope: Scope, send: Send, error: errors.PlacementError) -> None:
        state = scope.get("state", {})
        accept = Headers(scope=scope).get("accept")
        response = error_response(error, state.get("request_id", ""), accept)

        async def nothing() -> Message:
            return {"type": "http.disconnect"}

        await response(scope, nothing, send)


async def _finished_within(task: asyncio.Task[None], seconds: float) -> bool:
    """Whether ``task`` finished within ``seconds``: ``asyncio.wait``
    for one task, without its sets and bookkeeping."""
    if task.done():
        return True
    loop = asyncio.get_running_loop()
    waiter: asyncio.Future[None] = loop.create_future()

    def wake(_: object) -> None:
        if not waiter.done():
            waiter.set_result(None)

    task.add_done_callback(wake)
    timer = loop.call_later(seconds, wake, None)
    try:
        await waiter
    finally:
        timer.cancel()
        task.remove_done_callback(wake)
    return task.done()
