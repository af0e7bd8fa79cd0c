"""The OpenAPI document, generated from the application's routes and schemas.

Request bodies are validated by hand (so errors keep Placement's format),
so their models are not visible to FastAPI; routes name them through
``schemas.common.request_body`` and they are published here.
"""

from __future__ import annotations

from typing import Any

import yaml
from fastapi.openapi.utils import get_openapi
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from placement_api.app import create_app
from placement_api.microversion import FEATURES, MAX_VERSION, MIN_VERSION
from placement_api.openapi import versions as openapi_versions
from placement_api.openapi.errors import ERROR_ENVELOPE, ERROR_ITEM, error_responses
from placement_api.openapi.query import query_parameters
from placement_api.settings import Settings
from placement_api.web.schemas.common import (
    CUSTOM_RESOURCE_CLASS_PATTERN,
    DOCUMENTED_REQUEST_MODELS,
    RESOURCE_CLASS_PATTERN,
)

REF_TEMPLATE = "#/components/schemas/{model}"
# Reachable without a token: the version document and the load balancers' check.
UNAUTHENTICATED_PATHS = frozenset({"/", "/healthcheck"})


class OpenApiSchema(GenerateJsonSchema):
    """Leaves out ``default: null`` where null is not a valid value: such a
    field is optional in the body, not nullable."""

    def default_schema(self, schema: core_schema.WithDefaultSchema) -> JsonSchemaValue:
        json_schema = super().default_schema(schema)
        if json_schema.get("default", ...) is None and not _allows_null(json_schema):
            del json_schema["default"]
        return json_schema


def _allows_null(schema: JsonSchemaValue) -> bool:
    kinds = schema.get("type")
    if kinds == "null" or (isinstance(kinds, list) and "null" in kinds):
        return True
    return any(_allows_null(option) for option in schema.get("anyOf", []) + schema.get("oneOf", []))


MICROVERSION_PARAMETER: dict[str, Any] = {
    "name": "OpenStack-API-Version",
    "in": "header",
    "required": False,
    "description": (
        f"`placement X.Y` ({MIN_VERSION} to {MAX_VERSION}) or `placement latest`; "
        f"absent means {MIN_VERSION}. Echoed in the response."
    ),
    "schema": {"type": "string", "example": f"placement {MAX_VERSION}"},
}


LOCATION_HEADER: dict[str, Any] = {
    "description": "The path of what was created.",
    "schema": {"type": "string"},
}
_UUID = {"type": "string", "format": "uuid"}
_CUSTOM_NAME = {"type": "string", "pattern": CUSTOM_RESOURCE_CLASS_PATTERN, "maxLength": 255}
# What the server accepts in each path parameter (anything else is a 400 or a 404).
PATH_PARAMETERS: dict[str, dict[str, Any]] = {
    "uuid": _UUID,
    "resource_class": {"type": "string", "pattern": RESOURCE_CLASS_PATTERN, "maxLength": 255},
    "name": {"type": "string", "minLength": 1, "maxLength": 255},
    "consumer_uuid": {"type": "string"},
}
# Operations whose path names a custom class or trait: a standard one is refused.
_CUSTOM_NAMES = {"createTrait", "deleteTrait", "updateResourceClass", "deleteResourceClass"}


def _path_parameter_schema(operation_id: str, name: str) -> dict[str, Any]:
    if name == "name" and operation_id in _CUSTOM_NAMES:
        return _CUSTOM_NAME
    if name == "consumer_uuid" and operation_id == "replaceConsumerAllocations":
        return _UUID  # a read or delete of any other string finds nothing
    return PATH_PARAMETERS[name]


def openapi_document() -> dict[str, Any]:
    app = create_app(Settings(database_url="sqlite+aiosqlite:///:memory:"))
    document = get_openapi(
        title=app.title,
        version=app.version,
        description=_introduction(app.description),
        routes=app.routes,
        servers=[{"url": "http://127.0.0.1:8778"}],
    )
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for name, model in sorted(DOCUMENTED_REQUEST_MODELS.items()):
        schema = model.model_json_schema(ref_template=REF_TEMPLATE, schema_generator=OpenApiSchema)
        schemas.update(schema.pop("$defs", {}))
        schemas[name] = schema
    # FastAPI's validation error is never sent: every error is Placement's envelope.
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    schemas["PlacementErrors"] = ERROR_ENVELOPE
    schemas["PlacementError"] = ERROR_ITEM
    document["components"]["schemas"] = {
        name: _keys_as_property_names(schema) for name, schema in sorted(schemas.items())
    }
    document["components"]["securitySchemes"] = {
        "token": {"type": "apiKey", "in": "header", "name": "X-Auth-Token"}
    }
    document["components"]["parameters"] = {"microversion": MICROVERSION_PARAMETER}
    for path, operations in document["paths"].items():
        for operation in operations.values():
            _complete_operation(path, operation)
    return document


def _keys_as_property_names(schema: Any) -> Any:
    """A map keyed by pattern (one ``patternProperties`` entry, nothing else allowed)
    written as ``additionalProperties`` + ``propertyNames``: the same set of
    documents, in the form client generators understand (they drop
    ``patternProperties``, which would leave the map always empty)."""
    if isinstance(schema, list):
        return [_keys_as_property_names(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    schema = {key: _keys_as_property_names(value) for key, value in schema.items()}
    patterns = schema.get("patternProperties", {})
    closed = schema.get("additionalProperties") is False and not schema.get("properties")
    if len(patterns) == 1 and closed:
        [(pattern, values)] = patterns.items()
        del schema["patternProperties"]
        schema["additionalProperties"] = values
        schema["propertyNames"] = {"pattern": pattern}
    return schema


def _introduction(description: str) -> str:
    changes = [
        f"- {FEATURES[feature]}: {text}" for feature, text in openapi_versions.EVERYWHERE.items()
    ]
    return f"{description}\n\nMicroversion changes that apply to every operation:\n\n" + (
        "\n".join(changes)
    )


def _complete_operation(path: str, operation: dict[str, Any]) -> None:
    """Parameters, error responses and the microversion history of one operation."""
    operation_id = operation["operationId"]
    parameters = operation.setdefault("parameters", [])
    has_path_parameter = False
    for parameter in parameters:
        if parameter.get("in") == "path":
            has_path_parameter = True
            parameter["schema"] = _path_parameter_schema(operation_id, parameter["name"])
    parameters.insert(0, {"$ref": "#/components/parameters/microversion"})
    parameters += query_parameters(operation_id)
    responses = operation["responses"]
    responses.pop("422", None)
    for response in responses.values():
        # A route without a response model answers without a body (a 201 with Location).
        if response.get("content", {}).get("application/json", {}).get("schema") == {}:
            del response["content"]
    if "201" in responses:
        responses["201"]["headers"] = {"Location": LOCATION_HEADER}
    history = openapi_versions.history_text(operation_id)
    if history:
        operation["description"] = "\n\n".join(
            part for part in (operation.get("description"), history) if part
        )
    if path in UNAUTHENTICATED_PATHS:
        return
    operation["security"] = [{"token": []}]
    responses.update(
        error_responses(
            operation_id,
            has_path_parameter=has_path_parameter,
            has_body="requestBody" in operation,
            since_version=openapi_versions.since_version(operation_id),
        )
    )
    operation["responses"] = dict(sorted(responses.items()))


def render_openapi_yaml() -> str:
    return yaml.safe_dump(openapi_document(), sort_keys=False, allow_unicode=True)
