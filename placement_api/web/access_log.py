"""One access log line and the request metrics for every request, and the
single place an unexpected exception is logged and turned into a 500.

The middleware sits outside request-id and microversion handling, so every
answer (a refused microversion too) is counted; it reads what the inner
layers put in the scope afterwards: the request id, the matched route
(FastAPI stores it as ``scope["route"]``) and the caller's context.
Catching the exception here, rather than in an exception handler, keeps
Starlette's outermost middleware from logging its traceback a second time.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from placement_api import errors
from placement_api.observability import metrics
from placement_api.web.rendering import error_response

ACCESS_LOG = logging.getLogger("placement_api.access")
LOG = logging.getLogger("placement_api.errors")

UNMATCHED_ROUTE = "<unmatched>"


def route_template(scope: Scope) -> str:
    """The path template the request matched (``/resource_providers/{uuid}``),
    never the raw path: one label value per route, not per provider."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else UNMATCHED_ROUTE


class AccessMiddleware:
    def __init__(self, app: ASGIApp, *, access_log: bool = True) -> None:
        self.app = app
        self.access_log = access_log
        # Each (method, route, status)'s series of the two request metrics, looked
        # up once: labels() costs more than the observation. No more of them
        # than the metrics themselves hold.
        self._series: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        response_started = False
        recorded = False

        def finish() -> None:
            nonlocal recorded
            if not recorded:
                recorded = True
                metrics.IN_FLIGHT.dec()
                self._record(scope, status, time.perf_counter() - started)

        async def observing_send(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                status = message["status"]
                response_started = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                # Recorded before the last bytes leave: a client holding its
                # answer finds it in the next scrape, whichever worker answers.
                finish()
            await send(message)

        metrics.IN_FLIGHT.inc()
        try:
            await self.app(scope, receive, observing_send)
        except Exception as exc:
            LOG.error(
                "unexpected error handling %s %s (request %s)",
                scope["method"],
                scope["path"],
                _request_id(scope),
                exc_info=exc,
                extra={"request_id": _request_id(scope)},
            )
            if not response_started:
                await _internal_error(scope, receive, send)
        finally:
            finish()

    def _record(self, scope: Scope, status: int, seconds: float) -> None:
        route = route_template(scope)
        method = scope["method"]
        series = self._series.get((method, route, status))
        if series is None:
            series = self._series[method, route, status] = (
                metrics.REQUESTS.labels(method, route, str(status)),
                metrics.REQUEST_SECONDS.labels(method, route),
            )
        count, duration = series
        count.inc()
        duration.observe(seconds)
        # The line's fields are gathered only for a logger that writes it.
        if not self.access_log or not ACCESS_LOG.isEnabledFor(logging.INFO):
            return
        state: dict[str, Any] = scope.get("state", {})
        context = state.get("context")
        fields = {
            "request_id": _request_id(scope),
            "method": method,
            "route": route,
            "path": scope["path"],
            "status": status,
            "duration_ms": round(seconds * 1000, 2),
            "user_id": getattr(context, "user_id", None),
            "project_id": getattr(context, "project_id", None),
            "remote": _remote(scope),
        }
        ACCESS_LOG.info(
            "%(request_id)s %(method)s %(path)s (%(route)s) %(status)s %(duration_ms).2fms "
            "user=%(user_id)s project=%(project_id)s remote=%(remote)s",
            fields,
            extra=fields,
        )


def _request_id(scope: Scope) -> str:
    state: dict[str, Any] = scope.get("state", {})
    return str(state.get("request_id", ""))


def _remote(scope: Scope) -> str | None:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else None


async def _internal_error(scope: Scope, receive: Receive, send: Send) -> None:
    request_id = _request_id(scope)
    accept = dict(scope.get("headers") or []).get(b"accept", b"").decode("latin-1") or None
    response = error_response(
        errors.PlacementError("An unexpected error occurred."), request_id, accept
    )
    response.headers["x-openstack-request-id"] = request_id
    await response(scope, receive, send)
