"""The dashboard's HTTP side: the page, two JSON views of the snapshot, an event stream.

- ``GET /``: the page (static HTML, CSS and JS from ``static/``, no build step);
- ``GET /api/summary``: totals, zones, aggregates, down and over-capacity
  hosts, recent changes;
- ``GET /api/hosts?q=&only=all|over|down&order=name|usage|free&page=&per_page=``:
  one page of hosts;
- ``GET /api/events``: server-sent events, ``event: snapshot`` with the new
  version each time the snapshot changes; the page then re-reads the two views.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from pathlib import Path
from typing import Any, get_args

import orjson
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from placement_api.dashboard.hosts import HostCheck
from placement_api.dashboard.live import LiveSnapshot
from placement_api.dashboard.snapshot import HostFilter, HostOrder, host_page

STATIC = Path(__file__).parent / "static"
KEEP_ALIVE_SECONDS = 15.0
MAX_PER_PAGE = 200
# The page loads nothing from elsewhere and runs no inline script.
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'self'; img-src 'self' data:",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}


class BadQuery(ValueError):
    """A query parameter the views do not take; answered 400."""


def create_dashboard_app(
    live: LiveSnapshot,
    on_close: Callable[[], Awaitable[None]] | None = None,
    *,
    allowed_hosts: Collection[str],
) -> Starlette:
    """The ASGI app; its lifespan runs ``live``'s loops and then ``on_close``. It
    answers only requests whose ``Host`` names one of ``allowed_hosts``."""

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        task = asyncio.create_task(live.run())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            if on_close is not None:
                await on_close()

    async def index(_request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers=SECURITY_HEADERS)

    async def summary(_request: Request) -> Response:
        snapshot = live.snapshot
        body = {
            "version": snapshot.version,
            "read_at": snapshot.read_at,
            "feed_index": snapshot.feed_index,
            "error": snapshot.error,
            "flavors": list(snapshot.flavors),
            **snapshot.summary,
        }
        return _json(body)

    async def hosts(request: Request) -> Response:
        try:
            options = _host_query(request.query_params)
        except BadQuery as error:
            return _json({"error": str(error)}, status=400)
        return _json(host_page(live.snapshot, **options))

    async def events(request: Request) -> Response:
        async def stream() -> AsyncIterator[bytes]:
            yield b"retry: 2000\n\n"
            version = -1
            while not (live.closing or await request.is_disconnected()):
                if await live.wait_newer(version, KEEP_ALIVE_SECONDS) and not live.closing:
                    version = live.snapshot.version
                    yield b"event: snapshot\ndata: " + orjson.dumps({"version": version}) + b"\n\n"
                else:
                    yield b": keep-alive\n\n"

        headers = {"cache-control": "no-cache", "x-accel-buffering": "no"}
        return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)

    return Starlette(
        routes=[
            Route("/", index),
            Route("/api/summary", summary),
            Route("/api/hosts", hosts),
            Route("/api/events", events),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        lifespan=lifespan,
        middleware=[Middleware(HostCheck, allowed=allowed_hosts)],
    )


def _host_query(params: Any) -> dict[str, Any]:
    allowed = {"q", "only", "order", "page", "per_page"}
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise BadQuery(f"unknown parameter {unknown[0]!r}; known: {', '.join(sorted(allowed))}")
    only = params.get("only", "all")
    order = params.get("order", "name")
    if only not in get_args(HostFilter):
        raise BadQuery(f"only={only!r}: one of {', '.join(get_args(HostFilter))}")
    if order not in get_args(HostOrder):
        raise BadQuery(f"order={order!r}: one of {', '.join(get_args(HostOrder))}")
    return {
        "query": params.get("q", "")[:200],
        "only": only,
        "order": order,
        "page": _integer(params, "page", 1, 1_000_000),
        "per_page": _integer(params, "per_page", 50, MAX_PER_PAGE),
    }


def _integer(params: Any, name: str, default: int, highest: int) -> int:
    text = params.get(name)
    if text is None:
        return default
    if not (text.isdigit() and len(text) <= 9 and 1 <= int(text) <= highest):
        raise BadQuery(f"{name}={text!r}: a whole number from 1 to {highest}")
    return int(text)


def _json(body: Any, status: int = 200) -> Response:
    return Response(
        orjson.dumps(body),
        status_code=status,
        media_type="application/json",
        headers={"cache-control": "no-store", **SECURITY_HEADERS},
    )
