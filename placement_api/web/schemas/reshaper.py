"""POST /reshaper request models (1.30+), one per microversion range."""

from __future__ import annotations

from typing import Annotated

from placement_api.web.schemas.allocations import (
    UUID_KEY_PATTERN,
    ConsumerAllocations1_28,
    ConsumerAllocations1_34,
    ConsumerAllocations1_38,
    keyed_object,
)
from placement_api.web.schemas.common import RequestModel, VersionedShape
from placement_api.web.schemas.inventories import InventoriesReplace

InventoriesByProvider = Annotated[
    dict[str, InventoriesReplace],
    keyed_object(UUID_KEY_PATTERN, InventoriesReplace.model_json_schema(), min_properties=1),
]


class Reshape(RequestModel):
    """The new inventories of some providers (keyed by provider uuid) and the new
    allocations of every consumer affected (keyed by consumer uuid; may be empty)."""

    inventories: InventoriesByProvider
    allocations: Annotated[
        dict[str, ConsumerAllocations1_28],
        keyed_object(
            UUID_KEY_PATTERN, ConsumerAllocations1_28.model_json_schema(), min_properties=0
        ),
    ]


class Reshape1_34(Reshape):
    """From 1.34 each consumer may carry its request-group ``mappings``."""

    allocations: Annotated[  # type: ignore[assignment]
        dict[str, ConsumerAllocations1_34],
        keyed_object(
            UUID_KEY_PATTERN, ConsumerAllocations1_34.model_json_schema(), min_properties=0
        ),
    ]


class Reshape1_38(Reshape):
    """From 1.38 each consumer names its ``consumer_type``."""

    allocations: Annotated[  # type: ignore[assignment]
        dict[str, ConsumerAllocations1_38],
        keyed_object(
            UUID_KEY_PATTERN, ConsumerAllocations1_38.model_json_schema(), min_properties=0
        ),
    ]


reshape_schema = VersionedShape[type[Reshape]](
    Reshape, (("consumer_types", Reshape1_38), ("candidates_mappings", Reshape1_34))
)
