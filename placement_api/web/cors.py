"""CORS as oslo.middleware answers it, on Starlette's middleware."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response


class PlacementCORSMiddleware(CORSMiddleware):
    """CORS as oslo.middleware does it: a refused preflight is a plain 200
    with no CORS headers (not a 400), and an accepted one echoes only the
    headers the client asked for."""

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code == 400:
            return Response(status_code=200)
        requested = request_headers.get("access-control-request-headers")
        if requested:
            response.headers["access-control-allow-headers"] = requested
        else:
            del response.headers["access-control-allow-headers"]
        return response
