"""GET /changes (an extension of this service): query and response models.

Query values arrive as strings: the JSON Schema checks their form (digits)
and the model their range, so either failure is a 400 that names the value.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, WithJsonSchema

from placement_api.web.schemas.common import RequestModel, ResponseModel

MAX_LIMIT = 10_000
DEFAULT_LIMIT = 1_000
MAX_INDEX = 2**63 - 1
# The largest ``wait`` accepted; the server cuts it to its ``changes_max_wait`` setting.
MAX_WAIT = 3_600

# Decimal digits; the model then checks the range.
DIGITS = WithJsonSchema({"type": "string", "pattern": "^[0-9]{1,19}$"})


class ChangesQuery(RequestModel):
    """GET /changes: where to start, how many, how long to wait for news."""

    since: Annotated[int | None, Field(ge=0, le=MAX_INDEX), DIGITS] = None
    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT), DIGITS] = DEFAULT_LIMIT
    wait: Annotated[int, Field(ge=0, le=MAX_WAIT), DIGITS] = 0


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
    epoch: str = Field(
        description=(
            "The history the indexes belong to. It changes when a failover may have "
            "given indexes again to other entries: a follower that sees it change "
            "re-reads what it follows, as after a 410 (docs/ha.md)."
        )
    )
