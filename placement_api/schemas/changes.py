"""GET /changes (an extension of this service): query and response models.

Query values arrive as strings: the JSON Schema checks their form (digits)
and the model their range, so either failure is a 400 that names the value.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, WithJsonSchema

from placement_api.schemas.common import RequestModel, ResponseModel

MAX_LIMIT = 10_000
DEFAULT_LIMIT = 1_000
MAX_INDEX = 2**63 - 1
# The largest ``wait`` accepted; the server cuts it to its ``changes_max_wait`` setting.
MAX_WAIT = 3_600


def _digits(description: str) -> WithJsonSchema:
    return WithJsonSchema(
        {"type": "string", "pattern": "^[0-9]{1,19}$", "description": description}
    )


class ChangesQuery(RequestModel):
    since: Annotated[
        int | None,
        Field(ge=0, le=MAX_INDEX),
        _digits(
            "Return the changes after this index. Absent: no changes, only the feed's "
            "latest index (the place to start following from)."
        ),
    ] = None
    limit: Annotated[
        int,
        Field(ge=1, le=MAX_LIMIT),
        _digits(f"Most changes returned, 1 to {MAX_LIMIT}; default {DEFAULT_LIMIT}."),
    ] = DEFAULT_LIMIT
    wait: Annotated[
        int,
        Field(ge=0, le=MAX_WAIT),
        _digits(
            f"Seconds (0 to {MAX_WAIT}) to wait for a change when there is none after "
            "`since`; the server waits at most its `changes_max_wait` setting. 0: answer now."
        ),
    ] = 0


def query_parameters(model: type[RequestModel]) -> list[dict[str, Any]]:
    """OpenAPI query parameters from a query model's JSON Schema."""
    schema = model.model_json_schema(mode="validation")
    required = set(schema.get("required", []))
    parameters = []
    for name, field_schema in schema["properties"].items():
        field_schema = dict(field_schema)
        description = field_schema.pop("description", "")
        default = field_schema.pop("default", None)
        if default is not None:
            # The value travels as a string; so must its default in the document.
            field_schema["default"] = str(default)
        parameters.append(
            {
                "name": name,
                "in": "query",
                "required": name in required,
                "description": description,
                "schema": field_schema,
            }
        )
    return parameters


class Change(ResponseModel):
    """One change; the other fields depend on ``resource`` (see docs/changes.md)."""

    index: int
    resource: Literal[
        "resource_provider", "inventory", "allocation", "trait", "aggregate", "resource_class"
    ]
    action: Literal["created", "updated", "deleted"]
    uuid: str = Field(
        description="The provider or consumer uuid; a class or trait name where there is none."
    )


class ChangeList(ResponseModel):
    """The feed's latest index when read, and the changes after ``since`` in index order."""

    index: int
    changes: list[Change]
