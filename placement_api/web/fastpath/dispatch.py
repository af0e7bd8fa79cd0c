"""The innermost ASGI layer: finds a request's route by the shape of its
path, calls it, and turns the exceptions the app has handlers for into
their answers.

It stands in for three of Starlette's and FastAPI's layers, with their
behaviour: the router (which tries every route's pattern in turn, 43 of
them, each through two ``matches`` calls), the exception middleware and the
route's own ASGI wrapping (a second exception wrapper and two
``AsyncExitStack``s that only FastAPI's dependency solving uses), for an
app whose every route is a ``PlacementRoute`` with a planned handler
(``serves``; the app keeps FastAPI's layers otherwise). Routes are grouped
by the number of ``/`` in their path and its first segment; within a group
they are tried in the app's order, so the first route whose pattern matches
wins as before, a path that matches only with another method is a 405
naming that route, and no match is a 404. Anything but HTTP (the lifespan)
goes to the router.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from starlette.convertors import StringConvertor
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Router
from starlette.types import Message, Receive, Scope, Send

from placement_api.web.fastpath.lean_route import PlacementRoute

# The key of a path's group: the number of "/" in it and its first segment.
ShapeKey = tuple[int, str]
# The app's exception handlers: all of them take the request.
Handler = Callable[[Request, Exception], Awaitable[Response]]


def shape_key(path: str) -> ShapeKey:
    return path.count("/"), path.split("/", 2)[1] if path.startswith("/") else ""


def route_path(scope: Scope) -> str:
    """The path the routes see: the request's, less the app's root path (as Starlette's)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    if not root or not path.startswith(root):
        return path
    if path == root:
        return ""
    return path[len(root) :] if path[len(root)] == "/" else path


def _fixed_first_segment(path: str) -> bool:
    return path.startswith("/") and "{" not in path.split("/", 2)[1]


def _lean(route: Any) -> bool:
    return (
        isinstance(route, PlacementRoute)
        and route.lean_handler is not None
        and _fixed_first_segment(route.path)
        and all(isinstance(each, StringConvertor) for each in route.param_convertors.values())
    )


class Dispatcher:
    def __init__(self, router: Router, handlers: Mapping[Any, Any]) -> None:
        assert self.serves(router)
        self.router = router
        self._status_handlers: dict[int, Handler] = {
            key: each for key, each in handlers.items() if isinstance(key, int)
        }
        self._class_handlers: dict[type, Handler] = {
            key: each for key, each in handlers.items() if isinstance(key, type)
        }
        self._groups: dict[ShapeKey, list[PlacementRoute]] = {}
        for route in router.routes:
            assert isinstance(route, PlacementRoute)
            self._groups.setdefault(shape_key(route.path), []).append(route)

    @staticmethod
    def serves(router: Router) -> bool:
        """Every route of ``router`` has a planned handler and a path of fixed
        first segment with string parameters: what this layer can route."""
        return all(_lean(route) for route in router.routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.router(scope, receive, send)
            return
        scope.setdefault("router", self.router)
        try:
            response = await self._respond(scope, receive, send)
        except Exception as exc:
            response = await self._handled(scope, receive, send, exc)
        if isinstance(response, StreamingResponse):
            await self._stream(response, scope, receive, send)
        else:
            await response(scope, receive, send)

    def match(self, path: str, method: str) -> tuple[PlacementRoute, dict[str, str], bool] | None:
        """The route for ``path`` and its parameters, and whether it takes
        ``method``: the first route that does, else the first that matches
        with another method; None when no route's pattern matches."""
        partial: tuple[PlacementRoute, dict[str, str], bool] | None = None
        for route in self._groups.get(shape_key(path), ()):
            found = route.path_regex.match(path)
            if found is None:
                continue
            if not route.methods or method in route.methods:
                return route, found.groupdict(), True
            if partial is None:
                partial = (route, found.groupdict(), False)
        return partial

    async def _respond(self, scope: Scope, receive: Receive, send: Send) -> Response:
        """The matched route's answer; a 404 or 405 is raised as the router does."""
        matched = self.match(route_path(scope), scope["method"])
        if matched is None:
            raise HTTPException(status_code=404)
        route, params, allowed = matched
        scope["endpoint"] = route.endpoint
        scope["path_params"] = params
        scope["route"] = route
        if not allowed:
            raise HTTPException(status_code=405, headers={"Allow": ", ".join(route.methods or ())})
        handler = route.lean_handler
        assert handler is not None
        return await handler(Request(scope, receive, send))

    def _handler_for(self, exc: Exception) -> Handler | None:
        """The app's handler of ``exc``: by status, then by class (nearest first)."""
        if isinstance(exc, HTTPException) and exc.status_code in self._status_handlers:
            return self._status_handlers[exc.status_code]
        for cls in type(exc).__mro__:
            if cls in self._class_handlers:
                return self._class_handlers[cls]
        return None

    async def _handled(
        self, scope: Scope, receive: Receive, send: Send, exc: Exception
    ) -> Response:
        handler = self._handler_for(exc)
        if handler is None:
            raise exc
        response = await handler(Request(scope, receive, send), exc)
        # A reused exception instance would keep every request's traceback.
        exc.__traceback__ = None
        return response

    async def _stream(self, response: Response, scope: Scope, receive: Receive, send: Send) -> None:
        """A streamed answer may fail half way: an exception the app handles is
        answered if nothing was sent yet, as Starlette's exception wrapper does."""
        started = False

        async def sender(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await response(scope, receive, sender)
        except Exception as exc:
            if not started:
                await (await self._handled(scope, receive, send, exc))(scope, receive, send)
                return
            if self._handler_for(exc) is not None:
                message = "Caught handled exception, but response already started."
                raise RuntimeError(message) from exc
            raise
