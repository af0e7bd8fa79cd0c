"""Placement's answers as typed exceptions: branch on the class, never on the text.

The class comes from the error body's stable ``code`` when Placement gives
one, else from the HTTP status, as upstream's clients (Nova's report client)
do.
"""

from __future__ import annotations

import logging

import httpx

log = logging.getLogger(__name__)

CONCURRENT_UPDATE = "placement.concurrent_update"
INVENTORY_IN_USE = "placement.inventory.inuse"
DUPLICATE_NAME = "placement.duplicate_name"
# This service's extension: a claim naming a server group would break its rule.
SERVER_GROUP_VIOLATION = "placement.server_group.violation"


class PlacementError(Exception):
    """Placement answered with an error, or could not be reached (``status`` None)."""

    def __init__(
        self,
        method: str,
        path: str,
        status: int | None,
        detail: str,
        code: str = "",
        request_id: str | None = None,
    ) -> None:
        super().__init__(f"{method} {path} -> {status or 'no answer'}: {detail}")
        self.method = method
        self.path = path
        self.status = status
        self.detail = detail
        self.code = code
        self.request_id = request_id


class PlacementUnavailable(PlacementError):
    """No answer, or a 5xx, after the retries the policy allows."""


class AuthenticationFailed(PlacementError):
    """Keystone refused the credentials, or gave no Placement endpoint."""


class MicroversionUnsupported(PlacementError):
    """The server is older (or newer) than every microversion this client speaks."""


class BadRequest(PlacementError):
    """400: the request is malformed or names something that does not exist."""


class Unauthorized(PlacementError):
    """401 even after a fresh token."""


class Forbidden(PlacementError):
    """403: policy refuses this token the action."""


class NotFound(PlacementError):
    """404."""


class Conflict(PlacementError):
    """409 without a more precise code (a provider uuid already used, a claim that
    does not fit)."""


class ConcurrentUpdate(Conflict):
    """The provider or consumer generation moved: someone else wrote first."""


class InventoryInUse(Conflict):
    """Allocations hold a class the inventory write would remove."""


class DuplicateName(Conflict):
    """A provider with this name already exists."""


_BY_CODE: dict[str, type[PlacementError]] = {
    CONCURRENT_UPDATE: ConcurrentUpdate,
    INVENTORY_IN_USE: InventoryInUse,
    DUPLICATE_NAME: DuplicateName,
}
_BY_STATUS: dict[int, type[PlacementError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
}


def error_from(response: httpx.Response) -> PlacementError:
    """The typed exception for an error response, with the body's detail and code."""
    request = response.request
    detail, code = error_detail(response)
    request_id = response.headers.get("openstack-request-id")
    status = response.status_code
    kind = _BY_CODE.get(code) or _BY_STATUS.get(status)
    if kind is None:
        kind = PlacementUnavailable if status >= 500 else PlacementError
    return kind(request.method, request.url.path, status, detail, code, request_id)


def error_detail(response: httpx.Response) -> tuple[str, str]:
    """The detail and code of a Placement error body, or the raw text and no code."""
    try:
        first = response.json()["errors"][0]
        return str(first.get("detail", "")), str(first.get("code") or "")
    except (ValueError, KeyError, IndexError, TypeError):
        log.debug("error response without a Placement error body: %s", response.text[:500])
        return response.text[:500], ""
