"""The FastAPI application class, with the request path cut short."""

from __future__ import annotations

from fastapi import FastAPI
from starlette.types import ASGIApp

from placement_api.web.fastpath.dispatch import Dispatcher


class PlacementApp(FastAPI):
    """FastAPI with fewer layers around each request: the app's middleware
    around ``Dispatcher`` (routing, the exception handlers), without
    Starlette's outermost error middleware (``AccessMiddleware`` and
    ``PlacementRequestMiddleware`` answer every exception already), FastAPI's
    telemetry and body-limit wrappers (telemetry is off, no body limit is
    given: ``RequestLimitsMiddleware`` has this service's) and its file
    stack (no route takes files)."""

    # Off when start-up found what Dispatcher relies on changed (fence_fast_paths).
    fast_dispatch = True

    def build_middleware_stack(self) -> ASGIApp:
        if (
            not self.fast_dispatch
            or self.max_body_size is not None
            or not Dispatcher.serves(self.router)
        ):
            return super().build_middleware_stack()
        handlers = {
            key: handler
            for key, handler in self.exception_handlers.items()
            if key not in (500, Exception)
        }
        app: ASGIApp = Dispatcher(self.router, handlers)
        for cls, args, kwargs in reversed(self.user_middleware):
            app = cls(app, *args, **kwargs)
        return app
