"""Inventory request and response models.

The six inventory fields carry Placement's bounds (``minimum``/``maximum``
in the generated JSON Schema), so a bad value fails with jsonschema's own
message, e.g. "0 is less than the minimum of 1 ... Failed validating
'minimum' in schema['properties']['total']".
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, WithJsonSchema

from placement_api.domain.capacity import InventoryLimits
from placement_api.web.schemas.common import (
    GENERATION_RANGE,
    MAX_INT,
    RESOURCE_CLASS_PATTERN,
    Generation,
    RequestModel,
    ResponseModel,
    pattern_keyed_object,
)

# The largest single-precision float: the ratio column's upper bound upstream.
MAX_ALLOCATION_RATIO = 3.40282e38

PositiveInt = Annotated[int, Field(ge=1, le=MAX_INT)]
NonNegativeInt = Annotated[int, Field(ge=0, le=MAX_INT)]
AllocationRatio = Annotated[float, Field(le=MAX_ALLOCATION_RATIO)]
# May be left out; when sent it must be an integer (JSON null is refused too).
OptionalGeneration = Annotated[int | None, WithJsonSchema({"type": "integer", **GENERATION_RANGE})]


class InventoryFields(RequestModel):
    """One inventory as a client writes it; absent fields take their defaults."""

    total: PositiveInt
    reserved: NonNegativeInt = 0
    min_unit: PositiveInt = 1
    max_unit: PositiveInt = MAX_INT
    step_size: PositiveInt = 1
    allocation_ratio: AllocationRatio = 1.0

    def limits(self) -> InventoryLimits:
        return InventoryLimits(
            total=self.total,
            reserved=self.reserved,
            min_unit=self.min_unit,
            max_unit=self.max_unit,
            step_size=self.step_size,
            allocation_ratio=self.allocation_ratio,
        )


class InventoryCreate(InventoryFields):
    """POST /resource_providers/{uuid}/inventories: one class; the generation is optional."""

    resource_class: Annotated[str, Field(pattern=RESOURCE_CLASS_PATTERN)]
    resource_provider_generation: OptionalGeneration = None


class InventoryUpdate(InventoryFields):
    """PUT /resource_providers/{uuid}/inventories/{resource_class}."""

    resource_provider_generation: Generation


InventoriesByClass = Annotated[
    dict[str, InventoryFields],
    pattern_keyed_object(RESOURCE_CLASS_PATTERN, InventoryFields.model_json_schema()),
]


class InventoriesReplace(RequestModel):
    """PUT /resource_providers/{uuid}/inventories: the provider's whole inventory."""

    resource_provider_generation: Generation
    inventories: InventoriesByClass


class Inventory(ResponseModel):
    """One inventory; ``resource_provider_generation`` is present when shown alone."""

    total: int
    reserved: int
    min_unit: int
    max_unit: int
    step_size: int
    allocation_ratio: float
    resource_provider_generation: OptionalGeneration = None


class InventoryList(ResponseModel):
    resource_provider_generation: int
    inventories: dict[str, Inventory]
