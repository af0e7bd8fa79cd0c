"""The one place errors become Placement's error body: every PlacementError,
and the framework's own 404, 405 and validation errors."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from placement_api import errors
from placement_api.observability import metrics
from placement_api.web.rendering import error_response
from placement_api.web.routers import ROUTERS


def _allowed_methods(path: str) -> list[str]:
    methods: set[str] = set()
    for router in ROUTERS:
        for route in router.routes:
            if isinstance(route, APIRoute) and route.path_regex.match(path):
                methods |= route.methods or set()
    return sorted(methods)


def install_error_handlers(app: FastAPI) -> None:
    def render(request: Request, error: errors.PlacementError) -> Response:
        request_id = getattr(request.state, "request_id", "")
        return error_response(error, request_id, request.headers.get("accept"))

    @app.exception_handler(errors.PlacementError)
    async def placement_error(request: Request, exc: errors.PlacementError) -> Response:
        if exc.status == 409:
            metrics.CONFLICTS.labels(exc.code, str(exc.extra.get("conflict", ""))).inc()
        return render(request, exc)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 405:
            allowed = _allowed_methods(request.url.path)
            return render(
                request,
                errors.MethodNotAllowed(
                    f"The method {request.method} is not allowed for this resource.",
                    headers={"Allow": ", ".join(allowed)},
                ),
            )
        if exc.status_code == 404:
            return render(request, errors.NotFound("The resource could not be found."))
        return render(request, errors.PlacementError(str(exc.detail), status=exc.status_code))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        return render(request, errors.BadRequest(f"Invalid request: {exc.errors()[0]['msg']}"))
