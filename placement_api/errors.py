"""Placement errors: a status, a stable machine-readable code and a detail.

Domain code raises these; one exception handler (``placement_api.app``)
renders every one of them as the Placement error body, so no handler
repeats the mapping.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

# The stable codes clients branch on (wire-compatible with OpenStack Placement).
UNDEFINED = "placement.undefined_code"
CONCURRENT_UPDATE = "placement.concurrent_update"
DUPLICATE_NAME = "placement.duplicate_name"
INVENTORY_INUSE = "placement.inventory.inuse"
PROVIDER_INUSE = "placement.resource_provider.inuse"
PROVIDER_CANNOT_DELETE_PARENT = "placement.resource_provider.cannot_delete_parent"
PROVIDER_NOT_FOUND = "placement.resource_provider.not_found"
QUERY_DUPLICATE_KEY = "placement.query.duplicate_key"
QUERY_BAD_VALUE = "placement.query.bad_value"
QUERY_MISSING_VALUE = "placement.query.missing_value"
# Ours (upstream has none): the identity service could not validate a token.
AUTH_SERVICE_UNAVAILABLE = "placement.auth.service_unavailable"
# An extension of this service: GET /changes?since=N asked for pruned changes.
CHANGES_GONE = "placement.changes.gone"
# An extension of this service: a claim naming a server group would break its rule.
SERVER_GROUP_VIOLATION = "placement.server_group.violation"

# How much of a client's value an error detail quotes.
_ECHO_LIMIT = 80


def shortened(text: str) -> str:
    """A client's value as an error detail quotes it: at most _ECHO_LIMIT characters."""
    return text if len(text) <= _ECHO_LIMIT else f"{text[:_ECHO_LIMIT]}... ({len(text)} characters)"


# Which kind of 409 a ``placement.concurrent_update`` is. Carried as the
# extra ``conflict`` key of the error object so clients need not match text.
CONFLICT_PROVIDER_GENERATION = "provider_generation"
CONFLICT_CONSUMER_GENERATION = "consumer_generation"
CONFLICT_CAPACITY = "capacity"
CONFLICT_SERVER_GROUP = "server_group"


class PlacementError(Exception):
    """An error with an HTTP status and a Placement error code."""

    status: int = 500
    code: str = UNDEFINED

    def __init__(
        self,
        detail: str,
        *,
        code: str | None = None,
        status: int | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        self.headers = headers or {}
        self.extra = extra or {}

    @property
    def title(self) -> str:
        return HTTPStatus(self.status).phrase


class BadRequest(PlacementError):
    status = 400


class Unauthorized(PlacementError):
    status = 401


class Forbidden(PlacementError):
    status = 403


class NotFound(PlacementError):
    status = 404


class MethodNotAllowed(PlacementError):
    status = 405


class NotAcceptable(PlacementError):
    status = 406


class Conflict(PlacementError):
    status = 409


class Gone(PlacementError):
    status = 410


class UnsupportedMediaType(PlacementError):
    status = 415


class PayloadTooLarge(PlacementError):
    status = 413


class UriTooLong(PlacementError):
    status = 414


class ServiceUnavailable(PlacementError):
    status = 503


class AuthServiceUnavailable(ServiceUnavailable):
    """Keystone could not be reached (or failed) while validating a token."""

    code = AUTH_SERVICE_UNAVAILABLE


class ChangesGone(Gone):
    """The change feed no longer holds (or never held) the changes asked for;
    ``index`` (an extra key of the error) is where to resume after a re-read."""

    code = CHANGES_GONE

    def __init__(self, detail: str, *, index: int) -> None:
        super().__init__(detail, extra={"index": index})


class ConcurrentUpdate(Conflict):
    """A generation compare-and-swap lost, or a claim did not fit."""

    code = CONCURRENT_UPDATE

    def __init__(self, detail: str, *, conflict: str) -> None:
        super().__init__(detail, extra={"conflict": conflict})


def error_body(error: PlacementError, request_id: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "status": error.status,
        "title": error.title,
        "detail": error.detail,
        "code": error.code,
        "request_id": request_id,
    }
    entry.update(error.extra)
    return {"errors": [entry]}
