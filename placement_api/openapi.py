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
from placement_api.microversion import MAX_VERSION, MIN_VERSION
from placement_api.schemas.common import DOCUMENTED_REQUEST_MODELS
from placement_api.settings import Settings

REF_TEMPLATE = "#/components/schemas/{model}"


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


def openapi_document() -> dict[str, Any]:
    app = create_app(Settings(database_url="sqlite+aiosqlite:///:memory:"))
    document = get_openapi(
        title=app.title,
        version=app.version,
        description=app.description,
        routes=app.routes,
        servers=[{"url": "http://127.0.0.1:8778"}],
    )
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    for name, model in sorted(DOCUMENTED_REQUEST_MODELS.items()):
        schema = model.model_json_schema(ref_template=REF_TEMPLATE, schema_generator=OpenApiSchema)
        schemas.update(schema.pop("$defs", {}))
        schemas[name] = schema
    document["components"]["schemas"] = dict(sorted(schemas.items()))
    document["components"]["securitySchemes"] = {
        "token": {"type": "apiKey", "in": "header", "name": "X-Auth-Token"}
    }
    document["components"]["parameters"] = {"microversion": MICROVERSION_PARAMETER}
    for path, operations in document["paths"].items():
        for operation in operations.values():
            operation.setdefault("parameters", []).insert(
                0, {"$ref": "#/components/parameters/microversion"}
            )
            if path != "/":
                operation["security"] = [{"token": []}]
    return document


def render_openapi_yaml() -> str:
    return yaml.safe_dump(openapi_document(), sort_keys=False, allow_unicode=True)
