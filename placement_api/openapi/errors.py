"""Error responses in ``openapi.yaml``: Placement's envelope on every 4xx.

Every error is rendered by one handler as ``{"errors": [{status, title,
detail, code, request_id}]}`` (``placement_api.errors``); FastAPI's own 422
is never sent. Which statuses an operation can answer follows from what it
has (a path parameter, a body, a minimum microversion, a write); the 409s
and the special 400 codes are listed per operation below.
"""

from __future__ import annotations

from typing import Any

from placement_api import errors

ERROR_ENVELOPE: dict[str, Any] = {
    "type": "object",
    "description": "Placement's error body; clients branch on `code`, not on `detail`.",
    "required": ["errors"],
    "properties": {
        "errors": {
            "type": "array",
            "minItems": 1,
            "items": {"$ref": "#/components/schemas/PlacementError"},
        }
    },
}

ERROR_ITEM: dict[str, Any] = {
    "type": "object",
    "required": ["status", "title", "detail", "code", "request_id"],
    "properties": {
        "status": {"type": "integer", "description": "The HTTP status."},
        "title": {"type": "string", "description": "The status' reason phrase."},
        "detail": {"type": "string", "description": "What went wrong, for a person."},
        "code": {
            "type": "string",
            "description": "Stable error code (`placement.undefined_code` before 1.23).",
        },
        "request_id": {"type": "string", "description": "As in the x-openstack-request-id header."},
        "conflict": {
            "type": "string",
            "enum": [
                errors.CONFLICT_PROVIDER_GENERATION,
                errors.CONFLICT_CONSUMER_GENERATION,
                errors.CONFLICT_CAPACITY,
            ],
            "description": "On a 409 of an allocation or generation write: which kind it is.",
        },
        "index": {
            "type": "integer",
            "description": "On a 410 of GET /changes: the index to resume from after a re-read.",
        },
        "min_version": {"type": "string", "description": "On a 406 for a microversion."},
        "max_version": {"type": "string", "description": "On a 406 for a microversion."},
    },
}

_GENERATION = f"`{errors.CONCURRENT_UPDATE}` (the provider generation given is not current)"
_CLAIMS = (
    f"`{errors.CONCURRENT_UPDATE}` (a provider or consumer generation is not current; "
    f"`conflict` says which), or `{errors.UNDEFINED}` with `conflict: capacity` (the "
    "amounts do not fit)"
)
_IN_USE = f"`{errors.INVENTORY_INUSE}` (allocations use the inventory being removed or shrunk)"

# operationId -> the 409s it can answer, as a reader needs them.
CONFLICTS: dict[str, str] = {
    "createResourceProvider": f"`{errors.DUPLICATE_NAME}`: the name or uuid is taken.",
    "updateResourceProvider": f"`{errors.DUPLICATE_NAME}`: the name is taken.",
    "deleteResourceProvider": (
        f"`{errors.PROVIDER_INUSE}` (it has allocations) or "
        f"`{errors.PROVIDER_CANNOT_DELETE_PARENT}` (it has children)."
    ),
    "createInventory": f"{_GENERATION}, also when the class already has an inventory.",
    "replaceInventories": f"{_GENERATION} or {_IN_USE}.",
    "deleteInventories": f"{_IN_USE}.",
    "updateInventory": f"{_GENERATION} or {_IN_USE}.",
    "deleteInventory": f"{_IN_USE}.",
    "updateResourceProviderAggregates": f"{_GENERATION} (from 1.19).",
    "updateResourceProviderTraits": f"{_GENERATION}.",
    "createResourceClass": f"`{errors.UNDEFINED}`: the class exists.",
    "updateResourceClass": f"`{errors.UNDEFINED}`: the new name exists (1.2 to 1.6).",
    "deleteResourceClass": f"`{errors.UNDEFINED}`: an inventory uses the class.",
    "deleteTrait": f"`{errors.UNDEFINED}`: a provider has the trait.",
    "replaceConsumerAllocations": f"{_CLAIMS}.",
    "manageAllocations": f"{_CLAIMS}; nothing is written.",
    "reshape": f"{_CLAIMS}, or {_IN_USE}; nothing is written.",
}

# operationId -> 400 codes beyond placement.undefined_code.
BAD_REQUEST_CODES: dict[str, list[str]] = {
    "listAllocationCandidates": [
        errors.QUERY_DUPLICATE_KEY,
        errors.QUERY_BAD_VALUE,
        errors.QUERY_MISSING_VALUE,
    ],
    "reshape": [errors.PROVIDER_NOT_FOUND],
    "showCapacity": [errors.QUERY_DUPLICATE_KEY, errors.QUERY_MISSING_VALUE],
}

# operationId -> why it can answer 410 (an extension's; upstream has none).
GONE: dict[str, str] = {
    "listChanges": (
        f"`{errors.CHANGES_GONE}`: the changes after `since` were pruned (or `since` is "
        "beyond the feed); re-read what you follow, then resume from the error's `index`."
    ),
}

# operationId -> 405 answers beyond the path's methods.
METHOD_NOT_ALLOWED: dict[str, str] = {"deleteInventories": "Before 1.5."}


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/PlacementErrors"}}
        },
    }


def error_responses(
    operation_id: str, *, has_path_parameter: bool, has_body: bool, since_version: str | None
) -> dict[str, dict[str, Any]]:
    """The 4xx responses of one operation (not ``GET /``, which needs no token)."""
    codes = ", ".join(
        f"`{code}`" for code in [errors.UNDEFINED, *BAD_REQUEST_CODES.get(operation_id, [])]
    )
    found = {
        "400": _error(
            "A malformed microversion header, query string, path or body. Codes: " + codes + "."
        ),
        "401": _error("No token, or (with Keystone) a token that is not valid."),
        "403": _error("The policy does not allow this caller to do this."),
    }
    reasons = []
    if has_path_parameter:
        reasons.append("the resource named in the path does not exist")
    if since_version is not None:
        reasons.append(f"the microversion is below {since_version}")
    if reasons:
        found["404"] = _error(f"Not found: {' or '.join(reasons)}.")
    if operation_id in METHOD_NOT_ALLOWED:
        found["405"] = _error(METHOD_NOT_ALLOWED[operation_id])
    found["406"] = _error(
        "The microversion asked for is outside the supported range (`min_version` and "
        "`max_version` say which), or the Accept header excludes application/json."
    )
    if operation_id in CONFLICTS:
        found["409"] = _error("Conflict: " + CONFLICTS[operation_id])
    if operation_id in GONE:
        found["410"] = _error("Gone: " + GONE[operation_id])
    if has_body:
        found["415"] = _error("The body is not `application/json`.")
    return found
